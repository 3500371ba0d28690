"""``join_result`` schema evolution: ``Member`` gained ``partition`` and ``offset`` (with
defaults), so readers of the previous schema still decode new results and new readers
decode old ones — checked with the Apache ``avro`` library, and through the serde's
fingerprint look-up (``schemas/history``)."""

from __future__ import annotations

import io
import json
from typing import Any

import avro.io
import avro.schema

from connectors.io.serde import HEADER_LEN, AvroSerde
from pipeline.core.settings import PROJECT_ROOT

SCHEMAS = PROJECT_ROOT / "schemas"
NEW = avro.schema.parse((SCHEMAS / "join_result.avsc").read_text())
OLD = avro.schema.parse((SCHEMAS / "history" / "join_result.v1.avsc").read_text())

NEW_RESULT = {
    "id": "0f" * 16, "result_time": 1767000012345,
    "members": [{"stream": "north", "seq": 2199023255593, "event_time": 1767000012345,
                 "partition": 2, "offset": 41},
                {"stream": "south", "seq": 7, "event_time": 1767000011000,
                 "partition": 0, "offset": 3}],
    "instance": "0", "emit_time": 1795690000000,
}


def _write(schema: avro.schema.Schema, record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    avro.io.DatumWriter(schema).write(record, avro.io.BinaryEncoder(buf))
    return buf.getvalue()


def _read(writer: avro.schema.Schema, reader: avro.schema.Schema, body: bytes) -> Any:
    return avro.io.DatumReader(writer, reader).read(avro.io.BinaryDecoder(io.BytesIO(body)))


def test_old_reader_decodes_new_results() -> None:
    got = _read(NEW, OLD, _write(NEW, NEW_RESULT))
    assert got["members"] == [{"stream": "north", "seq": 2199023255593,
                               "event_time": 1767000012345},
                              {"stream": "south", "seq": 7, "event_time": 1767000011000}]
    assert {k: got[k] for k in ("id", "result_time", "instance", "emit_time")} == {
        k: NEW_RESULT[k] for k in ("id", "result_time", "instance", "emit_time")}


def test_new_reader_decodes_old_results_with_defaults() -> None:
    old = {**NEW_RESULT, "members": [
        {k: m[k] for k in ("stream", "seq", "event_time")} for m in NEW_RESULT["members"]]}
    got = _read(OLD, NEW, _write(OLD, old))
    assert [(m["partition"], m["offset"]) for m in got["members"]] == [(-1, -1), (-1, -1)]


def test_serde_resolves_both_versions_by_fingerprint() -> None:
    serde = AvroSerde.from_dir(SCHEMAS)
    new_bytes = serde.encode("join_result", NEW_RESULT)
    assert serde.decode(new_bytes) == ("join_result", NEW_RESULT)
    # a result written by the previous version (its own fingerprint) still decodes
    old_entry = serde.register(json.loads((SCHEMAS / "history" / "join_result.v1.avsc")
                                          .read_text()))
    old = {**NEW_RESULT, "members": [
        {k: m[k] for k in ("stream", "seq", "event_time")} for m in NEW_RESULT["members"]]}
    old_bytes = old_entry.header + _write(OLD, old)
    name, rec = serde.decode(old_bytes)
    assert name == "join_result"
    assert rec["members"][0] == {**old["members"][0], "partition": -1, "offset": -1}
    # and the Apache library reads our new body with the old schema
    assert _read(NEW, OLD, new_bytes[HEADER_LEN:])["id"] == NEW_RESULT["id"]
    assert serde.entry("join_result").fingerprint == NEW.fingerprint("CRC-64-AVRO")
