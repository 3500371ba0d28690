"""C({z}) and O({z}) (GrubJoin §IV-C) against a direct loop over the formulas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.shedding.costmodel import (
    HarvestModel,
    join_orders,
    window_ranking,
    yield_table,
)
from pipeline.testing.costmodel import loop_model, random_model


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 4), n=st.integers(1, 6),
       tc=st.sampled_from([0.0, 1.0, 5.0]), data=st.data())
def test_vectorized_model_matches_loops(seed: int, m: int, n: int, tc: float,
                                        data: st.DataObject) -> None:
    model = random_model(seed, m, n, tc)
    if seed % 2:  # a separate σ for later positions
        model = HarvestModel.build(
            np.array(model.rates), np.array(model.window_tuples), np.array(model.selectivity),
            [[np.diff(np.array(y)) for y in row] for row in model.yields],
            np.array(model.orders), model.tuple_cost,
            deep_selectivity=np.array(model.selectivity) * 0.3)
    counts = np.array(data.draw(st.lists(st.lists(st.integers(0, n), min_size=m - 1,
                                                  max_size=m - 1), min_size=m, max_size=m)))
    cost, out = model.evaluate(counts)
    want_c, want_o = loop_model(model, counts)
    assert cost == pytest.approx(want_c, rel=1e-9)
    assert out == pytest.approx(want_o, rel=1e-9, abs=1e-12)


def test_full_cost_is_the_all_ones_configuration() -> None:
    model = random_model(3, 3, 5, tuple_cost=2.0)
    want, _ = loop_model(model, model.max_counts())
    assert model.full_cost() == pytest.approx(want)


@pytest.mark.parametrize(
    ("scores", "want"),
    [
        ([1.0, 1.0, 1.0, 1.0], [0.0, 0.25, 0.5, 0.75, 1.0]),  # flat: P = z
        ([0.0, 0.0, 0.0, 0.0], [0.0, 0.25, 0.5, 0.75, 1.0]),  # nothing learned: flat
        ([0.1, 0.6, 0.3, 0.0], [0.0, 0.6, 0.9, 1.0, 1.0]),    # sorted descending
        ([2.0, 0.0], [0.0, 1.0, 1.0]),
    ],
)
def test_yield_table(scores: list[float], want: list[float]) -> None:
    assert yield_table(np.array(scores)) == pytest.approx(want)


@pytest.mark.parametrize(
    ("scores", "want"),
    [
        ([0.1, 0.6, 0.3, 0.0], [1, 2, 0, 3]),
        ([0.5, 0.5, 0.5], [0, 1, 2]),  # ties: newest first
        ([0.0, 0.2, 0.2], [1, 2, 0]),
    ],
)
def test_window_ranking(scores: list[float], want: list[int]) -> None:
    assert window_ranking(np.array(scores)).tolist() == want


def test_join_orders_low_selectivity_first() -> None:
    sel = np.array([[0, 0.3, 0.1, 0.2], [0.3, 0, 0.05, 0.05], [0.1, 0.05, 0, 0.9],
                    [0.2, 0.05, 0.9, 0]])
    assert join_orders(sel).tolist() == [[2, 3, 1], [2, 3, 0], [1, 0, 3], [1, 0, 2]]


def test_bad_shapes_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="selectivity"):
        HarvestModel.build(np.ones(3), np.ones(3), np.ones((2, 2)), [])
    with pytest.raises(ConfigError, match="basic windows"):
        HarvestModel.build(np.ones(3), np.ones(3), np.ones((3, 3)),
                           [[np.ones(2), np.ones(3)], [np.ones(2), np.ones(3)],
                            [np.ones(2), np.ones(4)]], orders=np.array([[1, 2], [0, 2], [0, 1]]))
