"""Pairwise tests of the run probe path (ours): a whole probes × rows block in one
NumPy expression, the elementwise test of (partial result, row) pairs, the widened value
range of the indexed search, and the canonical order of the rows found (GrubJoin §1.3
nested-loop steps, vectorized; see :mod:`~pipeline.operators.join.run_probe`); the value
range itself is :func:`~pipeline.operators.join.predicates.value_bounds`."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.predicates import value_bounds

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
B8 = NDArray[np.bool_]
#: probes × rows booleans one block may hold (a few MB: stays in cache)
BLOCK_ELEMS = 1 << 21


def block_hits(pred: Any, left: F64, right: F64) -> tuple[I64, I64]:
    """(left row, right row) pairs that match, for every pair of a P × n block: one
    vectorized test (band and distance: a pre-filter on the first coordinate,
    |x_a − x_b| ≤ ε widened by a few ulps — necessary for dx² + dy² ≤ ε², since
    fl(dx²) ≤ fl(dx² + dy²) — then the exact predicate on the candidates only: two
    boolean passes over the block instead of six float temporaries)."""
    n = right.shape[0]
    if n == 0 or left.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    kind = pred.kind
    if kind in ("band", "distance"):
        lo, hi = value_bounds(pred, left[:, 0])
        col = right[:, 0]
        mask, tmp = _scratch(left.shape[0], n)
        np.greater_equal(col[None, :], lo[:, None], out=mask)
        np.less_equal(col[None, :], hi[:, None], out=tmp)
        mask &= tmp
        pi, ri = np.divmod(np.flatnonzero(mask), n)
        keep = pair_match(pred, left[pi], right[ri])
        return pi[keep], ri[keep]
    if kind == "equi":
        mask, _ = _scratch(left.shape[0], n)
        np.equal(left[:, 0, None], right[None, :, 0], out=mask)
    else:
        mask = np.asarray(pred.match_values(left, right))
    pi, ri = np.divmod(np.flatnonzero(mask), n)
    return pi, ri


_SCRATCH: list[B8] = [np.empty(0, bool), np.empty(0, bool)]


def _scratch(p: int, n: int) -> tuple[B8, B8]:
    """Two p × n boolean work arrays, reused across calls: a fresh multi-megabyte array
    per block costs more in page faults than the comparisons themselves."""
    size = p * n
    if _SCRATCH[0].shape[0] < size:
        _SCRATCH[0] = np.empty(max(size, BLOCK_ELEMS), bool)
        _SCRATCH[1] = np.empty(max(size, BLOCK_ELEMS), bool)
    return _SCRATCH[0][:size].reshape(p, n), _SCRATCH[1][:size].reshape(p, n)


def pair_match(pred: Any, a: F64, b: F64) -> B8:
    """Does row a[k] match row b[k], for every k (the elementwise form of
    :meth:`~pipeline.operators.join.predicates.DensePredicate.match_values`, same arithmetic)."""
    kind = pred.kind
    if kind == "equi":
        return np.asarray(a[:, 0] == b[:, 0])
    if kind == "band":
        return np.asarray(np.abs(a[:, 0] - b[:, 0]) <= pred.epsilon)
    if kind == "distance":
        dx = a[:, 0] - b[:, 0]
        dy = a[:, 1] - b[:, 1]
        return np.asarray(dx * dx + dy * dy <= pred.epsilon * pred.epsilon)
    lcols = {c: a[:, i] for i, c in enumerate(pred.columns)}
    rcols = {c: b[:, i] for i, c in enumerate(pred.columns)}
    out = np.asarray(pred.fn(lcols, rcols), dtype=bool)
    return np.broadcast_to(out, (a.shape[0],))


def order_hits(probe: I64, ts: I64, seq: I64) -> I64:
    """The permutation sorting hits by (probe, ts, seq): one sort of a packed (probe, ts)
    key, then the runs of equal keys (a probe's hits with equal ts) sorted by seq."""
    if probe.shape[0] < 2:
        return np.arange(probe.shape[0])
    t0 = int(ts.min())
    if int(ts.max()) - t0 >= 1 << 40 or int(probe.max()) >= 1 << 22:
        return np.lexsort((seq, ts, probe))
    key = (probe << 40) | (ts - t0)
    order = np.argsort(key, kind="stable")
    packed = key[order]
    tie = packed[1:] == packed[:-1]
    if bool(tie.any()):
        idx = np.flatnonzero(np.concatenate(([False], tie)) | np.concatenate((tie, [False])))
        sub = order[idx]
        order[idx] = sub[np.lexsort((seq[sub], packed[idx]))]
    return order


def expand(pp: I64, h_probe: I64, size: int) -> tuple[I64, I64, int]:
    """Every (partial, hit of the same probe) pair: partial index and hit index, in
    partial-major order (both inputs are sorted by probe)."""
    h_count = np.bincount(h_probe, minlength=size)
    h_start = np.cumsum(h_count) - h_count
    rep = h_count[pp]
    tot = int(rep.sum())
    cp = np.repeat(np.arange(pp.shape[0]), rep)
    ch = np.repeat(h_start[pp] - (np.cumsum(rep) - rep), rep) + np.arange(tot)
    return cp, ch, tot
