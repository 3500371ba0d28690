"""Statistics Manager of Ji et al. (ICDE, §IV-A and Fig. 2): per-stream delay statistics.

For every input stream S_i it keeps

* the coarse-grained delay histogram H_i ≈ f_{D_i} (§IV-A: D_i = 0 if delay = 0,
  d if delay ∈ ((d−1)·g, d·g]) over an adaptive window R_i^stat sized by ADWIN
  (:mod:`pipeline.operators.disorder.quality.adwin`) run on the raw delays;
* K_i^sync measurements — the implicit buffer of the Synchronizer (§III-B,
  Proposition 1): ^iT − min_j ^jT, taken at each arrival of S_i over the same window,
  so the estimate avg(K_i^sync) − min_j avg(K_j^sync) is over R_i^stat as in §IV-A;
* the arrival rate r_i over the last adaptation interval;
* MaxD^H, the largest delay present in the recent history (the windows), used as the
  upper bound of the K search in Alg. 3.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError, OperatorInputError, OperatorStateError
from pipeline.operators.disorder.quality.adwin import Adwin, AdwinConfig

FloatArray = npt.NDArray[np.float64]


def delay_bin(delay_ms: int, granularity_ms: int) -> int:
    """Coarse-grained delay D (Ji et al. §IV-A): 0 for delay 0, else ⌈delay / g⌉."""
    if delay_ms <= 0:
        return 0
    return -(-int(delay_ms) // granularity_ms)


class StreamDelayStats:
    """Delay histogram + K^sync samples of one stream over its ADWIN window R_i^stat."""

    def __init__(self, granularity_ms: int, adwin: AdwinConfig) -> None:
        self.granularity_ms = granularity_ms
        self._adwin = Adwin(adwin)
        self._bins: deque[int] = deque()
        self._ksync: deque[float | None] = deque()
        self._ksync_sum = 0.0
        self._ksync_n = 0
        self._counts = np.zeros(16, dtype=np.int64)
        self.arrivals = 0  # arrivals since the last roll (rate over the interval)
        # sampling (ours): arrival number c of the stream is observed iff c % stride == 0
        self.stride = 1
        self.seen = 0

    @property
    def width(self) -> int:
        """Number of delays in R_i^stat."""
        return len(self._bins)

    @property
    def changes(self) -> int:
        """How many times ADWIN shrank the window (detected a change)."""
        return self._adwin.changes

    def observe(self, delay_ms: int, ksync_ms: float | None) -> None:
        """Record one arrival's raw delay and (when all streams started) its K^sync sample
        — when it is a sampled one (:attr:`stride`); every arrival counts for the rate."""
        self.arrivals += 1
        self.seen += 1
        if (self.seen - 1) % self.stride:
            return
        b = delay_bin(delay_ms, self.granularity_ms)
        if b >= self._counts.shape[0]:
            grown = np.zeros(max(b + 1, 2 * self._counts.shape[0]), dtype=np.int64)
            grown[: self._counts.shape[0]] = self._counts
            self._counts = grown
        self._counts[b] += 1
        self._bins.append(b)
        self._ksync.append(ksync_ms)
        if ksync_ms is not None:
            self._ksync_sum += ksync_ms
            self._ksync_n += 1
        for _ in range(self._adwin.add(float(max(delay_ms, 0)))):
            self._evict()

    def observe_many(self, delays: npt.NDArray[np.int64], ksyncs: list[float | None]) -> None:
        """:meth:`observe` for each (delay, K^sync) in order — the same window, histogram
        and sums (K^sync samples are whole milliseconds, so their sum is exact in any
        order); ADWIN sees the delays one by one (:meth:`Adwin.add_many`). Only the sampled
        arrivals (:attr:`stride`) are observed, as :meth:`observe` one by one would."""
        n = delays.shape[0]
        if n == 0:
            return
        self.arrivals += n
        if self.stride > 1:
            keep = np.flatnonzero((np.arange(self.seen, self.seen + n) % self.stride) == 0)
            self.seen += n
            delays = delays[keep]
            ksyncs = [ksyncs[i] for i in keep.tolist()]
            n = delays.shape[0]
            if n == 0:
                return
        else:
            self.seen += n
        g = self.granularity_ms
        bins = np.where(delays > 0, -(-delays // g), 0)
        top = int(bins.max())
        if top >= self._counts.shape[0]:
            grown = np.zeros(max(top + 1, 2 * self._counts.shape[0]), dtype=np.int64)
            grown[: self._counts.shape[0]] = self._counts
            self._counts = grown
        self._counts[: top + 1] += np.bincount(bins, minlength=top + 1)
        self._bins.extend(bins.tolist())
        self._ksync.extend(ksyncs)
        for k in ksyncs:
            if k is not None:
                self._ksync_sum += k
                self._ksync_n += 1
        dropped = self._adwin.add_many(np.maximum(delays, 0).astype(np.float64).tolist())
        if dropped:  # :meth:`_evict` for each, at once (whole-millisecond sums: exact)
            bins_out = [self._bins.popleft() for _ in range(dropped)]
            ksync_out = [self._ksync.popleft() for _ in range(dropped)]
            self._counts -= np.bincount(bins_out, minlength=self._counts.shape[0])
            for k in ksync_out:
                if k is not None:
                    self._ksync_sum -= k
                    self._ksync_n -= 1

    def _evict(self) -> None:
        self._counts[self._bins.popleft()] -= 1
        old = self._ksync.popleft()
        if old is not None:
            self._ksync_sum -= old
            self._ksync_n -= 1

    def pdf(self) -> FloatArray:
        """f_{D_i} as a probability vector indexed by delay bin (empty window: all in order)."""
        total = int(self._counts.sum())
        if total == 0:
            return np.ones(1, dtype=np.float64)
        top = int(np.flatnonzero(self._counts)[-1])
        return self._counts[: top + 1].astype(np.float64) / total

    def max_bin(self) -> int:
        """Largest delay bin present in R_i^stat (0 when empty)."""
        nz = np.flatnonzero(self._counts)
        return int(nz[-1]) if nz.size else 0

    def ksync_mean(self) -> float | None:
        """Average K_i^sync over R_i^stat, or None before all streams have started."""
        return self._ksync_sum / self._ksync_n if self._ksync_n else None

    def snapshot(self) -> dict[str, Any]:
        """Plain-Python state."""
        return {
            "adwin": self._adwin.snapshot(),
            "bins": list(self._bins),
            "ksync": list(self._ksync),
            "arrivals": self.arrivals,
            "stride": self.stride,
            "seen": self.seen,
        }

    @classmethod
    def from_snapshot(
        cls, granularity_ms: int, adwin: AdwinConfig, snap: dict[str, Any]
    ) -> StreamDelayStats:
        """Rebuild from :meth:`snapshot` output (histogram and sums are recomputed)."""
        try:
            st = cls(granularity_ms, adwin)
            st._adwin = Adwin.from_snapshot(adwin, snap["adwin"])
            bins = [int(b) for b in snap["bins"]]
            ksync = [None if k is None else float(k) for k in snap["ksync"]]
            st.arrivals = int(snap["arrivals"])
            st.stride = int(snap.get("stride", 1))  # before sampling: every arrival
            st.seen = int(snap.get("seen", 0))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"delay stats snapshot: bad or missing field: {exc}") from exc
        if len(bins) != len(ksync):
            raise OperatorStateError(
                f"delay stats snapshot: {len(bins)} delays but {len(ksync)} K^sync samples"
            )
        st._bins = deque(bins)
        st._ksync = deque(ksync)
        if bins:
            st._counts = np.bincount(np.asarray(bins, dtype=np.int64), minlength=16)
        present = [k for k in ksync if k is not None]
        st._ksync_sum = float(sum(present))
        st._ksync_n = len(present)
        return st


@dataclass(frozen=True, slots=True)
class DelaySummary:
    """What the Buffer-Size Manager reads at an adaptation step (all per stream)."""

    pdfs: tuple[FloatArray, ...]  # f_{D_i} by delay bin
    ksync_ms: tuple[float, ...]  # estimated K_i^sync (ms), normalized so min is 0
    rates_per_s: tuple[float, ...]  # r_i over the last interval
    max_delay_ms: int  # MaxD^H
    widths: tuple[int, ...]  # |R_i^stat|


class StatisticsManager:
    """All streams' delay statistics (Ji et al. Fig. 2, "Statistics Manager")."""

    def __init__(self, n_streams: int, granularity_ms: int, adwin: AdwinConfig | None = None,
                 max_rate: float = 0.0):
        if n_streams < 2:
            raise ConfigError(f"statistics: need >= 2 streams, got {n_streams}")
        if granularity_ms <= 0:
            raise ConfigError(f"disorder.granularity_ms: must be > 0, got {granularity_ms}")
        if not max_rate >= 0.0:
            raise ConfigError(f"disorder.stat_rate: must be >= 0, got {max_rate}")
        self.granularity_ms = granularity_ms
        self.max_rate = max_rate
        self.adwin = adwin or AdwinConfig()
        self.streams = [StreamDelayStats(granularity_ms, self.adwin) for _ in range(n_streams)]
        self.local_time: list[int | None] = [None] * n_streams  # ^iT

    def observe(self, stream: int, ts: int, delay_ms: int) -> None:
        """One arrival at S_i's K-slack: raw delay = ^iT − ts after updating ^iT."""
        if not 0 <= stream < len(self.streams):
            raise OperatorInputError(
                f"statistics: stream index must be in 0..{len(self.streams) - 1}, got {stream}"
            )
        local = ts + max(delay_ms, 0)
        times = self.local_time
        prev = times[stream]
        if prev is None or local > prev:
            times[stream] = prev = local
        ksync: float | None = None
        if None not in times:
            ksync = float(prev - min(times))  # type: ignore[type-var, operator]
        self.streams[stream].observe(delay_ms, ksync)

    def observe_many(self, streams: npt.NDArray[np.int64], ts: npt.NDArray[np.int64],
                     delays: npt.NDArray[np.int64]) -> None:
        """:meth:`observe` for every arrival of a run, in order: ^iT as running maxima,
        K^sync from the per-stream local times after each arrival (None until every
        stream has started), then each stream's statistics at once."""
        m = len(self.streams)
        if streams.shape[0] == 0:
            return
        if int(streams.min()) < 0 or int(streams.max()) >= m:
            raise OperatorInputError(
                f"statistics: stream index must be in 0..{m - 1}, got {streams.tolist()}")
        floor = np.iinfo(np.int64).min
        local = ts + np.maximum(delays, 0)
        times = np.empty((m, streams.shape[0]), np.int64)
        for s in range(m):
            mine = np.where(streams == s, local, floor)
            prev = self.local_time[s]
            times[s] = np.maximum.accumulate(mine)
            if prev is not None:
                np.maximum(times[s], prev, out=times[s])
        started = times > floor
        low = times.min(axis=0)
        every = np.asarray(started.all(axis=0))
        own = times[streams, np.arange(streams.shape[0])]
        ksync = (own - low).astype(np.float64)
        for s in range(m):
            rows = np.flatnonzero(streams == s)
            if rows.shape[0] == 0:
                continue
            ks: list[float | None] = [v if ok else None for v, ok in zip(
                ksync[rows].tolist(), every[rows].tolist(), strict=True)]
            self.streams[s].observe_many(delays[rows], ks)
            self.local_time[s] = int(times[s, -1])

    def max_delay_ms(self) -> int:
        """MaxD^H: upper edge of the largest delay bin present in any R_i^stat."""
        return max(s.max_bin() for s in self.streams) * self.granularity_ms

    def ksync_estimates(self) -> tuple[float, ...]:
        """avg(K_i^sync) − min_j avg(K_j^sync) per stream (Ji et al. §IV-A); 0 when unknown."""
        means = [s.ksync_mean() for s in self.streams]
        if any(m is None for m in means):
            return tuple(0.0 for _ in means)
        known = [float(m) for m in means if m is not None]
        low = min(known)
        return tuple(m - low for m in known)

    def roll(self, interval_ms: int) -> DelaySummary:
        """Close an adaptation interval of ``interval_ms``: summarize and reset rate counters."""
        rates = tuple(s.arrivals * 1000.0 / interval_ms for s in self.streams)
        if self.max_rate > 0.0:  # sample the next interval down to ~max_rate per second
            for s, rate in zip(self.streams, rates, strict=True):
                s.stride = max(1, math.ceil(rate / self.max_rate))
        for s in self.streams:
            s.arrivals = 0
        return DelaySummary(
            pdfs=tuple(s.pdf() for s in self.streams),
            ksync_ms=self.ksync_estimates(),
            rates_per_s=rates,
            max_delay_ms=self.max_delay_ms(),
            widths=tuple(s.width for s in self.streams),
        )

    def snapshot(self) -> dict[str, Any]:
        """Plain-Python state."""
        return {
            "streams": [s.snapshot() for s in self.streams],
            "local_time": list(self.local_time),
        }

    @classmethod
    def from_snapshot(
        cls, n_streams: int, granularity_ms: int, adwin: AdwinConfig, snap: dict[str, Any],
        max_rate: float = 0.0,
    ) -> StatisticsManager:
        """Rebuild from :meth:`snapshot` output."""
        mgr = cls(n_streams, granularity_ms, adwin, max_rate)
        try:
            streams = snap["streams"]
            local = snap["local_time"]
        except (KeyError, TypeError) as exc:
            raise OperatorStateError(f"statistics snapshot: missing field {exc}") from exc
        if len(streams) != n_streams or len(local) != n_streams:
            raise OperatorStateError(
                f"statistics snapshot: has {len(streams)} streams, config has {n_streams}"
            )
        mgr.streams = [StreamDelayStats.from_snapshot(granularity_ms, adwin, s) for s in streams]
        mgr.local_time = [None if t is None else int(t) for t in local]
        return mgr
