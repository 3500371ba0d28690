"""`harvest join` with ``[memory]``: the summary reports the bound; bad values exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.testing.streams import make_dump

SPEC = """
[join]
streams = ["s1", "s2", "s3"]
predicate = "band"
attribute = "value"
epsilon = 0.5
window_ms = 300

[disorder]
mode = "fixed"
slack_ms = 200

[memory]
{memory}
"""


def _files(tmp_path: Path, memory: str) -> tuple[Path, Path]:
    dump = make_dump(11, 3, 60, max_delay=150, late_share=0.4)
    (tmp_path / "dump.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dump))
    (tmp_path / "spec.toml").write_text(SPEC.format(memory=memory))
    return tmp_path / "spec.toml", tmp_path / "dump.jsonl"


def test_join_summary_reports_the_memory_bound(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    spec, dump = _files(tmp_path, 'mode = "prob"\nmax_tuples = 9')
    assert main(["oracle", "--spec", str(spec), "--input", str(dump),
                 "--output", str(tmp_path / "true.jsonl")]) == 0
    assert main(["join", "--spec", str(spec), "--input", str(dump),
                 "--output", str(tmp_path / "out.jsonl"),
                 "--summary", str(tmp_path / "s.json")]) == 0
    assert "memory: evictions=" in capsys.readouterr().out
    summary = json.loads((tmp_path / "s.json").read_text())
    mem = summary["memory"]
    assert mem["evictions"] > 0 and mem["memory_budget"] == 9 and mem["window_state"] <= 9
    assert main(["evaluate", "--truth", str(tmp_path / "true.jsonl"),
                 "--results", str(tmp_path / "out.jsonl"), "--json"]) == 0
    quality = json.loads(capsys.readouterr().out)
    assert quality["precision"] == 1.0 and quality["recall"] < 1.0


@pytest.mark.parametrize(("memory", "key"), [
    ('mode = "prob"', "memory.max_tuples"),
    ('mode = "prob"\nmax_tuples = 2', "memory.max_tuples"),
    ('mode = "lru"\nmax_tuples = 9', "memory.mode"),
    ('mode = "rand"\nmax_tuples = 9\nallocation = "half"', "memory.allocation"),
    ('mode = "rand"\nmax_tuples = 9\nstats_window_ms = -5', "memory.stats_window_ms"),
])
def test_bad_memory_values_exit_2_naming_the_key(tmp_path: Path, memory: str, key: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    spec, dump = _files(tmp_path, memory)
    for cmd in ("join", "oracle"):
        code = main([cmd, "--spec", str(spec), "--input", str(dump),
                     "--output", str(tmp_path / "out.jsonl")])
        assert code == 2
        assert key in capsys.readouterr().err
