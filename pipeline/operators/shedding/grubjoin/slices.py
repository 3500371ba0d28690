"""Admission by time slices, aligned across the streams (ours; issue 28).

When GrubJoin admits only a fraction a of the tuples (admission.py), *which* tuples it
keeps decides what they still produce. Kept independently at random, every stretch of
every stream is thinned, and a result — which needs all m members — survives with
probability a^m. Tail drop in front of the join keeps whole stretches instead: its queue
overflows for a while and then admits everything, for every stream at once, so the
tuples it keeps are contemporaries, and in a join whose matches lie at short lags their
partners were kept with them (about a of the output rather than a^m).

Here the engine clock (stream time at release, which the Synchronizer keeps in timestamp
order across the streams) is cut into slices of ``slice_ms`` (the basic window, at most
the adaptation interval Δ, so every Δ holds a slice); slice k gets one value u_k of the
Weyl sequence u_k = frac(c + k·(√5 − 1)/2), its offset c a hash of the seed — a fixed
function of (seed, k), the same for every stream and for the tuple and the batch paths,
with no generator state to carry — and a tuple of stream i released in slice k is
admitted iff u_k < a_i. The sequence is equidistributed with the least discrepancy a
rotation has (three-distance theorem): any n consecutive slices keep n·a_i within a few
slices, where independent draws would drift by √(n·a(1−a)) — with slices as long as Δ,
two unlucky draws could otherwise drop everything a measured span holds, and with
a ≥ 0.618 no two neighbouring slices are both dropped. With equal fractions the kept
slices are the same for all streams. Where matches
lie at lags longer than a slice the kept tuples' partners were kept with probability a,
as under random admission, so this is never the worse choice.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["GOLDEN", "slice_uniforms", "slices_kept"]

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


#: the golden ratio's fractional part, (√5 − 1)/2: the rotation of least discrepancy
GOLDEN = 0.6180339887498949


def _offset(seed: int) -> float:
    """A uniform in [0, 1) from ``seed``: the SplitMix64 finalizer of the seed."""
    with np.errstate(over="ignore"):
        x = (np.uint64(seed & 0xFFFFFFFF) * np.uint64(0x9E3779B97F4A7C15)
             + np.uint64(0x9E3779B97F4A7C15)) & _MASK
        x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK
        x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK
        x = x ^ (x >> np.uint64(31))
    return float(x >> np.uint64(11)) / float(1 << 53)


def slice_uniforms(seed: int, slices: NDArray[np.int64]) -> NDArray[np.float64]:
    """One value in [0, 1) per slice index: the Weyl sequence frac(c + k·GOLDEN), c =
    the seed's hash (a fixed function: the same slice always draws the same). The
    product k·GOLDEN is reduced modulo 1 exactly in two parts, so slice indexes of a
    clock in milliseconds since 1970 keep their precision."""
    k = np.asarray(slices, dtype=np.int64)
    high, low = np.divmod(k, np.int64(1 << 20))
    hi_frac = np.mod(high.astype(np.float64) * (GOLDEN * (1 << 20) % 1.0), 1.0)
    lo_frac = np.mod(low.astype(np.float64) * GOLDEN, 1.0)
    u = np.mod(_offset(seed) + hi_frac + lo_frac, 1.0)
    return np.where(u >= 1.0, 0.0, u)


def slices_kept(nows: NDArray[np.int64], fractions: NDArray[np.float64], seed: int,
                slice_ms: int) -> NDArray[np.bool_]:
    """Whether each tuple (released at engine clock ``nows``, its stream's admitted
    fraction in ``fractions``) is admitted: its slice's value < its fraction."""
    slices = np.floor_divide(np.asarray(nows, dtype=np.int64), slice_ms)
    return slice_uniforms(seed, slices) < fractions
