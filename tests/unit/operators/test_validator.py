"""The input validator: clocks from stream time, bootstrap quorum, far-future and late
tuples, duplicates against the batch and the engine, snapshot round trips."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.config import EngineConfig
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import Event
from pipeline.operators.join.predicates import build_predicate
from pipeline.operators.validation.config import ValidatorConfig, default_max_late_ms
from pipeline.operators.validation.holds import engine_holds
from pipeline.operators.validation.validator import InputValidator

STREAMS = ("s1", "s2", "s3")
YEAR_MS = 365 * 24 * 3600 * 1000


def _cfg(**kw: int) -> ValidatorConfig:
    return ValidatorConfig(STREAMS, max_future_ms=kw.get("future", 60_000),
                           max_late_ms=kw.get("late", 20_000))


def _valid(n: int, step: int = 10, delay: int = 5) -> list[Event]:
    """n valid tuples round-robin over 3 streams, arrival every ``step`` ms from 0."""
    return [Event(i % 3, i, max(0, i * step - delay), i * step, {"value": float(i % 7)})
            for i in range(n)]


def _items(events: list[Event]) -> list[tuple[Event, int]]:
    return [(ev, i) for i, ev in enumerate(events)]


def test_default_max_late() -> None:
    assert default_max_late_ms("none", 0, (10_000, 20_000)) == 20_000
    assert default_max_late_ms("fixed", 3_000, (10_000,)) == 13_000
    assert default_max_late_ms("quality", 0, (10_000,)) == 70_000
    assert default_max_late_ms("max", 0, (10_000,)) == 70_000
    with pytest.raises(ConfigError, match="max_future_ms"):
        ValidatorConfig(STREAMS, max_future_ms=0)


def test_valid_input_passes_unchanged_in_order() -> None:
    v = InputValidator(_cfg())
    events = _valid(500)
    out = v.admit(_items(events[:3]))
    assert out.accepted == [] and v.held  # held until the quorum
    out2 = v.admit(_items(events[3:]))
    assert [ev for ev, _ in out.accepted + out2.accepted] == events
    assert not out2.rejected and out2.duplicates == 0


def test_far_future_first_record_is_rejected_and_defines_no_clock() -> None:
    v = InputValidator(_cfg())
    bad = Event(0, 10_000, 50 * YEAR_MS, 50 * YEAR_MS, {"value": 1.0})
    events = _valid(200)
    out = v.admit([(bad, "bad"), *_items(events)])
    assert [r.info for r in out.rejected] == ["bad"]
    assert out.rejected[0].reason.startswith("future: arrival_time")
    assert "disorder.max_future_ms" in out.rejected[0].reason
    assert [ev for ev, _ in out.accepted] == events


def test_far_future_in_the_middle_moves_no_clock() -> None:
    v = InputValidator(_cfg())
    events = _valid(400)
    bad = Event(1, 99_999, 3_000_000, 3_000_000, {"value": 1.0})
    items = [*_items(events[:200]), (bad, "bad"), *_items(events[200:])]
    out = v.admit(items)
    assert [r.info for r in out.rejected] == ["bad"]
    assert len(out.accepted) == 400
    _clocks, common = v.clocks()
    assert common is not None and common < 4_000


def test_a_burst_below_half_the_clock_moves_nothing_a_sustained_jump_does() -> None:
    v = InputValidator(_cfg())
    v.admit(_items(_valid(100)))
    burst = [(Event(0, 1_000 + i, 10_000_000, 10_000_000, {}), i) for i in range(10)]
    assert len(v.admit(burst).rejected) == 10
    # the stream's time really jumped (its producer was down): after a majority of the
    # recent arrivals agree, its tuples are accepted again
    later = [Event(i % 3, 2_000 + i, 10_000_000 + i, 10_000_000 + i, {}) for i in range(90)]
    out = v.admit(_items(later))
    assert out.accepted and out.accepted[-1][0] == later[-1]


def _far_burst(n: int, seq0: int, near: int) -> list[tuple[Event, str]]:
    """``n`` tuples of stream s1, 50 years ahead of ``near`` and agreeing among
    themselves, as a micro-batch sorted by arrival puts them: after its valid tuples."""
    far = near + 50 * YEAR_MS
    return [(Event(0, seq0 + k, far + k, far + k, {"value": 1.0}), f"far{k}")
            for k in range(n)]


def test_far_future_tuples_at_the_end_of_one_batch_are_no_jump() -> None:
    """A micro-batch sorted by arrival puts every far-future tuple at its end, a run of
    more than ``clock_size`` of one stream however they were interleaved: still hostile,
    every one a dead letter, and the next batch's valid tuples pass."""
    v = InputValidator(_cfg())
    events = _valid(300)
    out = v.admit([*_items(events[:200]), *_far_burst(80, 10_000, events[199].arrival)])
    assert len(out.rejected) == 80 and v.counts["jumps"] == 0
    assert all(r.reason.startswith("future:") for r in out.rejected)
    out = v.admit([*_items(events[200:]), *_far_burst(5, 20_000, events[-1].arrival)])
    assert [ev for ev, _ in out.accepted] == events[200:] and len(out.rejected) == 5


def test_a_jump_the_reference_contradicts_is_not_taken() -> None:
    """With the routing tasks' batch reference as the clock (Spark, G > 1), a run far
    ahead of it stays hostile even over several batches."""
    v = InputValidator(_cfg())
    events = _valid(100)
    v.admit(_items(events))
    for b in range(3):
        v.observe_reference(events[-1].arrival)
        out = v.admit(_far_burst(40, 10_000 + 100 * b, events[-1].arrival))
        assert len(out.rejected) == 40 and not out.accepted
    assert v.counts["jumps"] == 0


def test_the_warm_up_rejects_tuples_far_ahead_of_the_reference() -> None:
    """With aligned tuple routing an instance may see far-future copies before any valid
    tuple of its own: held, they would be the warm-up's median; with the routing tasks'
    median arrival as the reference they are rejected at once."""
    v = InputValidator(_cfg())
    v.observe_reference(100)
    out = v.admit(_far_burst(5, 10_000, 100))
    assert len(out.rejected) == 5 and not v.held and not v.bootstrapped
    events = _valid(50)
    out = v.admit(_items(events))
    assert [ev for ev, _ in out.accepted] == events and not out.rejected


def test_after_a_warm_up_with_rejections_the_next_tuples_are_still_judged() -> None:
    """Two of the first seven tuples are late: the five accepted ones are below the
    quorum, yet the tuples right after them meet a clock (the warm-up's median)."""
    events = _valid(40, step=1_000)
    late = [(Event(1, 500 + k, -60_000, events[3].arrival, {"value": 1.0}), f"late{k}")
            for k in range(2)]
    far = (Event(2, 900, 50 * YEAR_MS, 50 * YEAR_MS, {"value": 1.0}), "far")
    v = InputValidator(_cfg())
    out = v.admit([*_items(events[:3]), *late, *_items(events[3:5]), far,
                   *_items(events[5:])])
    assert [r.info for r in out.rejected] == ["late0", "late1", "far"]
    assert [ev for ev, _ in out.accepted] == events


def test_a_duplicate_of_a_warm_up_tuple_later_in_the_same_call_is_dropped() -> None:
    """The warm-up's accepted tuples reach the engine only after the call: a duplicate
    of one later in the call is found among them."""
    events = _valid(30)
    v = InputValidator(_cfg())
    out = v.admit([*_items(events[:7]), (events[4], "dup"), *_items(events[7:])],
                  lambda evs: {})
    assert out.duplicates == 1 and [ev for ev, _ in out.accepted] == events


def test_late_tuple_is_rejected() -> None:
    v = InputValidator(_cfg(late=20_000))
    events = _valid(5_000)  # 50 s of arrivals
    late = Event(2, 77_777, 1_000, 49_000, {"value": 1.0})
    out = v.admit([*_items(events), (late, "late")])
    assert [r.info for r in out.rejected] == ["late"]
    assert out.rejected[0].reason.startswith("late: event_time 1000")
    assert "disorder.max_late_ms = 20000" in out.rejected[0].reason


def test_duplicates_in_a_batch_and_conflicts() -> None:
    v = InputValidator(_cfg())
    events = _valid(50)
    dup = events[20]
    conflict = Event(dup.stream, dup.seq, dup.ts + 1, dup.arrival + 5, dict(dup.attrs))
    other = Event(dup.stream, dup.seq, dup.ts, dup.arrival + 7, {"value": 99.0})
    out = v.admit([*_items(events), (dup, "dup"), (conflict, "conflict"), (other, "other")])
    assert out.duplicates == 1 and v.counts["duplicates"] == 1
    assert [r.info for r in out.rejected] == ["conflict", "other"]
    assert all(r.reason.startswith("duplicate seq: (s3, 20)") for r in out.rejected)
    assert len(out.accepted) == 50


def test_flush_judges_held_tuples_against_their_median() -> None:
    v = InputValidator(_cfg())
    events = _valid(3)
    bad = Event(0, 9, 50 * YEAR_MS, 50 * YEAR_MS, {})
    assert v.admit([*_items(events), (bad, "bad")]).accepted == []
    out = v.flush()
    assert [ev for ev, _ in out.accepted] == events
    assert [r.info for r in out.rejected] == ["bad"]


def test_snapshot_round_trip_mid_stream() -> None:
    events = _valid(300)
    bad = Event(0, 9_999, 50 * YEAR_MS, 50 * YEAR_MS, {})
    items = [*_items(events[:100]), (bad, "bad"), *_items(events[100:])]
    whole = InputValidator(_cfg())
    expected = whole.admit(items[:4]).accepted + whole.admit(items[4:]).accepted

    first = InputValidator(_cfg())
    got = first.admit(items[:4]).accepted
    restored = InputValidator.from_snapshot(_cfg(), pickle.loads(pickle.dumps(
        first.snapshot())))
    got += restored.admit(items[4:]).accepted
    assert got == expected
    assert restored.counts == whole.counts


def test_duplicates_against_the_engine() -> None:
    config = EngineConfig(streams=STREAMS, windows=(1_000, 1_000, 1_000),
                          predicate=build_predicate("band", attribute="value", epsilon=0.5))
    eng = Engine(config)
    events = _valid(300)
    eng.process_many(events)
    v = InputValidator(_cfg())
    v.admit(_items(events))  # the validator's clocks
    windowed, buffered = events[290], events[-1]
    changed = Event(windowed.stream, windowed.seq, windowed.ts, windowed.arrival, {"value": 6.5})
    held = engine_holds(eng, [windowed, buffered, changed])
    assert set(held) == {(windowed.stream, windowed.seq), (buffered.stream, buffered.seq)}
    out = v.admit([(windowed, "w"), (buffered, "b"), (changed, "c")],
                  lambda evs: engine_holds(eng, evs))
    assert out.duplicates == 2
    assert [r.info for r in out.rejected] == ["c"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 400), min_size=10, max_size=300),
       st.lists(st.integers(0, 299), max_size=3))
def test_no_valid_tuple_is_rejected(delays: list[int], bad_at: list[int]) -> None:
    """Valid tuples (delays within the late bound) are never rejected, wherever a few
    far-future tuples (fewer than half the quorum) are interleaved with them, even at the
    start; the bad ones always are."""
    events = [Event(i % 3, i, max(0, i * 20 - d), i * 20, {}) for i, d in enumerate(delays)]
    items: list[tuple[Event, object]] = _items(events)  # type: ignore[assignment]
    for k, at in enumerate(sorted(set(bad_at), reverse=True)):
        far = 10 * YEAR_MS + k
        items.insert(min(at, len(items)), (Event(k % 3, 10_000 + k, far, far, {}), "bad"))
    v = InputValidator(_cfg(late=1_000))
    out = v.admit(items)
    out2 = v.flush()
    accepted = [ev for ev, _ in out.accepted + out2.accepted]
    assert accepted == events
    assert all(r.info == "bad" for r in out.rejected + out2.rejected)
    assert len(out.rejected + out2.rejected) == len(set(bad_at))
