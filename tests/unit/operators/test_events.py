"""Events, result ids and record conversions."""

from __future__ import annotations

import pytest

from pipeline.core.errors import SerializationError
from pipeline.operators.events import (
    Member,
    event_from_dump,
    event_to_dump,
    make_result,
    result_from_json,
    result_id,
)

INDEX = {"s1": 0, "s2": 1}


def test_result_id_is_deterministic_and_member_based() -> None:
    a = [Member("s1", 12, 100), Member("s2", 7, 90)]
    b = [Member("s1", 12, 555), Member("s2", 7, 1)]  # same (stream, seq), other times
    assert result_id(a) == result_id(b)
    assert result_id(a) != result_id([Member("s1", 12, 100), Member("s2", 8, 90)])
    r = make_result(a)
    assert r.result_time == 100
    assert result_from_json(r.to_json()) == r


def test_dump_round_trip() -> None:
    rec = {"stream": "s2", "seq": 3, "event_time": 10, "arrival_time": 25, "value": 1.5}
    ev = event_from_dump(rec, INDEX)
    assert (ev.stream, ev.seq, ev.ts, ev.arrival, dict(ev.attrs)) == (1, 3, 10, 25, {"value": 1.5})
    assert event_to_dump(ev, ["s1", "s2"]) == rec


@pytest.mark.parametrize(
    ("rec", "needle"),
    [
        ({"seq": 1, "event_time": 1, "arrival_time": 1}, "'stream'"),
        ({"stream": "s9", "seq": 1, "event_time": 1, "arrival_time": 1}, "'s9'"),
        ({"stream": "s1", "seq": 1, "arrival_time": 1}, "'event_time'"),
        ({"stream": "s1", "seq": "x", "event_time": 1, "arrival_time": 1}, "non-integer"),
    ],
)
def test_bad_dump_records_are_named(rec: dict[str, object], needle: str) -> None:
    with pytest.raises(SerializationError, match=needle):
        event_from_dump(rec, INDEX)


def test_bad_result_record() -> None:
    with pytest.raises(SerializationError, match="members"):
        result_from_json({"id": "x", "result_time": 1})
