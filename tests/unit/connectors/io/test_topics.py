"""Topic naming (ARCHITECTURE §7) and Kafka's topic-name rules."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.io.topics import (
    deadletter_topic,
    input_topic,
    input_topic_pattern,
    metrics_topic,
    parse_input_topic,
    results_topic,
    validate_topic,
)
from pipeline.core.errors import ConfigError

PART = st.text(alphabet="abcXYZ019_-", min_size=1, max_size=20)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: input_topic("harvest", "sensors", "s1"), "harvest.in.sensors.s1"),
        (lambda: input_topic("run-7", "news", "reuters"), "run-7.in.news.reuters"),
        (lambda: input_topic("a.b", "equi", "S_2"), "a.b.in.equi.S_2"),
        (lambda: results_topic("harvest"), "harvest.results"),
        (lambda: metrics_topic("harvest"), "harvest.metrics"),
        (lambda: deadletter_topic("harvest"), "harvest.deadletter"),
        (lambda: results_topic("t1.x"), "t1.x.results"),
    ],
)
def test_names(build: object, expected: str) -> None:
    assert build() == expected  # type: ignore[operator]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: input_topic("harvest", "sen.sors", "s1"), "workload: 'sen.sors'"),
        (lambda: input_topic("harvest", "sensors", ""), "stream: ''"),
        (lambda: input_topic("harvest", "sensors", "s 1"), "stream: 's 1'"),
        (lambda: input_topic("", "sensors", "s1"), "topic_prefix: invalid topic prefix ''"),
        (lambda: results_topic("bad/prefix"), "topic_prefix: invalid topic prefix 'bad/prefix'"),
        (lambda: metrics_topic(".lead"), "topic_prefix"),
        (lambda: deadletter_topic("trail."), "topic_prefix"),
        (lambda: validate_topic(""), "invalid topic name ''"),
        (lambda: validate_topic(".."), "invalid topic name '..'"),
        (lambda: validate_topic("x" * 250), "250 characters exceeds 249"),
        (lambda: validate_topic("a:b"), "'a:b' may only contain"),
        (lambda: parse_input_topic("harvest", "harvest.results"), "not an input topic"),
        (lambda: parse_input_topic("harvest", "other.in.a.b"), "not an input topic"),
        (lambda: parse_input_topic("harvest", "harvest.in.a.b.c"), "not an input topic"),
    ],
)
def test_invalid_names_raise_config_error_naming_the_value(build: object, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        build()  # type: ignore[operator]


@pytest.mark.parametrize("name", ["a", "harvest.in.x.y", "A-b_c.9", "x" * 249])
def test_valid_names_pass(name: str) -> None:
    assert validate_topic(name) == name


@settings(max_examples=60, deadline=None)
@given(prefix=PART, workload=PART, stream=PART)
def test_parse_inverts_input_topic_and_pattern_matches(
    prefix: str, workload: str, stream: str
) -> None:
    topic = input_topic(prefix, workload, stream)
    assert parse_input_topic(prefix, topic) == (workload, stream)
    pattern = re.compile(input_topic_pattern(prefix, workload))
    assert pattern.match(topic)
    assert not pattern.match(results_topic(prefix))
    assert not pattern.match(input_topic(prefix, workload + "x", stream))
