"""A dump of the user's own topics (as `harvest dump` writes it: partition, offset,
payload) is what `harvest join` and `harvest oracle` take with the same spec."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.core.settings import PROJECT_ROOT
from pipeline.runtime.inputs import resolve_inputs
from pipeline.runtime.tuples import to_tuple
from pipeline.spec.model import load_spec

DATA = PROJECT_ROOT / "tests" / "data" / "own_topics"


def _dump(path: Path) -> int:
    plan = resolve_inputs(load_spec(DATA / "spec.toml"), PROJECT_ROOT / "schemas")
    rng = random.Random(3)
    rows = []
    t0 = 1767000000000
    for i in range(90):
        stream = plan.streams[i % 3]
        ts = t0 + 100 * i + rng.randint(0, 50)
        temp = round(rng.uniform(10, 11), 2)
        if stream.stream == "north":
            rec = {"station": f"n-{i}", "ts": ts, "temp_c": temp, "pos": {"lat": 0.0,
                                                                          "lon": 1.0},
                   "humidity": 0.5}
        elif stream.stream == "south":
            rec = {"obs_id": i, "time_us": ts * 1000, "temperature": temp, "sensor": "A",
                   "pos": {"x": i}}
        else:
            rec = {"when": datetime.fromtimestamp(ts / 1000, UTC).isoformat(), "t": temp,
                   "label": "e", "count": i, "note": None}
        rows.append(to_tuple(stream, rec, i % 3, i, ts + rng.randint(0, 800)))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def test_join_and_oracle_take_the_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    _dump(tmp_path / "dump.jsonl")
    spec = str(DATA / "spec.toml")
    assert main(["oracle", "--spec", spec, "--input", str(tmp_path / "dump.jsonl"),
                 "--output", str(tmp_path / "true.jsonl")]) == 0
    assert main(["join", "--spec", spec, "--input", str(tmp_path / "dump.jsonl"),
                 "--output", str(tmp_path / "got.jsonl")]) == 0
    truth = (tmp_path / "true.jsonl").read_text().splitlines()
    assert truth, "the dump must have join results"
    capsys.readouterr()
    assert main(["evaluate", "--truth", str(tmp_path / "true.jsonl"), "--results",
                 str(tmp_path / "got.jsonl"), "--json"]) == 0
    quality = json.loads(capsys.readouterr().out)
    assert quality["recall"] == 1.0 and quality["precision"] == 1.0
