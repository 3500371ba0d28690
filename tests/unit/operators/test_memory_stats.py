"""The memory policies' statistics unit: counts near a key per predicate, the window."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pipeline.operators.config import MemoryConfig
from pipeline.operators.join.config import JoinConfig
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.join.predicates import build_predicate
from pipeline.operators.memory import make_join
from pipeline.operators.memory.stats import ValueStats


def test_equi_counts_and_the_stats_window() -> None:
    stats = ValueStats(build_predicate("equi", attribute="v"), 2, window_ms=100)
    for ts, v in [(0, 1.0), (10, 1.0), (20, 2.0), (150, 2.0)]:
        stats.observe(1, ts, np.array([v]))
    # ts 0..20 fell out of (150 − 100, 150]: only the last 2.0 is left
    assert stats.mass(1, np.array([[1.0], [2.0], [3.0]])).tolist() == [0.0, 1.0, 0.0]
    assert stats.totals.tolist() == [0.0, 1.0]


def test_band_mass_is_the_histogram_within_epsilon() -> None:
    stats = ValueStats(build_predicate("band", attribute="v", epsilon=1.0), 2)
    for v in (0.5, 1.5, 1.6, 2.5):
        stats.observe(0, 0, np.array([v]))
    got = stats.mass(0, np.array([[1.5], [10.0], [1.0]]))
    # [0.5, 2.5] at v = 1.5: half of bucket 0 (1), bucket 1 (2), half of bucket 2 (1)
    assert got.tolist() == pytest.approx([3.0, 0.0, 3.0])


def test_distance_mass_integrates_the_disk() -> None:
    stats = ValueStats(build_predicate("distance", epsilon=1.0), 2)
    rng = np.random.default_rng(0)
    for xy in rng.uniform(0.0, 10.0, size=(20_000, 2)):
        stats.observe(0, 0, xy)
    inside = stats.mass(0, np.array([[5.0, 5.0]]))[0]
    assert inside == pytest.approx(20_000 * np.pi / 100.0, rel=0.1)  # density × π ε²
    assert stats.mass(0, np.array([[50.0, 50.0]]))[0] == 0.0


def test_cosine_mass_is_the_summed_similarity() -> None:
    pred = build_predicate("cosine", attribute="k", epsilon=0.5)
    stats = ValueStats(pred, 2)
    for kw in ({"rain": 1.0}, {"rain": 1.0, "storm": 1.0}, {"goal": 1.0}):
        stats.observe(1, 0, pred.encode({"k": kw}))
    rows = [pred.encode({"k": {"rain": 1.0}}), pred.encode({"k": {"vote": 1.0}})]
    assert stats.mass(1, rows).tolist() == pytest.approx([1.0 + 2 ** -0.5, 0.0])


@pytest.mark.parametrize("kind", ["distance", "cosine"])
@pytest.mark.parametrize("mode", ["prob", "life", "lagprob"])
def test_other_predicates_stay_bounded_and_true(kind: str, mode: str) -> None:
    pred = build_predicate(kind, attribute="k", epsilon=0.6 if kind == "cosine" else 1.5)
    cfg = JoinConfig((200, 200), 50, pred)
    rng = np.random.default_rng(4)
    words = ["a", "b", "c", "d", "e"]
    arrivals: list[tuple[int, int, Any]] = []
    for t in range(400):
        if kind == "cosine":
            enc = pred.encode({"k": {str(rng.choice(words)): 1.0, str(rng.choice(words)): 0.5}})
        else:
            enc = rng.integers(0, 6, size=2).astype(float)
        arrivals.append((int(rng.integers(2)), t * 3, enc))
    bounded = make_join(cfg, MemoryConfig(mode, 10))
    plain = MWayJoin(cfg)
    got: set[tuple[int, ...]] = set()
    want: set[tuple[int, ...]] = set()
    for seq, (s, ts, enc) in enumerate(arrivals):
        got |= {tuple(r) for r in bounded.process(s, ts, seq, enc).seqs.tolist()}
        want |= {tuple(r) for r in plain.process(s, ts, seq, enc).seqs.tolist()}
        assert max(w.size() for w in bounded.windows) <= 5
    assert got and got <= want and len(got) < len(want)
