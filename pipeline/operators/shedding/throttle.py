"""Operator throttling: the throttle fraction z (GrubJoin §IV-A, ARCHITECTURE §5).

Every Δ the budget source reports β, the join's performance over the last interval:

* β < 1 (the join fell behind: fewer tuples consumed than pushed, or more time spent
  than available): z ← β · z                                       (paper's rule)
* β ≥ 1: z ← min(1, γ · z)                                          (paper's boost)

The paper specifies only these two rules (γ = 1.2 in its Fig. 2; no other thresholds).
Everything below is ours: two refinements that make the controller settle under steady
overload, where the paper's rules alone keep cycling (docs/NOTES.md tells why):

* **headroom cap with anti-windup** (:class:`Throttle`) — for a budget that measures its
  *headroom* h (utilization target over the share of the budget used, e.g. capacity
  over virtual busy time) and a caller that reports the z level its configuration in
  force actually *uses*: z ← min(1, γ·z, h·min(z, used)). At h < 1 z backs off even
  without drops, and z never winds up beyond what the measured headroom affords from
  what is spent. Cuts keep the paper's rule.
* **learned ceiling** (:class:`Ceiling`, applied by the GrubJoin shedder) — the
  cheapest configuration that overflowed the input queue under near-target load is
  remembered, and later configurations cost at most ``margin`` × its cost (re-priced
  under each step's model). Under steady input the ceiling only moves down, to the
  first configuration that does not overflow, so z settles and the drops it caused
  stop; it is forgotten when the input rate changes.

What the throttle cannot remove are drops caused by a *single* probe that outlasts the
queue (e.g. a window-shredding probe of ω-sampled tuples, which scans whole windows
after its first position): no z prevents them, so they are not learned from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.budget.reading import BudgetReading

#: z never goes below this (a direction with z = 0 would never produce or learn)
Z_MIN = 1e-3


@dataclass(frozen=True)
class ThrottleConfig:
    """Boost factor γ > 1 (paper: 1.2) and the headroom cap (ours)."""

    boost: float = 1.2
    cap_by_headroom: bool = True
    #: ours (GrubJoin on the wall clock): under a measured headroom h the boost is
    #: max(γ, √h), still capped at h × the level in use — z recovers from its floor in a
    #: few steps instead of log(1/z)/log γ (35 steps of Δ from 0.001 to 0.5 at γ = 1.2)
    boost_by_headroom: bool = False
    #: ours (issue 28, GrubJoin on the wall clock): under a measured headroom h ≥ γ the
    #: boost is h itself, so z goes straight to the cap h × the level in use — the level
    #: the measured budget allows — in one step after the load drops, instead of
    #: log(h)/log(√h) steps; a cut undoes an overshoot proportionally (z ← β·z) the next Δ
    recover_to_headroom: bool = False

    def __post_init__(self) -> None:
        if not self.boost > 1.0:
            raise ConfigError(f"boost: must be > 1, got {self.boost}")


class Throttle:
    """Runtime z (starts at 1)."""

    def __init__(self, config: ThrottleConfig, z: float = 1.0) -> None:
        self.config = config
        self.z = z

    def update(self, beta: float, headroom: float | None = None,
               used: float | None = None) -> float:
        """One adaptation step (GrubJoin §IV-A); returns the new z. ``used``: the z level
        the configuration in force uses (None: all of z)."""
        if beta < 0.0:
            raise OperatorStateError(f"beta: must be >= 0, got {beta}")
        cfg = self.config
        if beta < 1.0:
            z = beta * self.z
        else:
            boost = cfg.boost
            if cfg.boost_by_headroom and headroom is not None and math.isfinite(headroom):
                boost = max(boost, headroom if cfg.recover_to_headroom
                            else math.sqrt(headroom))
            z = boost * self.z
            if cfg.cap_by_headroom and headroom is not None and math.isfinite(headroom):
                base = self.z if used is None else min(self.z, max(Z_MIN, used))
                z = min(z, headroom * base)
        self.z = max(Z_MIN, min(1.0, z))
        return self.z

    def clamp(self, level: float) -> float:
        """z ← min(z, level) (ours: when the learned ceiling caps the configuration, the
        shedder sets z to the level of what it installed)."""
        self.z = max(Z_MIN, min(self.z, level))
        return self.z

    def snapshot(self) -> dict[str, Any]:
        return {"z": self.z}

    @classmethod
    def from_snapshot(cls, config: ThrottleConfig, snap: dict[str, Any]) -> Throttle:
        try:
            return cls(config, z=float(snap["z"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"throttle: bad snapshot {snap!r}") from exc


@dataclass(frozen=True)
class CeilingConfig:
    """The learned ceiling (ours, :class:`Ceiling`): ``margin`` — later configurations
    cost at most this share of the remembered one; ``learn_above`` — the smallest
    utilization (share of the target) of an interval whose drops are learned;
    ``min_overflows`` — the fewest overflow episodes they must span; ``forget_change``
    — the relative input-rate change that forgets the ceiling."""

    margin: float = 0.95
    learn_above: float = 0.75
    min_overflows: int = 2
    forget_change: float = 0.2

    def __post_init__(self) -> None:
        if not 0.0 < self.margin < 1.0:
            raise ConfigError(f"margin: must be in (0, 1), got {self.margin}")
        if not self.learn_above >= 0.0:
            raise ConfigError(f"learn_above: must be >= 0, got {self.learn_above}")
        if self.min_overflows < 1:
            raise ConfigError(f"min_overflows: must be >= 1, got {self.min_overflows}")
        if not self.forget_change > 0.0:
            raise ConfigError(f"forget_change: must be > 0, got {self.forget_change}")


class Ceiling:
    """The learned ceiling (ours): the cheapest configuration that overflowed the input
    queue under the current input rate (opaque here: ``counts`` and ``share``, priced by
    the shedder's cost model at every step).

    * An interval teaches it when it had queue drops although (a) the interval before
      had none — the drops are new, so the configuration installed since caused them
      (persistent drops are overload, which the paper's cut handles; learning from
      them would only shrink the configuration every Δ); (b) the queue overflowed in at
      least ``min_overflows`` separate episodes — not a single long probe; and (c) the
      interval ran at ≥ ``learn_above`` of the utilization target — its mean cost was
      at the limit. Drops failing (b) or (c) come from single probes outlasting the
      queue, which a cheaper configuration would not cure.
    * The shedder keeps every later configuration at ≤ ``margin`` × its cost, so neither
      it nor a costlier one is installed again: the ceiling ratchets down to the first
      configuration that does not overflow, and a steady z needs no probing above it.
    * It is forgotten when the input rate moves by more than ``forget_change`` from the
      rate it was learned at (the regime changed; costs no longer compare).
    """

    def __init__(self, config: CeilingConfig) -> None:
        self.config = config
        self.counts: list[list[int]] | None = None  # None: no ceiling
        self.share = 1.0
        self.load = 0.0
        self.calm = False  # the last interval measured had no queue drops

    def should_learn(self, dropped: int, overflows: int, headroom: float) -> bool:
        """Drops after a drop-free interval, in ≥ ``min_overflows`` overflow episodes, at
        a utilization (1/h) ≥ ``learn_above``."""
        calm, self.calm = self.calm, dropped == 0
        return (dropped > 0 and calm and overflows >= self.config.min_overflows
                and headroom > 0.0 and 1.0 / headroom >= self.config.learn_above)

    def forget_if_moved(self, load: float) -> None:
        if self.counts is not None and self.load > 0.0 and (
                abs(load / self.load - 1.0) > self.config.forget_change):
            self.counts = None

    def remember(self, counts: list[list[int]], share: float, load: float) -> None:
        self.counts, self.share, self.load = counts, share, load

    def snapshot(self) -> dict[str, Any]:
        return {"counts": self.counts, "share": self.share, "load": self.load,
                "calm": self.calm}

    @classmethod
    def from_snapshot(cls, config: CeilingConfig, snap: dict[str, Any]) -> Ceiling:
        obj = cls(config)
        try:
            counts = snap["counts"]
            obj.counts = None if counts is None else [[int(v) for v in r] for r in counts]
            obj.share = float(snap["share"])
            obj.load = float(snap["load"])
            obj.calm = bool(snap.get("calm", False))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"ceiling: bad snapshot {snap!r}") from exc
        return obj


#: the share of the available time the join keeps whatever the unsheddable overhead and
#: the lag cap say (:class:`JoinShare`)
JOIN_FLOOR = 0.5
#: the virtual CPU's queue drops cut z only when its server was busy at least this
#: share of the utilization target over the interval (:func:`load_beta`)
BUSY_CUT = 0.8
#: the wall queue's drops stop cutting z once the join spends less than this share of
#: the available time (:meth:`JoinShare._queue_beta`)
QUEUE_GUARD = 0.1


#: the measured level (:func:`measured_level`) moves at most by these factors per Δ
MEASURED_RISE = 10.0
MEASURED_FALL = 0.25


def measured_level(headroom: float, spent: float | None, z_old: float, idle: bool,
                   boost: float) -> float:
    """z on the wall clock from the interval's measurement (ours, issue 28).

    The paper's cut z ← β·z with β = min(time headroom, consumed / pushed) compounds:
    where part of what fills the input queue is work z cannot shed (an arrival's
    validation and K-slack, Spark's per-row work behind the lag), the queue keeps
    dropping while the join itself has time to spare, every Δ multiplies z by the
    queue's β, and z spirals to its floor — the real job at 2× capacity went from z = 1
    to 0.025 in 14 Δ. Here the level is what the interval's time bought: ``spent`` is
    the configuration in force as a share of the full join under the step's model
    (its modelled cost C({z}) at the admitted fraction, times the share of the offered
    tuples the queue passed, over C(1)), and ``headroom`` the join's time available over
    its time spent (:class:`JoinShare`: the available time less the unsheddable
    overhead, the lag cap included), so

        z = headroom · spent.

    Both factors are measured in the same interval: a queue that drops because of
    overhead while the join has room (headroom > 1) does not cut z, and a join that
    overruns its share (headroom < 1) is cut in proportion, whatever the queue did. The
    model's scale cancels (a ratio of its own costs). z_old only bounds the move to
    [:data:`MEASURED_FALL`, :data:`MEASURED_RISE`] × z_old (one noisy interval cannot
    swing it; from the floor z reaches 1 in 3 steps). An interval without tuples
    (``spent`` None) keeps z; one whose join took no time raises it by the bound.
    ``idle`` (the queue kept up: nothing dropped, no backlog) raises z by at least
    ``boost`` (the paper's γ), so z never sits at its floor while the queue is empty."""
    if spent is None:
        level = z_old
    elif math.isfinite(headroom):
        level = headroom * spent
    else:
        level = MEASURED_RISE * z_old
    level = min(max(level, MEASURED_FALL * z_old), MEASURED_RISE * z_old)
    if idle:
        level = max(level, boost * z_old)
    return max(Z_MIN, min(1.0, level))


def load_beta(beta_q: float, headroom: float) -> float:
    """The queue's cut: the paper's β = consumed / pushed (GrubJoin §IV-A), taken only
    under load (ours). The paper's queue overflows because tuples arrive faster than the
    join serves them, so its server is busy the whole interval; a queue whose server
    was busy less than :data:`BUSY_CUT` of its target (1/h < BUSY_CUT for the measured
    headroom h) dropped bursts — a micro-batch's or a K-slack release's tuples arriving
    at once — not load. A cut there makes the join cheaper than it already has room
    for, the bursts still overflow the queue, and z ← β·z spirals down to its floor
    while the server idles (positions at 2× on the virtual CPU: z 0.46 → 0.02 at under
    10 % utilization, docs/NOTES.md). Below the threshold the drops cut nothing; the
    headroom cap still bounds the boosts (:class:`Throttle`). Used for the virtual CPU;
    the wall clock keeps :meth:`JoinShare._queue_beta`."""
    if beta_q >= 1.0 or headroom <= 0.0:
        return beta_q
    return beta_q if 1.0 / headroom >= BUSY_CUT else 1.0


class JoinShare:
    """β and headroom of the join's own share of a wall budget (ours; GrubJoin on the
    wall clock).

    The wall budget's reading compares *all* the time spent with the time available, but
    part of it z cannot shed: the micro-batch's work outside admit→charge (validation,
    K-slack, the Synchronizer, result building; :meth:`~pipeline.operators.budget.wall.
    WallBudget.observe_batch`). Counted against z, that part drives z down to its floor
    whenever it alone comes near the budget — the join then produces almost nothing, and
    z never recovers, while tail drop keeps joining what it admits. So the throttle
    measures the join against what is left for it: headroom = (available − fixed) /
    join time, where ``fixed`` is the overhead per second of stream time (decayed
    averages: a micro-batch reports its overhead at its end, lumped into one interval)
    times the interval. β (the paper's cut) = min(headroom, consumed / pushed), so the
    bounded input queue's drops still cut z as in §IV-A (down to a guard,
    :meth:`_queue_beta`); a batch that ended behind its
    input (the lag cap) caps both. The join always keeps :data:`JOIN_FLOOR` of the
    available time, lag cap included: when the unsheddable part alone comes near or
    over the budget, no shedder can keep the job from falling behind — tail drop then
    still joins what its queue admits, with its whole budget — and a join share cut
    to nothing would only stop GrubJoin's output (the real job at 2× capacity with 60 s
    windows: recall 0.000 in the steady span while the batches ran 11 s on an 8 s
    trigger). With the floor GrubJoin spends at least half of what tail drop would on
    the join, and harvests it.
    """

    def __init__(self, decay: float = 0.5) -> None:
        self.decay = decay
        self.overhead_s = 0.0  # decayed sum of overhead seconds
        self.span_s = 0.0  # decayed sum of interval seconds

    def reading(self, r: BudgetReading, interval_ms: int) -> tuple[float, float]:
        """(β, headroom) of the join's share for the interval just measured."""
        interval_s = interval_ms / 1000.0
        self.overhead_s = self.decay * self.overhead_s + r.overhead
        self.span_s = self.decay * self.span_s + interval_s
        fixed = self.overhead_s / self.span_s * interval_s if self.span_s > 0 else 0.0
        left = max(r.available - fixed, JOIN_FLOOR * r.available)
        join = max(0.0, r.spent - r.overhead)
        headroom = left / join if join > 0.0 else math.inf
        if r.lag_cap is not None:
            floor = JOIN_FLOOR * r.available / join if join > 0.0 else 0.0
            headroom = max(min(headroom, r.lag_cap), floor)
        return min(headroom, self._queue_beta(r, join)), headroom

    @staticmethod
    def _queue_beta(r: BudgetReading, join: float) -> float:
        """The queue's cut, the paper's consumed / pushed (§IV-A), with a guard against
        the spiral (ours): once the join spends less than :data:`QUEUE_GUARD` of the
        available time, drops are no longer the join's doing (the batch's overhead, or
        a whole micro-batch arriving at once, fill the queue's server) and cutting z
        further only stops the output — the real job at 3× capacity went from z = 0.64
        to the 0.001 floor in ten Δ this way. On the wall clock this guard, not
        :func:`load_beta`: with :func:`load_beta` here the sweep's sensors workload at 2×
        fell to 0.16× tail drop (docs/NOTES.md)."""
        if not r.pushed or r.consumed >= r.pushed:
            return 1.0
        beta_q = r.consumed / r.pushed
        if join <= 0.0:
            return beta_q
        return max(beta_q, min(1.0, QUEUE_GUARD * r.available / join))

    def snapshot(self) -> dict[str, Any]:
        return {"overhead_s": self.overhead_s, "span_s": self.span_s}

    @classmethod
    def from_snapshot(cls, snap: dict[str, Any] | None) -> JoinShare:
        obj = cls()
        if snap is None:
            return obj
        try:
            obj.overhead_s = float(snap["overhead_s"])
            obj.span_s = float(snap["span_s"])
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"join share: bad snapshot {snap!r}") from exc
        return obj
