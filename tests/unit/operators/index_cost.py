"""Predicted vs charged cost of the indexed join (helper of test_index_costmodel).

Pass 1 runs the unindexed join with full plans and feedback to measure what the model
needs (pair and deep σ, window sizes, result-lag histograms → scores); pass 2 runs
``MWayJoin(index=True)`` on the same tuples with a full and a harvested plan per
direction and records the mean cost it charges per probe.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from connectors.workloads import WorkloadSpec, generate
from connectors.workloads.params import SensorParams
from pipeline.operators.costmodel import HarvestModel, window_ranking
from pipeline.operators.hooks import ProbePlan
from pipeline.operators.mjoin import JoinConfig, MWayJoin
from pipeline.operators.predicates import build_predicate

WINDOW_MS = 20_000
BASIC_MS = 2_000


@dataclass(frozen=True)
class Measured:
    model: HarvestModel
    plans: dict[str, tuple[ProbePlan, ...]]
    counts: dict[str, np.ndarray]
    charged: dict[str, np.ndarray]  # mean cost per probe, per direction
    probes: np.ndarray


def measure(rate: float = 100.0, harvest: int = 3, seed: int = 2,
            lags: tuple[float, ...] = (0.0, 5.0, 15.0),
            kappas: tuple[float, ...] = (2.0, 2.0, 50.0), period: float = 50.0) -> Measured:
    m = len(lags)
    ws = WorkloadSpec("sensors", streams=m, rates=(rate,), duration_s=30.0, lags_s=lags,
                      kappas=kappas, seed=seed,
                      params=SensorParams(period=period))
    recs = list(generate(ws))
    pred = build_predicate("band", attribute="value", epsilon=1.0)
    names = sorted({r["stream"] for r in recs})
    idx = {n: i for i, n in enumerate(names)}
    n = WINDOW_MS // BASIC_MS
    orders = [tuple(l for l in range(m) if l != i) for i in range(m)]
    prefill = 20_000

    def run(index: bool, plans: tuple[ProbePlan, ...]) -> tuple[list[list[float]], list]:
        join = MWayJoin(JoinConfig((WINDOW_MS,) * m, BASIC_MS, pred, index))
        costs: list[list[float]] = [[] for _ in range(m)]
        fbs = []
        for r in recs:
            s, ts, seq = idx[r["stream"]], int(r["event_time"]), int(r["seq"])
            enc = pred.encode(r)
            if ts < prefill:
                join.insert(s, ts, seq, enc)
                join.join_time = max(join.join_time, ts)
                continue
            out = join.process(s, ts, seq, enc, plans[s])
            costs[s].append(out.cost)
            if out.feedback is not None:
                fbs.append(out.feedback)
        return costs, fbs

    full = tuple(ProbePlan(order=o, windows=(None,) * (m - 1), feedback=True) for o in orders)
    _, fbs = run(False, full)
    sums = np.zeros((4, m, m))
    hist = np.zeros((m, m, n))
    for fb in fbs:
        ent = list(fb.partials)
        for j, l in enumerate(fb.order):
            if j >= len(ent) or fb.scanned[j] <= 0:
                break
            found = ent[j + 1] if j + 1 < len(ent) else fb.results
            base = 0 if j == 0 else 2
            sums[base, fb.direction, l] += found
            sums[base + 1, fb.direction, l] += fb.scanned[j]
            hist[fb.direction, l] += fb.matches[j]
    with np.errstate(invalid="ignore", divide="ignore"):
        first = np.nan_to_num(sums[0] / sums[1])
        deep = np.nan_to_num(sums[2] / sums[3])
    seg = np.full(m, rate * WINDOW_MS / 1000.0)
    scores = [[hist[i, l] + 1e-9 for l in orders[i]] for i in range(m)]
    model = HarvestModel.build(np.full(m, rate), seg, first, scores, np.array(orders),
                               0.0, deep, indexed=True)
    counts = {"full": model.max_counts(),
              "harvested": np.full((m, m - 1), harvest, dtype=np.int64)}
    plans = {"full": tuple(ProbePlan(order=o, windows=(None,) * (m - 1)) for o in orders),
             "harvested": tuple(
                 ProbePlan(order=orders[i], windows=tuple(
                     tuple(int(v) for v in window_ranking(scores[i][j])[:harvest])
                     for j in range(m - 1)))
                 for i in range(m))}
    charged, probes = {}, np.zeros(m)
    for name, pl in plans.items():
        costs, _ = run(True, pl)
        charged[name] = np.array([np.mean(c) for c in costs])
        probes = np.array([len(c) for c in costs])
    return Measured(model, plans, counts, charged, probes)


def predicted(model: HarvestModel, counts: np.ndarray) -> np.ndarray:
    """Per-probe C_i of every direction under the (indexed) model."""
    arr = model.arrays()
    return np.array([float(arr.row_terms(i, counts[i])[0]) / arr.lam[i]
                     for i in range(model.m)])
