"""MJoin-style m-way sliding-window join with Ji et al.'s Alg. 2 semantics.

One operator with m inputs; each input tuple of stream i is processed in *direction i*
along a join order R_i (GrubJoin §1.3): it is matched against W_{r_1}, every partial
match is extended against W_{r_2}, and so on (nested-loop join, so any predicate works).
Each step is vectorized: a whole basic window is compared with all partial results at
once (a k×n boolean matrix per bound stream), never pair by pair in Python.

Alg. 2 (Ji et al.): an in-order tuple (ts ≥ ⋈T) advances ⋈T, expires the *other*
windows (e_j.ts < ts − W_j), probes, and is inserted; a late tuple with
ts ≥ ⋈T − W_i is only inserted; an older one is discarded. Because every stored tuple
has ts ≤ ⋈T ≤ ts of the probing tuple, a probe of W_l scans ts ∈ [ts − W_l, ts], which
makes the window condition hold for every pair of members (DESIGN §4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import ConfigError, OperatorStateError
from pipeline.operators.hooks import ProbeFeedback, ProbePlan
from pipeline.operators.predicates import Predicate
from pipeline.operators.windows import StreamWindow

I64 = NDArray[np.int64]
NEG_INF = -(2**62)


class Outcome(Enum):
    """What Alg. 2 did with a tuple."""

    PROBED = "probed"
    LATE = "late"
    DISCARDED = "discarded"


@dataclass(frozen=True, slots=True)
class JoinConfig:
    """Frozen join configuration: windows W_i (ms), basic window b (ms), predicate."""

    windows: tuple[int, ...]
    basic_window_ms: int
    predicate: Predicate

    def __post_init__(self) -> None:
        if len(self.windows) < 2:
            raise ConfigError(f"join.streams: need at least 2 streams, got {len(self.windows)}")
        if self.basic_window_ms <= 0:
            raise ConfigError(f"shedding.basic_window_ms: must be > 0, got {self.basic_window_ms}")

    @property
    def m(self) -> int:
        return len(self.windows)

    def n_basic(self, stream: int) -> int:
        """n_l = ⌈W_l / b⌉ logical basic windows of stream ``stream``."""
        return max(1, math.ceil(self.windows[stream] / self.basic_window_ms))


@dataclass(frozen=True, slots=True)
class JoinOutput:
    """Results of one tuple (rows = results, columns = streams in index order)."""

    outcome: Outcome
    seqs: I64
    tss: I64
    cost: int
    feedback: ProbeFeedback | None = None

    @property
    def count(self) -> int:
        return int(self.seqs.shape[0])


class MWayJoin:
    """The runtime m-way join: per-stream basic-window stores plus ⋈T."""

    def __init__(self, config: JoinConfig) -> None:
        self.config = config
        m = config.m
        self.windows = [
            StreamWindow(w, config.basic_window_ms, config.predicate) for w in config.windows
        ]
        self.join_time = NEG_INF
        self.default_orders: tuple[tuple[int, ...], ...] = tuple(
            tuple(j for j in range(m) if j != i) for i in range(m)
        )

    # ------------------------------------------------------------------ Alg. 2
    def process(
        self, stream: int, ts: int, seq: int, enc: Any, plan: ProbePlan | None = None
    ) -> JoinOutput:
        """Ji et al. Alg. 2 for one tuple of ``stream`` (``enc`` = predicate.encode(attrs))."""
        cfg = self.config
        if ts >= self.join_time:
            self.join_time = ts
            for j, win in enumerate(self.windows):
                if j != stream:
                    win.expire(ts - cfg.windows[j])
            out = self.probe(stream, ts, seq, enc, plan)
            self.windows[stream].insert(ts, seq, enc)
            return out
        empty = np.zeros((0, cfg.m), np.int64)
        if ts >= self.join_time - cfg.windows[stream]:
            self.windows[stream].insert(ts, seq, enc)
            return JoinOutput(Outcome.LATE, empty, empty, 0)
        return JoinOutput(Outcome.DISCARDED, empty, empty, 0)

    def insert(self, stream: int, ts: int, seq: int, enc: Any) -> None:
        """Insert without probing (benchmark warm-up, state rebuild)."""
        self.windows[stream].insert(ts, seq, enc)

    def cross_count(self, stream: int, ts: int) -> int:
        """n^× = Π_{j≠i} |S_j[W_j]| for a tuple of ``stream`` at ``ts`` (Ji §3.5)."""
        prod = 1
        for j, win in enumerate(self.windows):
            if j != stream:
                prod *= win.count_from(ts - self.config.windows[j])
        return prod

    # ------------------------------------------------------------------ probe
    def _selection(self, l: int, plan: ProbePlan | None, pos: int) -> NDArray[np.bool_] | None:
        if plan is None or plan.windows is None or plan.windows[pos] is None:
            return None
        n = self.config.n_basic(l)
        table = np.zeros(n, dtype=bool)
        chosen = [k for k in plan.windows[pos] or () if 0 <= k < n]
        table[chosen] = True
        return None if table.all() else table

    def probe(
        self, stream: int, ts: int, seq: int, enc: Any, plan: ProbePlan | None = None
    ) -> JoinOutput:
        """Match a tuple against the other windows along its join order (NLJ, vectorized)."""
        cfg = self.config
        pred: Any = cfg.predicate  # its store/side types pair up per predicate kind
        order = self._order(stream, plan)
        b = cfg.basic_window_ms
        p_ts: dict[int, I64] = {stream: np.array([ts], np.int64)}
        p_seq: dict[int, I64] = {stream: np.array([seq], np.int64)}
        p_side: dict[int, Any] = {stream: pred.left_one(enc)}
        cost, k = 0, 1
        scanned: list[int] = []
        entering: list[int] = []
        for pos, l in enumerate(order):
            entering.append(k)
            sel = self._selection(l, plan, pos)
            n_l = cfg.n_basic(l)
            last = pos == len(order) - 1
            idx_chunks: list[I64] = []
            ts_chunks: list[I64] = []
            seq_chunks: list[I64] = []
            side_chunks: list[Any] = []
            scanned_here = 0
            for bw, rows in self.windows[l].in_range(ts - cfg.windows[l]):
                if sel is not None:
                    all_ts = bw.ts.view() if rows is None else bw.ts.view()[rows]
                    lbw = np.minimum((ts - all_ts) // b, n_l - 1)
                    keep = sel[lbw]
                    base = np.arange(len(bw)) if rows is None else rows
                    rows = base[keep]
                    if rows.size == 0:
                        continue
                n = len(bw) if rows is None else int(rows.size)
                scanned_here += k * n
                mask = None
                for s in p_side:  # 1×n (probing tuple) broadcasts against k×n
                    mm = pred.match(p_side[s], bw.feats, rows)
                    mask = mm if mask is None else (mask & mm)
                assert mask is not None
                if mask.shape[0] != k:
                    mask = np.broadcast_to(mask, (k, mask.shape[1]))
                pi, qi = np.nonzero(mask)
                if pi.size == 0:
                    continue
                rr = qi if rows is None else rows[qi]
                idx_chunks.append(pi)
                ts_chunks.append(bw.ts.view()[rr])
                seq_chunks.append(bw.seq.view()[rr])
                if not last:
                    side_chunks.append(pred.left_from_store(bw.feats, rr))
            cost += scanned_here
            scanned.append(scanned_here)
            if not idx_chunks:
                empty = np.zeros((0, cfg.m), np.int64)
                fb = self._feedback(stream, ts, order, plan, {}, scanned, 0, cost, entering)
                return JoinOutput(Outcome.PROBED, empty, empty, cost, fb)
            pick = np.concatenate(idx_chunks)
            for s in list(p_side):
                p_ts[s] = p_ts[s][pick]
                p_seq[s] = p_seq[s][pick]
                if not last and s != stream:  # the probing tuple's side stays 1 row
                    p_side[s] = pred.take(p_side[s], pick)
            p_ts[l] = np.concatenate(ts_chunks)
            p_seq[l] = np.concatenate(seq_chunks)
            if not last:
                p_side[l] = pred.concat(side_chunks)
            k = int(pick.size)
        seqs = np.stack([p_seq[s] for s in range(cfg.m)], axis=1)
        tss = np.stack([p_ts[s] for s in range(cfg.m)], axis=1)
        fb = self._feedback(stream, ts, order, plan, p_ts, scanned, k, cost, entering)
        return JoinOutput(Outcome.PROBED, seqs, tss, cost, fb)

    def _order(self, stream: int, plan: ProbePlan | None) -> tuple[int, ...]:
        if plan is None or plan.order is None:
            return self.default_orders[stream]
        order = tuple(plan.order)
        if sorted(order) != list(self.default_orders[stream]):
            raise ConfigError(f"probe plan order {order} is not a permutation of the others")
        return order

    def _feedback(
        self,
        stream: int,
        ts: int,
        order: Sequence[int],
        plan: ProbePlan | None,
        p_ts: dict[int, I64],
        scanned: list[int],
        results: int,
        cost: int,
        entering: Sequence[int] = (),
    ) -> ProbeFeedback | None:
        if plan is None or not plan.feedback:
            return None
        b = self.config.basic_window_ms
        matches = []
        for l in order:
            n_l = self.config.n_basic(l)
            if results and l in p_ts:
                lbw = np.minimum((ts - p_ts[l]) // b, n_l - 1)
                matches.append(np.bincount(lbw, minlength=n_l).astype(np.int64))
            else:
                matches.append(np.zeros(n_l, np.int64))
        full_scanned = tuple(scanned) + (0,) * (len(order) - len(scanned))
        return ProbeFeedback(
            stream, ts, tuple(order), tuple(matches), full_scanned, results, cost, tuple(entering)
        )

    # ------------------------------------------------------------------ state
    def state_size(self) -> int:
        """Tuples held in all windows."""
        return sum(w.size() for w in self.windows)

    def snapshot(self) -> dict[str, Any]:
        return {"join_time": self.join_time, "windows": [w.snapshot() for w in self.windows]}

    @classmethod
    def from_snapshot(cls, config: JoinConfig, snap: dict[str, Any]) -> MWayJoin:
        try:
            join = cls(config)
            join.join_time = int(snap["join_time"])
            if len(snap["windows"]) != config.m:
                raise OperatorStateError(
                    f"join snapshot has {len(snap['windows'])} windows, config has {config.m}"
                )
            for win, ws in zip(join.windows, snap["windows"], strict=True):
                win.restore(ws)
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"cannot restore join snapshot: {exc!r}") from exc
        return join
