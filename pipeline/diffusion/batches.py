"""Adaptive ATR decided per micro-batch (Gu et al., "Adaptive Load Diffusion for Multiway
Windowed Stream Joins", §2.2–2.6; ARCHITECTURE §6): what a micro-batch routes under, and
how the next one's follows from it and from what the batch observed.

A micro-batch is routed by many tasks at once and joined by others, so every decision
they use must be the same in all of them and again when the batch is replayed.
:class:`BatchRouting` is that decision state; micro-batch b routes under state(b), and

    state(b + 1) = state(b).step(what batch b's routing tasks and instances observed)

is a pure function (:meth:`BatchRouting.step`). A task *extends* its copy of state(b)
as far as its own tuples need (:meth:`AdaptiveRouter.extend`); every decision taken while
extending reads state(b) only (the rates, the loads and ``now`` of the batches before),
so two tasks extending to different horizons place the same segments up to the shorter
one, and :meth:`step` extends to the farthest horizon any task reached before it adds
batch b's observations. Each tuple is routed under:

* the **base** epoch, static ATR (T₀ = the first segment length, M₀ = the first master,
  segment s on key s mod G), for every tuple before ``base_end`` — the whole stream until
  a micro-batch has routed input, and the first epoch of the log starts at ``base_end``,
  a segment boundary past everything that batch routed plus W_max (a task cannot know
  where the others' tuples start, so the log cannot start before the first batch ends);
* the routing **epoch log** of the :class:`AdaptiveRouter` (master switches, T climb,
  least-loaded keys), for every epoch covering the tuple (:mod:`pipeline.diffusion.epochs`);
* static ATR again for a tuple more than ``ahead_ms`` ahead of ``now`` (a far-future
  tuple, which the validator rejects, must not make every task place segments up to it),
  and for a tuple older than what the log still holds (a late one, rejected too).

The base is simply one more epoch of the log (its segments the T₀ grid, ending at
``base_end``), so a result is owned by the epoch of its largest member timestamp as in
:meth:`EpochLog.owner`. Loads (Eq. 1) are the instances' cost units, window tuples and
tuples received at the end of each batch; rates (Eq. 2) are counted by the routing tasks.

>>> cfg = BatchConfig(AdaptiveConfig(groups=2, windows_ms=(10, 10), segment_ms=20),
...                   ahead_ms=1000, retain_ms=100)
>>> s0 = BatchRouting.initial(cfg)
>>> s0.route([0, 1], [5, 25])[1].tolist()     # static ATR: segment 0 on key 0, 1 on 1
[0, 0, 1]
>>> s1 = s0.step([TaskObservation({0: [1, 1]}, 2, 25, 15)], {})
>>> s1.base_end, s1.router is not None
(40, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError
from pipeline.diffusion.adaptive import AdaptiveConfig, AdaptiveRouter
from pipeline.diffusion.epochs import IntArray
from pipeline.diffusion.routing import Router, RouterConfig
from pipeline.spec.model import Spec


@dataclass(frozen=True)
class BatchConfig:
    """The adaptive router's config, how far ahead of ``now`` a tuple is still routed by
    the log (``ahead_ms``) and how far behind it the log is kept (``retain_ms``)."""

    adaptive: AdaptiveConfig
    ahead_ms: int
    retain_ms: int

    def __post_init__(self) -> None:
        if self.ahead_ms <= 0 or self.retain_ms < 0:
            raise ConfigError(f"adaptive routing: ahead_ms {self.ahead_ms} must be > 0 and "
                              f"retain_ms {self.retain_ms} >= 0")

    @classmethod
    def from_spec(cls, spec: Spec) -> BatchConfig:
        """``ahead_ms`` = max(10 ``[disorder] max_future_ms``, 100 triggers, 10 W_max):
        tuples that far ahead are rejected as far-future anyway, and a micro-batch rarely
        spans that much stream time; ``retain_ms`` = the late bound (older tuples are
        rejected)."""
        w_max = max(int(w) for w in spec.join.windows)
        ahead = max(10 * spec.disorder.max_future_ms, 100 * spec.job.trigger_ms, 10 * w_max)
        return cls(AdaptiveConfig.from_spec(spec), ahead_ms=int(ahead),
                   retain_ms=int(spec.disorder.late_bound_ms(spec.join.windows)))


@dataclass
class TaskObservation:
    """What one routing task of a micro-batch saw of its valid tuples: tuples per stream
    per adapt interval (bucket = ts // adapt_interval_ms), how many, the largest timestamp
    routed by the log, their median, and how far it extended the log (None: not at all)."""

    counts: dict[int, list[int]]
    routed: int
    max_ts: int | None
    median_ts: int | None
    horizon: int | None = None

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (JSON)."""
        return {**asdict(self), "counts": {str(k): v for k, v in self.counts.items()}}

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> TaskObservation:
        """Inverse of :meth:`snapshot`."""
        return cls({int(k): [int(x) for x in v] for k, v in snap["counts"].items()},
                   int(snap["routed"]), snap["max_ts"], snap["median_ts"], snap["horizon"])


@dataclass
class BatchRouting:
    """The routing state one micro-batch routes (and its instances own results) under."""

    config: BatchConfig
    router: AdaptiveRouter | None = None
    base_end: int | None = None
    now: int | None = None
    #: each key's last observed [cost units, window tuples, tuples received]
    usage: list[list[float]] = field(default_factory=list)
    #: each key's last reported join time (None: never reported); no result is formed
    #: below it any more, so the log is pruned behind the smallest
    joined: list[int | None] = field(default_factory=list)

    @classmethod
    def initial(cls, config: BatchConfig) -> BatchRouting:
        """The state of the first micro-batch: static ATR only."""
        g = config.adaptive.groups
        return cls(config, usage=[[0.0, 0.0, 0.0] for _ in range(g)], joined=[None] * g)

    @property
    def static(self) -> Router:
        """The base epoch's routing: static ATR with T₀ and M₀."""
        a = self.config.adaptive
        return Router(RouterConfig("atr", a.groups, a.windows_ms, a.segment_ms, a.master))

    @property
    def cap(self) -> int | None:
        """The largest timestamp the log routes in this batch (None: no limit)."""
        return None if self.now is None else self.now + self.config.ahead_ms

    def _in_log(self, ts: IntArray) -> npt.NDArray[np.bool_]:
        """Which timestamps the log routes (base_end − W_max on, at most :attr:`cap`)."""
        if self.router is None or self.base_end is None:
            return np.zeros(len(ts), dtype=bool)
        ok = ts >= self.base_end - max(self.config.adaptive.windows_ms)
        cap = self.cap
        return ok if cap is None else ok & (ts <= cap)

    def extend_for(self, ts: npt.ArrayLike) -> int | None:
        """Extend the log to cover the tuples at ``ts`` it routes; the new horizon."""
        t = np.asarray(ts, dtype=np.int64)
        inside = t[self._in_log(t)]
        if self.router is None or not len(inside):
            return None
        assert self.base_end is not None
        w_max = max(self.config.adaptive.windows_ms)
        now = self.now if self.now is not None else self.base_end
        self.router.extend(int(inside.max()) + w_max, now, self.base_end)
        return self.router.log.horizon

    # -- routing ------------------------------------------------------------------------
    def route(self, streams: npt.ArrayLike, ts: npt.ArrayLike) -> tuple[IntArray, IntArray]:
        """``(row, key)`` pairs of a batch (rows ascending, each row's keys distinct and
        ascending), the log extended first as far as the rows need."""
        s = np.asarray(streams, dtype=np.int64)
        t = np.asarray(ts, dtype=np.int64)
        if s.shape != t.shape or s.ndim != 1:
            raise ConfigError(f"route: streams {s.shape} and ts {t.shape} differ")
        self.extend_for(t)
        pairs: set[tuple[int, int]] = set()
        in_log = self._in_log(t)
        if in_log.any():
            assert self.router is not None
            idx = np.flatnonzero(in_log)
            rows, keys = self.router.log.route_batch(s[idx], t[idx])
            pairs.update(zip(idx[rows].tolist(), keys.tolist(), strict=True))
        cap = self.cap
        base = t < self.base_end if self.base_end is not None else np.ones(len(t), bool)
        if cap is not None:
            base |= t > cap
        covered = np.zeros(len(t), dtype=bool)
        for r, _ in pairs:
            covered[r] = True
        base |= ~covered  # older than the log holds: static, so it reaches a validator
        idx = np.flatnonzero(base)
        if len(idx):
            rows, keys = self.static.route_batch(s[idx], t[idx])
            pairs.update(zip(idx[rows].tolist(), keys.tolist(), strict=True))
        out = np.asarray(sorted(pairs), dtype=np.int64).reshape(-1, 2)
        return out[:, 0], out[:, 1]

    def owners(self, member_ts: npt.ArrayLike) -> IntArray:
        """The key that emits each result (rows of member timestamps in stream order):
        static ATR's owner below ``base_end``, past :attr:`cap` or before the kept log;
        else :meth:`EpochLog.owners`."""
        arr = np.asarray(member_ts, dtype=np.int64)
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        a = self.config.adaptive
        out = (arr[:, a.master] // a.segment_ms) % a.groups
        if self.router is None or self.base_end is None:
            return out
        t_max = arr.max(axis=1)
        self.extend_for(t_max)
        log = self.router.log
        first = log.epochs[0].start if log.epochs else self.base_end
        use = (t_max >= max(self.base_end, first))
        cap = self.cap
        if cap is not None:
            use &= t_max <= cap
        if use.any():
            out[use] = log.owners(arr[use])
        return out

    def dead_letter_key(self, stream: int, ts: int) -> int:
        """The one key that writes the dead letter of a rejected tuple: its lowest."""
        _, keys = self.route([stream], [ts])
        return int(keys.min())

    # -- the next micro-batch -------------------------------------------------------------
    def step(self, tasks: Sequence[TaskObservation],
             keys: Mapping[int, Sequence[float]]) -> BatchRouting:
        """state(b + 1) from state(b), batch b's routing tasks and its instances' usage
        (key → [cost units, window tuples, tuples received, join time]; a key absent kept
        its last)."""
        nxt = BatchRouting.from_snapshot(self.snapshot())
        for k, u in keys.items():
            nxt.usage[int(k)] = [float(x) for x in u[:3]]
            if len(u) > 3:
                nxt.joined[int(k)] = int(u[3])
        seen = [t for t in tasks if t.routed > 0]
        if not seen:
            if keys:
                nxt._observe()
            return nxt
        new_now = max(int(t.median_ts) for t in seen if t.median_ts is not None)
        new_now = new_now if self.now is None else max(self.now, new_now)
        if nxt.router is None:
            top = max(int(t.max_ts) for t in seen if t.max_ts is not None)
            nxt._open(top)
        else:
            horizons = [int(t.horizon) for t in seen if t.horizon is not None]
            if horizons:  # the farthest any task placed (they agree up to it)
                nxt.router.extend(max(horizons) - 1, self.now if self.now is not None
                                  else nxt.base_end or 0, nxt.base_end or 0)
        assert nxt.router is not None
        nxt._count(seen)
        nxt.now = new_now
        nxt._observe()
        nxt._prune()
        return nxt

    def _prune(self) -> None:
        """Forget the log behind the keys' smallest join time (no result can form below
        it: Alg. 2 probes only with a tuple at or past the join time) and ``retain_ms``
        behind ``now``, whichever is earlier; a late tuple routed by what is left (or by
        static ATR below it) reaches a validator that rejects it."""
        reported = [j for j in self.joined if j is not None]
        if self.router is None or self.now is None or not reported:
            return
        self.router.log.prune(min(min(reported), self.now - self.config.retain_ms))

    def _open(self, top: int) -> None:
        """The first epoch of the log at the T₀ boundary past ``top`` + W_max."""
        a = self.config.adaptive
        w_max = max(a.windows_ms)
        self.base_end = ((top + w_max) // a.segment_ms + 1) * a.segment_ms
        self.router = AdaptiveRouter(a)
        self.router.extend(self.base_end, top, self.base_end)

    def _count(self, seen: Sequence[TaskObservation]) -> None:
        """Add the tasks' tuples per stream and interval to the router's rate counts."""
        router = self.router
        assert router is not None
        m = len(self.config.adaptive.windows_ms)
        for task in seen:
            for b, got in task.counts.items():
                old = router.counts.setdefault(int(b), [0] * m)
                router.counts[int(b)] = [x + int(y) for x, y in zip(old, got, strict=True)]
            router.routed += task.routed
        last = max(router.counts)
        for b in [b for b in router.counts if b < last - 2]:
            del router.counts[b]

    def _observe(self) -> None:
        """Hand the keys' usage to the router (Eq. 1 loads, the T climb's throughput)."""
        if self.router is None or self.now is None:
            return
        u = np.asarray(self.usage, dtype=np.float64)
        self.router.observe(u[:, 0], u[:, 1], u[:, 2], self.now)

    # -- checkpoint -----------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (JSON)."""
        cfg = self.config
        return {"config": {"adaptive": asdict(cfg.adaptive), "ahead_ms": cfg.ahead_ms,
                           "retain_ms": cfg.retain_ms},
                "router": None if self.router is None else self.router.snapshot(),
                "base_end": self.base_end, "now": self.now,
                "usage": [list(u) for u in self.usage], "joined": list(self.joined)}

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> BatchRouting:
        """Inverse of :meth:`snapshot`."""
        c = dict(snap["config"]["adaptive"])
        for key in ("windows_ms", "load_weights", "speeds"):
            if c.get(key) is not None:
                c[key] = tuple(c[key])
        cfg = BatchConfig(AdaptiveConfig(**c), int(snap["config"]["ahead_ms"]),
                          int(snap["config"]["retain_ms"]))
        router = (None if snap["router"] is None
                  else AdaptiveRouter.from_snapshot(snap["router"]))
        return cls(cfg, router, snap["base_end"], snap["now"],
                   [[float(x) for x in u] for u in snap["usage"]],
                   [None if j is None else int(j) for j in snap["joined"]])


def observe_task(config: BatchConfig, state: BatchRouting, streams: npt.ArrayLike,
                 ts: npt.ArrayLike, horizon: int | None) -> TaskObservation:
    """A routing task's :class:`TaskObservation` of its valid tuples."""
    s = np.asarray(streams, dtype=np.int64)
    t = np.asarray(ts, dtype=np.int64)
    if not len(t):
        return TaskObservation({}, 0, None, None, horizon)
    m = len(config.adaptive.windows_ms)
    buckets = t // config.adaptive.adapt_interval_ms
    counts = {int(b): np.bincount(s[buckets == b], minlength=m).tolist()
              for b in np.unique(buckets).tolist()}
    cap = state.cap
    kept = t if cap is None else t[t <= cap]
    return TaskObservation(counts, len(t), int(kept.max()) if len(kept) else None,
                           int(np.median(t)), horizon)
