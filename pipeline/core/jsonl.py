"""JSON-lines files: dumps (generator output), join results, metrics."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pipeline.core.errors import ConfigError, SerializationError


def iter_jsonl(path: Path, what: str = "--input") -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) of every non-blank line.

    A missing file is a :class:`ConfigError` naming ``what`` (exit 2); a line that is not
    a JSON object is a :class:`SerializationError` naming the file and line.
    """
    try:
        handle = path.open("r", encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what}: file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"{what}: is a directory: {path}") from None
    with handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SerializationError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise SerializationError(f"{path}:{lineno}: expected a JSON object, got {obj!r}")
            yield lineno, obj


def read_jsonl(path: Path, what: str = "--input") -> list[dict[str, Any]]:
    """All objects of a JSON-lines file (see :func:`iter_jsonl`)."""
    return [obj for _, obj in iter_jsonl(path, what)]


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write rows as JSON lines; returns the number written.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "out" / "rows.jsonl"
    >>> write_jsonl(path, [{"seq": 1, "kw": {"rain": 2.0}}, {"seq": 2}])
    2
    >>> path.read_text().splitlines()
    ['{"seq":1,"kw":{"rain":2.0}}', '{"seq":2}']
    >>> read_jsonl(path)
    [{'seq': 1, 'kw': {'rain': 2.0}}, {'seq': 2}]
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, separators=(",", ":")) + "\n")
            n += 1
    return n
