"""`harvest kafka ... --secure` without a broker: the flag belongs to `up` only."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli.main import main


@pytest.mark.parametrize("action", ["status", "down"])
def test_secure_is_only_for_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str], action: str) -> None:
    monkeypatch.setenv("HARVEST_CACHE_DIR", str(tmp_path))
    assert main(["kafka", action, "--secure"]) == 2
    assert "--secure" in capsys.readouterr().err
