"""``[inputs]`` / ``[output]`` in the spec: valid tables load, bad ones name the key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.errors import ConfigError
from pipeline.spec.model import load_spec, parse_spec
from pipeline.spec.toml import spec_to_toml

JOIN = {"streams": ["north", "south"], "window_ms": 20000, "predicate": "band",
        "attribute": "temp_c", "epsilon": 0.5}


def _input(topic: str, **extra: Any) -> dict[str, Any]:
    return {"topic": topic, "format": "avro", "schema": "/s/station.avsc", "event_time": "ts",
            **extra}


def _spec(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "join": dict(JOIN),
        "inputs": {"north": _input("weather.north"), "south": _input("weather.south")},
        "output": {"topic": "weather.joined"},
    }
    data.update(over)
    return data


def test_defaults_and_topics() -> None:
    spec = parse_spec(_spec())
    assert spec.inputs is not None
    north = spec.inputs["north"]
    assert (north.arrival_time, north.id, north.schema_path) == ("kafka", "offset",
                                                                  "/s/station.avsc")
    assert spec.output.topics("harvest") == (
        "weather.joined", "weather.joined.metrics", "weather.joined.deadletter")
    assert spec.output.payload == () and spec.output.format == "avro"


def test_output_without_inputs_defaults_to_prefix_topics() -> None:
    spec = parse_spec({"join": JOIN, "output": {"payload": ["temp_c"]}})
    assert spec.inputs is None
    assert spec.output.topics("run7") == ("run7.results", "run7.metrics", "run7.deadletter")
    plain = parse_spec({"join": JOIN})
    assert plain.output.topics("harvest")[0] == "harvest.results"


def test_explicit_side_topics() -> None:
    spec = parse_spec(_spec(output={"topic": "o", "metrics_topic": "m", "deadletter_topic": "d"}))
    assert spec.output.topics("p") == ("o", "m", "d")


def test_relative_schema_resolves_against_the_spec_folder(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "spec.toml").write_text(
        '[join]\nstreams = ["north", "south"]\nwindow_ms = 1000\npredicate = "band"\n'
        'attribute = "t"\n'
        '[inputs.north]\ntopic = "a"\nformat = "json"\nschema = "station.avsc"\nevent_time = "ts"\n'
        '[inputs.south]\ntopic = "b"\nformat = "avro-raw"\nschema = "/abs/x.avsc"\n'
        'event_time = "ts"\n[output]\ntopic = "o"\n')
    spec = load_spec(folder / "spec.toml")
    assert spec.inputs is not None
    assert spec.inputs["north"].schema_path == str(folder / "station.avsc")
    assert spec.inputs["south"].schema_path == "/abs/x.avsc"


def test_round_trips_through_toml() -> None:
    spec = parse_spec(_spec(output={"topic": "o", "payload": ["*"], "format": "json"}))
    text = spec_to_toml(spec)
    assert "[inputs.north]" in text and 'schema = "/s/station.avsc"' in text
    assert parse_spec(tomllib.loads(text)) == spec


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"inputs": {"north": _input("a", format="protobuf"), "south": _input("b")}},
         "inputs.north.format"),
        ({"inputs": {"north": _input("a", colour="red"), "south": _input("b")}},
         "inputs.north.colour: unknown key"),
        ({"inputs": {"north": {"topic": "a", "format": "avro", "event_time": "ts"},
                     "south": _input("b")}}, "inputs.north.schema"),
        ({"inputs": {"north": {"topic": "a", "format": "avro", "schema": "s.avsc"},
                     "south": _input("b")}}, "inputs.north.event_time"),
        ({"inputs": {"north": _input("bad topic"), "south": _input("b")}}, "inputs.north.topic"),
        ({"inputs": {"north": _input("a")}}, "inputs: no [inputs.<stream>] table"),
        ({"inputs": {"north": _input("a"), "south": _input("b"), "west": _input("c")}},
         "inputs.west: not a stream"),
        ({"output": {}}, "output.topic: required when [inputs] is given"),
        ({"inputs": {"north": _input("a"), "south": _input("a")}},
         "inputs.south.topic: 'a' is also the topic of inputs.north"),
        ({"inputs": {"north": _input("weather.joined"), "south": _input("b")}},
         "is an output topic"),
        ({"inputs": {"north": _input("a", x="lon"), "south": _input("b")}},
         "inputs.north.x: only for the distance predicate"),
        ({"output": {"topic": "o", "payload": ["*", "temp_c"]}}, "output.payload"),
        ({"output": {"topic": "o", "payload": ["a", "a"]}}, "duplicate fields"),
        ({"output": {"topic": "o", "format": "xml"}}, "output.format"),
        ({"join": {**JOIN, "streams": ["north-1", "south"]}},
         "join.streams: 'north-1' is not a valid Avro name"),
        ({"join": {**JOIN, "streams": ["members", "south"]},
          "inputs": {"members": _input("a"), "south": _input("b")}},
         "join.streams: 'members' equals a result field"),
        ({"join": {**JOIN, "attribute": "offset"}}, "join.attribute: 'offset' is a reserved"),
        ({"job": {"mode": "passthrough"}}, "job.mode"),
    ],
)
def test_bad_inputs_name_the_key(over: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_spec(_spec(**over))
    assert needle in str(info.value)


def test_stream_names_are_checked_when_a_payload_is_asked_for() -> None:
    join = {**JOIN, "streams": ["s-1", "s-2"]}
    assert parse_spec({"join": join}).join.streams == ("s-1", "s-2")  # today's topics allow it
    with pytest.raises(ConfigError, match="not a valid Avro name"):
        parse_spec({"join": join, "output": {"payload": ["value"]}})
    with pytest.raises(ConfigError, match="equals a result field"):
        parse_spec({"join": {**JOIN, "streams": ["id", "s2"]}, "output": {"payload": ["v"]}})
