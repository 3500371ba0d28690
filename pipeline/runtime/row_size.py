"""The bytes of a state-store row as harvest counts them: binary and text fields by
length, numbers 8 each (about the state store's row encoding). The stand-ins for Spark's
stateful-processor handle count what a processor writes with it: the tests'
(:mod:`pipeline.testing.state`) and that of `harvest bench state` (``bench/state``)."""

from __future__ import annotations

from typing import Any

__all__ = ["row_bytes"]


def row_bytes(row: tuple[Any, ...] | None) -> int:
    """Bytes of a state row (None: 0): binary and text fields by length, numbers 8 each."""
    total = 0
    for v in row or ():
        if isinstance(v, bytes | bytearray | memoryview):
            total += len(v)
        elif isinstance(v, str):
            total += len(v.encode())
        else:
            total += 8
    return total
