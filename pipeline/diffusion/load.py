"""The load of each route key (Gu et al., "Adaptive Load Diffusion for Multiway Windowed
Stream Joins", §2.2 Eq. 1): w_k = ω_cpu·φ_cpu + ω_memory·φ_memory + ω_bandwidth·φ_bw.

φ_R = U_R / C_R per resource. The usages are deterministic counters, never timers, so a
replay of the same input places every segment on the same key: CPU = the join's cost
units (the engine's ``stats.cost``), memory = tuples held in the windows, bandwidth =
tuples received. C_R is the key's capacity (``speeds``, 1 each by default: heterogeneous
hosts as in the paper's §6.2). Each φ is divided by its mean over the keys so the three
resources weigh on one scale.

A segment placed now is joined only later (it is placed W_max ahead, footnote 3), so a
key's CPU usage also counts the *pending* cost of the segments it was given that no
observation covers yet: an estimate (cost per ms of master stream time so far × the
segment's length), dropped once an observation reaches the segment's end.

>>> loads = KeyLoads(3)
>>> loads.least_loaded()
0
>>> loads.assign(0, start=0, end=100)
>>> loads.least_loaded()
1
>>> loads.observe(cost=[50.0, 0.0, 0.0], memory=[10, 0, 0], received=[10, 0, 0], until=100)
>>> loads.least_loaded()
1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError

F64 = npt.NDArray[np.float64]
#: the cost estimate of one ms of master segment before anything was observed
PRIOR_COST_PER_MS = 1.0


def check_weights(weights: Sequence[float]) -> tuple[float, float, float]:
    """Eq. 1's weights: three values in [0, 1] summing to 1 (ConfigError naming
    ``job.load_weights``)."""
    w = tuple(float(x) for x in weights)
    if len(w) != 3 or any(not 0.0 <= x <= 1.0 for x in w) or abs(sum(w) - 1.0) > 1e-9:
        raise ConfigError(f"job.load_weights: need [ω_cpu, ω_memory, ω_bandwidth], each in "
                          f"[0, 1], summing to 1, got {list(weights)}")
    return w[0], w[1], w[2]


class KeyLoads:
    """Usage counters of G route keys and Eq. 1 over them."""

    def __init__(self, groups: int, weights: Sequence[float] = (1.0, 0.0, 0.0),
                 speeds: Sequence[float] | None = None, recent_ms: int | None = None) -> None:
        if groups < 1:
            raise ConfigError(f"job.groups: must be >= 1, got {groups}")
        self.weights = check_weights(weights)
        sp = np.ones(groups) if speeds is None else np.asarray(speeds, dtype=np.float64)
        if sp.shape != (groups,) or np.any(sp <= 0):
            raise ConfigError(f"speeds: need {groups} capacities > 0, got {list(sp)}")
        self.speeds: F64 = sp
        self.cost: F64 = np.zeros(groups)
        self.memory: F64 = np.zeros(groups)
        self.received: F64 = np.zeros(groups)
        #: (end, key, estimated cost) of segments placed and not yet observed to their end
        self.pending: list[tuple[int, int, float]] = []
        self.observed_until: int | None = None
        self.first_seen: int | None = None
        #: None: usage since the start; else CPU and bandwidth usage of the last
        #: ``recent_ms`` of stream time only (a utilization, U/C of Eq. 1 over that span)
        self.recent_ms = recent_ms
        #: (until, cumulative cost, cumulative received) of the observations that span needs
        self.history: list[tuple[int, F64, F64]] = []

    @property
    def groups(self) -> int:
        return len(self.speeds)

    def cost_per_ms(self) -> float:
        """Cost units per ms of stream time observed so far (the pending estimate's rate,
        over all keys)."""
        if self.observed_until is None or self.first_seen is None:
            return PRIOR_COST_PER_MS
        span = self.observed_until - self.first_seen
        total = float(self.cost.sum())
        return total / span if span > 0 and total > 0 else PRIOR_COST_PER_MS

    def assign(self, key: int, start: int, end: int, share: float = 1.0) -> None:
        """A segment [start, end) was placed on ``key``: count its estimated cost
        (``share`` of the cost of that stretch of stream time)."""
        if self.first_seen is None:
            self.first_seen = start
        self.pending.append((end, key, share * self.cost_per_ms() * (end - start)))

    def charge(self, key: int, end: int, units: float) -> None:
        """Estimated cost ``units`` of work given to ``key`` now and done by stream time
        ``end`` (CTR's hop joins), counted until an observation reaches ``end``."""
        self.pending.append((end, key, float(units)))

    def observe(self, cost: npt.ArrayLike, memory: npt.ArrayLike,
                received: npt.ArrayLike, until: int) -> None:
        """The keys' cumulative usage after joining every tuple up to stream time
        ``until``; pending estimates of segments ending by then are dropped."""
        self.cost = np.asarray(cost, dtype=np.float64).copy()
        self.memory = np.asarray(memory, dtype=np.float64).copy()
        self.received = np.asarray(received, dtype=np.float64).copy()
        self.observed_until = until
        self.pending = [p for p in self.pending if p[0] > until]
        if self.recent_ms is not None:
            self.history.append((until, self.cost, self.received))
            old = [n for n, h in enumerate(self.history) if h[0] <= until - self.recent_ms]
            if old:
                del self.history[:old[-1]]

    def _usage(self) -> tuple[F64, F64]:
        """CPU and bandwidth usage: since the start, or over the last ``recent_ms``."""
        if self.recent_ms is None or self.observed_until is None:
            return self.cost, self.received
        base = [h for h in self.history if h[0] <= self.observed_until - self.recent_ms]
        if not base:
            return self.cost, self.received
        return self.cost - base[-1][1], self.received - base[-1][2]

    def values(self) -> F64:
        """w_k of every key (Eq. 1): weighted usage over capacity, each resource over
        its mean across keys."""
        pend = np.zeros(self.groups)
        for _, key, est in self.pending:
            pend[key] += est
        w = np.zeros(self.groups)
        cost, received = self._usage()
        for weight, usage in zip(self.weights, (cost + pend, self.memory, received),
                                 strict=True):
            if weight == 0.0:
                continue
            phi = usage / self.speeds
            mean = float(phi.mean())
            w += weight * (phi / mean if mean > 0 else phi)
        return w

    def least_loaded(self, among: Sequence[int] | None = None) -> int:
        """The key with the smallest w (ties: the smallest key), among ``among`` if given."""
        w = self.values()
        keys = range(self.groups) if among is None else among
        return min(keys, key=lambda k: (float(w[k]), k))

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (JSON friendly)."""
        return {"weights": list(self.weights), "speeds": self.speeds.tolist(),
                "cost": self.cost.tolist(), "memory": self.memory.tolist(),
                "received": self.received.tolist(),
                "pending": [list(p) for p in self.pending],
                "observed_until": self.observed_until, "first_seen": self.first_seen,
                **({} if self.recent_ms is None else {
                    "recent_ms": self.recent_ms,
                    "history": [[t, c.tolist(), r.tolist()] for t, c, r in self.history]})}

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> KeyLoads:
        """Inverse of :meth:`snapshot`."""
        out = cls(len(snap["speeds"]), snap["weights"], snap["speeds"], snap.get("recent_ms"))
        out.history = [(int(t), np.asarray(c, dtype=np.float64), np.asarray(r, dtype=np.float64))
                       for t, c, r in snap.get("history", [])]
        out.cost = np.asarray(snap["cost"], dtype=np.float64)
        out.memory = np.asarray(snap["memory"], dtype=np.float64)
        out.received = np.asarray(snap["received"], dtype=np.float64)
        out.pending = [(int(e), int(k), float(c)) for e, k, c in snap["pending"]]
        out.observed_until = snap["observed_until"]
        out.first_seen = snap["first_seen"]
        return out
