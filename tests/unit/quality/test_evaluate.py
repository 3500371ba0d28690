"""Recall / precision / recall per period P (Ji et al. γ(P))."""

from __future__ import annotations

import pytest

from pipeline.core.errors import ConfigError
from pipeline.quality.evaluate import evaluate


def _r(i: int, t: int) -> dict[str, object]:
    return {"id": f"r{i}", "result_time": t, "members": []}


@pytest.mark.parametrize(
    ("truth", "results", "recall", "precision", "periods"),
    [
        (
            [_r(1, 10), _r(2, 20), _r(3, 150)],
            [_r(1, 10), _r(3, 150)],
            2 / 3,
            1.0,
            [(0, 2, 1), (100, 1, 1)],
        ),
        ([_r(1, 10)], [_r(1, 10), _r(1, 10), _r(9, 10)], 1.0, 0.5, [(0, 1, 1)]),
        ([], [], 1.0, 1.0, []),
        ([_r(1, 10), _r(2, 250)], [], 0.0, 1.0, [(0, 1, 0), (100, 0, 0), (200, 1, 0)]),
    ],
)
def test_quality(
    truth: list[dict[str, object]],
    results: list[dict[str, object]],
    recall: float,
    precision: float,
    periods: list[tuple[int, int, int]],
) -> None:
    q = evaluate(truth, results, period_ms=100)
    assert q.recall == pytest.approx(recall)
    assert q.precision == pytest.approx(precision)
    assert [(p.start, p.true, p.correct) for p in q.periods] == periods
    assert q.to_json()["recall"] == pytest.approx(recall)


def test_duplicates_counted_once() -> None:
    q = evaluate([_r(1, 1)], [_r(1, 1), _r(1, 1)])
    assert (q.produced, q.duplicates, q.precision) == (1, 1, 1.0)


def test_bad_period() -> None:
    with pytest.raises(ConfigError, match="--period-ms"):
        evaluate([], [], period_ms=0)
