"""The per-tuple random choices of GrubJoin's plans, drawn for a whole run at once (ours).

Each probing tuple of direction i gets, in this order (GrubJoin §V-B and ours):

1. with probability ω (``shred_rate``) a window-shredding plan (:func:`~pipeline.
   operators.shedding.grubjoin.plans.shred_plan`): a random order of the other streams,
   ⌈z·n⌉ evenly spread logical basic windows of the first one from a random offset —
   below z = 1/n kept only on a z·n share of the sampled tuples, so its cost respects z;
2. else, under the probe-share fallback (q < 1, :func:`~pipeline.operators.shedding.
   grubjoin.share.probe_share`), with probability 1 − q a plan that scans no window
   (the tuple is only inserted);
3. else the harvesting plan in force for direction i.

Every tuple consumes the same number of uniform doubles — 1 for (1), plus m + 1 when
ω > 0 (m − 1 sort keys for the order, one for the offset, one for the z·n share), plus
1 when q < 1 — whether or not it uses them, so a run of n tuples is one
``rng.random((n, k))`` and the tuple-by-tuple path (one row per call) reads the same
stream of draws: both give the same plans for the same seed. With ω = 0 and q = 1 this
is the one draw per tuple of the paper's sampling step.

Plans are shared objects (one per distinct direction, order, offset and window count),
so the batched join groups the probes of a run by a handful of plans.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.plan import ProbePlan

__all__ = ["PlanDraws", "draws_per_tuple"]

Fractions = tuple[float, ...]


def draws_per_tuple(m: int, shred_rate: float, sampling: bool) -> int:
    """Uniform doubles each tuple consumes (module docstring)."""
    return 1 + (m + 1 if shred_rate > 0 else 0) + (1 if sampling else 0)


@dataclass
class PlanDraws:
    """Plan choice from one row of draws per tuple (module docstring); caches the plans
    issued since :meth:`reset` (the z they depend on is fixed until then)."""

    n_windows: tuple[int, ...]
    #: (direction, order, windows of the first partner; () = all) → shredding plan and
    #: the window share per position
    _shred: dict[tuple[int, tuple[int, ...], tuple[int, ...]],
                 tuple[ProbePlan, Fractions]] = field(
        default_factory=dict)
    _skip: dict[int, ProbePlan] = field(default_factory=dict)
    #: window share per position of the shredding plans issued, by their order
    fractions: dict[tuple[int, ...], Fractions] = field(default_factory=dict)

    def reset(self) -> None:
        """Forget the cached plans (a new configuration or z is in force)."""
        self._shred.clear()
        self._skip.clear()

    def choose(self, streams: NDArray[np.int64], u: NDArray[np.float64],
               current: tuple[ProbePlan, ...] | None, z: float, shred_rate: float,
               share: float) -> list[ProbePlan | None]:
        """The plan of each tuple of direction ``streams[t]`` from its draws ``u[t]``."""
        m = len(self.n_windows)
        plans: list[ProbePlan | None] = (
            [None] * streams.shape[0] if current is None
            else [current[s] for s in streams.tolist()])
        taken = np.zeros(streams.shape[0], dtype=bool)
        if shred_rate > 0:
            taken = self._shredding(streams, u, z, shred_rate, plans)
        if current is not None and share < 1.0:
            skip = np.flatnonzero(~taken & (u[:, -1] >= share))
            for t, s in zip(skip.tolist(), streams[skip].tolist(), strict=True):
                plans[t] = self._skip_plan(s, current[s], m)
        return plans

    def _shredding(self, streams: NDArray[np.int64], u: NDArray[np.float64], z: float,
                   shred_rate: float, plans: list[ProbePlan | None]) -> NDArray[np.bool_]:
        """Put the shredding plans in ``plans``; the mask of tuples that took one."""
        m = len(self.n_windows)
        n_arr = np.asarray(self.n_windows, dtype=np.int64)
        others = np.array([[j for j in range(m) if j != i] for i in range(m)], np.int64)
        sampled = np.flatnonzero(u[:, 0] < shred_rate)
        taken = np.zeros(streams.shape[0], dtype=bool)
        if sampled.shape[0] == 0:
            return taken
        rows = u[sampled]
        dirs = streams[sampled]
        orders = others[dirs[:, None], np.argsort(rows[:, 1:m], axis=1, kind="stable")]
        n_first = n_arr[orders[:, 0]]
        offsets = np.minimum((rows[:, m] * n_first).astype(np.int64), n_first - 1)
        keep_share = z * n_first
        keep = (keep_share >= 1.0) | (rows[:, m + 1] < keep_share)
        for t, s, order, off in zip(sampled[keep].tolist(), dirs[keep].tolist(),
                                    orders[keep].tolist(), offsets[keep].tolist(),
                                    strict=True):
            plan, fractions = self._shred_plan(s, tuple(order), off, z)
            plans[t] = plan
            self.fractions[plan.order or ()] = fractions
        taken[sampled[keep]] = True
        return taken

    def _shred_plan(self, direction: int, order: tuple[int, ...], offset: int,
                    z: float) -> tuple[ProbePlan, Fractions]:
        """Window shredding (GrubJoin §V-B): ⌈z·n⌉ windows of the first partner spread
        evenly from ``offset``, the rest full (as ``plans.shred_plan``). Plans are keyed
        by the windows they scan, not by the offset that chose them: offsets that pick
        the same windows (all of them at z = 1; every n/count-th at count | n) share
        one plan, so the batched join probes them as one group."""
        n_first = self.n_windows[order[0]]
        count = min(n_first, max(1, math.ceil(z * n_first)))
        first = () if count == n_first else tuple(sorted(
            {(offset + (v * n_first) // count) % n_first for v in range(count)}))
        key = (direction, order, first)
        got = self._shred.get(key)
        if got is None:
            windows: tuple[tuple[int, ...] | None, ...] = (
                (None if count == n_first else first),) + (None,) * (len(order) - 1)
            plan = ProbePlan(order=order, windows=windows, feedback=True)
            fractions = (count / n_first,) + (1.0,) * (len(order) - 1)
            got = self._shred[key] = (plan, fractions)
        return got

    def _skip_plan(self, direction: int, current: ProbePlan, m: int) -> ProbePlan:
        plan = self._skip.get(direction)
        if plan is None or plan.order != current.order:
            plan = self._skip[direction] = ProbePlan(order=current.order,
                                                     windows=((),) * (m - 1))
        return plan
