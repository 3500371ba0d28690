"""GrubJoin's cost model C({z}) and output model O({z}) (Gedik et al., TKDE, §IV-C).

A harvesting configuration is held as integer *counts* ``k[i, j]`` = the number of
logical basic windows of W_{r_{i,j}} scanned at position j of direction i, so that
z_{i,j} = k[i, j] / n_{r_{i,j}} (the paper assumes z_{i,j}·n is an integer). With the
scores p^k_{i,j} sorted in descending order (the window rankings s^v_{i,j}), the yield
factor of scanning k windows is P_{i,j}(k) = Σ_{v≤k} p^{s^v}_{i,j} / Σ_v p^v_{i,j}.

    N_{i,1} = 1,  N_{i,j} = Π_{k<j} P_{i,k} σ_{i,r_{i,k}} S_{i,k}        (partial results)
    C_i = Σ_j z_{i,j} S_{i,j} N_{i,j},   C = Σ_i λ_i (C_i + c_t)           (cost, per second)
    O = Σ_i λ_i N_{i,m}                                                  (outputs per second)

``c_p`` (``probe_cost``, ours, default 0 as in the paper) is a fixed cost of every tuple
whose direction probes at all (k_{i,·} > 0): the per-probe bookkeeping of a real join,
which no harvest fraction shrinks — so a direction scanning one window is not nearly
free. It is added to C_i of every non-zero row, by every solver.
``c_t`` is a fixed per-tuple cost (insertion, expiry, bookkeeping) that the paper leaves
out "for brevity"; it is the same for every configuration, so it only shifts C.
Directions are independent in both C and O, which the solvers exploit.

Indexed cost (ours, ``HarvestModel.indexed``), fitted to the batched indexed probe
(:mod:`~pipeline.operators.join.run_probe`, ``[join] index``): one sorted value index per
stream window is searched once per probe and position — ``c_w`` units — and every row
in the probing tuple's value range is a candidate (1 unit each) whatever the harvest
selection, which only filters them; the partial results then meet the rows found (1 unit
per pair). Position j, reached only if it scans any window (k_j > 0), costs

    ρ_j·(c_w + q_{i,j}) + N_{i,j}·P_{i,j}(k_j)·q_{i,j},   q_{i,j} = σ_{i,r_{i,j}}·S_{i,j}

with σ the pair selectivity of the probing tuple and stream r_{i,j} (the first-position
σ, at every position: candidates and rows found match the probing tuple), and
ρ_j = 1 − exp(−N_{i,j}) for j ≥ 2 (ρ_1 = 1), the probability that the probe reaches
position j at all (Poisson; it stops once no partial result is left). N_{i,j} is as in
the paper's model. Harvesting a position's windows therefore saves pairs and later
positions' work, not the lookup — with an index, shedding windows buys less, and
``c_w`` (:data:`~pipeline.operators.join.run.INDEX_WINDOW_COST`) is measured against a
candidate's cost (``harvest bench join``, ``indexed.lookup_cost_fit``).

Each adaptation step builds the model from the measured rates and selectivities
(:func:`build_model`, on :mod:`~pipeline.operators.shedding.online_stats`), with
low-selectivity-first join orders (MJoin; GrubJoin §V) that change only past a margin
(:func:`stable_orders`, ours).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: a direction's join order changes only for a first selectivity below this × the old one
ORDER_MARGIN = 0.7


def join_orders(selectivity: FloatArray) -> IntArray:
    """MJoin's low-selectivity-first order per direction (GrubJoin §V).

    ``selectivity`` is the m×m matrix σ_{i,l}; row i of the result is R_i, the other
    streams sorted by ascending σ_{i,l} (ties by stream index, so it is deterministic).
    """
    sel = np.asarray(selectivity, dtype=np.float64)
    m = sel.shape[0]
    orders = np.empty((m, m - 1), dtype=np.int64)
    for i in range(m):
        others = [l for l in range(m) if l != i]
        orders[i] = sorted(others, key=lambda l: (sel[i, l], l))
    return orders


def yield_table(scores: FloatArray) -> FloatArray:
    """Cumulative yield P(k) for k = 0..n from one score vector (GrubJoin §IV-C).

    Scores are sorted in descending order (the window ranking); P(0) = 0, P(n) = 1.
    A score vector summing to zero is treated as flat (P(k) = k/n).
    """
    p = np.sort(np.clip(np.asarray(scores, dtype=np.float64), 0.0, None))[::-1]
    n = p.shape[0]
    total = float(p.sum())
    if total <= 0.0:
        return np.arange(n + 1, dtype=np.float64) / n
    return np.concatenate(([0.0], np.cumsum(p) / total))


def window_ranking(scores: FloatArray) -> IntArray:
    """Window ranking s^v (0-based logical basic window indices, best first).

    Ties go to the newer window (smaller index), so flat scores scan newest first.
    """
    p = np.asarray(scores, dtype=np.float64)
    return np.lexsort((np.arange(p.shape[0]), -p)).astype(np.int64)


@dataclass(frozen=True)
class HarvestModel:
    """Inputs of the cost/output model for one adaptation step.

    rates: λ_i (tuples/s); window_tuples: S_l = λ_l·w_l; selectivity: σ (m×m) at the
    first position of an order; deep_selectivity: σ at later positions (the share of
    partial results a window extends; None = the same as ``selectivity``);
    orders: R_i (m×(m−1) stream indices); n_windows: n_l per stream;
    yields: P tables, ``yields[i][j]`` of length n_{r_{i,j}} + 1; tuple_cost: c_t;
    indexed / window_cost: the indexed cost model and its c_w (ours, module docstring);
    probe_cost: c_p per probing tuple (ours, module docstring).
    """

    rates: tuple[float, ...]
    window_tuples: tuple[float, ...]
    selectivity: tuple[tuple[float, ...], ...]
    orders: tuple[tuple[int, ...], ...]
    n_windows: tuple[int, ...]
    yields: tuple[tuple[tuple[float, ...], ...], ...]
    tuple_cost: float = 0.0
    deep_selectivity: tuple[tuple[float, ...], ...] | None = None
    indexed: bool = False
    window_cost: float = 1.0
    probe_cost: float = 0.0

    @staticmethod
    def build(
        rates: FloatArray,
        window_tuples: FloatArray,
        selectivity: FloatArray,
        scores: list[list[FloatArray]],
        orders: IntArray | None = None,
        tuple_cost: float = 0.0,
        deep_selectivity: FloatArray | None = None,
        indexed: bool = False,
        window_cost: float = 1.0,
        probe_cost: float = 0.0,
    ) -> HarvestModel:
        """Validate and freeze; ``scores[i][j]`` is p^k_{i,j}, k = 1..n_{r_{i,j}}."""
        lam = np.asarray(rates, dtype=np.float64)
        m = lam.shape[0]
        sel = np.asarray(selectivity, dtype=np.float64)
        if m < 2 or sel.shape != (m, m):
            raise ConfigError(f"selectivity: expected a {m}x{m} matrix, got shape {sel.shape}")
        if window_cost < 0:
            raise ConfigError(f"window_cost: must be >= 0, got {window_cost}")
        if probe_cost < 0:
            raise ConfigError(f"probe_cost: must be >= 0, got {probe_cost}")
        if np.any(lam < 0) or np.any(sel < 0):
            raise ConfigError(f"rates/selectivity: must be >= 0, got {lam} / {sel}")
        order = join_orders(sel) if orders is None else np.asarray(orders, dtype=np.int64)
        if order.shape != (m, m - 1):
            raise ConfigError(f"orders: expected shape {(m, m - 1)}, got {order.shape}")
        n = [0] * m
        ytab: list[tuple[tuple[float, ...], ...]] = []
        for i in range(m):
            row = []
            for j in range(m - 1):
                l = int(order[i, j])
                sc = np.asarray(scores[i][j], dtype=np.float64)
                if n[l] and n[l] != sc.shape[0]:
                    raise ConfigError(
                        f"scores: window {l} has {n[l]} and {sc.shape[0]} basic windows"
                    )
                n[l] = sc.shape[0]
                row.append(tuple(float(v) for v in yield_table(sc)))
            ytab.append(tuple(row))
        return HarvestModel(
            rates=tuple(float(v) for v in lam),
            window_tuples=tuple(float(v) for v in np.asarray(window_tuples, dtype=np.float64)),
            selectivity=tuple(tuple(float(v) for v in r) for r in sel),
            orders=tuple(tuple(int(v) for v in r) for r in order),
            n_windows=tuple(n),
            yields=tuple(ytab),
            tuple_cost=float(tuple_cost),
            deep_selectivity=None if deep_selectivity is None else tuple(
                tuple(float(v) for v in r) for r in np.asarray(deep_selectivity)),
            indexed=bool(indexed),
            window_cost=float(window_cost),
            probe_cost=float(probe_cost),
        )

    @property
    def m(self) -> int:
        return len(self.rates)

    def max_counts(self) -> IntArray:
        """n_{r_{i,j}} per (i, j): the count meaning z_{i,j} = 1."""
        n = np.asarray(self.n_windows, dtype=np.int64)
        return n[np.asarray(self.orders, dtype=np.int64)]

    def arrays(self) -> ModelArrays:
        """Dense NumPy views used by the vectorized solvers."""
        return ModelArrays.of(self)

    def evaluate(self, counts: IntArray) -> tuple[FloatArray, FloatArray]:
        """C and O for a batch of configurations ``counts`` of shape (..., m, m−1)."""
        return self.arrays().evaluate(counts)

    def fixed_cost(self) -> float:
        """Σ_i λ_i c_t: the part of C that no configuration changes."""
        return float(np.sum(self.rates)) * self.tuple_cost

    def full_cost(self) -> float:
        """C(1): the cost of the full join (every z_{i,j} = 1)."""
        cost, _ = self.evaluate(self.max_counts())
        return float(cost)

    def fractions(self, counts: IntArray) -> FloatArray:
        """Harvest fractions z_{i,j} = k_{i,j} / n_{r_{i,j}}."""
        return np.asarray(counts, dtype=np.float64) / self.max_counts()


@dataclass(frozen=True)
class ModelArrays:
    """The model as padded arrays: ytab[i, j, k] = P_{i,j}(k), one-padded beyond n."""

    lam: FloatArray
    seg: FloatArray  # S_{i,j} = S_{r_{i,j}}
    sel: FloatArray  # σ_{i,r_{i,j}}
    nmax: IntArray
    ytab: FloatArray
    tuple_cost: float
    indexed: bool = False
    window_cost: float = 1.0
    probe_cost: float = 0.0
    #: σ_{i,r_{i,j}} of the probing tuple at every position (the indexed cost's q)
    pair: FloatArray | None = None

    @staticmethod
    def of(model: HarvestModel) -> ModelArrays:
        order = np.asarray(model.orders, dtype=np.int64)
        m = model.m
        s = np.asarray(model.window_tuples, dtype=np.float64)
        rows = np.arange(m)[:, None]
        sel = np.asarray(model.selectivity, dtype=np.float64)[rows, order]
        pair = sel.copy()
        if model.deep_selectivity is not None:
            deep = np.asarray(model.deep_selectivity, dtype=np.float64)[rows, order]
            sel[:, 1:] = deep[:, 1:]
        nmax = model.max_counts()
        width = int(nmax.max()) + 1
        ytab = np.zeros((m, m - 1, width), dtype=np.float64)
        for i in range(m):
            for j in range(m - 1):
                y = np.asarray(model.yields[i][j])
                ytab[i, j, : y.shape[0]] = y
                ytab[i, j, y.shape[0] :] = 1.0
        return ModelArrays(
            lam=np.asarray(model.rates, dtype=np.float64),
            seg=s[order],
            sel=sel,
            nmax=nmax,
            ytab=ytab,
            tuple_cost=model.tuple_cost,
            indexed=model.indexed,
            window_cost=model.window_cost,
            probe_cost=model.probe_cost,
            pair=pair,
        )

    def _cost(self, k: IntArray, p: FloatArray, n_before: FloatArray, seg: FloatArray,
              nmax: IntArray, pair: FloatArray) -> FloatArray:
        """Σ_j cost of position j: z_j S_j N_j (GrubJoin §IV-C), or the indexed form
        [k_j > 0]·(ρ_j (c_w + q_j) + N_j P_j q_j), q_j = σ^pair_j S_j (ours, module
        docstring; ``p`` = P_j(k_j)); last axis j."""
        probing = self.probe_cost * (k > 0).any(axis=-1)  # c_p per probing tuple (ours)
        if not self.indexed:
            return (k / nmax * seg * n_before).sum(axis=-1) + probing
        reach = np.concatenate(
            [np.ones_like(n_before[..., :1]), -np.expm1(-n_before[..., 1:])], axis=-1)
        q = pair * seg
        per = np.where(k > 0, reach * (self.window_cost + q) + n_before * p * q, 0.0)
        return per.sum(axis=-1) + probing

    def direction_terms(self, counts: IntArray) -> tuple[FloatArray, FloatArray]:
        """Per-direction (λ_i C_i, λ_i N_{i,m}) for counts of shape (..., m, m−1)."""
        k = np.asarray(counts, dtype=np.int64)
        m = self.sel.shape[0]  # lam may carry leading axes (admission's grid of scalings)
        rows = np.arange(m)[:, None]
        cols = np.arange(m - 1)[None, :]
        p = self.ytab[rows, cols, k]
        factor = p * self.sel * self.seg
        n_part = np.cumprod(factor, axis=-1)
        n_before = np.concatenate([np.ones_like(n_part[..., :1]), n_part[..., :-1]], axis=-1)
        pair = self.sel if self.pair is None else self.pair
        cost = self._cost(k, p, n_before, self.seg, self.nmax, pair)
        return self.lam * cost, self.lam * n_part[..., -1]

    def row_terms(self, i: int, rows: IntArray) -> tuple[FloatArray, FloatArray]:
        """(λ_i C_i, λ_i N_{i,m}) for candidate count rows (B, m−1) of direction i alone."""
        k = np.asarray(rows, dtype=np.int64)
        p = self.ytab[i, np.arange(k.shape[-1]), k]
        factor = p * self.sel[i] * self.seg[i]
        n_part = np.cumprod(factor, axis=-1)
        n_before = np.concatenate([np.ones_like(n_part[..., :1]), n_part[..., :-1]], axis=-1)
        pair = self.sel[i] if self.pair is None else self.pair[i]
        cost = self._cost(k, p, n_before, self.seg[i], self.nmax[i], pair)
        return self.lam[i] * cost, self.lam[i] * n_part[..., -1]

    def fixed_cost(self) -> float:
        """Σ_i λ_i c_t (as :meth:`HarvestModel.fixed_cost`)."""
        return float(self.lam.sum()) * self.tuple_cost

    def evaluate(self, counts: IntArray) -> tuple[FloatArray, FloatArray]:
        """Total C({z}) (including Σλ_i c_t) and O({z}) for a batch of configurations."""
        cost, out = self.direction_terms(counts)
        return cost.sum(axis=-1) + self.fixed_cost(), out.sum(axis=-1)


def stable_orders(selectivity: FloatArray, previous: IntArray | None,
                  margin: float = ORDER_MARGIN) -> IntArray:
    """Low-selectivity-first orders (MJoin; GrubJoin §V) on each direction's own σ_{i,l},
    with hysteresis (ours): a direction keeps its previous order unless the new order's
    first selectivity is below ``margin`` × the previous first one, so estimation
    noise between near-equal selectivities does not flip plans every Δ."""
    orders = join_orders(selectivity)
    if previous is None:
        return orders
    for i in range(orders.shape[0]):
        if selectivity[i, orders[i, 0]] >= margin * selectivity[i, previous[i, 0]]:
            orders[i] = previous[i]
    return orders


def build_model(
    rates: FloatArray,
    windows_ms: tuple[int, ...],
    selectivity: tuple[FloatArray, FloatArray],
    score_fn: Callable[[int, int], FloatArray],
    tuple_cost: float,
    previous_orders: IntArray | None = None,
    indexed: bool = False,
    window_cost: float = 1.0,
    probe_cost: float = 0.0,
) -> tuple[HarvestModel, list[list[FloatArray]]]:
    """The §IV-C model for this step and the raw scores p^k_{i,j} (for the rankings).

    S_l = λ_l·w_l; ``selectivity`` = (first-position σ, later-position σ) from
    :meth:`~pipeline.operators.shedding.online_stats.OnlineStats.selectivity`; orders
    from :func:`stable_orders` on the first; ``indexed``/``window_cost``: the indexed
    cost model; ``probe_cost``: c_p per probing tuple (both ours, module docstring).
    """
    m = len(windows_ms)
    first, deep = selectivity
    raw = {(i, l): score_fn(i, l) for i in range(m) for l in range(m) if l != i}
    dead = [pair for pair, p in raw.items() if not float(np.sum(p)) > 0.0]
    if dead:
        # learned lags with no mass in W_l's age range: no partners for S_i there, so
        # σ_{i,l} = 0 (not the reverse direction's estimate that fills an unmeasured pair)
        first, deep = np.array(first, dtype=np.float64), np.array(deep, dtype=np.float64)
        for i, l in dead:
            first[i, l] = deep[i, l] = 0.0
    orders = stable_orders(first, previous_orders)
    scores = [[raw[(i, int(orders[i, j]))] for j in range(m - 1)] for i in range(m)]
    seg = rates * np.asarray(windows_ms, dtype=np.float64) / 1000.0
    model = HarvestModel.build(rates, seg, first, scores, orders, tuple_cost, deep,
                               indexed=indexed, window_cost=window_cost,
                               probe_cost=probe_cost)
    return model, scores
