"""Result-set comparisons that say what differs: missed, invented and repeated ids.

The checks raise :class:`AssertionError` with the first few differing ids, so a failure
reads the same with or without pytest's assertion rewriting.

>>> diff_results(["a", "b", "b"], ["a", "c"])
ResultDiff(missing=('c',), extra=('b',), repeated=('b',))
>>> assert_same_results(["b", "a"], ["a", "b"])
>>> assert_same_results(["a"], ["a", "c"])
Traceback (most recent call last):
...
AssertionError: results differ from the truth: 1 missing ['c']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

SHOWN = 5  # ids listed per kind of difference


@dataclass(frozen=True)
class ResultDiff:
    """How ``got`` differs from ``truth`` (sorted ids): ``missing`` from ``got``, ``extra``
    in ``got`` only, ``repeated`` more than once in ``got``."""

    missing: tuple[str, ...]
    extra: tuple[str, ...]
    repeated: tuple[str, ...]

    def describe(self, what: str = "results") -> str:
        """``''`` when there is no difference, else one line naming the first ids."""
        parts = [f"{len(ids)} {name} {list(ids[:SHOWN])}"
                 for name, ids in (("missing", self.missing), ("extra", self.extra),
                                   ("repeated", self.repeated)) if ids]
        return f"{what} differ from the truth: " + ", ".join(parts) if parts else ""


def diff_results(got: Iterable[str], truth: Iterable[str]) -> ResultDiff:
    """Compare result ids as multisets (``truth`` normally holds each id once)."""
    g, t = Counter(got), Counter(truth)
    return ResultDiff(
        missing=tuple(sorted(t.keys() - g.keys())),
        extra=tuple(sorted(g.keys() - t.keys())),
        repeated=tuple(sorted(k for k, n in g.items() if n > max(t.get(k, 0), 1))),
    )


def assert_same_results(got: Iterable[str], truth: Iterable[str],
                        what: str = "results") -> None:
    """``got`` holds exactly the ids of ``truth``: none missed, none invented, none twice."""
    msg = diff_results(got, truth).describe(what)
    if msg:
        raise AssertionError(msg)


def assert_no_invented(got: Iterable[str], truth: Iterable[str], *, once: bool = False,
                       what: str = "results") -> None:
    """Every id of ``got`` is in ``truth`` (a shedding join may lose results, never invent
    them); with ``once``, also none appears twice.

    >>> assert_no_invented(["a"], ["a", "b"])
    >>> assert_no_invented(["a", "a"], ["a"], once=True)
    Traceback (most recent call last):
    ...
    AssertionError: results differ from the truth: 1 repeated ['a']
    """
    d = diff_results(got, truth)
    msg = ResultDiff((), d.extra, d.repeated if once else ()).describe(what)
    if msg:
        raise AssertionError(msg)
