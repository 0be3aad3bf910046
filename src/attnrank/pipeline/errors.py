"""Diagnosis of a failed command: the one-line message for a mistake in the user's input.

A failure caused by the input (bad --params or --wildcards JSON or a missing key, a missing or
corrupt Parquet table or npz archive, a table without a column the step needs, an output path
that is a folder) is told in one line naming the path or key and what was expected
(``user_error``); the CLI prints it and exits 2. Any other exception is a bug: ``user_error``
returns None and the CLI lets it propagate with its traceback. The cheap checks run before any
work (``json_object``, ``check_outputs``, ``check_inputs``); the slow ones (``unreadable_input``,
``missing_key``) only after a failure, to explain it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

READER_MODULES = ("pyarrow", "zipfile", "zlib", "pickle", "yaml")  # a bad file, not a bug
MAX_COLUMNS = 12  # columns listed in a missing-column message


class UsageError(Exception):
    """A user's mistake (a path, a --params value) found by the CLI itself; its text is one line."""


def json_object(flag: str, text: str) -> dict[str, Any]:
    """``text`` parsed as a JSON object; a UsageError naming ``flag`` and the position if not."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{flag}: not valid JSON ({err.msg} at line {err.lineno} column "
                         f"{err.colno}); expected a JSON object") from err
    if not isinstance(value, dict):
        raise UsageError(f"{flag}: expected a JSON object, got {type(value).__name__} {text!r:.60}")
    return value


def check_outputs(args: argparse.Namespace, dests: Iterable[str]) -> None:
    """Refuse, before any work, an output path (the arguments ``dests`` of ``args``) that is a
    folder or lies under a file."""
    for dest in dests:
        value = getattr(args, dest, None)
        if not value:
            continue
        flag = "--" + dest.replace("_", "-")
        path = Path(value)
        if path.is_dir():
            raise UsageError(f"{flag} {value} is a directory; expected a file path")
        for parent in path.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise UsageError(f"{flag} {value}: {parent} is a file, not a folder")
                break


def _open_input(path: Path) -> None:
    """Read what identifies ``path`` as its kind, cheaply: a Parquet table's footer and schema, an
    npz archive's directory of .npy members. Raises the reader's error."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.read_schema(path)
    elif path.suffix == ".npz":
        import zipfile

        with zipfile.ZipFile(path) as z:
            odd = [n for n in z.namelist() if not n.endswith(".npy")]
        if odd:
            raise ValueError(f"members that are not .npy arrays: {', '.join(odd[:3])}")


def _kind(path: Path) -> str:
    """What ``path`` should be, by its suffix, in words."""
    return {".parquet": "Parquet table", ".npz": "npz archive"}.get(path.suffix, "file")


def check_inputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, an input that is a folder or an existing file that is not a
    readable Parquet table / npz archive (its footer or directory). A missing input is left to the
    step (provenance.Run names it after the step's params are checked)."""
    for value in getattr(args, "inputs", None) or []:
        path = Path(value)
        if path.is_dir():
            raise UsageError(f"input {path} is a directory; expected a file")
        if path.exists():
            try:
                _open_input(path)
            except Exception as err:  # any failure to read is the answer
                raise UsageError(f"input {path} is not a readable {_kind(path)} "
                                 f"({one_line(err)})") from err


def unreadable_input(path: str | Path) -> str | None:
    """Why the input file ``path`` cannot be read (missing, a folder, a corrupt Parquet table or
    npz archive), or None when it reads in full. Slow on big files: for diagnosing a failure."""
    path = Path(path)
    if not path.exists():
        return f"input not found: {path}"
    if path.is_dir():
        return f"input {path} is a directory; expected a file"
    try:
        _open_input(path)
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            pq.read_table(path)
        elif path.suffix == ".npz":
            import numpy as np

            with np.load(path, allow_pickle=False) as z:
                for name in z.files:
                    z[name]
    except Exception as err:  # any failure to read is the answer
        return f"input {path} is not a readable {_kind(path)} ({one_line(err)})"
    return None


def _has_key(value: Any, key: Any) -> bool:
    """Whether ``key`` is a key of ``value`` or of any mapping nested in it."""
    if isinstance(value, dict):
        return key in value or any(_has_key(v, key) for v in value.values())
    if isinstance(value, list):
        return any(_has_key(v, key) for v in value)
    return False


def _shown(names: Sequence[Any]) -> str:
    """At most MAX_COLUMNS ``names``, comma-separated (``none`` for none)."""
    listed = ", ".join(map(str, names[:MAX_COLUMNS]))
    return (listed + (", ..." if len(names) > MAX_COLUMNS else "")) or "none"


def missing_key(key: Any, args: argparse.Namespace) -> str:
    """A KeyError explained: which input tables lack the column ``key``, and whether --params
    lacks the key too (both are named when either could be meant)."""
    import pyarrow.parquet as pq

    tables = [Path(p) for p in getattr(args, "inputs", None) or [] if str(p).endswith(".parquet")]
    lacking: list[tuple[Path, list[str]]] = []
    for table in tables:
        try:
            names = list(pq.read_schema(table).names)
        except Exception:  # an unreadable table is diagnosed by unreadable_input
            continue
        if key not in names:
            lacking.append((table, names))
    params = getattr(args, "params", None)
    params_lack = isinstance(params, dict) and not _has_key(params, key)
    if lacking:
        path, names = lacking[0]
        more = f", nor do {len(lacking) - 1} other input table(s)" if len(lacking) > 1 else ""
        column = f"input table {path} has no column {key!r} (it has: {_shown(names)}){more}"
        if len(lacking) < len(tables) or not params_lack:
            return f"{column}, which this step needs"
        return f"missing key {key!r}: {column}; nor has --params (it has: {_shown(list(params))})"
    if params_lack and isinstance(params, dict):
        return f"missing key {key!r}: --params has no such key (it has: {_shown(list(params))})"
    return f"missing key {key!r} (run with -v for the traceback)"


def one_line(err: BaseException) -> str:
    """An exception's text on one line (first line, else its type)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _from_reader(err: BaseException) -> bool:
    """Whether ``err`` was raised while reading a file (pyarrow, zip, npy) rather than by the
    package's own checks."""
    if type(err).__module__.split(".")[0] in READER_MODULES or isinstance(err, EOFError):
        return True
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    file = tb.tb_frame.f_code.co_filename if tb is not None else ""
    return any(part in file for part in ("/pyarrow/", "/numpy/lib/", "/pandas/io/", "zipfile"))


def user_error(err: Exception, args: argparse.Namespace) -> str | None:
    """The one-line message for an error caused by the user's input, or None for a bug."""
    if isinstance(err, UsageError):
        return str(err)
    if isinstance(err, KeyError):
        return missing_key(err.args[0] if err.args else None, args)
    if _from_reader(err) or (isinstance(err, OSError) and not err.filename):
        for path in getattr(args, "inputs", None) or []:
            if (why := unreadable_input(path)) is not None:
                return why
        return f"{one_line(err)} (run with -v for the traceback)"
    if isinstance(err, OSError):
        target = f"{err.filename} -> {err.filename2}" if err.filename2 else str(err.filename)
        return f"{err.strerror or one_line(err)}: {target}"
    if isinstance(err, ValueError | RuntimeError | ArithmeticError):
        return str(err).strip() or type(err).__name__  # the package's own messages
    return None
