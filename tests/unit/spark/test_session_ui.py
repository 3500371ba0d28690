"""The Spark UI of `harvest submit` / `harvest demo`: on the loopback address for a
local master, untouched for a remote one, off unless asked for; the query's name."""

from __future__ import annotations

import pytest

from pipeline.spark.session import UI_HOST, SessionConfig, is_local_master, ui_env


@pytest.mark.parametrize(("master", "local"), [
    ("local", True), ("local[*]", True), ("local[2]", True),
    ("spark://127.0.0.1:7077", True), ("spark://localhost:7077", True),
    ("spark://spark-master:7077", False), ("yarn", False), ("spark://10.0.0.5:7077", False),
])
def test_local_masters(master: str, local: bool) -> None:
    assert is_local_master(master) is local


def test_the_ui_binds_to_loopback_only_when_on_and_local() -> None:
    assert ui_env(SessionConfig(master="local[2]", ui=True), {}) == {
        "SPARK_LOCAL_IP": UI_HOST}
    assert ui_env(SessionConfig(master="local[2]", ui=False), {}) == {}
    assert ui_env(SessionConfig(master="spark://spark-master:7077", ui=True), {}) == {}
    assert ui_env(SessionConfig(master="local[2]", ui=True),
                  {"SPARK_LOCAL_IP": "10.1.2.3"}) == {}  # the user's choice stays


def test_sessions_keep_the_ui_off_by_default() -> None:
    assert SessionConfig().ui is False


def test_the_query_is_named_after_the_spec() -> None:
    from pipeline.spark.job import JobConfig
    from pipeline.testing.streams import exact_spec

    spec = exact_spec({"streams": ["s1", "s2"], "window_ms": 1000, "predicate": "equi",
                       "attribute": "k"}, 0, {})
    cfg = JobConfig(spec=spec, mode="join", bootstrap="b", topic_prefix="run7",
                    workload="sensors", checkpoint="/ck", client_options={},
                    idle_flush_ms=1000, name="sensors")
    assert cfg.query_name == "sensors-join-run7"
    default = JobConfig(spec=spec, mode="join", bootstrap="b", topic_prefix="run7",
                        workload="sensors", checkpoint="/ck", client_options={},
                        idle_flush_ms=1000)
    assert default.query_name == "harvest-join-run7"  # the name before specs named it
