"""Small generated streams and join specs over them (own generator; no workload code).

>>> dump = make_dump(seed=1, m=2, n=3)
>>> len(dump), sorted({r["stream"] for r in dump})
(6, ['s1', 's2'])
>>> [e.stream for e in to_events(dump, make_spec(2, "band", [10, 10]))] == [
...     int(r["stream"][1:]) - 1 for r in dump]
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.operators.events import Event, event_from_dump
from pipeline.spec.model import Spec, parse_spec

WORDS = ("goal", "match", "rain", "vote", "stock", "film", "storm", "cup")
SENSOR_STREAMS = ("s1", "s2", "s3")
SENSOR_ATTRS = ("value", "a1", "x", "y")


def make_dump(
    seed: int,
    m: int,
    n: int,
    max_gap: int = 40,
    max_delay: int = 0,
    late_share: float = 0.3,
    items: bool = False,
) -> list[dict[str, Any]]:
    """m streams of n tuples each, sorted by arrival (ties by stream, seq).

    Every tuple carries all attributes the built-in predicates read: ``value`` (band),
    ``a1`` (equi), ``x``/``y`` (distance) and ``keywords`` (cosine); with ``items``, also
    ``items`` (overlap: a list of 0–6 of the integers 1..12, drawn from a random stream
    of their own, so the other attributes stay what they are without it).
    """
    rng = np.random.default_rng(seed)
    item_rng = np.random.default_rng([seed, 1])
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
            if items:
                size = int(item_rng.integers(0, 7))
                out[-1]["items"] = sorted(
                    int(i) for i in item_rng.choice(np.arange(1, 13), size, replace=False))
    out.sort(key=lambda r: (r["arrival_time"], r["stream"], r["seq"]))
    return out


def make_spec(m: int, predicate: str, windows: list[int], **extra: Any) -> Spec:
    """A spec for streams s1..sm joined on ``predicate`` over :func:`make_dump` tuples;
    ``extra`` adds the other spec tables (``disorder=``, ``shedding=``, ``job=``).

    >>> make_spec(3, "band", [100, 100, 100]).join.epsilon
    0.5
    """
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
    elif predicate == "overlap":
        join.update(attribute="items", epsilon=2.0)
    data: dict[str, Any] = {"join": join, **extra}
    return parse_spec(data)


def to_events(dump: list[dict[str, Any]], spec: Spec) -> list[Event]:
    """The dump's records as operator events (stream names → indices of ``spec``)."""
    index = {s: i for i, s in enumerate(spec.join.streams)}
    return [event_from_dump(r, index) for r in dump]


def sensor_rows(seed: int, n: int = 240, max_delay: int = 400) -> list[dict[str, Any]]:
    """Three sensor-like streams s1..s3 (n // 3 tuples each, 25 ms apart per stream, random
    delays up to ``max_delay``) in arrival order, with the :data:`SENSOR_ATTRS`.

    >>> rows = sensor_rows(0, n=6)
    >>> len(rows), sorted(rows[0])
    (6, ['a1', 'arrival_time', 'event_time', 'seq', 'stream', 'value', 'x', 'y'])
    """
    rng = np.random.default_rng(seed)
    out = []
    for s, name in enumerate(SENSOR_STREAMS):
        for seq in range(n // 3):
            ts = seq * 25 + s * 7
            out.append({"stream": name, "seq": seq, "event_time": ts,
                        "arrival_time": ts + int(rng.integers(0, max_delay + 1)),
                        "value": float(rng.normal(0, 1)), "a1": int(rng.integers(0, 6)),
                        "x": 0.0, "y": 0.0})
    out.sort(key=lambda r: (r["arrival_time"], SENSOR_STREAMS.index(r["stream"]), r["seq"]))
    return out


def sensor_spec(predicate: str, routing: str = "atr", groups: int = 1, slack: int = 400,
                disorder: str = "fixed") -> Spec:
    """The 3-way join of :func:`sensor_rows` (300 ms windows; band on ``value`` with
    ε = 0.4, or equi on ``a1``), routed over ``groups`` instances, 500 ms segments.

    >>> sensor_spec("equi", "hash", 3).job.groups
    3
    """
    join: dict[str, Any] = {"streams": list(SENSOR_STREAMS), "window_ms": 300,
                            "predicate": predicate,
                            "attribute": "value" if predicate == "band" else "a1",
                            "epsilon": 0.4}
    return parse_spec({"join": join, "disorder": {"mode": disorder, "slack_ms": slack},
                       "job": {"routing": routing, "groups": groups, "segment_ms": 500}})


def max_delay(records: Sequence[Mapping[str, Any]]) -> int:
    """The largest arrival − event time of the records (K ≥ this makes K-slack exact).

    >>> max_delay([{"event_time": 10, "arrival_time": 15}, {"event_time": 3, "arrival_time": 3}])
    5
    """
    return max(int(r["arrival_time"]) - int(r["event_time"]) for r in records)


def exact_spec(join: Mapping[str, Any], slack_ms: int, job: Mapping[str, Any]) -> Spec:
    """An exact-join spec: fixed K = ``slack_ms``, no shedding, 500 ms trigger, short idle
    flush, 2 shuffle partitions (``job`` adds or overrides ``[job]`` keys).

    >>> sp = exact_spec({"streams": ["s1", "s2"], "window_ms": 100, "predicate": "equi",
    ...                  "attribute": "a1"}, 250, {"workload": "sensors"})
    >>> sp.disorder.slack_ms, sp.shedding.mode, sp.job.trigger_ms
    (250, 'off', 500)
    """
    return parse_spec({
        "join": dict(join),
        "disorder": {"mode": "fixed", "slack_ms": slack_ms},
        "shedding": {"mode": "off"},
        "job": {"trigger_ms": 500, "idle_flush_ms": 2_000, "shuffle_partitions": 2, **job},
    })
