"""`harvest demo` / `harvest bench pipeline` argument errors exit 2 naming the flag."""

from __future__ import annotations

import pytest

from pipeline.cli.main import main
from pipeline.testing.cli import exit_2_stderr


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["demo", "--speedup", "0"], "--speedup"),
        (["demo", "--duration", "-5"], "--duration"),
        (["demo", "--rate", "abc"], "--rate"),
        (["demo", "--load", "0"], "--load"),
        (["demo", "--lags", "0,x"], "--lags"),
        (["demo", "--seed", "-1"], "--seed"),
        (["bench", "nosuch"], "name"),
    ],
)
def test_bad_arguments_exit_2(argv: list[str], needle: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert needle in exit_2_stderr(argv, capsys)


def test_missing_spec_file_exits_2(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--spec", "/nonexistent/demo.toml", "--rate", "10"]) == 2
    assert "/nonexistent/demo.toml" in capsys.readouterr().err


def test_cli_defaults_are_the_demo_config_defaults() -> None:
    from pipeline.app.demo import DemoConfig
    from pipeline.cli import demo_cmd

    cfg = DemoConfig()
    assert (cfg.duration_s, cfg.speedup, cfg.max_rate) \
        == (demo_cmd.DEFAULT_DURATION_S, demo_cmd.DEFAULT_SPEEDUP, demo_cmd.DEFAULT_MAX_RATE)
