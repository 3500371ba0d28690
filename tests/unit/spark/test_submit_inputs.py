"""`harvest submit` with [inputs]: the job config names the user's topics, the [output]
topics and a checkpoint named after the results topic; passthrough does not apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.errors import ConfigError
from pipeline.core.settings import PROJECT_ROOT, load_settings
from pipeline.spark.submit import job_config
from pipeline.spec.model import load_spec

DATA = PROJECT_ROOT / "tests" / "data" / "own_topics"


def test_job_config_of_own_topics(tmp_path: Path) -> None:
    settings = load_settings(cache_dir=tmp_path)
    cfg = job_config(load_spec(DATA / "spec.toml"), settings)
    assert cfg.foreign
    assert cfg.input_topics == ("own.north", "own.south", "own.east")
    assert cfg.output_topics == ("own.joined", "own.joined.metrics", "own.joined.deadletter")
    assert cfg.checkpoint == str(tmp_path / "checkpoints" / "own.joined-join")
    with pytest.raises(ConfigError, match="--passthrough"):
        job_config(load_spec(DATA / "spec.toml"), settings, mode="passthrough")


def test_schema_problems_exit_before_spark(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text((DATA / "spec.toml").read_text().replace(
        'schema = "north.avsc"', f'schema = "{tmp_path / "missing.avsc"}"'))
    with pytest.raises(ConfigError, match=r"inputs\.north\.schema: schema file not found"):
        job_config(load_spec(spec), load_settings(cache_dir=tmp_path))
