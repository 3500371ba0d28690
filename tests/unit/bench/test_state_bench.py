"""bench state's pure parts: summary rows, growth and targets, --only, the counting
handle, the checkpoint's changelog sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.state.handle import CountingHandle
from bench.state.main import _parts
from bench.state.report import growth, summarize, targets
from bench.state.spark import checkpoint_bytes
from pipeline.core.errors import ConfigError


def _batch(design: str, w: int, written: int, ms: float) -> dict[str, Any]:
    return {"design": design, "window_s": w, "bytes_written": written, "save_ms": ms}


def test_rows_are_medians_and_targets_compare_the_largest_with_the_smallest_window() -> None:
    batches = [_batch("blob", 10, b, 1.0) for b in (10, 30, 20)]
    batches += [_batch("blob", 300, 600, 30.0)]
    batches += [_batch("incremental", w, 5, ms) for w, ms in ((10, 2.0), (60, 9.0), (300, 3.0))]
    rows = summarize(batches)
    assert [set(r) for r in rows] == [{"design", "window_s", "input_rate",
                                       "bytes_written_per_batch", "save_ms_per_batch"}] * 5
    assert rows[0]["bytes_written_per_batch"] == 20
    ratios = growth(rows)
    assert ratios["blob"] == {"bytes": 30.0, "save_ms": 30.0}
    assert ratios["incremental"] == {"bytes": 1.0, "save_ms": 1.5}
    assert all(targets(ratios).values())
    assert not any(targets(growth(rows[:2])).values())  # no incremental rows


def test_only_selects_parts_and_names_an_unknown_one() -> None:
    assert _parts(None) == ["processor", "spark"]
    assert _parts(" spark ,") == ["spark"]
    with pytest.raises(ConfigError, match=r"--only: unknown part\(s\) \['nope'\]"):
        _parts("spark,nope")


def test_the_counting_handle_counts_every_row_written() -> None:
    handle = CountingHandle()
    header = handle.getListState("header", None)
    pieces = handle.getMapState("pieces", None, None)
    header.put([(b"abcd",), (b"ef",)])
    pieces.updateValue(("window", 0, 7, 0), (b"xyz",))
    pieces.removeKey(("window", 0, 7, 0))
    assert handle.counter.bytes == 6 + (6 + 8 * 3 + 3)
    assert not pieces.exists() and header.exists()


def test_changelog_bytes_per_version_over_operators_and_partitions(tmp_path: Path) -> None:
    for part, version, size in ((0, 1, 10), (1, 1, 5), (0, 2, 7)):
        folder = tmp_path / "state" / "0" / str(part)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{version}.changelog").write_bytes(b"x" * size)
        (folder / f".{version}.changelog.crc").write_bytes(b"c")
    (tmp_path / "state" / "0" / "0" / "1.zip").write_bytes(b"z" * 3)
    assert checkpoint_bytes(tmp_path) == ({1: 15, 2: 7}, 3)
