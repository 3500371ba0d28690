"""The selective-processing workload (Gedik et al., CIKM §5): deterministic given the seed
and the clock origin, and its statistics — set sizes, Zipf popularity, the rotation and
the shift between the streams — are the parameters'."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from connectors.workloads import WorkloadSpec, generate, generate_workload, read_jsonl
from connectors.workloads.disorder import zipf_pmf
from connectors.workloads.overlap import rotation_head
from connectors.workloads.params import OverlapEquiParams, OverlapParams
from connectors.workloads.spec import PAPER_PROFILE, event_times, profile_segments
from pipeline.cli.main import main
from pipeline.core.errors import ConfigError


def _columns(spec: WorkloadSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stream, event time, items n × width with −1 padding) of a generated workload."""
    w = generate_workload(spec)
    assert w.sets is not None
    return w.columns["stream"], w.columns["event_time"], w.sets.items


def _ranks(spec: WorkloadSpec, stream: int, shift_s: float) -> np.ndarray:
    """Popularity rank (0-based) of each first-drawn item of ``stream``, were it shifted
    by ``shift_s``."""
    streams, times, items = _columns(spec)
    params = spec.resolved_params()
    assert isinstance(params, OverlapParams)
    rows = streams == stream
    phi = (times[rows] - spec.start_ms) / 1000.0
    head = rotation_head(phi, shift_s, params)
    return np.mod(items[rows, 0] - 1 - head, params.items)


BIG = WorkloadSpec("overlap", streams=2, rates=(400.0,), duration_s=60.0, seed=5)


def test_same_seed_and_clock_origin_same_records() -> None:
    spec = WorkloadSpec("overlap", streams=2, rates=(100.0,), duration_s=5.0, seed=3)
    assert generate(spec) == generate(spec)
    assert generate(spec) != generate(WorkloadSpec("overlap", streams=2, rates=(100.0,),
                                                   duration_s=5.0, seed=4))
    # the injected clock origin moves the times, not the sets
    later = WorkloadSpec("overlap", streams=2, rates=(100.0,), duration_s=5.0, seed=3,
                         start_ms=1_700_000_000_000)
    a, b = generate(spec), generate(later)
    assert [r["items"] for r in a] == [r["items"] for r in b]
    assert [r["event_time"] + 1_700_000_000_000 for r in a] == [r["event_time"] for r in b]


def test_sets_hold_distinct_items_of_1_to_l_sized_normal_5_1() -> None:
    _, _, items = _columns(BIG)
    sizes = (items >= 0).sum(axis=1)
    assert sizes.min() >= 1
    # round(N(5, 1)): mean 5, variance 1 + 1/12 (the rounding)
    assert abs(sizes.mean() - 5.0) < 0.03
    assert abs(sizes.std() - np.sqrt(1 + 1 / 12)) < 0.03
    present = items[items >= 0]
    assert present.min() >= 1 and present.max() <= 100
    for row, n in zip(items[:2000], sizes[:2000], strict=True):
        assert len(set(row[:n].tolist())) == n
        assert (row[n:] == -1).all()


@pytest.mark.parametrize("kappa", [0.0, 0.8, 1.5])
def test_first_items_follow_zipf_kappa_around_the_rotating_head(kappa: float) -> None:
    spec = WorkloadSpec("overlap", streams=1, rates=(500.0,), duration_s=80.0, seed=7,
                        params=OverlapParams(kappa=kappa))
    ranks = _ranks(spec, 0, 0.0)
    freq = np.bincount(ranks, minlength=100) / ranks.size
    pmf = zipf_pmf(100, kappa)
    sd = np.sqrt(pmf * (1 - pmf) / ranks.size)
    assert (np.abs(freq - pmf) < 5 * sd + 1e-4).all()
    # the skew: slope of log frequency over log rank ≈ −κ (ranks 1..30, well sampled)
    r = np.arange(1, 31)
    slope = np.polyfit(np.log(r), np.log(freq[:30]), 1)[0]
    assert abs(slope + kappa) < 0.1


def test_popularity_skew_holds_for_every_item_of_a_set() -> None:
    """Items drawn later in a set are also popular-first (successive sampling)."""
    streams, times, items = _columns(BIG)
    params = OverlapParams()
    head = rotation_head((times - BIG.start_ms) / 1000.0, 0.0, params)
    rows = streams == 0
    ranks = np.mod(items[rows] - 1 - head[rows, None], 100)[items[rows] >= 0]
    freq = np.bincount(ranks, minlength=100)
    assert (np.diff(freq[:10]) < 0).sum() >= 7  # decreasing over the first ranks
    assert freq[:10].sum() > 3 * freq[-10:].sum()


def test_stream_2_is_shifted_by_tau() -> None:
    """With its own shift τ = 25 s stream 2's first items peak at the head (P(rank 0) =
    p_1 of Zipf 0.8); measured against stream 1's head they do not."""
    p1 = zipf_pmf(100, 0.8)[0]
    own = _ranks(BIG, 1, 25.0)
    unshifted = _ranks(BIG, 1, 0.0)
    assert abs(np.mean(own == 0) - p1) < 0.015
    assert np.mean(unshifted == 0) < p1 / 3
    # rank 0 of the unshifted view sits where the shift puts it: L·τ/ς = 62.5 items back
    peak = int(np.argmax(np.bincount(unshifted, minlength=100)))
    assert peak in (37, 38)  # (−62.5) mod 100


def test_streams_match_best_at_the_lag_of_the_shift() -> None:
    """A stream-1 set overlaps most with stream-2 sets (ς − τ) = 15 s older (Fig. 2)."""
    streams, times, items = _columns(BIG)
    v = np.zeros((items.shape[0], 101))
    rows = np.repeat(np.arange(items.shape[0]), items.shape[1])
    flat = items.reshape(-1)
    v[rows[flat >= 0], flat[flat >= 0]] = 1.0
    s1 = np.flatnonzero((streams == 0) & (times >= 30_000))[::50]
    s2 = np.flatnonzero(streams == 1)
    lags = np.arange(0, 30)
    mean_overlap = []
    for lag in lags:
        partner = np.searchsorted(times[s2], times[s1] - lag * 1000)
        mean_overlap.append(float((v[s1] * v[s2[partner]]).sum(axis=1).mean()))
    assert int(lags[int(np.argmax(mean_overlap))]) in (14, 15, 16)


def test_equi_variant_single_values_of_5000() -> None:
    spec = WorkloadSpec("overlap-equi", streams=2, rates=(200.0,), duration_s=10.0, seed=1)
    records = generate(spec)
    assert all(len(r["items"]) == 1 and r["items"][0] == r["value"] for r in records)
    values = np.array([r["value"] for r in records])
    assert values.min() >= 1 and values.max() <= 5000 and np.unique(values).size > 500
    assert isinstance(spec.resolved_params(), OverlapEquiParams)


def test_paper_rate_profile() -> None:
    spec = WorkloadSpec("overlap", streams=2, duration_s=150.0, profile=PAPER_PROFILE)
    times = event_times(spec, 0)
    counts = [int(((times >= lo * 1000) & (times < hi * 1000)).sum())
              for lo, hi, _ in profile_segments(spec)]
    assert counts == [6000, 7500, 9000, 4500]
    assert np.diff(times[(times >= 60_000) & (times < 75_000)]).max() <= 2  # 500/s
    # the last rate holds past the profile, up to the duration
    longer = WorkloadSpec("overlap", streams=1, duration_s=160.0, profile=PAPER_PROFILE)
    assert event_times(longer, 0).size == 27_000 + 1_000
    poisson = WorkloadSpec("overlap", streams=1, duration_s=150.0, profile=PAPER_PROFILE,
                           arrivals="poisson", seed=2)
    t = event_times(poisson, 0)
    assert abs(int(((t >= 60_000) & (t < 75_000)).sum()) - 7500) < 5 * np.sqrt(7500)
    assert (np.diff(t) >= 0).all()


def test_bad_profile_and_params_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="profile"):
        WorkloadSpec("overlap", profile=((10.0, 0.0),))
    with pytest.raises(ConfigError, match=r"overlap\.kappa"):
        OverlapParams(kappa=-1.0)
    with pytest.raises(ConfigError, match=r"overlap\.size_mean"):
        OverlapParams(size_mean=0.5)


@pytest.mark.parametrize(("argv", "needle"), [
    (["overlap", "--profile", "60:x"], "argument --profile: expected paper or SECONDS:RATE"),
    (["overlap", "--profile", "0:100"], "argument --profile"),
    (["overlap", "--param", "kappa=-2"], "overlap.kappa: must be >= 0"),
    (["overlap", "--param", "nosuch=1"], "overlap has no knob 'nosuch'"),
    (["overlap", "--lags", "0,5"], "--lags: 2 values for 3 streams"),
])
def test_cli_errors_exit_2(argv: list[str], needle: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        raise SystemExit(main(["produce", *argv, "--dry-run"]))
    assert raised.value.code == 2
    assert needle in capsys.readouterr().err


def test_cli_dump_is_the_generator(tmp_path: Path) -> None:
    dump = tmp_path / "ov.jsonl"
    code = main(["produce", "overlap", "--streams", "2", "--profile", "paper", "--duration",
                 "80", "--param", "kappa=0.6", "--seed", "9", "--dry-run", "--dump", str(dump)])
    assert code == 0
    spec = WorkloadSpec("overlap", streams=2, duration_s=80.0, profile=PAPER_PROFILE,
                        seed=9, params=OverlapParams(kappa=0.6))
    assert read_jsonl(dump) == generate(spec)
