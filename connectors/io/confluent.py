"""The Confluent wire format of a Schema Registry: magic byte, schema id, Avro body.

Each record value is the magic byte ``0``, the writer schema's registry id as 4 bytes
big-endian, then the schemaless Avro binary body (Confluent Schema Registry
documentation, "Wire format"). The writer schema is fetched from the registry by id once
(:class:`~connectors.io.registry_client.SchemaRegistry` caches it) and the body is
resolved into a reader schema (Avro 1.12 specification, "Schema Resolution"): fields the
writer lacks take the reader's defaults, fields the reader lacks are skipped. So every
version of a subject decodes into one shape.

A record that cannot be read is rejected with one of three reasons, each naming itself
(the dead-letter reason, ARCHITECTURE §7): ``bad magic byte`` (or a record shorter than
the header), ``unknown schema id``, ``undecodable body``. Bytes after the record are
ignored, as confluent-kafka's ``AvroDeserializer`` and Spark's ``from_avro`` ignore them.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro

from connectors.io.avsc import strip_logical
from connectors.io.registry_client import SchemaRegistry
from connectors.io.serde import AvroSerde, SchemaEntry, schema_entry
from pipeline.core.errors import InfraError, SchemaNotFoundError, SerializationError

FORMAT = "avro-confluent"
MAGIC_BYTE = 0
HEADER_LEN = 5
MAX_SCHEMA_ID = 2**31 - 1


def wire_header(schema_id: int) -> bytes:
    """The 5 bytes before every body written with ``schema_id``.

    >>> wire_header(7).hex()
    '0000000007'
    """
    if not 0 <= schema_id <= MAX_SCHEMA_ID:
        raise SerializationError(f"schema id {schema_id} outside 0..{MAX_SCHEMA_ID}")
    return bytes([MAGIC_BYTE]) + schema_id.to_bytes(4, "big")


def parse_header(data: bytes) -> int:
    """The schema id of a Confluent-framed record; :class:`SerializationError` with the
    reason ``bad magic byte`` (or a record shorter than the header).

    >>> parse_header(bytes.fromhex("000000012c") + b"body")
    300
    """
    if len(data) < HEADER_LEN:
        first = f" (first byte 0x{data[0]:02x})" if data else ""
        raise SerializationError(f"bad magic byte: short record of {len(data)} bytes < "
                                 f"{HEADER_LEN}-byte Confluent header{first}")
    if data[0] != MAGIC_BYTE:
        raise SerializationError(f"bad magic byte 0x{data[0]:02x} (expected 0x00, the "
                                 "Confluent wire format)")
    return int.from_bytes(data[1:HEADER_LEN], "big")


@dataclass(frozen=True)
class ConfluentEntry(SchemaEntry):
    """A schema entry whose records carry the Confluent header of its registry id."""

    schema_id: int = 0

    @property
    def header(self) -> bytes:
        return wire_header(self.schema_id)


def confluent_entry(schema: Mapping[str, Any], schema_id: int) -> ConfluentEntry:
    """The entry of ``schema`` registered under ``schema_id``."""
    base = schema_entry(schema)
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    return ConfluentEntry(**values, schema_id=schema_id)


class ConfluentSerde(AvroSerde):
    """Encode and decode the Confluent wire format against one registry.

    ``reader``: the schema every record is resolved into (default: its writer schema).
    ``fallback``: a serde for records that do not start with the magic byte (harvest's
    own single-object records on the same topics); without one they are rejected.
    ``plain``: logical types are ignored (a ``timestamp-millis`` stays a long), as Spark's
    ``from_avro`` reads them in the job.
    """

    def __init__(self, registry: SchemaRegistry, *, reader: Mapping[str, Any] | None = None,
                 fallback: AvroSerde | None = None, plain: bool = False) -> None:
        super().__init__()
        self.registry = registry
        self._plain = plain
        self._reader = self._entry_of(reader, 0) if reader is not None else None
        self._fallback = fallback
        self._written: dict[str, ConfluentEntry] = {}
        self._writers: dict[int, ConfluentEntry] = {}
        self._unknown: set[int] = set()

    def _entry_of(self, schema: Mapping[str, Any], schema_id: int) -> ConfluentEntry:
        return confluent_entry(strip_logical(dict(schema)) if self._plain else schema,
                               schema_id)

    # ---- encoding ----------------------------------------------------------------------

    def register_writer(self, schema: Mapping[str, Any], subjects: Iterable[str]
                        ) -> ConfluentEntry:
        """Register ``schema`` under every subject (e.g. one per topic) and make it the
        schema :meth:`encode` writes for its name. The registry must give it one id in
        every subject (Confluent's and Apicurio's do: an id names the schema's content)."""
        text = json.dumps(schema)
        ids = {subject: self.registry.register(subject, text) for subject in subjects}
        if len(set(ids.values())) != 1:
            raise InfraError(f"the registry at {self.registry.url} gave one schema different "
                             f"ids per subject ({ids}); harvest writes one id per schema")
        entry = confluent_entry(schema, next(iter(ids.values())))
        self._written[entry.name] = entry
        return entry

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._written))

    def entry(self, name: str) -> SchemaEntry:
        """The schema :meth:`register_writer` registered for ``name``."""
        try:
            return self._written[name]
        except KeyError:
            raise SchemaNotFoundError(f"no schema registered for {name!r} in this serde "
                                      f"(registered: {', '.join(self.names) or 'none'})"
                                      ) from None

    # ---- decoding ----------------------------------------------------------------------

    def writer_of(self, data: bytes) -> SchemaEntry:
        """The writer schema entry named by a Confluent header (fetched once per id)."""
        schema_id = parse_header(data)
        known = self._writers.get(schema_id)
        if known is not None:
            return known
        if schema_id not in self._unknown:
            try:
                text = self.registry.writer_schema(schema_id)
            except SchemaNotFoundError:
                self._unknown.add(schema_id)
            else:
                entry = self._entry_of(json.loads(text), schema_id)
                self._writers[schema_id] = entry
                return entry
        raise SchemaNotFoundError(f"unknown schema id {schema_id} (not in the registry at "
                                  f"{self.registry.url})")

    def decode(self, data: bytes, reader: str | SchemaEntry | None = None
               ) -> tuple[str, dict[str, Any]]:
        """``(schema name, record)`` resolved into ``reader`` (an entry), else the
        serde's reader schema, else the writer's; :class:`SerializationError` with the
        reason (bad magic byte, unknown schema id, undecodable body)."""
        if self._fallback is not None and data[:1] != bytes([MAGIC_BYTE]):
            return self._fallback.decode(data, reader)
        writer = self.writer_of(data)
        target = reader if isinstance(reader, SchemaEntry) else self._reader or writer
        body = io.BytesIO(memoryview(data)[HEADER_LEN:])
        size = len(data) - HEADER_LEN
        where = f"schema id {parse_header(data)} ({writer.name})"
        try:
            record = fastavro.schemaless_reader(
                body, writer.parsed, None if target is writer else target.parsed)
        except Exception as exc:  # EOFError, SchemaResolutionError, UnicodeDecodeError...
            raise SerializationError(f"undecodable body of {size} bytes for {where}: "
                                     f"{type(exc).__name__}: {exc}") from None
        if not isinstance(record, dict):
            raise SerializationError(f"undecodable body: {where} is not a record")
        return target.name, record
