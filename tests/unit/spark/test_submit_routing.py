"""`harvest submit` refuses what the Spark job cannot route (exit 2 naming the key):
coordinated tuple routing and adaptive ATR run in `harvest bench diffusion` only."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli.main import main

SPEC = """
[join]
streams = ["a", "b"]
window_ms = 1000
predicate = "band"
attribute = "value"
epsilon = 1.0

[job]
groups = 2
{extra}
"""


@pytest.mark.parametrize(("extra", "key"), [
    ('routing = "ctr"', "job.routing"),
    ('segment_keys = "least-loaded"', "job.segment_keys"),
    ("adapt_master = true", "job.adapt_master"),
    ("adapt_segment = true", "job.adapt_segment"),
])
def test_submit_refuses_with_exit_2_naming_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, key: str) -> None:
    spec = tmp_path / "job.toml"
    spec.write_text(SPEC.format(extra=extra))
    assert main(["submit", "--spec", str(spec)]) == 2
    assert key in capsys.readouterr().err
