"""Write a :class:`~pipeline.spec.model.Spec` back as TOML (the demo and benchmarks derive specs).

Only what a spec holds is supported: tables of strings, numbers, booleans and flat lists.
``parse_spec(tomllib.loads(spec_to_toml(s))) == s`` for every valid spec.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pipeline.core.errors import ConfigError
from pipeline.spec.model import Spec


def _value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"{key}: cannot write non-finite {value!r} to TOML")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(key, v) for v in value) + "]"
    raise ConfigError(f"{key}: cannot write {type(value).__name__} value {value!r} to TOML")


#: sections holding one table per name (``[inputs.north]``)
TABLES_OF_TABLES = frozenset({"inputs"})


def table_to_toml(data: Mapping[str, Mapping[str, Any] | None]) -> str:
    """``{"join": {...}, ...}`` → TOML text; ``None`` values and sections are left out, and
    ``{"inputs": {"north": {...}}}`` becomes ``[inputs.north]``."""
    lines: list[str] = []
    for section, body in data.items():
        if body is None:
            continue
        if section in TABLES_OF_TABLES:
            for name, sub in body.items():
                lines.append(table_to_toml({f"{section}.{name}": sub}))
            continue
        lines.append(f"[{section}]")
        for key, value in body.items():
            if value is not None:
                lines.append(f"{key} = {_value(f'{section}.{key}', value)}")
        lines.append("")
    return "\n".join(lines)


def spec_to_toml(spec: Spec) -> str:
    """The spec as TOML text (every field written explicitly)."""
    return table_to_toml(spec.model_dump(mode="python"))


def with_overrides(spec: Spec, **sections: Mapping[str, Any]) -> Spec:
    """A copy of ``spec`` with keys replaced per section, re-validated
    (e.g. ``with_overrides(s, job={"topic_prefix": "run7"})``)."""
    from pipeline.spec.model import parse_spec

    data = spec.model_dump(mode="python")
    for section, values in sections.items():
        if section not in data:
            raise ConfigError(f"{section}: not a spec section")
        data[section] = {**(data[section] or {}), **values}
    return parse_spec(data)
