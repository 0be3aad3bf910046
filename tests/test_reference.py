"""publish_reference: checks the whole run first, copies the small part, sidecars of the rest,
writes manifests, and swaps the new reference in atomically."""

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from attnrank.pipeline.provenance import sha256_file, write_sidecar
from attnrank.publish.reference import (
    MAX_BYTES,
    git_is_clean,
    load_manifest,
    publish_reference,
    sidecar_only_paths,
)

# everything a later run needs to skip a current step is copied; only what is too large (and
# what no pattern names) is published sidecar-only
COPIED = ["claims.csv", "claims.md", "entropic/predict/linear/spectra.npz", "figures/fig.pdf",
          "figures/fig.png", "minip/train/witness/mlp/metrics.parquet",
          "minip/train/witness/mlp/weights.npz", "tables/info.csv", "tables/t.parquet"]
SIDECAR_ONLY = ["minip/train/witness/huge/weights.npz", "other/x.bin", "tables/huge.parquet"]


def _artifact(run: Path, rel: str, data: bytes, inputs: dict[str, str] | None = None) -> None:
    path = run / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    write_sidecar(path, {"artifact": rel, "rule": "r", "inputs": inputs or {}, "params": {}})


def _finished_run(root: Path) -> Path:
    """A small run folder: training outputs, tables built from them, figures, claims."""
    run = root / "results" / "full"
    _artifact(run, "minip/train/witness/mlp/metrics.parquet", b"metrics")
    _artifact(run, "minip/train/witness/mlp/weights.npz", b"weights")
    _artifact(run, "entropic/predict/linear/spectra.npz", b"spectra")
    m = "minip/train/witness/mlp/metrics.parquet"
    _artifact(run, "tables/t.parquet", b"table", {m: sha256_file(run / m)})
    _artifact(run, "tables/info.csv", b"a,b\n1,2\n")
    _artifact(run, "tables/huge.parquet", b"x" * (MAX_BYTES + 1))
    _artifact(run, "minip/train/witness/huge/weights.npz", b"x" * (MAX_BYTES + 1))
    _artifact(run, "other/x.bin", b"not a pattern of the reference")
    t = {"tables/t.parquet": sha256_file(run / "tables/t.parquet")}
    _artifact(run, "figures/fig.png", b"png", t)
    _artifact(run, "figures/fig.pdf", b"pdf", t)
    _artifact(run, "claims.csv", b"id,verdict\nTT-1,pass\n", t)
    _artifact(run, "claims.md", b"# claims\n", t)
    return run


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return _finished_run(tmp_path)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_publish_copies_small_files_and_sidecars_of_the_rest(run_dir, tmp_path):
    dest = tmp_path / "results" / "reference"
    copied = publish_reference(Path("results/full"), Path("results/reference"))
    assert sorted(p.relative_to("results/reference").as_posix() for p in copied) == COPIED
    files = set(_snapshot(dest))
    sidecars = {rel + ".prov.json" for rel in COPIED + SIDECAR_ONLY}
    assert files == set(COPIED) | sidecars | {"MANIFEST.json", "MANIFEST.sha256"}
    for rel in COPIED:
        assert (dest / rel).read_bytes() == (run_dir / rel).read_bytes()
    for rel in sidecars:
        assert (dest / rel).read_bytes() == (run_dir / rel).read_bytes()

    manifest = load_manifest(dest)
    assert manifest["source"] == "results/full"
    assert manifest["files"] == {rel: sha256_file(run_dir / rel) for rel in COPIED}
    assert manifest["sidecar_only"] == {rel: sha256_file(run_dir / rel) for rel in SIDECAR_ONLY}
    assert sidecar_only_paths(dest) == set(SIDECAR_ONLY)
    lines = (dest / "MANIFEST.sha256").read_text().splitlines()
    assert {line.split("  ", 1)[1] for line in lines} == set(COPIED) | sidecars
    for line in lines:
        sha, rel = line.split("  ", 1)
        assert sha256_file(dest / rel) == sha
    text = (dest / "MANIFEST.json").read_text() + "\n".join(lines)
    assert str(tmp_path) not in text  # nothing absolute
    assert [p.name for p in dest.parent.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_absolute_run_dir_is_recorded_relative(run_dir, tmp_path):
    publish_reference(run_dir, tmp_path / "results" / "reference")
    assert load_manifest(tmp_path / "results" / "reference")["source"] == "results/full"


def test_missing_sidecar_refused_and_old_reference_untouched(run_dir, tmp_path):
    dest = tmp_path / "results" / "reference"
    publish_reference(run_dir, dest)
    before = _snapshot(dest)
    (run_dir / "minip/train/witness/mlp/weights.npz.prov.json").unlink()
    (run_dir / "tables/t.parquet").write_bytes(b"changed")  # would change the reference
    with pytest.raises(FileNotFoundError, match=r"minip/train/witness/mlp/weights\.npz"):
        publish_reference(run_dir, dest)
    assert _snapshot(dest) == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["full", "reference"]


def test_orphan_sidecar_refused(run_dir, tmp_path):
    (run_dir / "figures/fig.pdf").unlink()
    with pytest.raises(FileNotFoundError, match=r"figures/fig\.pdf\.prov\.json"):
        publish_reference(run_dir, tmp_path / "ref")
    assert not (tmp_path / "ref").exists()


def test_modified_artifact_refused(run_dir, tmp_path):
    dest = tmp_path / "results" / "reference"
    publish_reference(run_dir, dest)
    before = _snapshot(dest)
    (run_dir / "minip/train/witness/mlp/weights.npz").write_bytes(b"tampered")
    with pytest.raises(ValueError, match=r"weights\.npz: sha256 is .* but its sidecar records"):
        publish_reference(run_dir, dest)
    assert _snapshot(dest) == before


def test_stale_input_chain_refused(run_dir, tmp_path):
    path = run_dir / "tables/t.parquet"
    path.write_bytes(b"rebuilt table")
    write_sidecar(path, {"artifact": "tables/t.parquet", "inputs": {}})  # the table is consistent ...
    with pytest.raises(ValueError, match=r"figures/fig\.png: was built from tables/t\.parquet"):
        publish_reference(run_dir, tmp_path / "ref")  # ... but figures and claims used the old one


def test_sidecar_of_another_artifact_refused(run_dir, tmp_path):
    side = run_dir / "figures/fig.png.prov.json"
    record = json.loads(side.read_text())
    side.write_text(json.dumps({**record, "artifact": "figures/other.png"}))
    with pytest.raises(ValueError, match=r"sidecar names artifact 'figures/other\.png'"):
        publish_reference(run_dir, tmp_path / "ref")


def test_unfinished_run_refused(run_dir, tmp_path):
    (run_dir / "claims.md").unlink()
    (run_dir / "claims.md.prov.json").unlink()
    with pytest.raises(FileNotFoundError, match="claims.md"):
        publish_reference(run_dir, tmp_path / "ref")


def test_hidden_files_and_reports_are_not_artifacts(run_dir, tmp_path):
    (run_dir / "tables" / ".t.parquet.abc.tmp.parquet").write_bytes(b"half")
    (run_dir / "audit.json").write_text("{}")
    (run_dir / "report.html").write_text("<html/>")
    publish_reference(run_dir, tmp_path / "ref")
    assert not any(p.name.startswith(".") for p in (tmp_path / "ref").rglob("*"))


def test_refuses_to_replace_a_folder_that_is_not_a_reference(run_dir, tmp_path):
    dest = tmp_path / "precious"
    dest.mkdir()
    (dest / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a reference"):
        publish_reference(run_dir, dest)
    assert _snapshot(dest) == {"notes.txt": b"keep me"}


def test_failed_build_leaves_dest_and_no_temp(run_dir, tmp_path, monkeypatch):
    dest = tmp_path / "results" / "reference"
    publish_reference(run_dir, dest)
    before = _snapshot(dest)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("attnrank.publish.reference.sha256_lines", boom)
    with pytest.raises(OSError, match="disk full"):
        publish_reference(run_dir, dest)
    assert _snapshot(dest) == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["full", "reference"]


def test_republish_replaces_old_reference(run_dir, tmp_path):
    dest = tmp_path / "results" / "reference"
    dest.mkdir(parents=True)
    (dest / "MANIFEST.sha256").write_text("")
    (dest / "stale.png").write_bytes(b"old")
    publish_reference(run_dir, dest)
    assert not (dest / "stale.png").exists() and (dest / "MANIFEST.json").exists()


def test_published_files_get_umask_mode(run_dir, tmp_path, umask_022):
    for p in run_dir.rglob("*"):  # atomic writers can leave 0600 artifacts behind
        if p.is_file():
            p.chmod(0o600)
    dest = tmp_path / "results" / "reference"
    publish_reference(run_dir, dest)
    for p in dest.rglob("*"):
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o755 if p.is_dir() else 0o644), (p, oct(mode))
    assert stat.S_IMODE(dest.stat().st_mode) == 0o755


def test_load_manifest_absent_and_invalid(tmp_path):
    assert load_manifest(tmp_path) is None
    assert sidecar_only_paths(tmp_path) == set()
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"files": {}}))
    with pytest.raises(ValueError, match="sidecar_only"):
        load_manifest(tmp_path)


def test_git_is_clean(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@t")
    git("config", "user.name", "t")
    (tmp_path / ".gitignore").write_text("ignored/\n")
    git("add", ".gitignore")
    git("commit", "-qm", "init")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "x").write_text("x")
    assert git_is_clean(tmp_path) == (True, "")
    (tmp_path / "new.txt").write_text("x")
    clean, text = git_is_clean(tmp_path)
    assert not clean and "new.txt" in text
    (tmp_path / "new.txt").unlink()
    (tmp_path / ".gitignore").write_text("changed\n")
    clean, text = git_is_clean(tmp_path)
    assert not clean and ".gitignore" in text
    assert git_is_clean(tmp_path / "nope")[0] is False


def test_failed_swap_restores_old_reference(run_dir, tmp_path, monkeypatch):
    dest = tmp_path / "results" / "reference"
    publish_reference(run_dir, dest)
    before = _snapshot(dest)
    real_rename, calls = os.rename, []

    def flaky_rename(src, dst):
        calls.append((Path(src).name, Path(dst).name))
        if len(calls) == 2:  # the new folder into place
            raise OSError("rename failed")
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", flaky_rename)
    with pytest.raises(OSError, match="rename failed"):
        publish_reference(run_dir, dest)
    monkeypatch.undo()
    assert len(calls) == 3 and calls[2][1] == "reference"  # the old one renamed back
    assert _snapshot(dest) == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["full", "reference"]
