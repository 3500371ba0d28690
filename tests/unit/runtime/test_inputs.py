"""The spec against its schema files: the result schema (golden file) and every exit-2 case
(a field the schema lacks, a type the predicate cannot use, a missing schema file...)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import avro.schema
import pytest

from pipeline.cli.main import main
from pipeline.core.settings import PROJECT_ROOT
from pipeline.runtime.inputs import resolve_inputs
from pipeline.spec.model import load_spec

DATA = PROJECT_ROOT / "tests" / "data" / "own_topics"
SCHEMAS = PROJECT_ROOT / "schemas"


def test_result_schema_matches_the_golden_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--spec", str(DATA / "spec.toml")]) == 0
    printed = capsys.readouterr().out
    assert printed == (DATA / "result.avsc").read_text()
    assert main(["schema", "--spec", str(DATA / "spec.toml")]) == 0
    assert capsys.readouterr().out == printed  # deterministic
    parsed = avro.schema.parse(printed)  # the Apache library accepts it
    assert [f.name for f in parsed.fields][-3:] == ["north", "south", "east"]


def test_plan_of_the_three_layouts() -> None:
    plan = resolve_inputs(load_spec(DATA / "spec.toml"), SCHEMAS)
    north, south, east = plan.streams
    assert (north.event_time.unit, south.event_time.unit, east.event_time.unit) == (
        "ms", "us", "iso")
    assert north.id_field is None and south.id_field == "obs_id"
    assert [a.field for a in south.attributes] == ["temperature"]
    assert [a.name for a in east.attributes] == ["temp_c"]
    assert north.payload == ("station", "ts", "temp_c", "pos", "humidity")
    assert "logicalType" not in north.decode_json and "logicalType" in north.schema_json
    assert plan.topics == ("own.north", "own.south", "own.east")


def test_without_payload_the_schema_is_join_result(tmp_path: Path) -> None:
    spec = _copy(tmp_path, lambda t: t.replace('payload = ["*"]', "payload = []"))
    plan = resolve_inputs(load_spec(spec), SCHEMAS)
    assert plan.output_schema == json.loads((SCHEMAS / "join_result.avsc").read_text())


def test_own_topics_with_a_payload(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('[join]\nstreams = ["s1", "s2"]\nwindow_ms = 100\npredicate = "band"\n'
                    'attribute = "value"\n[output]\npayload = ["value", "x"]\n')
    schema = resolve_inputs(load_spec(spec), SCHEMAS).output_schema
    s1 = schema["fields"][-2]
    assert s1["name"] == "s1"
    assert [(f["name"], f["type"]) for f in s1["type"]["fields"]] == [
        ("value", "double"), ("x", "double")]


def _copy(tmp_path: Path, edit: object = None) -> Path:
    for f in DATA.glob("*.avsc"):
        shutil.copy(f, tmp_path / f.name)
    text = (DATA / "spec.toml").read_text()
    if callable(edit):
        text = edit(text)
    (tmp_path / "spec.toml").write_text(text)
    return tmp_path / "spec.toml"


def _exit_2(spec: Path, capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    assert main(["schema", "--spec", str(spec)]) == 2
    err = capsys.readouterr().err
    for needle in needles:
        assert needle in err, err
    return err


NORTH_FIELDS = "fields: station: string, ts: long (timestamp-millis), temp_c: double"


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        pytest.param('event_time = "ts"', 'event_time = "time"',
                     ["inputs.north.event_time: field 'time' is not in schema", NORTH_FIELDS],
                     id="event-time-field-missing"),
        pytest.param('event_time = "ts"', 'event_time = "station"',
                     ["inputs.north.event_time: field 'station' is string, expected a long",
                      NORTH_FIELDS], id="event-time-string-in-avro"),
        pytest.param('event_time = "when"', 'event_time = "count"',
                     ["inputs.east.event_time: field 'count' is int", "ISO-8601 string"],
                     id="event-time-int"),
        pytest.param('schema = "north.avsc"\nevent_time = "ts"',
                     'schema = "north.avsc"\nevent_time = "ts"\narrival_time = "recv"',
                     ["inputs.north.arrival_time: field 'recv' is not in schema"],
                     id="arrival-field-missing"),
        pytest.param('id = "obs_id"', 'id = "sensor"',
                     ["inputs.south.id: field 'sensor' is enum", "expected an int or long"],
                     id="id-not-integer"),
        pytest.param('id = "obs_id"', 'id = "ident"',
                     ["inputs.south.id: field 'ident' is not in schema"], id="id-missing"),
        pytest.param('attribute = "temperature"', 'attribute = "sensor"',
                     ["inputs.south.attribute: field 'sensor' is enum",
                      "the band predicate needs a number"], id="attribute-enum-for-band"),
        pytest.param('attribute = "t"', 'attribute = "label"',
                     ["inputs.east.attribute: field 'label' is string",
                      "the band predicate needs a number"], id="attribute-string-for-band"),
        pytest.param('attribute = "t"\n', '\n',
                     ["inputs.east.attribute: field 'temp_c' is not in schema",
                      "fields: when: string, t: double"], id="inherited-attribute-missing"),
        pytest.param('schema = "east.avsc"', 'schema = "nowhere.avsc"',
                     ["inputs.east.schema: schema file not found", "nowhere.avsc"],
                     id="schema-file-missing"),
        pytest.param('format = "json"', 'format = "csv"',
                     ["inputs.east.format", "'avro', 'avro-raw' or 'json'"], id="unknown-format"),
        pytest.param('payload = ["*"]', 'payload = ["station"]',
                     ["output.payload: field 'station' is not in the schema of stream 'south'"],
                     id="payload-field-missing"),
        pytest.param('streams = ["north", "south", "east"]',
                     'streams = ["north", "south", "east-1"]',
                     ["join.streams: 'east-1' is not a valid Avro name"], id="stream-not-avro"),
        pytest.param('topic = "own.joined"\n', "\n",
                     ["output.topic: required when [inputs] is given"], id="no-output-topic"),
    ],
)
def test_spec_against_schema_exits_2_naming_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str,
        needles: list[str]) -> None:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)

    _exit_2(_copy(tmp_path, edit), capsys, *needles)


def test_bad_schema_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _copy(tmp_path)
    (tmp_path / "north.avsc").write_text("{not json")
    _exit_2(spec, capsys, "inputs.north.schema", "not JSON")
    (tmp_path / "north.avsc").write_text('{"type": "record", "name": "r", "fields": '
                                         '[{"name": "a", "type": "nosuchtype"}]}')
    _exit_2(spec, capsys, "inputs.north.schema", "not a valid Avro schema")
    (tmp_path / "north.avsc").write_text('"long"')
    _exit_2(spec, capsys, "inputs.north.schema", "must hold an Avro record schema")


def test_cosine_needs_a_map(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.avsc").write_text(json.dumps({
        "type": "record", "name": "a", "fields": [
            {"name": "ts", "type": "long"}, {"name": "kw", "type": {"type": "map",
                                                                  "values": "double"}},
            {"name": "words", "type": {"type": "array", "items": "string"}}]}))
    base = ('[join]\nstreams = ["a", "b"]\nwindow_ms = 100\npredicate = "cosine"\n'
            'attribute = "kw"\nepsilon = 0.5\n'
            '[inputs.a]\ntopic = "ta"\nformat = "avro"\nschema = "a.avsc"\nevent_time = "ts"\n'
            '[inputs.b]\ntopic = "tb"\nformat = "json"\nschema = "a.avsc"\nevent_time = "ts"\n'
            '{extra}[output]\ntopic = "o"\n')
    (tmp_path / "ok.toml").write_text(base.format(extra=""))
    assert main(["schema", "--spec", str(tmp_path / "ok.toml")]) == 0
    (tmp_path / "bad.toml").write_text(base.format(extra="").replace(
        'event_time = "ts"\n[output]', 'event_time = "ts"\nattribute = "words"\n[output]'))
    capsys.readouterr()
    _exit_2(tmp_path / "bad.toml", capsys, "inputs.b.attribute: field 'words' is array<string>",
            "the cosine predicate needs a map of numbers")


def test_distance_names_x_and_y(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p.avsc").write_text(json.dumps({
        "type": "record", "name": "p", "fields": [
            {"name": "ts", "type": "long"}, {"name": "px", "type": "float"},
            {"name": "py", "type": "string"}]}))
    (tmp_path / "s.toml").write_text(
        '[join]\nstreams = ["a", "b"]\nwindow_ms = 100\npredicate = "distance"\nepsilon = 1.0\n'
        '[inputs.a]\ntopic = "ta"\nformat = "avro"\nschema = "p.avsc"\nevent_time = "ts"\n'
        'x = "px"\ny = "py"\n'
        '[inputs.b]\ntopic = "tb"\nformat = "avro"\nschema = "p.avsc"\nevent_time = "ts"\n'
        '[output]\ntopic = "o"\n')
    _exit_2(tmp_path / "s.toml", capsys, "inputs.a.y: field 'py' is string")

