"""The overlap predicate in the spec and on the wire: bad thresholds and attributes are
exit 2 naming the key; a set is an Avro array of int/long/string or a map of numbers;
the join stage's frames keep arrays as item sequences and maps as dicts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.cli.main import main
from pipeline.core.errors import ConfigError
from pipeline.core.settings import PROJECT_ROOT
from pipeline.operators.join.predicates import build_predicate
from pipeline.runtime.frames import events_of
from pipeline.runtime.inputs import resolve_inputs
from pipeline.spec.model import load_spec, parse_spec

SCHEMAS = PROJECT_ROOT / "schemas"
EXAMPLE = PROJECT_ROOT / "examples" / "specs" / "overlap.toml"
JOIN = {"streams": ["s1", "s2"], "window_ms": 20_000, "predicate": "overlap",
        "attribute": "items", "epsilon": 3}


@pytest.mark.parametrize(("join", "needle"), [
    ({**JOIN, "epsilon": 0}, "join: epsilon: overlap threshold must be a finite number > 0"),
    ({**JOIN, "epsilon": -1}, "join.epsilon"),
    ({**JOIN, "epsilon": float("inf")}, "epsilon: overlap threshold"),
    ({**JOIN, "attribute": None}, "attribute: required for predicate 'overlap'"),
    ({**JOIN, "predicate": "overlaps"}, "join.predicate"),
])
def test_bad_overlap_specs_name_the_key(join: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_spec({"join": join})
    assert needle in str(info.value)


def test_index_is_allowed_for_overlap() -> None:
    assert parse_spec({"join": {**JOIN, "index": True}}).join.index


def test_the_example_validates_against_the_workload_schema(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--spec", str(EXAMPLE)]) == 0
    plan = resolve_inputs(load_spec(EXAMPLE), SCHEMAS)
    assert [(a.name, a.kind) for a in plan.streams[0].attributes] == [
        ("items", "set"), ("value", "number")]


@pytest.mark.parametrize(("edit", "needle"), [
    (('attribute = "items"', 'attribute = "value"'),
     "join.attribute: field 'value' is long; the overlap predicate needs an array of items"),
    (('attribute = "items"', 'attribute = "nosuch"'),
     "join.attribute: field 'nosuch' is not in schema"),
    (('workload = "overlap"', 'workload = "news"'),
     "join.attribute: field 'items' is not in schema"),
    (("epsilon = 3", "epsilon = 0"), "epsilon: overlap threshold"),
])
def test_bad_attribute_or_threshold_exits_2(tmp_path: Path, edit: tuple[str, str], needle: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    text = EXAMPLE.read_text()
    assert edit[0] in text
    spec.write_text(text.replace(edit[0], edit[1]))
    assert main(["schema", "--spec", str(spec)]) == 2
    assert needle in capsys.readouterr().err


def _inputs_spec(tmp_path: Path, items_type: object) -> Path:
    (tmp_path / "a.avsc").write_text(json.dumps({
        "type": "record", "name": "a", "fields": [
            {"name": "ts", "type": "long"}, {"name": "tags", "type": items_type}]}))
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[join]\nstreams = ["a", "b"]\nwindow_ms = 100\npredicate = "overlap"\n'
        'attribute = "tags"\nepsilon = 2\n'
        '[inputs.a]\ntopic = "ta"\nformat = "avro"\nschema = "a.avsc"\nevent_time = "ts"\n'
        '[inputs.b]\ntopic = "tb"\nformat = "json"\nschema = "a.avsc"\nevent_time = "ts"\n'
        '[output]\ntopic = "o"\n')
    return spec


@pytest.mark.parametrize(("items_type", "kind"), [
    ({"type": "array", "items": "long"}, "set"),
    ({"type": "array", "items": "int"}, "set"),
    ({"type": "array", "items": "string"}, "set"),
    (["null", {"type": "array", "items": "string"}], "set"),
    ({"type": "map", "values": "double"}, "map"),
    ({"type": "map", "values": "int"}, "map"),
])
def test_sets_and_weighted_sets_are_accepted(tmp_path: Path, items_type: object,
                                             kind: str) -> None:
    plan = resolve_inputs(load_spec(_inputs_spec(tmp_path, items_type)), SCHEMAS)
    assert [a.kind for s in plan.streams for a in s.attributes] == [kind, kind]


@pytest.mark.parametrize("items_type", [
    {"type": "array", "items": "double"}, "long", {"type": "map", "values": "string"}])
def test_other_types_are_exit_2_naming_the_input(tmp_path: Path, items_type: object,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--spec", str(_inputs_spec(tmp_path, items_type))]) == 2
    err = capsys.readouterr().err
    assert "inputs.a.attribute: field 'tags'" in err
    assert "the overlap predicate needs an array of items (int, long or string)" in err


def test_frames_keep_arrays_and_turn_maps_into_dicts() -> None:
    """An Arrow array column arrives as NumPy arrays or lists of items, a map column as
    lists of (key, value) pairs; both encode to the same set."""
    pred = build_predicate("overlap", attribute="items", epsilon=2)
    head = {"stream_idx": [0, 1, 0], "seq": [1, 1, 2], "event_time": [0, 0, 1],
            "arrival_time": [0, 0, 1]}
    arrays = pd.DataFrame({**head, "items": [np.array([1, 2, 3]), np.array([], np.int64),
                                             np.array([3])]})
    lists = pd.DataFrame({**head, "items": [["1", "2", "3"], [], ["3"]]})
    maps = pd.DataFrame({**head, "items": [[("1", 1.0), ("2", 1.0), ("3", 1.0)], [],
                                           [("3", 1.0)]]})
    encoded = []
    for frame in (arrays, lists, maps):
        events = events_of(frame, ("items",), {"items"})
        encoded.append([pred.encode(ev.attrs).keys.tolist() for ev in events])
    assert encoded[0] == encoded[1] == encoded[2]
    assert isinstance(events_of(maps, ("items",), {"items"})[0].attrs["items"], dict)
    assert events_of(lists, ("items",), {"items"})[0].attrs["items"] == ["1", "2", "3"]
    assert events_of(arrays, ("items",), {"items"})[0].attrs["items"] == [1, 2, 3]
