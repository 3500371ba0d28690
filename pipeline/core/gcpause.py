"""The cyclic garbage collector paused around a block (ours): a hot path that allocates
plain tuples, dicts and events by the ten thousand — none of which can form a cycle —
would otherwise trigger full collections that re-scan the whole heap (windows, member
store, input events included) many times over. Reference counting still frees them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block; re-enable it after only if it was on
    (nested pauses leave it off until the outermost ends)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
