"""Write instance snapshots of the current code to ``tests/data/checkpoints/`` with the
results the rest of the run must give after a restore (run once, when the state layout
is about to move: ``python tests/data/checkpoints/make_fixtures.py``).

Each case: a :class:`~pipeline.runtime.instance.JoinInstance` of one spec processes the
first half of :func:`sensor_rows`, is dumped to bytes; the same blob is restored, takes
the second half and is flushed; the result ids of that continuation are stored beside
the blob. ``tests/unit/spark/test_checkpoint_compat.py`` restores the blob with the
code of the day and must get the same ids.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

from pipeline.runtime.instance import InstanceConfig, JoinInstance
from pipeline.spec.model import parse_spec
from pipeline.testing.frames import batch_frame, result_ids
from pipeline.testing.streams import SENSOR_ATTRS, SENSOR_STREAMS, sensor_rows

HERE = pathlib.Path(__file__).parent
WINDOW = {"streams": list(SENSOR_STREAMS), "window_ms": 300, "epsilon": 0.4}

CASES: dict[str, dict[str, Any]] = {
    "band-quality-grubjoin": {
        "join": {**WINDOW, "predicate": "band", "attribute": "value"},
        "disorder": {"mode": "quality", "recall": 0.9},
        "shedding": {"mode": "grubjoin", "capacity": 4000, "basic_window_ms": 50},
        "job": {"budget": "virtual", "routing": "atr", "groups": 1, "segment_ms": 500}},
    "equi-fixed-taildrop": {
        "join": {**WINDOW, "predicate": "equi", "attribute": "a1"},
        "disorder": {"mode": "fixed", "slack_ms": 200},
        "shedding": {"mode": "taildrop", "capacity": 3000},
        "job": {"budget": "virtual", "routing": "atr", "groups": 1, "segment_ms": 500}},
    "band-randomdrop-static": {
        "join": {**WINDOW, "predicate": "band", "attribute": "value"},
        "disorder": {"mode": "fixed", "slack_ms": 400},
        "shedding": {"mode": "randomdrop-static", "capacity": 3000},
        "job": {"budget": "virtual", "routing": "atr", "groups": 1, "segment_ms": 500}},
    "band-memory-prob": {
        "join": {**WINDOW, "predicate": "band", "attribute": "value"},
        "disorder": {"mode": "fixed", "slack_ms": 400},
        "memory": {"mode": "prob", "max_tuples": 24},
        "job": {"routing": "atr", "groups": 1, "segment_ms": 500}},
}


def clock() -> float:
    return 0.0


def continuation(spec: dict[str, Any], blob: bytes, rows: list[dict[str, Any]]) -> list[str]:
    """Restore ``blob``, process ``rows`` in two batches, flush: the sorted result ids."""
    cfg = InstanceConfig.from_spec(parse_spec(spec), SENSOR_ATTRS)
    half = len(rows) // 2
    inst = JoinInstance.load(cfg, 0, blob, clock)
    out = inst.process(batch_frame(rows[:half]))
    inst = JoinInstance.load(cfg, 0, inst.dump(), clock)
    out += inst.process(batch_frame(rows[half:]))
    out += inst.flush()
    return sorted(result_ids(out))


def main() -> None:
    rows = sensor_rows(11, n=360)
    cut = len(rows) // 2
    for name, spec in CASES.items():
        cfg = InstanceConfig.from_spec(parse_spec(spec), SENSOR_ATTRS)
        inst = JoinInstance(cfg, 0, clock)
        inst.process(batch_frame(rows[:cut]))
        blob = inst.dump()
        ids = continuation(spec, blob, rows[cut:])
        (HERE / f"{name}.bin").write_bytes(blob)
        (HERE / f"{name}.json").write_text(json.dumps({"spec": spec, "results": ids}) + "\n")
        print(name, len(blob), "bytes,", len(ids), "results after the restore")


if __name__ == "__main__":
    main()
