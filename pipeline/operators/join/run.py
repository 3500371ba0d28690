"""Ji et al. Alg. 2 over a run of tuples at once (ours): batch-vectorized probing.

A *run* is a sequence of tuples in the order the Synchronizer releases them. Tuple i
of the run sees exactly what Alg. 2 lets it see when the tuples are joined one by one:

* ⋈T before i is the largest ts before it (the stored ⋈T included), so i is *in order*
  (probed) if ts_i ≥ ⋈T, *late* (only inserted) if ts_i ≥ ⋈T − W_i, else discarded;
* an in-order tuple sees, of every other window W_l, the stored rows with
  ts ≥ ts_i − W_l plus the run's rows inserted before it with ts ≥ ts_i − W_l
  (expiry only ever drops rows older than that, and nothing stored is newer than ⋈T);
* GrubJoin's harvest plans (§IV) then restrict each position to the chosen logical
  basic windows relative to ts_i; tuples of one adaptation step share a plan, so the
  run's probes are grouped by (direction, join order R_i) and each group is probed in
  blocks (:func:`~pipeline.operators.join.run_probe.probe_group`) — a probes × stored-rows
  test plus the run against itself with the order constraint, not one Python probe
  per tuple.

Afterwards the run's tuples are inserted (in order) and every window is expired once to
the bound its last probe needed. The outputs — outcome, results, GrubJoin cost,
feedback — equal what :meth:`MWayJoin.process` gives tuple by tuple; the default join
order even follows the same periodic σ samples (GrubJoin §V). One difference: a basic
window that Alg. 2 would expire and later re-create for a late tuple keeps its old rows
until the next expiry — rows no probe can see any more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.join.plan import ProbeFeedback, ProbePlan
from pipeline.operators.join.run_probe import GroupOut, probe_group, sample_position
from pipeline.operators.join.run_side import Geometry, Probes, Side, visible_stored
from pipeline.operators.join.valueindex import ValueIndex

if TYPE_CHECKING:
    from pipeline.operators.join.mjoin import MWayJoin

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
#: outcome codes of :class:`RunOutput` (Alg. 2)
PROBED, LATE, DISCARDED = 0, 1, 2
#: cost units of one (probe, stored basic window) lookup on the indexed batch path,
#: in nested-loop comparisons (ours; fitted in bench/join.py ``indexed``, see costmodel)
INDEX_WINDOW_COST = 6


@dataclass(frozen=True, slots=True)
class RunOutput:
    """Per tuple of the run: outcome code, results, GrubJoin cost (comparisons, or index
    units) and n^× (only if asked); the results (rows = results in run order, columns =
    streams); feedback of the probes whose plan asked for it; pair evaluations as the
    per-tuple probe counts them."""

    outcome: NDArray[np.int8]
    count: I64
    cost: I64
    seqs: I64
    tss: I64
    feedback: tuple[tuple[int, ProbeFeedback], ...]
    checks: int
    cross: I64 | None = None
    #: pair evaluations this path ran (≥ ``checks``, which counts what the per-tuple
    #: probe runs: blocks also test rows outside a probe's window)
    evaluated: int = 0


def classify(join_time: int, windows: Sequence[int], streams: I64,
             ts: I64) -> tuple[NDArray[np.int8], int]:
    """Alg. 2 outcome of every tuple of a run from ⋈T before the run; and ⋈T after it."""
    before = np.maximum.accumulate(np.concatenate(([join_time], ts[:-1])))
    outcome = np.full(ts.shape[0], DISCARDED, np.int8)
    w = np.asarray(windows, np.int64)[streams]
    outcome[ts >= before - w] = LATE
    outcome[ts >= before] = PROBED
    return outcome, max(join_time, int(ts.max())) if ts.shape[0] else join_time


def process_run(join: MWayJoin, streams: I64, ts: I64, seqs: I64, feats: F64,
                plans: Sequence[ProbePlan | None], want_cross: bool = False) -> RunOutput:
    """Alg. 2 for the run (``plans[i]`` is used for in-order tuples only); inserts the
    run and expires the windows. Dense predicates only (the per-tuple probe handles the
    others)."""
    cfg = join.config
    m, b = cfg.m, cfg.basic_window_ms
    n = ts.shape[0]
    outcome, join_after = classify(join.join_time, cfg.windows, streams, ts)
    inserted = outcome != DISCARDED
    pos_all = np.arange(n, dtype=np.int64)
    sides = []
    vix = _value_indexes(join) if join.use_index else None
    for l, win in enumerate(join.windows):
        q = pos_all[inserted & (streams == l)]
        bws = tuple(map(win.bws.__getitem__, win.bids))
        if vix is not None:  # the window's sorted value index: no merged copy
            sides.append(Side(bws, q, ts[q], seqs[q], feats[q], vindex=vix[l],
                              q_sorted=np.argsort(feats[q, 0], kind="stable")))
        else:  # the merged copy, built if a probe scans this window
            sides.append(Side(bws, q, ts[q], seqs[q], feats[q], window=win))
    geos = tuple(Geometry(cfg.windows[l], b, cfg.n_basic(l)) for l in range(m))
    probed = np.flatnonzero(outcome == PROBED)
    count = np.zeros(n, np.int64)
    cost = np.zeros(n, np.int64)
    plan_of = [plans[i] for i in probed.tolist()]
    grp = _group_probes(join, streams, ts, feats, probed, plan_of, sides, geos)
    cost[probed] += grp.sample_cost
    cost[probed[grp.fast]] = 0  # no window of the first partner: the per-tuple fast path
    live = np.flatnonzero(~grp.fast)
    live = live[np.argsort(grp.gid[live], kind="stable")]
    cuts = np.flatnonzero(np.diff(grp.gid[live])) + 1
    results: list[tuple[I64, I64, I64]] = []
    reached: dict[int, tuple[I64, I64]] = {}
    checks = evaluated = 0
    for ks in np.split(live, cuts) if live.shape[0] else []:
        s, order = grp.keys[int(grp.gid[ks[0]])]
        rows = probed[ks]
        probes = Probes(rows, ts[rows], seqs[rows], feats[rows],
                        _tables(join, order, grp.code[ks], grp.plans))
        out = probe_group(cfg.predicate, order, tuple(geos[l] for l in order),
                          tuple(sides[l] for l in order), probes, join.use_index,
                          INDEX_WINDOW_COST)
        checks += out.checks
        evaluated += out.evaluated
        cost[rows] += out.scanned.sum(axis=1)
        count[rows] = np.bincount(out.res_probe, minlength=rows.shape[0])
        results.append(_columns(m, s, order, rows, probes, out))
        for r in np.flatnonzero(grp.feedback[grp.code[ks]]).tolist():
            reached[int(rows[r])] = (out.entering[r], out.scanned[r])
    res_seqs, res_tss = _in_run_order(m, count, results)
    feedback = _feedback(join, streams, ts, probed, grp, count, cost, reached, res_tss)
    cross = _cross(cfg.windows, streams, ts, probed, sides) if want_cross else None
    _update_windows(join, streams, ts, seqs, feats, inserted, probed)
    join.join_time = join_after
    return RunOutput(outcome, count, cost, res_seqs, res_tss, feedback, checks, cross,
                     evaluated)


# ----------------------------------------------------------------------------- orders
@dataclass(frozen=True, slots=True)
class _Grouping:
    """The run's probes (index k into the probed tuples) by (direction, join order):
    ``gid[k]`` into ``keys``; ``fast[k]``: its plan scans no window of the first
    partner; ``code[k]`` into the distinct ``plans``, whose ``feedback`` flags are kept;
    the comparisons of each probe's σ sample."""

    gid: I64
    keys: list[tuple[int, tuple[int, ...]]]
    fast: NDArray[np.bool_]
    code: I64
    plans: list[ProbePlan | None]
    feedback: NDArray[np.bool_]
    sample_cost: I64


def _group_probes(join: MWayJoin, streams: I64, ts: I64, feats: F64, probed: I64,
                  plan_of: list[ProbePlan | None], sides: list[Side],
                  geos: tuple[Geometry, ...]) -> _Grouping:
    """Each probe's join order: its plan's own order, else MJoin's default order
    (GrubJoin §V), re-derived after every SAMPLE_EVERY-th probe of a direction samples σ
    against every other window — in run order, exactly as the per-tuple probe does.
    Plans are looked at once per distinct plan (tuples of one adaptation step share
    them), not once per tuple."""
    from pipeline.core.errors import ConfigError
    from pipeline.operators.join.mjoin import SAMPLE_EVERY

    m = join.config.m
    n = len(plan_of)
    _, first_of, code = np.unique(np.fromiter(map(id, plan_of), np.int64, n),
                                  return_index=True, return_inverse=True)
    code = code.reshape(-1)
    plans = [plan_of[k] for k in first_of.tolist()]
    fast = np.array([p is not None and p.windows is not None and p.windows[0] == ()
                     for p in plans], dtype=bool)[code]
    default = np.array([p is None or p.order is None for p in plans], dtype=bool)[code]
    feedback = np.array([p is not None and p.feedback for p in plans], dtype=bool)
    p_str = streams[probed]
    gid = np.zeros(n, np.int64)
    keys: dict[tuple[int, tuple[int, ...]], int] = {}
    sample_cost = np.zeros(n, np.int64)
    own = np.flatnonzero(~default)
    if own.shape[0]:
        combos, inverse = np.unique(code[own] * m + p_str[own], return_inverse=True)
        ids = np.empty(combos.shape[0], np.int64)
        for c, combo in enumerate(combos.tolist()):
            plan, s = plans[combo // m], combo % m
            assert plan is not None and plan.order is not None
            order = tuple(plan.order)
            if sorted(order) != list(join.others[s]):
                raise ConfigError(f"probe plan order {order} is not a permutation of the others")
            ids[c] = keys.setdefault((s, order), len(keys))
        gid[own] = ids[inverse.reshape(-1)]
    pred = join.config.predicate
    for s in range(m):
        ks = np.flatnonzero(default & (p_str == s))
        if ks.shape[0] == 0:
            continue
        first = int(join.probes[s])
        join.probes[s] = first + ks.shape[0]
        sampled = np.flatnonzero((first + np.arange(ks.shape[0])) % SAMPLE_EVERY == 0)
        per_l: list[tuple[I64, I64]] = []
        if sampled.shape[0]:
            rows = probed[ks[sampled]]
            for l in join.others[s]:
                matches, seen, spent = sample_position(
                    pred, sides[l], rows, ts[rows], feats[rows], geos[l],
                    INDEX_WINDOW_COST if join.use_index else None)
                per_l.append((matches, seen))
                sample_cost[ks[sampled]] += spent
        bounds = [0, *sampled.tolist(), ks.shape[0]]
        for seg in range(len(bounds) - 1):
            a, c = bounds[seg], bounds[seg + 1]
            if seg > 0:  # the probe at ``a`` sampled σ first: its own order uses it
                join._orders.pop(s, None)
                for l, (matches, seen) in zip(join.others[s], per_l, strict=True):
                    join.sel_matches[s, l] += int(matches[seg - 1])
                    join.sel_trials[s, l] += int(seen[seg - 1])
            if c > a:
                gid[ks[a:c]] = keys.setdefault((s, join.default_order(s)), len(keys))
    return _Grouping(gid, list(keys), fast, code, plans, feedback, sample_cost)


def _tables(join: MWayJoin, order: tuple[int, ...], codes: I64,
            plans: list[ProbePlan | None]) -> list[NDArray[np.bool_] | None]:
    """Per position, the probes' chosen-logical-window tables (None = all windows for
    every probe; one distinct plan gives one broadcast row)."""
    out: list[NDArray[np.bool_] | None] = []
    distinct, inverse = np.unique(codes, return_inverse=True)
    for pos, l in enumerate(order):
        n_l = join.config.n_basic(l)
        rows = [join._selection(l, plans[c], pos) for c in distinct.tolist()]
        if all(r is None for r in rows):
            out.append(None)
            continue
        full = np.ones(n_l, dtype=bool)
        table = np.stack([full if r is None else r[0] for r in rows])
        if table.shape[0] == 1:
            out.append(np.broadcast_to(table[0], (codes.shape[0], n_l)))
        else:
            out.append(table[inverse.reshape(-1)])
    return out


# ----------------------------------------------------------------------------- results
def _columns(m: int, s: int, order: tuple[int, ...], rows: I64, probes: Probes,
             out: GroupOut) -> tuple[I64, I64, I64]:
    """A group's results as (run position, seqs m-wide, tss m-wide), grouped by probe."""
    r = out.res_probe.shape[0]
    seqs = np.empty((r, m), np.int64)
    tss = np.empty((r, m), np.int64)
    seqs[:, s] = probes.seq[out.res_probe]
    tss[:, s] = probes.ts[out.res_probe]
    for j, l in enumerate(order):
        seqs[:, l] = out.res_seq[j]
        tss[:, l] = out.res_ts[j]
    return rows[out.res_probe], seqs, tss


def _in_run_order(m: int, count: I64, results: list[tuple[I64, I64, I64]]
                  ) -> tuple[I64, I64]:
    """All groups' results, grouped by probe in run order (a scatter, no sort)."""
    total = int(count.sum())
    seqs = np.empty((total, m), np.int64)
    tss = np.empty((total, m), np.int64)
    start = np.cumsum(count) - count
    for where, g_seqs, g_tss in results:
        if where.shape[0] == 0:
            continue
        first = np.flatnonzero(np.concatenate(([True], where[1:] != where[:-1])))
        within = np.arange(where.shape[0]) - np.repeat(first, np.diff(
            np.append(first, where.shape[0])))
        dest = start[where] + within
        seqs[dest] = g_seqs
        tss[dest] = g_tss
    return seqs, tss


def _feedback(join: MWayJoin, streams: I64, ts: I64, probed: I64, grp: _Grouping,
              count: I64, cost: I64, reached: dict[int, tuple[I64, I64]],
              res_tss: I64) -> tuple[tuple[int, ProbeFeedback], ...]:
    """The :class:`ProbeFeedback` of every probe whose plan asked for it, as the
    per-tuple probe reports it (match histograms by logical basic window)."""
    out = []
    b = join.config.basic_window_ms
    start = np.cumsum(count) - count
    for k in np.flatnonzero(grp.feedback[grp.code]).tolist():
        i = int(probed[k])
        s, t = int(streams[i]), int(ts[i])
        order = grp.keys[int(grp.gid[k])][1]
        got = reached.get(i)
        if got is None:  # the fast path: no window of the first partner scanned
            entering: list[int] = [1]
            scanned = (0,) * len(order)
        else:
            ent, scn = got
            depth = int(np.count_nonzero(ent))
            entering = [int(v) for v in ent[:depth]]
            scanned = tuple(int(v) for v in scn[:depth]) + (0,) * (len(order) - depth)
        results = int(count[i])
        matches = []
        for l in order:
            n_l = join.config.n_basic(l)
            if results:
                member = res_tss[start[i] : start[i] + results, l]
                lbw = np.minimum((t - member) // b, n_l - 1)
                matches.append(np.bincount(lbw, minlength=n_l).astype(np.int64))
            else:
                matches.append(np.zeros(n_l, np.int64))
        out.append((i, ProbeFeedback(s, t, order, tuple(matches), scanned, results,
                                     int(cost[i]), tuple(entering))))
    return tuple(out)


def _cross(windows: Sequence[int], streams: I64, ts: I64, probed: I64,
           sides: list[Side]) -> I64:
    """n^× = Π_{l≠i} |S_l[W_l]| as each probe saw it (Ji §3.5): stored rows with
    ts ≥ ts_i − W_l plus the run's earlier rows of l in that range."""
    cross = np.ones(ts.shape[0], np.int64)
    p_str = streams[probed]
    for l, side in enumerate(sides):
        who = probed[p_str != l]
        if who.shape[0] == 0:
            continue
        lo = ts[who] - windows[l]
        seen = visible_stored(side, lo)
        seen += side.q_pos.searchsorted(who, "left")  # the run's rows before each probe
        old = np.flatnonzero(side.q_ts < lo.max())  # ... less those some probe cannot see
        if old.shape[0]:
            o_pos, o_ts = side.q_pos[old], side.q_ts[old]
            for a in range(0, who.shape[0], 1024):
                c = min(who.shape[0], a + 1024)
                gone = (o_pos[None, :] < who[a:c, None]) & (o_ts[None, :] < lo[a:c, None])
                seen[a:c] -= gone.sum(axis=1)
        cross[who] *= seen
    return cross


def _update_windows(join: MWayJoin, streams: I64, ts: I64, seqs: I64, feats: F64,
                    inserted: NDArray[np.bool_], probed: I64) -> None:
    """Insert the run's inserted tuples (in run order) and expire every window to the
    bound its last probe of another stream needed (Alg. 2)."""
    cfg = join.config
    vix = join._vindex if join.use_index else None
    for l, win in enumerate(join.windows):
        rows = np.flatnonzero(inserted & (streams == l))
        if rows.shape[0]:
            win.insert_many(ts[rows], seqs[rows], feats[rows])
        others = probed[streams[probed] != l]
        if others.shape[0]:
            win.expire(int(ts[others].max()) - cfg.windows[l])
        index = None if vix is None else vix[l]
        if index is not None:  # in step with the window (valueindex.py)
            index.add(feats[rows, 0], ts[rows], seqs[rows])
            if win.bids:
                index.expire(win.bids[0] * cfg.basic_window_ms)


def _value_indexes(join: MWayJoin) -> list[ValueIndex]:
    """The windows' sorted value indexes, rebuilt where the per-tuple path (or a restore)
    left them stale."""
    vix = join._vindex
    for l, win in enumerate(join.windows):
        if vix[l] is None:
            vix[l] = ValueIndex.of(win)
    return vix  # type: ignore[return-value]


def encode_dense(pred: Any, attrs: Sequence[Any], items: bool = False) -> F64:
    """Feature rows of many tuples (dense predicates): one float conversion per column;
    a bad attribute falls back to :meth:`encode`, which names it. ``items``: ``attrs``
    holds (event, delay) items, whose events' attributes are read."""
    cols = pred.columns
    out = np.empty((len(attrs), len(cols)), np.float64)
    try:
        for c, name in enumerate(cols):
            if items:
                out[:, c] = [it[0].attrs[name] for it in attrs]
            else:
                out[:, c] = [a[name] for a in attrs]
    except (KeyError, TypeError, ValueError):
        for r, a in enumerate(attrs):
            out[r] = pred.encode(a[0].attrs if items else a)
    return out
