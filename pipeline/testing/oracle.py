"""The oracle's answer as result ids, the form the tests compare.

:mod:`pipeline.quality.oracle` computes the exact join over the complete input; these
helpers pick one of its implementations and keep only the deterministic result ids.

>>> from pipeline.testing.streams import make_dump, make_spec
>>> spec = make_spec(2, "equi", [100, 100])
>>> dump = make_dump(seed=3, m=2, n=20)
>>> oracle_ids(spec.join, dump) == oracle_ids(spec.join, dump, method="numpy")
True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pipeline.operators.events import JoinResult
from pipeline.quality.oracle import PairFn, brute_force_oracle, duckdb_oracle, oracle
from pipeline.spec.model import JoinSpec

Method = Literal["auto", "duckdb", "numpy"]


def oracle_results(
    join: JoinSpec,
    records: Sequence[Mapping[str, Any]],
    *,
    method: Method = "auto",
    custom: PairFn | None = None,
    custom_columns: Sequence[str] = (),
) -> list[JoinResult]:
    """The exact results: ``auto`` = :func:`~pipeline.quality.oracle.oracle` (DuckDB, NumPy
    for cosine), ``duckdb`` or ``numpy`` (brute force; the one that takes ``custom``)."""
    if custom is not None or method == "numpy":
        return brute_force_oracle(join, records, custom=custom, custom_columns=custom_columns)
    if method == "duckdb":
        return duckdb_oracle(join, records)
    return oracle(join, records)


def oracle_ids(
    join: JoinSpec,
    records: Sequence[Mapping[str, Any]],
    *,
    method: Method = "auto",
    custom: PairFn | None = None,
    custom_columns: Sequence[str] = (),
) -> list[str]:
    """The exact results' ids, sorted (each result once)."""
    found = oracle_results(join, records, method=method, custom=custom,
                           custom_columns=custom_columns)
    return sorted(r.id for r in found)


def oracle_id_counts(
    join: JoinSpec,
    records: Sequence[Mapping[str, Any]],
    *,
    method: Method = "auto",
    custom: PairFn | None = None,
    custom_columns: Sequence[str] = (),
) -> Counter[str]:
    """The exact results' ids as a multiset (every count is 1)."""
    return Counter(oracle_ids(join, records, method=method, custom=custom,
                              custom_columns=custom_columns))
