"""Shared check of the CLI contract: invalid values exit 2 with a message on stderr."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pipeline.cli.main import main


def exit_2_stderr(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``harvest argv``, require it to raise SystemExit(2), return what it printed on
    stderr (for the caller to check that it names the bad flag or value)."""
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    assert exc.value.code == 2
    return capsys.readouterr().err
