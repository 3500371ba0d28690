"""One step of the join for a released tuple or a released run of tuples: admit → plan
→ probe (Ji et al. Alg. 2) → observe → charge (:class:`JoinStep`).

The engine (:mod:`~pipeline.operators.engine.engine`) keeps the clock, the adaptation
boundaries, K-slack and the Synchronizer; whatever they release it hands to the step,
with the engine clock ``now`` each item was released at. A *run* is a sequence of
released tuples joined at once (:func:`~pipeline.operators.join.run.process_run`, dense
predicates, the plain join) with the same plans, results, costs, feedback and statistics
as tuple by tuple — when the shedder can admit a run
(:class:`~pipeline.operators.contract.AdmitsRuns`,
:class:`~pipeline.operators.contract.DropsFromRuns`); otherwise, and whenever such a
shedder declines a run, its tuples take the step one by one. The plug-ins' abilities are
looked up once, when the step is built.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from pipeline.core.profile import PhaseProfile
from pipeline.operators.config import EngineConfig
from pipeline.operators.contract import (
    AdmitsRuns,
    DropsFromRuns,
    NeverPlans,
    ObservesOutput,
    ObservesProbeRuns,
    ObservesRuns,
    PlansRuns,
    Shedder,
    SlackPolicy,
)
from pipeline.operators.disorder.kslack import Tagged
from pipeline.operators.disorder.run_front import Released
from pipeline.operators.engine.stats import EngineStats
from pipeline.operators.events import Event
from pipeline.operators.join.config import Outcome
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.join.run import RunOutput, classify, encode_dense

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
#: tuples per join run at most (bounds the run × run visibility matrices of the scan)
MAX_RUN = 2048
#: ... on the indexed path, whose probes touch only their value candidates (no run × run
#: matrix): longer runs spread each run's fixed NumPy calls over more tuples
MAX_RUN_INDEXED = 8192


class JoinStep:
    """admit → plan → probe → observe → charge for one tuple (:meth:`one`) or a run
    (:meth:`run`), counted in ``stats``; the results wait in :meth:`take_results`."""

    def __init__(self, config: EngineConfig, join: MWayJoin, slack: SlackPolicy,
                 shedder: Shedder, stats: EngineStats) -> None:
        self.config = config
        self.join = join
        self.slack = slack
        self.shedder = shedder
        self.stats = stats
        #: pair evaluations actually run (a diagnostic, not state): the run path tests
        #: whole blocks, so it runs more than ``stats.checks`` counts (what a per-tuple
        #: probe runs), depending on how the input was cut into runs
        self.pairs_evaluated = 0
        #: result rows (seqs, tss) not yet taken, in join order
        self._results: list[tuple[I64, I64]] = []
        self._observe_joins = slack.observe_joins if isinstance(slack, ObservesRuns) else None
        self._admit_some = shedder.admit_some if isinstance(shedder, DropsFromRuns) else None
        self._charge_some = shedder.charge_some if isinstance(shedder, DropsFromRuns) else None
        self._admit_run = shedder.admit_run if isinstance(shedder, AdmitsRuns) else None
        self._charge_run = shedder.charge_run if isinstance(shedder, AdmitsRuns) else None
        self._plan_run = shedder.plan_run if isinstance(shedder, PlansRuns) else None
        self._plans = not isinstance(shedder, NeverPlans)
        self._observe_output = (shedder.observe_output if isinstance(shedder, ObservesOutput)
                                else None)
        self._observe_probes = (shedder.observe_probes
                                if isinstance(shedder, ObservesProbeRuns) else None)
        #: wall seconds charged per result found (``[shedding] result_us``)
        self._result_s = config.shedding.result_us / 1e6
        #: phase timer of the run path (ours, issue 28; None = off)
        self.profile: PhaseProfile | None = None
        #: whether released runs are joined at once (else tuple by tuple)
        self.runs = (type(join) is MWayJoin and join.dense
                     and (self._admit_some is not None or self._admit_run is not None))
        #: tuples per run at most
        self.max_run = MAX_RUN_INDEXED if self.runs and join.use_index else MAX_RUN

    def take_results(self) -> list[tuple[I64, I64]]:
        """The result rows (seqs, tss) found since the last call, in join order."""
        out, self._results = self._results, []
        return out

    # ------------------------------------------------------------------ one tuple
    def one(self, ev: Event, delay: int, now: int) -> None:
        """The step for one released tuple (raw ``delay``) at engine clock ``now``."""
        stats = self.stats
        if not self.shedder.admit(ev, now):
            stats.dropped += 1
            return
        enc = self.config.predicate.encode(ev.attrs)
        plan = self.shedder.plan(ev.stream) if ev.ts >= self.join.join_time else None
        res = self.join.process(ev.stream, ev.ts, ev.seq, enc, plan)
        if res.outcome is Outcome.PROBED:
            cross = self.join.cross_count(ev.stream, ev.ts) if self.slack.needs_cross else 0
            self.slack.observe_join(ev.stream, ev.ts, delay, res.count, cross, False)
            if res.feedback is not None:
                self.shedder.observe_probe(res.feedback)
        else:
            if res.outcome is Outcome.LATE:
                stats.late += 1
            else:
                stats.discarded += 1
            self.slack.observe_join(ev.stream, ev.ts, delay, 0, 0, True)
        cost = res.cost + self.config.tuple_cost + (self.config.probe_cost if res.cost else 0.0)
        self.shedder.charge(cost, now)
        stats.comparisons += res.cost
        stats.checks += res.checks
        self.pairs_evaluated += res.checks
        stats.cost += cost
        stats.results += res.count
        if res.count:
            self._price_results(res.count)
            self._results.append((res.seqs, res.tss))
            if self._observe_output is not None:
                self._observe_output(res.count)

    # ------------------------------------------------------------------ a run
    def run(self, items: Released | Sequence[Tagged], nows: I64 | int) -> None:
        """The step for every released (event, delay) item, in order; ``nows`` is the
        engine clock each was released at (one value: all at once)."""
        n = len(items)
        if n == 0:
            return
        rel = items if isinstance(items, Released) else Released.of(items)
        now_arr = np.broadcast_to(np.asarray(nows, np.int64), (n,))
        if not self.runs:
            self._one_by_one(rel.items, now_arr)
            return
        step = self.max_run
        for a in range(0, n, step):
            self._run(rel.slice(a, a + step), now_arr[a : a + step])

    def _one_by_one(self, items: Sequence[Tagged], nows: I64) -> None:
        for (ev, delay), now in zip(items, nows.tolist(), strict=True):
            self.one(ev, delay, now)

    def _run(self, rel: Released, nows: I64) -> None:
        """One run through the join: admission, plans, Alg. 2, observation, cost."""
        admitted = self._admit(rel, nows)
        if admitted is None:
            self._one_by_one(rel.items, nows)  # admission depends on each cost before
            return
        rel, nows = admitted
        if len(rel) == 0:
            return
        streams, ts = rel.stream, rel.ts
        feats = encode_dense(self.config.predicate, rel.items, items=True)
        outcome, _ = classify(self.join.join_time, self.config.windows, streams, ts)
        plans = self._plans_of(streams, outcome)
        if self.profile is not None:
            self.profile.lap("admission")
        out = self.join.process_batch(streams, ts, rel.seq, feats, plans,
                                      want_cross=bool(self.slack.needs_cross),
                                      profile=self.profile)
        self._observe(rel, out)
        cfg = self.config
        costs = out.cost.astype(np.float64) + cfg.tuple_cost + np.where(
            out.cost > 0, cfg.probe_cost, 0.0)
        if self._charge_some is not None:
            self._charge_some(costs, nows)
        else:
            assert self._charge_run is not None
            self._charge_run(costs, int(nows[-1]))
        self._count(out, costs)
        if self.profile is not None:
            self.profile.lap("join_stats")

    def _price_results(self, found: int) -> None:
        """``[shedding] result_us`` per result found, charged to a wall budget."""
        if self._result_s > 0.0:
            wall = self.shedder.wall_budget()
            if wall is not None:
                wall.charge_results(found, self._result_s)

    def _admit(self, rel: Released, nows: I64) -> tuple[Released, I64] | None:
        """The run's admitted tuples and their clocks; None: admit tuple by tuple. The
        dropped ones leave the run: not inserted, not charged."""
        if self._admit_some is None:
            assert self._admit_run is not None
            return (rel, nows) if self._admit_run(rel.stream, int(nows[-1])) else None
        kept = self._admit_some(rel.stream, nows)
        if kept is None or kept.all():
            return None if kept is None else (rel, nows)
        self.stats.dropped += int(kept.shape[0] - np.count_nonzero(kept))
        at = np.flatnonzero(kept)
        return rel.take(at), nows[at]

    def _plans_of(self, streams: I64, outcome: NDArray[np.int8]) -> list[ProbePlan | None]:
        """The shedder's plan for each in-order tuple of the run (None for the others)."""
        plans: list[ProbePlan | None] = [None] * streams.shape[0]
        if not self._plans:
            return plans
        probing = np.flatnonzero(outcome == Outcome.PROBED)
        got = self._plan_run(streams[probing]) if self._plan_run is not None else None
        if got is None:
            got = [self.shedder.plan(s) for s in streams[probing].tolist()]
        for i, p in zip(probing.tolist(), got, strict=True):
            plans[i] = p
        return plans

    def _observe(self, rel: Released, out: RunOutput) -> None:
        """The K policy's ``observe_join`` and the shedder's ``observe_probe`` for a run."""
        probed = out.outcome == Outcome.PROBED
        n = probed.shape[0]
        cross = out.cross if out.cross is not None else np.zeros(n, np.int64)
        streams, ts, delays = rel.stream, rel.ts, rel.delay
        if self._observe_joins is not None:
            self._observe_joins(streams, ts, delays, np.where(probed, out.count, 0),
                                np.where(probed, cross, 0), ~probed)
        else:
            for i in range(n):
                p = bool(probed[i])
                self.slack.observe_join(int(streams[i]), int(ts[i]), int(delays[i]),
                                        int(out.count[i]) if p else 0,
                                        int(cross[i]) if p else 0, not p)
        if self._observe_probes is not None:
            if out.feedback:
                self._observe_probes([fb for _, fb in out.feedback])
            return
        for _, fb in out.feedback:
            self.shedder.observe_probe(fb)

    def _count(self, out: RunOutput, costs: F64) -> None:
        """A run's counters and result rows."""
        stats = self.stats
        stats.late += int(np.count_nonzero(out.outcome == Outcome.LATE))
        stats.discarded += int(np.count_nonzero(out.outcome == Outcome.DISCARDED))
        stats.comparisons += int(out.cost.sum())
        stats.checks += out.checks
        self.pairs_evaluated += out.evaluated
        stats.cost = float(np.cumsum(np.concatenate(([stats.cost], costs)))[-1])  # in order
        found = int(out.count.sum())
        stats.results += found
        if found:
            self._price_results(found)
        if out.seqs.shape[0]:
            self._results.append((out.seqs, out.tss))
        if found and self._observe_output is not None:
            self._observe_output(found)
