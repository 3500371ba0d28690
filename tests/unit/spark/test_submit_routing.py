"""`harvest submit` refuses what the Spark job cannot route (exit 2 naming the key):
coordinated tuple routing runs in `harvest bench diffusion` only; adaptive ATR runs in the
job, and its bad values exit 2 naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.spark.submit import check_spark_routing
from pipeline.spec.model import parse_spec

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
    ('segment_keys = "random"', "job.segment_keys"),
    ("load_weights = [0.5, 0.6, 0.0]", "job.load_weights"),
    ("adapt_master = true\nswitch_margin = 1.0", "job.switch_margin"),
    ("adapt_master = true\nadapt_interval_ms = 0", "job.adapt_interval_ms"),
    ("adapt_segment = true\nsegment_ms = 100000", "job.segment_ms"),
    ("adapt_segment = true\nsegment_step_ms = 0", "job.segment_step_ms"),
    ('routing = "hash"\nadapt_master = true', "job.adapt_master"),
])
def test_submit_refuses_with_exit_2_naming_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, key: str) -> None:
    spec = tmp_path / "job.toml"
    spec.write_text(SPEC.format(extra=extra))
    assert main(["submit", "--spec", str(spec)]) == 2
    assert key in capsys.readouterr().err


def test_adaptive_atr_is_not_refused() -> None:
    spec = parse_spec({"join": {"streams": ["a", "b"], "window_ms": 1000, "predicate": "band",
                                "attribute": "value", "epsilon": 1.0},
                       "job": {"groups": 2, "segment_keys": "least-loaded",
                               "adapt_master": True, "adapt_segment": True}})
    check_spark_routing(spec)  # no ConfigError
