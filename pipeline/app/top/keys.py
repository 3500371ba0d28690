"""The keys `harvest top` listens to on a terminal: ``q`` quits."""

from __future__ import annotations

import contextlib
import os
import select
import sys
import time
from collections.abc import Callable, Iterator

QUIT_KEYS = frozenset("qQ")

#: ``wait(seconds) -> True`` when the user asked to quit within that time
Wait = Callable[[float], bool]


def _sleep(seconds: float) -> bool:
    time.sleep(max(0.0, seconds))
    return False


@contextlib.contextmanager
def quit_keys() -> Iterator[Wait]:
    """A :data:`Wait` reading single keys from a terminal stdin (cbreak mode, restored on
    exit); without a terminal it only sleeps (Ctrl-C still stops)."""
    if not sys.stdin.isatty():
        yield _sleep
        return
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)

    def wait(seconds: float) -> bool:
        # the keys typed so far are read even with no time left: a refresh that takes the
        # whole period (a loaded machine) must not leave q unread
        deadline = time.monotonic() + max(0.0, seconds)
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return False
            key = os.read(fd, 1)
            if not key:  # end of input: nothing more to read
                return _sleep(deadline - time.monotonic())
            if key.decode(errors="ignore") in QUIT_KEYS:
                return True

    try:
        yield wait
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
