"""Adaptive aligned tuple routing (Gu et al., "Adaptive Load Diffusion for Multiway Windowed
Stream Joins", §2.2–2.6; ARCHITECTURE §6).

:class:`AdaptiveRouter` places master segments ahead of the stream, in an
:class:`~pipeline.diffusion.epochs.EpochLog`:

* the segment [t, t + T) is placed when the stream reaches t − W_max (footnote 3), so no
  slave tuple waits for its destination: :meth:`AdaptiveRouter.route_batch` first
  extends the log to the batch's last timestamp + W_max;
* its key is the next one round robin (``segment_keys = "round-robin"``) or the least
  loaded by Eq. 1 (``"least-loaded"``, :class:`~pipeline.diffusion.load.KeyLoads` fed by
  :meth:`AdaptiveRouter.observe` with deterministic cost units);
* every ``adapt_interval_ms`` of stream time, at the next segment boundary: the master is
  re-elected by Eq. 2 on the last interval's measured rates and switched (a new epoch)
  when the overhead falls by at least ``switch_margin`` (§2.5); and T takes the next step
  of the hill climb (§2.6, :class:`~pipeline.diffusion.segment_climb.SegmentClimb`) on the
  last interval's throughput ΔN / Δ max_k busy_k (busy = cost units over capacity: the
  rate at which the most loaded key can keep up).

Every decision depends only on the input and the cost units, so a replay (or a restart
from :meth:`AdaptiveRouter.snapshot`) routes identically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError
from pipeline.diffusion.epochs import EpochLog, IntArray
from pipeline.diffusion.load import KeyLoads, check_weights
from pipeline.diffusion.routing import choose_master
from pipeline.diffusion.segment_climb import SegmentClimb
from pipeline.spec.model import Spec

SegmentKeys = Literal["round-robin", "least-loaded"]
#: T when ``segment_ms`` is not given and G = 1 (the spec's default)
DEFAULT_SEGMENT_MS = 10_000


def default_segment_ms(spec: Spec, master: int = 0) -> int:
    """T of adaptive ATR: ``[job] segment_ms`` when given; otherwise, for G > 1,
    min(10 s, W_M / (G − 1)) so that a micro-batch's master tuples spread over every key
    (only about 1 + W_M/T keys share a batch), kept within the climb's bounds."""
    job = spec.job
    if "segment_ms" in job.model_fields_set or job.groups == 1 or not job.adaptive:
        return job.segment_ms
    w_m = int(spec.join.windows[master])
    t = max(1, min(DEFAULT_SEGMENT_MS, w_m // (job.groups - 1)))
    return min(max(t, job.segment_min_ms), job.segment_max_ms) if job.adapt_segment else t


@dataclass(frozen=True)
class AdaptiveConfig:
    """The ``[job]`` keys of adaptive ATR, frozen; ``speeds`` = the keys' capacities."""

    groups: int
    windows_ms: tuple[int, ...]
    segment_ms: int = DEFAULT_SEGMENT_MS
    master: int = 0
    segment_keys: SegmentKeys = "round-robin"
    load_weights: tuple[float, float, float] = (1.0, 0.0, 0.0)
    adapt_master: bool = False
    adapt_interval_ms: int = 10_000
    switch_margin: float = 0.1
    adapt_segment: bool = False
    segment_min_ms: int = 500
    segment_max_ms: int = 60_000
    segment_step_ms: int = 1_000
    speeds: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.groups < 1:
            raise ConfigError(f"job.groups: must be >= 1, got {self.groups}")
        if self.segment_ms <= 0:
            raise ConfigError(f"job.segment_ms: must be > 0, got {self.segment_ms}")
        if self.segment_keys not in ("round-robin", "least-loaded"):
            raise ConfigError(f"job.segment_keys: expected 'round-robin' or 'least-loaded', "
                              f"got {self.segment_keys!r}")
        if self.adapt_interval_ms <= 0:
            raise ConfigError(f"job.adapt_interval_ms: must be > 0, got "
                              f"{self.adapt_interval_ms}")
        if not 0.0 <= self.switch_margin < 1.0:
            raise ConfigError(f"job.switch_margin: must be in [0, 1), got {self.switch_margin}")
        check_weights(self.load_weights)

    @classmethod
    def from_spec(cls, spec: Spec, speeds: Sequence[float] | None = None) -> AdaptiveConfig:
        """The adaptive router's config of a spec (``routing = "atr"``)."""
        job = spec.job
        master = (spec.join.streams.index(job.master_stream)
                  if job.master_stream is not None else 0)
        return cls(groups=job.groups, windows_ms=tuple(int(w) for w in spec.join.windows),
                   segment_ms=default_segment_ms(spec, master), master=master,
                   segment_keys=job.segment_keys, load_weights=job.load_weights,
                   adapt_master=job.adapt_master, adapt_interval_ms=job.adapt_interval_ms,
                   switch_margin=job.switch_margin, adapt_segment=job.adapt_segment,
                   segment_min_ms=job.segment_min_ms, segment_max_ms=job.segment_max_ms,
                   segment_step_ms=job.segment_step_ms,
                   speeds=None if speeds is None else tuple(float(s) for s in speeds))


class AdaptiveRouter:
    """Routes batches through an epoch log it extends as the stream advances."""

    def __init__(self, config: AdaptiveConfig) -> None:
        self.config = config
        self.log = EpochLog(config.windows_ms)
        self.loads = KeyLoads(config.groups, config.load_weights, config.speeds)
        self.climb = SegmentClimb(config.segment_ms, min(config.segment_min_ms,
                                                         config.segment_ms),
                                  max(config.segment_max_ms, config.segment_ms),
                                  config.segment_step_ms)
        self.segment_ms = config.segment_ms
        self.master = config.master
        self.placed = 0
        self.next_adapt: int | None = None
        #: tuples routed per stream per adapt interval (by timestamp)
        self.counts: dict[int, list[int]] = {}
        #: (until, tuples routed up to it, max_k busy_k) after each observation
        self.history: list[tuple[int, int, float]] = []
        self.routed = 0
        self.switches: list[tuple[int, int, int]] = []
        self.segment_trace: list[tuple[int, int]] = []

    # -- placement ------------------------------------------------------------------------
    def _place(self, start: int, end: int) -> int:
        g = self.config.groups
        if self.config.segment_keys == "least-loaded":
            key = self.loads.least_loaded()
        else:
            key = self.placed % g
        self.placed += 1
        self.loads.assign(key, start, end)
        return key

    def _rates(self, now: int) -> list[float] | None:
        """Tuples per ms of each stream over the last complete adapt interval before
        ``now``."""
        bucket = now // self.config.adapt_interval_ms - 1
        counts = self.counts.get(bucket)
        if counts is None:
            return None
        return [c / self.config.adapt_interval_ms for c in counts]

    def _overhead(self, master: int, rates: Sequence[float]) -> float:
        w = self.config.windows_ms
        return sum((w[i] + w[master]) * r for i, r in enumerate(rates) if i != master)

    def _adapt_master(self, boundary: int, now: int) -> None:
        rates = self._rates(now)
        if rates is None or sum(rates) == 0:
            return
        best = choose_master(self.config.windows_ms, rates)
        old, new = self._overhead(self.master, rates), self._overhead(best, rates)
        if best != self.master and new <= (1.0 - self.config.switch_margin) * old:
            lead = self._place(boundary - self.config.windows_ms[best], boundary)
            self.log.open_epoch(boundary, best, lead)
            self.switches.append((boundary, self.master, best))
            self.master = best

    def _throughput(self) -> float | None:
        """ΔN / Δ max_k busy_k between the last two observations an interval apart."""
        if len(self.history) < 2:
            return None
        until, n1, b1 = self.history[-1]
        earlier = [h for h in self.history if h[0] <= until - self.config.adapt_interval_ms]
        if not earlier:
            return None
        _, n0, b0 = earlier[-1]
        return (n1 - n0) / (b1 - b0) if b1 > b0 else None

    def _adapt(self, boundary: int, now: int) -> None:
        cfg = self.config
        if cfg.adapt_master:
            self._adapt_master(boundary, now)
        if cfg.adapt_segment:
            perf = self._throughput()
            if perf is not None:
                self.segment_ms = self.climb.next(perf)
                self.segment_trace.append((boundary, self.segment_ms))

    def extend(self, horizon: int, now: int, first: int) -> None:
        """Place segments until the log reaches past ``horizon`` (``now`` = the largest
        timestamp routed, ``first`` = where the first epoch starts if none does)."""
        cfg = self.config
        if not self.log.epochs:
            start = (first // self.segment_ms) * self.segment_ms
            self.log.open_epoch(start, self.master,
                                self._place(start - cfg.windows_ms[self.master], start))
            self.next_adapt = start + cfg.adapt_interval_ms
        while True:
            b = self.log.horizon
            assert b is not None and self.next_adapt is not None
            if b > horizon:
                return
            if b >= self.next_adapt:
                self.next_adapt = b - b % cfg.adapt_interval_ms + cfg.adapt_interval_ms
                self._adapt(b, now)
            self.log.append(b + self.segment_ms, self._place(b, b + self.segment_ms))

    # -- routing --------------------------------------------------------------------------
    def route_batch(self, streams: npt.ArrayLike, ts: npt.ArrayLike
                    ) -> tuple[IntArray, IntArray]:
        """``(row, key)`` pairs of a batch (rows ascending, keys distinct per row)."""
        s = np.asarray(streams, dtype=np.int64)
        t = np.asarray(ts, dtype=np.int64)
        if s.shape != t.shape or s.ndim != 1:
            raise ConfigError(f"route_batch: streams {s.shape} and ts {t.shape} differ")
        if len(t) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        m = len(self.config.windows_ms)
        buckets = t // self.config.adapt_interval_ms
        for b in np.unique(buckets).tolist():
            got = np.bincount(s[buckets == b], minlength=m).tolist()
            old = self.counts.setdefault(b, [0] * m)
            self.counts[b] = [x + y for x, y in zip(old, got, strict=True)]
        for b in [b for b in self.counts if b < int(buckets.max()) - 2]:
            del self.counts[b]
        now = int(t.max())
        self.extend(now + max(self.config.windows_ms), now, int(t.min()))
        self.routed += len(t)
        return self.log.route_batch(s, t)

    def observe(self, cost: npt.ArrayLike, memory: npt.ArrayLike,
                received: npt.ArrayLike, until: int) -> None:
        """The keys' cumulative usage once every tuple up to ``until`` was joined."""
        self.loads.observe(cost, memory, received, until)
        busy = float((self.loads.cost / self.loads.speeds).max())
        self.history.append((until, self.routed, busy))
        del self.history[:-64]

    def owns_result(self, route_key: int, member_ts: Sequence[int]) -> bool:
        """Whether ``route_key`` emits the result with these member timestamps."""
        return self.log.owner(member_ts) == route_key

    # -- checkpoint -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form of everything a restart needs to route as before."""
        return {"config": {**asdict(self.config)}, "log": self.log.snapshot(),
                "loads": self.loads.snapshot(), "climb": self.climb.snapshot(),
                "segment_ms": self.segment_ms, "master": self.master, "placed": self.placed,
                "next_adapt": self.next_adapt,
                "counts": {str(k): v for k, v in self.counts.items()},
                "history": [list(h) for h in self.history], "routed": self.routed,
                "switches": [list(x) for x in self.switches]}

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> AdaptiveRouter:
        """Inverse of :meth:`snapshot`."""
        c = dict(snap["config"])
        for key in ("windows_ms", "load_weights", "speeds"):
            if c.get(key) is not None:
                c[key] = tuple(c[key])
        out = cls(AdaptiveConfig(**c))
        out.log = EpochLog.from_snapshot(snap["log"])
        out.loads = KeyLoads.from_snapshot(snap["loads"])
        out.climb = SegmentClimb.from_snapshot(snap["climb"])
        out.segment_ms, out.master = int(snap["segment_ms"]), int(snap["master"])
        out.placed, out.next_adapt = int(snap["placed"]), snap["next_adapt"]
        out.counts = {int(k): list(v) for k, v in snap["counts"].items()}
        out.history = [(int(a), int(b), float(c)) for a, b, c in snap["history"]]
        out.routed = int(snap["routed"])
        out.switches = [(int(a), int(b), int(c)) for a, b, c in snap.get("switches", [])]
        return out
