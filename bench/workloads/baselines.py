"""The per-tuple Python baselines of `harvest bench workloads`: each tuple drawn with
``random`` by the generators' formulas (GrubJoin's X_i(φ) for sensors, Ji et al.'s Zipf a1
and Zipf delays for equi), as dicts sorted by arrival."""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Callable
from typing import Any

D, ETA = 1000.0, 50.0


def _zipf_cdf(n: int, skew: float) -> list[float]:
    weights = [k ** -skew for k in range(1, n + 1)]
    total = sum(weights)
    return list(itertools.accumulate(w / total for w in weights))


def baseline_sensors(n_per_stream: int, rate: float, seed: int) -> list[dict[str, Any]]:
    """Per-tuple loop: X_i(φ) = (D/η)(φ + τ_i) + κ_i N(0,1) mod D, Zipf delays (skew 2)."""
    rnd = random.Random(seed)
    delay_cdf = _zipf_cdf(2001, 2.0)
    out: list[dict[str, Any]] = []
    for i, (lag, kappa) in enumerate(((0.0, 2.0), (5.0, 2.0), (15.0, 50.0))):
        for j in range(n_per_stream):
            t = math.floor(j * 1000.0 / rate)
            value = ((D / ETA) * (t / 1000.0 + lag) + kappa * rnd.gauss(0.0, 1.0)) % D
            delay = 10 * bisect.bisect_right(delay_cdf, rnd.random())
            out.append({"stream": f"s{i + 1}", "seq": j + 1, "event_time": t,
                        "arrival_time": t + delay, "value": value, "a1": int(value),
                        "x": 0.0, "y": 0.0})
    out.sort(key=lambda r: (r["arrival_time"], int(r["stream"][1:]), r["seq"]))
    return out


def baseline_equi(n_per_stream: int, rate: float, seed: int) -> list[dict[str, Any]]:
    """Per-tuple loop: a1 Zipf over [1, 100] (skew 1), Zipf delays (skew 2)."""
    rnd = random.Random(seed)
    a1_cdf = _zipf_cdf(100, 1.0)
    delay_cdf = _zipf_cdf(2001, 2.0)
    out: list[dict[str, Any]] = []
    for i in range(3):
        for j in range(n_per_stream):
            t = math.floor(j * 1000.0 / rate)
            a1 = 1 + bisect.bisect_right(a1_cdf, rnd.random())
            delay = 10 * bisect.bisect_right(delay_cdf, rnd.random())
            out.append({"stream": f"s{i + 1}", "seq": j + 1, "event_time": t,
                        "arrival_time": t + delay, "value": float(a1), "a1": a1,
                        "x": 0.0, "y": 0.0})
    out.sort(key=lambda r: (r["arrival_time"], int(r["stream"][1:]), r["seq"]))
    return out


BASELINES: dict[str, Callable[[int, float, int], list[dict[str, Any]]]] = {
    "sensors": baseline_sensors,
    "equi": baseline_equi,
}
