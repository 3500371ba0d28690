"""Admission control of a memory-bounded join (Das et al., the fast-CPU model, §2.3).

An arriving tuple is first joined with the windows (the join's probe, unchanged), then
competes for admission: while its pool holds fewer than its budget it is stored; when the
pool is full, tuples no future probe can reach (ts < ⋈T − W_j: the windows keep them
until their whole basic window expires) are dropped first, and if the pool is still full
the policy picks the victim among the residents *and the newcomer* (a refused newcomer is
simply not stored). Pools: one per stream of ⌊M/m⌋ tuples (``fixed``) or one of M shared
by all streams (``variable``). A live tuple is only evicted from a full pool, so with
budgets at least the number of live tuples every policy returns the exact join.

:class:`BoundedMemory` keeps the residents' (ts, seq, arrival order, join key) in its own
columns — at most M rows, so a victim is chosen with a few vectorized NumPy calls over
all of them — and removes the victim's row from the :class:`StreamWindow`. Subclasses
(``policies.py``) give the priorities (lowest is evicted; ties: the tuple that expires
first, then the older arrival — Das et al. §4.2.1's "later arrival gets the higher
priority" where the windows are equal) or, for RAND, the victim itself.

PROB's priority of a stream-i tuple with key v, for m streams (Das et al. give m = 2:
the probability of v on the *other* stream). A result containing x is produced when a
tuple y of some stream l ≠ i arrives near v while every other window j ∉ {i, l} holds
partners of v; it then yields Π_j N_j(v) results. Per unit of event time, with λ_l the
rate of stream l, P_l(v) the fraction of its input near v and N_j(v) ≈ n_j·P_j(v) (n_j =
tuples now stored for stream j, assuming a window holds values as its input does):

    π_i(v) = Σ_{l≠i} λ_l·P_l(v) · Π_{j∉{i,l}} n_j·P_j(v).

Over the statistics' common horizon T, λ_l·P_l(v) = C_l(v)/T (``ValueStats.mass``), so
π_i(v) ∝ Σ_{l≠i} C_l(v)·Π_{j∉{i,l}} n_j·C_j(v)/C_j. For m = 2 this is C_l(v): the
paper's p_S(r) times the partner stream's rate — the same order within a fixed pool, and
comparable across streams in a variable pool even when the rates differ. Every count gets
a prior of ``PRIOR_COUNT`` = ½ tuple: a value not seen on a partner stream yet may still
arrive (sweeping or drifting values), so no priority is exactly 0 and LIFE's and
lagprob's factors still rank such tuples; a constant shift keeps PROB's 2-way order.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import OperatorStateError
from pipeline.operators.config import MemoryConfig
from pipeline.operators.join.predicates import Predicate, SparsePredicate
from pipeline.operators.join.sparse import SparseRow
from pipeline.operators.join.windows import StreamWindow
from pipeline.operators.memory.stats import ValueStats

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
#: pseudo-count added to every C_l(v) (see the module docstring)
PRIOR_COUNT = 0.5


class Residents:
    """The stored tuples of one stream: ts, seq, arrival order and join key columns."""

    __slots__ = ("keys", "n", "oldest", "order", "seq", "sparse", "ts")

    def __init__(self, capacity: int, d: int, sparse: bool) -> None:
        cap = max(4, capacity)
        self.ts = np.zeros(cap, np.int64)
        self.seq = np.zeros(cap, np.int64)
        self.order = np.zeros(cap, np.int64)
        self.sparse = sparse
        self.keys: Any = [] if sparse else np.zeros((cap, d))
        self.n = 0
        #: a lower bound of the stored ts (exact after :meth:`keep`): purges are O(1)
        #: until some tuple can be stale
        self.oldest = np.iinfo(np.int64).max

    def add(self, ts: int, seq: int, order: int, key: Any) -> None:
        self.stage(ts, seq, order, key)
        self.n += 1
        if ts < self.oldest:
            self.oldest = ts

    def stage(self, ts: int, seq: int, order: int, key: Any) -> None:
        """Write a candidate into row n without storing it (a newcomer being ranked
        with the residents: the views [:n + 1] include it, nothing is copied)."""
        n = self.n
        if self.sparse and len(self.keys) > n:
            self.keys.pop()  # a staged key that was not admitted
        if n == self.ts.shape[0]:
            grow = 2 * n
            self.ts = np.resize(self.ts, grow)
            self.seq = np.resize(self.seq, grow)
            self.order = np.resize(self.order, grow)
            if not self.sparse:
                keys = np.zeros((grow, self.keys.shape[1]))
                keys[:n] = self.keys
                self.keys = keys
        self.ts[n], self.seq[n], self.order[n] = ts, seq, order
        if self.sparse:
            self.keys.append(key)
        else:
            self.keys[n] = key

    def unstage(self) -> None:
        """Forget a staged candidate (sparse keys live in a list)."""
        if self.sparse and len(self.keys) > self.n:
            self.keys.pop()

    def remove_at(self, i: int) -> None:
        """Drop row i (the last row takes its place)."""
        self.unstage()
        last = self.n - 1
        self.ts[i], self.seq[i], self.order[i] = self.ts[last], self.seq[last], self.order[last]
        if self.sparse:
            self.keys[i] = self.keys[last]
            self.keys.pop()
        else:
            self.keys[i] = self.keys[last]
        self.n = last

    def keep(self, mask: NDArray[np.bool_]) -> None:
        """Keep only the rows where ``mask`` (over the n rows) is True."""
        self.unstage()
        n, k = self.n, int(mask.sum())
        self.ts[:k] = self.ts[:n][mask]
        self.seq[:k] = self.seq[:n][mask]
        self.order[:k] = self.order[:n][mask]
        if self.sparse:
            self.keys = [key for key, ok in zip(self.keys, mask.tolist(), strict=True) if ok]
        else:
            self.keys[:k] = self.keys[:n][mask]
        self.n = k
        self.oldest = int(self.ts[:k].min()) if k else np.iinfo(np.int64).max

    def key_view(self, n: int | None = None) -> Any:
        """The first n keys (default: the stored ones; n + 1 includes a staged one)."""
        n = self.n if n is None else n
        return self.keys[:n]

    def snapshot(self) -> dict[str, Any]:
        n = self.n
        keys: Any = ([(k.keys.copy(), k.weights.copy()) for k in self.keys[:n]] if self.sparse
                     else self.keys[:n].copy())
        return {"ts": self.ts[:n].copy(), "seq": self.seq[:n].copy(),
                "order": self.order[:n].copy(), "keys": keys}


class BoundedMemory:
    """Residents, statistics and the admission step; subclasses rank the candidates."""

    mode: ClassVar[str] = ""
    #: whether :meth:`observe_probe` does anything (lagprob)
    needs_probes: ClassVar[bool] = False

    def __init__(self, config: MemoryConfig, windows_ms: tuple[int, ...],
                 predicate: Predicate) -> None:
        if not config.enabled:
            raise OperatorStateError("memory: a bounded memory needs a mode other than 'off'")
        self.config = config
        self.windows_ms = tuple(int(w) for w in windows_ms)
        self.m = m = len(self.windows_ms)
        self.budgets = config.budgets(m)
        self.pools: list[list[int]] = (
            [list(range(m))] if config.allocation == "variable" else [[i] for i in range(m)])
        sparse = isinstance(predicate, SparsePredicate)
        d = 0 if sparse else len(getattr(predicate, "columns", ()))
        self.res = [Residents(self.budgets[config.pool_of(i)] + 1, d, sparse)
                    for i in range(m)]
        self.stats = ValueStats(predicate, m, config.stats_window_ms)
        self.counter = 0  # arrival order of admission candidates (the tie-break)
        self.evicted = np.zeros(m, np.int64)  # residents evicted before they expired
        self.rejected = np.zeros(m, np.int64)  # newcomers refused
        self.decisions = 0  # admissions that needed a victim
        self.candidates = 0  # candidates ranked over all those decisions

    @classmethod
    def build(cls, config: MemoryConfig, windows_ms: tuple[int, ...],
              predicate: Predicate) -> BoundedMemory:
        return cls(config, windows_ms, predicate)

    # ------------------------------------------------------------------ hooks
    def observe_arrival(self, stream: int, ts: int, enc: Any) -> None:
        """Every tuple that reaches the join (before its probe): the statistics unit."""
        self.stats.observe(stream, ts, enc)

    def observe_probe(self, stream: int, ts: int, tss: I64) -> None:
        """The results (member ts per stream) of a probe of ``stream`` at ``ts``."""

    def admit(self, windows: list[StreamWindow], stream: int, ts: int, seq: int, enc: Any,
              join_time: int) -> bool:
        """Whether the (already probed) tuple is stored; evicts a resident from
        ``windows`` if it wins its place."""
        pool = self.config.pool_of(stream)
        streams = self.pools[pool]
        budget = self.budgets[pool]
        self.counter += 1
        if self.pool_size(pool) >= budget:
            self._purge(windows, streams, join_time)
        res = self.res[stream]
        if self.pool_size(pool) < budget:
            res.add(ts, seq, self.counter, enc)
            return True
        self.decisions += 1
        self.candidates += budget + 1
        victim = self.victim(pool, stream, ts, enc, join_time)
        if victim is None:
            self.rejected[stream] += 1
            return False
        s, i = victim
        vr = self.res[s]
        windows[s].remove(int(vr.ts[i]), int(vr.seq[i]))
        vr.remove_at(i)
        self.evicted[s] += 1
        res.add(ts, seq, self.counter, enc)
        return True

    def _purge(self, windows: list[StreamWindow], streams: list[int], join_time: int) -> None:
        """Drop the pool's tuples that no future probe can reach."""
        for s in streams:
            r = self.res[s]
            lo = join_time - self.windows_ms[s]
            if r.oldest >= lo:
                continue
            stale = r.ts[: r.n] < lo
            if stale.any():
                r.keep(~stale)
                windows[s].expire_rows(lo)
            else:
                r.oldest = int(r.ts[: r.n].min()) if r.n else np.iinfo(np.int64).max

    def pool_size(self, pool: int) -> int:
        return sum(self.res[s].n for s in self.pools[pool])

    # ------------------------------------------------------------------ ranking
    def victim(self, pool: int, stream: int, ts: int, enc: Any,
               join_time: int) -> tuple[int, int] | None:
        """(stream, resident row) to evict, or None to refuse the newcomer: the lowest
        priority; ties to the tuple that expires first (ts + W_s: with equal join
        probability the one with the least lifetime left has the fewest results ahead),
        then to the older arrival. With equal windows and tuples in ts order that is
        the paper's "the tuple that arrived later gets higher priority" (§4.2.1); it
        differs only for a shared pool over unequal windows or late tuples. One
        vectorized ranking per stream."""
        best: tuple[float, int, int, int, int] | None = None  # (prio, expiry, order, s, row)
        for s in self.pools[pool]:
            r = self.res[s]
            n = r.n
            if s == stream:
                r.stage(ts, -1, self.counter, enc)
                n += 1
            if n == 0:
                continue
            prio = np.asarray(self.priority(s, r.key_view(n), r.ts[:n], join_time),
                              np.float64)
            low = np.flatnonzero(prio <= prio.min())
            if low.size > 1:
                expiry = r.ts[:n][low]
                low = low[expiry <= expiry.min()]
            k = int(low[np.argmin(r.order[:n][low])]) if low.size > 1 else int(low[0])
            cand = (float(prio[k]), int(r.ts[k]) + self.windows_ms[s], int(r.order[k]), s, k)
            if best is None or cand[:3] < best[:3]:
                best = cand
        self.res[stream].unstage()
        assert best is not None
        s, k = best[3], best[4]
        return None if (s == stream and k == self.res[s].n) else (s, k)

    def priority(self, stream: int, keys: Any, tss: I64, join_time: int) -> F64:
        """Priorities of stream-``stream`` candidates (keys, ts); lowest is evicted."""
        raise NotImplementedError

    def rates(self, stream: int, keys: Any) -> F64:
        """π_stream(v) of the module docstring for each key: expected results per unit
        of event time (up to a common factor)."""
        others = [l for l in range(self.m) if l != stream]
        mass = {l: self.stats.mass(l, keys) + PRIOR_COUNT for l in others}
        if self.m == 2:
            return mass[others[0]]
        frac = {j: self.res[j].n * mass[j] / max(float(self.stats.totals[j]), 1.0)
                for j in others}
        out = np.zeros_like(mass[others[0]])
        for l in others:
            term = mass[l].copy()
            for j in others:
                if j != l:
                    term *= frac[j]
            out += term
        return out

    def expected_matches(self, stream: int, keys: Any, probe: int) -> F64:
        """Results a probe of stream ``probe`` is expected to give per stream-``stream``
        key: P_probe(v)·Π_{j∉{stream, probe}} n_j·P_j(v)."""
        out = ((self.stats.mass(probe, keys) + PRIOR_COUNT)
               / max(float(self.stats.totals[probe]), 1.0))
        for j in range(self.m):
            if j not in (stream, probe):
                out = out * (self.res[j].n * (self.stats.mass(j, keys) + PRIOR_COUNT)
                             / max(float(self.stats.totals[j]), 1.0))
        return out

    # ------------------------------------------------------------------ metrics/state
    def window_tuples(self) -> list[int]:
        return [r.n for r in self.res]

    def metrics(self) -> dict[str, Any]:
        """Counters for the operator metrics (evictions = evicted + refused)."""
        return {
            "memory_mode": self.mode,
            "memory_budget": int(self.config.max_tuples or 0),
            "window_tuples": self.window_tuples(),
            "evictions": int(self.evicted.sum() + self.rejected.sum()),
            "evicted": self.evicted.tolist(),
            "rejected": self.rejected.tolist(),
            "eviction_decisions": self.decisions,
            "eviction_candidates": self.candidates,
        }

    def snapshot(self) -> dict[str, Any]:
        """Plain NumPy/Python data (picklable)."""
        return {
            "mode": self.mode,
            "counter": self.counter,
            "residents": [r.snapshot() for r in self.res],
            "stats": self.stats.snapshot(),
            "evicted": self.evicted.copy(),
            "rejected": self.rejected.copy(),
            "decisions": self.decisions,
            "candidates": self.candidates,
            "extra": self._extra_snapshot(),
        }

    def _extra_snapshot(self) -> dict[str, Any]:
        return {}

    def _extra_restore(self, extra: dict[str, Any]) -> None:
        """Subclass state of :meth:`_extra_snapshot`."""

    @classmethod
    def from_snapshot(cls, config: MemoryConfig, windows_ms: tuple[int, ...],
                      predicate: Predicate, snap: dict[str, Any]) -> BoundedMemory:
        obj = cls(config, windows_ms, predicate)
        try:
            if snap["mode"] != cls.mode:
                raise OperatorStateError(
                    f"memory: snapshot of mode {snap['mode']!r}, config says {cls.mode!r}")
            if len(snap["residents"]) != obj.m:
                raise OperatorStateError(
                    f"memory: snapshot has {len(snap['residents'])} streams, not {obj.m}")
            obj.counter = int(snap["counter"])
            for r, rs in zip(obj.res, snap["residents"], strict=True):
                for q in range(len(rs["ts"])):
                    key = rs["keys"][q]
                    if r.sparse:
                        key = SparseRow(np.asarray(key[0], np.int64),
                                        np.asarray(key[1], np.float64))
                    r.add(int(rs["ts"][q]), int(rs["seq"][q]), int(rs["order"][q]), key)
            obj.stats.restore(snap["stats"])
            obj.evicted = np.asarray(snap["evicted"], np.int64).copy()
            obj.rejected = np.asarray(snap["rejected"], np.int64).copy()
            obj.decisions = int(snap["decisions"])
            obj.candidates = int(snap["candidates"])
            obj._extra_restore(snap["extra"])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise OperatorStateError(f"memory: cannot restore snapshot: {exc!r}") from exc
        return obj
