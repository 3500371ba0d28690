"""Writing specs back as TOML: the round trip is exact."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.spec.model import load_spec, parse_spec
from pipeline.spec.toml import spec_to_toml, table_to_toml, with_overrides

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples" / "specs").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_specs_are_valid_and_round_trip(path: Path) -> None:
    spec = load_spec(path)
    assert parse_spec(tomllib.loads(spec_to_toml(spec))) == spec


def test_every_workload_has_an_example() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"demo", "sensors", "equi", "news", "positions"} <= names


@settings(max_examples=50, deadline=None)
@given(
    eps=st.floats(0.01, 100.0, allow_nan=False),
    windows=st.lists(st.integers(1, 10**7), min_size=2, max_size=5),
    prefix=st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True),
    routing=st.sampled_from(["atr", "hash"]),
    learn=st.booleans(),
)
def test_round_trip_generated(
    eps: float, windows: list[int], prefix: str, routing: str, learn: bool
) -> None:
    spec = parse_spec({
        "join": {"streams": [f"s{i}" for i in range(len(windows))], "windows_ms": windows,
                 "predicate": "equi" if routing == "hash" else "band", "attribute": "a1",
                 "epsilon": eps},
        "shedding": {"learn": learn},
        "job": {"routing": routing, "topic_prefix": prefix},
    })
    assert parse_spec(tomllib.loads(spec_to_toml(spec))) == spec


def test_with_overrides_revalidates_and_names_the_key() -> None:
    spec = load_spec(EXAMPLES[0])
    assert with_overrides(spec, job={"groups": 5}).job.groups == 5
    with pytest.raises(ConfigError, match=r"job\.groups"):
        with_overrides(spec, job={"groups": 0})
    with pytest.raises(ConfigError, match="nosuch"):
        with_overrides(spec, nosuch={"a": 1})


def test_unwritable_values_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"join\.x"):
        table_to_toml({"join": {"x": {"nested": 1}}})
    with pytest.raises(ConfigError, match=r"join\.e"):
        table_to_toml({"join": {"e": float("inf")}})
