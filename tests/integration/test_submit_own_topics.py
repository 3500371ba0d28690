"""`harvest submit` with [inputs] never creates the user's topics: a missing one fails it
(exit 1, naming the topic) before Spark starts, and the topic still does not exist."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from connectors.io.admin import list_topic_names
from pipeline.cli import submit_cmd
from pipeline.cli.main import main
from pipeline.core.settings import PROJECT_ROOT

pytestmark = pytest.mark.kafka

DATA = PROJECT_ROOT / "tests" / "data" / "own_topics"


def test_missing_input_topic_fails_naming_it(
        kafka_bootstrap: str, topic_prefix: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for f in DATA.glob("*.avsc"):
        shutil.copy(f, tmp_path / f.name)
    spec = tmp_path / "spec.toml"
    spec.write_text((DATA / "spec.toml").read_text().replace('"own.', f'"{topic_prefix}.'))
    monkeypatch.setenv("HARVEST_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setattr(submit_cmd, "INPUTS_TIMEOUT_S", 2.0)
    start = time.monotonic()
    code = main(["submit", "--spec", str(spec), "--checkpoint", str(tmp_path / "ck")])
    assert code == 1
    assert time.monotonic() - start < 30
    err = capsys.readouterr().err
    assert f"{topic_prefix}.north" in err and "never creates them" in err, err
    present = list_topic_names(kafka_bootstrap)
    assert not {f"{topic_prefix}.{s}" for s in ("north", "south", "east")} & present
