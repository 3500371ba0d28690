"""Ground truth and the recall measure of `harvest bench disorder`: the timestamps of every
true result (DuckDB SQL over the complete input) and γ(P), the recall over the last period
measured every L (Ji et al., ICDE)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from bench.disorder.workload import INTERVAL_MS, PERIOD_MS
from pipeline.spec.model import JoinSpec


def true_result_times(join: JoinSpec, records: Sequence[dict[str, Any]]) -> np.ndarray:
    """Result timestamps of every true result (DuckDB SQL over the complete input)."""
    import duckdb
    import pandas as pd

    m = len(join.streams)
    w = join.windows
    cols = ["x", "y"] if join.predicate == "distance" else [str(join.attribute)]
    con = duckdb.connect()
    try:
        for i, name in enumerate(join.streams):
            rows = [r for r in records if r["stream"] == name]
            frame = pd.DataFrame(
                {"ts": np.array([int(r["event_time"]) for r in rows], dtype=np.int64)}
                | {c: np.array([float(r[c]) for r in rows]) for c in cols}
            )
            con.register(f"t{i}", frame)
        conds = []
        for i, j in combinations(range(m), 2):
            conds.append(f"t{j}.ts BETWEEN t{i}.ts - {w[j]} AND t{i}.ts + {w[i]}")
            if join.predicate == "distance":
                conds.append(
                    f"(t{i}.x - t{j}.x)*(t{i}.x - t{j}.x) + (t{i}.y - t{j}.y)*(t{i}.y - t{j}.y)"
                    f" <= {float(join.epsilon) ** 2!r}"
                )
            else:
                conds.append(f"t{i}.{cols[0]} = t{j}.{cols[0]}")
        rt = "greatest(" + ", ".join(f"t{i}.ts" for i in range(m)) + ")"
        tables = ", ".join(f"t{i}" for i in range(m))
        where = " AND ".join(conds)
        sql = f"SELECT {rt} AS rt, count(*) AS n FROM {tables} WHERE {where} GROUP BY rt"
        found = con.execute(sql).fetchnumpy()
    finally:
        con.close()
    return np.repeat(np.asarray(found["rt"], np.int64), np.asarray(found["n"], np.int64))


def period_recalls(
    produced: np.ndarray, truth: np.ndarray, start_ms: int, end_ms: int
) -> np.ndarray:
    """γ(P) every L over result timestamps in (t − P, t], for t in (start + P, end]."""
    produced = np.sort(produced)
    truth = np.sort(truth)
    ends = np.arange(start_ms + PERIOD_MS + INTERVAL_MS, end_ms + 1, INTERVAL_MS)
    p = np.searchsorted(produced, ends, "right") - np.searchsorted(
        produced, ends - PERIOD_MS, "right"
    )
    t = np.searchsorted(truth, ends, "right") - np.searchsorted(truth, ends - PERIOD_MS, "right")
    ok = t > 0
    return p[ok] / t[ok]
