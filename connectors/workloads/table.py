"""A generated workload in columnar form (NumPy), in arrival order, and its record views.

Records are dicts with exactly the field names of the Avro schema (``sensor_reading``,
``news_item`` or ``item_set``); :meth:`Workload.records` builds them,
:meth:`Workload.write_jsonl` dumps them one JSON object per line (the ground truth for
oracles).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from connectors.workloads.spec import WorkloadSpec
from pipeline.core.gcpause import gc_paused

SENSOR_FIELDS = ("stream", "seq", "event_time", "arrival_time", "value", "a1", "x", "y")
NEWS_FIELDS = ("stream", "seq", "event_time", "arrival_time", "story", "agency", "keywords")
SET_FIELDS = ("stream", "seq", "event_time", "arrival_time", "items", "value")


@dataclass(frozen=True)
class Keywords:
    """Keyword vectors of news items: word ids (−1 = absent) and weights, one row per item."""

    idx: np.ndarray
    weights: np.ndarray
    vocabulary: tuple[str, ...]

    def row_dicts(self, start: int, stop: int) -> list[dict[str, float]]:
        """``{word: weight}`` of items ``start``..``stop``-1 (grouped by size for speed)."""
        idx = self.idx[start:stop]
        weights = self.weights[start:stop]
        valid = idx >= 0
        order = np.argsort(~valid, axis=1, kind="stable")  # present words first, in order
        idx = np.take_along_axis(idx, order, axis=1)
        weights = np.take_along_axis(weights, order, axis=1)
        counts = valid.sum(axis=1)
        vocab = np.asarray(self.vocabulary, dtype=object)
        out: list[dict[str, float]] = [{} for _ in range(len(idx))]
        for c in np.unique(counts).tolist():
            rows = np.flatnonzero(counts == c)
            words = vocab[idx[rows, :c]].tolist()
            ws = weights[rows, :c].tolist()
            for r, a, b in zip(rows.tolist(), words, ws, strict=True):
                out[r] = dict(zip(a, b, strict=True))
        return out


@dataclass(frozen=True)
class ItemSets:
    """Item sets, one row per tuple: items in draw order, −1 where a smaller set ends."""

    items: np.ndarray

    def row_lists(self, start: int, stop: int) -> list[list[int]]:
        """Each set of tuples ``start``..``stop``-1 as a list of its items."""
        rows = self.items[start:stop]
        sizes = (rows >= 0).sum(axis=1)
        flat = rows[rows >= 0].tolist()
        out: list[list[int]] = []
        at = 0
        for n in sizes.tolist():
            out.append(flat[at : at + n])
            at += n
        return out


@dataclass(frozen=True, eq=False)
class Workload:
    """Columns of every generated tuple in arrival order (arrival_time, stream, seq).

    ``columns`` holds ``stream`` (0-based stream index), ``seq``, ``event_time``,
    ``arrival_time``, ``delay`` and the workload's attributes; ``keywords`` is set for news,
    ``sets`` for the overlap workloads.
    """

    spec: WorkloadSpec
    schema: str
    columns: dict[str, np.ndarray]
    keywords: Keywords | None = None
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    sets: ItemSets | None = None

    def __len__(self) -> int:
        return len(self.columns["seq"])

    @property
    def fields(self) -> tuple[str, ...]:
        """The record field names (the Avro schema's)."""
        if self.schema == "item_set":
            return SET_FIELDS
        return NEWS_FIELDS if self.schema == "news_item" else SENSOR_FIELDS

    def stream_counts(self) -> dict[str, int]:
        """Records per stream name."""
        counts = np.bincount(self.columns["stream"], minlength=self.spec.streams)
        return {name: int(c) for name, c in zip(self.spec.stream_names, counts, strict=True)}

    def records(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """Records ``start``..``stop``-1 (arrival order) as Avro-ready dicts."""
        with gc_paused():
            return self._records(start, stop)

    def _records(self, start: int, stop: int | None) -> list[dict[str, Any]]:
        stop = len(self) if stop is None else min(stop, len(self))
        names = self.spec.stream_names
        cols = self.columns
        stream = [names[i] for i in cols["stream"][start:stop].tolist()]
        head: list[list[Any]] = [
            stream,
            cols["seq"][start:stop].tolist(),
            cols["event_time"][start:stop].tolist(),
            cols["arrival_time"][start:stop].tolist(),
        ]
        if self.sets is not None:
            items = self.sets.row_lists(start, stop)
            values = cols["value"][start:stop].tolist()
            return [{"stream": s, "seq": q, "event_time": e, "arrival_time": a, "items": it,
                     "value": v}
                    for s, q, e, a, it, v in zip(*head, items, values, strict=True)]
        if self.schema == "news_item":
            assert self.keywords is not None
            stories = cols["story"][start:stop].tolist()
            keywords = self.keywords.row_dicts(start, stop)
            return [
                {
                    "stream": s,
                    "seq": q,
                    "event_time": e,
                    "arrival_time": a,
                    "story": st,
                    "agency": f"agency{s[1:]}",
                    "keywords": kw,
                }
                for s, q, e, a, st, kw in zip(*head, stories, keywords, strict=True)
            ]
        value, a1, x, y = (cols[k][start:stop].tolist() for k in ("value", "a1", "x", "y"))
        return [
            {
                "stream": s,
                "seq": q,
                "event_time": e,
                "arrival_time": a,
                "value": v,
                "a1": k,
                "x": px,
                "y": py,
            }
            for s, q, e, a, v, k, px, py in zip(*head, value, a1, x, y, strict=True)
        ]

    def iter_records(self, batch: int = 50_000) -> Iterator[dict[str, Any]]:
        """All records in arrival order, built ``batch`` at a time (bounded memory)."""
        for start in range(0, len(self), batch):
            yield from self.records(start, start + batch)

    def write_jsonl(self, path: Path, batch: int = 50_000) -> int:
        """Write every record as one JSON object per line; returns the number written."""
        path.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        with path.open("w", encoding="utf-8") as fh:
            for start in range(0, len(self), batch):
                rows = self.records(start, start + batch)
                fh.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
                written += len(rows)
        return written


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a ``--dump`` file (inverse of :meth:`Workload.write_jsonl`)."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
