"""γ(L, K) of Ji et al. (Eqs. 2, 3, 5, 6) written out loop by loop: the oracle of
:func:`pipeline.operators.disorder.quality.recall_model.gamma_curve`.

>>> reference_gamma([[1.0], [1.0]], [0.0, 0.0], None, [10, 10], 10, 10, 0)  # in order
1.0
>>> reference_gamma([[0.5, 0.5]] * 2, [0.0, 0.0], None, [10, 10], 10, 10, 0)  # half late
0.25
"""

from __future__ import annotations

import math

from pipeline.operators.disorder.quality.profiler import ProductivityMaps


def reference_gamma(
    pdfs: list[list[float]],
    ksync: list[float],
    maps: ProductivityMaps | None,
    windows: list[int],
    g: int,
    b: int,
    k_ms: int,
) -> float:
    """Eqs. 2, 3, 5, 6 exactly as written (rate-free |w|), no vectorization: ``pdfs`` the
    delay histogram of every stream (bins of ``g`` ms), ``ksync`` its K^sync (ms),
    ``maps`` the productivity maps (None = EqSel), ``windows`` W_i (ms), ``b`` the basic
    window (ms), ``k_ms`` the slack K."""
    m = len(windows)
    f0: list[float] = []
    sizes: list[float] = []
    for i in range(m):
        total = sum(pdfs[i])
        f = [p / total for p in pdfs[i]] if total > 0 else [1.0]
        shift = math.floor((k_ms + ksync[i]) / g)

        def f_k(d: int, f: list[float] = f, shift: int = shift) -> float:
            if d == 0:
                return sum(f[: shift + 1])
            return f[d + shift] if d + shift < len(f) else 0.0

        n = math.ceil(windows[i] / b)
        size = 0.0
        for l in range(1, n + 1):
            upto = (l - 1) * b // g
            width = b if l < n else windows[i] - (n - 1) * b
            size += width * sum(f_k(d) for d in range(upto + 1))
        f0.append(f_k(0))
        sizes.append(size)
    num = sum(f0[i] * math.prod(sizes[j] for j in range(m) if j != i) for i in range(m))
    den = sum(math.prod(windows[j] for j in range(m) if j != i) for i in range(m))
    ratio = 1.0
    if maps is not None:
        kb = k_ms // g
        tj, tx = float(maps.join.sum()), float(maps.cross.sum())
        pj, px = float(maps.join[: kb + 1].sum()), float(maps.cross[: kb + 1].sum())
        if tj > 0 and tx > 0 and px > 0:
            share_x = px / tx
            ratio = (pj / tj) / share_x if share_x > 0 else math.inf
            ratio = ratio if math.isfinite(ratio) else 1.0
    return ratio * num / den

