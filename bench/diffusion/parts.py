"""The parts of `harvest bench diffusion`, one per figure of Gu et al. §6 (Figs. 7–16)
plus skew and the calibration against the real Spark drain.

Every run routes a workload through one router on G virtual hosts
(:mod:`bench.diffusion.cluster`, :mod:`bench.diffusion.ctr_run`) and is checked against
the oracle; ``scaling`` = the run's ``async_rate`` over the centralized run's (G = 1)
on the same workload.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.diffusion.cluster import Trace, run_keys
from bench.diffusion.ctr_run import run_ctr
from bench.diffusion.measures import measure
from bench.diffusion.oracle import oracle_rows
from bench.diffusion.routers import AdaptiveVRouter, StaticRouter, VRouter
from bench.diffusion.workload import Workload, make_workload
from pipeline.core.logging import get_logger
from pipeline.diffusion.adaptive import AdaptiveConfig
from pipeline.diffusion.routing import RouterConfig

log = get_logger("bench.diffusion")

ROUTERS = ("hash", "atr", "atr-ll", "atr-adaptive", "ctr")
#: the base workload: W = 200 ms, 500 tuples/s per stream (100 in each window)
W_MS, RATE, TRIGGER_MS = 200, 500.0, 1_000
#: ATR's T (10 W: replication 1 + (m−1)/m · 2W/T) and CTR's (W/2: fine-grained, §3.5)
ATR_T, CTR_T = 10 * W_MS, W_MS // 2


@dataclass(frozen=True)
class Sizes:
    """Durations (ms of stream time) and host counts of a full or quick run."""

    scaling_ms: int
    figure_ms: int
    groups: tuple[int, ...]
    figure_groups: int


def sizes(quick: bool) -> Sizes:
    if quick:
        return Sizes(30_000, 10_000, (1, 2, 4, 8), 4)
    return Sizes(200_000, 40_000, (1, 2, 4, 8, 16), 8)


def band_eps(m: int, per_window: float) -> float:
    """ε giving about one result per tuple: m·(ε·n_W)^(m−1) ≈ 1."""
    return float((1.0 / m) ** (1.0 / (m - 1)) / per_window)


def adaptive_config(wl: Workload, groups: int, keys: str = "least-loaded",
                    adapt: bool = True, segment_ms: int = ATR_T,
                    speeds: Sequence[float] | None = None) -> AdaptiveConfig:
    """Adaptive ATR as the bench runs it: T starts at ``segment_ms``, climbs by W."""
    return AdaptiveConfig(
        groups=groups, windows_ms=wl.windows, segment_ms=segment_ms, master=0,
        segment_keys=keys,  # type: ignore[arg-type]
        adapt_master=adapt, adapt_interval_ms=10 * TRIGGER_MS, switch_margin=0.1,
        adapt_segment=adapt, segment_min_ms=max(1, segment_ms // 4),
        segment_max_ms=segment_ms * 4, segment_step_ms=max(1, segment_ms // 4),
        speeds=None if speeds is None else tuple(speeds))


def make_router(name: str, wl: Workload, groups: int, speeds: Sequence[float] | None,
            segment_ms: int) -> VRouter:
    if name == "hash":
        return StaticRouter(wl, RouterConfig("hash", groups, wl.windows, key_attribute="a1"))
    if name == "atr":
        return StaticRouter(wl, RouterConfig("atr", groups, wl.windows, segment_ms=segment_ms))
    keys = "least-loaded"
    return AdaptiveVRouter(wl, adaptive_config(wl, groups, keys, name == "atr-adaptive",
                                               segment_ms, speeds))


def trace_of(name: str, wl: Workload, groups: int, speeds: Sequence[float] | None = None,
             segment_ms: int | None = None) -> Trace:
    """One run of router ``name``."""
    if name == "ctr":
        return run_ctr(wl, groups, TRIGGER_MS, segment_ms or CTR_T,
                       selectivity=2 * wl.eps if wl.predicate == "band" else 0.01,
                       speeds=speeds)
    return run_keys(wl, make_router(name, wl, groups, speeds, segment_ms or ATR_T), groups,
                    TRIGGER_MS)


class Runner:
    """Runs routers on workloads, with one oracle and one centralized run per workload."""

    def __init__(self, repeats: int = 1) -> None:
        self.truth: dict[str, Any] = {}
        self.central: dict[str, float] = {}
        self.centralized: dict[str, Trace] = {}
        self.seconds = 0.0
        self.repeats = repeats

    def trace(self, name: str, wl: Workload, groups: int, speeds: Sequence[float] | None,
              segment_ms: int | None) -> Trace:
        """The run, ``repeats`` times: per (host, batch) the least CPU time (another
        process can only add time); the results must not change."""
        best = trace_of(name, wl, groups, speeds, segment_ms)
        for _ in range(self.repeats - 1):
            again = trace_of(name, wl, groups, speeds, segment_ms)
            assert np.array_equal(again.results, best.results), "a run is not deterministic"
            best.cpu = np.minimum(best.cpu, again.cpu)
            best.route_cpu = min(best.route_cpu, again.route_cpu)
        return best

    def interleaved(self, part: str, wl: Workload, names: Sequence[str], groups: int,
                    rounds: int) -> list[dict[str, Any]]:
        """The rows of routers ``names`` on one workload, run in ``rounds`` interleaved
        rounds (a, b, a, b, …: a slow spell of the shared machine hits both alike). Each
        row's CPU is per (host, batch) the least over its rounds, and it carries every
        round's own ``async_rate`` (``async_rate_rounds``) for the paired comparison."""
        self._reference(wl)
        best: dict[str, Trace] = {}
        per_round: dict[str, list[float]] = {n: [] for n in names}
        for _ in range(rounds):
            for n in names:
                t = trace_of(n, wl, groups, None, None)
                per_round[n].append(measure(t, self.truth[wl.name])["async_rate"])
                if n in best:
                    assert np.array_equal(t.results, best[n].results), "not deterministic"
                    best[n].cpu = np.minimum(best[n].cpu, t.cpu)
                    best[n].route_cpu = min(best[n].route_cpu, t.route_cpu)
                else:
                    best[n] = t
        return [self.row(part, wl, n, groups, trace=best[n],
                         async_rate_rounds=per_round[n]) for n in names]

    def _reference(self, wl: Workload) -> None:
        if wl.name not in self.truth:
            self.truth[wl.name] = oracle_rows(wl)
            self.centralized[wl.name] = self.trace("atr", wl, 1, None, None)
            self.central[wl.name] = measure(self.centralized[wl.name],
                                            self.truth[wl.name])["async_rate"]

    def row(self, part: str, wl: Workload, name: str, groups: int, *,
            speeds: Sequence[float] | None = None, segment_ms: int | None = None,
            trace: Trace | None = None, **extra: Any) -> dict[str, Any]:
        self._reference(wl)
        t0 = time.process_time()
        # one key: every ATR variant sends every tuple to it and joins the same way, so
        # the centralized run is theirs (a second run would only measure timer noise)
        same = groups == 1 and name != "ctr" and speeds is None
        if trace is None:
            trace = (self.centralized[wl.name] if same
                     else self.trace(name, wl, groups, speeds, segment_ms))
        got = measure(trace, self.truth[wl.name], speeds)
        cpu = time.process_time() - t0
        self.seconds += cpu
        row = {"part": part, "router": name, "groups": groups, **extra,
               "async_rate": got["async_rate"], "batch_rate": got["batch_rate"],
               "scaling": round(float(got["async_rate"] / self.central[wl.name]), 3),
               "imbalance": got["imbalance"], "replication": got["replication"],
               "equals_oracle": got["equals_oracle"], "duplicates": got["duplicates"],
               **{k: v for k, v in got.items() if k not in ("async_rate", "batch_rate",
                  "imbalance", "replication", "equals_oracle", "duplicates")},
               "run_cpu_s": round(cpu, 2)}
        log.info("diffusion run", part=part, router=name, groups=groups,
                 scaling=row["scaling"], exact=row["equals_oracle"], **extra)
        return row


def base(name: str, m: int, duration_ms: int, *, windows: int = W_MS, eps: float | None = None,
         theta: float = 0.0, rate: float = RATE, seed: int = 7) -> Workload:
    """An m-way band workload (by default at the base rate and window)."""
    per_window = RATE * W_MS / 1000.0
    return make_workload(name, windows=(windows,) * m, rates=(rate,) * m,
                         duration_ms=duration_ms, eps=band_eps(m, per_window) if eps is None
                         else eps, theta=theta, burst_ms=2_000, seed=seed)


def heterogeneous_speeds(groups: int, seed: int = 5) -> list[float]:
    """Host capacities uniform in [1, 5] (the paper's 1000–5000 MIPS, §6.2)."""
    return np.round(np.random.default_rng(seed).uniform(1.0, 5.0, groups), 2).tolist()
