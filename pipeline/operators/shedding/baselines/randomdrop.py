"""RandomDrop: stream throttling by random tuple dropping (GrubJoin §VI baseline).

Drop operators in front of the input queues keep a tuple of S_i with probability x_i.
As in Ayad & Naughton's static framework, the keep probabilities are sized from the
input rates so that the *expected* cost of the full join on the thinned streams fits
the budget, C(x) ≤ z·C(1), with the same cost model as harvesting (GrubJoin §IV-C, all
z_{i,j} = 1): thinning S_l by x_l scales λ_l and S_l = λ_l·w_l by x_l, so

    C(x) = Σ_i x_i λ_i (c_t + Σ_j x_{r_{i,j}} S_{i,j} N_{i,j}(x)),
    N_{i,j}(x) = Π_{k<j} σ_{i,r_{i,k}} x_{r_{i,k}} S_{i,k},

and the output is O(1)·Π_i x_i. Maximizing Σ log x_i s.t. C(x) = z·C(1) has the
Lagrange condition x_i·∂C/∂x_i equal for all i; :func:`keep_probabilities` iterates
x_i ← x_i·(mean_g / g_i)^a on g_i = x_i·∂C/∂x_i, each time rescaling all x by a
common factor (bisection on the monotone C) so the budget holds exactly; the step
exponent a starts at 1/2 and is halved whenever a step does not increase Π x_i.

Two random streams from ``seed``: the keep draws (one ``rng.random()`` per arriving
tuple) and the feedback probes' draws (share ω, join order). Kept apart, the engine's
batch path (ours; wall budget only) draws a run's keep decisions at once —
``rng.random(n)`` gives the same numbers as n single draws — and the plans tuple by tuple
afterwards, with the same decisions as tuple by tuple.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError
from pipeline.operators.budget.factory import make_budget, restore_shedder
from pipeline.operators.contract import DropsFromRuns, PluginEnv, WallAccount
from pipeline.operators.events import Event
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan
from pipeline.operators.shedding.costmodel import FloatArray, HarvestModel, build_model
from pipeline.operators.shedding.online_stats import OnlineStats
from pipeline.operators.shedding.throttle import Throttle, ThrottleConfig

if TYPE_CHECKING:
    from pipeline.operators.config import EngineConfig

#: aging factor per adaptation step for the selectivity sums
DECAY = 0.5


def thinned_cost(model: HarvestModel, keep: FloatArray) -> float:
    """C(x) for per-stream keep probabilities ``keep`` (full scans, GrubJoin §IV-C)."""
    x = np.asarray(keep, dtype=np.float64)
    arr = model.arrays()
    order = np.asarray(model.orders, dtype=np.int64)
    xs = x[order]
    factor = arr.sel * arr.seg * xs
    n_part = np.cumprod(factor, axis=-1)
    n_before = np.concatenate([np.ones_like(n_part[:, :1]), n_part[:, :-1]], axis=-1)
    per_tuple = arr.tuple_cost + arr.probe_cost + (xs * arr.seg * n_before).sum(axis=-1)
    return float((x * arr.lam * per_tuple).sum())


def _scale_to_budget(model: HarvestModel, shape: FloatArray, budget: float,
                     tol: float) -> FloatArray:
    """The largest c·shape (capped at 1 per stream) whose cost fits ``budget``."""
    lo, hi = 0.0, 1.0 / float(shape.max())
    while hi - lo > tol:
        mid = (lo + hi) / 2.0
        if thinned_cost(model, np.minimum(1.0, mid * shape)) <= budget:
            lo = mid
        else:
            hi = mid
    return np.minimum(1.0, lo * shape)


def keep_probabilities(model: HarvestModel, z: float, iterations: int = 60,
                       tol: float = 1e-6) -> FloatArray:
    """Per-stream keep probabilities x_i maximizing Π x_i with C(x) ≤ z·C(1)."""
    if not 0.0 < z <= 1.0:
        raise ConfigError(f"z: throttle fraction must be in (0, 1], got {z}")
    m = model.m
    if z >= 1.0:
        return np.ones(m)
    budget = z * thinned_cost(model, np.ones(m))
    x = _scale_to_budget(model, np.ones(m), budget, tol)
    step = 0.5  # exponent of the multiplicative update, halved when a step fails
    for _ in range(iterations):
        base = thinned_cost(model, x)
        grad = np.empty(m)
        for i in range(m):
            moved = np.array(x)
            moved[i] *= 1.0 + 1e-4
            grad[i] = (thinned_cost(model, moved) - base) / 1e-4  # = x_i ∂C/∂x_i
        if np.any(grad <= 0):
            break
        cand = _scale_to_budget(model, x * (grad.mean() / grad) ** step, budget, tol)
        if np.prod(cand) > np.prod(x) * (1.0 + 1e-9):
            x = cand
        else:
            step /= 2.0
            if step < 1e-3:
                break
    return x


def _whole_window(i: int, l: int) -> FloatArray:
    return np.ones(1)


class RandomDropShedder(DropsFromRuns):
    """``[shedding] mode = "randomdrop"``: random drops sized by the model, full scans.

    The same throttle loop as GrubJoin sets z every Δ; the keep probabilities make the
    expected full-join cost z·C(1). A fraction ω of probes returns feedback (full scan)
    to estimate the selectivities the cost model needs.
    """

    def __init__(self, config: EngineConfig, env: PluginEnv) -> None:
        sh = config.shedding
        self.config = config
        self.budget = make_budget(sh.budget, sh.capacity, sh.queue, sh.utilization,
                                  env.clock, env.speedup)
        self.throttle = Throttle(ThrottleConfig(boost=sh.boost))
        self.stats = OnlineStats(config.m, DECAY)
        self.rng = np.random.default_rng(sh.seed)
        #: the feedback probes' draws (share ω, join order): a stream of their own
        self.plan_rng = np.random.default_rng([sh.seed, 1])
        self.keep = np.ones(config.m)
        self.random_drops = 0

    @classmethod
    def create(cls, config: EngineConfig, env: PluginEnv) -> RandomDropShedder:
        """The engine's factory; a wall budget times with ``env.clock``."""
        return cls(config, env)

    def admit(self, event: Event, now: int) -> bool:
        self.stats.observe_arrival(event.stream)
        if self.rng.random() >= self.keep[event.stream]:
            self.random_drops += 1
            return False
        return self.budget.admit(now)

    def plan(self, direction: int) -> ProbePlan | None:
        """Full scans; a fraction ω reports feedback, in a random order (σ of all pairs)."""
        if self.plan_rng.random() >= self.config.shedding.shred_rate:
            return None
        others = [j for j in range(self.config.m) if j != direction]
        order = tuple(int(v) for v in self.plan_rng.permutation(others))
        return ProbePlan(order=order, feedback=True)

    def charge(self, cost: float, now: int) -> None:
        self.budget.charge(cost, now)

    def admit_some(self, streams: NDArray[np.int64],
                   nows: NDArray[np.int64]) -> NDArray[np.bool_] | None:
        """The engine's batch path (wall budget): the run's keep draws at once; None on
        the virtual CPU (its queue depends on each previous tuple's cost)."""
        wall = self.budget.wall()
        if wall is None or self.budget.queue() is not None:
            return None
        self.stats.arrivals += np.bincount(streams, minlength=self.config.m)
        kept = self.rng.random(streams.shape[0]) < self.keep[streams]
        n_kept = int(np.count_nonzero(kept))
        self.random_drops += int(kept.shape[0]) - n_kept
        if n_kept:
            wall.admit_run(n_kept)
        return kept

    def charge_some(self, costs: NDArray[np.float64], nows: NDArray[np.int64]) -> None:
        """The tuples admitted by :meth:`admit_some` cost ``costs``."""
        wall = self.budget.wall()
        assert wall is not None, "charge_some follows an admit_some that returned a mask"
        wall.charge_run(costs.tolist())

    def observe_probe(self, feedback: ProbeFeedback) -> None:
        self.stats.observe_probe(feedback)

    def maybe_adapt(self, now: int) -> dict[str, Any] | None:
        """Every Δ: z from β (GrubJoin §IV-A), then keep probabilities for z."""
        sh = self.config.shedding
        reading = self.budget.measure(now, sh.adapt_interval_ms)
        z = self.throttle.update(reading.beta, reading.headroom)
        rates = self.stats.rates(sh.adapt_interval_ms)
        if rates.sum() > 0:
            # full scans only: one "basic window" per window is all the model needs
            model, _ = build_model(rates, self.config.windows, self.stats.selectivity(),
                                   _whole_window, sh.tuple_cost, probe_cost=sh.probe_cost)
            self.keep = keep_probabilities(model, z)
        self.stats.age()
        drops, self.random_drops = self.random_drops, 0
        return {
            "time": now,
            "mode": "randomdrop",
            "z": round(z, 6),
            "beta": round(min(reading.beta, 1e6), 6),
            "keep": [round(float(x), 6) for x in self.keep],
            "random_drops": drops,
            "queue_drops": reading.dropped,
            "pushed": reading.pushed,
            "consumed": reading.consumed,
            "rates_in": [round(float(r), 3) for r in rates],
            "cost": round(reading.cost, 3),
        }

    def wall_budget(self) -> WallAccount | None:
        """The budget when it runs on the wall clock (the runtime reports batches to it)."""
        return self.budget.wall()

    def snapshot(self) -> dict[str, Any]:
        return {
            "mode": "randomdrop",
            "budget": self.budget.snapshot(),
            "throttle": self.throttle.snapshot(),
            "stats": self.stats.snapshot(),
            "rng": self.rng.bit_generator.state,
            "plan_rng": self.plan_rng.bit_generator.state,
            "keep": self.keep.tolist(),
            "random_drops": self.random_drops,
        }

    @classmethod
    def from_snapshot(cls, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> RandomDropShedder:
        def load(obj: RandomDropShedder) -> None:
            obj.throttle = Throttle.from_snapshot(obj.throttle.config, snap["throttle"])
            obj.stats = OnlineStats.from_snapshot(config.m, DECAY, snap["stats"])
            obj.rng.bit_generator.state = snap["rng"]
            if "plan_rng" in snap:  # a snapshot without it starts a fresh plan stream
                obj.plan_rng.bit_generator.state = snap["plan_rng"]
            obj.keep = np.asarray(snap["keep"], dtype=np.float64)
            obj.random_drops = int(snap["random_drops"])

        return restore_shedder("randomdrop", snap, lambda: cls(config, env), load)
