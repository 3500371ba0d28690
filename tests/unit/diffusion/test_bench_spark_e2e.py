"""The ``spark_e2e`` part of `harvest bench diffusion` (issue 31): the e2e test's outcome
read from pytest's JUnit report, and how it fills ``spark_adaptive_atr_e2e``."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.diffusion.main import _parts, missed_why
from bench.diffusion.spark_e2e import _outcome
from bench.diffusion.targets import targets

CASE = '<testsuites><testsuite name="pytest"><testcase classname="t" name="x">{}</testcase>' \
       '</testsuite></testsuites>'


@pytest.mark.parametrize(("inner", "outcome"), [
    ("", "passed"),
    ('<failure message="assert 3 == 4">trace</failure>', "failed"),
    ('<skipped message="no broker" />', "skipped"),
    ('<error message="fixture failed">trace</error>', "error"),
])
def test_outcome_is_read_from_the_junit_report(tmp_path: Path, inner: str, outcome: str
                                               ) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(CASE.format(inner))
    got, message = _outcome(junit)
    assert got == outcome
    assert (message is None) == (outcome == "passed")


def test_no_report_is_an_error(tmp_path: Path) -> None:
    assert _outcome(tmp_path / "missing.xml")[0] == "error"


@pytest.mark.parametrize(("e2e", "met"), [
    (None, None),
    ({"outcome": "not run", "why": "no checkout", "passed": None}, None),
    ({"outcome": "skipped", "passed": None, "message": "no broker"}, None),
    ({"outcome": "failed", "passed": False, "message": "assert", "pytest_rc": 1}, False),
    ({"outcome": "passed", "passed": True, "observed": {"equals_oracle": True}}, True),
])
def test_the_target_is_the_parts_verdict(e2e: dict[str, object] | None, met: bool | None
                                         ) -> None:
    got = targets([], None, e2e=e2e)
    assert got["spark_adaptive_atr_e2e"] is met
    why = missed_why([], None, got, e2e)
    assert ("spark_adaptive_atr_e2e" in why) == (met is not True)


def test_quick_leaves_the_spark_part_out_unless_named() -> None:
    assert "spark_e2e" not in _parts(None, quick=True)
    assert "spark_e2e" in _parts(None, quick=False)
    assert _parts("spark_e2e", quick=True) == ["spark_e2e"]
