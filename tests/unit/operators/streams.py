"""Small generated streams for operator tests (own generator; no workload code)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.operators.events import Event, event_from_dump
from pipeline.spec.model import Spec, parse_spec

WORDS = ("goal", "match", "rain", "vote", "stock", "film", "storm", "cup")


def make_dump(
    seed: int,
    m: int,
    n: int,
    max_gap: int = 40,
    max_delay: int = 0,
    late_share: float = 0.3,
) -> list[dict[str, Any]]:
    """m streams of n tuples each, sorted by arrival (ties by stream, seq)."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = []
    for s in range(m):
        ts = np.cumsum(rng.integers(0, max_gap + 1, size=n))
        delay = np.where(rng.random(n) < late_share, rng.integers(0, max_delay + 1, size=n), 0)
        for q in range(n):
            kws = rng.choice(len(WORDS), size=int(rng.integers(0, 4)), replace=False)
            out.append(
                {
                    "stream": f"s{s + 1}",
                    "seq": q,
                    "event_time": int(ts[q]),
                    "arrival_time": int(ts[q] + delay[q]),
                    "value": float(np.round(rng.normal(20.0, 2.0), 1)),
                    "a1": int(rng.integers(1, 5)),
                    "x": float(rng.uniform(0, 10)),
                    "y": float(rng.uniform(0, 10)),
                    "keywords": {WORDS[k]: float(rng.integers(1, 4)) for k in kws},
                }
            )
    out.sort(key=lambda r: (r["arrival_time"], r["stream"], r["seq"]))
    return out


def make_spec(m: int, predicate: str, windows: list[int], **extra: Any) -> Spec:
    """A spec for streams s1..sm."""
    join: dict[str, Any] = {
        "streams": [f"s{i + 1}" for i in range(m)],
        "predicate": predicate,
        "windows_ms": windows,
    }
    if predicate == "equi":
        join["attribute"] = "a1"
    elif predicate == "band":
        join.update(attribute="value", epsilon=0.5)
    elif predicate == "distance":
        join["epsilon"] = 3.0
    elif predicate == "cosine":
        join.update(attribute="keywords", epsilon=0.5)
    data: dict[str, Any] = {"join": join, **extra}
    return parse_spec(data)


def to_events(dump: list[dict[str, Any]], spec: Spec) -> list[Event]:
    index = {s: i for i, s in enumerate(spec.join.streams)}
    return [event_from_dump(r, index) for r in dump]
