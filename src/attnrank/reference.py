"""Copy the small, reviewable part of a full run into results/reference/ (the one committed run):
tables (Parquet and CSV), figure PNGs, the claims, each with its provenance sidecar, plus a
MANIFEST of sha256 sums."""

from __future__ import annotations

import shutil
from pathlib import Path

from attnrank.provenance import SIDECAR_SUFFIX, sha256_file

PATTERNS = ("tables/*.parquet", "tables/*.csv", "figures/*.png", "claims.md", "claims.csv")
MAX_BYTES = 2_000_000  # a reference file larger than this is left out (and listed as such)


def publish_reference(run_dir: str | Path, dest: str | Path) -> list[Path]:
    run_dir, dest = Path(run_dir), Path(dest)
    if not (run_dir / "claims.md").exists():
        raise FileNotFoundError(f"{run_dir} holds no finished run (no claims.md)")
    if dest.exists():
        shutil.rmtree(dest)
    copied, skipped = [], []
    for pattern in PATTERNS:
        for src in sorted(run_dir.glob(pattern)):
            if src.stat().st_size > MAX_BYTES:
                skipped.append(src)
                continue
            side = src.with_name(src.name + SIDECAR_SUFFIX)
            if not side.exists():
                raise FileNotFoundError(f"{src} has no provenance sidecar {side.name}")
            out = dest / src.relative_to(run_dir)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out)
            shutil.copy2(side, out.with_name(side.name))
            copied.append(out)
    lines = [f"{sha256_file(p)}  {p.relative_to(dest)}" for p in copied]
    lines += [f"# left out (over {MAX_BYTES} bytes): {p}" for p in skipped]
    (dest / "MANIFEST.sha256").write_text("\n".join(lines) + "\n")
    return copied
