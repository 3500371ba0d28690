"""A checkpoint written by an earlier layout of the code restores with today's.

The blobs in ``tests/data/checkpoints/`` were dumped by ``make_fixtures.py`` before the
operators moved into packages (#27); restoring one and running the rest of the input
must give exactly the results that the writing code gave.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from pipeline.testing.streams import sensor_rows

FIXTURES = pathlib.Path(__file__).parents[2] / "data" / "checkpoints"
CASES = sorted(p.stem for p in FIXTURES.glob("*.bin"))


def test_fixtures_exist() -> None:
    assert len(CASES) >= 4


@pytest.mark.parametrize("name", CASES)
def test_old_checkpoint_restores_to_the_same_results(name: str) -> None:
    import importlib.util
    spec_file = FIXTURES / "make_fixtures.py"
    loader = importlib.util.spec_from_file_location("make_fixtures", spec_file)
    assert loader is not None and loader.loader is not None
    mod = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(mod)
    stored = json.loads((FIXTURES / f"{name}.json").read_text())
    rows = sensor_rows(11, n=360)
    blob = (FIXTURES / f"{name}.bin").read_bytes()
    got = mod.continuation(stored["spec"], blob, rows[len(rows) // 2:])
    assert stored["results"], "the fixture must expect results"
    assert got == stored["results"]
