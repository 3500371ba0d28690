"""examples/own-topics: the spec is valid against its schema file, and the producer
script generates readings the job accepts and that join (no Kafka needed)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from types import ModuleType

import pytest

from connectors.io.foreign import ForeignSerde
from pipeline.cli.main import main
from pipeline.core.settings import PROJECT_ROOT
from pipeline.quality.oracle import oracle
from pipeline.runtime.inputs import resolve_inputs
from pipeline.runtime.tuples import to_tuple
from pipeline.spec.model import load_spec

EXAMPLE = PROJECT_ROOT / "examples" / "own-topics"


def _producer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("own_topics_produce", EXAMPLE / "produce.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_schema_of_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--spec", str(EXAMPLE / "spec.toml")]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in schema["fields"]][-3:] == ["north", "south", "east"]


def test_generated_readings_decode_and_join() -> None:
    spec = load_spec(EXAMPLE / "spec.toml")
    plan = {p.topic: p for p in resolve_inputs(spec, PROJECT_ROOT / "schemas").streams}
    tuples = []
    for offset, (arrival, stream, partition, value) in enumerate(
            _producer().readings(20, 2.0, 1)):
        p = plan[f"weather.{stream}"]
        rec = ForeignSerde(p.format, p.schema).decode(value)[1]
        tuples.append(to_tuple(p, rec, partition, offset, arrival))
    assert len(tuples) == 120
    assert oracle(spec.join, tuples), "the example data must produce join results"


def test_dry_run() -> None:
    out = subprocess.run([sys.executable, str(EXAMPLE / "produce.py"), "--dry-run",
                          "--seconds", "5"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["readings"] == 30
