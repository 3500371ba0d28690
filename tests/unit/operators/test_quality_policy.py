"""QualityPolicy (Ji et al. Fig. 2 + Alg. 3) wired into the real engine, against the oracle."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

from connectors.workloads import EquiParams, ExponentialDelay, WorkloadSpec, ZipfDelay, generate
from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.disorder.quality.delay_stats import delay_bin
from pipeline.operators.disorder.quality.policy import QualityConfig, QualityPolicy, merge_maps
from pipeline.operators.disorder.quality.profiler import ProductivityMaps
from pipeline.operators.disorder.quality.recall_model import ModelConfig, gamma_curve
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import event_from_dump
from pipeline.quality.oracle import duckdb_oracle
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import Spec, parse_spec
from pipeline.testing.recall import reference_gamma


def _spec(streams: int, window: int, mode: str, **disorder: Any) -> Spec:
    return parse_spec(
        {
            "join": {
                "streams": [f"s{i + 1}" for i in range(streams)],
                "window_ms": window,
                "predicate": "equi",
                "attribute": "a1",
            },
            "disorder": {"mode": mode, **disorder},
        }
    )


def _run(spec: Spec, records: list[dict[str, Any]]) -> tuple[list[Any], list[dict[str, Any]]]:
    eng = Engine(resolve_engine(spec))
    index = {s: i for i, s in enumerate(spec.join.streams)}
    out = eng.process_many(event_from_dump(r, index) for r in records)
    out += eng.flush()
    rows = [r for r in eng.drain_metrics() if r.get("source") == "disorder"]
    return out, rows


def _qc(windows: tuple[int, ...], recall: float = 0.9) -> QualityConfig:
    return QualityConfig(recall, 10_000, 1_000, 10, windows)


def test_no_disorder_keeps_k_zero() -> None:
    pol = QualityPolicy(_qc((1_000, 1_000)))
    for t in range(0, 3_000, 10):
        for s in (0, 1):
            pol.observe_arrival(s, t, 0)
            pol.observe_join(s, t, 0, 2, 20, False)
        if t % 1_000 == 990:
            row = pol.maybe_adapt(t + 10)
            assert row is not None
            assert row["k_ms"] == 0
            assert row["estimated_recall"] == pytest.approx(1.0)
            assert row["measured_recall"] is None


def test_chosen_k_is_the_smallest_meeting_the_instant_target() -> None:
    """Alg. 3 over the policy's statistics agrees with the literal equations."""
    rng = np.random.default_rng(2)
    pol = QualityPolicy(_qc((500, 500), recall=0.95))
    delays = rng.choice([0, 0, 0, 15, 35, 80, 260], size=(2, 600))
    local = [0, 0]
    for step in range(600):
        for s in (0, 1):
            local[s] += 10
            d = int(delays[s, step])
            pol.observe_arrival(s, local[s] - d, d)
            pol.observe_join(s, local[s] - d, d, 3, 30, d > 0)
    row = pol.maybe_adapt(6_000)
    assert row is not None
    target = row["instant_recall_target"]
    pdfs = [np.bincount([delay_bin(int(d), 10) for d in delays[s]]).tolist() for s in (0, 1)]
    ks = [pol.stats.ksync_estimates()[0], pol.stats.ksync_estimates()[1]]
    b = pol.config.model().basic_window_ms
    assert b == 500  # default: one basic window per join window (n_i = 1)
    gammas = [
        reference_gamma(pdfs, ks, pol.evidence, [500, 500], 10, b, k)
        for k in range(0, row["max_delay_ms"] + 10, 10)
    ]
    limit = row["max_delay_ms"]
    meeting = [i * 10 for i, g in enumerate(gammas) if g >= target - 1e-9 and i * 10 <= limit]
    expected = meeting[0] if meeting else row["max_delay_ms"] + 10
    assert row["k_ms"] == expected
    assert 0 < row["k_ms"] <= 260
    curve = gamma_curve(
        [np.asarray(p, float) for p in pdfs], ks, pol.evidence, ModelConfig((500, 500), 10, b), 26
    )
    assert row["estimated_recall"] == pytest.approx(min(curve[row["k_ms"] // 10], 1.0))


def test_policy_snapshot_round_trip_continues_identically() -> None:
    rng = np.random.default_rng(4)
    a = QualityPolicy(_qc((300, 300, 300)))
    feed = [
        (int(s), int(d))
        for s, d in zip(rng.integers(0, 3, 3_000), rng.integers(0, 90, 3_000), strict=True)
    ]
    rows_a, rows_b = [], []
    b = None
    for n, (s, d) in enumerate(feed):
        if n == 1_500:
            b = QualityPolicy.restore(a.config, pickle.loads(pickle.dumps(a.snapshot())))
        targets = [a] if b is None else [a, b]
        for pol in targets:
            pol.observe_arrival(s, 5 * n - d, d)
            pol.observe_join(s, 5 * n - d, d, n % 4, 10, d > 40)
        if n % 200 == 199:
            rows_a.append(a.maybe_adapt(5 * n))
            if b is not None:
                rows_b.append(b.maybe_adapt(5 * n))
    assert rows_b and rows_a[-len(rows_b) :] == rows_b
    with pytest.raises(OperatorStateError, match="mode"):
        QualityPolicy.restore(a.config, {"mode": "max"})


def _cross_join_records(k_seed: int, duration_s: float = 30.0) -> list[dict[str, Any]]:
    """2 streams, one key (a cross join), exponential delays: stationary disorder."""
    spec = WorkloadSpec(
        "equi",
        streams=2,
        rates=(10.0,),
        duration_s=duration_s,
        disorder=(ExponentialDelay(60.0), ExponentialDelay(20.0)),
        params=EquiParams(domain=1, initial_skew=0.0, skew_min=0.0, skew_max=0.0),
        seed=k_seed,
    )
    return generate(spec)


@pytest.mark.parametrize("k_ms", [0, 40, 150, 2_000])
def test_model_predicts_the_recall_of_a_fixed_k(k_ms: int) -> None:
    """γ(L,K) (EqSel) from the true delay histograms vs the recall the engine achieves.

    The model ignores the Synchronizer's fluctuating implicit buffer between streams that
    take turns leading (K^sync is normalized by the minimum average), so it may only err
    on the conservative side: measured − 0.12 ≤ γ(L,K) ≤ measured + 0.02.
    """
    records = _cross_join_records(1)
    spec = _spec(2, 1_000, "fixed", slack_ms=k_ms)
    produced, _ = _run(spec, records)
    truth = duckdb_oracle(spec.join, records)
    ids = {r.id for r in truth}
    assert all(r.id in ids for r in produced)  # precision 1
    measured = len(produced) / len(truth)
    # the model's inputs, computed by brute force from the generated delays
    pdfs = []
    for name in ("s1", "s2"):
        rows = [r for r in records if r["stream"] == name]
        local, bins = -(10**12), []
        for r in rows:
            local = max(local, r["event_time"])
            bins.append(delay_bin(local - r["event_time"], 10))
        pdfs.append(np.bincount(bins).astype(float))
    model = gamma_curve(pdfs, [0.0, 0.0], None, ModelConfig((1_000, 1_000), 10, 10), k_ms // 10)
    assert measured - 0.12 <= model[-1] <= measured + 0.02
    if k_ms >= max(len(p) for p in pdfs) * 10:
        assert measured == 1.0
        assert model[-1] == pytest.approx(1.0)


def test_quality_mode_meets_recall_with_less_buffering_than_max_k() -> None:
    """In-process end to end: Γ = 0.95 per period P against the DuckDB oracle."""
    gen = WorkloadSpec(
        "equi",
        streams=3,
        rates=(8.0,),
        duration_s=120.0,
        disorder=(ZipfDelay(10_000, 2.0), ZipfDelay(10_000, 3.0), ZipfDelay(10_000, 3.0)),
        params=EquiParams(domain=40, initial_skew=0.5, skew_min=0.0, skew_max=0.8),
        seed=9,
    )
    records = generate(gen)
    quality = _spec(3, 5_000, "quality", recall=0.95, period_ms=30_000)
    truth = duckdb_oracle(quality.join, records)
    ids = {r.id for r in truth}
    got_q, rows_q = _run(quality, records)
    _, rows_m = _run(_spec(3, 5_000, "max"), records)
    assert all(r.id in ids for r in got_q)
    true_t = np.sort([r.result_time for r in truth])
    prod_t = np.sort([r.result_time for r in got_q])
    ends = np.arange(60_000, 120_001, 1_000)
    recalls = []
    for e in ends:
        n_true = np.count_nonzero((true_t > e - 30_000) & (true_t <= e))
        n_prod = np.count_nonzero((prod_t > e - 30_000) & (prod_t <= e))
        recalls.append(n_prod / n_true)
    assert np.mean(np.asarray(recalls) >= 0.99 * 0.95) >= 0.9
    assert len(got_q) / len(truth) >= 0.95
    avg_q = np.mean([r["k_ms"] for r in rows_q])
    avg_m = np.mean([r["k_ms"] for r in rows_m])
    assert avg_q < avg_m
    assert {"instant_recall_target", "estimated_recall", "k_ms"} <= set(rows_q[-1])


def test_engine_snapshot_mid_stream_changes_nothing() -> None:
    gen = WorkloadSpec(
        "equi",
        streams=2,
        rates=(10.0,),
        duration_s=40.0,
        disorder=(ZipfDelay(3_000, 2.0),),
        params=EquiParams(domain=10),
        seed=3,
    )
    records = generate(gen)
    spec = _spec(2, 2_000, "quality", recall=0.9, period_ms=10_000)
    cfg = resolve_engine(spec)
    index = {s: i for i, s in enumerate(spec.join.streams)}
    events = [event_from_dump(r, index) for r in records]
    whole = Engine(cfg)
    out_whole = whole.process_many(events) + whole.flush()
    first = Engine(cfg)
    out = first.process_many(events[:400])
    restored = Engine.from_snapshot(cfg, pickle.loads(pickle.dumps(first.snapshot())))
    out += restored.process_many(events[400:]) + restored.flush()
    assert [r.id for r in out] == [r.id for r in out_whole]
    assert restored.drain_metrics()[-1] == whole.drain_metrics()[-1]


def test_rows_are_flat_scalars_and_spec_key_is_validated() -> None:
    pol = QualityPolicy(_qc((1_000, 1_000)))
    pol.observe_arrival(0, 0, 0)
    pol.observe_arrival(1, 5, 0)
    row = pol.maybe_adapt(1_000)
    assert row is not None
    assert all(v is None or isinstance(v, (int, float, str)) for v in row.values())
    with pytest.raises(ConfigError, match=r"disorder\.late_estimate"):
        _spec(2, 1_000, "quality", late_estimate="median")


def test_target_band_and_default_basic_window() -> None:
    qc = QualityConfig(0.99, 60_000, 1_000, 10, (5_000, 3_005))
    floor, cap = qc.target_bounds()
    assert floor == pytest.approx(0.9925)
    assert cap == pytest.approx(0.995)
    assert QualityConfig(0.99, 60_000, 1_000, 10, (5_000,) * 2, spend_surplus=True).target_bounds()[
        0
    ] == pytest.approx(0.0)
    # b = max W_i rounded up to a multiple of g, so n_i = 1 for every stream
    assert qc.model().basic_window_ms == 5_000
    assert QualityConfig(0.9, 60_000, 1_000, 10, (3_005, 3_001)).model().basic_window_ms == 3_010
    explicit = QualityConfig(0.9, 60_000, 1_000, 10, (5_000, 5_000), basic_window_ms=10)
    assert explicit.model().basic_window_ms == 10


def test_merge_maps_sums_bins_of_different_lengths() -> None:
    a = ProductivityMaps(np.array([1.0, 2.0]), np.array([0.5, 1.0]), 3)
    b = ProductivityMaps(np.array([4.0, 0.0, 6.0]), np.array([2.0, 0.0, 3.0]), 5)
    m = merge_maps([a, b])
    assert m.cross.tolist() == [5.0, 2.0, 6.0]
    assert m.join.tolist() == [2.5, 1.0, 3.0]
    assert m.tuples == 8
    assert merge_maps([]).tuples == 0


def test_dpcorr_evidence_covers_the_last_non_empty_intervals() -> None:
    qc = QualityConfig(0.9, 10_000, 1_000, 10, (1_000, 1_000), evidence_intervals=2)
    pol = QualityPolicy(qc)
    sizes = [5, 0, 7, 11]  # tuples reaching the join per interval (0 = idle interval)
    for i, n in enumerate(sizes):
        for t in range(n):
            pol.observe_arrival(t % 2, 1_000 * i + t, 0)
            pol.observe_join(t % 2, 1_000 * i + t, 0, 1, 4, False)
        pol.maybe_adapt(1_000 * (i + 1))
    assert pol.evidence.tuples == 7 + 11
    assert pol.evidence.cross[0] == pytest.approx(4.0 * 18)


def test_instant_target_stays_in_the_band_under_a_persistent_deficit() -> None:
    """Half the results are lost every interval: Eq. 7 alone would pin Γ' at 1."""
    pol = QualityPolicy(_qc((1_000, 1_000), recall=0.9))
    floor, cap = pol.config.target_bounds()
    target = 0.0
    for i in range(20):
        for t in range(0, 1_000, 10):
            for s in (0, 1):
                ts = 1_000 * i + t
                pol.observe_arrival(s, ts, 0)
                pol.observe_join(s, ts, 0, 1 if t % 20 else 0, 10, False)
        row = pol.maybe_adapt(1_000 * (i + 1))
        assert row is not None
        target = row["instant_recall_target"]
        assert floor - 1e-12 <= target <= cap + 1e-12
    assert target == pytest.approx(cap)


def test_heavy_tailed_delays_need_a_small_k() -> None:
    """2-way, Zipf delays (skew 2) up to 20 s: ~1 % of tuples are > 1 s late, so Γ = 0.99
    needs K around a second, not Max-K-slack's ~20 s; the recall per period holds."""
    gen = WorkloadSpec(
        "equi",
        streams=2,
        rates=(10.0,),
        duration_s=150.0,
        disorder=(ZipfDelay(20_000, 2.0),),
        params=EquiParams(domain=5, initial_skew=0.0, skew_min=0.0, skew_max=0.0),
        seed=11,
    )
    records = generate(gen)
    quality = _spec(2, 5_000, "quality", recall=0.99, period_ms=30_000, late_estimate="mean")
    truth = duckdb_oracle(quality.join, records)
    got, rows_q = _run(quality, records)
    _, rows_m = _run(_spec(2, 5_000, "max"), records)
    true_t = np.sort([r.result_time for r in truth])
    prod_t = np.sort([r.result_time for r in got])
    ends = np.arange(31_000, 150_001, 1_000)
    recalls = [
        np.count_nonzero((prod_t > e - 30_000) & (prod_t <= e))
        / np.count_nonzero((true_t > e - 30_000) & (true_t <= e))
        for e in ends
    ]
    assert np.mean(np.asarray(recalls) >= 0.99 * 0.99) >= 0.9
    avg_q = np.mean([r["k_ms"] for r in rows_q[30:]])
    avg_m = np.mean([r["k_ms"] for r in rows_m[30:]])
    assert avg_q <= 0.25 * avg_m


@pytest.mark.parametrize("eq_sel", [False, True])
def test_eqsel_and_noneqsel_pick_the_smallest_k_of_their_own_model(eq_sel: bool) -> None:
    """``[disorder] eq_sel`` reaches the policy, and each selectivity model's K is the
    smallest meeting Γ' under the literal equations (the brute force of
    :func:`reference_gamma`): EqSel with the ratio 1 (no maps), NonEqSel with Eq. 6 over
    the profiled maps (test_recall_model checks both curves on random inputs)."""
    cfg = resolve_engine(_spec(2, 500, "quality", recall=0.95, eq_sel=eq_sel))
    pol = QualityPolicy(QualityConfig.from_engine(cfg))
    assert pol.config.eq_sel is eq_sel
    _assert_smallest_literal_k(pol, 5, pol.config.model().basic_window_ms)


def _assert_smallest_literal_k(pol: QualityPolicy, seed: int, basic_window_ms: int) -> None:
    """Feed two streams of random delays (seeded) through ``pol``, adapt once, and check
    the chosen K is the smallest meeting Γ' under :func:`reference_gamma` with basic
    windows of ``basic_window_ms``."""
    eq_sel = pol.config.eq_sel
    rng = np.random.default_rng(seed)
    delays = rng.choice([0, 0, 0, 15, 35, 80, 260], size=(2, 600))
    local = [0, 0]
    for step in range(600):
        for s in (0, 1):
            local[s] += 10
            d = int(delays[s, step])
            pol.observe_arrival(s, local[s] - d, d)
            pol.observe_join(s, local[s] - d, d, 12 if d > 0 else 3, 30, d >= 80)
    row = pol.maybe_adapt(6_000)
    assert row is not None
    pdfs = [np.bincount([delay_bin(int(d), 10) for d in delays[s]]).tolist() for s in (0, 1)]
    ks = [pol.stats.ksync_estimates()[0], pol.stats.ksync_estimates()[1]]
    maps = None if eq_sel else pol.evidence
    gammas = [reference_gamma(pdfs, ks, maps, [500, 500], 10, basic_window_ms, k)
              for k in range(0, row["max_delay_ms"] + 10, 10)]
    meeting = [i * 10 for i, g in enumerate(gammas)
               if g >= row["instant_recall_target"] - 1e-9 and i * 10 <= row["max_delay_ms"]]
    assert row["k_ms"] == (meeting[0] if meeting else row["max_delay_ms"] + 10)


def test_paper_model_is_ji_et_al_as_published() -> None:
    """``[disorder] model = "paper"``: Γ' in [0, 1] (Eq. 7), b = g, one interval of DPcorr
    evidence and the max estimate for late tuples; the default keeps our deviations."""
    paper = QualityConfig.from_engine(resolve_engine(_spec(2, 5_000, "quality", model="paper")))
    assert paper.target_bounds() == (0.0, 1.0)
    assert paper.model().basic_window_ms == paper.granularity_ms == 10
    assert paper.evidence_intervals == 1
    assert paper.late_estimate == "max"
    ours = QualityConfig.from_engine(resolve_engine(_spec(2, 5_000, "quality")))
    assert ours.target_bounds() == pytest.approx((0.9925, 0.995))
    assert ours.model().basic_window_ms == 5_000
    assert ours.evidence_intervals == 10
    with pytest.raises(ConfigError, match=r"disorder\.model"):
        _spec(2, 1_000, "quality", model="ours")


@pytest.mark.parametrize("eq_sel", [False, True])
def test_paper_model_picks_the_smallest_k_of_the_literal_equations(eq_sel: bool) -> None:
    """With b = g the chosen K is still the smallest meeting Γ' under the brute force
    :func:`reference_gamma` (every basic window of g counted by Eq. 3)."""
    cfg = resolve_engine(_spec(2, 500, "quality", recall=0.95, eq_sel=eq_sel, model="paper"))
    pol = QualityPolicy(QualityConfig.from_engine(cfg))
    _assert_smallest_literal_k(pol, 7, 10)


def test_target_margin_and_headroom_are_spec_keys() -> None:
    """``[disorder] target_margin`` / ``target_headroom`` set the band of Γ' (deviation 1);
    a negative margin lets Γ' fall below Γ, and −100 is Ji et al.'s floor of 0."""
    def bounds(**keys: Any) -> tuple[float, float]:
        cfg = QualityConfig.from_engine(resolve_engine(_spec(2, 5_000, "quality", **keys)))
        return cfg.target_bounds()

    assert bounds() == pytest.approx((0.9925, 0.995))
    assert bounds(target_margin=-0.5) == pytest.approx((0.985, 0.995))
    assert bounds(target_margin=0.0, target_headroom=0.25) == pytest.approx((0.99, 0.9925))
    assert bounds(target_margin=-100.0) == pytest.approx((0.0, 0.995))
    assert bounds(target_margin=-100.0, recall=0.5) == pytest.approx((0.0, 0.75))
    # model = "paper" keeps Eq. 7's [0, 1] whatever the band keys say
    assert bounds(target_margin=0.5, model="paper") == (0.0, 1.0)
    with pytest.raises(ConfigError, match=r"target_margin"):
        _spec(2, 5_000, "quality", target_margin=0.6, target_headroom=0.5)
    with pytest.raises(ConfigError, match=r"target_margin"):
        _spec(2, 5_000, "quality", target_margin=-101.0)


@pytest.mark.parametrize("margin", [0.25, -0.5, -100.0])
def test_instant_target_is_eq7_clipped_to_the_configured_band(margin: float) -> None:
    """Γ' of every step equals Eq. 7 solved by hand from the Result-Size Monitor's totals
    and N_true(L), clipped to [max(0, Γ + m·(1 − Γ)), Γ + 0.5·(1 − Γ)]: a surplus (every
    result produced) lets Γ' fall to the floor, then a deficit pushes it to the cap."""
    pol = QualityPolicy(QualityConfig(0.9, 10_000, 1_000, 10, (1_000, 1_000), margin=margin))
    floor, cap = pol.config.target_bounds()
    assert floor == pytest.approx(max(0.0, 0.9 + 0.1 * margin))
    seen, raw = [], []
    for i in range(16):
        for t in range(0, 1_000, 10):
            for s in (0, 1):
                ts = 1_000 * i + t
                pol.observe_arrival(s, ts, 0)
                # every result produced for 8 intervals, then half the tuples late
                pol.observe_join(s, ts, 0, 100, 100, i >= 8 and t % 20 == 0)
        row = pol.maybe_adapt(1_000 * (i + 1))
        assert row is not None
        prod, true = pol.monitor.totals()
        nxt = row["n_true_next"]
        eq7 = (0.9 * (true + nxt) - prod) / nxt if nxt > 0 else 0.9
        assert row["instant_recall_target"] == pytest.approx(min(max(eq7, floor), cap))
        seen.append(row["instant_recall_target"])
        raw.append(eq7)
    assert min(seen) == pytest.approx(max(floor, min(raw)))
    assert min(raw) < 0.1 and max(seen) == pytest.approx(cap)
