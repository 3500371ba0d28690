"""argparse value types that fail with exit code 2 and a message naming the bad value."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def positive_float(text: str) -> float:
    """A float > 0 (``--rate``, ``--duration``, ``--speedup``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An int > 0 (``--streams``, ``--max``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer > 0, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An int >= 0 (``--seed``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def float_list(item: Callable[[str], float] = float) -> Callable[[str], list[float]]:
    """A comma-separated list of numbers (``--lags 0,5,15``)."""

    def parse(text: str) -> list[float]:
        try:
            return [item(part) for part in text.split(",") if part.strip()]
        except (ValueError, argparse.ArgumentTypeError) as exc:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated numbers, got {text!r} ({exc})"
            ) from None

    return parse


def ui_flag(value: bool | None, default: bool) -> bool:
    """``--ui`` / ``--no-ui`` when given, else ``default`` (``HARVEST_SPARK_UI``).

    >>> ui_flag(None, True), ui_flag(False, True), ui_flag(True, False), ui_flag(None, False)
    (True, False, True, False)
    """
    return default if value is None else value
