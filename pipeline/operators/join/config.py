"""The m-way join's frozen configuration and per-tuple output (Ji et al. Alg. 2 outcomes;
GrubJoin basic windows): :class:`JoinConfig`, :class:`JoinOutput`, :class:`Outcome`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError
from pipeline.operators.join.plan import ProbeFeedback
from pipeline.operators.join.predicates import Predicate

I64 = NDArray[np.int64]


class Outcome(IntEnum):
    """What Alg. 2 did with a tuple; the run path stores the values in int8 arrays."""

    PROBED = 0
    LATE = 1
    DISCARDED = 2


@dataclass(frozen=True, slots=True)
class JoinConfig:
    """Frozen join configuration: windows W_i (ms), basic window b (ms), predicate."""

    windows: tuple[int, ...]
    basic_window_ms: int
    predicate: Predicate
    #: ours: per-basic-window sorted indexes for band/equi predicates, inverted ones for
    #: overlap (Gedik et al., CIKM §4; see basicwindow.py);
    #: the probe then costs 1 per basic window touched plus k per matching row
    index: bool = False

    def __post_init__(self) -> None:
        if len(self.windows) < 2:
            raise ConfigError(f"join.streams: need at least 2 streams, got {len(self.windows)}")
        if self.basic_window_ms <= 0:
            raise ConfigError(f"shedding.basic_window_ms: must be > 0, got {self.basic_window_ms}")

    @property
    def m(self) -> int:
        return len(self.windows)

    def n_basic(self, stream: int) -> int:
        """n_l = ⌈W_l / b⌉ logical basic windows of stream ``stream``."""
        return max(1, math.ceil(self.windows[stream] / self.basic_window_ms))


@dataclass(frozen=True, slots=True)
class JoinOutput:
    """Results of one tuple (rows = results, columns = streams in index order)."""

    outcome: Outcome
    seqs: I64
    tss: I64
    cost: int
    feedback: ProbeFeedback | None = None
    #: pair predicate evaluations actually performed (≤ cost: rows failing the probing
    #: tuple are not compared with the partial results)
    checks: int = 0

    @property
    def count(self) -> int:
        return int(self.seqs.shape[0])
