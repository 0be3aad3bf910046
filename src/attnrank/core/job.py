"""The base of every typed job: a frozen dataclass that round-trips through canonical JSON.

``Job.from_json`` refuses unknown and missing keys with one error that names them all and the
keys expected, so a job built by hand (or by an older workflow) fails before any work.
Standard library only: the workflow imports this module while it parses the Snakefile.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, ClassVar, Self


def canonical_json(obj: Any) -> str:
    """Sorted keys, no spaces: the one serialization that params hashes are taken over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def params_hash(params: Any) -> str:
    return hashlib.sha256(canonical_json(params).encode()).hexdigest()


def _frozen(value: Any) -> Any:
    """JSON lists become tuples, so a parsed job equals the job it was written from."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


@dataclasses.dataclass(frozen=True)
class Job:
    """A frozen set of resolved parameters. Subclasses declare fields; nested typed parts are
    parsed by ``_nested``: field name → callable(dict) → dataclass."""

    _nested: ClassVar[dict[str, Any]] = {}

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self.to_json())

    def to_json(self) -> str:
        return canonical_json(dataclasses.asdict(self))

    def params_sha256(self) -> str:
        return params_hash(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str | None = None) -> Self:
        where = where or cls.__name__
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
        check_keys(cls, data, where)
        kwargs = {}
        for f in dataclasses.fields(cls):
            value = data[f.name]
            parse = cls._nested.get(f.name)
            kwargs[f.name] = parse(value, f"{where}.{f.name}") if parse else _frozen(value)
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> Self:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{cls.__name__}: not valid JSON: {err}") from None
        return cls.from_dict(data)


def check_keys(cls: type, data: dict[str, Any], where: str) -> None:
    """Refuse unknown or missing keys of a dataclass ``cls`` in one message."""
    expected = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(expected))
    missing = [k for k in expected if k not in data]
    if unknown or missing:
        parts = ([f"unknown key(s) {', '.join(unknown)}"] if unknown else []) + (
            [f"missing key(s) {', '.join(missing)}"] if missing else [])
        raise ValueError(f"{where}: {'; '.join(parts)} (expected: {', '.join(expected)})")


def part(cls: type) -> Any:
    """A parser for a nested typed part (a plain frozen dataclass, no further nesting)."""

    def parse(value: Any, where: str) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected a JSON object, got {value!r}")
        check_keys(cls, value, where)
        return cls(**{k: _frozen(v) for k, v in value.items()})

    return parse
