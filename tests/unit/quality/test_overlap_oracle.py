"""The overlap oracles: DuckDB SQL (item tables, grouped sums) and NumPy brute force agree
with each other and with a pure-Python enumeration of the definition, for plain and
weighted sets (Gedik et al., CIKM: overlap and inner-product joins)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core.errors import SerializationError
from pipeline.quality.oracle import (
    brute_force_oracle,
    duckdb_oracle,
    duckdb_sql,
    item_weights,
    oracle,
)
from pipeline.spec.model import JoinSpec, parse_spec
from pipeline.testing.streams import make_dump, make_spec


def _weights(value: Any) -> dict[str, float]:
    if isinstance(value, dict):
        out: dict[str, float] = {}
        for k, w in value.items():
            out[str(k)] = out.get(str(k), 0.0) + float(w)
        return out
    return {str(k): 1.0 for k in value}


def _definition(join: JoinSpec, dump: list[dict[str, Any]]) -> set[tuple[int, ...]]:
    per = [[r for r in dump if r["stream"] == s] for s in join.streams]
    w = join.windows
    attr = str(join.attribute)

    def pred(a: dict[str, Any], b: dict[str, Any]) -> bool:
        wa, wb = _weights(a[attr]), _weights(b[attr])
        return sum(v * wb[k] for k, v in wa.items() if k in wb) >= join.epsilon - 1e-9

    out = set()
    for combo in itertools.product(*per):
        if all(combo[i]["event_time"] - w[j] <= combo[j]["event_time"]
               <= combo[i]["event_time"] + w[i] and pred(combo[i], combo[j])
               for i, j in itertools.combinations(range(len(combo)), 2)):
            out.add(tuple(r["seq"] for r in combo))
    return out


def _seqs(results: list[Any]) -> set[tuple[int, ...]]:
    return {tuple(m.seq for m in r.members) for r in results}


def _weighted(dump: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The dump with each set turned into a weighted set (weights 0.5, 1, 1.5 or 2; every
    other item given as a string, which names the same item)."""
    rng = np.random.default_rng(seed)
    out = []
    for r in dump:
        ws = rng.integers(1, 5, len(r["items"])) / 2.0
        out.append({**r, "items": {(str(i) if k % 2 else i): float(x)
                                   for k, (i, x) in enumerate(zip(r["items"], ws, strict=True))}})
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), m=st.integers(2, 4), eps=st.sampled_from([1.0, 2.0, 3.0]),
       weighted=st.booleans(),
       windows=st.lists(st.integers(5, 200), min_size=4, max_size=4))
def test_duckdb_agrees_with_brute_force_and_definition(
    seed: int, m: int, eps: float, weighted: bool, windows: list[int]
) -> None:
    spec = make_spec(m, "overlap", windows[:m])
    join = spec.join.model_copy(update={"epsilon": eps})
    dump = make_dump(seed, m, {2: 25, 3: 12, 4: 7}[m], max_delay=50, items=True)
    if weighted:
        dump = _weighted(dump, seed)
    db = duckdb_oracle(join, dump)
    bf = brute_force_oracle(join, dump)
    assert [r.id for r in db] == [r.id for r in bf]
    assert _seqs(bf) == _definition(join, dump)
    assert [r.id for r in oracle(join, dump)] == [r.id for r in db]


def test_sql_spells_every_pair() -> None:
    sql = duckdb_sql(make_spec(3, "overlap", [10, 20, 30]).join)
    assert sql.count("BETWEEN") == 3
    assert "tj.ts BETWEEN ti.ts - 30 AND ti.ts + 10" in sql  # the (0, 2) pair
    assert sql.count("HAVING sum(a.w * b.w) >=") == 3


def test_item_weights_rules() -> None:
    assert item_weights([3, 3, "3", 4], "s") == {"3": 1.0, "4": 1.0}
    assert item_weights({3: 0.5, "3": 0.25}, "s") == {"3": 0.75}
    assert item_weights([2.0], "s") == {"2": 1.0}
    for bad in ("abc", None, [1.5], [True]):
        with pytest.raises(SerializationError, match="'s'"):
            item_weights(bad, "s")


def test_empty_sets_never_match() -> None:
    join = parse_spec({"join": {"streams": ["a", "b"], "window_ms": 10, "predicate": "overlap",
                                "attribute": "s", "epsilon": 1}}).join
    dump = [{"stream": "a", "seq": 1, "event_time": 0, "arrival_time": 0, "s": []},
            {"stream": "b", "seq": 1, "event_time": 1, "arrival_time": 1, "s": [1]},
            {"stream": "b", "seq": 2, "event_time": 2, "arrival_time": 2, "s": {}}]
    assert duckdb_oracle(join, dump) == brute_force_oracle(join, dump) == []
