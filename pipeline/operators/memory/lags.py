"""Match-lag hazards for ``lagprob`` (ours, beyond Das et al.; cf. GrubJoin's lag
histograms in ``pipeline/operators/shedding/grubjoin/correlation.py``).

For each stream i, ages a = ⋈T − ts of its window's tuples are binned into ``N_BINS``
buckets over [0, W_i]. Every probe (whether or not shedding is on) adds

* ``matches[i][k]``: results whose stream-i member had an age in bucket k, and
* ``exposure[i][k]``: the results the value model *expected* from the stream-i residents
  of that age in this probe — Σ_x P_s(v_x)·Π_j n_j P_j(v_x), the per-probe form of PROB's
  priority (``BoundedMemory.rates``).

So g_i[k] = matches/exposure is the match intensity at age k relative to what the values
alone predict: ≈ 1 at every age when partners arrive uniformly over the window (then
``lagprob`` = ``prob``), a peak at the lag when a partner stream trails this one, 0 for a
stream whose tuples are never matched once stored. Dividing by the exposure (not by the
number of tuples stored) removes the survivor bias of an evicting policy: ages where
few tuples survive count as little as they were observed. Both sums get a prior of
``PRIOR`` expected matches at g = 1, so an unobserved age is neutral.

``factor(i, ages)`` = ḡ_i(a) = the mean of g_i over the buckets from a to the window's
end: the average intensity the tuple can still expect. It is a rate, not LIFE's
remaining-lifetime total: weighting by the time left made LIFE keep new low-value tuples
over old valuable ones (Das et al. §5.2.1); the mean stays 1 on flat lags and falls to 0
once the lag peak has passed. With ``stats_window_ms`` > 0 both histograms are halved
every ``stats_window_ms`` of event time, so a changing lag is learnt again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import OperatorStateError

F64 = NDArray[np.float64]
N_BINS = 32
PRIOR = 1.0


class LagModel:
    """Per-stream match and exposure histograms over the tuple age."""

    def __init__(self, windows_ms: tuple[int, ...], decay_every_ms: int = 0) -> None:
        self.windows_ms = windows_ms
        self.width = np.array([max(1, -(-(w + 1) // N_BINS)) for w in windows_ms], np.int64)
        m = len(windows_ms)
        self.matches = np.zeros((m, N_BINS))
        self.exposure = np.zeros((m, N_BINS))
        self.decay_every_ms = decay_every_ms
        self.next_decay: int | None = None

    def bins(self, stream: int, ages: NDArray[np.int64]) -> NDArray[np.int64]:
        return np.clip(ages // self.width[stream], 0, N_BINS - 1)

    def observe(self, stream: int, match_ages: NDArray[np.int64],
                resident_ages: NDArray[np.int64], expected: F64) -> None:
        """One probe's results against window ``stream`` and what its residents (ages)
        were expected to give."""
        if match_ages.size:
            self.matches[stream] += np.bincount(self.bins(stream, match_ages),
                                                minlength=N_BINS)
        if resident_ages.size:
            self.exposure[stream] += np.bincount(self.bins(stream, resident_ages),
                                                 weights=expected, minlength=N_BINS)

    def tick(self, now: int) -> None:
        """Halve both histograms once per ``decay_every_ms`` of event time (if set)."""
        if self.decay_every_ms <= 0:
            return
        if self.next_decay is None:
            self.next_decay = now + self.decay_every_ms
        while now >= self.next_decay:
            self.matches *= 0.5
            self.exposure *= 0.5
            self.next_decay += self.decay_every_ms

    def intensity(self, stream: int) -> F64:
        """g_i per bucket (prior: PRIOR expected matches at g = 1)."""
        return (self.matches[stream] + PRIOR) / (self.exposure[stream] + PRIOR)

    def factor(self, stream: int, ages: NDArray[np.int64]) -> F64:
        """ḡ_i(a): mean intensity over the buckets from each age to the window's end."""
        g = self.intensity(stream)
        suffix = np.cumsum(g[::-1])[::-1] / np.arange(N_BINS, 0, -1)
        return suffix[self.bins(stream, ages)]

    def snapshot(self) -> dict[str, Any]:
        return {"matches": self.matches.copy(), "exposure": self.exposure.copy(),
                "next_decay": self.next_decay}

    def restore(self, snap: dict[str, Any]) -> None:
        try:
            matches = np.asarray(snap["matches"], dtype=np.float64)
            exposure = np.asarray(snap["exposure"], dtype=np.float64)
            if matches.shape != self.matches.shape or exposure.shape != self.exposure.shape:
                raise OperatorStateError(
                    f"lag model: snapshot shape {matches.shape} != {self.matches.shape}")
            self.matches, self.exposure = matches, exposure
            nd = snap["next_decay"]
            self.next_decay = None if nd is None else int(nd)
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"lag model: bad snapshot: {exc!r}") from exc
