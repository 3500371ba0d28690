"""`harvest join`, `harvest oracle`, `harvest evaluate` on a small dump file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.testing.cli import exit_2_stderr
from pipeline.testing.streams import make_dump

SPEC = """
[join]
streams = ["s1", "s2", "s3"]
predicate = "band"
attribute = "value"
epsilon = 0.5
window_ms = 300

[disorder]
mode = "{mode}"
slack_ms = {slack}
interval_ms = 500

[shedding]
basic_window_ms = 100
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    dump = make_dump(11, 3, 60, max_delay=150, late_share=0.4)
    (tmp_path / "dump.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dump))
    (tmp_path / "none.toml").write_text(SPEC.format(mode="none", slack=0))
    (tmp_path / "exact.toml").write_text(SPEC.format(mode="fixed", slack=200))
    return {"dir": tmp_path, "dump": tmp_path / "dump.jsonl"}


def _read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _evaluate(d: Path, results: str, *extra: str) -> int:
    """`harvest evaluate` of ``d/results`` against the oracle's ``d/true.jsonl``."""
    return main(["evaluate", "--truth", str(d / "true.jsonl"), "--results", str(d / results),
                 *extra])


def test_join_oracle_evaluate(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    d = files["dir"]
    assert (
        main(
            [
                "oracle",
                "--spec",
                str(d / "exact.toml"),
                "--input",
                str(files["dump"]),
                "--output",
                str(d / "true.jsonl"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "join",
                "--spec",
                str(d / "exact.toml"),
                "--input",
                str(files["dump"]),
                "--output",
                str(d / "exact.jsonl"),
                "--metrics",
                str(d / "m.jsonl"),
                "--summary",
                str(d / "s.json"),
            ]
        )
        == 0
    )
    truth, exact = _read(d / "true.jsonl"), _read(d / "exact.jsonl")
    assert truth, "the dump must have true results"
    assert sorted(r["id"] for r in exact) == sorted(r["id"] for r in truth)  # type: ignore[type-var]
    first = exact[0]
    assert set(first) == {"id", "result_time", "members"}
    assert [m["stream"] for m in first["members"]] == ["s1", "s2", "s3"]  # type: ignore[attr-defined]
    summary = json.loads((d / "s.json").read_text())
    assert summary["inputs"] == 180 and summary["results"] == len(exact)
    assert summary["dropped"] == 0
    assert summary["cost_per_second"] == pytest.approx(summary["cost"] / summary["stream_seconds"])
    assert summary["cost"] == summary["comparisons"] + 180 * 1.0  # tuple_cost defaults to 1
    metrics = _read(d / "m.jsonl")
    assert metrics and all(m["k_ms"] == 200 for m in metrics)
    capsys.readouterr()

    assert _evaluate(d, "exact.jsonl", "--json") == 0
    q = json.loads(capsys.readouterr().out)
    assert q["recall"] == 1.0 and q["precision"] == 1.0

    # K = 0 on this disordered dump loses results but never invents one
    assert (
        main(
            [
                "join",
                "--spec",
                str(d / "none.toml"),
                "--input",
                str(files["dump"]),
                "--output",
                str(d / "none.jsonl"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert _evaluate(d, "none.jsonl", "--period-ms", "1000", "--json") == 0
    q = json.loads(capsys.readouterr().out)
    assert q["recall"] < 1.0 and q["precision"] == 1.0
    assert sum(p["true"] for p in q["periods"]) == q["true"]
    assert _evaluate(d, "none.jsonl", "--period-ms", "1000") == 0
    assert "recall=" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("spec_text", "needle"),
    [
        (
            SPEC.format(mode="none", slack=0).replace("epsilon = 0.5", "epsilon = -1"),
            "join.epsilon",
        ),
        (SPEC.format(mode="sometimes", slack=0), "disorder.mode"),
        (SPEC.format(mode="none", slack=0) + "bogus = 1\n", "shedding.bogus"),
        (SPEC.format(mode="none", slack=0).replace('attribute = "value"\n', ""), "attribute"),
    ],
)
def test_bad_spec_exits_2_naming_the_key(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], spec_text: str, needle: str
) -> None:
    bad = files["dir"] / "bad.toml"
    bad.write_text(spec_text)
    for cmd in ("join", "oracle"):
        code = main(
            [
                cmd,
                "--spec",
                str(bad),
                "--input",
                str(files["dump"]),
                "--output",
                str(files["dir"] / "out.jsonl"),
            ]
        )
        assert code == 2
        assert needle in capsys.readouterr().err


def test_bad_inputs(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    d = files["dir"]
    code = main(
        [
            "join",
            "--spec",
            str(d / "exact.toml"),
            "--input",
            str(d / "missing.jsonl"),
            "--output",
            str(d / "o.jsonl"),
        ]
    )
    assert code == 2 and "--input" in capsys.readouterr().err
    broken = d / "broken.jsonl"
    lines = files["dump"].read_text().splitlines()
    rec = json.loads(lines[3])
    del rec["value"]
    lines[3] = json.dumps(rec)
    broken.write_text("\n".join(lines) + "\n")
    code = main(
        [
            "join",
            "--spec",
            str(d / "exact.toml"),
            "--input",
            str(broken),
            "--output",
            str(d / "o.jsonl"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "line 4" in err and "'value'" in err
    assert "--period-ms" in exit_2_stderr(
        ["evaluate", "--truth", "a", "--results", "b", "--period-ms", "0"], capsys)
