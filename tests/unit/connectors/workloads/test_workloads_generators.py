"""Statistical properties of each generator, checked against its defining formula."""

from __future__ import annotations

import numpy as np
import pytest

from connectors.workloads import WorkloadSpec, generate_workload
from connectors.workloads.disorder import zipf_pmf
from connectors.workloads.equi import skew_schedule
from connectors.workloads.params import EquiParams, NewsParams, PositionParams, SensorParams
from connectors.workloads.table import Workload

D, ETA = 1000.0, 50.0


def _stream(wl: Workload, i: int) -> dict[str, np.ndarray]:
    """Columns of stream i (0-based) in seq order."""
    rows = np.flatnonzero(wl.columns["stream"] == i)
    rows = rows[np.argsort(wl.columns["seq"][rows])]
    return {k: v[rows] for k, v in wl.columns.items()}


def _wrapped(diff: np.ndarray, domain: float) -> np.ndarray:
    return (diff + domain / 2) % domain - domain / 2


# ---------------------------------------------------------------- sensors (GrubJoin §VI-B)


def test_sensors_without_deviation_follow_the_formula_exactly() -> None:
    spec = WorkloadSpec(
        "sensors", streams=3, rates=(40.0,), duration_s=120.0, lags_s=(0, 5, 15), kappas=(0,)
    )
    wl = generate_workload(spec)
    for i, lag in enumerate((0.0, 5.0, 15.0)):
        s = _stream(wl, i)
        phi = s["event_time"] / 1000.0
        np.testing.assert_allclose(s["value"], np.mod((D / ETA) * (phi + lag), D), atol=1e-9)


@pytest.mark.parametrize(("kappa", "lag"), [(2.0, 0.0), (2.0, 5.0), (50.0, 15.0), (0.5, 33.3)])
def test_sensors_noise_has_std_kappa_around_the_lagged_line(kappa: float, lag: float) -> None:
    spec = WorkloadSpec(
        "sensors", streams=1, rates=(200.0,), duration_s=100.0, lags_s=(lag,), kappas=(kappa,)
    )
    s = _stream(generate_workload(spec), 0)
    phi = (s["event_time"] - spec.start_ms) / 1000.0
    residual = _wrapped(s["value"] - (D / ETA) * (phi + lag), D)
    n = len(residual)
    assert abs(residual.mean()) < 5 * kappa / np.sqrt(n)
    assert abs(residual.std() - kappa) < 0.05 * kappa
    assert (s["value"] >= 0).all() and (s["value"] < D).all()
    assert (s["a1"] == np.floor(s["value"])).all()


def test_sensors_lag_shifts_the_stream_in_time() -> None:
    """X_2(φ) = X_1(φ + τ_2) when κ = 0: stream 2 is stream 1 shifted by τ_2."""
    spec = WorkloadSpec(
        "sensors", streams=2, rates=(10.0,), duration_s=60.0, lags_s=(0, 5), kappas=(0,)
    )
    wl = generate_workload(spec)
    s1, s2 = _stream(wl, 0), _stream(wl, 1)
    shift = 5 * 10  # 5 s at 10 tuples/s
    np.testing.assert_allclose(s2["value"][:-shift], s1["value"][shift:], atol=1e-9)


def test_sensor_params_change_domain_and_period() -> None:
    params = SensorParams(domain=10.0, period=2.0, kappa=0.0)
    spec = WorkloadSpec("sensors", streams=1, rates=(8.0,), duration_s=4.0, params=params)
    s = _stream(generate_workload(spec), 0)
    np.testing.assert_allclose(s["value"], np.mod(5.0 * s["event_time"] / 1000.0, 10.0))


# ---------------------------------------------------------------- equi (Ji et al. D_syn^×3)


def test_equi_a1_domain_and_value() -> None:
    wl = generate_workload(WorkloadSpec("equi", streams=3, rates=(100.0,), duration_s=30.0))
    a1 = wl.columns["a1"]
    assert a1.min() >= 1 and a1.max() <= 100
    assert (wl.columns["value"] == a1).all()
    assert (wl.extras["a1_skew"] == 1.0).all()  # no change within the first minute


def test_equi_skew_schedule_bounds() -> None:
    params = EquiParams()
    starts, skews = skew_schedule(6 * 3600.0, params, np.random.default_rng(1))
    assert starts[0] == 0.0 and skews[0] == 1.0
    gaps = np.diff(starts)
    assert len(gaps) > 30
    assert (gaps >= 60.0).all() and (gaps <= 600.0).all()
    assert (skews >= 0.0).all() and (skews <= 5.0).all()
    assert skews[1:].std() > 0.5  # redrawn, not constant


def test_equi_a1_follows_the_skew_in_force() -> None:
    """Per segment, the frequency of a1 = 1 and 2 matches the Zipf pmf of that segment's skew."""
    params = EquiParams(gap_min_s=20.0, gap_max_s=40.0)
    wl = generate_workload(
        WorkloadSpec("equi", streams=2, rates=(500.0,), duration_s=300.0, params=params)
    )
    skew = wl.extras["a1_skew"]
    a1 = wl.columns["a1"]
    distinct = np.unique(skew)
    assert len(distinct) >= 6  # the skew changed several times per stream
    for z in distinct:
        sel = a1[skew == z]
        if len(sel) < 2000:
            continue
        pmf = zipf_pmf(100, float(z))
        for value in (1, 2):
            p = pmf[value - 1]
            observed = np.count_nonzero(sel == value)
            assert abs(observed - len(sel) * p) <= 5 * np.sqrt(len(sel) * p * (1 - p)) + 1


# ---------------------------------------------------------------- news


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(w * b.get(k, 0.0) for k, w in a.items())
    na = np.sqrt(sum(w * w for w in a.values()))
    nb = np.sqrt(sum(w * w for w in b.values()))
    return float(dot / (na * nb))


def test_news_same_story_similar_different_story_not() -> None:
    spec = WorkloadSpec("news", streams=3, rates=(20.0,), duration_s=60.0, seed=4)
    records = generate_workload(spec).records()
    rng = np.random.default_rng(0)
    same: list[float] = []
    other: list[float] = []
    for _ in range(3000):
        a, b = (records[k] for k in rng.integers(0, len(records), 2))
        if a is b:
            continue
        (same if a["story"] == b["story"] else other).append(_cosine(a["keywords"], b["keywords"]))
    assert len(same) > 50 and len(other) > 500
    assert np.mean(same) > 0.7 and np.quantile(same, 0.1) > 0.4
    assert np.mean(other) < 0.1
    assert all(r["agency"] == f"agency{r['stream'][1:]}" for r in records)
    assert all(1 <= len(r["keywords"]) <= 8 for r in records)


def test_news_agencies_report_only_broken_stories_recent_first() -> None:
    params = NewsParams()
    lags = (0.0, 10.0, 30.0)
    spec = WorkloadSpec("news", streams=3, rates=(50.0,), duration_s=200.0, lags_s=lags)
    wl = generate_workload(spec)
    for i, lag in enumerate(lags):
        s = _stream(wl, i)
        phi = s["event_time"] / 1000.0
        newest = np.floor((phi - lag) / params.story_interval_s) + params.recent_stories
        age = newest - s["story"]
        ok = newest >= params.recent_stories  # away from the clipped start
        assert (age[ok] >= 0).all() and (age[ok] < params.recent_stories).all()
        freq0 = np.mean(age[ok] == 0)
        expected = zipf_pmf(params.recent_stories, params.story_skew)[0]
        assert abs(freq0 - expected) < 5 * np.sqrt(expected / ok.sum())


# ---------------------------------------------------------------- positions (soccer stand-in)


def test_positions_stay_on_the_field_and_move_smoothly() -> None:
    params = PositionParams()
    spec = WorkloadSpec("positions", streams=2, rates=(80.0,), duration_s=120.0, params=params)
    wl = generate_workload(spec)
    x, y = wl.columns["x"], wl.columns["y"]
    assert (x >= 0).all() and (x <= 105).all() and (y >= 0).all() and (y <= 68).all()
    vmax = np.sqrt(2) * params.roam / 2 * params.omega_max
    for i in range(2):
        s = _stream(wl, i)
        assert set(np.unique(s["a1"]).tolist()) == {100 * (i + 1) + p for p in range(1, 9)}
        for sensor in np.unique(s["a1"]):
            rows = s["a1"] == sensor
            dt = np.diff(s["event_time"][rows]) / 1000.0
            step = np.hypot(np.diff(s["x"][rows]), np.diff(s["y"][rows]))
            assert (step <= vmax * dt + 1e-9).all()
        assert (s["value"] <= vmax + 1e-9).all()


def test_positions_teams_meet_within_5_m() -> None:
    """The distance join (Ji et al.'s soccer query, 5 m, 5 s windows) is not empty."""
    spec = WorkloadSpec("positions", streams=2, rates=(16.0,), duration_s=120.0, seed=2)
    wl = generate_workload(spec)
    a, b = _stream(wl, 0), _stream(wl, 1)
    near_time = np.abs(a["event_time"][:, None] - b["event_time"][None, :]) <= 5000
    dist = np.hypot(a["x"][:, None] - b["x"][None, :], a["y"][:, None] - b["y"][None, :])
    matches = np.count_nonzero(near_time & (dist < 5.0))
    assert 0 < matches < near_time.sum() / 5


def _near_pair_lags(wl: Workload, eps: float, window_ms: int) -> np.ndarray:
    """Brute force: t_b − t_a (ms) of every pair of a team-1 and a team-2 reading within
    ``eps`` m and ``window_ms`` of each other."""
    a, b = _stream(wl, 0), _stream(wl, 1)
    lag = b["event_time"][None, :] - a["event_time"][:, None]
    dist = np.hypot(a["x"][:, None] - b["x"][None, :], a["y"][:, None] - b["y"][None, :])
    return lag[(np.abs(lag) <= window_ms) & (dist <= eps)]


def test_positions_without_markers_ignore_the_marking_knobs() -> None:
    """``markers = 0`` is the generator without marking, draw for draw."""
    plain = generate_workload(WorkloadSpec("positions", streams=2, rates=(40.0,),
                                           duration_s=30.0, seed=4))
    knobs = PositionParams(mark_lag_min=1.0, mark_lag_max=9.0, mark_gap=5.0)
    other = generate_workload(WorkloadSpec("positions", streams=2, rates=(40.0,),
                                           duration_s=30.0, seed=4, params=knobs))
    for col in ("x", "y", "value", "a1", "event_time"):
        assert np.array_equal(plain.columns[col], other.columns[col])


def test_positions_markers_put_the_near_pairs_at_their_lag() -> None:
    """Markers shadow their men at a lag in [mark_lag_min, mark_lag_max]: most pairs
    within 0.3 m fall there, against a small share without marking; team 1 and the
    unmarked players do not move."""
    def generated(params: PositionParams) -> Workload:
        return generate_workload(WorkloadSpec("positions", streams=2, rates=(60.0,),
                                              duration_s=90.0, seed=7, params=params))

    plain = generated(PositionParams())
    marked = generated(PositionParams(markers=2, mark_gap=4.0, mark_lag_min=1.0,
                                      mark_lag_max=2.0))

    def share_at_lag(wl: Workload) -> float:
        lags = _near_pair_lags(wl, 0.3, 10_000)
        assert lags.size > 0
        return float(np.mean((lags >= 700) & (lags <= 2300)))

    assert share_at_lag(marked) >= 0.5
    assert share_at_lag(plain) <= 0.3
    p0, m0 = _stream(plain, 0), _stream(marked, 0)
    assert np.array_equal(p0["x"], m0["x"]) and np.array_equal(p0["y"], m0["y"])
    p1, m1 = _stream(plain, 1), _stream(marked, 1)
    free = m1["a1"] > 202  # players 3..8 of team 2 mark nobody
    assert np.array_equal(p1["x"][free], m1["x"][free])
    x, y = m1["x"], m1["y"]
    assert (x >= 0).all() and (x <= 105).all() and (y >= 0).all() and (y <= 68).all()


@pytest.mark.parametrize(("knobs", "field"), [
    ({"markers": 9}, "positions.markers"),
    ({"markers": -1}, "positions.markers"),
    ({"mark_lag_min": 3.0, "mark_lag_max": 1.0}, "positions.mark_lag_min"),
    ({"mark_gap": -1.0}, "positions.mark_gap"),
])
def test_positions_marking_knobs_are_checked(knobs: dict[str, float], field: str) -> None:
    from pipeline.core.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        PositionParams(**knobs)  # type: ignore[arg-type]
