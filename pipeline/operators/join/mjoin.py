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
makes the window condition hold for every pair of members (ARCHITECTURE §4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.join.basicwindow import BasicWindow, Rows
from pipeline.operators.join.config import JoinConfig, JoinOutput, Outcome
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan
from pipeline.operators.join.predicates import DensePredicate
from pipeline.operators.join.probe_steps import (
    Found,
    covered,
    extend,
    index_hits,
    match_partials,
    rows_selected,
    scan_hits,
)
from pipeline.operators.join.run import RunOutput, process_run
from pipeline.operators.join.valueindex import ValueIndex
from pipeline.operators.join.windows import StreamWindow, logical_spans

I64 = NDArray[np.int64]
NEG_INF = -(2**62)
#: every SAMPLE_EVERY-th probe of a direction also measures σ_{i,l} against every window
SAMPLE_EVERY = 32
#: a position's chosen logical basic windows: (table over 0..n−1, chosen, runs of
#: consecutive chosen ones — see windows.logical_spans)
_Selection = tuple[NDArray[np.bool_], tuple[int, ...], tuple[tuple[int, int], ...]]
__all__ = ["NEG_INF", "SAMPLE_EVERY", "MWayJoin"]


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
        self._sel_cache: dict[tuple[int, tuple[int, ...]], _Selection | None] = {}
        self._dense = isinstance(config.predicate, DensePredicate)
        self._use_index = config.index and getattr(config.predicate, "kind", None) in (
            "band", "equi")
        #: per stream, the batched path's sorted value index (valueindex.py); None =
        #: stale (a tuple went in through :meth:`process` / :meth:`insert`)
        self._vindex: list[ValueIndex | None] = [None] * m

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
            self._vindex[stream] = None
            return out
        empty = np.zeros((0, cfg.m), np.int64)
        if ts >= self.join_time - cfg.windows[stream]:
            self.windows[stream].insert(ts, seq, enc)
            self._vindex[stream] = None
            return JoinOutput(Outcome.LATE, empty, empty, 0)
        return JoinOutput(Outcome.DISCARDED, empty, empty, 0)

    def process_batch(self, streams: I64, ts: I64, seqs: I64, feats: NDArray[np.float64],
                      plans: Sequence[ProbePlan | None], want_cross: bool = False
                      ) -> RunOutput:
        """Alg. 2 for a run of tuples at once, batch-vectorized (dense predicates;
        :func:`~pipeline.operators.join.run.process_run`): the same outcomes, results
        and costs as :meth:`process` tuple by tuple."""
        return process_run(self, streams, ts, seqs, feats, plans, want_cross)

    @property
    def use_index(self) -> bool:
        """Whether probes use the per-basic-window sorted indexes (band/equi + index)."""
        return self._use_index

    def insert(self, stream: int, ts: int, seq: int, enc: Any) -> None:
        """Insert without probing (benchmark warm-up, state rebuild)."""
        self.windows[stream].insert(ts, seq, enc)
        self._vindex[stream] = None

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
    def _selection(self, l: int, plan: ProbePlan | None, pos: int) -> _Selection | None:
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
        """Match a tuple against the other windows along its join order R_i (GrubJoin
        §1.3): a nested-loop join, one vectorized step per position of the order."""
        cfg = self.config
        pred: Any = cfg.predicate  # its store/side types pair up per predicate kind
        left = pred.left_one(enc)
        cost = self._count_probe(stream, ts, left, plan)
        order = self._order(stream, plan)
        if plan is not None and plan.windows is not None and plan.windows[0] == ():
            # harvesting scans no window of the first partner: nothing can match (fast path)
            return self._no_results(stream, ts, order, plan, [0], 0, [1], 0)
        band = self._index_band(left) if self._use_index else None
        # the partial results so far: one column per bound stream (the probing tuple's
        # predicate side stays one row)
        p_ts: dict[int, I64] = {stream: np.array([ts], np.int64)}
        p_seq: dict[int, I64] = {stream: np.array([seq], np.int64)}
        p_side: dict[int, Any] = {stream: left}
        k, checks = 1, 0
        scanned: list[int] = []
        entering: list[int] = []
        last_pos = len(order) - 1
        for pos, l in enumerate(order):
            entering.append(k)
            partners = [side for s, side in p_side.items() if s != stream]
            found, step_scanned, step_checks = self._scan_position(
                l, ts, left, partners, k, self._selection(l, plan, pos), band, pos == last_pos
            )
            cost += step_scanned
            checks += step_checks
            scanned.append(step_scanned)
            if found is None:
                return self._no_results(stream, ts, order, plan, scanned, cost, entering, checks)
            k = extend(pred, stream, l, found, p_ts, p_seq, p_side, pos == last_pos)
        # one probe's results in lexicographic order of their members' (ts, seq) along
        # the order — the order the batched probe (batchprobe.py) produces too
        rank = np.lexsort([key for l in reversed(order) for key in (p_seq[l], p_ts[l])])
        seqs = np.stack([p_seq[s][rank] for s in range(cfg.m)], axis=1)
        tss = np.stack([p_ts[s][rank] for s in range(cfg.m)], axis=1)
        fb = self._feedback(stream, ts, order, plan, p_ts, scanned, k, cost, entering)
        return JoinOutput(Outcome.PROBED, seqs, tss, cost, fb, checks)

    def _count_probe(self, stream: int, ts: int, left: Any, plan: ProbePlan | None) -> int:
        """Without a plan order, every SAMPLE_EVERY-th probe of a direction first samples
        σ_{i,l} for the default order (GrubJoin §V); returns the comparisons spent."""
        if plan is not None and plan.order is not None:
            return 0
        cost = 0
        if self.probes[stream] % SAMPLE_EVERY == 0:
            cost = self._sample_selectivity(stream, ts, left)
        self.probes[stream] += 1
        return cost

    def _index_band(self, left: Any) -> tuple[float, float]:
        """Value range [v − ε, v + ε] (ε = 0 for equi) the sorted per-basic-window indexes
        are searched with, widened by a relative slack: the exact predicate re-checks."""
        pred: Any = self.config.predicate
        v = float(left[0, 0])
        eps = float(pred.epsilon) if pred.kind == "band" else 0.0
        slack = 1e-9 * (abs(v) + eps) + 1e-300
        return v - eps - slack, v + eps + slack

    def _parts(self, l: int, ts: int, selection: _Selection | None, n_l: int,
               indexed: bool) -> tuple[Sequence[tuple[BasicWindow, Rows]],
                                       NDArray[np.bool_] | None]:
        """The (stored basic window, rows) pairs of W_l a probe at ``ts`` scans (ts ∈
        [ts − W_l, ts]), and the chosen-logical-window table their rows must still be
        filtered by (None = take them all)."""
        win = self.windows[l]
        lo = ts - self.config.windows[l]
        if selection is None:
            if indexed or not self._dense:
                return win.in_range(lo), None
            return win.merged_in_range(lo), None
        if not indexed:  # harvesting: exactly the rows of the chosen logical windows
            return win.harvested_parts(ts, lo, selection[2], n_l), None
        # the basic windows the selection touches; rows are filtered by the caller
        return win.logical_parts(ts, lo, selection[1], n_l), selection[0]

    def _scan_position(
        self, l: int, ts: int, left: Any, partners: list[Any], k: int,
        selection: _Selection | None, band: tuple[float, float] | None, last: bool,
    ) -> tuple[Found | None, int, int]:
        """One NLJ step against W_l: the rows matching the probing tuple (``left``) and,
        for each, the k partial results (``partners`` = their bound streams' sides) it
        also matches. Returns (the extension, or None when nothing matched; tuple
        comparisons accounted, the GrubJoin cost; pair evaluations actually run)."""
        cfg = self.config
        pred: Any = cfg.predicate
        b = cfg.basic_window_ms
        n_l = cfg.n_basic(l)
        win = self.windows[l]
        parts, sel = self._parts(l, ts, selection, n_l, band is not None)
        idx_chunks: list[I64] = []
        ts_chunks: list[I64] = []
        seq_chunks: list[I64] = []
        side_chunks: list[Any] = []
        scanned = checks = 0
        for bw, part_rows in parts:
            rows = part_rows
            if band is not None and bw.misses(band[0], band[1]):
                scanned += 1  # one index lookup, nothing in range
                continue
            if sel is not None and not covered(sel, ts, bw.min_ts, bw.max_ts, b, n_l):
                rows = rows_selected(sel, ts, bw, rows, b, n_l)
                if rows.size == 0:
                    continue
            if band is not None:
                hit_rows, tested = index_hits(pred, left, bw, rows, band,
                                               sealed=bw.bid != win.bids[-1])
                checks += tested
                scanned += 1 + k * int(hit_rows.size)
            else:
                hit_rows, tested = scan_hits(pred, left, bw, rows)
                checks += tested
                scanned += k * tested  # the NLJ's tuple comparisons (GrubJoin cost)
            if partners:
                if hit_rows.size == 0:
                    continue
                pi, qi = match_partials(pred, partners, bw, hit_rows)
                checks += k * int(hit_rows.size) * len(partners)
                if pi.size == 0:
                    continue
                rr = hit_rows[qi]
            else:
                if hit_rows.size == 0:
                    continue
                pi = np.zeros(hit_rows.size, dtype=np.int64)
                rr = hit_rows
            idx_chunks.append(pi)
            ts_chunks.append(bw.ts.view()[rr])
            seq_chunks.append(bw.seq.view()[rr])
            if not last:
                side_chunks.append(pred.left_from_store(bw.feats, rr))
        if not idx_chunks:
            return None, scanned, checks
        side = None if last else pred.concat(side_chunks)
        found = (np.concatenate(idx_chunks), np.concatenate(ts_chunks),
                 np.concatenate(seq_chunks), side)
        return found, scanned, checks

    def _no_results(self, stream: int, ts: int, order: tuple[int, ...], plan: ProbePlan | None,
                    scanned: list[int], cost: int, entering: list[int], checks: int
                    ) -> JoinOutput:
        """The output of a probe that ran out of partial results (no result)."""
        empty = np.zeros((0, self.config.m), np.int64)
        fb = self._feedback(stream, ts, order, plan, {}, scanned, 0, cost, entering)
        return JoinOutput(Outcome.PROBED, empty, empty, cost, fb, checks)

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
        return {**self.snapshot_header(), "windows": [w.snapshot() for w in self.windows]}

    def snapshot_header(self) -> dict[str, Any]:
        """:meth:`snapshot` without the windows' basic windows (incremental state: those
        are pieces of their own, :meth:`StreamWindow.changes`)."""
        return {
            "join_time": self.join_time,
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
