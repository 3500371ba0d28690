"""bench.kit.output: read_payload is write_json's inverse."""

from __future__ import annotations

from pathlib import Path

from bench.kit.output import read_payload, write_json


def test_read_payload_returns_what_write_json_was_given(tmp_path: Path) -> None:
    body = {"rows": [{"a": 1, "b": 2.5}], "targets_met": {"x": True}}
    write_json("thing", body, tmp_path)
    assert read_payload("thing", tmp_path) == body
    kept = read_payload("thing", tmp_path, ("benchmark",))
    assert set(kept) == {"machine", *body}
    assert kept["machine"] and {k: kept[k] for k in body} == body


def test_read_payload_of_nothing_or_not_an_object_is_empty(tmp_path: Path) -> None:
    assert read_payload("absent", tmp_path) == {}
    (tmp_path / "broken.json").write_text("{not json")
    assert read_payload("broken", tmp_path) == {}
    (tmp_path / "list.json").write_text("[1, 2]")
    assert read_payload("list", tmp_path) == {}
