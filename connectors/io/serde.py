"""Avro single-object encoding for every harvest record (ARCHITECTURE §7).

Wire format (Avro 1.12 specification, "Single-object encoding"): the two marker bytes
``C3 01``, the 8-byte little-endian CRC-64-AVRO (Rabin) fingerprint of the writer schema's
Parsing Canonical Form, then the schemaless Avro binary body. A reader resolves the writer
schema from the fingerprint and decodes with schema resolution into its own reader schema,
so records written with an older schema still decode under the current one.

The registry holds the current schema of every name (``schemas/*.avsc``) plus any older or
extra writer schemas registered with :meth:`AvroSerde.register`.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import fastavro.schema as avro_schema

from connectors.io.avro_batch import FlatRecordEncoder
from pipeline.core.errors import FastPathError, SchemaNotFoundError, SerializationError

MAGIC = b"\xc3\x01"
HEADER_LEN = 10  # 2 marker bytes + 8 fingerprint bytes
NAMESPACE = "harvest"
_BATCH = 1000  # records per vectorized encoding batch (keeps the arrays in cache)


@dataclass(frozen=True)
class SchemaEntry:
    """One parsed schema: its short name, fingerprint, canonical form and fastavro form."""

    name: str
    fingerprint: bytes
    canonical: str
    schema_json: str
    parsed: Any
    batch_encoder: FlatRecordEncoder | None = None

    @property
    def header(self) -> bytes:
        """The 10-byte single-object header written before every body of this schema."""
        return MAGIC + self.fingerprint


def canonical_form(schema: Mapping[str, Any] | str) -> str:
    """The schema's Parsing Canonical Form (Avro specification, "Parsing Canonical Form")."""
    return str(avro_schema.to_parsing_canonical_form(_parse(schema)))


def crc64_fingerprint(canonical: str) -> bytes:
    """CRC-64-AVRO (64-bit Rabin) fingerprint of a canonical form, 8 bytes little-endian.

    fastavro returns the fingerprint as the hex of the little-endian bytes, the same order
    the Java implementation and the ``avro`` package use on the wire.
    """
    return bytes.fromhex(str(avro_schema.fingerprint(canonical, "CRC-64-AVRO")))


def _parse(schema: Mapping[str, Any] | str) -> Any:
    """Parse with a fresh name table, so two versions of one record name never collide."""
    try:
        plain = schema if isinstance(schema, str) else dict(schema)
        return fastavro.parse_schema(plain, named_schemas={})
    except Exception as exc:  # fastavro raises SchemaParseException, ValueError, TypeError...
        raise SerializationError(f"invalid Avro schema: {exc}") from exc


def _short_name(schema: Mapping[str, Any]) -> str:
    name = schema.get("name")
    if not isinstance(name, str) or not name:
        raise SerializationError(f"schema has no record name: {json.dumps(schema)[:120]}")
    return name.rsplit(".", 1)[-1]


def schema_entry(schema: Mapping[str, Any]) -> SchemaEntry:
    """The parsed entry of a record schema (:class:`SerializationError` if invalid)."""
    name = _short_name(schema)
    parsed = _parse(schema)
    canonical = str(avro_schema.to_parsing_canonical_form(parsed))
    return SchemaEntry(
        name=name,
        fingerprint=crc64_fingerprint(canonical),
        canonical=canonical,
        schema_json=json.dumps(schema),
        parsed=parsed,
        batch_encoder=FlatRecordEncoder.for_schema(schema),
    )


class AvroSerde:
    """Encode/decode harvest records as Avro single-object encoded bytes.

    >>> from pipeline.core.settings import PROJECT_ROOT
    >>> serde = AvroSerde.from_dir(PROJECT_ROOT / "schemas")
    >>> reading = {"stream": "s1", "seq": 1, "event_time": 100, "arrival_time": 130,
    ...            "value": 20.5, "a1": 3, "x": 0.0, "y": 0.0}
    >>> data = serde.encode("sensor_reading", reading)
    >>> data[:2]  # the single-object encoding marker, then the schema fingerprint
    b'\\xc3\\x01'
    >>> serde.decode(data) == ("sensor_reading", reading)
    True
    """

    def __init__(self) -> None:
        self._current: dict[str, SchemaEntry] = {}
        self._by_fingerprint: dict[bytes, SchemaEntry] = {}

    @classmethod
    def from_dir(cls, path: Path) -> AvroSerde:
        """Load every ``*.avsc`` in ``path`` as the current schema of its name, and every
        ``history/*.avsc`` (earlier versions, e.g. ``join_result`` before ``Member`` had
        partition/offset) as a known writer schema."""
        files = sorted(Path(path).glob("*.avsc"))
        if not files:
            raise SchemaNotFoundError(f"no *.avsc schema files in {path}")
        serde = cls()
        older = sorted((Path(path) / "history").glob("*.avsc"))
        for file in [*files, *older]:
            try:
                schema = json.loads(file.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise SerializationError(f"cannot read schema file {file}: {exc}") from exc
            serde.register(schema, current=file in files)
        return serde

    def register(self, schema: Mapping[str, Any], *, current: bool = False) -> SchemaEntry:
        """Add a writer schema (e.g. an older version); ``current=True`` makes it the reader.

        Returns the entry; registering the same schema twice is harmless.
        """
        entry = schema_entry(schema)
        name = entry.name
        known = self._by_fingerprint.get(entry.fingerprint)
        if known is not None and known.name != name:
            raise SerializationError(
                f"fingerprint {entry.fingerprint.hex()} of schema {name!r} "
                f"collides with schema {known.name!r}"
            )
        self._by_fingerprint.setdefault(entry.fingerprint, entry)
        if current or name not in self._current:
            self._current[name] = entry
        return self._by_fingerprint[entry.fingerprint]

    # ---- look-ups --------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """Names with a current schema, sorted."""
        return tuple(sorted(self._current))

    def entry(self, name: str) -> SchemaEntry:
        """The current schema entry of ``name``."""
        try:
            return self._current[name]
        except KeyError:
            raise SchemaNotFoundError(
                f"unknown schema name {name!r}; known: {', '.join(self.names)}"
            ) from None

    def fingerprint(self, name: str) -> bytes:
        """8-byte little-endian CRC-64-AVRO fingerprint of the current schema of ``name``."""
        return self.entry(name).fingerprint

    def header(self, name: str) -> bytes:
        """The 10-byte prefix (``C3 01`` + fingerprint) of records of ``name``."""
        return self.entry(name).header

    def schema_json(self, name: str) -> str:
        """The current schema of ``name`` as JSON (what Spark's ``from_avro`` takes)."""
        return self.entry(name).schema_json

    def writer_of(self, data: bytes) -> SchemaEntry:
        """The writer schema entry named by a single-object header."""
        if len(data) < HEADER_LEN:
            raise SerializationError(
                f"record of {len(data)} bytes is shorter than the {HEADER_LEN}-byte "
                f"single-object header (bytes: {bytes(data[:HEADER_LEN]).hex()})"
            )
        if data[:2] != MAGIC:
            raise SerializationError(
                f"bad single-object marker {bytes(data[:2]).hex()} (expected c301)"
            )
        fp = bytes(data[2:HEADER_LEN])
        entry = self._by_fingerprint.get(fp)
        if entry is None:
            raise SchemaNotFoundError(
                f"unknown writer schema fingerprint {fp.hex()} "
                f"(little-endian CRC-64-AVRO; known: {', '.join(self.names)})"
            )
        return entry

    # ---- encode / decode -------------------------------------------------------------

    def encode(self, name: str, record: Mapping[str, Any]) -> bytes:
        """Single-object encode ``record`` with the current schema of ``name``."""
        entry = self.entry(name)
        buf = io.BytesIO()
        buf.write(entry.header)
        try:
            fastavro.schemaless_writer(buf, entry.parsed, record)
        except Exception as exc:  # fastavro raises ValueError, TypeError, KeyError, ...
            raise SerializationError(
                f"record does not match schema {name!r}: {type(exc).__name__}: {exc}"
            ) from exc
        return buf.getvalue()

    def encode_many(
        self, name: str, records: Iterable[Mapping[str, Any]], *, first_index: int = 0
    ) -> list[bytes]:
        """Encode a batch; byte-identical to :meth:`encode` per record, but much faster for
        flat schemas (vectorized, :mod:`connectors.io.avro_batch`). A bad record raises
        :class:`SerializationError` naming its index (counted from ``first_index``)."""
        entry = self.entry(name)
        batch = records if isinstance(records, list) else list(records)
        if entry.batch_encoder is not None:
            try:
                encoded: list[bytes] = []
                for lo in range(0, len(batch), _BATCH):
                    encoded += entry.batch_encoder.encode(batch[lo:lo + _BATCH], entry.header)
                return encoded
            except FastPathError:
                pass  # the per-record path below encodes what it can and names the culprit
        header = entry.header
        parsed = entry.parsed
        writer = fastavro.schemaless_writer
        out: list[bytes] = []
        buf = io.BytesIO()
        for i, record in enumerate(batch):
            buf.seek(0)
            buf.truncate()
            buf.write(header)
            try:
                writer(buf, parsed, record)
            except Exception as exc:
                raise SerializationError(
                    f"record #{first_index + i} does not match schema {name!r}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            out.append(buf.getvalue())
        return out

    def decode(
        self, data: bytes, reader: str | SchemaEntry | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Decode single-object bytes; returns (schema name, record).

        The writer schema comes from the fingerprint; the record is resolved into the reader
        schema: ``reader`` (a schema name, or an entry returned by :meth:`register`) if
        given, else the current schema of the writer's name. Raises
        :class:`SerializationError` (bad marker, truncated or trailing bytes, incompatible
        schemas) or :class:`SchemaNotFoundError` (unknown fingerprint).
        """
        writer = self.writer_of(data)
        if isinstance(reader, SchemaEntry):
            target = reader
        else:
            target = self.entry(reader if reader is not None else writer.name)
        reader_schema = None if target.fingerprint == writer.fingerprint else target.parsed
        body = io.BytesIO(memoryview(data)[HEADER_LEN:])
        try:
            record = fastavro.schemaless_reader(body, writer.parsed, reader_schema)
        except (EOFError, struct.error, IndexError) as exc:
            raise SerializationError(
                f"truncated {writer.name!r} record: body of {len(data) - HEADER_LEN} bytes "
                f"ends early ({type(exc).__name__}: {exc})"
            ) from exc
        except Exception as exc:  # SchemaResolutionError, UnicodeDecodeError, ...
            raise SerializationError(
                f"cannot decode {writer.name!r} record as {target.name!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        consumed = HEADER_LEN + body.tell()
        if consumed != len(data):
            raise SerializationError(
                f"{len(data) - consumed} trailing bytes after a {writer.name!r} record "
                f"of {consumed} bytes"
            )
        if not isinstance(record, dict):
            raise SerializationError(f"{writer.name!r} body decoded to {type(record).__name__}")
        return target.name, record
