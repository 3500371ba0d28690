"""The paper's RandomDrop: drop probabilities fixed once from the input rates and the
capacity (GrubJoin §VI; Ayad & Naughton's static optimization), ``[shedding] mode =
"randomdrop-static"``.

Drop operators in front of the input queue keep a tuple of S_i with probability x_i.
Behind them sits the same bounded input queue as ``taildrop``
(:mod:`pipeline.operators.shedding.baselines.taildrop`), so a configuration that overshoots still
only
loses tuples to the queue. Nothing adapts after the warm-up.

**The cost of the thinned join** (derivation). MJoin processes a tuple of S_i against
W_{r_{i,1}}, then every partial result against W_{r_{i,2}}, … (GrubJoin §IV-C, all
z_{i,j} = 1). A comparison made at position j of direction i involves j + 1 tuples: the
probing tuple of S_i, the members of S_{r_{i,1}} … S_{r_{i,j−1}} matched so far and the
scanned tuple of S_{r_{i,j}}. With independent drops it happens on the thinned streams
iff all j + 1 were kept, and windows are time-based, so what a window holds changes only
by which tuples were kept. Hence, exactly in expectation,

    E[comparisons/s at (i, j)] = x_i · Π_{k≤j} x_{r_{i,k}} · A_{i,j},
    A_{i,j} = λ_i · S_{i,j} · N_{i,j}          (the full join's comparisons/s there)

with S_{i,j} = λ_{r_{i,j}}·w_{r_{i,j}} and N_{i,j} = Π_{k<j} σ_{i,r_{i,k}} S_{i,k}. Each
kept tuple also costs c_t (+ c_p if it probes). With one keep probability p for all
streams this is a polynomial increasing in p,

    C(p) = p · Σ_i λ_i (c_t + c_p)  +  Σ_{j=1}^{m−1} p^{j+1} · Σ_i A_{i,j},

whose last position scales as p^m (:func:`cost_coefficients`); a result survives iff all
its m members were kept, so the output is p^m · O(1). The keep probability that just
fits a budget B is the root p* of C(p) = B in (0, 1] (p* = 1 when C(1) ≤ B;
:func:`uniform_keep`, bisection), and p* is what is installed on every stream.

Ayad & Naughton also allow one keep probability per stream, and under the model the
per-stream optimum (:func:`~pipeline.operators.shedding.baselines.randomdrop.keep_probabilities`,
maximizing
Π x_i s.t. C(x) ≤ B from p*·1) is never worse. Measured, it is: it leans on the
per-direction selectivities of a short warm-up under overload and thins some stream
hard (keep 0.05 / 0.33 / 0.62 on the nonaligned sensors at 500 tuples/s), and the
benchmark's output fell to 6,072 results/s against 7,887 with p* (aligned: 6,906 vs
7,353). The uniform p* is the stronger baseline, so it is the one we compare with.

**Where the inputs come from.** The spec carries no input rates, so everything but the
capacity is *measured during a warm-up* of ``warmup_ms`` (default Δ) of stream time, in
which nothing is dropped at random (only the bounded queue drops):

* λ_i — arrivals per stream over the warm-up;
* σ — from full-scan feedback of every probe admitted during the warm-up, each in a
  random join order (the adaptive ``randomdrop`` samples a share ω; a static baseline
  gets one chance, and under overload only a few dozen tuples get through the queue);
* the budget B and the cost of a comparison — virtual CPU: B = ``utilization`` ×
  ``capacity`` *from the config* (cost units per second of stream time); the cost units
  per comparison μ are measured on the feedback probes (charged − c_t − c_p) /
  comparisons: 1 in the engine, the predicate-cost multiplier in the benchmark's
  Table II; wall clock: B = ``utilization`` / speed-up seconds per second of stream time;
  the seconds per comparison b and per tuple a are a least-squares fit of each admitted
  tuple's measured seconds on its comparisons, and the batch time spent outside
  admit→charge (Spark: K-slack, synchronizer, results) is added to a, per admitted
  tuple. Costs are then expressed in comparisons: c_t' = a/b per tuple, B' = B/b.
  The fit is over timed units — a tuple, or a whole run on the engine's batch path
  (one clock reading per run): seconds_r = a·n_r + b·X_r for n_r tuples with X_r
  comparisons, least squares without intercept; with n_r = 1 these are the normal
  equations of the per-tuple line fit.

**The batch path** (ours; :mod:`~pipeline.operators.engine.batch`), wall clock only: the
keep draws of a run are ``rng.random(n)`` — the same numbers, in the same order, as one
``rng.random()`` per tuple (the warm-up draws only join orders, in :meth:`plan`, and no
keep draws; afterwards only keep draws) — and the kept tuples go through the queue as in
:func:`~pipeline.operators.budget.queue.queue_admit_run`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.budget.factory import restore_shedder
from pipeline.operators.budget.queue import (
    queue_admit_run,
    queue_budget,
    queue_charge_run,
    queue_row,
)
from pipeline.operators.contract import DropsFromRuns, PluginEnv, WallAccount
from pipeline.operators.events import Event
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan
from pipeline.operators.shedding.baselines.randomdrop import thinned_cost
from pipeline.operators.shedding.costmodel import FloatArray, HarvestModel, build_model
from pipeline.operators.shedding.online_stats import OnlineStats

if TYPE_CHECKING:
    from pipeline.operators.config import EngineConfig

MODE = "randomdrop-static"


def cost_coefficients(model: HarvestModel) -> FloatArray:
    """c with C(p) = Σ_k c[k]·p^(k+1): c[0] = Σ_i λ_i (c_t + c_p), c[j] = Σ_i A_{i,j} for
    the full scans of ``model`` (one basic window per window; module docstring)."""
    arr = model.arrays()
    n_part = np.cumprod(arr.sel * arr.seg, axis=-1)
    n_before = np.concatenate([np.ones_like(n_part[:, :1]), n_part[:, :-1]], axis=-1)
    per_position = (arr.lam[:, None] * arr.seg * n_before).sum(axis=0)  # Σ_i A_{i,j}
    fixed = float(arr.lam.sum()) * (arr.tuple_cost + arr.probe_cost)
    return np.concatenate(([fixed], per_position))


def polynomial_cost(coefficients: FloatArray, p: float) -> float:
    """C(p) = Σ_k c[k]·p^(k+1)."""
    powers = p ** np.arange(1, len(coefficients) + 1, dtype=np.float64)
    return float(np.dot(coefficients, powers))


def uniform_keep(model: HarvestModel, budget: float, tol: float = 1e-9) -> float:
    """p* ∈ (0, 1] with C(p*) = ``budget`` (1 when the full join fits)."""
    coef = cost_coefficients(model)
    if polynomial_cost(coef, 1.0) <= budget:
        return 1.0
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2.0
        if polynomial_cost(coef, mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


def _fit_sums(saved: Any) -> FloatArray:
    """The wall fit's sums from a snapshot; five sums (n, Σx, Σy, Σx², Σxy: a per-tuple
    fit) read as the eight with n_r = 1."""
    fit = np.asarray(saved, dtype=np.float64)
    if fit.shape == (5,):
        n, sx, sy, sxx, sxy = fit
        return np.array([n, sx, sy, n, sx, sxx, sy, sxy])
    if fit.shape != (8,):
        raise ValueError(f"fit: expected 8 sums, got shape {fit.shape}")
    return fit


def _whole_window(i: int, l: int) -> FloatArray:
    return np.ones(1)


class StaticRandomDropShedder(DropsFromRuns):
    """``[shedding] mode = "randomdrop-static"``: keep probabilities fixed after a warm-up
    (module docstring); full scans; the bounded input queue of ``taildrop`` behind."""

    def __init__(self, config: EngineConfig, env: PluginEnv) -> None:
        sh = config.shedding
        self.config = config
        self.env = env
        self.budget = queue_budget(sh, env)
        self.stats = OnlineStats(config.m, decay=1.0)
        self.rng = np.random.default_rng(sh.seed)
        self.keep: FloatArray | None = None  # None: warming up
        self.start: int | None = None
        self.arrivals = np.zeros(config.m, dtype=np.int64)
        #: warm-up sums: feedback (units, comparisons) for μ; per timed unit r (a tuple or
        #: a run) of n_r tuples, X_r comparisons, y_r seconds: Σn, ΣX, Σy, Σn², ΣnX, ΣX²,
        #: Σny, ΣXy for the wall fit; batch time spent
        self.units = np.zeros(2, dtype=np.float64)
        self.fit = np.zeros(8, dtype=np.float64)
        self.spent = 0.0
        self.pending: int | None = None  # comparisons of the feedback probe charged next
        #: the batch path: comparisons of the run's feedback probes, in order
        self.pending_run: list[int] = []
        #: the batch path's predicted modelled ms per admitted tuple (budget.queue)
        self.service_ms = 0.0
        self.last_before = 0.0  # the queue's last arrival before the run being joined
        self.random_drops = 0
        self.fixed: dict[str, Any] | None = None

    @classmethod
    def create(cls, config: EngineConfig, env: PluginEnv) -> StaticRandomDropShedder:
        """The engine's factory; a wall budget times with ``env.clock``."""
        return cls(config, env)

    # ------------------------------------------------------------------ per tuple
    def admit(self, event: Event, now: int) -> bool:
        if self.keep is None:
            if self.start is None:
                self.start = now
            self.arrivals[event.stream] += 1
            self.stats.observe_arrival(event.stream)
        elif self.rng.random() >= self.keep[event.stream]:
            self.random_drops += 1
            return False
        return bool(self.budget.admit(now))

    def plan(self, direction: int) -> ProbePlan | None:
        """Full scans; during the warm-up every probe reports feedback (random order)."""
        if self.keep is not None:
            return None
        others = [j for j in range(self.config.m) if j != direction]
        order = tuple(int(v) for v in self.rng.permutation(others))
        return ProbePlan(order=order, feedback=True)

    def charge(self, cost: float, now: int) -> None:
        self.budget.charge(cost, now)
        if self.pending_run:
            self.pending_run = []  # (the batch path's list; per tuple, ``pending`` is used)
        if self.keep is not None:
            return
        sh = self.config.shedding
        pending, self.pending = self.pending, None
        if pending is not None and pending > 0:
            self.units += (max(0.0, cost - sh.tuple_cost - sh.probe_cost), float(pending))
        queue = self.budget.queue()
        if queue is not None:
            x = float(pending) if pending is not None else (
                max(0.0, cost - sh.tuple_cost - sh.probe_cost) if cost > sh.tuple_cost else 0.0)
            y = queue.last_took
            self.fit += (1.0, x, y, 1.0, x, x * x, y, x * y)

    def observe_probe(self, feedback: ProbeFeedback) -> None:
        self.stats.observe_probe(feedback)
        self.pending = int(feedback.cost)
        self.pending_run.append(self.pending)

    # ------------------------------------------------------------------ per run
    def admit_some(self, streams: NDArray[np.int64],
                   nows: NDArray[np.int64]) -> NDArray[np.bool_] | None:
        """The engine's batch path (module docstring): the admitted tuples of a run; None
        on the virtual CPU (its queue depends on each previous tuple's cost)."""
        queue = self.budget.queue()
        if queue is None:
            return None
        self.pending_run = []
        offered: NDArray[np.bool_] | None = None
        if self.keep is None:
            if self.start is None:
                self.start = int(nows[0])
            counts = np.bincount(streams, minlength=self.config.m)
            self.arrivals += counts
            self.stats.arrivals += counts
        else:
            offered = self.rng.random(streams.shape[0]) < self.keep[streams]
            self.random_drops += int(offered.shape[0] - np.count_nonzero(offered))
        self.last_before = queue.last_now
        return queue_admit_run(queue, nows, self.service_ms, offered)

    def charge_some(self, costs: NDArray[np.float64], nows: NDArray[np.int64]) -> None:
        """The tuples admitted by :meth:`admit_some` cost ``costs``; during the warm-up
        the run is one observation of the wall fit and its feedback probes' comparisons
        feed μ as :meth:`charge` does per tuple."""
        queue = self.budget.queue()
        assert queue is not None, "charge_some follows an admit_some that returned a mask"
        self.service_ms = queue_charge_run(queue, costs, nows, self.last_before)
        pending, self.pending_run = self.pending_run, []
        self.pending = None
        if self.keep is not None or costs.shape[0] == 0:
            return
        sh = self.config.shedding
        fixed = sh.tuple_cost + sh.probe_cost
        xs = [max(0.0, c - fixed) if c > sh.tuple_cost else 0.0 for c in costs.tolist()]
        probes = iter([p for p in pending if p > 0])
        for c, x in zip(costs.tolist(), xs, strict=True):
            if c > sh.tuple_cost:  # a probe that compared: its feedback is next in order
                self.units += (x, float(next(probes, 0)))
        n, big_x = float(costs.shape[0]), float(sum(xs))
        y = queue.last_took * n
        self.fit += (n, big_x, y, n * n, n * big_x, big_x * big_x, n * y, big_x * y)

    # ------------------------------------------------------------------ every Δ
    def maybe_adapt(self, now: int) -> dict[str, Any] | None:
        """Every Δ: metrics; at the end of the warm-up, fix the keep probabilities."""
        sh = self.config.shedding
        queue = self.budget.queue()
        if self.keep is None and queue is not None:
            self.spent += queue.spent
        reading = self.budget.measure(now, sh.adapt_interval_ms)
        if (self.keep is None and self.start is not None and self.arrivals.sum() > 0
                and now - self.start >= sh.warmup_span_ms):
            self._fix(now)
        drops, self.random_drops = self.random_drops, 0
        return {
            "time": now,
            "mode": MODE,
            "warmup": self.keep is None,
            "keep": None if self.keep is None else [round(float(x), 6) for x in self.keep],
            "random_drops": drops,
            **queue_row(reading, self.budget),
            **({"fixed": self.fixed} if self.fixed is not None and self.fixed["time"] == now
               else {}),
        }

    def wall_budget(self) -> WallAccount | None:
        """The queue when it runs on the wall clock (the runtime reports batches to it)."""
        return self.budget.wall()

    def _unit_costs(self) -> tuple[float, float]:
        """(c_t' comparisons per tuple, B' comparisons per second of stream time)."""
        sh = self.config.shedding
        if self.budget.wall() is None:  # the virtual CPU: μ from the feedback probes
            mu = self.units[0] / self.units[1] if self.units[1] > 0 else 1.0
            mu = mu if mu > 0 else 1.0
            capacity = float(sh.capacity or 0.0)
            return (sh.tuple_cost + sh.probe_cost) / mu, sh.utilization * capacity / mu
        n, sx, sy, snn, snx, sxx, sny, sxy = (float(v) for v in self.fit)
        det = snn * sxx - snx * snx
        b = ((snn * sxy - snx * sny) / det
             if n >= 2 and det > 1e-12 * max(1.0, sxx * snn) else 0.0)
        a = (sny - b * snx) / snn if snn > 0 else 0.0
        if b <= 0.0 or a < 0.0:  # no usable fit: seconds proportional to comparisons + c_t
            units = sx + n * (sh.tuple_cost + sh.probe_cost)
            b = sy / units if units > 0 else 1e-9
            a = b * (sh.tuple_cost + sh.probe_cost)
        b = max(b, 1e-15)
        # the batch time outside admit→charge (K-slack, synchronizer, results; Spark)
        # grows with the tuples handled, not with their comparisons: a per-tuple share
        a += max(0.0, self.spent - sy) / n if n > 0 else 0.0
        seconds = sh.utilization / self.env.speedup
        return a / b, seconds / b

    def _fix(self, now: int) -> None:
        assert self.start is not None
        cfg = self.config
        rates = self.arrivals.astype(np.float64) * 1000.0 / max(1, now - self.start)
        tuple_eq, budget = self._unit_costs()
        model, _ = build_model(rates, cfg.windows, self.stats.selectivity(), _whole_window,
                               tuple_eq)
        full = thinned_cost(model, np.ones(cfg.m))
        z = budget / full if full > 0 else 1.0
        p_uniform = uniform_keep(model, budget)
        self.keep = np.full(cfg.m, p_uniform)
        self.fixed = {
            "time": now,
            "rates": [round(float(r), 3) for r in rates],
            "tuple_cost_comparisons": round(float(tuple_eq), 6),
            "budget_comparisons_per_s": round(float(budget), 3),
            "full_cost_comparisons_per_s": round(float(full), 3),
            "keep": round(float(p_uniform), 6),
            "z": round(float(min(1.0, z)), 6),
        }

    # ------------------------------------------------------------------ state
    def snapshot(self) -> dict[str, Any]:
        return {
            "mode": MODE,
            "budget": self.budget.snapshot(),
            "stats": self.stats.snapshot(),
            "rng": self.rng.bit_generator.state,
            "keep": None if self.keep is None else self.keep.tolist(),
            "start": self.start,
            "arrivals": self.arrivals.tolist(),
            "units": self.units.tolist(),
            "fit": self.fit.tolist(),
            "spent": self.spent,
            "pending": self.pending,
            "random_drops": self.random_drops,
            "service_ms": self.service_ms,
            "fixed": None if self.fixed is None else dict(self.fixed),
        }

    @classmethod
    def from_snapshot(cls, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> StaticRandomDropShedder:
        def load(obj: StaticRandomDropShedder) -> None:
            obj.stats = OnlineStats.from_snapshot(config.m, 1.0, snap["stats"])
            obj.rng.bit_generator.state = snap["rng"]
            keep = snap["keep"]
            obj.keep = None if keep is None else np.asarray(keep, dtype=np.float64)
            start = snap["start"]
            obj.start = None if start is None else int(start)
            obj.arrivals = np.asarray(snap["arrivals"], dtype=np.int64)
            obj.units = np.asarray(snap["units"], dtype=np.float64)
            obj.fit = _fit_sums(snap["fit"])
            obj.spent = float(snap["spent"])
            pending = snap["pending"]
            obj.pending = None if pending is None else int(pending)
            obj.random_drops = int(snap["random_drops"])
            obj.service_ms = float(snap.get("service_ms", 0.0))
            fixed = snap["fixed"]
            obj.fixed = None if fixed is None else dict(fixed)

        return restore_shedder(MODE, snap, lambda: cls(config, env), load)
