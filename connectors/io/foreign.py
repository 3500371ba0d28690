"""Decoders for the user's own topics (``harvest dump``, ``harvest consume --spec``).

:class:`ForeignSerde` is an :class:`~connectors.io.serde.AvroSerde` whose ``decode``
reads one input format with one writer schema:

* ``avro`` — single-object encoding (``C3 01`` + CRC-64-AVRO fingerprint + body);
* ``avro-raw`` — a bare Avro binary body;
* ``json`` — one UTF-8 JSON object per record, typed by the schema: a value of the wrong
  type becomes a :class:`WrongType` marker (the caller names the field), a missing one
  ``None``.

Logical types are not applied (``timestamp-millis`` stays a long), as in the Spark job.
The rules follow Spark's ``from_avro`` / ``from_json`` (PERMISSIVE), so a record the job
dead-letters is one this decoder rejects too.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fastavro

from connectors.io.avsc import expand, fingerprint, full_name, strip_logical
from connectors.io.serde import HEADER_LEN, MAGIC, AvroSerde, SchemaEntry
from pipeline.core.errors import SerializationError

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class WrongType:
    """A JSON value that does not fit its field's Avro type (kept for the reason text)."""

    raw: Any

    def __str__(self) -> str:
        return json.dumps(self.raw)[:80]


class ForeignSerde(AvroSerde):
    """Decode one input topic's records (``avro``, ``avro-raw`` or ``json``)."""

    def __init__(self, fmt: str, schema: Mapping[str, Any]) -> None:
        super().__init__()
        if fmt not in ("avro", "avro-raw", "json"):
            raise SerializationError(f"unknown input format {fmt!r}")
        self.format = fmt
        self.name = full_name(schema)
        self.fingerprint_bytes = fingerprint(schema)
        self._plain = expand(strip_logical(dict(schema)))
        self._parsed = fastavro.parse_schema(strip_logical(dict(schema)), named_schemas={})

    def decode(self, data: bytes, reader: str | SchemaEntry | None = None
               ) -> tuple[str, dict[str, Any]]:
        """``(schema full name, record)``; :class:`SerializationError` with the reason."""
        if not data:
            raise SerializationError("empty record value")
        if self.format == "json":
            return self.name, self._json(data)
        body = memoryview(data)
        if self.format == "avro":
            if len(data) < HEADER_LEN:
                raise SerializationError(f"short record: {len(data)} bytes < {HEADER_LEN}-byte "
                                         "single-object header")
            if data[:2] != MAGIC:
                raise SerializationError(f"bad single-object marker {bytes(data[:2]).hex()} "
                                         "(expected c301)")
            if bytes(data[2:HEADER_LEN]) != self.fingerprint_bytes:
                raise SerializationError(
                    f"unknown writer schema fingerprint {bytes(data[2:HEADER_LEN]).hex()} "
                    f"(expected {self.fingerprint_bytes.hex()} = {self.name})")
            body = body[HEADER_LEN:]
        return self.name, self._avro(body)

    def _avro(self, body: memoryview) -> dict[str, Any]:
        buf = io.BytesIO(body)
        try:
            record = fastavro.schemaless_reader(buf, self._parsed, None)
        except Exception as exc:  # EOFError, struct.error, UnicodeDecodeError, IndexError...
            raise SerializationError(
                f"undecodable {self.format} body of {len(body)} bytes (truncated or corrupt "
                f"Avro, schema {self.name}): {type(exc).__name__}") from exc
        if buf.tell() != len(body):
            raise SerializationError(f"{len(body) - buf.tell()} trailing bytes after a "
                                     f"{self.name} record of {buf.tell()} bytes")
        if not isinstance(record, dict):
            raise SerializationError(f"{self.name} body decoded to {type(record).__name__}")
        return record

    def _json(self, data: bytes) -> dict[str, Any]:
        try:
            obj = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SerializationError(f"not a JSON object: {exc}") from None
        if not isinstance(obj, dict):
            raise SerializationError(f"not a JSON object: {json.dumps(obj)[:60]}")
        return {f["name"]: coerce(f["type"], obj.get(f["name"]))
                for f in self._plain["fields"]}


class JsonResultSerde(AvroSerde):
    """Decode results written with ``[output] format = "json"`` (one JSON object each)."""

    def decode(self, data: bytes, reader: str | SchemaEntry | None = None
               ) -> tuple[str, dict[str, Any]]:
        try:
            obj = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SerializationError(f"not a JSON result: {exc}") from None
        if not isinstance(obj, dict):
            raise SerializationError(f"not a JSON result object: {json.dumps(obj)[:60]}")
        return "join_result", obj


def _float32(value: float) -> float:
    out: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return out


def coerce(t: Any, value: Any) -> Any:
    """A JSON value as the Avro type ``t`` (expanded, no logical types) reads it: ``None``
    if missing/null, :class:`WrongType` if it does not fit (as Spark's ``from_json``)."""
    if value is None:
        return None
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        return coerce(branches[0], value) if len(branches) == 1 else json.dumps(value)
    kind = t if isinstance(t, str) else t.get("type")
    if isinstance(kind, dict | list):
        return coerce(kind, value)
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind in ("int", "long"):
        lo, hi = _INT32 if kind == "int" else _INT64
        return value if is_int and lo <= value <= hi else WrongType(value)
    if kind in ("float", "double"):
        if is_int or isinstance(value, float):
            return _float32(float(value)) if kind == "float" else float(value)
        return WrongType(value)
    if kind == "boolean":
        return value if isinstance(value, bool) else WrongType(value)
    if kind == "string":
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if kind == "enum":
        return value if isinstance(value, str) and value in t["symbols"] else WrongType(value)
    if kind in ("bytes", "fixed"):
        try:
            raw = base64.b64decode(value, validate=True) if isinstance(value, str) else None
        except (binascii.Error, ValueError):
            raw = None
        if raw is None or (kind == "fixed" and len(raw) != int(t["size"])):
            return WrongType(value)
        return raw
    if kind == "array":
        if not isinstance(value, list):
            return WrongType(value)
        items = [coerce(t["items"], v) for v in value]
        return WrongType(value) if not _complete(items, t["items"]) else items
    if kind == "map":
        if not isinstance(value, dict):
            return WrongType(value)
        entries = {k: coerce(t["values"], v) for k, v in value.items()}
        return WrongType(value) if not _complete(entries.values(), t["values"]) else entries
    if kind in ("record", "error"):
        if not isinstance(value, dict):
            return WrongType(value)
        rec = {f["name"]: coerce(f["type"], value.get(f["name"])) for f in t["fields"]}
        ok = all(_complete([rec[f["name"]]], f["type"]) for f in t["fields"])
        return rec if ok else WrongType(value)
    return WrongType(value)


def nullable(t: Any) -> bool:
    """Does the Avro type admit null?"""
    return t == "null" or (isinstance(t, list) and "null" in t)


def _complete(values: Any, t: Any) -> bool:
    """No wrong-typed value, and no null where ``t`` does not admit one (nested values of
    a JSON record: Spark could not write them back as Avro)."""
    null_ok = nullable(t)
    return all(not isinstance(v, WrongType) and (v is not None or null_ok) for v in values)
