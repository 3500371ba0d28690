"""Gedik et al.'s selective-processing workload (CIKM §5): item sets whose popularity
rotates in time, one stream shifted against the other.

* items are the integers 1..L; a set has round(N(μ, σ)) distinct items (clipped to
  [1, L]), drawn one after another, each with probability ∝ its popularity among the
  items not drawn yet (successive sampling without replacement);
* popularity is Zipf with skew κ over the popularity rank r = 1..L: p_r ∝ r^−κ;
* the ranks rotate with the cycle period ς: at stream time T (seconds since the start),
  a stream shifted by τ has most popular item a(T) = 1 + ⌊L·((T − τ) mod ς)/ς⌋, rank r
  is item ((a − 1 + r − 1) mod L) + 1. Two streams shifted by τ_1, τ_2 thus match best
  when their tuples are (τ_2 − τ_1) mod ς apart (the paper's Fig. 2).

The equi-join variant is the same with L = 5,000 and sets of exactly one item. The
functions are pure: the seed's generator and the event times are their only inputs (no
clock is read; the times start at the spec's ``start_ms``).
"""

from __future__ import annotations

import numpy as np

from connectors.workloads.disorder import sample_zipf_ranks, zipf_pmf
from connectors.workloads.params import OverlapParams

#: largest (rows × L) block of random keys drawn at once
_BLOCK = 1 << 22


def rotation_head(phi_s: np.ndarray, shift_s: float, params: OverlapParams) -> np.ndarray:
    """a(T) − 1 (0-based) for every stream time T = ``phi_s``: the most popular item of a
    stream shifted by ``shift_s``.

    >>> rotation_head(np.array([0.0, 0.4, 39.9, 40.0]), 0.0, OverlapParams()).tolist()
    [0, 1, 99, 0]
    >>> rotation_head(np.array([25.0]), 25.0, OverlapParams()).tolist()
    [0]
    """
    frac = np.mod(phi_s - shift_s, params.cycle_s) / params.cycle_s
    head = np.floor(params.items * frac).astype(np.int64)
    return np.minimum(head, params.items - 1)


def set_sizes(n: int, params: OverlapParams, rng: np.random.Generator) -> np.ndarray:
    """round(N(μ, σ)) per set, clipped to [1, L]."""
    raw = np.rint(rng.normal(params.size_mean, params.size_std, n))
    return np.clip(raw, 1, params.items).astype(np.int64)


def popularity_ranks(sizes: np.ndarray, params: OverlapParams,
                     rng: np.random.Generator) -> np.ndarray:
    """n × max(size) popularity ranks (0-based, −1 = absent) in draw order: successive
    sampling without replacement ∝ Zipf(κ), by the Gumbel-top-k trick (the k largest
    log p_r + Gumbel keys are a successive sample of size k)."""
    n, width = sizes.shape[0], int(sizes.max()) if sizes.size else 0
    out = np.full((n, width), -1, dtype=np.int64)
    if n == 0:
        return out
    if width == 1:  # single values: one inverse-CDF draw each
        out[:, 0] = sample_zipf_ranks(params.items, params.kappa, n, rng)
        return out
    logp = np.log(zipf_pmf(params.items, params.kappa))
    step = max(1, _BLOCK // params.items)
    for lo in range(0, n, step):
        keys = logp[None, :] + rng.gumbel(size=(min(step, n - lo), params.items))
        top = np.argpartition(-keys, width - 1, axis=1)[:, :width]
        order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1, kind="stable")
        out[lo : lo + top.shape[0]] = np.take_along_axis(top, order, axis=1)
    out[np.arange(width)[None, :] >= sizes[:, None]] = -1
    return out


def item_sets(phi_s: np.ndarray, shift_s: float, params: OverlapParams,
              rng: np.random.Generator) -> np.ndarray:
    """n × max(size) items (1..L, −1 = absent) of the sets at stream times ``phi_s``: the
    drawn popularity ranks mapped through the rotation at each set's time."""
    sizes = set_sizes(phi_s.shape[0], params, rng)
    ranks = popularity_ranks(sizes, params, rng)
    head = rotation_head(phi_s, shift_s, params)
    items = np.mod(head[:, None] + ranks, params.items) + 1
    return np.where(ranks >= 0, items, -1)


def overlap_columns(times_ms: np.ndarray, start_ms: int, shift_s: float,
                    params: OverlapParams, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``set_items`` (n × width, −1 = absent; the record's ``items`` in draw order) and
    ``value`` = the first item drawn (the equi-join variant's single value)."""
    phi_s = (times_ms - start_ms) / 1000.0
    sets = item_sets(phi_s, shift_s, params, rng)
    value = sets[:, 0] if sets.shape[1] else np.zeros(0, np.int64)
    return {"set_items": sets, "value": value.astype(np.int64)}
