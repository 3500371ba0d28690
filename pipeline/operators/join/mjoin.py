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

The join's state (windows, ⋈T, σ samples, orders, value indexes) is
:class:`~pipeline.operators.join.state.JoinState`; the probe of one tuple is
:mod:`~pipeline.operators.join.tuple_probe`, the probes of a run of tuples at once
:mod:`~pipeline.operators.join.run`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.profile import PhaseProfile
from pipeline.operators.join.config import JoinOutput, Outcome
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.join.run import RunOutput, process_run
from pipeline.operators.join.state import JoinState
from pipeline.operators.join.tuple_probe import probe_tuple

I64 = NDArray[np.int64]


class MWayJoin(JoinState):
    """The runtime m-way join: Alg. 2 per tuple (:meth:`process`) or per run
    (:meth:`process_batch`) over its :class:`~pipeline.operators.join.state.JoinState`."""

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
            self.store(stream, ts, seq, enc)
            return out
        empty = np.zeros((0, cfg.m), np.int64)
        if ts >= self.join_time - cfg.windows[stream]:
            self.store(stream, ts, seq, enc)
            return JoinOutput(Outcome.LATE, empty, empty, 0)
        return JoinOutput(Outcome.DISCARDED, empty, empty, 0)

    def process_batch(self, streams: I64, ts: I64, seqs: I64, feats: NDArray[np.float64],
                      plans: Sequence[ProbePlan | None], want_cross: bool = False,
                      profile: PhaseProfile | None = None) -> RunOutput:
        """Alg. 2 for a run of tuples at once, vectorized across the run (dense predicates;
        :func:`~pipeline.operators.join.run.process_run`): the same outcomes, results
        and costs as :meth:`process` tuple by tuple."""
        return process_run(self, streams, ts, seqs, feats, plans, want_cross, profile)

    def probe(
        self, stream: int, ts: int, seq: int, enc: Any, plan: ProbePlan | None = None
    ) -> JoinOutput:
        """Match a tuple against the other windows along its join order R_i, without
        inserting it (:func:`~pipeline.operators.join.tuple_probe.probe_tuple`)."""
        return probe_tuple(self, stream, ts, seq, enc, plan)

    def insert(self, stream: int, ts: int, seq: int, enc: Any) -> None:
        """Insert without probing (benchmark warm-up, state rebuild)."""
        self.store(stream, ts, seq, enc)
