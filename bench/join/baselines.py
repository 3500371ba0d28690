"""The naive baselines of `harvest bench join` (bench/join.py): a flat NumPy store probed
per tuple and candidate, and nested pure-Python loops — both over the same windows and
tuples as the engine, both giving its exact results."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.events import Event

RATE = 1000  # tuples/s per stream
WINDOW_MS = 20_000
EPSILON = 0.0005
STREAMS = 3

Triple = tuple[int, int, int]


def row(tuples: int, cpu: float, comparisons: int, results: int) -> dict[str, Any]:
    """One benchmark row: rates per CPU-second."""
    cpu = max(cpu, 1e-9)
    return {
        "tuples": tuples,
        "cpu_seconds": cpu,
        "comparisons": comparisons,
        "results": results,
        "tuples_per_cpu_second": tuples / cpu,
        "comparisons_per_cpu_second": comparisons / cpu,
    }


class FlatWindows:
    """The naive store: one growing flat array of (ts, seq, value) per stream."""

    def __init__(self, warm: list[Event]) -> None:
        self.ts: list[list[int]] = [[] for _ in range(STREAMS)]
        self.seq: list[list[int]] = [[] for _ in range(STREAMS)]
        self.val: list[list[float]] = [[] for _ in range(STREAMS)]
        for ev in warm:
            self.add(ev)

    def add(self, ev: Event) -> None:
        self.ts[ev.stream].append(ev.ts)
        self.seq[ev.stream].append(ev.seq)
        self.val[ev.stream].append(float(ev.attrs["value"]))

    def arrays(self, s: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
        return np.asarray(self.ts[s]), np.asarray(self.seq[s]), np.asarray(self.val[s])


def _others(s: int) -> tuple[int, int]:
    a, b = (j for j in range(STREAMS) if j != s)
    return a, b


def run_naive_numpy(
    warm: list[Event], probes: list[Event]
) -> tuple[dict[str, Any], list[set[Triple]]]:
    store = FlatWindows(warm)
    comparisons, results, found = 0, 0, []
    cpu = 0.0
    for ev in probes:
        start = time.process_time()
        a, b = _others(ev.stream)
        x = float(ev.attrs["value"])
        ts_a, seq_a, val_a = store.arrays(a)
        ts_b, seq_b, val_b = store.arrays(b)
        in_a = ts_a >= ev.ts - WINDOW_MS
        in_b = ts_b >= ev.ts - WINDOW_MS
        comparisons += int(in_a.sum())
        cand = np.flatnonzero(in_a & (np.abs(val_a - x) <= EPSILON))
        hits: set[Triple] = set()
        n_b = int(in_b.sum())
        for c in cand.tolist():  # one vectorized scan of the third window per candidate
            comparisons += n_b
            ok = in_b & (np.abs(val_b - x) <= EPSILON) & (np.abs(val_b - val_a[c]) <= EPSILON)
            for q in seq_b[ok].tolist():
                triple = [0, 0, 0]
                triple[ev.stream], triple[a], triple[b] = ev.seq, int(seq_a[c]), q
                hits.add((triple[0], triple[1], triple[2]))
        store.add(ev)
        cpu += time.process_time() - start
        results += len(hits)
        found.append(hits)
    return row(len(probes), cpu, comparisons, results), found


def run_pure_python(
    warm: list[Event], probes: list[Event]
) -> tuple[dict[str, Any], list[set[Triple]]]:
    store = FlatWindows(warm)
    comparisons, results, found = 0, 0, []
    cpu = 0.0
    for ev in probes:
        start = time.process_time()
        a, b = _others(ev.stream)
        x, lo = float(ev.attrs["value"]), ev.ts - WINDOW_MS
        win_a = [
            (q, v)
            for t, q, v in zip(store.ts[a], store.seq[a], store.val[a], strict=True)
            if t >= lo
        ]
        win_b = [
            (q, v)
            for t, q, v in zip(store.ts[b], store.seq[b], store.val[b], strict=True)
            if t >= lo
        ]
        hits: set[Triple] = set()
        for qa, va in win_a:
            comparisons += 1
            if abs(va - x) > EPSILON:
                continue
            for qb, vb in win_b:
                comparisons += 1
                if abs(vb - x) <= EPSILON and abs(vb - va) <= EPSILON:
                    triple = [0, 0, 0]
                    triple[ev.stream], triple[a], triple[b] = ev.seq, qa, qb
                    hits.add((triple[0], triple[1], triple[2]))
        store.add(ev)
        cpu += time.process_time() - start
        results += len(hits)
        found.append(hits)
    return row(len(probes), cpu, comparisons, results), found
