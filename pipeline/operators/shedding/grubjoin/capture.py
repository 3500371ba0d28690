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
model promised π = O({z}) / O(1) (same admission, full probing). Over the intervals t
with at least :data:`MIN_RESULTS` shredded results R_t, the aged mean of the realized
ratios, each interval weighed by √R_t,

    w_c = Σ_t d^{T−t}·√R_t·min(ρ_t/π_t, :data:`RATIO_CAP`)  /  Σ_t d^{T−t}·√R_t
          (d = :data:`DECAY`),

clipped to [1/LIMIT, 1], is the factor on every harvest's modelled output before the choice
(admission.py), replacing the realized-over-modelled calibration (calibration.py) when
shredding is on; the first shredding plans after a Δ boundary already count. A shredded
probe's first position scans only ⌈z·n⌉ evenly spread windows from a random offset, so
each window is scanned with the same probability and the ratios are unbiased.

Why √R_t: results come in episodes (two players meeting yields hundreds of results at one
lag), so an interval's R_t shredded results may be one or two episodes, and its ρ_t then
near 0 or 1. An interval's evidence grows with its episodes, not with its results: a mean
of log ratios took one missed episode's log 0 to the floor in one step, and
a ratio of sums (weights R_t) let one large episode missed by the first harvest (13,665
results) hold the weight at its floor for 50 s of harvests caught (positions at 2×,
docs/NOTES.md). √R_t sits between counting intervals alike and counting
results alike: one small interval missed after two large ones caught leaves the weight
near 0.8 of theirs, one large interval missed and one smaller caught brings it back over
0.5. A ratio is capped at :data:`RATIO_CAP` so one interval that found far more than
promised cannot outvote the rest either.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pipeline.core.errors import OperatorStateError
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan

__all__ = ["DECAY", "LIMIT", "MIN_RESULTS", "RATIO_CAP", "CaptureCheck"]

#: fewest shredded results an interval needs to count (≈ 1/√n noise on ρ)
MIN_RESULTS = 30
#: aging of the weighted ratios per counted interval
DECAY = 0.6
#: an interval's ρ / π counts at most this much
RATIO_CAP = 2.0
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
        self.ratio_sum = 0.0  # Σ d^{T−t}·√R_t·min(ρ_t/π_t, RATIO_CAP)
        self.root_sum = 0.0  # Σ d^{T−t}·√R_t
        self.counted = 0
        #: the last closed interval's metrics fields (:meth:`last_row`)
        self.last: dict[str, float] = {}

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

    def directions(self) -> list[float | None]:
        """ρ_i of the interval so far per direction (None: no shredded results)."""
        out: list[float | None] = []
        for i in range(self.m):
            if self.results[i] <= 0:
                out.append(None)
                continue
            share = 1.0
            for l in range(self.m):
                if l == i or self.seen[i, l] <= 0:
                    continue
                share *= self.hits[i, l] / self.seen[i, l]
            out.append(share)
        return out

    def realized(self, directions: list[float | None] | None = None) -> float | None:
        """ρ of the interval so far (None: fewer than :data:`MIN_RESULTS` results), from
        ``directions`` (:meth:`directions`, computed when not given)."""
        total = float(self.results.sum())
        if self.masks is None or total < MIN_RESULTS:
            return None
        rhos = self.directions() if directions is None else directions
        rho = sum(float(r) * s for r, s in zip(self.results, rhos, strict=True)
                  if s is not None)
        return rho / total

    def close(self) -> float | None:
        """Ends the interval: counts its capped ρ / π, weighed by √R, when it qualifies
        (ρ / π returned; else None).
        The harvest under test stays until the next :meth:`install`."""
        rhos = self.directions()
        rho = self.realized(rhos)
        total = float(self.results.sum())
        if self.masks is not None:
            self.last = {"capture_promised": round(self.promised, 4)}
            for i, (rho_i, res) in enumerate(zip(rhos, self.results, strict=True)):
                self.last[f"capture_results_{i}"] = float(res)
                if rho_i is not None:
                    self.last[f"capture_rho_{i}"] = round(rho_i, 4)
        self.hits[:] = 0.0
        self.results[:] = 0.0
        self.seen[:] = 0.0
        if rho is None:
            return None
        weight = math.sqrt(total)
        self.ratio_sum = self.ratio_sum * DECAY + weight * min(rho / self.promised, RATIO_CAP)
        self.root_sum = self.root_sum * DECAY + weight
        self.counted += 1
        return rho / self.promised

    def last_row(self) -> dict[str, float]:
        """The last closed interval with a harvest under test, for a metrics row:
        ``capture_promised`` (π), ``capture_results_<i>`` (R_i) per direction and
        ``capture_rho_<i>`` (ρ_i) per direction with results; empty before one."""
        return dict(self.last)

    def weight(self) -> float:
        """w_c = Σ √R·min(ρ/π, cap) / Σ √R aged, in [1/:data:`LIMIT`, 1]; 1 before
        any interval (module docstring)."""
        if self.root_sum <= 0.0:
            return 1.0
        return float(min(1.0, max(1.0 / LIMIT, self.ratio_sum / self.root_sum)))

    def snapshot(self) -> dict[str, Any]:
        return {"masks": None if self.masks is None else [
                    [None if k is None else np.flatnonzero(k).tolist() for k in row]
                    for row in self.masks],
                "promised": self.promised, "hits": self.hits.tolist(),
                "results": self.results.tolist(), "seen": self.seen.tolist(),
                "ratio_sum": self.ratio_sum, "root_sum": self.root_sum,
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
            if "root_sum" in data:
                obj.ratio_sum = float(data["ratio_sum"])
                obj.root_sum = float(data["root_sum"])
            else:  # an older state (ratio of sums, or log mean): its weight, as one interval
                if "kept_sum" in data:
                    mass = float(data["promised_sum"])
                    ratio = float(data["kept_sum"]) / mass if mass > 0.0 else 1.0
                else:
                    mass = float(data["weight_sum"])
                    ratio = math.exp(float(data["log_sum"]) / mass) if mass > 0.0 else 1.0
                if mass > 0.0:
                    obj.root_sum = math.sqrt(mass)
                    obj.ratio_sum = obj.root_sum * ratio
            obj.counted = int(data["counted"])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise OperatorStateError(f"grubjoin capture snapshot: {exc!r}") from exc
        return obj
