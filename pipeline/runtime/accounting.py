"""Every record accounted for (ours; ARCHITECTURE §7): what one join instance did with each
input row it was given, as cumulative counters in the instance's ``meta`` (so they
travel with its checkpointed state).

* ``records_in``: input rows the instance was given, liveness ticks aside (with aligned
  tuple routing a tuple copied to several instances counts at each);
* ``accepted``: handed to the engine (K-slack onwards) by the validator, or all of them
  without validation;
* ``dead_lettered``: rejected by the validator, each with a reason. Its dead letter is
  written once: by this instance, or, for an ATR copy of a tuple whose segment another
  instance owns, by that owner;
* ``duplicates_dropped``: exact duplicates the validator dropped;
* ``held``: tuples not joined yet — held for the validator's warm-up (not decided
  yet) or accepted and still in a K-slack buffer or the Synchronizer.

The invariant, checked at every micro-batch and flush: ``records_in == accepted +
dead_lettered + duplicates_dropped`` once the validator's warm-up holds nothing; while
it holds tuples (an instance's first ``quorum`` tuples, or fewer at the end of input
before the flush), they are the difference. A break is logged at ERROR with the counts.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from pipeline.core.logging import get_logger
from pipeline.operators.engine.engine import Engine

__all__ = ["COUNTS", "LEDGER", "audit", "buffered", "due", "ledger", "open_ledger",
           "reported", "tally"]

log = get_logger(__name__)

#: the counters, in the order the metrics rows' ``extra`` lists them
COUNTS = ("records_in", "accepted", "dead_lettered", "duplicates_dropped")
#: the ``meta`` key of the counters
LEDGER = "records"
#: the ``meta`` key of the counters the latest metrics row carried
_REPORTED = "records_reported"


def open_ledger(meta: MutableMapping[str, Any], waiting: int) -> None:
    """Start the counters if ``meta`` has none: an instance restored from state written
    before they existed counts the tuples its validator already holds (``waiting``) as
    given to it, so the invariant holds from here on."""
    if LEDGER not in meta:
        meta[LEDGER] = {**dict.fromkeys(COUNTS, 0), "records_in": int(waiting)}


def tally(meta: MutableMapping[str, Any], **counts: int) -> None:
    """Add ``counts`` (names of :data:`COUNTS`) to the instance's counters."""
    book = meta.setdefault(LEDGER, dict.fromkeys(COUNTS, 0))
    for name, n in counts.items():
        if name not in COUNTS:
            raise KeyError(f"accounting: unknown counter {name!r}")
        book[name] = int(book.get(name, 0)) + int(n)


def ledger(meta: MutableMapping[str, Any]) -> dict[str, int]:
    """The counters so far (0 where none was counted)."""
    book = meta.get(LEDGER) or {}
    return {name: int(book.get(name, 0)) for name in COUNTS}


def buffered(engine: Engine) -> int:
    """Accepted tuples not joined yet: in the K-slack buffers and the Synchronizer."""
    return int(sum(len(k) for k in engine.kslacks) + len(engine.sync))


def due(meta: MutableMapping[str, Any]) -> bool:
    """Whether the counters changed since the last metrics row carried them."""
    return list(ledger(meta).values()) != list(meta.get(_REPORTED) or [])


def reported(meta: MutableMapping[str, Any]) -> None:
    """A metrics row now carries the counters."""
    meta[_REPORTED] = list(ledger(meta).values())


def audit(meta: MutableMapping[str, Any], waiting: int, buffered: int, *,
          instance: str) -> dict[str, float]:
    """Check the invariant (``waiting``: tuples the validator holds undecided;
    ``buffered``: accepted ones in K-slack buffers and the Synchronizer) and return the
    counters and ``held`` for a metrics row's ``extra``. A break is logged at ERROR."""
    book = ledger(meta)
    decided = book["accepted"] + book["dead_lettered"] + book["duplicates_dropped"]
    missing = book["records_in"] - decided - int(waiting)
    if missing:
        log.error("records not accounted for", instance=instance, missing=missing,
                  held_by_validator=int(waiting), **book)
    return {**{name: float(n) for name, n in book.items()},
            "held": float(int(waiting) + int(buffered))}
