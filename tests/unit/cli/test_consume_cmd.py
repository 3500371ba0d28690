"""`harvest consume` output formatting: JSON values and compact table cells."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from connectors.io.consumer import Consumed, Undecodable
from pipeline.cli.consume_cmd import compact, to_json_value, write_jsonl, write_tables


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"\x00\xff", "AP8="),
        ({"raw": b"ab", "n": [b"c"]}, {"raw": "YWI=", "n": ["Yw=="]}),
        ([1, 2.5, None, "s"], [1, 2.5, None, "s"]),
    ],
)
def test_to_json_value(value: Any, expected: Any) -> None:
    assert to_json_value(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([{"stream": "s1", "seq": 4, "event_time": 10}, {"stream": "s2", "seq": 9,
                                                         "event_time": 12}],
         "s1#4@10 s2#9@12"),
        ([0.5, 0.25], "[0.5, 0.25]"),
        ({"kw": 1.0, "b": 0.125}, "kw=1, b=0.125"),
        (1 / 3, "0.333333"),
        (None, "-"),
        (b"\x01\x02", "0102"),
        (bytes(20), "00" * 16 + "..."),
        (17, "17"),
    ],
)
def test_compact(value: Any, expected: str) -> None:
    assert compact(value) == expected


def _item(schema: str, record: dict[str, Any], offset: int = 0) -> Consumed:
    return Consumed("t", 0, offset, None, None, schema, record)


def test_write_jsonl_skips_undecodable_and_counts() -> None:
    out = io.StringIO()
    items: list[Consumed | Undecodable] = [
        _item("dead_letter", {"raw": b"x", "offset": 1}),
        Undecodable("t", 0, 1, b"zz", "bad"),
        _item("dead_letter", {"raw": b"", "offset": 2}, 2),
    ]
    assert write_jsonl(items, out) == (2, 1)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"raw": "eA==", "offset": 1}, {"raw": "", "offset": 2}
    ]


def test_write_tables_one_table_per_schema_run() -> None:
    out = io.StringIO()
    items = [
        _item("join_result", {"id": "r1", "members": [{"stream": "a", "seq": 1,
                                                       "event_time": 5}]}),
        _item("sensor_reading", {"stream": "s1", "seq": 3}),
    ]
    assert write_tables(items, out) == (2, 0)
    text = out.getvalue()
    assert "join_result (1 records)" in text and "sensor_reading (1 records)" in text
    assert "a#1@5" in text


@pytest.mark.parametrize(("flags", "read_committed"),
                         [([], False), (["--read-committed"], True)])
def test_read_committed_flag_reaches_the_consumer(
        monkeypatch: pytest.MonkeyPatch, flags: list[str], read_committed: bool) -> None:
    from pipeline.cli import consume_cmd
    from pipeline.cli.main import main

    seen: list[Any] = []

    def fake_consume(topics: Any, *, config: Any, serde: Any) -> list[Any]:
        seen.append(config)
        return []

    monkeypatch.setattr(consume_cmd, "consume", fake_consume)
    assert main(["consume", "t", "--format", "jsonl", *flags]) == 0
    assert seen[0].read_committed is read_committed
