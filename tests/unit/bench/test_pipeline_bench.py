"""`harvest bench pipeline` entry points that need no broker: bad --only, remeasure guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.pipeline import run
from pipeline.config import Settings
from pipeline.errors import InfraError


def test_only_takes_remeasure(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="'remeasure', got 'sweeps'"):
        run(False, tmp_path, Settings(), only="sweeps")


def test_remeasure_needs_every_row_to_name_its_topics(tmp_path: Path) -> None:
    rows = [{"workload": "equi", "method": "ours", "input_rate": 30.0, "topic_prefix": "bp1"},
            {"workload": "sensors-nonaligned", "method": "off", "input_rate": 700.0}]
    (tmp_path / "pipeline.json").write_text(json.dumps({"rows": rows}))
    with pytest.raises(InfraError, match="sensors-nonaligned/off at 700/s names no topic_prefix"):
        run(False, tmp_path, Settings(), only="remeasure")
