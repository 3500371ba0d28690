"""The model's output calibrated by the results the join realizes (ours; issue 28).

GrubJoin's cost model (§IV-C, Eqs. (1)–(4)) predicts the output O({z}) of a
configuration from estimated selectivities and lag histograms, and the solver installs
the configuration whose *estimate* is largest. A harvest (some z_{i,j} < 1) keeps the
basic windows whose scores are highest, so the estimate it is chosen by is biased upward
— the windows whose scores happened to be high win (the winner's curse) — while a full
scan (every z_{i,j} = 1, at any admitted fraction or probe share) selects nothing and
errs only by the selectivity estimate. The choice between harvesting and dropping tuples
(:mod:`~pipeline.operators.shedding.grubjoin.admission`) compares outputs across these two
kinds, so a bias in one of them decides it (measured on the positions workload at 2×
capacity: harvests realized about 1/2.9 of their modelled output, full scans 1/1.4).

Per kind k ∈ {harvest, full} we keep the ratio of realized to modelled results over each
adaptation interval Δ of the configuration in force,

    r_k = exp( Σ_t d^{T−t}·log((R_t + 1) / (E_t + 1)) / Σ_t d^{T−t} ),

with R_t the results the join produced in interval t, E_t = p_t·O_t·Δ the results the model
predicted for it (O_t the modelled output per second of the configuration installed at
its start, in the same per-Δ units as the rates λ_i; p_t the share of offered tuples the
input queue passed, whose drops are a trigger's contemporaries), and d the aging factor
(:data:`DECAY`); the +1 keeps an interval without results finite; a kind counts as r = 1
until :data:`MIN_INTERVALS` of its intervals were counted. Intervals in which fewer than
:data:`MIN_EXPECTED` results were predicted, and those within one window span of a switch
of kind (the windows still hold the other kind's tuples), are not counted. The solver
scales the output of every harvested configuration by w = min(1, r_harvest / r_full) (a
kind not yet measured counts as r = 1) before comparing (:meth:`OutputCalibration.weight`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.core.errors import OperatorStateError

__all__ = ["DECAY", "FULL", "HARVEST", "MIN_EXPECTED", "MIN_INTERVALS", "CalibrationConfig",
           "OutputCalibration", "kind_of"]

HARVEST = 0
FULL = 1
#: fewest predicted results an interval needs to count (Poisson noise ≈ 1/√E)
MIN_EXPECTED = 30.0
#: counted intervals before a kind's ratio is used (one interval is too noisy to act on)
MIN_INTERVALS = 3
#: aging of the log-ratio sums per counted interval (≈ the last 5 intervals weigh most)
DECAY = 0.8
#: the weight handed to the solver is at least 1/LIMIT (and at most 1)
LIMIT = 20.0


def kind_of(counts: np.ndarray, max_counts: np.ndarray) -> int:
    """FULL when every position scans its whole window, else HARVEST."""
    return FULL if bool(np.all(np.asarray(counts) >= np.asarray(max_counts))) else HARVEST


@dataclass(frozen=True)
class CalibrationConfig:
    """``decay`` ages the log-ratio sums each counted Δ; ``span_ms`` is the longest
    window (stream time a switch of kind needs to wash out of the windows)."""

    decay: float
    span_ms: int


class OutputCalibration:
    """Realized / modelled output per kind of configuration (module docstring)."""

    def __init__(self, config: CalibrationConfig) -> None:
        self.config = config
        self.sums = np.zeros(2, dtype=np.float64)  # aged Σ log ratio per kind
        self.weights = np.zeros(2, dtype=np.float64)  # aged Σ weight per kind
        self.counted = np.zeros(2, dtype=np.int64)  # intervals counted per kind
        self.kind: int | None = None  # kind in force (None before the first install)
        self.predicted = 0.0  # modelled results per second of the configuration in force
        self.settled_at = 0  # first clock at which the kind in force is counted
        self.results = 0  # results realized since the last close

    def observe(self, results: int) -> None:
        """Results the join produced (the engine's ``observe_output``)."""
        self.results += int(results)

    def close(self, now: int, interval_ms: int, passed: float = 1.0) -> float | None:
        """Ends the interval at clock ``now``: counts its ratio for the kind in force when
        it qualifies; the log ratio counted (None: not counted). ``passed`` is the share
        of the offered tuples the input queue let through in the interval: the model's
        output assumes every offered tuple joins, so E_t is scaled by it — the queue's
        drops are contemporaries (a trigger's tail), which keep about that share of the
        results, and they would otherwise count against whichever kind was in force."""
        got, self.results = self.results, 0
        expected = self.predicted * interval_ms / 1000.0 * min(1.0, max(0.0, passed))
        if self.kind is None or now < self.settled_at or expected < MIN_EXPECTED:
            return None
        ratio = math.log((got + 1.0) / (expected + 1.0))
        k = self.kind
        self.sums[k] = self.sums[k] * self.config.decay + ratio
        self.weights[k] = self.weights[k] * self.config.decay + 1.0
        self.counted[k] += 1
        return ratio

    def install(self, kind: int, predicted: float, now: int) -> None:
        """The configuration chosen at ``now``: its kind and modelled output per second."""
        if kind != self.kind:
            self.settled_at = now + self.config.span_ms
        self.kind = kind
        self.predicted = max(0.0, float(predicted))

    def ratio(self, kind: int) -> float:
        """r_kind (1 until :data:`MIN_INTERVALS` intervals of the kind were counted)."""
        if self.counted[kind] < MIN_INTERVALS:
            return 1.0
        return math.exp(self.sums[kind] / self.weights[kind])

    def weight(self) -> float:
        """w = min(1, r_harvest / r_full), the factor on harvested outputs, at least
        1/:data:`LIMIT`. A kind not yet counted has r = 1 (the model as is): a harvest
        that realizes less than its model then yields to the full join at its modelled
        output, whose own ratio is measured once it is in force. Capped at 1: the bias
        being corrected is one-sided (a harvest is chosen *because* its estimate is
        high), and a harvest realizing more than its model is already preferred over
        dropping tuples (admission.py keeps it unless dropping models ADMIT_MARGIN ×
        more)."""
        return float(min(1.0, max(1.0 / LIMIT, self.ratio(HARVEST) / self.ratio(FULL))))

    def snapshot(self) -> dict[str, Any]:
        return {"sums": self.sums.tolist(), "weights": self.weights.tolist(),
                "counted": self.counted.tolist(),
                "kind": self.kind, "predicted": self.predicted,
                "settled_at": self.settled_at, "results": self.results}

    @classmethod
    def restore(cls, config: CalibrationConfig, data: dict[str, Any]) -> OutputCalibration:
        try:
            obj = cls(config)
            obj.sums = np.asarray(data["sums"], dtype=np.float64).reshape(2)
            obj.weights = np.asarray(data["weights"], dtype=np.float64).reshape(2)
            obj.counted = np.asarray(data["counted"], dtype=np.int64).reshape(2)
            obj.kind = None if data["kind"] is None else int(data["kind"])
            obj.predicted = float(data["predicted"])
            obj.settled_at = int(data["settled_at"])
            obj.results = int(data["results"])
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"grubjoin calibration snapshot: {exc!r}") from exc
        return obj
