"""``--spec`` from any folder: a path that is no file here names a packaged example."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.cli.spec_path import resolve_spec


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    root = tmp_path / "examples"
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "sensors.toml").write_text("[join]\n")
    (root / "own-topics").mkdir()
    (root / "own-topics" / "spec.toml").write_text("[join]\n")
    return root


@pytest.mark.parametrize("value", ["examples/specs/sensors.toml", "specs/sensors.toml",
                                   "sensors.toml", "sensors"])
def test_example_names_resolve_against_the_examples(
        examples: Path, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path / "examples" / "own-topics")  # not where the specs are
    assert resolve_spec(value, examples) == str(examples / "specs" / "sensors.toml")
    assert resolve_spec(Path(value), examples) == examples / "specs" / "sensors.toml"


def test_a_file_here_wins_and_unknown_names_are_kept(
        examples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    (work / "examples" / "specs").mkdir(parents=True)
    (work / "examples" / "specs" / "sensors.toml").write_text("mine")
    monkeypatch.chdir(work)
    assert resolve_spec("examples/specs/sensors.toml", examples) == "examples/specs/sensors.toml"
    assert resolve_spec("nosuch.toml", examples) == "nosuch.toml"
    assert resolve_spec("/abs/sensors.toml", examples) == "/abs/sensors.toml"
    assert resolve_spec("examples/own-topics/spec.toml", examples) == str(
        examples / "own-topics" / "spec.toml")


def test_schema_runs_on_a_packaged_example_from_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["schema", "--spec", "examples/specs/sensors.toml"]) == 0
    assert '"name": "join_result"' in capsys.readouterr().out
