"""The workloads of `harvest bench diffusion`: m streams of Poisson arrivals over
integer-ms timestamps, one value per tuple for the predicate.

* ``band``: values uniform in [0, 1), a pair joins when |v_a − v_b| ≤ ε, so the pair
  selectivity is σ ≈ 2ε (Gu et al. §6.2 fix σ between every pair of streams);
* ``equi``: integer keys drawn Zipf(s) over a domain (the skew part; hash routing
  partitions on them);
* bursty arrivals (Gu et al. §6.2, Fig. 16): the rate alternates between (1 + θ)·r and
  (1 − θ)·r every ``burst_ms`` (θ = 0: Poisson at r; θ = 1: ON/OFF). The paper writes
  ((1 ± θ)/2)·r, whose mean is r/2; here the mean stays r, so θ changes only the
  burstiness.

Tuples are numbered (``gid``) in (timestamp, stream, seq) order; a result is produced
by its member with the largest gid (the last to arrive), as in the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

Predicate = Literal["band", "equi"]


@dataclass(frozen=True)
class Workload:
    """Sorted tuples (by gid) with their stream, timestamp (ms), value and key."""

    name: str
    windows: tuple[int, ...]
    predicate: Predicate
    eps: float
    stream: npt.NDArray[np.int64]
    ts: npt.NDArray[np.int64]
    value: npt.NDArray[np.float64]
    key: npt.NDArray[np.int64]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def m(self) -> int:
        return len(self.windows)

    @property
    def n(self) -> int:
        return len(self.ts)

    @property
    def duration_ms(self) -> int:
        return int(self.ts.max() - self.ts.min()) + 1 if self.n else 0


def _arrivals(rng: np.random.Generator, rate: float, duration_ms: int, theta: float,
              burst_ms: int) -> npt.NDArray[np.int64]:
    """Arrival times (ms) at ``rate`` tuples/s, bursty with ratio ``theta``."""
    out = []
    for start in range(0, duration_ms, burst_ms):
        length = min(burst_ms, duration_ms - start)
        high = (start // burst_ms) % 2 == 0
        r = rate * (1.0 + theta if high else 1.0 - theta)
        n = int(rng.poisson(r * length / 1000.0))
        out.append(start + rng.integers(0, length, size=n))
    return np.sort(np.concatenate(out)) if out else np.zeros(0, np.int64)


def make_workload(name: str, *, windows: tuple[int, ...], rates: tuple[float, ...],
                  duration_ms: int, predicate: Predicate = "band", eps: float = 0.05,
                  zipf: float = 0.0, domain: int = 1000, theta: float = 0.0,
                  burst_ms: int = 5_000, seed: int = 0) -> Workload:
    """m = len(windows) streams at ``rates`` (tuples/s) for ``duration_ms``."""
    rng = np.random.default_rng(seed)
    parts = []
    for s, rate in enumerate(rates):
        t = _arrivals(rng, rate, duration_ms, theta, burst_ms)
        parts.append((np.full(len(t), s, np.int64), t))
    stream = np.concatenate([p[0] for p in parts])
    ts = np.concatenate([p[1] for p in parts]).astype(np.int64)
    order = np.lexsort((stream, ts))
    stream, ts = stream[order], ts[order]
    value = rng.random(len(ts))
    if zipf > 0:
        weights = 1.0 / np.arange(1, domain + 1) ** zipf
        key = rng.choice(domain, size=len(ts), p=weights / weights.sum()).astype(np.int64)
    else:
        key = rng.integers(0, domain, size=len(ts)).astype(np.int64)
    return Workload(name, tuple(int(w) for w in windows), predicate, eps, stream, ts, value,
                    key, {"rates": list(rates), "duration_ms": duration_ms, "eps": eps,
                          "zipf": zipf, "theta": theta, "burst_ms": burst_ms, "seed": seed})


def from_records(name: str, records: list[dict[str, Any]], streams: tuple[str, ...],
                 windows: tuple[int, ...], attribute: str, eps: float) -> Workload:
    """A band workload from harvest's generated records (event-time order; the engine's
    K-slack restores it, so disorder does not change the join's work)."""
    idx = {s: i for i, s in enumerate(streams)}
    stream = np.asarray([idx[str(r["stream"])] for r in records], np.int64)
    ts = np.asarray([int(r["event_time"]) for r in records], np.int64)
    value = np.asarray([float(r[attribute]) for r in records], np.float64)
    order = np.lexsort((np.arange(len(ts)), stream, ts))
    return Workload(name, windows, "band", eps, stream[order], ts[order], value[order],
                    np.zeros(len(ts), np.int64), {"records": len(records)})
