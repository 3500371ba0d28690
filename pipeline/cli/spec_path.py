"""``--spec`` paths that work from any folder: a path that does not exist here names a
packaged example spec.

``harvest submit --spec examples/specs/sensors.toml`` runs in a checkout as before; from
any other folder (an installed wheel) the same path, or ``specs/sensors.toml``,
``sensors.toml`` or ``sensors``, resolves against ``HARVEST_EXAMPLES_DIR`` (by default
the examples the wheel carries). A file of that name in the working folder always wins.
"""

from __future__ import annotations

from pathlib import Path, PurePath


def candidates(value: str, examples_dir: Path) -> list[Path]:
    """Where a ``--spec`` value that is not a file here may be, in order.

    >>> [str(p) for p in candidates("examples/specs/demo.toml", Path("/x"))]
    ['/x/specs/demo.toml', '/x/examples/specs/demo.toml']
    >>> [str(p) for p in candidates("sensors", Path("/x"))]
    ['/x/sensors', '/x/specs/sensors', '/x/sensors.toml', '/x/specs/sensors.toml']
    """
    path = PurePath(value)
    if path.is_absolute():
        return []
    parts = path.parts
    if parts and parts[0] == "examples":
        return [examples_dir.joinpath(*parts[1:]), examples_dir.joinpath(*parts)]
    out = [examples_dir / path, examples_dir / "specs" / path]
    if path.suffix != ".toml":
        out += [examples_dir / f"{path}.toml", examples_dir / "specs" / f"{path}.toml"]
    return out


def resolve_spec(value: str | Path, examples_dir: Path) -> str | Path:
    """``value`` when it is a file here (or no example matches); else the packaged
    example it names, with ``value``'s type (str or Path)."""
    if Path(value).exists():
        return value
    for candidate in candidates(str(value), examples_dir):
        if candidate.is_file():
            return candidate if isinstance(value, Path) else str(candidate)
    return value
