"""The workloads of `harvest bench disorder` (Ji et al.'s D_syn^×3 and D_syn^×4 shapes, and
a stand-in for their soccer data) and the spec each method runs with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connectors.workloads import EquiParams, WorkloadSpec, ZipfDelay
from pipeline.spec.model import Spec, parse_spec

PERIOD_MS = 60_000
INTERVAL_MS = 1_000
GRANULARITY_MS = 10
RECALLS = (0.9, 0.95, 0.99, 0.999)
QUICK_RECALLS = (0.95, 0.99)
#: productivity estimate of late tuples (``disorder.late_estimate``); "max" is Ji et al.'s
LATE_ESTIMATE = "mean"
#: fixed K values (ms) run on positions2 as the oracle-tuned constant-K reference
FIXED_KS = (1_000, 1_500, 2_000, 3_000, 4_000, 5_000)
REFERENCE_WORKLOAD = "positions2"


@dataclass(frozen=True)
class Workload:
    """One benchmark workload: the generator spec and the join spec."""

    name: str
    gen: WorkloadSpec
    join: dict[str, Any]


def _equi3(minutes: float, scale: float, equi: EquiParams) -> Workload:
    """D_syn^×3: 3 streams, Zipf delays in [0, 20] s with skews 2, 3, 3, windows 5 s."""
    return Workload(
        "equi3",
        WorkloadSpec("equi", streams=3, rates=(20.0 * scale,), duration_s=60.0 * minutes,
                     disorder=(ZipfDelay(20_000, 2.0), ZipfDelay(20_000, 3.0),
                               ZipfDelay(20_000, 3.0)),
                     params=equi, seed=3),
        {"streams": ["s1", "s2", "s3"], "window_ms": 5_000, "predicate": "equi",
         "attribute": "a1"},
    )


def _star4(minutes: float, scale: float, equi: EquiParams) -> Workload:
    """D_syn^×4: 4 streams, delays Zipf skews 3, 3, 3, 4, windows 3 s (a star on a1)."""
    return Workload(
        "star4",
        WorkloadSpec("equi", streams=4, rates=(15.0 * scale,), duration_s=60.0 * minutes,
                     disorder=(ZipfDelay(20_000, 3.0), ZipfDelay(20_000, 3.0),
                               ZipfDelay(20_000, 3.0), ZipfDelay(20_000, 4.0)),
                     params=equi, seed=4),
        {"streams": ["s1", "s2", "s3", "s4"], "window_ms": 3_000, "predicate": "equi",
         "attribute": "a1"},
    )


def _positions2(minutes: float, scale: float) -> Workload:
    """The soccer stand-in: 2 teams, players within 5 m, windows 5 s, delays to 26 s."""
    return Workload(
        "positions2",
        WorkloadSpec("positions", streams=2, rates=(25.0 * scale,),
                     duration_s=60.0 * minutes,
                     disorder=(ZipfDelay(22_000, 2.0), ZipfDelay(26_000, 2.0)), seed=5),
        {"streams": ["s1", "s2"], "window_ms": 5_000, "predicate": "distance", "x": "x",
         "y": "y", "epsilon": 5.0},
    )


def workloads(quick: bool) -> list[Workload]:
    """The three workloads; quick mode shortens them and lowers the rates."""
    minutes = 1.75 if quick else 10.0
    scale = 0.5 if quick else 1.0
    # a1 skew kept in [0, 0.8] (the paper: [0, 5]) so the result volume stays modest
    equi = EquiParams(initial_skew=0.5, skew_min=0.0, skew_max=0.8)
    return [_equi3(minutes, scale, equi), _star4(minutes, scale, equi),
            _positions2(minutes, scale)]


def spec(w: Workload, mode: str, recall: float = 0.99, slack_ms: int = 0) -> Spec:
    """The spec of one method (disorder ``mode``; Γ = ``recall``, K = ``slack_ms``)."""
    return parse_spec(
        {
            "join": w.join,
            "disorder": {
                "mode": mode,
                "recall": recall,
                "period_ms": PERIOD_MS,
                "interval_ms": INTERVAL_MS,
                "granularity_ms": GRANULARITY_MS,
                "late_estimate": LATE_ESTIMATE,
                "slack_ms": slack_ms,
            },
        }
    )
