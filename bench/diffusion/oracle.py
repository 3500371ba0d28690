"""The exact answer of a workload, from harvest's oracle (:mod:`pipeline.quality.oracle`,
DuckDB; independent of the virtual cluster's join), as sorted rows of member gids."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from bench.diffusion.workload import Workload
from pipeline.quality.oracle import duckdb_oracle
from pipeline.spec.model import parse_spec

IntArray = npt.NDArray[np.int64]


def records(wl: Workload) -> list[dict[str, Any]]:
    """The workload as harvest records (stream ``s<i+1>``, seq = rank in its stream)."""
    seq = np.zeros(wl.n, np.int64)
    for s in range(wl.m):
        sel = wl.stream == s
        seq[sel] = np.arange(int(sel.sum()))
    return [{"stream": f"s{s + 1}", "seq": q, "event_time": t, "arrival_time": t,
             "value": v, "a1": k}
            for s, q, t, v, k in zip(wl.stream.tolist(), seq.tolist(), wl.ts.tolist(),
                                     wl.value.tolist(), wl.key.tolist(), strict=True)]


def unique_rows(rows: IntArray) -> IntArray:
    """Distinct rows, sorted."""
    if len(rows) == 0:
        return rows.reshape(0, rows.shape[1] if rows.ndim == 2 else 0)
    return np.unique(rows, axis=0)


def oracle_rows(wl: Workload) -> IntArray:
    """Every result of the workload's join, as sorted rows of member gids."""
    join: dict[str, Any] = {"streams": [f"s{i + 1}" for i in range(wl.m)],
                            "windows_ms": list(wl.windows)}
    if wl.predicate == "band":
        join |= {"predicate": "band", "attribute": "value", "epsilon": wl.eps}
    else:
        join |= {"predicate": "equi", "attribute": "a1"}
    found = duckdb_oracle(parse_spec({"join": join}).join, records(wl))
    gid_of = [np.flatnonzero(wl.stream == s) for s in range(wl.m)]
    rows = np.array([[gid_of[i][mem.seq] for i, mem in enumerate(r.members)] for r in found],
                    dtype=np.int64).reshape(len(found), wl.m)
    return unique_rows(rows)
