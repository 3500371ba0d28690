"""The CLI contract check: an invalid value exits 2 with a message on stderr.

>>> class Captured:  # what pytest's ``capsys`` gives back
...     def readouterr(self):
...         import types
...         return types.SimpleNamespace(out="", err="harvest: error: ...")
>>> exit_2_stderr(["--no-such-flag"], Captured())
'harvest: error: ...'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class _Output(Protocol):
    @property
    def err(self) -> str: ...


class Capture(Protocol):
    """What :func:`exit_2_stderr` needs of pytest's ``capsys`` fixture."""

    def readouterr(self) -> _Output: ...


def exit_2_stderr(argv: Sequence[str], capsys: Capture) -> str:
    """Run ``harvest argv``, require it to raise SystemExit(2), return what it printed on
    stderr (for the caller to check that it names the bad flag or value)."""
    from pipeline.cli.main import main

    try:
        main(list(argv))
    except SystemExit as exc:
        if exc.code != 2:
            raise AssertionError(f"harvest {' '.join(argv)}: exit {exc.code!r}, not 2") from exc
        return capsys.readouterr().err
    raise AssertionError(f"harvest {' '.join(argv)}: returned instead of exiting 2")
