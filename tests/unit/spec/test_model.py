"""The job spec: valid examples load, unknown keys and bad values name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.errors import ConfigError
from pipeline.spec.model import load_spec, parse_spec

BASE = {"streams": ["s1", "s2", "s3"], "window_ms": 20000, "predicate": "band",
        "attribute": "value", "epsilon": 1.0}


def test_issue_example_spec_loads(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        """
[join]
streams = ["s1", "s2", "s3"]
window_ms = 20000
predicate = "band"
attribute = "value"
epsilon = 1.0
[disorder]
mode = "quality"
slack_ms = 0
recall = 0.99
period_ms = 60000
interval_ms = 1000
granularity_ms = 10
[shedding]
mode = "off"
"""
    )
    spec = load_spec(path)
    assert spec.join.windows == (20000, 20000, 20000)
    assert spec.disorder.recall == 0.99
    assert spec.shedding.mode == "off"
    assert spec.job.topic_prefix == "harvest"


def test_per_stream_windows() -> None:
    join = {**BASE, "window_ms": None, "windows_ms": [1000, 2000, 3000]}
    del join["window_ms"]
    assert parse_spec({"join": join}).join.windows == (1000, 2000, 3000)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"join": {**BASE, "bogus": 1}}, "join.bogus: unknown key"),
        ({"join": BASE, "extra": {}}, "extra: unknown key"),
        ({"join": {**BASE, "window_ms": -5}}, "join.window_ms"),
        ({"join": {**BASE, "predicate": "fuzzy"}}, "join.predicate"),
        ({"join": {**BASE, "streams": ["s1"]}}, "join.streams"),
        ({"join": {**BASE, "streams": ["s1", "s1"]}}, "streams: duplicate"),
        ({"join": {**BASE, "windows_ms": [1, 2, 3]}}, "exactly one of window_ms or windows_ms"),
        ({"join": {**BASE, "attribute": None}}, "attribute: required"),
        ({"join": {**BASE, "predicate": "cosine", "epsilon": 1.5}}, "epsilon: cosine"),
        ({"join": {**BASE, "predicate": "distance", "index": True}}, "index: only for equi"),
        ({"join": BASE, "disorder": {"mode": "later"}}, "disorder.mode"),
        ({"join": BASE, "disorder": {"recall": 1.5}}, "disorder.recall"),
        ({"join": BASE, "disorder": {"interval_ms": 5000, "period_ms": 1000}},
         "interval_ms: L must be <= P"),
        ({"join": BASE, "shedding": {"boost": 0.5}}, "shedding.boost"),
        ({"join": BASE, "job": {"routing": "hash"}}, "'hash' routing needs an equi-join"),
        ({"join": BASE, "job": {"groups": 0}}, "job.groups"),
        ({"join": BASE, "job": {"trigger_ms": 8000, "max_staleness_ms": 8000}},
         "job.max_staleness_ms: must exceed job.trigger_ms = 8000"),
        ({"join": BASE, "job": {"max_staleness_ms": 0}}, "max_staleness_ms"),
        ({"join": BASE, "job": {"thin_after_ms": 5000}},
         "job.thin_after_ms: must be below job.max_staleness_ms = None"),
        ({"join": BASE, "job": {"trigger_ms": 1000, "max_staleness_ms": 9000,
                                "thin_after_ms": 9000}},
         "job.thin_after_ms: must be below job.max_staleness_ms = 9000"),
        ({"join": BASE, "job": {"thin_slice_ms": 0}}, "thin_slice_ms"),
        ({"join": BASE, "job": {"fetch_max_wait_ms": -1}}, "job.fetch_max_wait_ms"),
        ({"join": BASE, "job": {"fetch_max_wait_ms": "soon"}}, "job.fetch_max_wait_ms"),
    ],
)
def test_bad_specs_name_the_key(data: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_spec(data)
    assert needle in str(info.value)


def test_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_spec(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[join\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_spec(bad)


def test_virtual_budget_without_capacity_is_a_valid_spec() -> None:
    """The capacity rule depends on the runtime's budget source, so the resolver checks
    it (tests/unit/runtime/test_resolve.py), not the spec."""
    spec = parse_spec({"join": BASE, "shedding": {"mode": "grubjoin"}, "job": {"budget": "wall"}})
    assert spec.shedding.budget == "virtual" and spec.shedding.capacity is None
