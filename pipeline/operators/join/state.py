"""What the m-way join holds between tuples, read by both probe paths (Ji et al. Alg. 2;
GrubJoin §1.3–1.5, §V): :class:`JoinState`.

The join's state is the per-stream windows of basic windows, ⋈T, the pairwise
selectivity samples σ_{i,l} (and MJoin's default join order derived from them), the
harvest plans' chosen logical basic windows (cached per plan position) and, for the
run probe path with ``[join] index``, one sorted value index per window. The per-tuple
probe (:mod:`~pipeline.operators.join.tuple_probe`) and the run probe
(:mod:`~pipeline.operators.join.run`) read and update it only through this class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.events import NEG_INF
from pipeline.operators.join.config import JoinConfig
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.join.predicates import DensePredicate
from pipeline.operators.join.valueindex import ValueIndex
from pipeline.operators.join.windows import StreamWindow, logical_spans

I64 = NDArray[np.int64]
#: every SAMPLE_EVERY-th probe of a direction without a plan order also measures
#: σ_{i,l} against every other window (GrubJoin §V)
SAMPLE_EVERY = 32
#: a position's chosen logical basic windows: (table over 0..n−1, chosen, runs of
#: consecutive chosen ones — see windows.logical_spans)
Selection = tuple[NDArray[np.bool_], tuple[int, ...], tuple[tuple[int, int], ...]]
#: selection tables kept at most (plans change every Δ; the cache stays small)
SELECTION_CACHE = 256


class JoinState:
    """Per-stream basic-window stores, ⋈T, σ samples and the caches derived from them."""

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
        #: whether the predicate compares dense feature rows (the run path's condition)
        self.dense = isinstance(config.predicate, DensePredicate)
        self._use_index = config.index and getattr(config.predicate, "kind", None) in (
            "band", "equi", "overlap")
        self._orders: dict[int, tuple[int, ...]] = {}  # default_order cache
        self._selections: dict[tuple[int, tuple[int, ...]], Selection | None] = {}
        #: per stream, the run path's sorted value index; None = stale (a tuple went in
        #: through :meth:`store`, or the state was restored)
        self._vindex: list[ValueIndex | None] = [None] * m

    @property
    def use_index(self) -> bool:
        """Whether probes use the per-basic-window indexes (band/equi: sorted; overlap:
        inverted; with ``[join] index``)."""
        return self._use_index

    # ------------------------------------------------------------------ windows
    def store(self, stream: int, ts: int, seq: int, enc: Any) -> None:
        """Insert one tuple into its stream's window (its value index goes stale)."""
        self.windows[stream].insert(ts, seq, enc)
        self._vindex[stream] = None

    def value_indexes(self) -> list[ValueIndex]:
        """The windows' sorted value indexes, rebuilt where the per-tuple path (or a
        restore) left them stale; the run path keeps them in step with the windows."""
        vix = self._vindex
        for l, win in enumerate(self.windows):
            if vix[l] is None:
                vix[l] = ValueIndex.of(win)
        return vix  # type: ignore[return-value]

    def cross_count(self, stream: int, ts: int) -> int:
        """n^× = Π_{j≠i} |S_j[W_j]| for a tuple of ``stream`` at ``ts`` (Ji §3.5)."""
        prod = 1
        for j, win in enumerate(self.windows):
            if j != stream:
                prod *= win.count_from(ts - self.config.windows[j])
        return prod

    def state_size(self) -> int:
        """Tuples held in all windows."""
        return sum(w.size() for w in self.windows)

    # ------------------------------------------------------------------ orders
    def selectivities(self) -> NDArray[np.float64]:
        """Sampled pairwise selectivities σ_{i,l} (NaN where not yet sampled)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.sel_trials > 0, self.sel_matches / self.sel_trials, np.nan)

    def next_probes(self, stream: int, n: int) -> int:
        """Count ``n`` probes of direction ``stream`` without a plan order; returns the
        number of the first (probe k samples σ first if k % SAMPLE_EVERY == 0)."""
        first = int(self.probes[stream])
        self.probes[stream] = first + n
        return first

    def add_sample(self, stream: int, l: int, matches: int, trials: int) -> None:
        """A σ_{stream,l} sample (GrubJoin §V): the default order is derived anew."""
        self._orders.pop(stream, None)
        self.sel_matches[stream, l] += matches
        self.sel_trials[stream, l] += trials

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

    def plan_order(self, stream: int, plan: ProbePlan | None) -> tuple[int, ...]:
        """The join order R_i a probe of ``stream`` follows: its plan's, else MJoin's
        default; a plan order that is not a permutation of the others raises
        :class:`~pipeline.core.errors.ConfigError`."""
        if plan is None or plan.order is None:
            return self.default_order(stream)
        order = tuple(plan.order)
        if sorted(order) != list(self.others[stream]):
            raise ConfigError(f"probe plan order {order} is not a permutation of the others")
        return order

    def selection(self, l: int, plan: ProbePlan | None, pos: int) -> Selection | None:
        """(table of the chosen logical windows, chosen, runs of consecutive chosen ones)
        a plan scans of W_l at position ``pos`` (GrubJoin §IV harvesting); None = all."""
        if plan is None or plan.windows is None or plan.windows[pos] is None:
            return None
        n = self.config.n_basic(l)
        wanted = plan.windows[pos]
        assert wanted is not None
        key = (n, wanted)
        hit = self._selections.get(key)
        if hit is None:
            table = np.zeros(n, dtype=bool)
            chosen = tuple(k for k in wanted if 0 <= k < n)
            table[list(chosen)] = True
            hit = None if table.all() else (table, chosen, logical_spans(chosen, n))
            if len(self._selections) > SELECTION_CACHE:
                self._selections.clear()
            self._selections[key] = hit
        return hit

    def match_counts(self, ts: int, order: Sequence[int], members: Mapping[int, I64]
                     ) -> tuple[I64, ...]:
        """Per stream of ``order``, a probe's results by the logical basic window
        min((ts − t_l) // b, n_l − 1) their member of that stream lies in (GrubJoin §1.5
        lag histogram); a stream missing from ``members`` counts nothing."""
        b = self.config.basic_window_ms
        out = []
        for l in order:
            n_l = self.config.n_basic(l)
            member = members.get(l)
            if member is not None and member.shape[0]:
                lbw = np.minimum((ts - member) // b, n_l - 1)
                out.append(np.bincount(lbw, minlength=n_l).astype(np.int64))
            else:
                out.append(np.zeros(n_l, np.int64))
        return tuple(out)

    # ------------------------------------------------------------------ snapshots
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
    def from_snapshot(cls, config: JoinConfig, snap: dict[str, Any]) -> Self:
        """Inverse of :meth:`snapshot`."""
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
