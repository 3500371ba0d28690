"""``disorder.mode = "quality"``: quality-driven K-slack sizing (Ji et al., ICDE, Fig. 2).

:class:`QualityPolicy` is the engine's :class:`~pipeline.operators.contract.SlackPolicy`
for the quality mode. It wires the four components of Ji et al.'s framework:

* Statistics Manager (:mod:`~pipeline.operators.disorder.quality.delay_stats`): delay histograms
over
  ADWIN windows, K_i^sync, rates, MaxD^H — fed by :meth:`observe_arrival`;
* Tuple-Productivity Profiler (:mod:`~pipeline.operators.disorder.quality.profiler`): M^×, M^⋈ —
fed by
  :meth:`observe_join`;
* Result-Size Monitor (:mod:`~pipeline.operators.disorder.quality.buffer_manager`): produced
results and
  estimated true results over the last P − L;
* Buffer-Size Manager: at every interval boundary L, Γ' (Eq. 7, clipped to
  [floor, cap], see below) and Alg. 3 over γ(L, K) (Eqs. 2–6,
  :mod:`~pipeline.operators.disorder.quality.recall_model`), Same-K policy (Theorem 1): one K for
  every
  stream.

Deviations from the paper (docs/NOTES.md has the measurements behind them):

1. **Γ' is clipped to [Γ + margin·(1−Γ), Γ + headroom·(1−Γ)]** (defaults 0.25, 0.5;
   ``[disorder] target_margin`` / ``target_headroom``), not to [0, 1]. Eq. 7 alone is
   bang-bang: after a surplus Γ' falls far below Γ (K → 0),
   after a deficit Γ' = 1 and Alg. 3 returns K = MaxD^H, where it stays because a larger
   K brings no new evidence until the buffers have filled. The floor keeps a small
   margin against the model's residual optimism; the cap still lets Eq. 7 ask for more
   when the period falls behind. ``spend_surplus=True`` restores the paper's floor of 0.
2. **b = max W_i (one basic window, n_i = 1)** by default, not b = g. For
   time-correlated predicates most matches are with the newest, least complete basic
   windows, which Eq. 3 with b = g over-counts. n_i = 1 counts only in-order window
   tuples — the conservative end the paper itself allows ("a larger b gives a more
   conservative estimate").
3. **DPcorr evidence (M^×, M^⋈) is summed over the last ``evidence_intervals``
   non-empty intervals** (default 10), not one interval: at tens of tuples/s per stream
   one interval's Eq. 6 ratio is mostly noise.
4. N^⋈_true per interval by Eq. 1 (profiled selectivity × r_j·W_j) rather than
   Σ_d M^⋈[d] — see :meth:`QualityPolicy._true_results`; the Result-Size Monitor skips
   intervals in which nothing reached the join (⋈T did not move).

Use ``late_estimate="mean"`` with these defaults (the benchmark does): the paper's "max"
overestimates N_true, so Γ' sits at its cap.

Metrics row per adaptation: ``time``, ``k_ms``, ``recall_target`` (Γ),
``instant_recall_target`` (Γ'), ``estimated_recall`` (the model's γ(L, k*) for the
chosen K), ``estimated_period_recall`` (N_prod(P−L)/N_true(P−L) from the Result-Size
Monitor — the operator's own estimate, since it cannot see the true results),
``measured_recall`` (always None here: the true recall needs the oracle and is computed
by the benchmark/evaluator), and scalar diagnostics: ``max_delay_ms`` (MaxD^H),
``ksync_max_ms`` (largest K_i^sync), ``rate_in`` (Σ r_i, tuples/s), ``stat_window_min``
(smallest ADWIN window), ``results_interval``, ``n_true_interval``, ``n_true_next``, and
``adapt_ms`` (duration of the step by the injected ``timer``, when one is set).

The model's basic window b is ``basic_window_ms`` (default max W_i, see 2. above); it
is independent of GrubJoin's ``shedding.basic_window_ms``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.core.errors import OperatorStateError
from pipeline.operators.config import DEFAULT_LATE_ESTIMATE, LateEstimate
from pipeline.operators.contract import ObservesRuns, PluginEnv, SteadyK
from pipeline.operators.disorder.quality.adwin import AdwinConfig
from pipeline.operators.disorder.quality.buffer_manager import (
    ResultSizeMonitor,
    instant_recall_target,
    linear_search,
)
from pipeline.operators.disorder.quality.delay_stats import StatisticsManager
from pipeline.operators.disorder.quality.profiler import (
    ProductivityMaps,
    ProductivityProfiler,
)
from pipeline.operators.disorder.quality.recall_model import ModelConfig, gamma_curve

if TYPE_CHECKING:
    from pipeline.operators.config import EngineConfig

#: weight of the newest interval in the moving average of the arrival rates r_i
RATE_SMOOTHING = 0.2
#: Γ' floor = Γ + TARGET_MARGIN·(1 − Γ): every interval asks a little more than Γ
TARGET_MARGIN = 0.25
#: Γ' cap = Γ + TARGET_HEADROOM·(1 − Γ) (the paper caps at 1, which forces K = MaxD^H)
TARGET_HEADROOM = 0.5
#: Γ' is searched at most 1 − ROUNDING (floating-point rounding of the model's sums)
ROUNDING = 1e-12
#: the DPcorr maps (M^×, M^⋈) are summed over this many recent non-empty intervals
EVIDENCE_INTERVALS = 10
#: ``[disorder] model = "paper"``: Ji et al. as published — Γ' clipped to [0, 1] (Eq. 7),
#: the DPcorr maps of the last interval only with a late tuple's productivity the max of
#: the in-order ones (§III-D), b = g (:meth:`QualityConfig.model`)
PAPER_MODEL: dict[str, Any] = {"spend_surplus": True, "headroom": 1.0,
                               "evidence_intervals": 1, "paper_basic_window": True,
                               "late_estimate": "max"}


@dataclass(frozen=True, slots=True)
class QualityConfig:
    """Frozen parameters of the quality-driven policy (from ``[disorder]`` + ``[join]``)."""

    recall: float
    period_ms: int
    interval_ms: int
    granularity_ms: int
    windows_ms: tuple[int, ...]
    late_estimate: LateEstimate = DEFAULT_LATE_ESTIMATE
    eq_sel: bool = False
    margin: float = TARGET_MARGIN
    headroom: float = TARGET_HEADROOM
    evidence_intervals: int = EVIDENCE_INTERVALS
    basic_window_ms: int | None = None
    spend_surplus: bool = False
    #: b = g (Ji et al.'s default) when ``basic_window_ms`` is None, not max W_i
    paper_basic_window: bool = False
    adwin: AdwinConfig = field(default_factory=AdwinConfig)
    #: delays per second per stream the Statistics Manager sees (0: every arrival)
    stat_rate: float = 0.0

    @classmethod
    def from_engine(cls, config: EngineConfig) -> QualityConfig:
        """Γ, P, L, g from ``config.disorder``; windows from ``config.windows``."""
        d = config.disorder
        base: dict[str, Any] = {
            "recall": d.recall, "period_ms": d.period_ms, "interval_ms": d.interval_ms,
            "granularity_ms": d.granularity_ms, "windows_ms": tuple(config.windows),
            "late_estimate": d.late_estimate, "eq_sel": d.eq_sel, "stat_rate": d.stat_rate,
            "margin": d.target_margin, "headroom": d.target_headroom}
        return cls(**(base | (PAPER_MODEL if d.model == "paper" else {})))

    def target_bounds(self) -> tuple[float, float]:
        """[floor, cap] of Γ': Γ + (1 − Γ)·(margin, headroom), the floor at least 0 (Ji et
        al.'s, Eq. 7 clipped to [0, 1], is margin ≤ −Γ/(1 − Γ)); floor 0 if spend_surplus."""
        loss = 1.0 - self.recall
        floor = 0.0 if self.spend_surplus else max(self.recall + loss * self.margin, 0.0)
        return floor, max(self.recall + loss * self.headroom, floor)

    def model(self) -> ModelConfig:
        """The recall model's static inputs: g, and b = ``basic_window_ms`` or max W_i."""
        g = self.granularity_ms
        b = self.basic_window_ms
        if b is None and self.paper_basic_window:
            b = g
        if b is None:  # one basic window per join window (n_i = 1): the conservative end
            b = -(-max(self.windows_ms) // g) * g
        return ModelConfig(self.windows_ms, self.granularity_ms, b)


def merge_maps(maps: Iterable[ProductivityMaps]) -> ProductivityMaps:
    """Bin-wise sum of several intervals' M^× and M^⋈ (and their tuple counts)."""
    items = list(maps)
    if not items:
        return ProductivityMaps.empty()
    size = max(m.cross.shape[0] for m in items)
    cross = np.zeros(size, dtype=np.float64)
    join = np.zeros(size, dtype=np.float64)
    for m in items:
        cross[: m.cross.shape[0]] += m.cross
        join[: m.join.shape[0]] += m.join
    return ProductivityMaps(cross, join, sum(m.tuples for m in items))


class QualityPolicy(SteadyK, ObservesRuns):
    """Quality-driven Same-K sizing: the smallest K meeting Γ over every period P (K
    changes only in :meth:`maybe_adapt`)."""

    mode = "quality"
    #: Eq. 6 needs the exact cross-join count n^× of every probing tuple
    needs_cross = True

    def __init__(self, config: QualityConfig, timer: Callable[[], float] | None = None) -> None:
        self.config = config
        self._model = config.model()
        m = len(config.windows_ms)
        self.stats = StatisticsManager(m, config.granularity_ms, config.adwin,
                                       max_rate=config.stat_rate)
        self.profiler = ProductivityProfiler(config.granularity_ms, config.late_estimate)
        #: the maps summed over the last ``evidence_intervals`` intervals in which tuples
        #: reached the join (after K grows, the join may see nothing for a while; an
        #: empty interval is no evidence)
        self.evidence = ProductivityMaps.empty()
        self._recent: deque[ProductivityMaps] = deque(maxlen=max(config.evidence_intervals, 1))
        self.monitor = ResultSizeMonitor(config.period_ms, config.interval_ms)
        self.k_ms = 0
        self.first_ts: list[int | None] = [None] * m  # earliest ts seen per stream
        self.joined = [0] * m  # tuples of each stream that reached the join this interval
        self.rates: list[float] | None = None  # smoothed r_i, tuples/s
        self.n_true_next = 0.0  # Eq. 1 estimate of N_true(L) for the next interval
        self.last_boundary: int | None = None
        #: optional injected clock (seconds); when set, rows carry ``adapt_ms``
        self.timer = timer

    @classmethod
    def create(cls, config: EngineConfig, env: PluginEnv) -> QualityPolicy:
        """The policy for an engine config (``env.timer`` times each step)."""
        return cls(QualityConfig.from_engine(config), env.timer)

    # ------------------------------------------------------------ engine hooks
    def observe_arrival(self, stream: int, ts: int, delay: int) -> None:
        """Statistics Manager input: raw delay at S_i's K-slack."""
        first = self.first_ts[stream]
        if first is None or ts < first:
            self.first_ts[stream] = ts
        self.stats.observe(stream, ts, delay)

    def observe_join(
        self, stream: int, ts: int, delay: int, results: int, cross: int, late: bool
    ) -> None:
        """Profiler + Result-Size Monitor input (Ji et al. Alg. 2, last line)."""
        self.profiler.record(delay, not late, cross, results)
        self.joined[stream] += 1
        if not late:
            self.monitor.add_results(results)

    def observe_arrivals(self, streams: np.ndarray, ts: np.ndarray,
                         delays: np.ndarray) -> None:
        """:meth:`observe_arrival` for every arrival of a run (the engine's batch path)."""
        for s in np.unique(streams).tolist():
            low = int(ts[streams == s].min())
            first = self.first_ts[s]
            if first is None or low < first:
                self.first_ts[s] = low
        self.stats.observe_many(streams, ts, delays)

    def observe_joins(self, streams: np.ndarray, ts: np.ndarray, delays: np.ndarray,
                      results: np.ndarray, cross: np.ndarray, late: np.ndarray) -> None:
        """:meth:`observe_join` for every tuple of a run (the engine's batch path)."""
        self.profiler.record_many(delays, ~late, cross, results)
        for s, c in enumerate(np.bincount(streams, minlength=len(self.joined)).tolist()):
            self.joined[s] += c
        self.monitor.add_results(int(results[~late].sum()))

    def current_k(self) -> int:
        """The common K (ms) of every K-slack buffer."""
        return self.k_ms

    def maybe_adapt(self, now_ms: int) -> dict[str, Any] | None:
        """One Buffer-Size Manager step at the boundary ``now_ms`` (every L)."""
        start = self.timer() if self.timer is not None else 0.0
        cfg = self.config
        span = cfg.interval_ms
        if self.last_boundary is not None and now_ms > self.last_boundary:
            span = now_ms - self.last_boundary
        self.last_boundary = now_ms
        summary = self.stats.roll(span)
        maps = self.profiler.roll()
        self._smooth_rates(summary.rates_per_s)
        n_true_interval = self._true_results(maps, [float(n) for n in self.joined])
        self.joined = [0] * len(self.joined)
        if maps.tuples > 0:
            self._recent.append(maps)
            self.evidence = merge_maps(self._recent)
        expected = [r * cfg.interval_ms / 1000.0 for r in self.rates or [0.0] * len(self.joined)]
        self.n_true_next = self._true_results(self.evidence, expected)
        produced = self.monitor.produced
        prod_past, true_past = self.monitor.roll(n_true_interval, maps.tuples > 0)
        n_true_next = self.n_true_next
        floor, cap = cfg.target_bounds()
        target = instant_recall_target(cfg.recall, prod_past, true_past, n_true_next, floor, cap)
        g = cfg.granularity_ms
        k_max = summary.max_delay_ms // g
        curve = gamma_curve(
            summary.pdfs,
            summary.ksync_ms,
            None if cfg.eq_sel else self.evidence,
            self._model,
            k_max + 1,
        )
        # Γ' = 1 (the paper's cap) is searched as 1 − ROUNDING: γ reaches 1 only up to
        # the rounding of its sums, and 1 − 1e−16 would send K past MaxD^H
        self.k_ms = linear_search(curve, summary.max_delay_ms, g, min(target, 1.0 - ROUNDING))
        row: dict[str, Any] = {
            "time": now_ms,
            "k_ms": self.k_ms,
            "policy": self.mode,
            "recall_target": cfg.recall,
            "instant_recall_target": target,
            "estimated_recall": float(min(curve[self.k_ms // g], 1.0)),
            "estimated_period_recall": (prod_past / true_past) if true_past > 0 else None,
            "measured_recall": None,
            "max_delay_ms": summary.max_delay_ms,
            "ksync_max_ms": max(summary.ksync_ms),
            "rate_in": sum(summary.rates_per_s),
            "stat_window_min": min(summary.widths),
            "results_interval": produced,
            "n_true_interval": n_true_interval,
            "n_true_next": n_true_next,
        }
        if self.timer is not None:
            row["adapt_ms"] = (self.timer() - start) * 1000.0
        return row

    def _smooth_rates(self, rates_per_s: tuple[float, ...]) -> None:
        """r_i as an exponential moving average (weight RATE_SMOOTHING) of interval rates."""
        if self.rates is None:
            self.rates = list(rates_per_s)
            return
        a = RATE_SMOOTHING
        self.rates = [
            (1 - a) * old + a * new for old, new in zip(self.rates, rates_per_s, strict=True)
        ]

    def _true_results(self, maps: ProductivityMaps, counts: list[float]) -> float:
        """N^⋈_true by Eq. 1 for ``counts[i]`` tuples of each S_i reaching the join.

        Past interval: counts = the tuples that did reach the join; next interval:
        counts = r_i·L, i.e. Eq. 1 as written (a flood of tuples released after K grew
        must not inflate the next interval's expected size).

        sel^⋈ = Σ_d M^⋈[d] / Σ_d M^×[d] (the profiled selectivity up to MaxD^M) times the
        ideal cross-join volume Σ_i n_i · Π_{j≠i} r_j·W_j of the n_i tuples of S_i that
        reached the join. Unlike Σ_d M^⋈[d] alone (Ji et al. §IV-C), this also counts the
        results lost to *incomplete windows* (tuples still buffered or late when a
        partner probed), so γ(P) is not overestimated. Falls back to Σ_d M^⋈[d] when no
        cross-join volume was profiled.
        """
        tot_x = float(maps.cross.sum())
        if tot_x <= 0.0 or self.rates is None:
            return maps.n_true
        sel = maps.n_true / tot_x
        # while a stream starts, its window can only hold what has happened so far
        windows = [
            0.0 if first is None or local is None else float(min(w, max(local - first, 0)))
            for w, first, local in zip(
                self.config.windows_ms, self.first_ts, self.stats.local_time, strict=True
            )
        ]
        per_ms = [r / 1000.0 for r in self.rates]
        ideal = 0.0
        for i, n_i in enumerate(counts):
            cross = float(n_i)
            for j, w in enumerate(windows):
                if j != i:
                    cross *= per_ms[j] * w
            ideal += cross
        return sel * ideal

    # ---------------------------------------------------------------- snapshot
    def snapshot(self) -> dict[str, Any]:
        """Plain-Python state (picklable)."""
        return {
            "mode": self.mode,
            "k_ms": self.k_ms,
            "last_boundary": self.last_boundary,
            "joined": list(self.joined),
            "first_ts": list(self.first_ts),
            "rates": None if self.rates is None else list(self.rates),
            "n_true_next": self.n_true_next,
            "stats": self.stats.snapshot(),
            "profiler": self.profiler.snapshot(),
            "evidence": [[m.cross.tolist(), m.join.tolist(), m.tuples] for m in self._recent],
            "monitor": self.monitor.snapshot(),
        }

    @classmethod
    def from_snapshot(cls, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> QualityPolicy:
        """Restore a policy saved by :meth:`snapshot` under the same engine config."""
        return cls.restore(QualityConfig.from_engine(config), snap, env.timer)

    @classmethod
    def restore(cls, qc: QualityConfig, snap: dict[str, Any],
                timer: Callable[[], float] | None = None) -> QualityPolicy:
        """Restore from a :class:`QualityConfig` (what :meth:`from_snapshot` uses)."""
        if snap.get("mode") != cls.mode:
            raise OperatorStateError(
                f"slack policy snapshot of mode {snap.get('mode')!r}, expected {cls.mode!r}"
            )
        policy = cls(qc, timer)
        try:
            policy.k_ms = int(snap["k_ms"])
            policy.joined = [int(x) for x in snap["joined"]]
            policy.first_ts = [None if t is None else int(t) for t in snap["first_ts"]]
            rates = snap["rates"]
            policy.rates = None if rates is None else [float(x) for x in rates]
            policy.n_true_next = float(snap["n_true_next"])
            last = snap["last_boundary"]
            policy.last_boundary = None if last is None else int(last)
            m = len(qc.windows_ms)
            policy.stats = StatisticsManager.from_snapshot(
                m, qc.granularity_ms, qc.adwin, snap["stats"], qc.stat_rate
            )
            policy.profiler = ProductivityProfiler.from_snapshot(
                qc.granularity_ms, snap["profiler"], qc.late_estimate
            )
            for cross, join, tuples in snap["evidence"]:
                policy._recent.append(
                    ProductivityMaps(
                        np.asarray(cross, dtype=np.float64),
                        np.asarray(join, dtype=np.float64),
                        int(tuples),
                    )
                )
            policy.evidence = merge_maps(policy._recent)
            policy.monitor = ResultSizeMonitor.from_snapshot(
                qc.period_ms, qc.interval_ms, snap["monitor"]
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(
                f"quality policy snapshot: bad or missing field: {exc}"
            ) from exc
        return policy
