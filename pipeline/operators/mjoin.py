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

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.hooks import ProbeFeedback, ProbePlan
from pipeline.operators.predicates import DensePredicate, Predicate
from pipeline.operators.windows import (
    BasicWindow,
    Rows,
    StreamWindow,
    logical_spans,
    row_count,
)

I64 = NDArray[np.int64]
NEG_INF = -(2**62)
#: every SAMPLE_EVERY-th probe of a direction also measures σ_{i,l} against every window
SAMPLE_EVERY = 32


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
    #: ours: per-basic-window sorted indexes for band/equi predicates (see windows.py);
    #: the probe then costs 1 per basic window touched plus k per matching row
    index: bool = False

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
    #: pair predicate evaluations actually performed (≤ cost: rows failing the probing
    #: tuple are not compared with the partial results)
    checks: int = 0

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
        self.others: tuple[tuple[int, ...], ...] = tuple(
            tuple(j for j in range(m) if j != i) for i in range(m)
        )
        # pairwise selectivity samples σ_{i,l} = matches / comparisons (GrubJoin §V order)
        self.sel_matches = np.zeros((m, m), dtype=np.float64)
        self.sel_trials = np.zeros((m, m), dtype=np.float64)
        self.probes = np.zeros(m, dtype=np.int64)
        self._orders: dict[int, tuple[int, ...]] = {}  # default_order cache
        self._sel_cache: dict[tuple[int, tuple[int, ...]], Any] = {}

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

    def selectivities(self) -> NDArray[np.float64]:
        """Sampled pairwise selectivities σ_{i,l} (NaN where not yet sampled)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.sel_trials > 0, self.sel_matches / self.sel_trials, np.nan)

    def default_order(self, stream: int) -> tuple[int, ...]:
        """MJoin's order for direction ``stream``: lowest sampled σ_{i,l} first (ties and
        unsampled streams by index), so partial results stay few (GrubJoin §V).
        Cached until the direction's selectivities are sampled again."""
        order = self._orders.get(stream)
        if order is None:
            trials, matches = self.sel_trials[stream], self.sel_matches[stream]
            sel = [float(matches[l] / trials[l]) if trials[l] > 0 else 2.0
                   for l in range(self.config.m)]
            order = tuple(sorted(self.others[stream], key=lambda l: (sel[l], l)))
            self._orders[stream] = order
        return order

    def _sample_selectivity(self, stream: int, ts: int, left: Any) -> int:
        """Match the probing tuple alone against every other window; returns comparisons."""
        pred: Any = self.config.predicate
        cost = 0
        self._orders.pop(stream, None)
        for l in self.others[stream]:
            for bw, rows in self.windows[l].in_range(ts - self.config.windows[l]):
                n = len(bw) if rows is None else int(rows.size)
                self.sel_matches[stream, l] += int(
                    np.count_nonzero(pred.match(left, bw.feats, rows))
                )
                self.sel_trials[stream, l] += n
                cost += n
        return cost

    def cross_count(self, stream: int, ts: int) -> int:
        """n^× = Π_{j≠i} |S_j[W_j]| for a tuple of ``stream`` at ``ts`` (Ji §3.5)."""
        prod = 1
        for j, win in enumerate(self.windows):
            if j != stream:
                prod *= win.count_from(ts - self.config.windows[j])
        return prod

    # ------------------------------------------------------------------ probe
    def _selection(self, l: int, plan: ProbePlan | None, pos: int
                   ) -> tuple[NDArray[np.bool_], tuple[int, ...], tuple[tuple[int, int], ...]
                              ] | None:
        """(table of the chosen logical windows, chosen, runs of consecutive chosen ones)
        of a position; None = all."""
        if plan is None or plan.windows is None or plan.windows[pos] is None:
            return None
        n = self.config.n_basic(l)
        wanted = plan.windows[pos]
        assert wanted is not None
        key = (n, wanted)
        hit = self._sel_cache.get(key)
        if hit is None:
            table = np.zeros(n, dtype=bool)
            chosen = tuple(k for k in wanted if 0 <= k < n)
            table[list(chosen)] = True
            hit = None if table.all() else (table, chosen, logical_spans(chosen, n))
            if len(self._sel_cache) > 256:  # plans change every Δ; keep the cache small
                self._sel_cache.clear()
            self._sel_cache[key] = hit
        return hit

    def probe(
        self, stream: int, ts: int, seq: int, enc: Any, plan: ProbePlan | None = None
    ) -> JoinOutput:
        """Match a tuple against the other windows along its join order (NLJ, vectorized)."""
        cfg = self.config
        pred: Any = cfg.predicate  # its store/side types pair up per predicate kind
        b = cfg.basic_window_ms
        p_ts: dict[int, I64] = {stream: np.array([ts], np.int64)}
        p_seq: dict[int, I64] = {stream: np.array([seq], np.int64)}
        p_side: dict[int, Any] = {stream: pred.left_one(enc)}
        cost, k, checks = 0, 1, 0
        if plan is None or plan.order is None:
            if self.probes[stream] % SAMPLE_EVERY == 0:
                cost += self._sample_selectivity(stream, ts, p_side[stream])
            self.probes[stream] += 1
        order = self._order(stream, plan)
        if plan is not None and plan.windows is not None and plan.windows[0] == ():
            # harvesting scans no window of the first partner: nothing can match (fast path)
            empty = np.zeros((0, cfg.m), np.int64)
            fb = self._feedback(stream, ts, order, plan, {}, [0], 0, 0, [1])
            return JoinOutput(Outcome.PROBED, empty, empty, 0, fb, 0)
        use_index = cfg.index and getattr(pred, "kind", None) in ("band", "equi")
        dense = isinstance(pred, DensePredicate)
        if use_index:
            v = float(p_side[stream][0, 0])
            eps = float(pred.epsilon) if pred.kind == "band" else 0.0
            slack = 1e-9 * (abs(v) + eps) + 1e-300  # widen: the exact test re-checks
            v_lo, v_hi = v - eps - slack, v + eps + slack
        scanned: list[int] = []
        entering: list[int] = []
        for pos, l in enumerate(order):
            entering.append(k)
            selection = self._selection(l, plan, pos)
            sel = None if selection is None else selection[0]
            n_l = cfg.n_basic(l)
            last = pos == len(order) - 1
            idx_chunks: list[I64] = []
            ts_chunks: list[I64] = []
            seq_chunks: list[I64] = []
            side_chunks: list[Any] = []
            scanned_here = 0
            win = self.windows[l]
            lo = ts - cfg.windows[l]
            parts: list[tuple[BasicWindow, Rows]]
            if selection is not None and not use_index:
                # harvesting: exactly the rows of the chosen logical windows
                parts = win.harvested_parts(ts, lo, selection[2], n_l)
                sel = None
            elif selection is not None:  # the basic windows it selects, filtered below
                parts = list(win.logical_parts(ts, lo, selection[1], n_l))
            elif use_index or not dense:
                parts = list(win.in_range(lo))
            else:
                parts = list(win.merged_in_range(lo))
            for bw, rows in parts:
                if use_index and bw.misses(v_lo, v_hi):
                    scanned_here += 1  # one index lookup, nothing in range
                    continue
                if sel is not None and not _covered(sel, ts, bw.min_ts, bw.max_ts, b, n_l):
                    assert not isinstance(rows, slice)  # slices only come from harvested_parts
                    all_ts = bw.ts.view() if rows is None else bw.ts.view()[rows]
                    lbw = np.minimum((ts - all_ts) // b, n_l - 1)
                    keep = sel[lbw]
                    base = np.arange(len(bw)) if rows is None else rows
                    rows = base[keep]
                    if rows.size == 0:
                        continue
                if use_index:
                    # sorted-index lookup, then the exact predicate on the candidates
                    cand = bw.range_rows(v_lo, v_hi, sealed=bw.bid != win.bids[-1])
                    assert not isinstance(rows, slice)
                    if rows is not None and cand.size:
                        allowed = np.zeros(len(bw), dtype=bool)
                        allowed[rows] = True
                        cand = cand[allowed[cand]]
                    hit_rows = cand[pred.match(p_side[stream], bw.feats, cand)[0]]
                    checks += int(cand.size)
                    scanned_here += 1 + k * int(hit_rows.size)
                else:
                    n = row_count(bw, rows)
                    scanned_here += k * n  # the NLJ's tuple comparisons (GrubJoin cost)
                    # every member must match the probing tuple: test that first (1×n)
                    # and compare the k partial results only with the rows that pass it
                    hit = pred.match(p_side[stream], bw.feats, rows)[0]
                    checks += n
                    cols = np.flatnonzero(hit)
                    if rows is None:
                        hit_rows = cols
                    elif isinstance(rows, slice):
                        hit_rows = cols + rows.start
                    else:
                        hit_rows = rows[cols]
                if len(p_side) > 1:
                    if hit_rows.size == 0:
                        continue
                    rows = hit_rows
                    mask = None
                    for s in p_side:
                        if s != stream:
                            mm = pred.match(p_side[s], bw.feats, rows)
                            mask = mm if mask is None else (mask & mm)
                    assert mask is not None
                    checks += k * int(rows.size) * (len(p_side) - 1)
                    pi, qi = np.nonzero(mask)
                else:
                    qi = np.arange(hit_rows.size)
                    rows = hit_rows
                    pi = np.zeros(qi.size, dtype=np.int64)
                if pi.size == 0:
                    continue
                rr = rows[qi]
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
                return JoinOutput(Outcome.PROBED, empty, empty, cost, fb, checks)
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
        return JoinOutput(Outcome.PROBED, seqs, tss, cost, fb, checks)

    def _order(self, stream: int, plan: ProbePlan | None) -> tuple[int, ...]:
        if plan is None or plan.order is None:
            return self.default_order(stream)
        order = tuple(plan.order)
        if sorted(order) != list(self.others[stream]):
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
        return {
            "join_time": self.join_time,
            "windows": [w.snapshot() for w in self.windows],
            "sel_matches": self.sel_matches.copy(),
            "sel_trials": self.sel_trials.copy(),
            "probes": self.probes.copy(),
        }

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
            join.sel_matches = np.array(snap["sel_matches"], dtype=np.float64)
            join.sel_trials = np.array(snap["sel_trials"], dtype=np.float64)
            join.probes = np.array(snap["probes"], dtype=np.int64)
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"cannot restore join snapshot: {exc!r}") from exc
        return join


def _covered(sel: NDArray[np.bool_], ts: int, min_ts: int, max_ts: int, b: int,
             n: int) -> bool:
    """Whether every logical basic window a stored one spans (ts − t for t in
    [min_ts, max_ts]) is selected, so its rows need no per-row filter."""
    first = min((ts - max_ts) // b, n - 1)
    last = min((ts - min_ts) // b, n - 1)
    return first >= 0 and bool(sel[first : last + 1].all())
