"""One point of `harvest bench selective`: the two-way overlap join of Gedik et al.'s
(CIKM §5) workload through the GrubJoin shedder (or the random-drop baseline) on the
virtual CPU of `harvest bench grubjoin` (:func:`bench.grubjoin.sim.drive`).

The configurations (the paper's Figs. 6–8 settings, and its random drop):

* ``randomdrop`` — tuples dropped at random from the input buffer, the full join on the
  rest (``[shedding] mode = "randomdrop"``, sized every Δ by the same throttle);
* ``rate`` — one fraction r for both directions, newest basic windows first (GrubJoin
  with ``learn = false``, ``join_direction = false``);
* ``rate+time`` — one r, basic windows by their learned match rate (``learn = true``);
* ``rate+time+direction`` — per-direction fractions, the paper's Alg. 4
  (``join_direction = true``).

The three run with the paper's continuous fractions (``partial_window = true``,
:mod:`~pipeline.operators.shedding.grubjoin.directions`), except on indexed windows
(Fig. 9 right), where a probe costs a lookup and its candidates whatever share of the
window it scans, and GrubJoin's optimal harvest in whole basic windows decides.

Parameters as the paper's (§5): T_r = T_c = Δ = 5 s, δ_r = 1.2, γ = ω = 0.1, b = 1 s,
windows 20 s; the input queue holds 10 tuples (the grubjoin bench's; the paper's input
buffers hold 1 s of input, which the GrubJoin throttle does not survive: docs/NOTES.md,
issue 34 session 17); the virtual CPU's
capacity is :data:`HEADROOM` × the cost per second of the full join at 100 tuples/s
per stream (:func:`calibrate`), so the join keeps up at 100/s and sheds above.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from bench.grubjoin.sim import drive
from connectors.workloads import WorkloadSpec, generate_workload
from connectors.workloads.params import OverlapParams
from connectors.workloads.spec import PAPER_PROFILE
from pipeline.operators.config import EngineConfig
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import parse_spec

CONFIGS = ("randomdrop", "rate", "rate+time", "rate+time+direction")
#: configuration → (shedding mode, learn, join_direction)
_MODES = {"randomdrop": ("randomdrop", True, True), "rate": ("grubjoin", False, False),
          "rate+time": ("grubjoin", True, False),
          "rate+time+direction": ("grubjoin", True, True)}
WINDOW_MS = 20_000
BASIC_MS = 1_000
#: capacity = HEADROOM × cost/s of the full join at 100 tuples/s per stream
HEADROOM = 1.25
CALIBRATION_RATE = 100.0


@dataclass(frozen=True)
class Point:
    """What one run joins: the workload's κ, shift τ (s), threshold, window and basic
    window, and its rate (tuples/s per stream; None = the paper's Fig. 3 profile)."""

    kappa: float = 0.8
    shift_s: float = 0.0
    threshold: float = 3.0
    window_ms: int = WINDOW_MS
    basic_ms: int = BASIC_MS
    rate: float | None = None
    index: bool = False
    #: (seconds, tuples/s) segments when ``rate`` is None (default: the paper's Fig. 3)
    profile: tuple[tuple[float, float], ...] = PAPER_PROFILE

    @property
    def cycle_s(self) -> float:
        """ς = 2w (the paper's Fig. 2 setting)."""
        return 2.0 * self.window_ms / 1000.0


def engine_config(point: Point, config: str, capacity: float | None) -> EngineConfig:
    """The engine config of ``config`` (``off``: the full join) for ``point``."""
    mode, learn, direction = _MODES.get(config, ("off", True, True))
    shedding: dict[str, Any] = {"mode": mode, "basic_window_ms": point.basic_ms,
                                "adapt_interval_ms": 5_000, "shred_rate": 0.1, "queue": 10,
                                "boost": 1.2, "learn": learn, "join_direction": direction,
                                # the paper's r is a share of the comparisons: not
                                # what an indexed probe costs (lookup + candidates)
                                "partial_window": mode == "grubjoin" and not point.index,
                                "utilization": 0.95, "tuple_cost": 1.0}
    if capacity is not None:
        shedding["capacity"] = capacity
    spec = parse_spec({
        "join": {"streams": ["s1", "s2"], "window_ms": point.window_ms,
                 "predicate": "overlap", "attribute": "items", "epsilon": point.threshold,
                 "index": point.index},
        "disorder": {"mode": "none"},
        "shedding": shedding,
    })
    return resolve_engine(spec)


def records(point: Point, duration_s: float, seed: int) -> list[dict[str, Any]]:
    """The overlap workload of ``point``: stream 2 shifted by τ, ς = 2w."""
    params = OverlapParams(kappa=point.kappa, cycle_s=point.cycle_s, shift_s=point.shift_s)
    rate = CALIBRATION_RATE if point.rate is None else point.rate
    spec = WorkloadSpec("overlap", streams=2, rates=(rate,), duration_s=duration_s,
                        params=params, seed=seed,
                        profile=point.profile if point.rate is None else ())
    return generate_workload(spec).records()


@functools.lru_cache(maxsize=1)
def _inputs(point: Point, duration_s: float, seed: int) -> tuple[list[dict[str, Any]],
                                                                  list[Any]]:
    """The records of a run and their encodings, kept for the next configuration."""
    recs = records(point, duration_s, seed)
    pred = engine_config(point, "off", None).predicate
    return recs, [pred.encode(r) for r in recs]


def calibrate(point: Point, measure_s: float = 10.0) -> float:
    """HEADROOM × cost units per second of the full join at 100 tuples/s per stream."""
    full = dataclasses.replace(point, rate=CALIBRATION_RATE)
    prefill = full.window_ms
    recs = records(full, prefill / 1000.0 + measure_s, seed=99)
    res = drive(engine_config(full, "off", None), "off", recs, prefill, prefill)
    return HEADROOM * (res["comparisons"] + res["admitted"]) / measure_s


def run_point(point: Point, config: str, capacity: float, duration_s: float, settle_s: float,
              seed: int, bucket_ms: int | None = None) -> dict[str, Any]:
    """One run: the windows pre-filled with w seconds, ``settle_s`` not measured, then
    the output rate (results/s) over the rest of ``duration_s``; with ``bucket_ms`` the
    output per bucket and the adaptation steps too (the rate-profile figures)."""
    prefill = point.window_ms
    recs, encoded = _inputs(point, prefill / 1000.0 + duration_s, seed)
    measure_from = prefill + int(settle_s * 1000)
    mode = _MODES[config][0]
    res = drive(engine_config(point, config, capacity), mode, recs, prefill, measure_from,
                bucket_ms=bucket_ms, encoded=encoded)
    res["output_rate"] = res["results"] / (duration_s - settle_s)
    res["prefill_ms"] = prefill
    return res
