"""Seconds per tuple and per comparison on the wall clock (ours; issue 28).

The cost models of GrubJoin (Gedik et al. §IV-C) and of the random drops count work in
comparisons, plus a fixed cost c_t per tuple in the same units. On the wall clock what a
tuple costs besides its comparisons (the batch path's encoding, classification, plan
lookup, insertion, per-probe bookkeeping) is measured, not configured: each timed unit r
— a tuple, or a whole run of the engine's batch path, timed with one clock reading — is
one observation

    y_r = a·n_r + b·X_r

of n_r tuples with X_r comparisons taking y_r seconds, and (a, b) is the least-squares
fit without intercept over the units seen: the normal equations

    [Σn²  ΣnX] [a]   [Σny]
    [ΣnX  ΣX²] [b] = [ΣXy].

With n_r = 1 they are the per-tuple line fit. a/b is then c_t in comparisons. The sums
can be aged (multiplied by a factor < 1 every adaptation step) so the fit follows a
machine whose load changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.operators.shedding.costmodel import FloatArray

__all__ = ["CONDITION", "WallCostFit"]

#: the fit is only trusted when the normal matrix is this far from singular (relative):
#: units whose comparisons per tuple are all alike cannot separate a from b
CONDITION = 1e-6


@dataclass
class WallCostFit:
    """The sums Σn, ΣX, Σy, Σn², ΣnX, ΣX², Σny, ΣXy of the timed units (module
    docstring); ``snapshot()`` is the list of the eight, ``restore`` reads it back."""

    sums: FloatArray = field(default_factory=lambda: np.zeros(8, dtype=np.float64))

    def observe(self, n: float, comparisons: float, seconds: float) -> None:
        """One timed unit: ``n`` tuples, ``comparisons`` comparisons, ``seconds``."""
        x, y = float(comparisons), float(seconds)
        self.sums += (n, x, y, n * n, n * x, x * x, n * y, x * y)

    def age(self, factor: float) -> None:
        """Multiply every sum by ``factor`` (older units weigh less)."""
        self.sums *= factor

    @property
    def tuples(self) -> float:
        return float(self.sums[0])

    @property
    def comparisons(self) -> float:
        return float(self.sums[1])

    @property
    def seconds(self) -> float:
        return float(self.sums[2])

    def solve(self, condition: float = CONDITION, floor: float = 0.0
              ) -> tuple[float, float] | None:
        """(a seconds per tuple, b seconds per comparison), or None when the units do not
        determine them: fewer than two, too alike (the determinant of the normal matrix
        not above ``condition`` × Σn²·ΣX², nor above ``floor``), or a fit with b ≤ 0 or
        a < 0."""
        n, _, _, snn, snx, sxx, sny, sxy = (float(v) for v in self.sums)
        det = snn * sxx - snx * snx
        if n < 2 or det <= max(condition * snn * sxx, floor):
            return None
        b = (snn * sxy - snx * sny) / det
        a = (sny - b * snx) / snn
        if b <= 0.0 or a < 0.0:
            return None
        return a, b

    def snapshot(self) -> list[float]:
        return [float(v) for v in self.sums]

    @classmethod
    def restore(cls, saved: Any) -> WallCostFit:
        """From :meth:`snapshot`; five sums (n, Σx, Σy, Σx², Σxy: an older per-tuple fit)
        read as the eight with n_r = 1."""
        fit = np.asarray(saved, dtype=np.float64)
        if fit.shape == (5,):
            n, sx, sy, sxx, sxy = fit
            fit = np.array([n, sx, sy, n, sx, sxx, sy, sxy])
        if fit.shape != (8,):
            raise ValueError(f"fit: expected 8 sums, got shape {fit.shape}")
        return cls(fit.astype(np.float64))
