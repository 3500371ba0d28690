"""Latency and quality numbers of `harvest bench pipeline`, against hand-computed values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.kit.readback import latencies_ms, our_id
from bench.pipeline.measure import measure
from connectors.io.consumer import Consumed
from pipeline.operators.events import Member, result_id


def _input(stream: str, seq: int, ts: int | None) -> Consumed:
    return Consumed("in", 0, seq, None, ts, "sensor_reading",
                    {"stream": stream, "seq": seq, "event_time": seq * 10})


def _result(members: list[tuple[str, int]], ts: int | None) -> Consumed:
    record: dict[str, Any] = {
        "id": "whatever", "result_time": 0,
        "members": [{"stream": s, "seq": q, "event_time": q * 10} for s, q in members],
    }
    return Consumed("results", 0, 0, None, ts, "join_result", record)


def _truth(results: list[Consumed]) -> dict[str, list[tuple[str, int]]]:
    return {our_id(r.record): [(str(m["stream"]), int(m["seq"])) for m in r.record["members"]]
            for r in results}


INPUTS = [_input("s1", 1, 1000), _input("s2", 1, 1300), _input("s2", 2, 2000),
          _input("s3", 5, None)]


@pytest.mark.parametrize(
    ("members", "append", "expected"),
    [
        ([("s1", 1), ("s2", 1)], 1500, [200.0]),  # latest member appended at 1300
        ([("s1", 1), ("s2", 2)], 2600, [600.0]),
        ([("s1", 1), ("s3", 5)], 2600, []),  # a member without a timestamp: skipped
        ([("s1", 1), ("s2", 9)], 2600, []),  # a member never seen: skipped
        ([("s1", 1), ("s2", 1)], None, []),
    ],
)
def test_latency_is_from_the_latest_member(
    members: list[tuple[str, int]], append: int | None, expected: list[float]
) -> None:
    assert latencies_ms(INPUTS, [_result(members, append)]) == expected


def test_our_id_matches_result_id() -> None:
    rec = _result([("s1", 1), ("s2", 2)], 0).record
    assert our_id(rec) == result_id([Member("s1", 1, 10), Member("s2", 2, 20)])


def test_measure_recall_precision_duplicates_rate() -> None:
    good = _result([("s1", 1), ("s2", 1)], 1500)
    other = _result([("s1", 1), ("s2", 2)], 2100)
    truth = {our_id(good.record): [("s1", 1), ("s2", 1)], "missing-1": [("s1", 1)],
             "missing-2": [("s2", 2)], "missing-3": [("s2", 1)]}
    m = measure(workload="w", method="grubjoin", input_rate=5.0, duration_s=2.0,
                truth=truth, inputs=INPUTS, results=[good, good, other], wall_s=1.0)
    assert m.recall == pytest.approx(0.25)
    assert m.precision == pytest.approx(0.5)  # `other` is not a true result
    assert m.duplicates == 1 and m.results == 2
    assert m.output_rate == pytest.approx(0.5)  # no steady span asked: the whole run
    assert (m.output_rate_all, m.recall_all) == (m.output_rate, m.recall)
    assert m.p50_ms == pytest.approx(200.0) and m.p99_ms is not None
    assert set(m.row()) >= {"workload", "method", "input_rate", "output_rate", "recall",
                            "precision", "p50_ms", "p99_ms"}


def test_steady_span_drops_warmup_and_tail_and_slope_tracks_growth() -> None:
    inputs = [_input("s1", q, 1000 * q) for q in range(0, 11)]  # appended at 0..10 s
    # result q completes with input q; its latency grows 100 ms per second of run
    results = [_result([("s1", q)], 1000 * q + 100 * q) for q in range(0, 11)]
    m = measure(workload="w", method="off", input_rate=1.0, duration_s=10.0,
                truth=_truth(results), inputs=inputs,
                results=results, wall_s=1.0, warmup=0.2, tail=0.2,
                batch_ms=[300.0, 100.0, 200.0], stopped="idle")
    # steady span = inputs appended in [2 s, 8 s] → latencies 200..800 ms
    assert m.p50_ms == pytest.approx(500.0)
    assert m.p99_ms == pytest.approx(794.0)
    assert m.p99_all_ms == pytest.approx(990.0)
    assert m.latency_slope == pytest.approx(100.0)
    assert (m.batch_ms_p50, m.batch_ms_max) == (200.0, 300.0)


def test_flat_latency_has_zero_slope() -> None:
    inputs = [_input("s1", q, 1000 * q) for q in range(0, 5)]
    results = [_result([("s1", q)], 1000 * q + 250) for q in range(0, 5)]
    m = measure(workload="w", method="grubjoin", input_rate=1.0, duration_s=5.0,
                truth={}, inputs=inputs, results=results, wall_s=1.0)
    assert m.latency_slope == pytest.approx(0.0, abs=1e-9)
    assert m.p50_ms == pytest.approx(250.0)


def test_output_rate_and_recall_are_over_the_steady_span() -> None:
    """11 inputs appended at 0..10 s; steady span (warmup = tail = 0.2) = [2 s, 8 s].
    The oracle has one result per input; the run emits every result of the first 5 s
    (a warm-up without shedding) but only the even ones after."""
    inputs = [_input("s1", q, 1000 * q) for q in range(0, 11)]
    every = [_result([("s1", q)], 1000 * q + 50) for q in range(0, 11)]
    emitted = [r for q, r in enumerate(every) if q < 5 or q % 2 == 0]
    m = measure(workload="w", method="grubjoin", input_rate=1.0, duration_s=11.0,
                truth=_truth(every), inputs=inputs, results=emitted, wall_s=1.0,
                warmup=0.2, tail=0.2, speedup=2.0)
    # inside [2 s, 8 s]: true results 2..8 (7), emitted 2, 3, 4, 6, 8 (5); 6 s of append
    # time at speedup 2 = 12 s of stream time
    assert m.recall == pytest.approx(5 / 7)
    assert m.output_rate == pytest.approx(5 / 12)
    # the whole run: 8 of 11 results over the 11 s published
    assert m.recall_all == pytest.approx(8 / 11)
    assert m.output_rate_all == pytest.approx(8 / 11)
    assert m.precision == 1.0
    assert m.input_rate_appended == pytest.approx(11 / 20)  # 11 records over 10 s × 2


@pytest.mark.parametrize(
    ("bursts", "latency_falls", "stale_grows"),
    [
        # keeps up: every 8 s a burst with the last 8 s of completions, 2 s after them
        ([(8 * k + 10, range(8 * k, 8 * k + 8)) for k in range(12)], False, False),
        # falls behind and is stopped: one early burst, then one 100 s micro-batch
        ([(40, range(0, 10)), (150, range(10, 100))], True, True),
    ],
)
def test_staleness_trend_has_no_saw_tooth(
    bursts: list[tuple[int, range]], latency_falls: bool, stale_grows: bool
) -> None:
    """Input q appended at q s; result q completes with it and is written in its burst."""
    inputs = [_input("s1", q, 1000 * q) for q in range(100)]
    results = [_result([("s1", q)], 1000 * at + q % 7) for at, qs in bursts for q in qs]
    m = measure(workload="w", method="off", input_rate=1.0, duration_s=100.0,
                truth=_truth(results), inputs=inputs, results=results, wall_s=1.0)
    assert m.latency_slope is not None and m.staleness_slope is not None
    assert (m.latency_slope < -100.0) is latency_falls
    if stale_grows:
        assert m.staleness_slope > 100.0
    else:
        assert m.staleness_slope == pytest.approx(0.0, abs=5.0)


@pytest.mark.parametrize(
    ("warmup", "settle_ms", "speedup", "span"),
    [
        (0.2, 0.0, 1.0, (2, 8)),  # warm-up share only: [2 s, 8 s]
        (0.2, 5000.0, 1.0, (5, 8)),  # two 2.5 s windows to settle: later than the share
        (0.2, 1000.0, 1.0, (2, 8)),  # settling shorter than the share: the share holds
        (0.2, 10000.0, 2.0, (5, 8)),  # 10 s of stream time = 5 s of append time at 2×
    ],
)
def test_steady_span_starts_after_the_settling_time(
    warmup: float, settle_ms: float, speedup: float, span: tuple[int, int]
) -> None:
    """11 inputs appended at 0..10 s, one true result each; the run emits all of them."""
    inputs = [_input("s1", q, 1000 * q) for q in range(0, 11)]
    every = [_result([("s1", q)], 1000 * q + 50 + 10 * q) for q in range(0, 11)]
    m = measure(workload="w", method="grubjoin", input_rate=1.0, duration_s=11.0,
                truth=_truth(every), inputs=inputs, results=every, wall_s=1.0,
                warmup=warmup, tail=0.2, settle_ms=settle_ms, speedup=speedup)
    lo, hi = span
    inside = hi - lo + 1
    assert m.output_rate == pytest.approx(inside / ((hi - lo) * speedup))
    assert m.recall == 1.0
    assert m.p50_ms == pytest.approx(50 + 10 * (lo + hi) / 2)  # latencies of lo..hi
    assert m.steady_from_s == pytest.approx(lo * speedup)


def test_timeline_counts_results_by_completion_bucket() -> None:
    """Inputs appended at 0..59 s; true result q completes with input q; ours emits the
    first 25 and the even ones after: 10 s buckets hold 10/10, 10/10, 5+2/10, 5/10,
    5/10, 5/10."""
    inputs = [_input("s1", q, 1000 * q) for q in range(60)]
    every = [_result([("s1", q)], 1000 * q + 100) for q in range(60)]
    emitted = [r for q, r in enumerate(every) if q < 25 or q % 2 == 0]
    wrong = _result([("s1", 3), ("s1", 4)], 9000)  # not a true result: not counted
    m = measure(workload="w", method="grubjoin", input_rate=1.0, duration_s=60.0,
                truth=_truth(every), inputs=inputs, results=[*emitted, wrong], wall_s=1.0)
    assert m.timeline == {"t_s": [0.0, 10.0, 20.0, 30.0, 40.0, 50.0],
                          "ours": [10.0, 10.0, 7.0, 5.0, 5.0, 5.0], "true": [10.0] * 6}
    assert sum(m.timeline["ours"]) == len(emitted)


def test_staleness_trend_ignores_the_settling_time() -> None:
    """A job that falls behind writes one burst at 40 s and one 100 s batch at 150 s. The
    settling time leaves only the second burst in the steady span, but the staleness
    trend still spans both: (9 s, 31 s old) → (99 s, 51 s old) = +222 ms/s."""
    inputs = [_input("s1", q, 1000 * q) for q in range(100)]
    bursts = [(40, range(0, 10)), (150, range(10, 100))]
    results = [_result([("s1", q)], 1000 * at) for at, qs in bursts for q in qs]
    m = measure(workload="w", method="off", input_rate=1.0, duration_s=100.0,
                truth=_truth(results), inputs=inputs, results=results, wall_s=1.0,
                settle_ms=50_000.0)
    assert m.steady_from_s == pytest.approx(50.0)
    assert m.staleness_slope == pytest.approx(20_000 / 90, rel=1e-6)


def test_cached_truth_is_the_oracle_once_per_input(tmp_path: Path) -> None:
    import json

    from bench.pipeline.measure import cached_truth
    from pipeline.quality.oracle import oracle
    from pipeline.testing.streams import make_dump, make_spec

    spec = make_spec(3, "band", [400, 400, 400])
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path, seed in ((a, 1), (b, 2)):
        path.write_text("".join(json.dumps(r) + "\n" for r in make_dump(seed=seed, m=3, n=60)))
    first = cached_truth(spec.join, a)
    want = {r.id: [(m.stream, m.seq) for m in r.members]
            for r in oracle(spec.join, make_dump(seed=1, m=3, n=60))}
    assert first == want and first
    assert cached_truth(spec.join, a) is first  # the same input: not computed again
    assert cached_truth(spec.join, b) != first
