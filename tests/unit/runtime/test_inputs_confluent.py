"""``avro-confluent`` inputs: the spec keys, the plan's reader and writers from a registry
(confluent-kafka's in-process ``mock://``), the re-read after a new schema id."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from connectors.io.registry_client import RegistryOptions, SchemaRegistry
from pipeline.core.errors import ConfigError
from pipeline.core.settings import PROJECT_ROOT
from pipeline.runtime.inputs import refresh_writers, resolve_inputs, uses_registry
from pipeline.spark.submit import new_schema_ids
from pipeline.spec.model import parse_spec

SCHEMAS = PROJECT_ROOT / "schemas"
V1 = {"type": "record", "name": "Reading", "namespace": "acme",
      "fields": [{"name": "ts", "type": "long"}, {"name": "temp", "type": "double"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "site", "type": "string", "default": "x"}]}
JOIN = {"streams": ["a", "b"], "window_ms": 1000, "predicate": "band", "attribute": "temp",
        "epsilon": 0.5}


def _input(topic: str, **over: Any) -> dict[str, Any]:
    return {"topic": topic, "format": "avro-confluent", "event_time": "ts", **over}


def _spec(a: dict[str, Any] | None = None, **output: Any) -> Any:
    return parse_spec({"join": JOIN, "inputs": {"a": a or _input("ta"), "b": _input("tb")},
                       "output": {"topic": "out", "payload": ["*"], **output}})


@pytest.fixture
def registry() -> SchemaRegistry:
    reg = SchemaRegistry(RegistryOptions(url=f"mock://{uuid.uuid4().hex}"))
    for topic in ("ta", "tb"):
        reg.register(f"{topic}-value", json.dumps(V1))
    reg.register("ta-value", json.dumps(V2))
    return reg


@pytest.mark.parametrize(
    ("inp", "needle"),
    [
        (_input("ta", schema="a.avsc"), "inputs.a.schema: not for format 'avro-confluent'"),
        ({**_input("ta"), "format": "avro", "schema": "a.avsc", "subject": "s"},
         "inputs.a.subject: only for format 'avro-confluent', not 'avro'"),
        ({**_input("ta"), "format": "json", "schema": "a.avsc", "reader_schema": "r.avsc"},
         "inputs.a.reader_schema: only for format 'avro-confluent'"),
        ({**_input("ta"), "format": "avro"}, "inputs.a.schema: Field required"),
    ],
)
def test_format_keys_name_the_key(inp: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        _spec(inp)
    assert needle in str(info.value)


def test_output_format_and_uses_registry() -> None:
    assert _spec(format="avro-confluent").output.format == "avro-confluent"
    assert uses_registry(_spec())
    own = parse_spec({"join": JOIN, "output": {"format": "avro-confluent"}})
    assert uses_registry(own)
    assert not uses_registry(parse_spec({"join": JOIN}))


def test_reader_is_the_latest_version_and_writers_every_version(
        registry: SchemaRegistry) -> None:
    plan = resolve_inputs(_spec(), SCHEMAS, registry=registry)
    a, b = plan.streams
    assert a.subject == "ta-value" and b.subject == "tb-value"
    assert json.loads(a.schema_json) == V2 and json.loads(b.schema_json) == V1
    assert len(a.writers) == 2 and len(b.writers) == 1
    assert a.writer_ids == {registry.latest("ta-value").schema_id,
                            registry.version("ta-value", 1).schema_id}
    assert a.payload == ("ts", "temp", "site")


def test_reader_schema_file_and_subject(registry: SchemaRegistry, tmp_path: Path) -> None:
    (tmp_path / "r.avsc").write_text(json.dumps(V1))
    registry.register("custom", json.dumps(V2))
    spec = _spec(_input("ta", subject="custom", reader_schema=str(tmp_path / "r.avsc")))
    a = resolve_inputs(spec, SCHEMAS, registry=registry).streams[0]
    assert a.subject == "custom" and json.loads(a.schema_json) == V1


def test_a_field_the_subject_lacks_exits_2_listing_the_fields(
        registry: SchemaRegistry) -> None:
    spec = _spec(_input("ta", subject="tb-value", event_time="when"))
    with pytest.raises(ConfigError) as info:
        resolve_inputs(spec, SCHEMAS, registry=registry)
    text = str(info.value)
    assert "inputs.a.event_time: field 'when' is not in schema subject 'tb-value'" in text
    assert "fields: ts: long, temp: double" in text


def test_no_registry_or_no_subject_name_the_key(registry: SchemaRegistry) -> None:
    with pytest.raises(ConfigError, match=r"inputs\.a\.format: 'avro-confluent' reads writer"):
        resolve_inputs(_spec(), SCHEMAS)
    with pytest.raises(ConfigError, match=r"inputs\.a\.subject: .*'nope'"):
        resolve_inputs(_spec(_input("ta", subject="nope")), SCHEMAS, registry=registry)


def test_refresh_adds_new_versions_and_dead_ids(registry: SchemaRegistry) -> None:
    plan = resolve_inputs(_spec(), SCHEMAS, registry=registry)
    new = registry.register("tb-value", json.dumps(V2))
    again = refresh_writers(plan, registry, frozenset({new, 999}))
    a, b = again.streams
    assert b.writer_ids == {*plan.streams[1].writer_ids, new}
    assert b.schema_json == plan.streams[1].schema_json  # the reader stays
    assert b.dead_ids == {999}
    assert a.dead_ids == {999} | ({new} - a.writer_ids)  # ids are per content or not


def test_new_schema_ids_of_a_failure() -> None:
    text = ("StreamingQueryException: [USER_RAISED_EXCEPTION] harvest: new schema id 12 "
            "(topic t, subject t-value) ... harvest: new schema id 3 (topic u")
    assert new_schema_ids(text) == {3, 12}
    assert new_schema_ids("broker down") == frozenset()
