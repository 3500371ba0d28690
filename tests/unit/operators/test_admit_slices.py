"""Admission by time slices aligned across the streams (grubjoin/slices.py; issue 28)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.operators.contract import PluginEnv
from pipeline.operators.events import Event
from pipeline.operators.shedding.grubjoin.shedder import GrubJoinShedder
from pipeline.operators.shedding.grubjoin.slices import slice_uniforms, slices_kept
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_spec


def test_slice_uniforms_are_uniform_and_a_fixed_function_of_seed_and_slice() -> None:
    k = np.arange(200_000, dtype=np.int64)
    u = slice_uniforms(7, k)
    assert ((u >= 0.0) & (u < 1.0)).all()
    counts, _ = np.histogram(u, bins=10, range=(0.0, 1.0))
    assert np.abs(counts / k.shape[0] - 0.1).max() < 0.005  # binomial sd ≈ 0.0007
    assert np.array_equal(u, slice_uniforms(7, k))
    assert not np.array_equal(u, slice_uniforms(8, k))
    # the Weyl rotation by the golden ratio, against its definition in exact rationals
    from fractions import Fraction

    from pipeline.operators.shedding.grubjoin.slices import GOLDEN
    base = float(slice_uniforms(7, np.array([0]))[0])
    for idx in (1, 2, 977, 1_700_000_000_000 // 500):
        want = float((Fraction(base) + idx * Fraction(GOLDEN)) % 1)
        assert abs(float(slice_uniforms(7, np.array([idx]))[0]) - want) < 1e-6


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0.01, 0.99), seed=st.integers(0, 10_000),
       start=st.integers(0, 4_000_000_000), n=st.integers(1, 400))
def test_any_run_of_slices_keeps_its_share_within_two_slices(
        a: float, seed: int, start: int, n: int) -> None:
    """Oracle: brute-force count over n consecutive slices from any start (a clock in
    ms since 1970 divided by a slice of ≥ 1 s stays below 4·10⁹). Independent draws
    would stray by √(n·a(1−a)) (up to 10 slices here); the rotation stays within 2."""
    kept = slice_uniforms(seed, np.arange(start, start + n, dtype=np.int64)) < a
    assert abs(int(kept.sum()) - n * a) <= 2.5  # 2.0 at worst over 30,000 slices
    if a >= 0.62:  # two neighbouring slices are never both dropped
        assert not (~kept[:-1] & ~kept[1:]).any()


@settings(max_examples=40, deadline=None)
@given(a=st.floats(0.05, 0.95), slice_ms=st.integers(1, 5_000), seed=st.integers(0, 99))
def test_every_stream_keeps_the_same_slices_and_about_a_of_them(
        a: float, slice_ms: int, seed: int) -> None:
    """Oracle: a tuple is kept iff its slice's draw is below a — the same slices for
    every stream — and over 20,000 slices the kept share is a within 4 sd."""
    n_slices = 20_000
    nows = np.arange(n_slices, dtype=np.int64) * slice_ms + slice_ms // 2
    kept = [slices_kept(nows, np.full(n_slices, a), seed, slice_ms) for _ in range(3)]
    assert all(np.array_equal(kept[0], k) for k in kept[1:])
    assert np.array_equal(kept[0], slice_uniforms(seed, nows // slice_ms) < a)
    sd = (a * (1 - a) / n_slices) ** 0.5
    assert abs(float(kept[0].mean()) - a) < 4 * sd
    # inside a slice every tuple shares the decision
    inside = slices_kept(nows - slice_ms // 2, np.full(n_slices, a), seed, slice_ms)
    assert np.array_equal(inside, kept[0])


def _shedder(**extra: object) -> GrubJoinShedder:
    spec = make_spec(3, "band", [10_000] * 3, shedding={
        "mode": "grubjoin", "budget": "wall", "basic_window_ms": 500, "shred_rate": 0.0,
        **extra})
    return GrubJoinShedder(resolve_engine(spec), PluginEnv(clock=lambda: 0.0, speedup=1.0))


@pytest.mark.parametrize("slices", [True, False])
def test_the_batch_path_admits_what_the_tuple_path_admits(slices: bool) -> None:
    """admit_some over a run equals admit tuple by tuple (same draws, same queue), with
    the admitted fraction below 1."""
    one, run = _shedder(admit_slices=slices), _shedder(admit_slices=slices)
    for s in (one, run):
        s.admit_fraction = np.array([0.4, 0.4, 0.4])
    rng = np.random.default_rng(1)
    streams = rng.integers(0, 3, 3_000).astype(np.int64)
    nows = np.sort(rng.integers(0, 60_000, 3_000)).astype(np.int64)
    by_tuple = np.array([one.admit(Event(int(s), int(t), i, {"value": 0.0}), int(t))
                         for i, (s, t) in enumerate(zip(streams, nows, strict=True))])
    by_run = run.admit_some(streams, nows)
    assert by_run is not None
    assert np.array_equal(by_tuple, by_run)
    share = float(by_run.mean())
    assert 0.25 < share < 0.55
    if slices:  # whole slices: every stream kept in the same slices
        slice_of = nows // 500
        for k in np.unique(slice_of):
            inside = by_run[slice_of == k]
            assert inside.all() or not inside.any()
