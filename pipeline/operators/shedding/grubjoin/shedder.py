"""The GrubJoin shedder: operator throttling + window harvesting (Gedik et al., TKDE).

Plugs into the engine through the :class:`~pipeline.operators.contract.Shedder` protocol
(``[shedding] mode = "grubjoin"``). Per tuple: the budget source admits it or drops it
(bounded input queue, virtual CPU), and ``plan`` gives the harvesting ProbePlan of its
direction — or, with probability ω (``shred_rate``), a window-shredding plan whose
per-basic-window feedback feeds the lag histograms and the selectivity estimates.
Every Δ (``adapt_interval_ms``, §IV-A): z from β and γ; rates, selectivities and scores
(Eqs. (1)–(4), or flat with ``learn = false``) give the model (§IV-C);
:func:`~pipeline.operators.shedding.grubjoin.greedy.configure` gives the harvest fractions z_{i,j}
— with
``solver = "auto"`` the exact optimum for m ≤ 3 (ours), else greedy double-sided with the
chosen metric (§IV-D); ``"greedy"`` always the paper's greedy, ``"exact"`` always the DP;
window
rankings s^v_{i,j} order the logical basic windows each direction scans.

Ours: each direction's positions are executed in the order of the matches their
harvested windows are expected to add
(:func:`~pipeline.operators.shedding.grubjoin.plans.yield_order`),
and when even one window per position does not fit the budget, the best direction
probes on a random share of its tuples (:func:`probe_share`) instead of overflowing the
input queue. The throttle's boosts are capped by the measured headroom from the level
the configuration in force uses (anti-windup, :mod:`~pipeline.operators.shedding.throttle`), and
the cheapest configuration that overflowed the input queue under near-target load is
remembered (:class:`~pipeline.operators.shedding.throttle.Ceiling`): later configurations cost at
most ``margin`` × its cost under each step's model, so under steady overload the
controller settles below it and the load-induced queue drops stop. On the virtual CPU the
queue's drops cut z only while its server is busy
(:func:`~pipeline.operators.shedding.throttle.load_beta`: drops at an idle server are
bursts). On the wall clock the per-tuple cost c_t the model
charges can be measured (``learn_tuple_cost``, :meth:`GrubJoinShedder._tuple_cost`),
and each lag histogram is shrunk toward uniform by how well it predicted the next Δ
(:class:`~pipeline.operators.shedding.grubjoin.correlation.LagHistograms`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.core.errors import ConfigError
from pipeline.operators.budget.factory import restore_shedder
from pipeline.operators.budget.queue import queue_admit_run, queue_budget, queue_charge_run
from pipeline.operators.budget.reading import BudgetReading
from pipeline.operators.contract import (
    DropsFromRuns,
    ObservesOutput,
    ObservesProbeRuns,
    PlansRuns,
    PluginEnv,
    ReadsProfile,
    WallAccount,
)
from pipeline.operators.events import Event
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan
from pipeline.operators.join.run import INDEX_WINDOW_COST
from pipeline.operators.shedding.costmodel import HarvestModel, build_model
from pipeline.operators.shedding.grubjoin.admission import (
    Joint,
    choose,
    joint_cost,
    joint_output,
    scaled,
)
from pipeline.operators.shedding.grubjoin.calibration import DECAY as CALIBRATION_DECAY
from pipeline.operators.shedding.grubjoin.calibration import (
    FULL,
    CalibrationConfig,
    OutputCalibration,
    kind_of,
)
from pipeline.operators.shedding.grubjoin.capture import CaptureCheck
from pipeline.operators.shedding.grubjoin.correlation import CorrelationConfig, LagHistograms
from pipeline.operators.shedding.grubjoin.directions import expected_terms, paper_fractions
from pipeline.operators.shedding.grubjoin.draws import PlanDraws, draws_per_tuple
from pipeline.operators.shedding.grubjoin.greedy import EXACT_MAX_M, configure
from pipeline.operators.shedding.grubjoin.plans import (
    harvest_plans,
    scanned_fractions,
    shred_plan,
    yield_order,
)
from pipeline.operators.shedding.grubjoin.samefraction import same_fraction
from pipeline.operators.shedding.grubjoin.share import (
    MIN_SHARE,
    by_partner,
)
from pipeline.operators.shedding.grubjoin.slices import slices_kept
from pipeline.operators.shedding.online_stats import OnlineStats
from pipeline.operators.shedding.phase_cost import TupleCostMeter
from pipeline.operators.shedding.throttle import (
    Ceiling,
    CeilingConfig,
    JoinShare,
    Throttle,
    ThrottleConfig,
    load_beta,
    measured_level,
)
from pipeline.operators.shedding.wall_fit import WallCostFit

if TYPE_CHECKING:
    from pipeline.core.profile import PhaseProfile
    from pipeline.operators.config import EngineConfig

#: aging factor per adaptation step for histograms and selectivity sums
DECAY = 0.5
#: execute each direction's positions by expected harvested matches (ours, yield_order)
REORDER = True
#: the wall queue counts as empty below this share of its bound (ours, _queue_empty)
EMPTY_SHARE = 0.1
#: aging factor per adaptation step of the wall clock's seconds-per-tuple fit
#: (ours, _tuple_cost): slower than the histograms', so the fit keeps runs of earlier
#: configurations, whose comparisons per tuple differ, and can separate a from b
FIT_DECAY = 0.8

__all__ = ["DECAY", "EMPTY_SHARE", "FIT_DECAY", "REORDER", "GrubJoinShedder"]


def _plan_to_data(plan: ProbePlan) -> dict[str, Any]:
    return {"order": plan.order, "windows": plan.windows}


def _plan_from_data(data: dict[str, Any]) -> ProbePlan:
    order = None if data["order"] is None else tuple(int(v) for v in data["order"])
    wins = data["windows"]
    windows = None if wins is None else tuple(
        None if w is None else tuple(int(v) for v in w) for w in wins)
    return ProbePlan(order=order, windows=windows)


class GrubJoinShedder(DropsFromRuns, PlansRuns, ObservesOutput, ObservesProbeRuns,
                      ReadsProfile):
    """Runtime GrubJoin shedder; ``snapshot()``/``from_snapshot()`` restore it exactly."""

    def __init__(self, config: EngineConfig, env: PluginEnv) -> None:
        sh = config.shedding
        if sh.partial_window and config.m != 2:
            raise ConfigError(f"shedding.partial_window: the paper's fractions r_1, r_2 are "
                              f"for two-way joins, got {config.m} streams")
        if sh.solver == "exact" and config.m > EXACT_MAX_M:
            raise ConfigError(f"shedding.solver: 'exact' solves m <= {EXACT_MAX_M} streams, "
                              f"got {config.m}; use 'auto' or 'greedy'")
        self.config = config
        # the paper's bounded input buffers (§III-B): the virtual CPU's queue of ``queue``
        # tuples, or on the wall clock a queue bounded in waiting time (``queue_ms``):
        # when even the cheapest configuration cannot keep up, arrivals are dropped
        # instead of the job falling behind its input (ours for the wall clock)
        self.budget = queue_budget(sh, env, sh.queue_overhead)
        #: the batch path's predicted modelled ms per admitted tuple and the queue's last
        #: arrival before the run being joined (:func:`queue_admit_run`)
        self.service_ms = 0.0
        self.last_before = 0.0
        self.throttle = Throttle(ThrottleConfig(boost=sh.boost,
                                                boost_by_headroom=sh.budget == "wall",
                                                recover_to_headroom=sh.budget == "wall"))
        #: wall clock: β and headroom of the join's own share (ours, throttle.JoinShare)
        self.join_share = JoinShare(DECAY)
        self.ceiling = Ceiling(CeilingConfig())
        join = config.join_config()
        self.n_windows = tuple(join.n_basic(i) for i in range(config.m))
        self.hist = LagHistograms(CorrelationConfig(self.n_windows, sh.basic_window_ms, DECAY,
                                                     shrink=sh.budget == "wall"))
        #: indexed cost model (ours, fitted to the batched indexed probe) iff the join
        #: runs its sorted indexes
        self.indexed = join.index and getattr(join.predicate, "kind", None) in (
            "band", "equi", "overlap")
        self.stats = OnlineStats(config.m, DECAY, per_window=self.indexed)
        #: the plans' random choices, a run at a time (draws.py); ``legacy_draws``: a
        #: state restored from before it keeps drawing one choice at a time
        self.draws = PlanDraws(self.n_windows)
        self.legacy_draws = False
        self.rng = np.random.default_rng(sh.seed)
        self.plans: tuple[ProbePlan, ...] | None = None  # None = full scans, default order
        self.fractions: list[list[float]] = [[1.0] * (config.m - 1) for _ in range(config.m)]
        #: counts in force by (direction, partner stream), for re-pricing under a new model
        self.in_force: np.ndarray | None = None
        self.z_model = 1.0
        #: z level (throttle units) the configuration in force uses (None: all of z)
        self.z_used: float | None = None
        self.share = 1.0  # probe share of the configured directions (ours, fallback)
        #: partial_window: per direction the plan with one more window and the share of
        #: its tuples that take it (directions.py); None = whole windows only
        self.extended: tuple[ProbePlan, ...] | None = None
        self.extra = np.zeros(config.m, dtype=np.float64)
        self.pending_extra = self.extra  # the step's choice, installed with its plans
        #: admitted fraction per stream (ours, admission.py) and its own random draws
        self.admit_fraction = np.ones(config.m, dtype=np.float64)
        self.admit_rng = np.random.default_rng([sh.seed, 1])
        #: the admitted fraction in force when the ceiling was learned
        self.ceiling_admit = 1.0
        #: wall clock (ours): seconds per tuple and per comparison of the timed runs, and
        #: the fixed cost per tuple c_t in comparisons the model uses (_tuple_cost)
        self.wall_fit = WallCostFit()
        self.tuple_cost = sh.tuple_cost
        #: wall clock (ours): c_t measured phase by phase (phase_cost.py)
        self.cost_meter = TupleCostMeter(FIT_DECAY)
        self.profile: PhaseProfile | None = None
        #: realized / modelled output per kind of configuration (ours, calibration.py)
        self.calibration = OutputCalibration(
            CalibrationConfig(CALIBRATION_DECAY, max(config.windows)))
        #: the harvest under test checked against each Δ's shredded probes (capture.py)
        self.capture = CaptureCheck(config.m, self.n_windows)

    @classmethod
    def create(cls, config: EngineConfig, env: PluginEnv) -> GrubJoinShedder:
        """The engine's factory; a wall budget times with ``env.clock`` (the shedder never
        reads time itself)."""
        return cls(config, env)

    def wants_profile(self) -> bool:
        """The phase profile measures c_t on the wall clock (``measure_tuple_cost``)."""
        sh = self.config.shedding
        return (self.budget.queue() is not None and sh.measure_tuple_cost
                and not sh.learn_tuple_cost)

    def attach_profile(self, profile: PhaseProfile | None) -> None:
        self.profile = profile
        self.cost_meter.observe(profile)  # a new profile: a new mark

    # ------------------------------------------------------------------ per tuple
    def admit(self, event: Event, now: int) -> bool:
        self.stats.observe_arrival(event.stream)
        a = float(self.admit_fraction[event.stream])
        if a < 1.0 and not self._offered(np.array([now], dtype=np.int64),
                                         np.array([a]))[0]:
            return False  # shed before the join (admission.py, slices.py)
        return self.budget.admit(now)

    def _offered(self, nows: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Which tuples with admitted fractions ``a`` < 1 reach the queue: whole slices of
        the engine clock, a basic window but at most Δ long (``admit_slices``,
        slices.py), else each at random."""
        sh = self.config.shedding
        if sh.admit_slices:
            return slices_kept(nows, a, sh.seed,
                               max(1, min(sh.basic_window_ms, sh.adapt_interval_ms)))
        return np.asarray(self.admit_rng.random(a.shape[0]) < a)

    def plan(self, direction: int) -> ProbePlan | None:
        if self.legacy_draws:
            return self._legacy_plan(direction)
        return self.plan_run(np.array([direction], dtype=np.int64))[0]

    def plan_run(self, streams: np.ndarray) -> list[ProbePlan | None]:
        """Ours (the engine's batch path): :meth:`plan` for each tuple of a run at once —
        the same draws, one ``rng.random((n, k))`` (:mod:`~pipeline.operators.shedding.
        grubjoin.draws`)."""
        sh = self.config.shedding
        n = int(streams.shape[0])
        if self.legacy_draws and sh.shred_rate > 0:
            return [self._legacy_plan(s) for s in streams.tolist()]
        sampling = self.plans is not None and self.share < 1.0
        k = draws_per_tuple(self.config.m, sh.shred_rate, sampling)
        extended = self.extended
        u = self.rng.random((n, k + (extended is not None)))
        plans = self.draws.choose(streams, u[:, :k], self.plans, self.throttle.z,
                                  sh.shred_rate, self.share if sampling else 1.0)
        if extended is None or self.plans is None:
            return plans
        # the paper's "appropriate fraction" of the next basic window (directions.py)
        current = self.plans
        take = u[:, k] < self.extra[streams]
        for t in np.flatnonzero(take).tolist():
            s = int(streams[t])
            if plans[t] is current[s]:
                plans[t] = extended[s]
        return plans

    def _legacy_plan(self, direction: int) -> ProbePlan | None:
        """The draws of a state restored from before :mod:`~pipeline.operators.shedding.
        grubjoin.draws` (one ``rng`` call per choice), so it continues as it would have."""
        current = None if self.plans is None else self.plans[direction]
        if self.rng.random() < self.config.shedding.shred_rate:
            shred = shred_plan(direction, self.n_windows, self.throttle.z, self.rng)
            share = self.throttle.z * self.n_windows[shred.order[0]] if shred.order else 1.0
            if share >= 1.0 or self.rng.random() < share:
                self.draws.fractions[tuple(shred.order or ())] = scanned_fractions(
                    shred, self.n_windows)
                return shred
        if current is not None and self.share < 1.0 and self.rng.random() >= self.share:
            return ProbePlan(order=current.order, windows=((),) * (self.config.m - 1))
        return current

    def charge(self, cost: float, now: int) -> None:
        self.budget.charge(cost, now)
        queue = self.budget.queue()
        if queue is not None:
            self._observe_fit(np.array([cost]), queue.last_took)

    def _comparisons(self, costs: np.ndarray) -> float:
        """The comparisons in a run's charged costs (the engine adds c_t to each, and c_p
        to those that probed)."""
        sh = self.config.shedding
        x = np.where(costs > sh.tuple_cost, costs - sh.tuple_cost - sh.probe_cost, 0.0)
        return float(np.maximum(x, 0.0).sum())

    def _observe_fit(self, costs: np.ndarray, seconds: float) -> None:
        """One timed run for the c_t fit (``learn_tuple_cost`` only): its tuples, their
        comparisons and the ``seconds`` it took."""
        if not self.config.shedding.learn_tuple_cost or costs.shape[0] == 0:
            return
        self.wall_fit.observe(float(costs.shape[0]), self._comparisons(costs), seconds)

    def admit_some(self, streams: np.ndarray, nows: np.ndarray) -> np.ndarray | None:
        """Ours (the engine's batch path): the tuples of a run the wall queue admits, as
        :meth:`admit` tuple by tuple; None on the virtual CPU, whose queue depends on each
        previous tuple's cost (the engine then admits tuple by tuple)."""
        queue = self.budget.queue()
        if queue is None:
            return None
        self.stats.arrivals += np.bincount(streams, minlength=self.config.m)
        self.last_before = queue.last_now
        a = self.admit_fraction[streams]
        offered = None
        if (a < 1.0).any():  # :meth:`admit`'s draws, in tuple order
            offered = np.ones(streams.shape[0], dtype=bool)
            at = np.flatnonzero(a < 1.0)
            offered[at] = self._offered(nows[at], a[at])
        return queue_admit_run(queue, nows, self.service_ms, offered)

    def charge_some(self, costs: np.ndarray, nows: np.ndarray) -> None:
        """The tuples admitted by :meth:`admit_some` cost ``costs`` (one per tuple)."""
        queue = self.budget.queue()
        assert queue is not None, "charge_some follows an admit_some that returned a mask"
        self.service_ms = queue_charge_run(queue, costs, nows, self.last_before)
        self._observe_fit(costs, queue.last_took * costs.shape[0])
        if self.profile is not None:
            self.cost_meter.charge(int(costs.shape[0]), self._comparisons(costs))

    def _tuple_cost(self) -> float:
        """c_t in comparisons (the model's unit). Virtual CPU, or neither way of learning
        it on: ``tuple_cost`` as configured. Wall clock with ``measure_tuple_cost`` and a
        phase profile attached (ours): the admitted tuples' own seconds per tuple over
        the probing seconds per comparison
        (:class:`~pipeline.operators.shedding.phase_cost.TupleCostMeter`), never below
        the configured value. Wall clock with ``learn_tuple_cost`` (ours):
        a/b of the seconds-per-tuple fit
        (:class:`~pipeline.operators.shedding.wall_fit.WallCostFit`) — what an admitted
        tuple costs besides its comparisons, which decides between admitting fewer tuples
        and harvesting less (admission.py) — never below the configured value; the last
        learned value while the runs do not determine the fit."""
        sh = self.config.shedding
        if self.profile is not None and self.wants_profile():
            self.cost_meter.observe(self.profile)
            measured = self.cost_meter.value()
            if measured is not None:
                self.tuple_cost = max(sh.tuple_cost, measured)
            return self.tuple_cost
        if self.budget.queue() is None or not sh.learn_tuple_cost:
            return sh.tuple_cost
        solved = self.wall_fit.solve()
        if solved is not None:
            a, b = solved
            self.tuple_cost = max(sh.tuple_cost, a / b)
        return self.tuple_cost

    def observe_output(self, results: int) -> None:
        self.calibration.observe(results)

    def observe_probe(self, feedback: ProbeFeedback) -> None:
        if self.config.shedding.learn:
            self.hist.observe(feedback)
        self.stats.observe_probe(feedback, self.draws.fractions.get(feedback.order))
        self.capture.observe(feedback)

    def observe_probes(self, feedbacks: Sequence[ProbeFeedback]) -> None:
        if self.config.shedding.learn:
            self.hist.observe_many(feedbacks)
        fractions = self.draws.fractions
        for fb in feedbacks:
            self.stats.observe_probe(fb, fractions.get(fb.order))
            self.capture.observe(fb)

    # ------------------------------------------------------------------ every Δ
    def maybe_adapt(self, now: int) -> dict[str, Any] | None:
        """One adaptation step (GrubJoin §IV-A, §IV-C, §IV-D, §V); a metrics row."""
        sh = self.config.shedding
        reading = self.budget.measure(now, sh.adapt_interval_ms)
        queue = self.budget.queue()
        if queue is not None:  # what z can shed (JoinShare)
            beta, headroom = self.join_share.reading(reading, sh.adapt_interval_ms)
            if self._queue_empty(reading):
                beta, headroom = max(beta, 1.0), max(headroom, 1.0)
            reading = dataclasses.replace(reading, beta=beta, headroom=headroom)
        else:  # the virtual CPU: drops cut z only under load (throttle.load_beta)
            reading = dataclasses.replace(reading, beta=load_beta(reading.beta,
                                                                  reading.headroom))
        # the z level the configuration in force uses (anti-windup, throttle docstring)
        z_old = self.throttle.z
        used = z_old if self.z_used is None else self.z_used
        rates = self.stats.rates(sh.adapt_interval_ms)
        measured = queue is not None and sh.measure_budget
        z = z_old if measured else self.throttle.update(reading.beta, reading.headroom, used)
        passed = reading.consumed / reading.pushed if reading.pushed > 0 else 1.0
        self.calibration.close(now, sh.adapt_interval_ms, passed)
        self.capture.close()
        if rates.sum() > 0:
            score_fn = self.hist.scores if sh.learn else self._flat
            previous = None if self.plans is None else np.array(
                [p.order for p in self.plans], dtype=np.int64)
            seg = rates * np.asarray(self.config.windows, dtype=np.float64) / 1000.0 * (
                self.admit_fraction)  # the windows hold the admitted tuples
            model, scores = build_model(rates, self.config.windows,
                                        self.stats.selectivity(seg), score_fn,
                                        self._tuple_cost(), previous, indexed=self.indexed,
                                        window_cost=INDEX_WINDOW_COST,
                                        probe_cost=sh.probe_cost)
            if measured:
                z = self._measured(model, reading, z_old)
            self.z_model = z if measured else self._model_fraction(model, z, z_old)
            cap = None if measured else self._ceiling_fraction(model, reading,
                                                               float(rates.sum()))
            capped = cap is not None and self.z_model > cap
            if capped and cap is not None:
                self.z_model = cap
            joint = self._by_queue(model, self._choose(model))
            counts, share, admit = joint.counts, joint.share, float(joint.admit[0])
            self.calibration.install(kind_of(counts, model.max_counts()), joint.output, now)
            if capped and self.in_force is not None:
                # below the learned ceiling z follows the cost of what is installed,
                # relative to the configuration in force (same model): no wind-up
                was = self._price(model, self.in_force, self.share)
                now_cost = self._price(model, by_partner(model, counts), share, admit,
                                       self.pending_extra)
                z = self.throttle.clamp(z_old * now_cost / was if was > 0 else z)
            self.share = share
            self.admit_fraction = np.asarray(joint.admit, dtype=np.float64)
            budget = self.z_model * model.full_cost()
            self.z_used = z * (min(1.0, max(0.0, joint.cost / budget)) if budget > 0 else 1.0)
            model_a = scaled(model, admit)
            perm = yield_order(model_a, counts) if REORDER else None
            self._install(model_a, counts, scores, perm)
            self._test_harvest(model, joint, scores)
            self.in_force = by_partner(model, counts)
            self.fractions = ((counts + self.extra[:, None]) / model.max_counts()
                              ).round(4).tolist()
        self.hist.age()
        self.stats.age()
        self.wall_fit.age(FIT_DECAY)
        self.draws.reset()
        return self._row(now, z, reading, rates)

    def _measured(self, model: HarvestModel, reading: BudgetReading, z_old: float) -> float:
        """z from the interval's measurement (:func:`~pipeline.operators.shedding.
        throttle.measured_level`): the configuration in force priced under this step's
        model at the admitted fraction, times the share of the offered tuples the queue
        passed, over C(1)."""
        sh = self.config.shedding
        full = model.full_cost()
        spent: float | None = None
        if reading.pushed > 0 and full > 0:
            passed = reading.consumed / reading.pushed
            spent = passed * self._price(model, self._held(model), self.share) / full
        self.throttle.z = measured_level(reading.headroom, spent, z_old,
                                         self._queue_empty(reading), sh.boost)
        return self.throttle.z

    def _choose(self, model: HarvestModel) -> Joint:
        """The configuration for the budget z_model·C(1): GrubJoin's joint choice, or
        with ``join_direction = false`` one fraction for every direction (Gedik et al.,
        CIKM; :func:`same_fraction`)."""
        sh = self.config.shedding
        budget = self.z_model * model.full_cost()
        if sh.partial_window:
            got = paper_fractions(model, budget, sh.join_direction, MIN_SHARE)
            self.pending_extra = got.extra
            return Joint(np.ones(model.m), got.counts, 1.0, got.cost, got.output)
        if sh.join_direction:
            weight = self._harvest_weight()
            return choose(model, budget, sh.heuristic, sh.solver, harvest_weight=weight)
        counts, share = same_fraction(model, budget)
        return Joint(np.ones(model.m), counts, share, joint_cost(model, 1.0, counts, share),
                     joint_output(model, 1.0, counts, share))

    def _captures(self) -> bool:
        """Whether the capture check (capture.py) weighs harvests: output calibration on
        and window shredding feeding it."""
        sh = self.config.shedding
        return (sh.calibrate_output and sh.check_capture and sh.shred_rate > 0
                and not sh.partial_window)

    def _harvest_weight(self) -> float:
        """The factor on harvested outputs before the choice: the capture check's
        ρ / π with shredding on (capture.py), else realized over modelled results
        (calibration.py); 1 with ``calibrate_output = false``."""
        if not self.config.shedding.calibrate_output:
            return 1.0
        return self.capture.weight() if self._captures() else self.calibration.weight()

    def _test_harvest(self, model: HarvestModel, joint: Joint,
                      scores: list[list[np.ndarray]]) -> None:
        """The harvest the next Δ's shredded probes check (capture.py): the one
        installed, or with the full join installed the paper's harvest at full admission
        for the same budget, so a harvest's capture keeps being measured while none is in
        force; π = O({z}) / O(1) at the same admission."""
        if not self._captures():
            return
        full = model.max_counts()
        counts, admit = joint.counts, float(joint.admit[0])
        plans = self.plans
        if kind_of(counts, full) == FULL:
            counts, admit = configure(model, min(1.0, self.z_model), self.config.shedding.heuristic,
                                      self.config.shedding.solver), 1.0
            if not counts.any() or kind_of(counts, full) == FULL:
                self.capture.install(None, 0.0)
                return
            model_1 = scaled(model, 1.0)
            plans = harvest_plans(model_1, counts, scores,
                                  yield_order(model_1, counts) if REORDER else None)
        whole = joint_output(model, admit, full, 1.0)
        promised = joint_output(model, admit, counts, 1.0) / whole if whole > 0 else 0.0
        self.capture.install(plans, promised)

    def _by_queue(self, model: HarvestModel, joint: Joint) -> Joint:
        """Ours (``full_by_queue``, wall budget): the full join chosen at an admitted
        fraction or probe share below 1 — tail drop's point, priced by the model — is
        installed at full admission and full probing, and the bounded input queue drops
        what does not fit, as it does behind tail drop. The queue measures what fits in
        the time the join really has; the model's fraction is only as good as its cost
        estimates (c_t, c_p, the budget), and an underestimate left spare time unused
        for several Δ while z climbed back (positions at 2×, docs/NOTES.md)."""
        full = model.max_counts()
        if (not self.config.shedding.full_by_queue or self.budget.queue() is None
                or kind_of(joint.counts, full) != FULL
                or (float(np.min(joint.admit)) >= 1.0 and joint.share >= 1.0)):
            return joint
        return Joint(np.ones(model.m), joint.counts, 1.0,
                     joint_cost(model, 1.0, joint.counts, 1.0),
                     joint_output(model, 1.0, joint.counts, 1.0))

    def _row(self, now: int, z: float, reading: BudgetReading, rates: np.ndarray
             ) -> dict[str, Any]:
        """The adaptation step's metrics row."""
        queue = self.budget.queue()
        return {
            "time": now,
            "mode": "grubjoin",
            "z": round(z, 6),
            "z_model": round(self.z_model, 6),
            "z_used": None if self.z_used is None else round(self.z_used, 6),
            "ceiling": self.ceiling.counts is not None,
            "beta": round(min(reading.beta, 1e6), 6),
            "harvest_fractions": self.fractions,
            "orders": [list(p.order or ()) for p in self.plans] if self.plans else None,
            "probe_share": round(self.share, 6),
            "admit": [round(float(a), 6) for a in self.admit_fraction],
            "admit_mean": round(float(np.mean(self.admit_fraction)), 6),
            "tuple_cost": round(self.tuple_cost, 3),
            "harvest_weight": round(self.calibration.weight(), 4),
            "weight_used": round(self._harvest_weight(), 4),
            "capture_weight": round(self.capture.weight(), 4),
            **self.capture.last_row(),
            "queue_drops": reading.dropped,
            "queue_overflows": reading.overflows,
            **({"backlog_ms": round(queue.backlog_ms(), 3)} if queue is not None else {}),
            "pushed": reading.pushed,
            "consumed": reading.consumed,
            "rates_in": [round(float(r), 3) for r in rates],
            "cost": round(reading.cost, 3),
            "headroom": round(min(reading.headroom, 1e6), 6),
            "budget_available_s": round(reading.available, 6),
            "budget_spent_s": round(reading.spent, 6),
            "budget_overhead_s": round(reading.overhead, 6),
            "lag_cap": None if reading.lag_cap is None else round(reading.lag_cap, 6),
        }

    def wall_budget(self) -> WallAccount | None:
        """The input queue when it runs on the wall clock (the runtime reports batches)."""
        return self.budget.wall()

    def _queue_empty(self, reading: BudgetReading) -> bool:
        """Ours (issue 28, no collapse): the wall queue kept up over the interval — no
        drops, a backlog under :data:`EMPTY_SHARE` of its bound, and the batch not
        behind its input (lag guard). Then z is not cut (β, headroom ≥ 1): an operator
        that keeps up with its input has no load to shed, whatever the overhead estimate
        of :class:`~pipeline.operators.shedding.throttle.JoinShare` says, so z never
        sits at its floor while the queue is empty."""
        queue = self.budget.queue()
        assert queue is not None
        bound = queue.queue_config.bound_ms
        return (reading.dropped == 0 and queue.backlog_ms() <= EMPTY_SHARE * bound
                and (reading.lag_cap is None or reading.lag_cap >= 1.0))

    def _install(self, model_a: HarvestModel, counts: np.ndarray,
                 scores: list[list[np.ndarray]], perm: np.ndarray | None) -> None:
        """The step's plans; with ``partial_window`` also each direction's plan with one
        more window and the share of its tuples that take it (directions.py)."""
        self.plans = harvest_plans(model_a, counts, scores, perm)
        if self.config.shedding.partial_window:
            self.extended = harvest_plans(model_a, np.minimum(counts + 1, model_a.max_counts()),
                                          scores, perm)
            self.extra = self.pending_extra

    def _price(self, model: HarvestModel, partner_counts: np.ndarray, share: float,
               admit: float | None = None, extra: np.ndarray | None = None) -> float:
        """Modelled cost C (under ``model``) of a configuration held by (direction,
        partner stream), probing on a ``share`` of its directions' tuples, at the admitted
        fraction ``admit`` (default: the one in force); with ``partial_window`` plus the
        expected cost of the next window on the share ``extra`` (default: in force)."""
        rows = np.arange(model.m)[:, None]
        counts = np.minimum(partner_counts[rows, np.asarray(model.orders)], model.max_counts())
        a = float(self.admit_fraction[0]) if admit is None else admit
        cost = joint_cost(model, a, counts, share)
        if self.config.shedding.partial_window:
            whole = counts[:, 0].astype(np.float64)
            more = self.extra if extra is None else extra
            cost += float((expected_terms(model, whole + more)[0]
                           - expected_terms(model, whole)[0]).sum())
        return cost

    def _held(self, model: HarvestModel) -> np.ndarray:
        """The counts in force by (direction, partner stream); full scans before the first
        configuration."""
        if self.in_force is not None:
            return self.in_force
        return np.tile(np.asarray(self.n_windows, dtype=np.int64), (model.m, 1))

    def _model_fraction(self, model: HarvestModel, z: float, z_old: float) -> float:
        """The throttle fraction handed to the solver, in the model's own cost units.

        Ours: the model's costs can be off by a factor that differs between small and
        full configurations (estimated σ, yields). The throttle scales the *measured*
        cost of the configuration in force by z/z_old, so its *modelled* cost — priced
        under this step's model (its counts mapped to the new orders, times the probe
        share) — is scaled the same way: z_model = max(z, (z/z_old)·C({z_old})/C(1)),
        capped at 1. The solver then keeps C({z}) ≤ z_model·C(1) (GrubJoin §IV-C).
        """
        full = model.full_cost()
        if self.in_force is None or z >= 1.0 or full <= 0:
            return z
        cost = self._price(model, self.in_force, self.share)
        return float(min(1.0, max(z, z / z_old * cost / full)))

    def _ceiling_fraction(self, model: HarvestModel, reading: BudgetReading,
                          load: float) -> float | None:
        """Learn / forget the ceiling (:class:`~pipeline.operators.shedding.throttle.Ceiling`)
        from the interval just measured; the largest z_model it allows (None: any)."""
        ceiling = self.ceiling
        ceiling.forget_if_moved(load)
        learn = ceiling.should_learn(reading.dropped, reading.overflows, reading.headroom)
        full = model.full_cost()
        if full <= 0:
            return None
        if learn:
            held = self._held(model)
            if ceiling.counts is None or self._price(model, held, self.share) < self._price(
                    model, np.asarray(ceiling.counts, dtype=np.int64), ceiling.share,
                    self.ceiling_admit):
                ceiling.remember(held.tolist(), self.share, load)
                self.ceiling_admit = float(self.admit_fraction[0])
        if ceiling.counts is None:
            return None
        # priced at the admission it overflowed under: the ceiling is a cost, and pricing
        # it at a smaller admission in force would shrink it with every admission cut
        bad = self._price(model, np.asarray(ceiling.counts, dtype=np.int64), ceiling.share,
                          self.ceiling_admit)
        return ceiling.config.margin * bad / full

    def _flat(self, i: int, l: int) -> np.ndarray:
        n = self.n_windows[l]
        return np.full(n, 1.0 / n)

    # ------------------------------------------------------------------ state
    def snapshot(self) -> dict[str, Any]:
        return {
            "mode": "grubjoin",
            "budget": self.budget.snapshot(),
            "throttle": self.throttle.snapshot(),
            "ceiling": self.ceiling.snapshot(),
            "hist": self.hist.snapshot(),
            "stats": self.stats.snapshot(),
            "rng": self.rng.bit_generator.state,
            "plans": None if self.plans is None else [_plan_to_data(p) for p in self.plans],
            "fractions": [list(r) for r in self.fractions],
            "in_force": None if self.in_force is None else self.in_force.tolist(),
            "z_model": self.z_model,
            "z_used": self.z_used,
            "share": self.share,
            "service_ms": self.service_ms,
            "join_share": self.join_share.snapshot(),
            "draws": "legacy" if self.legacy_draws else "run",
            "admit": self.admit_fraction.tolist(),
            "admit_rng": self.admit_rng.bit_generator.state,
            "ceiling_admit": self.ceiling_admit,
            "wall_fit": self.wall_fit.snapshot(),
            "tuple_cost": self.tuple_cost,
            "cost_meter": self.cost_meter.snapshot(),
            "calibration": self.calibration.snapshot(),
            "capture": self.capture.snapshot(),
            **({} if self.extended is None else {
                "extended": [_plan_to_data(p) for p in self.extended],
                "extra": self.extra.tolist()}),
        }

    @classmethod
    def from_snapshot(cls, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> GrubJoinShedder:
        def load(obj: GrubJoinShedder) -> None:
            obj.service_ms = float(snap.get("service_ms", 0.0))
            obj.join_share = JoinShare.from_snapshot(snap.get("join_share"))
            obj.throttle = Throttle.from_snapshot(obj.throttle.config, snap["throttle"])
            if "ceiling" in snap:
                obj.ceiling = Ceiling.from_snapshot(obj.ceiling.config, snap["ceiling"])
            obj.hist = LagHistograms.from_snapshot(obj.hist.config, snap["hist"])
            obj.stats = OnlineStats.from_snapshot(config.m, DECAY, snap["stats"], obj.indexed)
            obj.rng.bit_generator.state = snap["rng"]
            plans = snap["plans"]
            obj.plans = None if plans is None else tuple(_plan_from_data(p) for p in plans)
            obj.fractions = [list(map(float, r)) for r in snap["fractions"]]
            held = snap["in_force"]
            obj.in_force = None if held is None else np.asarray(held, dtype=np.int64)
            obj.z_model = float(snap["z_model"])
            obj.share = float(snap.get("share", 1.0))
            used = snap.get("z_used")
            obj.z_used = None if used is None else float(used)
            obj.legacy_draws = snap.get("draws") != "run"
            if "admit" in snap:
                obj.admit_fraction = np.asarray(snap["admit"], dtype=np.float64)
                obj.admit_rng.bit_generator.state = snap["admit_rng"]
                obj.ceiling_admit = float(snap.get("ceiling_admit", 1.0))
            if "wall_fit" in snap:
                obj.wall_fit = WallCostFit.restore(snap["wall_fit"])
                obj.tuple_cost = float(snap["tuple_cost"])
            if "cost_meter" in snap:
                obj.cost_meter = TupleCostMeter.restore(FIT_DECAY, snap["cost_meter"])
                obj.tuple_cost = float(snap["tuple_cost"])
            if "calibration" in snap:
                obj.calibration = OutputCalibration.restore(obj.calibration.config,
                                                            snap["calibration"])
            if "capture" in snap:
                obj.capture = CaptureCheck.restore(config.m, obj.n_windows, snap["capture"])
            if "extended" in snap:
                obj.extended = tuple(_plan_from_data(p) for p in snap["extended"])
                obj.extra = np.asarray(snap["extra"], dtype=np.float64)

        return restore_shedder("grubjoin", snap, lambda: cls(config, env), load)
