"""The in-process engine: per-stream K-slack → Synchronizer → m-way join (Ji et al. Fig. 2).

Driven by the records' ``arrival_time`` (the engine clock, never the wall clock). The
disorder policy (:class:`~pipeline.operators.contract.SlackPolicy`) sizes the common K
(Same-K, Ji et al. Theorem 1) and the shedder (:class:`~pipeline.operators.contract.Shedder`)
throttles the join (GrubJoin); see ``hooks.py`` for the exact call sequence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pipeline.core.errors import OperatorStateError
from pipeline.operators.config import EngineConfig
from pipeline.operators.contract import PluginEnv, Shedder, SlackPolicy
from pipeline.operators.disorder.kslack import NEG_INF, KSlack, KSlackConfig, Tagged
from pipeline.operators.disorder.synchronizer import Synchronizer, SynchronizerConfig
from pipeline.operators.engine import batch as engine_batch
from pipeline.operators.events import Event, JoinResult, results_from_arrays
from pipeline.operators.join.config import Outcome
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.memory.join import BoundedJoin, make_join
from pipeline.operators.registry import shedder_class, slack_policy_class

#: more interval boundaries than this inside one clock jump are collapsed into one call
MAX_BOUNDARIES_PER_TICK = 1000


@dataclass
class EngineStats:
    """Counters: inputs, results, dropped (shedder), late (inserted, not probed),
    discarded (too late for the window), comparisons (nested-loop tuple comparisons, the
    cost-model unit), checks (pair predicate evaluations actually run), cost
    (comparisons + per-tuple cost)."""

    inputs: int = 0
    results: int = 0
    dropped: int = 0
    late: int = 0
    discarded: int = 0
    comparisons: int = 0
    checks: int = 0
    cost: float = 0.0


class Engine:
    """Runtime of one join instance; ``snapshot()``/``from_snapshot()`` are exact."""

    def __init__(
        self,
        config: EngineConfig,
        env: PluginEnv | None = None,
        *,
        slack: SlackPolicy | None = None,
        shedder: Shedder | None = None,
    ) -> None:
        """``env`` is handed to the plug-ins the engine creates (default: no wall clock);
        ``slack``/``shedder`` are plug-ins built already (:meth:`from_snapshot`)."""
        self.config = config
        self.env = env if env is not None else PluginEnv()
        self.slack = slack if slack is not None else slack_policy_class(
            config.disorder.mode).create(config, self.env)
        self.shedder = shedder if shedder is not None else shedder_class(
            config.shedding.mode).create(config, self.env)
        self.kslacks = [KSlack(KSlackConfig(i)) for i in range(config.m)]
        self.sync = Synchronizer(SynchronizerConfig(config.m))
        #: with ``[memory]`` on, a :class:`BoundedJoin` (windows of at most M tuples)
        self.join: MWayJoin = make_join(config.join_config(), config.memory)
        self.clock = NEG_INF
        self.next_interval: int | None = None
        self.next_adapt: int | None = None
        self.stats = EngineStats()
        self._metrics: list[dict[str, Any]] = []
        #: result rows (seqs, tss) of the current public call, built into results once
        self._pending: list[tuple[Any, Any]] = []
        #: inside a batch call: released tuples go through the batch path
        self._batching = False
        #: pair evaluations actually run (a diagnostic, not state): the batch path tests
        #: whole blocks, so it runs more than ``stats.checks`` counts (what a per-tuple
        #: probe runs), depending on how the input was batched
        self.pairs_evaluated = 0

    # ------------------------------------------------------------------ input
    def process(self, event: Event) -> list[JoinResult]:
        """One arrival: advance the clock, K-slack, synchronize, join."""
        self._process_one(event)
        return self._drain_results()

    def process_many(self, events: Iterable[Event]) -> list[JoinResult]:
        """:meth:`process` for each event, results concatenated (built in one go).

        Batch path (ours, :mod:`~pipeline.operators.engine.batch`): when the plug-ins
        allow it, K-slack, the Synchronizer and the join (Ji et al. Alg. 2) handle the
        events run by run with array operations — the same results, in the same order."""
        if engine_batch.front_batchable(self):
            self._batching = True
            try:
                engine_batch.run_events(self, events if isinstance(events, Sequence)
                                        else list(events))
            finally:
                self._batching = False
        else:
            for ev in events:
                self._process_one(ev)
        return self._drain_results()

    def _process_one(self, event: Event) -> None:
        self._advance(event.arrival)
        ks = self.kslacks[event.stream]
        self.slack.observe_arrival(event.stream, event.ts, ks.delay_of(event.ts))
        _, released = ks.push(event, self.slack.current_k())
        self.stats.inputs += 1
        if released:
            self._to_join(released)

    def _drain_results(self) -> list[JoinResult]:
        """The pending result rows as :class:`JoinResult` objects, in join order."""
        if not self._pending:
            return []
        pending, self._pending = self._pending, []
        if len(pending) == 1:
            seqs, tss = pending[0]
        else:
            seqs = np.concatenate([p[0] for p in pending])
            tss = np.concatenate([p[1] for p in pending])
        return results_from_arrays(self.config.streams, seqs, tss)

    def preload(self, events: Iterable[Event]) -> None:
        """Insert events straight into the join windows, unprobed (benchmark warm-up).

        ⋈T advances to the newest ts, as if the events had been joined in order.
        """
        join, pred = self.join, self.config.predicate
        for ev in events:
            join.insert(ev.stream, ev.ts, ev.seq, pred.encode(ev.attrs))
            join.join_time = max(join.join_time, ev.ts)

    def advance_to(self, arrival_ms: int) -> list[JoinResult]:
        """Let the clock reach ``arrival_ms``: adapt at every boundary L / Δ crossed."""
        self._advance(arrival_ms)
        return self._drain_results()

    def _advance(self, arrival_ms: int) -> None:
        if arrival_ms <= self.clock:
            return
        self.clock = arrival_ms
        if self.next_interval is None or self.next_adapt is None:
            self.next_interval = self._first_boundary(self.config.disorder.interval_ms)
            self.next_adapt = self._first_boundary(self.config.shedding.adapt_interval_ms)
        k_before = self.slack.current_k()
        self.next_interval = self._cross(
            self.next_interval, self.config.disorder.interval_ms, "disorder"
        )
        self.next_adapt = self._cross(
            self.next_adapt, self.config.shedding.adapt_interval_ms, "shedding"
        )
        k = self.slack.current_k()
        if k >= k_before:
            return
        for ks in self.kslacks:
            released = ks.release(k)
            if released:
                self._to_join(released)

    def flush(self) -> list[JoinResult]:
        """End of input: release every K-slack and the Synchronizer in ts order."""
        self._batching = engine_batch.front_batchable(self)
        try:
            for ks in self.kslacks:
                self._to_join(ks.flush())
            if self._batching:
                engine_batch.join_run(self, self.sync.flush(), self.clock)
            else:
                for ev, delay in self.sync.flush():
                    self._join_one(ev, delay)
        finally:
            self._batching = False
        return self._drain_results()

    def memory_metrics(self) -> dict[str, Any] | None:
        """The memory policy's counters (evictions, tuples per window, budget) plus
        ``window_state`` (tuples in the join windows) and ``kslack_tuples`` (the K-slack
        buffers and the Synchronizer, outside the bound); None with ``[memory]`` off."""
        if not isinstance(self.join, BoundedJoin):
            return None
        return {**self.join.memory.metrics(), "window_state": self.join.state_size(),
                "kslack_tuples": sum(len(k) for k in self.kslacks) + len(self.sync)}

    def drain_metrics(self) -> list[dict[str, Any]]:
        """Metrics rows produced by the policy and the shedder since the last drain."""
        rows, self._metrics = self._metrics, []
        return rows

    # ------------------------------------------------------------------ internals
    def _first_boundary(self, every: int) -> int:
        return (self.clock // every + 1) * every

    def _cross(self, boundary: int, every: int, source: str) -> int:
        if self.clock < boundary:
            return boundary
        if (self.clock - boundary) // every > MAX_BOUNDARIES_PER_TICK:
            boundary = (self.clock // every) * every
        while boundary <= self.clock:
            if source == "disorder":
                row = self.slack.maybe_adapt(boundary)
            else:
                row = self.shedder.maybe_adapt(boundary)
            if row is not None:
                self._metrics.append({"source": source, **row})
            boundary += every
        return boundary

    def _to_join(self, tagged: list[Tagged]) -> None:
        if self._batching:  # Alg. 1 and the join over the whole release at once
            joined, _ = engine_batch.sync_run(self.sync, engine_batch.Released.of(tagged))
            engine_batch.join_run(self, joined, self.clock)
            return
        for item in tagged:
            for ev, delay in self.sync.push(item):
                self._join_one(ev, delay)

    def _join_one(self, ev: Event, delay: int) -> None:
        stats = self.stats
        if not self.shedder.admit(ev, self.clock):
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
        self.shedder.charge(cost, self.clock)
        stats.comparisons += res.cost
        stats.checks += res.checks
        self.pairs_evaluated += res.checks
        stats.cost += cost
        stats.results += res.count
        if res.count:
            self._pending.append((res.seqs, res.tss))

    # ------------------------------------------------------------------ state
    def snapshot(self) -> dict[str, Any]:
        """Plain Python/NumPy state (picklable); restoring it changes nothing in the output."""
        return {**self.snapshot_header(), "join": self.join.snapshot()}

    def snapshot_header(self) -> dict[str, Any]:
        """:meth:`snapshot` without the join windows' basic windows — the K-slack buffers,
        the Synchronizer, the join's ⋈T and samples, the policy, the shedder, the
        counters: nothing that grows with the window. With the pieces of
        :meth:`window_changes` it is the incremental state :meth:`from_pieces` restores."""
        return {
            "clock": self.clock,
            "next_interval": self.next_interval,
            "next_adapt": self.next_adapt,
            "stats": asdict(self.stats),
            "metrics": list(self._metrics),
            "kslacks": [ks.snapshot() for ks in self.kslacks],
            "sync": self.sync.snapshot(),
            "join": self.join.snapshot_header(),
            "slack": self.slack.snapshot(),
            "shedder": self.shedder.snapshot(),
        }

    def window_changes(self) -> list[tuple[dict[int, dict[str, Any]], list[int]]]:
        """Per stream: the snapshot pieces of the basic windows changed since the previous
        call, by id, and the ids of those dropped since
        (:meth:`~pipeline.operators.join.windows.StreamWindow.changes`)."""
        return [w.changes() for w in self.join.windows]

    @classmethod
    def from_pieces(
        cls, config: EngineConfig, header: dict[str, Any],
        windows: Sequence[Iterable[dict[str, Any]]], env: PluginEnv | None = None,
    ) -> Engine:
        """Rebuild an engine from :meth:`snapshot_header` and, per stream, the pieces of
        its current basic windows (any order). The same engine as :meth:`from_snapshot`
        of the full snapshot; its basic windows count as persisted."""
        if len(windows) != config.m:
            raise OperatorStateError(
                f"engine pieces have {len(windows)} streams, config has {config.m}")
        try:
            parts = [sorted(ws, key=lambda p: int(p["bid"])) for ws in windows]
            snap = {**header, "join": {**header["join"], "windows": parts}}
        except (KeyError, TypeError) as exc:
            raise OperatorStateError(f"cannot restore engine pieces: {exc!r}") from exc
        eng = cls.from_snapshot(config, snap, env)
        for win in eng.join.windows:
            win.mark_persisted()
        return eng

    @classmethod
    def from_snapshot(
        cls, config: EngineConfig, snap: dict[str, Any], env: PluginEnv | None = None
    ) -> Engine:
        """Rebuild an engine from :meth:`snapshot`; its policy and shedder are restored
        once, through their factories, with ``env``."""
        env = env if env is not None else PluginEnv()
        try:
            slack = slack_policy_class(config.disorder.mode).from_snapshot(
                config, snap["slack"], env)
            shedder = shedder_class(config.shedding.mode).from_snapshot(
                config, snap["shedder"], env)
            eng = cls(config, env, slack=slack, shedder=shedder)
            eng.clock = int(snap["clock"])
            eng.next_interval = snap["next_interval"]
            eng.next_adapt = snap["next_adapt"]
            eng.stats = EngineStats(**snap["stats"])
            eng._metrics = list(snap["metrics"])
            if len(snap["kslacks"]) != config.m:
                raise OperatorStateError(
                    f"engine snapshot has {len(snap['kslacks'])} streams, config has {config.m}"
                )
            eng.kslacks = [
                KSlack.from_snapshot(KSlackConfig(i), s) for i, s in enumerate(snap["kslacks"])
            ]
            eng.sync = Synchronizer.from_snapshot(SynchronizerConfig(config.m), snap["sync"])
            if config.memory.enabled:
                eng.join = BoundedJoin.restore(config.join_config(), config.memory, snap["join"])
            else:
                eng.join = MWayJoin.from_snapshot(config.join_config(), snap["join"])
        except (KeyError, TypeError) as exc:
            raise OperatorStateError(f"cannot restore engine snapshot: {exc!r}") from exc
        return eng
