"""Admission by time slices, aligned across the streams (ours; issue 28).

When GrubJoin admits only a fraction a of the tuples (admission.py), *which* tuples it
keeps decides what they still produce. Kept independently at random, every stretch of
every stream is thinned, and a result — which needs all m members — survives with
probability a^m. Tail drop in front of the join keeps whole stretches instead: its queue
overflows for a while and then admits everything, for every stream at once, so the
tuples it keeps are contemporaries, and in a join whose matches lie at short lags their
partners were kept with them (about a of the output rather than a^m).

Here the engine clock (stream time at release, which the Synchronizer keeps in timestamp
order across the streams) is cut into slices of ``slice_ms``; slice k gets one uniform
draw u_k from a counter-based hash of (seed, k) — the same for every stream and for the
tuple and the batch paths, with no generator state to carry — and a tuple of stream i
released in slice k is admitted iff u_k < a_i. Over many slices a_i of the tuples are
kept; with equal fractions the kept slices are the same for all streams. Where matches
lie at lags longer than a slice the kept tuples' partners were kept with probability a,
as under random admission, so this is never the worse choice.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["slice_uniforms", "slices_kept"]

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def slice_uniforms(seed: int, slices: NDArray[np.int64]) -> NDArray[np.float64]:
    """One uniform in [0, 1) per slice index: the SplitMix64 finalizer of the slice
    index offset by the seed (a fixed function: the same slice always draws the same)."""
    with np.errstate(over="ignore"):
        x = (slices.astype(np.uint64) + np.uint64(seed & 0xFFFFFFFF) * np.uint64(
            0x9E3779B97F4A7C15)) & _MASK
        x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK
        x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK
        x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def slices_kept(nows: NDArray[np.int64], fractions: NDArray[np.float64], seed: int,
                slice_ms: int) -> NDArray[np.bool_]:
    """Whether each tuple (released at engine clock ``nows``, its stream's admitted
    fraction in ``fractions``) is admitted: its slice's uniform < its fraction."""
    slices = np.floor_divide(np.asarray(nows, dtype=np.int64), slice_ms)
    return slice_uniforms(seed, slices) < fractions
