"""The in-process engine: per-stream K-slack → Synchronizer → m-way join (Ji et al. Fig. 2).

Driven by the records' ``arrival_time`` (the engine clock, never the wall clock). The
disorder policy (:class:`~pipeline.operators.contract.SlackPolicy`) sizes the common K
(Same-K, Ji et al. Theorem 1) and the shedder (:class:`~pipeline.operators.contract.Shedder`)
throttles the join (GrubJoin); :mod:`~pipeline.operators.contract` gives the exact call
sequence. The engine keeps the clock, the adaptation boundaries (L, Δ), K-slack and the
Synchronizer; what they release goes through the
:class:`~pipeline.operators.engine.step.JoinStep` (admit → plan → probe → observe →
charge) tuple by tuple, or run by run where the plug-ins allow it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from pipeline.core.errors import OperatorStateError
from pipeline.core.gcpause import gc_paused
from pipeline.core.profile import PhaseProfile
from pipeline.operators.config import EngineConfig
from pipeline.operators.contract import (
    ObservesRuns,
    PluginEnv,
    ReadsProfile,
    Shedder,
    SlackPolicy,
    SteadyK,
)
from pipeline.operators.disorder.kslack import KSlack, KSlackConfig, Tagged
from pipeline.operators.disorder.run_front import Released, kslack_run, sync_run
from pipeline.operators.disorder.synchronizer import Synchronizer, SynchronizerConfig
from pipeline.operators.engine.stats import EngineStats
from pipeline.operators.engine.step import JoinStep
from pipeline.operators.events import NEG_INF, Event, JoinResult, ResultRows
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.memory.join import BoundedJoin, make_join
from pipeline.operators.registry import shedder_class, slack_policy_class

#: more interval boundaries than this inside one clock jump are collapsed into one call
MAX_BOUNDARIES_PER_TICK = 1000


class Engine:
    """Runtime of one join instance; ``snapshot()``/``from_snapshot()`` are exact."""

    def __init__(
        self,
        config: EngineConfig,
        env: PluginEnv | None = None,
        *,
        slack: SlackPolicy | None = None,
        shedder: Shedder | None = None,
        join: MWayJoin | None = None,
        stats: EngineStats | None = None,
    ) -> None:
        """``env`` is handed to the plug-ins the engine creates (default: no wall clock);
        ``slack``/``shedder``/``join``/``stats`` are parts built already
        (:meth:`from_snapshot`)."""
        self.config = config
        self.env = env if env is not None else PluginEnv()
        self.slack = slack if slack is not None else slack_policy_class(
            config.disorder.mode).create(config, self.env)
        self.shedder = shedder if shedder is not None else shedder_class(
            config.shedding.mode).create(config, self.env)
        self.kslacks = [KSlack(KSlackConfig(i)) for i in range(config.m)]
        self.sync = Synchronizer(SynchronizerConfig(config.m))
        #: with ``[memory]`` on, a :class:`BoundedJoin` (windows of at most M tuples)
        self.join: MWayJoin = join if join is not None else make_join(
            config.join_config(), config.memory)
        self.stats = stats if stats is not None else EngineStats()
        self.step = JoinStep(config, self.join, self.slack, self.shedder, self.stats)
        self.clock = NEG_INF
        self.next_interval: int | None = None
        self.next_adapt: int | None = None
        self._metrics: list[dict[str, Any]] = []
        #: K changes only at boundaries: K-slack and the Synchronizer may run vectorized
        self._steady = isinstance(self.slack, SteadyK)
        self._observe_arrivals = (self.slack.observe_arrivals
                                  if isinstance(self.slack, ObservesRuns) else None)
        #: inside a call on the run path: released tuples go through the step as runs
        self._runs = False
        #: phase timer (ours, issue 28; None = off): :meth:`attach_profile`
        self.profile: PhaseProfile | None = None

    def attach_profile(self, profile: PhaseProfile | None) -> None:
        """Time the run path's phases on ``profile`` (None: stop timing)."""
        self.profile = profile
        self.step.profile = profile
        if isinstance(self.shedder, ReadsProfile):
            self.shedder.attach_profile(profile)

    @property
    def pairs_evaluated(self) -> int:
        """Pair evaluations the join actually ran (a diagnostic, not state; see
        :attr:`JoinStep.pairs_evaluated`)."""
        return self.step.pairs_evaluated

    # ------------------------------------------------------------------ input
    def process(self, event: Event) -> list[JoinResult]:
        """One arrival: advance the clock, K-slack, synchronize, join."""
        self._process_one(event)
        return self._drain_results()

    def process_many(self, events: Iterable[Event]) -> list[JoinResult]:
        """:meth:`process` for each event, results concatenated (built in one go)."""
        return self.process_rows(events).results()

    def process_rows(self, events: Iterable[Event]) -> ResultRows:
        """:meth:`process_many`'s results as columns, no :class:`JoinResult` built.

        Run path (ours): when K changes only at boundaries (:class:`SteadyK`), K-slack and
        the Synchronizer (Ji et al. Alg. 1) handle the events segment by segment with
        array operations and the join step takes what they release as runs — the same
        results, in the same order."""
        if not self._steady:
            for ev in events:
                self._process_one(ev)
            return self._drain_rows()
        self._runs = True
        try:
            self._process_segments(events if isinstance(events, Sequence) else list(events))
        finally:
            self._runs = False
        return self._drain_rows()

    def _process_one(self, event: Event) -> None:
        self._advance(event.arrival)
        ks = self.kslacks[event.stream]
        self.slack.observe_arrival(event.stream, event.ts, ks.delay_of(event.ts))
        _, released = ks.push(event, self.slack.current_k())
        self.stats.inputs += 1
        if released:
            self._to_join(released)

    def _process_segments(self, events: Sequence[Event]) -> None:
        """Every event as :meth:`_process_one` would, segment by segment.

        The cyclic garbage collector is paused meanwhile: the run path allocates plain
        tuples (buffer entries, results) by the thousand, and each collection would scan
        the caller's whole heap — the input events included — for cycles none of them
        can form."""
        n = len(events)
        if n == 0:
            return
        with gc_paused():
            arrivals = np.fromiter((e.arrival for e in events), np.int64, n)
            reach = np.maximum.accumulate(arrivals)
            i = 0
            while i < n:
                i = self._segment(events, arrivals, reach, i)

    def _segment(self, events: Sequence[Event], arrivals: Any, reach: Any, i: int) -> int:
        """The events from ``i`` up to the next adaptation boundary (L or Δ) through
        K-slack and the Synchronizer at once, K fixed; returns where the next one starts.
        Each released tuple joins at the clock of the arrival that released it."""
        n = len(events)
        if self.profile is not None:
            self.profile.lap("kslack_sync")
        self._advance(int(arrivals[i]))
        if self.profile is not None:
            self.profile.lap("adaptation")
        assert self.next_interval is not None and self.next_adapt is not None
        bound = min(self.next_interval, self.next_adapt)
        j = min(n, i + 1 + int(reach[i + 1 :].searchsorted(bound, "left")))
        seg_clock = np.maximum(reach[i:j], self.clock)
        self.clock = int(seg_clock[-1])
        part = events[i:j]
        streams = np.fromiter((e.stream for e in part), np.int64, j - i)
        ts = np.fromiter((e.ts for e in part), np.int64, j - i)
        seqs = np.fromiter((e.seq for e in part), np.int64, j - i)
        delays, released, at = kslack_run(self.kslacks, part, streams, ts, seqs,
                                          self.slack.current_k())
        if self._observe_arrivals is not None:
            self._observe_arrivals(streams, ts, delays)
        else:
            for s, t, d in zip(streams.tolist(), ts.tolist(), delays.tolist(), strict=True):
                self.slack.observe_arrival(s, t, d)
        self.stats.inputs += j - i
        if len(released):
            joined, step = sync_run(self.sync, released)
            if self.profile is not None:
                self.profile.lap("kslack_sync")
            self.step.run(joined, seg_clock[at[step]])
        elif self.profile is not None:
            self.profile.lap("kslack_sync")
        return j

    def _drain_results(self) -> list[JoinResult]:
        """The pending result rows as :class:`JoinResult` objects, in join order."""
        return self._drain_rows().results()

    def _drain_rows(self) -> ResultRows:
        """The pending result rows, in join order."""
        return ResultRows.of(self.config.streams, self.step.take_results())

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
        return self.flush_rows().results()

    def flush_rows(self) -> ResultRows:
        """:meth:`flush`'s results as columns."""
        self._runs = self._steady
        try:
            for ks in self.kslacks:
                self._to_join(ks.flush())
            if self._runs:
                self.step.run(self.sync.flush(), self.clock)
            else:
                for ev, delay in self.sync.flush():
                    self.step.one(ev, delay, self.clock)
        finally:
            self._runs = False
        return self._drain_rows()

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
        if self._runs:  # Alg. 1 and the join step over the whole release at once
            joined, _ = sync_run(self.sync, Released.of(tagged))
            self.step.run(joined, self.clock)
            return
        for item in tagged:
            for ev, delay in self.sync.push(item):
                self.step.one(ev, delay, self.clock)

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
            join: MWayJoin
            if config.memory.enabled:
                join = BoundedJoin.restore(config.join_config(), config.memory, snap["join"])
            else:
                join = MWayJoin.from_snapshot(config.join_config(), snap["join"])
            eng = cls(config, env, slack=slack, shedder=shedder, join=join,
                      stats=EngineStats(**snap["stats"]))
            eng.clock = int(snap["clock"])
            eng.next_interval = snap["next_interval"]
            eng.next_adapt = snap["next_adapt"]
            eng._metrics = list(snap["metrics"])
            if len(snap["kslacks"]) != config.m:
                raise OperatorStateError(
                    f"engine snapshot has {len(snap['kslacks'])} streams, config has {config.m}"
                )
            eng.kslacks = [
                KSlack.from_snapshot(KSlackConfig(i), s) for i, s in enumerate(snap["kslacks"])
            ]
            eng.sync = Synchronizer.from_snapshot(SynchronizerConfig(config.m), snap["sync"])
        except (KeyError, TypeError) as exc:
            raise OperatorStateError(f"cannot restore engine snapshot: {exc!r}") from exc
        return eng
