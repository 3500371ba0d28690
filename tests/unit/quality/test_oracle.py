"""The oracles: DuckDB SQL and NumPy brute force agree with each other and with a
pure-Python enumeration of the definition (ARCHITECTURE §4)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError, SerializationError
from pipeline.quality.oracle import brute_force_oracle, duckdb_oracle, duckdb_sql, oracle
from pipeline.spec.model import JoinSpec
from pipeline.testing.streams import make_dump, make_spec


def _definition(join: JoinSpec, dump: list[dict[str, Any]]) -> set[tuple[int, ...]]:
    """Every m-tuple satisfying window + predicate for every pair, by plain Python."""
    per = [[r for r in dump if r["stream"] == s] for s in join.streams]
    w = join.windows

    def pred(a: dict[str, Any], b: dict[str, Any]) -> bool:
        if join.predicate == "equi":
            return bool(a["a1"] == b["a1"])
        if join.predicate == "band":
            return abs(a["value"] - b["value"]) <= join.epsilon
        if join.predicate == "distance":
            return (a["x"] - b["x"]) ** 2 + (a["y"] - b["y"]) ** 2 <= join.epsilon**2
        ka, kb = a["keywords"], b["keywords"]
        na = math.sqrt(sum(v * v for v in ka.values()))
        nb = math.sqrt(sum(v * v for v in kb.values()))
        dot = sum(v * kb.get(k, 0.0) for k, v in ka.items())
        return na > 0 and nb > 0 and dot / (na * nb) >= join.epsilon - 1e-9

    out = set()
    for combo in itertools.product(*per):
        ok = all(
            combo[i]["event_time"] - w[j] <= combo[j]["event_time"] <= combo[i]["event_time"] + w[i]
            and pred(combo[i], combo[j])
            for i, j in itertools.combinations(range(len(combo)), 2)
        )
        if ok:
            out.add(tuple(r["seq"] for r in combo))
    return out


def _seqs(results: list[Any]) -> set[tuple[int, ...]]:
    return {tuple(m.seq for m in r.members) for r in results}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(2, 4),
    predicate=st.sampled_from(["equi", "band", "distance"]),
    windows=st.lists(st.integers(5, 200), min_size=4, max_size=4),
)
def test_duckdb_agrees_with_brute_force_and_definition(
    seed: int, m: int, predicate: str, windows: list[int]
) -> None:
    spec = make_spec(m, predicate, windows[:m])
    dump = make_dump(seed, m, {2: 25, 3: 12, 4: 7}[m], max_delay=50)
    db = duckdb_oracle(spec.join, dump)
    bf = brute_force_oracle(spec.join, dump)
    assert [r.id for r in db] == [r.id for r in bf]
    assert _seqs(bf) == _definition(spec.join, dump)
    assert all(r.result_time == max(x.event_time for x in r.members) for r in db)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 3))
def test_cosine_brute_force_matches_definition(seed: int, m: int) -> None:
    spec = make_spec(m, "cosine", [150] * m)
    dump = make_dump(seed, m, 12)
    assert _seqs(oracle(spec.join, dump)) == _definition(spec.join, dump)


def test_sql_spells_every_pair() -> None:
    sql = duckdb_sql(make_spec(3, "band", [10, 20, 30]).join)
    assert sql.count("BETWEEN") == 3
    assert "t2.ts BETWEEN t0.ts - 30 AND t0.ts + 10" in sql
    assert sql.count("abs(") == 3


def test_errors() -> None:
    with pytest.raises(ConfigError, match=r"join\.predicate"):
        duckdb_oracle(make_spec(2, "cosine", [10, 10]).join, [])
    bad = [{"stream": "s1", "seq": 0, "event_time": 1, "arrival_time": 1, "value": "x"}]
    with pytest.raises(SerializationError, match="'value'"):
        duckdb_oracle(make_spec(2, "band", [10, 10]).join, bad)
    with pytest.raises(SerializationError, match="'s7'"):
        brute_force_oracle(make_spec(2, "band", [10, 10]).join, [{"stream": "s7"}])
