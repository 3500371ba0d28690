"""The modelled output calibrated by realized results (calibration.py) against a direct
computation, and what it changes in the shedder's choice (issue 28)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import OperatorStateError
from pipeline.operators.contract import PluginEnv
from pipeline.operators.events import Event
from pipeline.operators.join.plan import ProbeFeedback
from pipeline.operators.shedding.grubjoin.calibration import (
    FULL,
    HARVEST,
    LIMIT,
    MIN_EXPECTED,
    MIN_INTERVALS,
    CalibrationConfig,
    OutputCalibration,
    kind_of,
)
from pipeline.operators.shedding.grubjoin.shedder import GrubJoinShedder
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_spec

DELTA_MS = 1000
SPAN_MS = 3000

#: one Δ: (kind installed at its start, modelled results/s, results realized in it)
steps = st.lists(st.tuples(st.sampled_from([HARVEST, FULL]),
                           st.floats(0.0, 5000.0), st.integers(0, 8000)),
                 min_size=1, max_size=40)


def _direct(history: list[tuple[int, float, int]], decay: float) -> list[float]:
    """r per kind from the whole history at once: the aged geometric mean of
    (R + 1) / (E + 1) over the counted intervals (module docstring)."""
    logs: list[list[float]] = [[], []]
    kind, settled = None, 0
    for t, (k, predicted, got) in enumerate(history):
        start = t * DELTA_MS
        if k != kind:
            settled = start + SPAN_MS
        kind = k
        end = start + DELTA_MS
        expected = predicted * DELTA_MS / 1000.0
        if end >= settled and expected >= MIN_EXPECTED:
            logs[k].append(math.log((got + 1.0) / (expected + 1.0)))
    out = []
    for values in logs:
        if len(values) < MIN_INTERVALS:
            out.append(1.0)
            continue
        w = decay ** np.arange(len(values))[::-1]
        out.append(math.exp(float(np.dot(w, values) / w.sum())))
    return out


@settings(max_examples=300, deadline=None)
@given(history=steps, decay=st.sampled_from([0.5, 0.8, 1.0]))
def test_ratios_equal_the_aged_geometric_mean_of_the_counted_intervals(
        history: list[tuple[int, float, int]], decay: float) -> None:
    cal = OutputCalibration(CalibrationConfig(decay, SPAN_MS))
    for t, (kind, predicted, got) in enumerate(history):
        cal.install(kind, predicted, t * DELTA_MS)
        cal.observe(got)
        cal.close((t + 1) * DELTA_MS, DELTA_MS)
    want = _direct(history, decay)
    assert cal.ratio(HARVEST) == pytest.approx(want[HARVEST], rel=1e-9)
    assert cal.ratio(FULL) == pytest.approx(want[FULL], rel=1e-9)
    w = want[HARVEST] / want[FULL]
    assert cal.weight() == pytest.approx(min(1.0, max(1 / LIMIT, w)), rel=1e-9)
    back = OutputCalibration.restore(cal.config, cal.snapshot())
    assert back.snapshot() == cal.snapshot()


def test_an_interval_right_after_a_switch_or_with_few_expected_results_is_not_counted(
        ) -> None:
    cal = OutputCalibration(CalibrationConfig(0.5, SPAN_MS))
    cal.install(HARVEST, 1000.0, 0)
    cal.observe(10)
    assert cal.close(1000, DELTA_MS) is None  # within the span of the switch
    for t in range(MIN_INTERVALS):
        cal.observe(500)
        assert cal.close(SPAN_MS + t * DELTA_MS, DELTA_MS) == pytest.approx(
            math.log(501 / 1001))
        assert cal.weight() == (1.0 if t + 1 < MIN_INTERVALS else pytest.approx(501 / 1001))
    cal.install(HARVEST, MIN_EXPECTED / 2, SPAN_MS)  # same kind: no new span
    cal.observe(0)
    assert cal.close(SPAN_MS + 9 * DELTA_MS, DELTA_MS) is None  # too few expected
    assert cal.ratio(FULL) == 1.0 and cal.weight() == pytest.approx(501 / 1001)


def test_weight_is_bounded_and_a_broken_snapshot_is_refused() -> None:
    cal = OutputCalibration(CalibrationConfig(0.5, 0))
    cal.install(HARVEST, 1e6, 0)
    for t in range(MIN_INTERVALS):
        cal.close((t + 1) * DELTA_MS, DELTA_MS)
    assert cal.weight() == pytest.approx(1 / LIMIT)
    with pytest.raises(OperatorStateError, match="calibration"):
        OutputCalibration.restore(cal.config, {"sums": [0.0]})


def test_kind_is_full_only_when_every_position_scans_its_whole_window() -> None:
    nmax = np.array([[4, 4], [4, 4], [4, 4]])
    assert kind_of(nmax, nmax) == FULL
    low = nmax.copy()
    low[2, 1] = 3
    assert kind_of(low, nmax) == HARVEST


# ---------------------------------------------------------------------- in the shedder
CAPACITY = 1e6  # cost units per second of the virtual CPU
FIXED, SCAN = 100.0, 900.0  # cost units per admitted tuple: fixed + full-scan share


def _shedder(calibrate: bool) -> GrubJoinShedder:
    spec = make_spec(2, "band", [3_000] * 2, shedding={
        "mode": "grubjoin", "budget": "virtual", "capacity": CAPACITY, "queue": 10,
        "basic_window_ms": 500, "adapt_interval_ms": 1_000, "shred_rate": 0.0,
        "calibrate_output": calibrate})
    return GrubJoinShedder(resolve_engine(spec), PluginEnv(clock=lambda: 0.0, speedup=1.0))


def _feedback(direction: int, now: int) -> ProbeFeedback:
    """A full probe whose 60 results all lie in the newest basic window of the other
    stream: the lag histograms learn that one window of six holds every match."""
    matches = np.array([60, 0, 0, 0, 0, 0], dtype=np.int64)
    return ProbeFeedback(direction, now, (1 - direction,), (matches,), (600,), 60, 600,
                         (1,))


def _drive(sh: GrubJoinShedder, steps: int, harvest_yield: float) -> list[dict[str, Any]]:
    """``steps`` Δs of 2,000 tuples/s at full-scan cost 1,000 units (2× capacity); each
    Δ the join realizes the model's predicted results for a full scan and
    ``harvest_yield`` of them for a harvest."""
    rows, seq = [], 0
    for step in range(steps):
        for b in range(400):
            now = step * 1_000 + b * 1_000 // 400
            for _ in range(5):
                if sh.admit(Event(seq % 2, seq, now, now), now):
                    share = float(np.mean(sh.fractions)) * sh.share if sh.plans else 1.0
                    sh.charge(FIXED + SCAN * share, now)
                seq += 1
        for direction in (0, 1):
            sh.observe_probe(_feedback(direction, step * 1_000))
        cal = sh.calibration
        factor = harvest_yield if cal.kind == HARVEST else 1.0
        sh.observe_output(round(cal.predicted * factor))
        row = sh.maybe_adapt((step + 1) * 1_000)
        assert row is not None
        rows.append(row)
    return rows


def _harvests(row: dict[str, Any]) -> bool:
    return min(min(r) for r in row["harvest_fractions"]) < 1.0


def test_harvests_that_realize_a_tenth_of_their_model_yield_to_the_full_join() -> None:
    """Every match in one basic window of six: the model's harvest scans a sixth of the
    windows for all of the output, and without calibration it stays in force, whatever
    it realizes. When harvests realize a tenth of their model and full scans all of it,
    the calibrated shedder switches to full scans of fewer admitted tuples, and stays."""
    plain = _drive(_shedder(False), 24, 0.1)
    assert all(_harvests(row) for row in plain[2:])
    assert plain[-1]["harvest_weight"] < 0.2  # measured, but not used
    rows = _drive(_shedder(True), 24, 0.1)
    late = rows[-6:]
    assert not any(_harvests(row) for row in late), late
    assert all(row["admit"][0] < 1.0 for row in late)
    assert all(row["harvest_weight"] < 0.2 for row in late)


def test_harvests_that_realize_their_model_stay() -> None:
    rows = _drive(_shedder(True), 24, 1.0)
    assert all(_harvests(row) for row in rows[2:])
    assert all(row["harvest_weight"] == 1.0 for row in rows)
