"""Result quality against the oracle: recall, precision and recall per period P.

Ji et al. §II-D: recall = produced true results / true results, measured per period P
by result timestamp (γ(P)); ARCHITECTURE §4: precision must be 1. Results are deduplicated by
their deterministic id before counting (duplicates after a restart are not new results).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.errors import ConfigError, SerializationError


@dataclass(frozen=True)
class PeriodQuality:
    """γ(P) of one period [start, start + P) of result time."""

    start: int
    true: int
    correct: int

    @property
    def recall(self) -> float:
        return self.correct / self.true if self.true else 1.0


@dataclass(frozen=True)
class Quality:
    """Overall recall/precision plus per-period recall."""

    true: int
    produced: int
    correct: int
    duplicates: int
    period_ms: int | None = None
    periods: tuple[PeriodQuality, ...] = field(default_factory=tuple)

    @property
    def recall(self) -> float:
        return self.correct / self.true if self.true else 1.0

    @property
    def precision(self) -> float:
        return self.correct / self.produced if self.produced else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "true": self.true,
            "produced": self.produced,
            "correct": self.correct,
            "duplicates": self.duplicates,
            "recall": self.recall,
            "precision": self.precision,
            "period_ms": self.period_ms,
            "periods": [
                {
                    "start": p.start,
                    "end": p.start + (self.period_ms or 0),
                    "true": p.true,
                    "correct": p.correct,
                    "recall": p.recall,
                }
                for p in self.periods
            ],
        }


def _index(rows: Iterable[Mapping[str, Any]], what: str) -> tuple[dict[str, int], int]:
    out: dict[str, int] = {}
    dups = 0
    for row in rows:
        try:
            rid, rt = str(row["id"]), int(row["result_time"])
        except (KeyError, TypeError, ValueError):
            raise SerializationError(
                f"{what}: record without a valid id/result_time: {row!r}"
            ) from None
        if rid in out:
            dups += 1
        out[rid] = rt
    return out, dups


def evaluate(
    truth: Iterable[Mapping[str, Any]],
    results: Iterable[Mapping[str, Any]],
    period_ms: int | None = None,
) -> Quality:
    """Compare result records with the true ones (both ``{"id", "result_time", ...}``)."""
    if period_ms is not None and period_ms <= 0:
        raise ConfigError(f"--period-ms: must be > 0, got {period_ms}")
    true_ids, _ = _index(truth, "truth")
    got_ids, dups = _index(results, "results")
    correct_ids = true_ids.keys() & got_ids.keys()
    periods: list[PeriodQuality] = []
    if period_ms is not None and true_ids:
        tally: dict[int, list[int]] = {}
        for rid, rt in true_ids.items():
            cell = tally.setdefault(rt // period_ms, [0, 0])
            cell[0] += 1
            if rid in got_ids:
                cell[1] += 1
        lo, hi = min(tally), max(tally)
        periods = [PeriodQuality(b * period_ms, *tally.get(b, [0, 0])) for b in range(lo, hi + 1)]
    return Quality(
        true=len(true_ids),
        produced=len(got_ids),
        correct=len(correct_ids),
        duplicates=dups,
        period_ms=period_ms,
        periods=tuple(periods),
    )
