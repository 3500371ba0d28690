"""`harvest top` argument errors (exit 2) and the topics and checkpoint it resolves."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.cli.top_cmd import spec_target, topic_target
from pipeline.core.settings import PROJECT_ROOT, load_settings
from pipeline.testing.cli import exit_2_stderr


@pytest.mark.parametrize(("argv", "needle"), [
    (["top"], "--spec"),
    (["top", "--spec", "x.toml", "--metrics-topic", "a.metrics"], "not allowed"),
    (["top", "--metrics-topic", "a.metrics", "--refresh", "0"], "--refresh"),
    (["top", "--metrics-topic", "a.metrics", "--duration", "-1"], "--duration"),
])
def test_bad_arguments_exit_2(argv: list[str], needle: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert needle in exit_2_stderr(argv, capsys)


@pytest.mark.parametrize(("argv", "needle"), [
    (["top", "--metrics-topic", "a.metrics", "--topic-prefix", "p"], "--topic-prefix"),
    (["top", "--spec", "sensors", "--results-topic", "r"], "--results-topic"),
    (["top", "--spec", "/nonexistent/s.toml"], "/nonexistent/s.toml"),
    (["top", "--metrics-topic", "bad topic"], "bad topic"),
])
def test_bad_combinations_exit_2(argv: list[str], needle: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert needle in capsys.readouterr().err


def _args(**kw: object) -> argparse.Namespace:
    base = {"spec": None, "metrics_topic": None, "results_topic": None, "checkpoint": None,
            "topic_prefix": None}
    return argparse.Namespace(**{**base, **kw})


def test_a_spec_names_the_topics_and_checkpoint_submit_uses(tmp_path: Path) -> None:
    settings = load_settings(cache_dir=tmp_path, topic_prefix="run7")
    spec = PROJECT_ROOT / "examples" / "specs" / "sensors.toml"
    target = spec_target(_args(spec=spec), settings)
    assert (target.metrics_topic, target.results_topic) == ("run7.metrics", "run7.results")
    assert target.checkpoint == str(tmp_path / "checkpoints" / "run7-join")
    assert set(target.serdes) == {"run7.metrics", "run7.results"}
    other = spec_target(_args(spec=spec, topic_prefix="x", checkpoint="/ck"), settings)
    assert (other.metrics_topic, other.checkpoint) == ("x.metrics", "/ck")


def test_a_metrics_topic_implies_its_results_topic() -> None:
    settings = load_settings(schema_registry_url=None)
    assert topic_target(_args(metrics_topic="p.metrics"), settings).results_topic == "p.results"
    assert topic_target(_args(metrics_topic="m"), settings).results_topic is None
    assert topic_target(_args(metrics_topic="m", results_topic="r"),
                        settings).results_topic == "r"
