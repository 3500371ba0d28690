"""Recall model γ(L, K) of Ji et al. (ICDE, §IV-A/B, Eqs. 1–6), vectorized over K.

γ(L,K) = N^⋈_prod(L,K) / N^⋈_true(L) predicts the recall of the results produced in the
next adaptation interval under a common K-slack size K (Same-K policy, Theorem 1).
:func:`gamma_curve` evaluates it for every candidate K = 0, g, 2g, …, k_max·g at once:

* Eq. 2 — the delay a tuple still has at the join is max(0, delay − K − K_i^sync), so
  with F_i the CDF of f_{D_i} and s_i = ⌊(K + K_i^sync)/g⌋ bins of buffering,
  f_{D_i^K}(0) = F_i(s_i) and Σ_{d=0}^{x} f_{D_i^K}(d) = F_i(s_i + x).
* Eq. 3 — basic windows of b ms (n_i = ⌈W_i/b⌉): w_i^l holds the tuples with
  D^K ≤ (l−1)·b/g. We use the *rate-free* sizes |w_i^l|/r_i, so the
  rates cancel and a complete window has size W_i exactly:
  A_i(K) = b · Σ_{l=1}^{n_i−1} F_i(s_i + (l−1)b/g) + (W_i − (n_i−1)b) · F_i(s_i + (n_i−1)b/g).
* Eq. 5 — γ(L,K) = sel^⋈(K)/sel^⋈ · Σ_i F_i(s_i) Π_{j≠i} A_j(K) / Σ_i Π_{j≠i} W_j.
* Eq. 6 — sel^⋈(K)/sel^⋈ from the profiler's maps (NonEqSel):
  [Σ_{d≤K/g} M^⋈ / Σ_{d≤K/g} M^×] · [Σ_{d≤MaxD^M} M^× / Σ_{d≤MaxD^M} M^⋈].
  When a ratio is undefined (no cross-join volume, no results) it falls back to 1
  (EqSel), i.e. no evidence of a delay/productivity correlation.

b must be a multiple of g (the paper's default is b = g = 10 ms); the inner sum of
Eq. 3 is then a strided prefix sum, so each candidate K costs O(m²) after O(n + k_max)
set-up per stream.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pipeline.core.errors import ConfigError, OperatorInputError
from pipeline.operators.disorder.quality.profiler import ProductivityMaps

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """Static inputs of the model: windows W_i (ms), basic window b and step g (ms)."""

    windows_ms: tuple[int, ...]
    granularity_ms: int
    basic_window_ms: int

    def __post_init__(self) -> None:
        if self.granularity_ms <= 0:
            raise ConfigError(f"disorder.granularity_ms: must be > 0, got {self.granularity_ms}")
        if self.basic_window_ms <= 0 or self.basic_window_ms % self.granularity_ms:
            raise ConfigError(
                f"recall model basic_window_ms: must be a positive multiple of "
                f"granularity_ms={self.granularity_ms}, got {self.basic_window_ms}"
            )
        if len(self.windows_ms) < 2 or any(w <= 0 for w in self.windows_ms):
            raise ConfigError(f"join windows: need >= 2 positive windows, got {self.windows_ms}")


def _cdf_extended(pdf: FloatArray, length: int) -> FloatArray:
    """CDF of ``pdf`` (normalized) on bins 0..length−1, saturating at 1."""
    total = float(pdf.sum())
    cdf = np.ones(length, dtype=np.float64)
    if total <= 0.0:
        return cdf
    c = np.minimum(np.cumsum(pdf) / total, 1.0)
    c[-1] = 1.0  # exact at the top bin (no rounding below 1 once every delay is covered)
    n = min(length, c.shape[0])
    cdf[:n] = c[:n]
    return cdf


def window_sizes(
    pdf: FloatArray, ksync_ms: float, window_ms: int, cfg: ModelConfig, k_max: int
) -> tuple[FloatArray, FloatArray]:
    """Eqs. 2–3 for K = 0..k_max bins: (f_{D^K}(0), rate-free Σ_l |w^l|) per K."""
    g, b = cfg.granularity_ms, cfg.basic_window_ms
    c = b // g
    n = math.ceil(window_ms / b)
    last = float(window_ms - (n - 1) * b)
    q = math.floor(ksync_ms / g)
    s = np.arange(k_max + 1, dtype=np.int64) + q  # buffering in bins per candidate K
    top = int(s[-1]) + (n - 1) * c + 1
    cdf = _cdf_extended(pdf, top)
    in_order = cdf[s]
    size = last * cdf[s + (n - 1) * c]
    if n > 1:
        # strided prefix sums: P[t] = F[t] + F[t−c] + F[t−2c] + …
        padded_len = -(-top // c) * c
        padded = np.ones(padded_len, dtype=np.float64)
        padded[:top] = cdf
        strided = np.cumsum(padded.reshape(-1, c), axis=0).reshape(-1)
        hi = strided[s + (n - 2) * c]
        lo_idx = s - c
        lo = np.where(lo_idx >= 0, strided[np.maximum(lo_idx, 0)], 0.0)
        size = size + b * (hi - lo)
    return in_order, size


def selectivity_ratio(maps: ProductivityMaps, k_max: int) -> FloatArray:
    """Eq. 6 (NonEqSel) for K = 0..k_max bins; 1.0 where a ratio is undefined (or not
    finite in floating point)."""
    size = k_max + 1
    cum_j = np.cumsum(maps.join)
    cum_x = np.cumsum(maps.cross)
    tot_j, tot_x = float(cum_j[-1]), float(cum_x[-1])
    if tot_j <= 0.0 or tot_x <= 0.0:
        return np.ones(size, dtype=np.float64)
    idx = np.minimum(np.arange(size), cum_j.shape[0] - 1)
    part_j, part_x = cum_j[idx], cum_x[idx]
    ratio = np.ones(size, dtype=np.float64)
    ok = part_x > 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        # the join share over the cross share: both ≤ 1, so a subnormal total (a map of
        # almost nothing) cannot overflow the ratio the way tot_x / tot_j would
        ratio[ok] = (part_j[ok] / tot_j) / (part_x[ok] / tot_x)
    ratio[~np.isfinite(ratio)] = 1.0
    return ratio


def gamma_curve(
    pdfs: Sequence[FloatArray],
    ksync_ms: Sequence[float],
    maps: ProductivityMaps | None,
    cfg: ModelConfig,
    k_max: int,
) -> FloatArray:
    """γ(L, K) (Eq. 5) for K = k·g, k = 0..k_max; ``maps=None`` gives EqSel."""
    m = len(cfg.windows_ms)
    if len(pdfs) != m or len(ksync_ms) != m:
        raise OperatorInputError(
            f"recall model: {m} windows but {len(pdfs)} delay pdfs and {len(ksync_ms)} K^sync"
        )
    k_max = max(int(k_max), 0)
    parts = [
        window_sizes(
            np.asarray(pdfs[i], dtype=np.float64), ksync_ms[i], cfg.windows_ms[i], cfg, k_max
        )
        for i in range(m)
    ]
    windows = [float(w) for w in cfg.windows_ms]
    cross = np.zeros(k_max + 1, dtype=np.float64)
    denom = 0.0
    for i in range(m):
        term = parts[i][0].copy()
        full = 1.0
        for j in range(m):
            if j != i:
                term *= parts[j][1]
                full *= windows[j]
        cross += term
        denom += full
    gamma = cross / denom
    if maps is not None:
        gamma = gamma * selectivity_ratio(maps, k_max)
    return gamma
