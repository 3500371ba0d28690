"""What one probe is told and what it reports back (GrubJoin §1.3–1.5): the plan a
shedder hands the join for one direction, and the per-window match counts the join
returns for window shredding and the time-correlation histograms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class ProbePlan:
    """How one direction probes (GrubJoin §1.3–1.4).

    ``order``: the other streams in join order (R_i); ``None`` = the join's default
    order. ``windows``: per position in the order, the *logical basic window* indices
    to scan, in scan order — index 0 is the newest logical basic window relative to the
    probing tuple's ts (ages [0, b)), index k covers ages [k·b, (k+1)·b), the last one
    is clipped at W; ``None`` at a position (or for the whole field) = scan everything.
    ``feedback``: ask the join for per-logical-basic-window match counts (window
    shredding / time-correlation histograms).
    """

    order: tuple[int, ...] | None = None
    windows: tuple[tuple[int, ...] | None, ...] | None = None
    feedback: bool = False


@dataclass(frozen=True, slots=True)
class ProbeFeedback:
    """What one probe of direction ``direction`` found (for :meth:`Shedder.observe_probe`).

    ``order`` is the join order used. ``matches[j][k]`` = number of *results* whose
    member from stream ``order[j]`` lies in logical basic window ``k`` (0 = newest) of
    that stream, i.e. the lag histogram T(t_i) − T(t_l) binned by b (GrubJoin §1.5).
    ``scanned[j]`` = number of tuples of stream ``order[j]`` compared (summed over the
    partial results), ``cost`` = all tuple comparisons of the probe (with no plan order,
    it includes the join's periodic σ sample that picks the default order).
    """

    direction: int
    ts: int
    order: tuple[int, ...]
    matches: tuple[NDArray[np.int64], ...]
    scanned: tuple[int, ...]
    results: int
    cost: int
    #: partial results entering each position (1 at position 0; fewer entries when the
    #: probe stopped early) — selectivity per position = next entry (or results) / scanned
    partials: tuple[int, ...] = ()
