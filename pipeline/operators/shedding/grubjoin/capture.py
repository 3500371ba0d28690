"""A harvest's promised capture checked against the next Δ's shredded probes (ours; issue 28).

GrubJoin chooses the basic windows each direction scans from lag histograms learned over
the previous adaptation steps (§V-B, Eqs. (1)–(4)), and the solver takes the harvest
whose *modelled* output is largest (§IV-C). Where the lags hold still (the paper's
sensors) the windows it picks keep most results; where they move from one Δ to the next
(players of two teams meet at any lag) the windows that scored highest last Δ hold few of
this Δ's results, and a harvest then realizes a fraction of what it promised.

Window shredding (§V-B) answers how much, in the same interval and without the input
queue, staleness or the selectivity estimates in the way: a share ω of the probes scan
(almost) every window and report their results per logical basic window. For the
harvest under test — installed, or the one the model would install at full admission —
with S_{i,l} the windows direction i scans of W_l, its capture of direction i's results
in the interval is estimated from those probes as

    ρ_i = Π_l  Σ_probes Σ_{k∈S_{i,l}} M_{i,l}[k]  /  Σ_probes R_i          (positions
          treated as independent: the join reports per-position marginals M),

with ρ_i = 0 when direction i probes nothing and 1 for a position scanned whole, and
over all directions ρ = Σ_i R_i·ρ_i / Σ_i R_i (R_i: direction i's shredded results). The
model promised π = O({z}) / O(1) (same admission, full probing). The aged geometric mean
of ρ / π over the intervals with at least :data:`MIN_RESULTS` shredded results is the
factor w_c ∈ [1/LIMIT, 1] on every harvest's modelled output before the choice
(admission.py), replacing the realized-over-modelled calibration (calibration.py) when
shredding is on; the first shredding plans after a Δ boundary already count. A shredded
probe's first position scans only ⌈z·n⌉ evenly spread windows from a random offset, so
each window is scanned with the same probability and the ratios are unbiased.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pipeline.core.errors import OperatorStateError
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan

__all__ = ["DECAY", "LIMIT", "MIN_RESULTS", "CaptureCheck"]

#: fewest shredded results an interval needs to count (≈ 1/√n noise on ρ)
MIN_RESULTS = 30
#: aging of the log-ratio sum per counted interval
DECAY = 0.6
#: the weight is at least 1/LIMIT (and at most 1)
LIMIT = 20.0


class CaptureCheck:
    """ρ / π of the harvest under test, interval by interval (module docstring)."""

    def __init__(self, m: int, n_windows: tuple[int, ...]) -> None:
        self.m = m
        self.n_windows = n_windows
        #: masks[i][l]: windows of W_l direction i scans (None: all; l = i unused)
        self.masks: list[list[np.ndarray | None]] | None = None
        self.promised = 1.0  # π of the harvest under test
        self.hits = np.zeros((m, m), dtype=np.float64)  # Σ matches in S_{i,l}
        self.results = np.zeros(m, dtype=np.float64)  # Σ R_i
        self.seen = np.zeros((m, m), dtype=np.float64)  # Σ R_i over probes reaching l
        self.log_sum = 0.0
        self.weight_sum = 0.0
        self.counted = 0

    def install(self, plans: tuple[ProbePlan, ...] | None, promised: float) -> None:
        """The harvest under test from now on (None: nothing to test) and its π."""
        self.hits[:] = 0.0
        self.results[:] = 0.0
        self.seen[:] = 0.0
        if plans is None or not promised > 0.0:
            self.masks = None
            return
        masks: list[list[np.ndarray | None]] = [[None] * self.m for _ in range(self.m)]
        for i, plan in enumerate(plans):
            order = plan.order or ()
            wins = plan.windows or (None,) * len(order)
            for l, w in zip(order, wins, strict=True):
                if w is None:
                    continue
                mask = np.zeros(self.n_windows[l], dtype=bool)
                mask[list(w)] = True
                masks[i][l] = mask
        self.masks = masks
        self.promised = float(min(1.0, promised))

    def observe(self, fb: ProbeFeedback) -> None:
        """One shredded probe's per-window results."""
        if self.masks is None or fb.results <= 0:
            return
        i = fb.direction
        self.results[i] += fb.results
        for l, counts in zip(fb.order, fb.matches, strict=False):
            mask = self.masks[i][l]
            self.seen[i, l] += fb.results
            if mask is None:
                self.hits[i, l] += fb.results
            else:
                n = min(mask.shape[0], counts.shape[0])
                self.hits[i, l] += float(counts[:n][mask[:n]].sum())

    def realized(self) -> float | None:
        """ρ of the interval so far (None: fewer than :data:`MIN_RESULTS` results)."""
        total = float(self.results.sum())
        if self.masks is None or total < MIN_RESULTS:
            return None
        rho = 0.0
        for i in range(self.m):
            if self.results[i] <= 0:
                continue
            share = 1.0
            for l in range(self.m):
                if l == i or self.seen[i, l] <= 0:
                    continue
                share *= self.hits[i, l] / self.seen[i, l]
            rho += self.results[i] * share
        return rho / total

    def close(self) -> float | None:
        """Ends the interval: counts log(ρ / π) when it qualifies (returned; else None).
        The harvest under test stays until the next :meth:`install`."""
        rho = self.realized()
        self.hits[:] = 0.0
        self.results[:] = 0.0
        self.seen[:] = 0.0
        if rho is None:
            return None
        ratio = math.log(max(rho, 1e-6) / self.promised)
        self.log_sum = self.log_sum * DECAY + ratio
        self.weight_sum = self.weight_sum * DECAY + 1.0
        self.counted += 1
        return ratio

    def weight(self) -> float:
        """w_c = min(1, ρ / π aged), at least 1/:data:`LIMIT`; 1 before any interval."""
        if self.weight_sum <= 0.0:
            return 1.0
        return float(min(1.0, max(1.0 / LIMIT, math.exp(self.log_sum / self.weight_sum))))

    def snapshot(self) -> dict[str, Any]:
        return {"masks": None if self.masks is None else [
                    [None if k is None else np.flatnonzero(k).tolist() for k in row]
                    for row in self.masks],
                "promised": self.promised, "hits": self.hits.tolist(),
                "results": self.results.tolist(), "seen": self.seen.tolist(),
                "log_sum": self.log_sum, "weight_sum": self.weight_sum,
                "counted": self.counted}

    @classmethod
    def restore(cls, m: int, n_windows: tuple[int, ...], data: dict[str, Any]) -> CaptureCheck:
        try:
            obj = cls(m, n_windows)
            masks = data["masks"]
            if masks is not None:
                obj.masks = []
                for row in masks:
                    out: list[np.ndarray | None] = []
                    for l, idx in enumerate(row):
                        if idx is None:
                            out.append(None)
                            continue
                        mask = np.zeros(n_windows[l], dtype=bool)
                        mask[[int(v) for v in idx]] = True
                        out.append(mask)
                    obj.masks.append(out)
            obj.promised = float(data["promised"])
            obj.hits = np.asarray(data["hits"], dtype=np.float64).reshape(m, m)
            obj.results = np.asarray(data["results"], dtype=np.float64).reshape(m)
            obj.seen = np.asarray(data["seen"], dtype=np.float64).reshape(m, m)
            obj.log_sum = float(data["log_sum"])
            obj.weight_sum = float(data["weight_sum"])
            obj.counted = int(data["counted"])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise OperatorStateError(f"grubjoin capture snapshot: {exc!r}") from exc
        return obj
