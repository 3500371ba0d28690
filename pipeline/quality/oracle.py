"""The exact answer of a window join over the complete, sorted input (ARCHITECTURE §4).

A result ⟨e_1..e_m⟩ (one tuple per stream) is true iff for every pair (i, j)
e_i.ts − W_j ≤ e_j.ts ≤ e_i.ts + W_i and the predicate holds (Ji et al. §II).

* :func:`duckdb_oracle` — m self-joins in DuckDB SQL, every pair's window and
  predicate condition spelled out (equi, band, distance; overlap through one table of
  (tuple, item, weight) rows per stream: a pair's overlap is a grouped sum over the items
  the two tuples share);
* :func:`brute_force_oracle` — NumPy: a boolean matrix per stream pair, then
  m-tuples enumerated by extending partial tuples; handles cosine, overlap and custom
  callables.

Both are deliberately independent of ``pipeline.operators`` (the code they check).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import ConfigError, SerializationError
from pipeline.operators.events import JoinResult, results_from_arrays
from pipeline.spec.model import JoinSpec

COSINE_TOLERANCE = 1e-9
#: relative tolerance of the overlap threshold (weighted sets; plain sets are exact)
OVERLAP_TOLERANCE = 1e-9
PairFn = Callable[[Mapping[str, NDArray[Any]], Mapping[str, NDArray[Any]]], Any]


def _columns(join: JoinSpec) -> tuple[str, ...]:
    if join.predicate in ("equi", "band"):
        assert join.attribute is not None
        return (join.attribute,)
    if join.predicate == "distance":
        return (join.x, join.y)
    return ()


def _split(join: JoinSpec, records: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    index = {s: i for i, s in enumerate(join.streams)}
    per: list[list[Mapping[str, Any]]] = [[] for _ in join.streams]
    for r in records:
        name = r.get("stream")
        if name not in index:
            raise SerializationError(f"record stream {name!r} is not one of {list(join.streams)}")
        per[index[str(name)]].append(r)
    return per


def _numeric(rows: Sequence[Mapping[str, Any]], col: str) -> NDArray[np.float64]:
    try:
        return np.array([float(r[col]) for r in rows], dtype=np.float64)
    except KeyError:
        raise SerializationError(f"a record has no attribute {col!r}") from None
    except (TypeError, ValueError):
        raise SerializationError(f"attribute {col!r} has a non-numeric value") from None


def _member_arrays(
    join: JoinSpec, per: list[list[Mapping[str, Any]]], rows: NDArray[Any]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(seqs, event times), one row per result and one column per stream, of the results
    given as rows of per-stream positions."""
    m = len(join.streams)
    seqs = np.empty((len(rows), m), np.int64)
    tss = np.empty((len(rows), m), np.int64)
    for s in range(m):
        seq_col = np.array([int(r["seq"]) for r in per[s]], np.int64)
        ts_col = np.array([int(r["event_time"]) for r in per[s]], np.int64)
        seqs[:, s] = seq_col[rows[:, s]] if len(rows) else 0
        tss[:, s] = ts_col[rows[:, s]] if len(rows) else 0
    return seqs, tss


def _results(
    join: JoinSpec, per: list[list[Mapping[str, Any]]], rows: NDArray[Any]
) -> list[JoinResult]:
    """Results for rows of per-stream positions, sorted by (result_time, id)."""
    seqs, tss = _member_arrays(join, per, rows)
    out = results_from_arrays(join.streams, seqs, tss)
    out.sort(key=lambda r: (r.result_time, r.id))
    return out


# --------------------------------------------------------------------------- DuckDB
def _sql_predicate(join: JoinSpec, a: str, b: str) -> str:
    eps = repr(float(join.epsilon))
    if join.predicate == "equi":
        return f"{a}.c0 = {b}.c0"
    if join.predicate == "band":
        return f"abs({a}.c0 - {b}.c0) <= {eps}"
    if join.predicate == "distance":
        return (
            f"(({a}.c0 - {b}.c0) * ({a}.c0 - {b}.c0) + ({a}.c1 - {b}.c1) * ({a}.c1 - {b}.c1))"
            f" <= {eps} * {eps}"
        )
    raise ConfigError(f"join.predicate: {join.predicate!r} has no SQL form; use brute force")


def _bucketed(join: JoinSpec) -> bool:
    """Band and distance joins get grid buckets so DuckDB can hash-join (see duckdb_sql)."""
    return join.predicate in ("band", "distance") and join.epsilon > 0


def overlap_threshold(epsilon: float) -> float:
    """The overlap a pair needs: ε less a relative float tolerance."""
    return epsilon - OVERLAP_TOLERANCE * max(1.0, abs(epsilon))


def _overlap_sql(join: JoinSpec) -> str:
    """The overlap oracle query over tables t{i}(pos, ts) and u{i}(pos, item, w).

    Per stream pair (i, j) a view of the pairs inside each other's windows whose shared
    items weigh at least ε in total (Σ w_i·w_j over the items both hold, grouped by the
    pair), then the m-tuples every pair of which is in its view."""
    m = len(join.streams)
    w = join.windows
    thr = repr(overlap_threshold(float(join.epsilon)))
    views = []
    for i, j in combinations(range(m), 2):
        views.append(
            f"v{i}_{j} AS (SELECT a.pos AS pi, b.pos AS pj "
            f"FROM u{i} a JOIN u{j} b ON a.item = b.item "
            f"JOIN t{i} ti ON ti.pos = a.pos JOIN t{j} tj ON tj.pos = b.pos "
            f"WHERE tj.ts BETWEEN ti.ts - {w[j]} AND ti.ts + {w[i]} "
            f"GROUP BY a.pos, b.pos HAVING sum(a.w * b.w) >= {thr})")
    select = ", ".join(f"t{i}.pos AS p{i}" for i in range(m))
    sources = [f"t{i}" for i in range(m)] + [f"v{i}_{j}" for i, j in combinations(range(m), 2)]
    conds = [f"v{i}_{j}.pi = t{i}.pos AND v{i}_{j}.pj = t{j}.pos"
             for i, j in combinations(range(m), 2)]
    return (f"WITH {', '.join(views)} SELECT {select} FROM {', '.join(sources)} "
            f"WHERE {' AND '.join(conds)}")


def duckdb_sql(join: JoinSpec) -> str:
    """The oracle query over tables t0..t{m-1}(pos, ts, c0[, c1][, g0[, g1]]).

    Every pair's window and predicate condition is spelled out. For band and distance
    joins an extra, implied condition lets DuckDB use a hash join instead of a nested
    loop: each tuple carries its grid cell g = floor(c / ε) per coordinate, and streams
    1..m−1 are read through views ``x{i}`` that repeat every row once per neighbouring
    cell offset (−1, 0, +1 per coordinate). |a − b| ≤ ε implies the cells differ by at most
    one, so joining on "shifted cell of t_i = cell of t0" keeps every true result exactly
    once (the offsets are distinct) and the pair conditions below keep only true ones.
    """
    if join.predicate == "overlap":
        return _overlap_sql(join)
    m = len(join.streams)
    w = join.windows
    select = ", ".join(f"t{i}.pos AS p{i}" for i in range(m))
    dims = len(_columns(join)) if _bucketed(join) else 0
    sources = ["t0"] + [f"x{i} AS t{i}" if dims else f"t{i}" for i in range(1, m)]
    conds: list[str] = []
    for i in range(1, m):
        conds.extend(f"t{i}.g{d} = t0.g{d}" for d in range(dims))
    for i, j in combinations(range(m), 2):
        conds.append(f"t{j}.ts BETWEEN t{i}.ts - {w[j]} AND t{i}.ts + {w[i]}")
        conds.append(_sql_predicate(join, f"t{i}", f"t{j}"))
    return f"SELECT {select} FROM {', '.join(sources)} WHERE {' AND '.join(conds)}"


def _create_bucket_views(con: Any, join: JoinSpec) -> None:
    """Cell columns on every table and the neighbour-exploded views x1..x{m-1}."""
    cols = _columns(join)
    eps = repr(float(join.epsilon))
    for i in range(len(join.streams)):
        cells = ", ".join(f"CAST(floor(c{d} / {eps}) AS BIGINT) AS g{d}" for d in range(len(cols)))
        con.execute(f"CREATE TABLE t{i}g AS SELECT *, {cells} FROM t{i}")
        con.execute(f"DROP TABLE t{i}")
        con.execute(f"ALTER TABLE t{i}g RENAME TO t{i}")
    offsets = " CROSS JOIN ".join(
        f"(SELECT unnest([-1, 0, 1]) AS o{d})" for d in range(len(cols))
    )
    plain = ", ".join(["pos", "ts", *(f"c{d}" for d in range(len(cols)))])
    shifted = ", ".join(f"g{d} + o{d} AS g{d}" for d in range(len(cols)))
    for i in range(1, len(join.streams)):
        con.execute(
            f"CREATE VIEW x{i} AS SELECT {plain}, {shifted} FROM t{i} CROSS JOIN {offsets}"
        )


def _item_tables(con: Any, join: JoinSpec, per: list[list[Mapping[str, Any]]]) -> None:
    """Tables u{i}(pos, item, w): one row per item of every tuple of stream i."""
    import pandas as pd

    attr = str(join.attribute)
    for i, rows in enumerate(per):
        pos: list[int] = []
        items: list[str] = []
        weights: list[float] = []
        for p, rec in enumerate(rows):
            for item, weight in item_weights(rec.get(attr), attr).items():
                pos.append(p)
                items.append(item)
                weights.append(weight)
        frame = pd.DataFrame({"pos": np.array(pos, np.int64),
                              "item": pd.Series(items, dtype=object),
                              "w": np.array(weights, np.float64)})
        con.register(f"u{i}_df", frame)
        con.execute(f"CREATE TABLE u{i} AS SELECT pos, CAST(item AS VARCHAR) AS item, w "
                    f"FROM u{i}_df")


def duckdb_oracle(join: JoinSpec, records: Sequence[Mapping[str, Any]]) -> list[JoinResult]:
    """Exact results by DuckDB SQL (equi, band, distance, overlap), sorted by
    (result_time, id)."""
    per = _split(join, records)
    return _results(join, per, _duckdb_rows(join, per))


def _duckdb_rows(join: JoinSpec, per: list[list[Mapping[str, Any]]]) -> NDArray[np.int64]:
    """The results of the SQL join, as rows of per-stream positions in ``per``."""
    import duckdb
    import pandas as pd

    cols = _columns(join)
    overlap = join.predicate == "overlap"
    if not cols and not overlap:
        raise ConfigError(f"join.predicate: {join.predicate!r} is not SQL-evaluable")
    con = duckdb.connect()
    try:
        for i, rows in enumerate(per):
            frame = pd.DataFrame(
                {
                    "pos": np.arange(len(rows), dtype=np.int64),
                    "ts": np.array([int(r["event_time"]) for r in rows], dtype=np.int64),
                    **{f"c{c}": _numeric(rows, name) for c, name in enumerate(cols)},
                }
            )
            con.register(f"t{i}_df", frame)
            con.execute(f"CREATE TABLE t{i} AS SELECT * FROM t{i}_df")
        if overlap:
            _item_tables(con, join, per)
        if _bucketed(join):
            _create_bucket_views(con, join)
        found = con.execute(duckdb_sql(join)).fetchnumpy()
    finally:
        con.close()
    m = len(join.streams)
    return np.stack([np.asarray(found[f"p{i}"], np.int64) for i in range(m)], axis=1)


# ----------------------------------------------------------------------- brute force
def _cosine_vectors(
    rows: Sequence[Mapping[str, Any]], attr: str, vocab: dict[str, int]
) -> NDArray[np.float64]:
    mat = np.zeros((len(rows), max(1, len(vocab))))
    for r, rec in enumerate(rows):
        kw = rec.get(attr)
        if not isinstance(kw, Mapping):
            raise SerializationError(f"attribute {attr!r} must map keyword -> weight, got {kw!r}")
        for word, weight in kw.items():
            mat[r, vocab[str(word)]] += float(weight)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return np.divide(mat, norms, out=np.zeros_like(mat), where=norms > 0)


def _item_text(item: Any, attr: str) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, bool | np.bool_):
        raise SerializationError(f"attribute {attr!r}: item {item!r} is not an integer or "
                                 "a string")
    if isinstance(item, int | np.integer):
        return str(int(item))
    if isinstance(item, float | np.floating) and float(item).is_integer():
        return str(int(item))
    raise SerializationError(f"attribute {attr!r}: item {item!r} is not an integer or a string")


def item_weights(value: Any, attr: str) -> dict[str, float]:
    """An overlap attribute as item text → weight: a map's weights (an item given as
    ``7`` and ``"7"`` is one item, its weights added), a list's distinct items weigh 1."""
    out: dict[str, float] = {}
    if isinstance(value, Mapping):
        for item, weight in value.items():
            key = _item_text(item, attr)
            out[key] = out.get(key, 0.0) + float(weight)
        return out
    if value is None or isinstance(value, str | bytes):
        raise SerializationError(f"attribute {attr!r} must be a list of items or a map "
                                 f"item -> weight, got {value!r}")
    return {_item_text(item, attr): 1.0 for item in value}


def _overlap_vectors(per: list[list[Mapping[str, Any]]], attr: str
                     ) -> list[NDArray[np.float64]]:
    """Each stream's tuples as rows over one item vocabulary (weights; 1 for a set)."""
    parsed = [[item_weights(rec.get(attr), attr) for rec in rows] for rows in per]
    vocab: dict[str, int] = {}
    for rows in parsed:
        for d in rows:
            for item in d:
                vocab.setdefault(item, len(vocab))
    out = []
    for rows in parsed:
        mat = np.zeros((len(rows), max(1, len(vocab))))
        for r, d in enumerate(rows):
            for item, weight in d.items():
                mat[r, vocab[item]] = weight
        out.append(mat)
    return out


def _pair_matrix(
    join: JoinSpec,
    per: list[list[Mapping[str, Any]]],
    feats: list[Any],
    i: int,
    j: int,
    custom: PairFn | None,
    custom_columns: Sequence[str],
) -> NDArray[np.bool_]:
    ts_i = np.array([int(r["event_time"]) for r in per[i]], dtype=np.int64)
    ts_j = np.array([int(r["event_time"]) for r in per[j]], dtype=np.int64)
    w = join.windows
    ok = (ts_j[None, :] >= ts_i[:, None] - w[j]) & (ts_j[None, :] <= ts_i[:, None] + w[i])
    if custom is not None:
        left = {c: _numeric(per[i], c)[:, None] for c in custom_columns}
        right = {c: _numeric(per[j], c)[None, :] for c in custom_columns}
        return ok & np.broadcast_to(np.asarray(custom(left, right), bool), ok.shape)
    if join.predicate == "cosine":
        return ok & (feats[i] @ feats[j].T >= join.epsilon - COSINE_TOLERANCE)
    if join.predicate == "overlap":
        return ok & (feats[i] @ feats[j].T >= overlap_threshold(float(join.epsilon)))
    a, b = feats[i], feats[j]
    if join.predicate == "equi":
        return ok & (a[:, None, 0] == b[None, :, 0])
    if join.predicate == "band":
        return ok & (np.abs(a[:, None, 0] - b[None, :, 0]) <= join.epsilon)
    dx = a[:, None, 0] - b[None, :, 0]
    dy = a[:, None, 1] - b[None, :, 1]
    return ok & (dx * dx + dy * dy <= join.epsilon * join.epsilon)


def brute_force_oracle(
    join: JoinSpec,
    records: Sequence[Mapping[str, Any]],
    custom: PairFn | None = None,
    custom_columns: Sequence[str] = (),
) -> list[JoinResult]:
    """Exact results by NumPy pair matrices (any predicate), sorted by (result_time, id)."""
    per = _split(join, records)
    m = len(join.streams)
    feats: list[Any] = []
    if custom is None and join.predicate == "cosine":
        attr = join.attribute or "keywords"
        vocab: dict[str, int] = {}
        for rows in per:
            for rec in rows:
                kw = rec.get(attr)
                if isinstance(kw, Mapping):
                    for word in kw:
                        vocab.setdefault(str(word), len(vocab))
        feats = [_cosine_vectors(rows, attr, vocab) for rows in per]
    elif custom is None and join.predicate == "overlap":
        feats = _overlap_vectors(per, str(join.attribute))
    elif custom is None:
        cols = _columns(join)
        feats = [
            np.stack([_numeric(rows, c) for c in cols], axis=1)
            if rows
            else np.zeros((0, len(cols)))
            for rows in per
        ]
    pairs = {
        (i, j): _pair_matrix(join, per, feats, i, j, custom, custom_columns)
        for i, j in combinations(range(m), 2)
    }
    partial = np.arange(len(per[0]), dtype=np.int64)[:, None]
    for j in range(1, m):
        if partial.shape[0] == 0:
            break
        ok = np.ones((partial.shape[0], len(per[j])), dtype=bool)
        for s in range(j):
            ok &= pairs[(s, j)][partial[:, s]]
        pi, qi = np.nonzero(ok)
        partial = np.concatenate([partial[pi], qi[:, None]], axis=1)
    if partial.shape[1] < m:
        partial = np.zeros((0, m), np.int64)
    return _results(join, per, partial)


def oracle_members(join: JoinSpec, records: Sequence[Mapping[str, Any]]
                   ) -> NDArray[np.int64]:
    """The exact results as member seqs only, one row per result and one column per
    stream (``join.streams`` order), unordered: :func:`oracle` without a Python object
    per result, for inputs whose results run into the tens of millions."""
    if join.predicate == "cosine":
        found = brute_force_oracle(join, records)
        index = {s: i for i, s in enumerate(join.streams)}
        seqs = np.empty((len(found), len(join.streams)), np.int64)
        for row, r in enumerate(found):
            for mem in r.members:
                seqs[row, index[mem.stream]] = mem.seq
        return seqs
    per = _split(join, records)
    return _member_arrays(join, per, _duckdb_rows(join, per))[0]


def oracle(join: JoinSpec, records: Sequence[Mapping[str, Any]]) -> list[JoinResult]:
    """DuckDB for SQL-evaluable predicates (overlap included), NumPy brute force for
    cosine."""
    if join.predicate == "cosine":
        return brute_force_oracle(join, records)
    return duckdb_oracle(join, records)
