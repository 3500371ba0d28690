"""Avro schema knowledge for the user's own topics: read an ``.avsc``, describe its fields,
strip logical types, and generate the result schema that carries members' payloads.

Plain inputs and outputs (dicts, names, paths): the callers (the job builder, the CLI)
turn spec keys into these, so error messages name the spec key given as ``key``.

Result schema (:func:`result_schema`): ``join_result`` plus one field per stream, named
after the stream, holding a record ``harvest.payload.<stream>`` of that stream's chosen
fields with their Avro types. Named types inside a payload field are renamed into the
namespace ``harvest.payload.<stream>`` (so two streams may use the same record name) and
defined once. Avro binary encoding of a record is the concatenation of its fields, so a
result body is the ``join_result`` body followed by each stream's payload body.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import fastavro.schema as avro_schema

from connectors.io.serde import canonical_form, crc64_fingerprint
from pipeline.core.errors import ConfigError

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NUMERIC = frozenset({"int", "long", "float", "double"})
PAYLOAD_NAMESPACE = "harvest.payload"


@dataclass(frozen=True)
class AvroField:
    """One top-level field: its Avro type (expanded), and that type with a ``null`` union
    branch removed: ``base`` (``long``, ``map``, ``record``...), ``logical``, ``nullable``."""

    name: str
    type: Any
    base: str
    logical: str | None
    nullable: bool
    #: the value type of a map / the item type of an array (base name), else None
    inner: str | None = None

    def describe(self) -> str:
        """``long (timestamp-millis)``, ``["null", double]``, ``map<double>``..."""
        text = self.base if self.inner is None else f"{self.base}<{self.inner}>"
        if self.logical:
            text += f" ({self.logical})"
        return f'["null", {text}]' if self.nullable else text


def read_avsc(path: str | Path, key: str) -> dict[str, Any]:
    """The record schema in ``path``; :class:`ConfigError` naming ``key`` if the file is
    missing, not JSON, not a valid Avro schema or not a record."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{key}: schema file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{key}: cannot read schema file {p}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{key}: schema file {p} is not JSON: {exc}") from exc
    try:
        fastavro.parse_schema(copy.deepcopy(data), named_schemas={})
    except Exception as exc:  # fastavro raises SchemaParseException, ValueError, ...
        raise ConfigError(f"{key}: {p} is not a valid Avro schema: {exc}") from exc
    if not isinstance(data, dict) or data.get("type") != "record":
        raise ConfigError(f"{key}: {p} must hold an Avro record schema")
    return data


def expand(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema with every named-type reference replaced by its definition, full names."""
    out = avro_schema.expand_schema(copy.deepcopy(dict(schema)))
    assert isinstance(out, dict)
    return out


def full_name(schema: Mapping[str, Any]) -> str:
    """The record's full name (``namespace.name``)."""
    return str(expand(schema)["name"])


def fingerprint(schema: Mapping[str, Any]) -> bytes:
    """8-byte CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form."""
    return crc64_fingerprint(canonical_form(schema))


def _unwrap(t: Any) -> tuple[Any, bool]:
    """(type without a null branch, nullable) for ``T`` or ``["null", T]``."""
    if isinstance(t, list):
        rest = [b for b in t if b != "null"]
        if len(rest) == 1:
            return rest[0], len(rest) < len(t)
        return t, "null" in t
    return t, False


def _base(t: Any) -> tuple[str, str | None]:
    """(base type name, logical type) of an expanded, non-union type."""
    if isinstance(t, str):
        return t, None
    if isinstance(t, list):
        return "union", None
    kind = str(t.get("type"))
    if kind in PRIMITIVES:
        return kind, t.get("logicalType")
    return kind, t.get("logicalType")


def _inner(t: Any) -> str | None:
    if isinstance(t, dict) and t.get("type") in ("map", "array"):
        sub = t["values"] if t["type"] == "map" else t["items"]
        return _base(_unwrap(sub)[0])[0]
    return None


def record_fields(schema: Mapping[str, Any]) -> list[AvroField]:
    """The top-level fields of a record schema, in schema order."""
    fields: list[AvroField] = []
    for f in expand(schema)["fields"]:
        t, nullable = _unwrap(f["type"])
        base, logical = _base(t)
        fields.append(AvroField(str(f["name"]), f["type"], base, logical, nullable, _inner(t)))
    return fields


def strip_logical(schema: Any) -> Any:
    """A copy without ``logicalType`` annotations (same binary encoding, same canonical
    form and fingerprint): timestamps decode as their long value."""
    if isinstance(schema, list):
        return [strip_logical(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strip_logical(v) for k, v in schema.items() if k != "logicalType"}
    if "fields" in schema:
        out["fields"] = [{**f, "type": strip_logical(f["type"])} for f in schema["fields"]]
    if set(out) == {"type"} and isinstance(out["type"], str) and out["type"] in PRIMITIVES:
        return out["type"]
    return out


# --------------------------------------------------------------------- result schema
_KEY_ORDER = ("type", "name", "namespace", "doc", "logicalType", "precision", "scale",
              "size", "symbols", "items", "values", "fields", "default")


def _ordered(t: dict[str, Any]) -> dict[str, Any]:
    """The keys of a type in a fixed, readable order (``type`` first)."""
    head = {k: t[k] for k in _KEY_ORDER if k in t}
    return {**head, **{k: v for k, v in sorted(t.items()) if k not in head}}


def _rename(t: Any, namespace: str, defined: set[str]) -> Any:
    """An expanded type with its named types moved into ``namespace``, each defined once."""
    if isinstance(t, list):
        return [_rename(b, namespace, defined) for b in t]
    if not isinstance(t, dict):
        return t
    out = _rename_dict(t, namespace, defined)
    return _ordered(out) if isinstance(out, dict) else out


def _rename_dict(t: dict[str, Any], namespace: str, defined: set[str]) -> Any:
    kind = t.get("type")
    if kind in ("record", "error", "enum", "fixed"):
        name = f"{namespace}.{str(t['name']).rsplit('.', 1)[-1]}"
        if name in defined:
            return name
        defined.add(name)
        out = {k: v for k, v in t.items() if k not in ("namespace", "aliases")}
        out["name"] = name
        if "fields" in t:
            out["fields"] = [_field(f, namespace, defined) for f in t["fields"]]
        return out
    if kind == "array":
        return {**t, "items": _rename(t["items"], namespace, defined)}
    if kind == "map":
        return {**t, "values": _rename(t["values"], namespace, defined)}
    return t


def _field(f: Mapping[str, Any], namespace: str, defined: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f["name"], "type": _rename(f["type"], namespace, defined)}
    if "doc" in f:
        out["doc"] = f["doc"]
    return out


def payload_record(stream: str, schema: Mapping[str, Any],
                   fields: Sequence[str]) -> dict[str, Any]:
    """The record type of one stream's payload: ``fields`` of ``schema`` in that order."""
    namespace = f"{PAYLOAD_NAMESPACE}.{stream}"
    by_name = {str(f["name"]): f for f in expand(schema)["fields"]}
    defined: set[str] = set()
    return {
        "type": "record",
        "name": stream,
        "namespace": PAYLOAD_NAMESPACE,
        "fields": [_field(by_name[name], namespace, defined) for name in fields],
    }


def result_schema(base: Mapping[str, Any],
                  payloads: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """``base`` (``join_result``) plus one field per ``(stream, payload record)``, in order;
    ``base`` itself when there is no payload."""
    out = copy.deepcopy(dict(base))
    if not payloads:
        return out
    out["fields"] = [*out["fields"], *(
        {"name": stream, "type": copy.deepcopy(dict(record)),
         "doc": f"payload of the {stream} member"}
        for stream, record in payloads)]
    try:
        fastavro.parse_schema(copy.deepcopy(out), named_schemas={})
    except Exception as exc:
        raise ConfigError(f"output.payload: the generated result schema is invalid: {exc}") \
            from exc
    return out


def schema_text(schema: Mapping[str, Any]) -> str:
    """Deterministic pretty JSON of a schema (what ``harvest schema`` prints)."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
