"""Load diffusion: which operator instance (route key) sees which tuple (ARCHITECTURE §6).

Two routings, chosen by ``[job] routing`` in the spec:

``hash`` (equi-joins only)
    route key = stable_hash(join key) mod G, no replication. All members of an
    equi-join result share the key value, so they meet in one instance.

``atr`` (any predicate) — Gu, Yu, Wang, "Adaptive Load Diffusion for Multiway
Windowed Stream Joins", §2 (aligned tuple routing):
    the master stream M is cut into segments ``[s·T, (s+1)·T)`` (``T = [job]
    segment_ms``); segment ``s`` goes to route key ``s mod G``. A slave tuple of
    stream i with timestamp τ goes to every segment whose slave range
    ``[s·T − W_i, (s+1)·T + W_M]`` (the paper's ``S_i[t − W_i, t + T + W_M]``) holds τ,
    i.e. to the segments ``s_lo ≤ s ≤ s_hi`` with ``s_lo = ⌊(τ − W_M)/T⌋`` and
    ``s_hi = ⌊(τ + W_i)/T⌋`` (:meth:`Router.atr_segment_range`). With our window
    condition (ARCHITECTURE §4) a member e_i of a result whose master tuple is m satisfies
    ``m.ts − W_i ≤ e_i.ts ≤ m.ts + W_M``, so every member of that result reaches the
    instance owning m's segment.

Exactly-once contract (who filters). Every result contains exactly one master
tuple and a master tuple is routed to exactly one key, so a result is produced by
the one instance holding its master member and by no other. The processor running
one instance (``pipeline/spark`` JoinProcessor, or an in-process simulation) must
emit a result only if ``router.owns(route_key, master_ts)`` holds for the result's
master-stream member (:meth:`Router.owns_result`). With the routing below this
filter never removes anything — it is the guard that turns a routing bug into
missing results rather than duplicates, and the property tests in
``tests/unit/diffusion/test_routing.py`` check both that no result is missed or duplicated
and that the filter removes nothing. Hash routing: ``owns`` is true iff the key
value hashes to the instance.

Plain Python + NumPy (no Spark, no Kafka): the definition. ``pipeline.spark.routing``
computes the same (row, key) pairs as Spark SQL expressions and explodes them before
``groupBy(route_key)``; ``tests/integration/test_spark_routing.py`` checks the two agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError
from pipeline.spec.model import Spec

RoutingMode = Literal["hash", "atr"]
IntArray = npt.NDArray[np.int64]

_MASK64 = (1 << 64) - 1


def _splitmix64(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64 finaliser (Steele et al.), vectorized; wraps modulo 2**64."""
    with np.errstate(over="ignore"):
        z = values + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _hash_text(text: str) -> int:
    """64-bit hash of a string (first 8 bytes of BLAKE2b), stable across processes."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def stable_hash_array(keys: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """Stable 64-bit hashes of join-key values (unlike Python's salted ``hash``).

    Integers (and floats with an integral value, so 3 and 3.0 hash alike) go through
    SplitMix64 of their two's-complement bit pattern; other floats through SplitMix64
    of their IEEE-754 bits; strings/bytes/objects through BLAKE2b of ``str(value)``.
    """
    arr = np.asarray(keys)
    if arr.dtype.kind in "iub":
        return _splitmix64(arr.astype(np.int64).view(np.uint64))
    if arr.dtype.kind == "f":
        f = arr.astype(np.float64)
        integral = np.isfinite(f) & (np.floor(f) == f) & (np.abs(f) < 2.0**63)
        bits = f.view(np.uint64).copy()
        bits[integral] = f[integral].astype(np.int64).view(np.uint64)
        return _splitmix64(bits)
    flat = arr.ravel()
    uniq, inverse = np.unique(flat.astype(str), return_inverse=True)
    hashes = np.fromiter((_hash_text(str(u)) for u in uniq), dtype=np.uint64, count=len(uniq))
    return hashes[inverse].reshape(arr.shape)


def stable_hash(value: Any) -> int:
    """Scalar version of :func:`stable_hash_array` (same value for the same key)."""
    if isinstance(value, bool | int | np.integer):
        return int(stable_hash_array(np.array([int(value)], dtype=np.int64))[0])
    if isinstance(value, float | np.floating):
        return int(stable_hash_array(np.array([float(value)], dtype=np.float64))[0])
    return _hash_text(str(value)) & _MASK64


def choose_master(windows: Sequence[int], rates: Sequence[float] | None = None) -> int:
    """The master stream minimizing Gu et al. Eq. 2, O_ATR = Σ_{i≠M} (W_i + W_M)/T · r_i.

    T is common to all candidates so it drops out. Without rates, stream 0.
    """
    if rates is None:
        return 0
    if len(rates) != len(windows):
        raise ConfigError(f"rates: {len(rates)} rates for {len(windows)} streams")
    if any(r < 0 for r in rates):
        raise ConfigError(f"rates: every rate must be >= 0, got {list(rates)}")
    costs = [
        sum((windows[i] + windows[m]) * rates[i] for i in range(len(windows)) if i != m)
        for m in range(len(windows))
    ]
    return int(np.argmin(costs))


@dataclass(frozen=True, slots=True)
class RouterConfig:
    """Frozen routing parameters (``[job] routing/groups/segment_ms/master_stream``)."""

    mode: RoutingMode
    groups: int
    windows_ms: tuple[int, ...]
    segment_ms: int = 10_000
    master: int = 0
    key_attribute: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("hash", "atr"):
            raise ConfigError(f"job.routing: expected 'hash' or 'atr', got {self.mode!r}")
        if self.groups < 1:
            raise ConfigError(f"job.groups: must be >= 1, got {self.groups}")
        if self.segment_ms <= 0:
            raise ConfigError(f"job.segment_ms: must be > 0, got {self.segment_ms}")
        if len(self.windows_ms) < 2 or any(w <= 0 for w in self.windows_ms):
            raise ConfigError(f"join.windows_ms: need >= 2 windows > 0, got {self.windows_ms}")
        if not 0 <= self.master < len(self.windows_ms):
            raise ConfigError(f"job.master_stream: index {self.master} out of range")
        if self.mode == "hash" and not self.key_attribute:
            raise ConfigError("join.attribute: hash routing needs the equi-join key attribute")

    @classmethod
    def from_spec(cls, spec: Spec, rates: Sequence[float] | None = None) -> RouterConfig:
        """Build from a job spec; the master is ``[job] master_stream``, else Eq. 2 on
        ``rates`` when given, else the first stream."""
        windows = spec.join.windows
        mode = spec.job.routing
        if mode == "ctr":
            raise ConfigError("job.routing: 'ctr' (coordinated tuple routing) runs in "
                              "`harvest bench diffusion`'s virtual cluster only; the Spark "
                              "job routes 'hash' or 'atr' (docs/NOTES.md, 'CTR in Spark')")
        if spec.job.master_stream is not None:
            master = spec.join.streams.index(spec.job.master_stream)
        else:
            master = choose_master(windows, rates)
        return cls(
            mode=mode,
            groups=spec.job.groups,
            windows_ms=tuple(int(w) for w in windows),
            segment_ms=spec.job.segment_ms,
            master=master,
            key_attribute=spec.join.attribute if mode == "hash" else None,
        )

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (JSON/pickle friendly)."""
        return {
            "mode": self.mode,
            "groups": self.groups,
            "windows_ms": list(self.windows_ms),
            "segment_ms": self.segment_ms,
            "master": self.master,
            "key_attribute": self.key_attribute,
        }

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> RouterConfig:
        """Inverse of :meth:`snapshot`."""
        return cls(
            mode=snap["mode"],
            groups=int(snap["groups"]),
            windows_ms=tuple(int(w) for w in snap["windows_ms"]),
            segment_ms=int(snap["segment_ms"]),
            master=int(snap["master"]),
            key_attribute=snap.get("key_attribute"),
        )

    def replication_overhead(self, rates: Sequence[float]) -> float:
        """Gu et al. Eq. 2: extra tuple copies per ms, Σ_{i≠M} (W_i + W_M)/T · r_i
        (rates in tuples/ms)."""
        if self.mode == "hash":
            return 0.0
        wm = self.windows_ms[self.master]
        return sum(
            (w + wm) / self.segment_ms * r
            for i, (w, r) in enumerate(zip(self.windows_ms, rates, strict=True))
            if i != self.master
        )


class Router:
    """Stateless router over a :class:`RouterConfig`: scalar and batch route keys."""

    def __init__(self, config: RouterConfig) -> None:
        self.config = config

    # -- ATR (Gu et al. §2.2-2.3) ---------------------------------------------------
    def segment_of(self, master_ts: int) -> int:
        """Master segment index ``⌊ts/T⌋`` (segments are half-open ``[s·T, (s+1)·T)``)."""
        return master_ts // self.config.segment_ms

    def atr_segment_range(self, stream: int, ts: int) -> tuple[int, int]:
        """Inclusive range of master segments a tuple of ``stream`` at ``ts`` belongs to.

        Master: its own segment. Slave i: ``⌊(τ − W_M)/T⌋ .. ⌊(τ + W_i)/T⌋``, the
        segments s with ``s·T − W_i ≤ τ < (s+1)·T + W_M`` (Gu et al. §2.3).
        """
        cfg = self.config
        if stream == cfg.master:
            s = ts // cfg.segment_ms
            return s, s
        lo = (ts - cfg.windows_ms[cfg.master]) // cfg.segment_ms
        hi = (ts + cfg.windows_ms[stream]) // cfg.segment_ms
        return lo, hi

    # -- scalar API -------------------------------------------------------------------
    def route_keys(self, stream: int, ts: int, attrs: Mapping[str, Any]) -> list[int]:
        """The route keys (0..G−1, sorted, distinct) a tuple is sent to."""
        cfg = self.config
        if not 0 <= stream < len(cfg.windows_ms):
            raise ConfigError(f"stream: index {stream} out of range 0..{len(cfg.windows_ms) - 1}")
        if cfg.mode == "hash":
            assert cfg.key_attribute is not None
            if cfg.key_attribute not in attrs:
                raise ConfigError(f"join.attribute: tuple has no attribute {cfg.key_attribute!r}")
            return [stable_hash(attrs[cfg.key_attribute]) % cfg.groups]
        lo, hi = self.atr_segment_range(stream, int(ts))
        if hi - lo + 1 >= cfg.groups:
            return list(range(cfg.groups))
        return sorted({s % cfg.groups for s in range(lo, hi + 1)})

    def owns(self, route_key: int, master_ts: int, key_value: Any = None) -> bool:
        """Whether instance ``route_key`` is the one that emits results whose master
        member has timestamp ``master_ts`` (ATR) / whose join key is ``key_value`` (hash)."""
        cfg = self.config
        if cfg.mode == "hash":
            return stable_hash(key_value) % cfg.groups == route_key
        return self.segment_of(int(master_ts)) % cfg.groups == route_key

    def owns_result(
        self, route_key: int, member_ts: Sequence[int], key_value: Any = None
    ) -> bool:
        """:meth:`owns` for a result given its members' timestamps in stream order."""
        return self.owns(route_key, int(member_ts[self.config.master]), key_value)

    # -- batch API ----------------------------------------------------------------------
    def route_batch(
        self,
        streams: npt.ArrayLike,
        ts: npt.ArrayLike,
        keys: npt.ArrayLike | None = None,
    ) -> tuple[IntArray, IntArray]:
        """Vectorized routing of a batch: returns ``(row, route_key)`` pairs, one per copy.

        ``streams`` are stream indices, ``ts`` event times (ms), ``keys`` the join-key
        column (hash routing only). Rows appear in input order; each row's keys are
        distinct and ascending — the same as :meth:`route_keys` row by row.
        """
        cfg = self.config
        s = np.asarray(streams, dtype=np.int64)
        t = np.asarray(ts, dtype=np.int64)
        if s.shape != t.shape or s.ndim != 1:
            raise ConfigError(f"route_batch: streams {s.shape} and ts {t.shape} differ")
        n = len(s)
        if n and (s.min() < 0 or s.max() >= len(cfg.windows_ms)):
            raise ConfigError(f"stream: index out of range in batch: {np.unique(s).tolist()}")
        if cfg.mode == "hash":
            if keys is None:
                raise ConfigError("route_batch: hash routing needs the join-key column")
            h = stable_hash_array(keys)
            if h.shape != (n,):
                raise ConfigError(f"route_batch: keys {h.shape} and ts {t.shape} differ")
            route = (h % np.uint64(cfg.groups)).astype(np.int64)
            return np.arange(n, dtype=np.int64), route
        windows = np.asarray(cfg.windows_ms, dtype=np.int64)
        T = cfg.segment_ms
        is_master = s == cfg.master
        lo = np.where(is_master, t // T, (t - windows[cfg.master]) // T)
        hi = np.where(is_master, t // T, (t + windows[s]) // T)
        counts = np.minimum(hi - lo + 1, cfg.groups)
        rows = np.repeat(np.arange(n, dtype=np.int64), counts)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        offset = np.arange(len(rows), dtype=np.int64) - starts
        route = (np.repeat(lo, counts) + offset) % cfg.groups
        order = np.lexsort((route, rows))
        return rows[order], route[order]
