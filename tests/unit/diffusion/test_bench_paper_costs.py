"""The two readings of the paper's simulation costs (Gu et al. §6.2: 1 ms per tuple
received, 10 ms per join probe) in the virtual cluster, and the paper-scale orderings
averaged over seeds (issue 31, session 17)."""

from __future__ import annotations

import numpy as np

from bench.diffusion.cluster import pair_units, run_keys
from bench.diffusion.ctr_run import run_ctr
from bench.diffusion.measures import measure
from bench.diffusion.oracle import oracle_rows
from bench.diffusion.parts import band_eps, make_router
from bench.diffusion.sweeps import paper_orderings, paper_table
from bench.diffusion.workload import make_workload


def _workload() -> object:
    return make_workload("p", windows=(300, 300, 300), rates=(100.0,) * 3,
                         duration_ms=4_000, eps=band_eps(3, 30), seed=6)


def test_pair_units_charge_receipts_and_candidates() -> None:
    assert pair_units(3, 2).tolist() == 23.0


def test_atr_pairs_are_receipts_plus_ten_per_candidate() -> None:
    """Oracle (2-way, G = 1): every tuple received once; the candidates are, brute force,
    the earlier tuples of the other stream inside the prober's window."""
    wl = make_workload("p2", windows=(300, 300), rates=(100.0, 100.0), duration_ms=3_000,
                       eps=band_eps(2, 30), seed=6)
    trace = run_keys(wl, make_router("atr", wl, 1, None, 1_000), 1, 1_000)
    assert trace.pairs is not None
    gid = np.arange(wl.n)
    candidates = sum(int(((wl.stream != wl.stream[x]) & (gid < x)
                          & (wl.ts >= wl.ts[x] - 300)).sum()) for x in range(wl.n))
    assert trace.pairs.sum() == wl.n + 10 * candidates
    got = measure(trace, oracle_rows(wl))
    assert got["async_rate_pairs"] == round(wl.n / trace.pairs.sum() * 1000, 3)
    assert got["batch_rate_pairs"] == got["async_rate_pairs"]  # one key


def test_ctr_pairs_count_tuples_and_partials_received_once() -> None:
    wl = _workload()
    trace = run_ctr(wl, 4, 1_000, 150, selectivity=2 * wl.eps)
    assert trace.pairs is not None and trace.paper is not None
    got = measure(trace, oracle_rows(wl))
    assert got["equals_oracle"] and got["duplicates"] == 0
    received = trace.received.sum() + trace.shipped
    # pairs = received + 10 · (cost − received): the same receipts the paper costs count
    assert np.isclose(trace.pairs.sum(), received + 10 * (trace.cost.sum() - received))
    assert np.isclose(trace.paper.sum() - received, 10 * round(
        (trace.paper.sum() - received) / 10))
    # per trigger no host borrows another trigger's idle time
    assert got["batch_rate_pairs"] <= got["async_rate_pairs"]
    assert got["batch_rate_paper"] <= got["async_rate_paper"]


def _row(part: str, router: str, m: int, w: int, seed: int, rate: float,
         atr_t: str | None = "fixed") -> dict[str, object]:
    t = {"fixed": 20_000, "W": w}.get(str(atr_t), w // 10)
    return {"part": part, "router": router, "streams": m, "window_ms": w, "seed": seed,
            "atr_t": atr_t if router == "atr" else None, "segment_ms_used": t,
            "async_rate_paper": rate,
            "replication": 1.0, "shipped_per_tuple": 0.0}


def test_orderings_read_the_mean_over_seeds_and_the_chosen_atr_segment() -> None:
    rows = [
        # 5 streams: CTR behind on seed 7, ahead by more on seed 8 → ahead on the mean
        _row("paper_streams", "ctr", 5, 20_000, 7, 1.0),
        _row("paper_streams", "atr", 5, 20_000, 7, 2.0),
        _row("paper_streams", "ctr", 5, 20_000, 8, 5.0),
        _row("paper_streams", "atr", 5, 20_000, 8, 2.0),
        # W = 50 s: ATR with T fixed behind CTR, with T = W ahead of it
        _row("paper_windows", "ctr", 3, 50_000, 7, 2.0),
        _row("paper_windows", "atr", 3, 50_000, 7, 1.0, "fixed"),
        _row("paper_windows", "atr", 3, 50_000, 7, 3.0, "W"),
    ]
    fixed, t_w = paper_orderings(rows)["async_rate_paper"], paper_orderings(rows, "W")[
        "async_rate_paper"]
    assert fixed["ctr_ahead_of_atr_for_ge_5_streams"] is True
    assert fixed["ctr_ahead_of_atr_for_long_windows"] is True
    assert t_w["ctr_ahead_of_atr_for_long_windows"] is False
    assert fixed["atr_ahead_of_ctr_for_le_3_streams"] is None  # no such point
    # at W = 20 s the fixed T is T = W: the same rows serve both rules
    assert t_w["ctr_ahead_of_atr_for_ge_5_streams"] is True
    table = {(r["part"], r["router"], r["atr_t"]): r for r in paper_table(rows)}
    assert table[("paper_streams", "ctr", None)]["async_rate_paper"] == 3.0
    assert table[("paper_streams", "ctr", None)]["seeds"] == 2
    assert table[("paper_windows", "atr", "W")]["async_rate_paper"] == 3.0
