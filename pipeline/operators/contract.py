"""Plug-in points of the :class:`~pipeline.operators.engine.engine.Engine`.

Two protocols let the disorder-handling policy (Ji et al.) and the load shedder
(GrubJoin, Gedik et al.) plug into the engine without editing its internals:

* :class:`SlackPolicy` sizes the common K of every K-slack buffer (Ji et al. Same-K
  policy, Theorem 1). Baselines ``none``/``max``/``fixed`` live in
  ``pipeline/operators/disorder/slack_policies.py``; ``quality`` (Alg. 3) plugs in the same way.
* :class:`Shedder` throttles the join (GrubJoin operator throttling + window
  harvesting, or RandomDrop). ``off`` lives in ``pipeline/operators/shedding/noshed.py``.
  A shedder whose budget runs on the wall clock hands it to the runtime through
  :meth:`Shedder.wall_budget` (:class:`WallAccount`): the runtime reports each
  micro-batch's time outside the join and its lag there (ARCHITECTURE §5, ours).

Call sequence, driven by the records' arrival times (the engine clock ``now``; never
the wall clock):

1. every arriving event: ``slack.observe_arrival(stream, ts, delay)`` at the K-slack
   input (delay = ^iT − ts after updating ^iT, Ji §II);
2. events released by K-slack → Synchronizer reach the join in Alg. 2 order; for each:
   ``shedder.admit(event, now)`` (False = dropped before the join, not inserted);
3. admitted in-order tuples (ts ≥ ⋈T): ``plan = shedder.plan(stream)``, the join probes
   with it, then ``shedder.observe_probe(feedback)`` if ``plan.feedback`` was set;
   ``slack.observe_join(stream, ts, delay, results, cross, late=False)``;
   late tuples (ts < ⋈T): ``slack.observe_join(..., results=0, cross=0, late=True)``;
4. ``shedder.charge(cost, now)`` with cost = tuple comparisons + ``shedding.tuple_cost``;
5. when the clock crosses a multiple of ``disorder.interval_ms`` (L):
   ``slack.maybe_adapt(boundary_ms)``; when it crosses a multiple of
   ``shedding.adapt_interval_ms`` (Δ): ``shedder.maybe_adapt(boundary_ms)``; returned
   rows are queued for :meth:`Engine.drain_metrics`. After a slack adaptation the
   engine re-applies the (possibly smaller) K to every K-slack buffer at once.

Optional abilities for runs of tuples (ours): a plug-in declares each by subclassing
its ABC below, and the engine looks them up once, when it is built. With them
:meth:`Engine.process_many` runs K-slack, the Synchronizer and the join a run of tuples
at a time (:class:`~pipeline.operators.engine.step.JoinStep`), with the same outcome as
the call sequence above. A K policy is :class:`SteadyK` if K changes only in
``maybe_adapt`` and may be :class:`ObservesRuns`; a shedder is :class:`AdmitsRuns`
(all of a run or, with no side effect, tuple by tuple) or :class:`DropsFromRuns` (the
drop baselines: some tuples of a run), and may be :class:`PlansRuns` or
:class:`NeverPlans`, and :class:`ObservesProbeRuns` (a run's probe feedback at once).
A shedder that is :class:`ReadsProfile` is handed the instance's phase profile (the
runtime attaches one when it asks).

Every plug-in is created by ``cls.create(config, env)`` and restored by
``cls.from_snapshot(config, snap, env)`` (:class:`SlackPolicyFactory`,
:class:`ShedderFactory`) where ``config`` is the frozen
:class:`~pipeline.operators.config.EngineConfig` and ``env`` the :class:`PluginEnv` the
runtime injects (clocks, speed-up); ``snapshot()`` returns plain Python/NumPy data
(picklable). Plug-ins never read time themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.events import Event
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan

if TYPE_CHECKING:
    from pipeline.core.profile import PhaseProfile
    from pipeline.operators.config import EngineConfig

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
B8 = NDArray[np.bool_]


@dataclass(frozen=True)
class PluginEnv:
    """What a runtime injects into its plug-ins besides the config.

    ``clock``: the wall budget's clock (seconds, monotonic; None = no wall clock, a
    ``wall`` budget then fails with :class:`~pipeline.core.errors.ConfigError`);
    ``speedup``: stream time per wall time of the input replay (ARCHITECTURE §5);
    ``timer``: optional clock (seconds) timing each quality-policy step (``adapt_ms``).
    """

    clock: Callable[[], float] | None = None
    speedup: float = 1.0
    timer: Callable[[], float] | None = None


class SlackPolicy(Protocol):
    """Sizes K for every K-slack buffer (Ji et al. §III Same-K; Alg. 3 for ``quality``).

    ``needs_cross``: whether :meth:`observe_join` needs the exact cross-join count n^×
    (it costs one count over the other windows per probe; False passes ``cross=0``).
    """

    needs_cross: bool

    def observe_arrival(self, stream: int, ts: int, delay: int) -> None:
        """A tuple of ``stream`` arrived at its K-slack with raw ``delay`` = ^iT − ts ≥ 0."""

    def observe_join(
        self, stream: int, ts: int, delay: int, results: int, cross: int, late: bool
    ) -> None:
        """The join processed a tuple (Ji §3.5 Tuple-Productivity Profiler input).

        ``delay`` is its raw delay (annotated at K-slack), ``results`` n^⋈ (all with
        result_time = ts), ``cross`` n^× = Π_{j≠i}|S_j[W_j]|; ``late`` = arrived with
        ts < ⋈T (not probed: results = cross = 0).
        """

    def current_k(self) -> int:
        """The K (ms) that every K-slack buffer uses now."""
        ...

    def maybe_adapt(self, now_ms: int) -> dict[str, Any] | None:
        """Called at each interval boundary L; a metrics row if K was re-sized."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """Plain-data state (picklable)."""
        ...


class Shedder(Protocol):
    """Throttles the join's CPU use (GrubJoin §2 throttling + harvesting; RandomDrop)."""

    def admit(self, event: Event, now: int) -> bool:
        """Whether ``event`` enters the join (False = dropped, e.g. queue overflow)."""
        ...

    def plan(self, direction: int) -> ProbePlan | None:
        """The probe plan for an in-order tuple of stream ``direction``; None = full scan."""
        ...

    def charge(self, cost: float, now: int) -> None:
        """Cost (comparisons + per-tuple cost) of the work just done at clock ``now``."""

    def observe_probe(self, feedback: ProbeFeedback) -> None:
        """Per-basic-window match counts of a probe whose plan asked for feedback."""

    def maybe_adapt(self, now: int) -> dict[str, Any] | None:
        """Called at each boundary Δ; a metrics row (z, harvest_fractions, queue_drops...)."""
        ...

    def wall_budget(self) -> WallAccount | None:
        """The shedder's budget when it times the join on the wall clock, else None."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """Plain-data state (picklable)."""
        ...


class WallAccount(Protocol):
    """A shedder's wall-clock budget as the runtime sees it (ARCHITECTURE §5, ours;
    :class:`~pipeline.operators.budget.wall.WallBudget`)."""

    @property
    def timed_total(self) -> float:
        """Wall seconds timed between admission and charge so far (never decreases)."""
        ...

    def begin_batch(self, fresh_ms: float | None, target_ms: float) -> None:
        """A micro-batch starts whose freshest input was appended at ``fresh_ms`` (epoch
        ms; None: unknown), against a latency target of ``target_ms``."""

    def batch_lag(self, now_s: float) -> float | None:
        """The running batch's freshest input's age at ``now_s`` over the latency
        target; None outside a batch or without timestamps."""

    def charge_results(self, n: int, seconds_each: float) -> None:
        """``n`` results were found, each costing ``seconds_each`` off the clock."""

    def observe_batch(self, overhead_s: float, lag_ratio: float | None) -> None:
        """A micro-batch spent ``overhead_s`` seconds outside admit→charge and ended
        ``lag_ratio`` × the latency target behind its input (None: unknown)."""


class SlackPolicyFactory(Protocol):
    """A SlackPolicy class: ``create(config, env)``; ``from_snapshot(config, snap, env)``
    raises :class:`~pipeline.core.errors.OperatorStateError` for another mode's snapshot."""

    def create(self, config: EngineConfig, env: PluginEnv) -> SlackPolicy: ...

    def from_snapshot(
        self, config: EngineConfig, snap: dict[str, Any], env: PluginEnv
    ) -> SlackPolicy: ...


class ShedderFactory(Protocol):
    """A Shedder class: ``create(config, env)``; ``from_snapshot(config, snap, env)``
    raises :class:`~pipeline.core.errors.OperatorStateError` for another mode's snapshot."""

    def create(self, config: EngineConfig, env: PluginEnv) -> Shedder: ...

    def from_snapshot(
        self, config: EngineConfig, snap: dict[str, Any], env: PluginEnv
    ) -> Shedder: ...


# ---------------------------------------------------------------------- abilities (runs)
class SteadyK(ABC):  # noqa: B024 (a declared ability without methods)
    """A :class:`SlackPolicy` whose K changes only in ``maybe_adapt``, never with an
    arrival: between two boundaries L the engine runs K-slack and the Synchronizer over
    a segment of arrivals at once (Ji et al. Alg. 1 vectorized; not Max-K-slack)."""


class ObservesRuns(ABC):
    """A :class:`SlackPolicy` that observes a run of tuples at once — the same state as
    ``observe_arrival``/``observe_join`` tuple by tuple, in order."""

    @abstractmethod
    def observe_arrivals(self, streams: I64, ts: I64, delays: I64) -> None:
        """``observe_arrival`` for every arrival of a segment."""

    @abstractmethod
    def observe_joins(self, streams: I64, ts: I64, delays: I64, results: I64, cross: I64,
                      late: B8) -> None:
        """``observe_join`` for every tuple of a run (results = cross = 0 where late)."""


class AdmitsRuns(ABC):
    """A :class:`Shedder` that admits a whole run or leaves it to ``admit`` tuple by
    tuple, and is charged for a run at once."""

    @abstractmethod
    def admit_run(self, streams: I64, now: int) -> bool:
        """Whether every tuple of the run enters the join; False, with no side effect:
        the engine asks ``admit`` tuple by tuple."""

    @abstractmethod
    def charge_run(self, costs: F64, now: int) -> None:
        """``charge`` for every tuple of an admitted run (one cost per tuple, in order)."""


class DropsFromRuns(ABC):
    """A :class:`Shedder` that admits some tuples of a run (random drops, a queue bounded
    in wall-clock waiting time); the dropped ones leave the run before the join, exactly
    as a False ``admit`` leaves a tuple."""

    @abstractmethod
    def admit_some(self, streams: I64, nows: I64) -> B8 | None:
        """The mask of admitted tuples (``nows``: each tuple's engine clock); None, with
        no side effect: the engine asks ``admit`` tuple by tuple."""

    @abstractmethod
    def charge_some(self, costs: F64, nows: I64) -> None:
        """``charge`` for each tuple admitted by :meth:`admit_some`, in order."""


class PlansRuns(ABC):
    """A :class:`Shedder` that plans a run's in-order tuples at once."""

    @abstractmethod
    def plan_run(self, streams: I64) -> list[ProbePlan | None] | None:
        """``plan`` for each direction of ``streams``, with the same draws; None, with no
        side effect: the engine asks ``plan`` tuple by tuple."""


class ObservesOutput(ABC):
    """A :class:`Shedder` told how many results the join produced for its admitted
    tuples (ours, issue 28: GrubJoin calibrates its modelled output by them)."""

    @abstractmethod
    def observe_output(self, results: int) -> None:
        """``results`` more results were produced (after a tuple or a run)."""


class ObservesProbeRuns(ABC):
    """A :class:`Shedder` that takes a run's probe feedback at once (ours: the engine's
    batch path), with the same effect as ``observe_probe`` for each, in order."""

    @abstractmethod
    def observe_probes(self, feedbacks: Sequence[ProbeFeedback]) -> None:
        """``observe_probe`` for each of ``feedbacks``, in order."""


class ReadsProfile(ABC):
    """A :class:`Shedder` that reads the instance's phase profile
    (:class:`~pipeline.core.profile.PhaseProfile`; ours, issue 28: GrubJoin measures its
    per-tuple cost c_t from it on the wall clock)."""

    @abstractmethod
    def wants_profile(self) -> bool:
        """Whether the runtime should time the phases for this shedder."""

    @abstractmethod
    def attach_profile(self, profile: PhaseProfile | None) -> None:
        """The profile the engine laps on from now on (None: none)."""


class NeverPlans(ABC):  # noqa: B024 (a declared ability without methods)
    """A :class:`Shedder` whose ``plan`` is always None (full scans, default order): the
    engine does not ask."""
