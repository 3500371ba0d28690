"""The virtual cluster's cost accounting (issue 31, session 16): CTR's hosts scan only the
slots they were assigned (Gu et al. §3 step 3), the paper's simulation costs (§6.2), the
calibrated keyed-stage ratio and the paper-scale orderings."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.diffusion.cluster import paper_units, run_keys
from bench.diffusion.join import Host
from bench.diffusion.measures import measure
from bench.diffusion.oracle import oracle_rows
from bench.diffusion.parts import band_eps, make_router
from bench.diffusion.sweeps import calibrated_ratio, paper_orderings
from bench.diffusion.workload import make_workload


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 4), st.integers(20, 200),
       st.lists(st.tuples(st.integers(0, 40), st.integers(1, 5)), max_size=4))
def test_spans_scan_only_their_slots_and_find_what_a_filter_finds(
        seed: int, m: int, T: int, cuts: list[tuple[int, int]]) -> None:
    """Oracle: the unrestricted hop, its candidates filtered to the spans afterwards."""
    wl = make_workload("s", windows=(300,) * m, rates=(200.0,) * m, duration_ms=3_000,
                       eps=0.2, seed=seed)
    host = Host(wl)
    host.add(np.arange(wl.n, dtype=np.int64))
    spans = sorted({(a * T, (a + n) * T) for a, n in cuts})
    merged: list[tuple[int, int]] = []
    for a, b in spans:  # CTR hands over disjoint runs of slots
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    probers = np.flatnonzero(wl.stream == 0).astype(np.int64)
    members = np.full((len(probers), m), -1, np.int64)
    members[:, 0] = probers
    full, _ = host.extend(members, probers, 1)
    got, scanned = host.extend(members, probers, 1, merged)
    ts = wl.ts[full[:, 1]]
    inside = np.zeros(len(full), bool)
    for a, b in merged:
        inside |= (a <= ts) & (ts < b)
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, full[inside].tolist()))
    cand = 0
    for x in probers.tolist():
        j = np.flatnonzero((wl.stream == 1) & (np.arange(wl.n) < x)
                           & (wl.ts >= wl.ts[x] - 300))
        cand += sum(int(((a <= wl.ts[j]) & (wl.ts[j] < b)).sum()) for a, b in merged)
    assert scanned == cand


def test_paper_units_charge_receipts_and_probes() -> None:
    assert paper_units(3, 2).tolist() == 23.0
    wl = make_workload("p", windows=(200, 200), rates=(100.0, 100.0), duration_ms=4_000,
                       eps=band_eps(2, 20), seed=4)
    trace = run_keys(wl, make_router("atr", wl, 1, None, 1_000), 1, 1_000)
    assert trace.paper is not None
    # one key: every tuple received once and probing the other stream's window once
    # (the first tuple of all finds no window yet: it does not probe)
    probes = (trace.paper.sum() - wl.n) / 10
    assert wl.n - 2 <= probes <= wl.n
    got = measure(trace, oracle_rows(wl))
    assert got["async_rate_paper"] == round(wl.n / trace.paper.sum() * 1000, 3)


def test_calibrated_ratio_adds_a_fixed_cost_per_task() -> None:
    assert calibrated_ratio(1.889, 2.611, 2, 0.0) == 1.889
    ratios = [calibrated_ratio(1.889, 2.611, 2, f) for f in (0.2, 0.5, 0.8, 2.611 / 2)]
    assert all(a > b for a, b in itertools.pairwise(ratios))
    assert abs(ratios[-1] - 1.0) < 1e-9  # all fixed: nothing left to split


def test_paper_orderings_read_the_paper_scale_rows() -> None:
    rows = [{"part": "paper_streams", "router": r, "streams": m, "window_ms": 20_000,
             "async_rate": 1.0, "async_rate_cost": (2.0 if (r == "ctr") == (m >= 5) else 1.0),
             "async_rate_paper": None}
            for m in (2, 3, 5, 6) for r in ("atr", "ctr")]
    got = paper_orderings(rows)
    assert got["async_rate_cost"]["ctr_ahead_of_atr_for_ge_5_streams"]
    assert got["async_rate_cost"]["atr_ahead_of_ctr_for_le_3_streams"]
    assert got["async_rate"]["ctr_ahead_of_atr_for_ge_5_streams"] is False
    assert got["async_rate_paper"]["ctr_ahead_of_atr_for_ge_5_streams"] is None
    assert got["async_rate_cost"]["ctr_ahead_of_atr_for_long_windows"] is None


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 4),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 30),
                          st.integers(1, 10)), min_size=1, max_size=6))
def test_rows_with_spans_of_their_own_find_what_one_call_per_segment_finds(
        seed: int, m: int, segs: list[tuple[int, int, int, int]]) -> None:
    """Oracle: one :meth:`Host.extend` per segment. CTR's batched hop mixes segments of
    several prober streams (so rows differ in which members they have) and annotations."""
    wl = make_workload("r", windows=(300,) * m, rates=(150.0,) * m, duration_ms=3_000,
                       eps=0.3, seed=seed)
    host = Host(wl)
    host.add(np.arange(wl.n, dtype=np.int64))
    j = m - 1
    parts, want, want_scanned = [], [], 0
    for i, other, a, n in segs:
        i, other = i % (m - 1), other % (m - 1)
        probers = np.flatnonzero(wl.stream == i).astype(np.int64)
        rows = np.full((len(probers), m), -1, np.int64)
        rows[:, i] = probers
        if other != i:  # a second member already joined: partial results of a later hop
            rows, _ = host.extend(rows, probers, other)
        spans = [(a * 100, (a + n) * 100)]
        got, scanned = host.extend(rows, rows[:, i], j, spans)
        want += [tuple(r) for r in got.tolist()]
        want_scanned += scanned
        parts.append((rows, i, spans))
    members = np.concatenate([r for r, _, _ in parts])
    prober = np.concatenate([r[:, i] for r, i, _ in parts])
    starts = np.cumsum([0] + [len(r) for r, _, _ in parts])
    row = np.concatenate([np.arange(s, s + len(r)) for (r, _, _), s in zip(parts, starts,
                                                                           strict=False)])
    lo = np.concatenate([np.full(len(r), sp[0][0]) for r, _, sp in parts]).astype(np.int64)
    hi = np.concatenate([np.full(len(r), sp[0][1]) for r, _, sp in parts]).astype(np.int64)
    out, origin, scanned = host.extend_rows(members, prober, j, row, (lo, hi))
    assert sorted(map(tuple, out.tolist())) == sorted(want)
    assert scanned == want_scanned
    # each output row extends the input row it came from
    keep = np.arange(m) != j
    assert np.array_equal(out[:, keep], members[origin][:, keep])
