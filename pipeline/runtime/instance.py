"""One join operator instance (one route key) as a keyed, checkpointed runtime runs it.

The :class:`JoinInstance` wraps the operator :class:`~pipeline.operators.engine.engine.Engine`
(Ji et al. Fig. 2: K-slack → Synchronizer → m-way join, GrubJoin shedding) with what a
keyed, checkpointed runtime needs: rebuild from pickled state bytes
(:mod:`pipeline.runtime.persistence`), take a micro-batch of envelope rows as a pandas
frame and emit result, metric and dead-letter frames (:mod:`pipeline.runtime.frames`,
:mod:`pipeline.runtime.operator_metrics`), and keep the ATR ownership guard of Gu et al.
§2 (a result is emitted only by the instance owning its master tuple's segment,
:meth:`pipeline.diffusion.routing.Router.owns_result`).

Plain Python + pandas + NumPy, so it is unit-tested against the oracle without Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipeline.core.gcpause import gc_paused
from pipeline.core.profile import PhaseProfile
from pipeline.diffusion.batches import BatchRouting
from pipeline.diffusion.routing import Router, RouterConfig
from pipeline.operators.config import EngineConfig
from pipeline.operators.contract import PluginEnv, ReadsProfile
from pipeline.operators.engine.engine import Engine
from pipeline.operators.events import Event, ResultRows
from pipeline.operators.validation.config import Admission, Rejected, ValidatorConfig
from pipeline.operators.validation.holds import engine_holds
from pipeline.operators.validation.validator import InputValidator
from pipeline.runtime.accounting import audit, buffered, due, open_ledger, reported, tally
from pipeline.runtime.frames import (
    TICK_STREAM,
    dead_letter_rows,
    events_of,
    output_frame,
    remember,
    result_frame,
    row_info,
    sorted_rows,
)
from pipeline.runtime.members import MemberStore
from pipeline.runtime.operator_metrics import (
    between_steps,
    memory_extra,
    metric_rows,
    profile_extra,
    state_size,
)
from pipeline.runtime.persistence import (
    PieceKey,
    PieceSizes,
    StateChanges,
    dump_blob,
    load_blob,
    load_pieces,
    state_changes,
)
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import Spec

__all__ = ["LAG_TARGET_SHARE", "InstanceConfig", "JoinInstance", "freshest_ms"]

#: the wall budget's lag target, a share of the trigger interval: a micro-batch should end
#: before the next one is due, so its freshest input is at most one trigger old when it
#: does (a smaller share trades output for latency headroom)
LAG_TARGET_SHARE = 1.0


@dataclass(frozen=True)
class InstanceConfig:
    """Frozen parameters shared by every instance of one job (pickled to the executors):
    the resolved engine config, routing, the input's attributes and the job facts an
    instance needs — the workers never parse the spec."""

    engine: EngineConfig
    router: RouterConfig
    attributes: tuple[str, ...]
    #: ``[job] trigger_ms``: the wall budget's lag target is a share of it
    trigger_ms: int = 1_000
    #: ``[job] speedup``: stream time per wall time of the input (the wall budget)
    speedup: float = 1.0
    #: results carry the members' payload bytes (envelope column ``payload``), joined by
    #: ``payload_separator`` (Avro: none; JSON: a comma)
    payload: bool = False
    payload_separator: bytes = b""
    #: ``seq = partition · 2^40 + offset`` (``[inputs] id = "offset"``): coordinates from seq
    offset_ids: bool = False
    #: input validation against stream time (far-future, late, duplicates; ``[disorder]``
    #: ``max_future_ms`` / ``max_late_ms``), None = off
    validation: ValidatorConfig | None = None
    #: the input topic of each stream (the dead letters of rejected tuples name it)
    topics: tuple[str, ...] = ()
    #: time each micro-batch's phases (:class:`~pipeline.core.profile.PhaseProfile`;
    #: the metrics rows' ``extra`` then carries ``profile_us_<phase>`` per admitted tuple)
    profile: bool = False

    @classmethod
    def from_spec(cls, spec: Spec, attributes: Iterable[str], *, payload: bool = False,
                  payload_separator: bytes = b"", offset_ids: bool = False,
                  topics: tuple[str, ...] = (), validate: bool = True) -> InstanceConfig:
        """From the job spec (``[job] budget`` applies, ARCHITECTURE §5); ``attributes`` are the
        input record's non-envelope fields, ``topics`` the input topic of each stream."""
        validation = ValidatorConfig(
            streams=tuple(spec.join.streams), max_future_ms=spec.disorder.max_future_ms,
            max_late_ms=spec.disorder.late_bound_ms(spec.join.windows)) if validate else None
        return cls(
            engine=resolve_engine(spec, budget=spec.job.budget),
            router=RouterConfig.from_spec(spec),
            attributes=tuple(attributes),
            trigger_ms=spec.job.trigger_ms,
            speedup=spec.job.speedup,
            payload=payload,
            payload_separator=payload_separator,
            offset_ids=offset_ids,
            validation=validation,
            topics=tuple(topics),
            profile=spec.job.profile,
        )

    def member_store(self) -> MemberStore:
        """An empty store of the members' Kafka coordinates and payloads."""
        return MemberStore(self.engine.streams, self.engine.windows,
                           offset_ids=self.offset_ids, payload=self.payload,
                           separator=self.payload_separator)

    def env(self, wall_clock: Callable[[], float]) -> PluginEnv:
        """The plug-ins' environment: the instance's wall clock and the job's speed-up."""
        return PluginEnv(clock=wall_clock, speedup=self.speedup)


class JoinInstance:
    """Runtime of one route key: engine + counters, (de)serialized as one state blob
    (:meth:`dump`/:meth:`load`) or incrementally (:meth:`changes`/:meth:`from_pieces`)."""

    def __init__(self, config: InstanceConfig, route_key: int,
                 wall_clock: Callable[[], float], engine: Engine | None = None,
                 meta: dict[str, Any] | None = None,
                 members: MemberStore | None = None) -> None:
        self.config = config
        self.members = members if members is not None else config.member_store()
        self.route_key = route_key
        self.router = Router(config.router)
        self._wall = wall_clock
        self.engine = engine if engine is not None else Engine(
            config.engine, config.env(wall_clock))
        self.meta: dict[str, Any] = meta if meta is not None else {
            "last_time": None, "last_inputs": 0, "last_results": 0, "emitted": 0,
            "flushes": 0,
        }
        #: bytes of the state as last saved (header + pieces, or the blob): the metrics'
        #: ``state_bytes`` (``harvest bench soak``); the size of each stored piece
        self.state_bytes = 0
        self._pieces = PieceSizes()
        #: judges each tuple against its stream's clock before K-slack; its state travels
        #: in ``meta["validator"]`` (small: the clocks' recent arrivals, held tuples)
        self.validator = (InputValidator.from_snapshot(config.validation,
                                                       self.meta.get("validator"))
                          if config.validation is not None else None)
        open_ledger(self.meta, len(self.validator.held) if self.validator is not None else 0)
        #: per-phase timing of each micro-batch (:meth:`attach_profile`; None = off)
        self.profile: PhaseProfile | None = None
        #: adaptive ATR: the running micro-batch's routing state, which owns the results
        #: and dead letters (set by the runtime before each batch; None = static ATR)
        self.batch_routing: BatchRouting | None = None
        shedder = self.engine.shedder
        if isinstance(shedder, ReadsProfile) and shedder.wants_profile():
            self.attach_profile(PhaseProfile(wall_clock))

    def attach_profile(self, profile: PhaseProfile | None) -> None:
        """Time the phases of every later micro-batch on ``profile`` (its injected timer;
        None: stop). The engine's batch path laps the join's phases on it too."""
        self.profile = profile
        self.engine.attach_profile(profile)

    def _lap(self, phase: str) -> None:
        if self.profile is not None:
            self.profile.lap(phase)

    # ------------------------------------------------------------------ state
    def dump(self) -> bytes:
        """Pickled engine snapshot + counters (what the Spark state store keeps)."""
        blob = dump_blob(self.engine, self.meta, self.members)
        self.state_bytes = len(blob)
        return blob

    @classmethod
    def load(cls, config: InstanceConfig, route_key: int, blob: bytes,
             wall_clock: Callable[[], float]) -> JoinInstance:
        """Rebuild from :meth:`dump` bytes; :class:`OperatorStateError` if they are bad."""
        engine, meta, members = load_blob(blob, route_key, config.engine,
                                          config.env(wall_clock), config.member_store())
        return cls(config, route_key, wall_clock, engine=engine, meta=meta, members=members)

    def changes(self) -> StateChanges:
        """The incremental state written since the previous call (or the restore),
        :func:`~pipeline.runtime.persistence.state_changes`. Marks everything persisted,
        so call it once per save (a save that is not committed must be followed by
        :meth:`from_pieces` of the committed state, never by this object)."""
        started = self.profile.timer() if self.profile is not None else 0.0
        changes = state_changes(self.engine, self.meta, self.members)
        self._pieces.apply(changes)
        self.state_bytes = len(changes.header) + self._pieces.total
        if self.profile is not None:
            self.profile.add("state", self.profile.timer() - started)
        return changes

    @classmethod
    def from_pieces(cls, config: InstanceConfig, route_key: int, header: bytes,
                    pieces: Mapping[PieceKey, bytes],
                    wall_clock: Callable[[], float]) -> JoinInstance:
        """Rebuild from the latest :meth:`changes` header and every stored piece (the
        same instance as before that save); :class:`OperatorStateError` if they are bad."""
        engine, meta, members = load_pieces(header, pieces, route_key, config.engine,
                                            config.env(wall_clock), config.member_store())
        inst = cls(config, route_key, wall_clock, engine=engine, meta=meta, members=members)
        inst._pieces = PieceSizes({piece: len(blob) for piece, blob in pieces.items()})
        inst.state_bytes = len(header) + inst._pieces.total
        return inst

    # ------------------------------------------------------------------ input
    def events(self, frame: pd.DataFrame) -> list[Event]:
        """Envelope rows → events in arrival order (ties: stream, seq); ticks skipped."""
        rows = sorted_rows(frame)
        if rows.empty:
            return []
        out = self._events_of(rows)
        remember(self.members, rows, out)
        return out

    def _events_of(self, rows: pd.DataFrame) -> list[Event]:
        """Sorted envelope rows → events (attributes: only what the predicate reads)."""
        return events_of(rows, self.config.attributes,
                         set(self.config.engine.predicate.attributes))

    def admit(self, frame: pd.DataFrame) -> tuple[list[Event], list[pd.DataFrame]]:
        """Envelope rows → the events the engine may take (arrival order) and the dead
        letters of the rejected ones (:mod:`pipeline.operators.validation.validator`); exact
        duplicates are dropped. Without validation: every event, no dead letters."""
        rows = sorted_rows(frame)
        tally(self.meta, records_in=len(rows))
        events = self._events_of(rows)
        self._lap("input")
        if self.validator is not None and "stream_idx" in frame.columns:
            ticks = frame.loc[frame["stream_idx"] == TICK_STREAM, "arrival_time"]
            if len(ticks):  # ATR over G > 1: this instance sees only its segments
                self.validator.observe_reference(int(ticks.max()))
        if self.validator is None:
            remember(self.members, rows, events)
            tally(self.meta, accepted=len(events))
            return events, []
        adm = self.validator.admit(list(zip(events, range(len(events)), strict=True)),
                                   lambda evs: engine_holds(self.engine, evs))
        self._lap("validation")
        return self._admitted(rows, adm)

    def _admitted(self, rows: pd.DataFrame, adm: Admission
                  ) -> tuple[list[Event], list[pd.DataFrame]]:
        """Remember the accepted events, detach the held ones from this batch's rows,
        build the dead letters and store the validator's state in ``meta``."""
        assert self.validator is not None
        self.validator.held = [(ev, row_info(rows, info) if isinstance(info, int) else info)
                               for ev, info in self.validator.held]
        accepted = [ev for ev, _ in adm.accepted]
        tally(self.meta, accepted=len(accepted), dead_lettered=len(adm.rejected),
              duplicates_dropped=adm.duplicates)
        self._remember_infos(rows, adm.accepted)
        dead = self._dead_letters(rows, adm.rejected)
        self.meta["validator"] = self.validator.snapshot()
        return accepted, [dead] if dead is not None else []

    def _remember_infos(self, rows: pd.DataFrame, items: list[tuple[Event, Any]]) -> None:
        """:func:`remember` for accepted events: this batch's rows by position (one slice
        of the frame), held ones from their detached info."""
        store = self.members
        if not store.keep or not items:
            return
        positions = [info for _, info in items if isinstance(info, int)]
        if len(positions) == len(items):
            if positions == list(range(len(rows))):  # all of them, in order: no copy
                remember(store, rows, [ev for ev, _ in items])
            else:
                remember(store, rows.iloc[positions], [ev for ev, _ in items])
            return
        for ev, info in items:
            if isinstance(info, int):
                info = row_info(rows, info)
            store.add(ev.stream, ev.seq, ev.ts, info["partition"], info["offset"],
                      info["payload"] if store.payload else None)

    def process(self, frame: pd.DataFrame) -> list[pd.DataFrame]:
        """One micro-batch of this key's rows → result and metrics frames.

        With a wall budget (ARCHITECTURE §5), the batch's freshest input record (Kafka
        timestamp) goes to :meth:`~pipeline.operators.contract.WallAccount.begin_batch`
        before the join runs, and the batch's time outside the join and its lag — that
        record's age once the outputs are built, over ``LAG_TARGET_SHARE × trigger`` — to
        :meth:`~pipeline.operators.contract.WallAccount.observe_batch` (ours).

        The cyclic garbage collector is paused meanwhile (as in the engine's batch path):
        a batch allocates events, dicts and tuples by the ten thousand, and each full
        collection would scan the whole heap — windows and member store included — for
        cycles none of them form."""
        with gc_paused():
            return self._process(frame)

    def _process(self, frame: pd.DataFrame) -> list[pd.DataFrame]:
        budget = self.engine.shedder.wall_budget()
        start = self._wall()
        timed_before = budget.timed_total if budget is not None else 0.0
        if budget is not None:
            budget.begin_batch(freshest_ms(frame), LAG_TARGET_SHARE * self.config.trigger_ms)
        prof = self.profile
        if prof is not None:
            prof.start()
            dropped = self.engine.stats.dropped
        events, dead = self.admit(frame)
        self._lap("input")  # the member store (remember)
        results = self.engine.process_rows(events)
        out = self._output(results) + dead
        if prof is not None:
            prof.batches += 1
            prof.tuples += len(events) - (self.engine.stats.dropped - dropped)
        if budget is not None:
            end = self._wall()
            overhead = (end - start) - (budget.timed_total - timed_before)
            budget.observe_batch(overhead, budget.batch_lag(end))
        return out

    def flush(self) -> list[pd.DataFrame]:
        """Input went idle: release every buffer (Engine.flush) and emit what follows."""
        self.meta["flushes"] = int(self.meta.get("flushes", 0)) + 1
        if self.profile is not None:  # the idle time since the last batch is no phase
            self.profile.start()
        dead: list[pd.DataFrame] = []
        results = ResultRows.of(self.config.engine.streams, [])
        if self.validator is not None and self.validator.held:
            adm = self.validator.flush(lambda evs: engine_holds(self.engine, evs))
            events, dead = self._admitted(sorted_rows(pd.DataFrame()), adm)
            results = self.engine.process_rows(events)
        return self._output(results.then(self.engine.flush_rows()), final=True) + dead

    # ------------------------------------------------------------------ output
    def _owned(self, results: ResultRows) -> ResultRows:
        """Gu et al. §2 guard: keep results whose master member this instance owns."""
        cfg = self.router.config
        if cfg.mode != "atr" or cfg.groups == 1 or not len(results):
            return results  # one instance owns every segment
        if self.batch_routing is not None:  # adaptive: the owner by the epoch log
            return results.take(self.batch_routing.owners(results.tss) == self.route_key)
        ts = results.tss[:, cfg.master]
        return results.take((ts // cfg.segment_ms) % cfg.groups == self.route_key)  # Router.owns

    def _output(self, results: ResultRows, final: bool = False) -> list[pd.DataFrame]:
        frames: list[pd.DataFrame] = []
        self._lap("results")  # the engine's drain of result rows
        owned = self._owned(results)
        now = int(self._wall_ms())
        if len(owned):
            out = result_frame(owned, str(self.route_key), now, self.members)
            if len(out) < len(owned):  # a member's payload was not kept: never expected
                self.meta["payload_missing"] = int(self.meta.get("payload_missing", 0)) + (
                    len(owned) - len(out))
            frames.append(out)
            self.meta["emitted"] = int(self.meta.get("emitted", 0)) + len(out)
        self._lap("results")
        self.members.evict(int(self.engine.join.join_time))
        rows = self._metric_rows(now, final)
        if rows:
            frames.append(output_frame(rows, len(self.config.engine.streams)))
        self._lap("output")
        return frames

    def _metric_rows(self, wall_now: int, final: bool = False) -> list[dict[str, Any]]:
        """The engine's drained metrics as ``operator_metrics`` rows, with the memory,
        validator, state-size, phase-profile and record-accounting counters in ``extra``
        (:mod:`pipeline.runtime.accounting`, checked here). A micro-batch that changed
        the accounting, and the flush, get a row even when the engine drained none
        (:func:`~pipeline.runtime.operator_metrics.between_steps`)."""
        waiting = len(self.validator.held) if self.validator is not None else 0
        counts = audit(self.meta, waiting, buffered(self.engine), instance=str(self.route_key))
        drained = between_steps(self.engine.drain_metrics(), self.meta, int(self.engine.clock),
                                final or due(self.meta))
        if not drained:
            return []
        reported(self.meta)
        extra = memory_extra(self.engine)
        if self.validator is not None:
            extra.update(self.validator.metrics())
        if self.state_bytes:
            extra["state_bytes"] = float(self.state_bytes)
        if self.profile is not None:
            extra.update(profile_extra(self.profile))
        extra.update(counts)
        return metric_rows(drained, self.engine, self.meta, instance=str(self.route_key),
                           wall_now=wall_now,
                           recall_target=float(self.config.engine.disorder.recall),
                           extra=extra)

    def _dead_letters(self, rows: pd.DataFrame, rejected: list[Rejected]
                      ) -> pd.DataFrame | None:
        """``kind=deadletter`` rows of the tuples this instance rejected. With ATR a tuple
        reaches several instances; only the owner of its timestamp's segment writes its
        dead letter, so each is written once."""
        router = self.router
        routing = self.batch_routing
        if routing is not None and router.config.groups > 1:
            rejected = [r for r in rejected
                        if routing.dead_letter_key(r.event.stream, r.event.ts) == self.route_key]
        elif router.config.mode == "atr":
            rejected = [r for r in rejected if router.owns(self.route_key, r.event.ts)]
        self.meta["deadletters"] = int(self.meta.get("deadletters", 0)) + len(rejected)
        return dead_letter_rows(rows, rejected, str(self.route_key), self.config.topics,
                                len(self.config.engine.streams))

    def _wall_ms(self) -> float:
        return self._wall() * 1000.0

    def usage(self) -> list[float]:
        """What Eq. 1 weighs (Gu et al. §2.2): cost units so far (the engine's
        ``stats.cost``), tuples held, tuples received (liveness ticks aside); and the join
        time (no result of this instance forms below it any more)."""
        received = self.meta.get("records", {}).get("records_in", 0)
        return [float(self.engine.stats.cost), float(self.state_size()), float(received),
                float(self.engine.join.join_time)]

    def state_size(self) -> int:
        """Tuples held in the join windows, K-slack buffers and the Synchronizer."""
        return state_size(self.engine)


def freshest_ms(frame: pd.DataFrame) -> float | None:
    """The batch's freshest input record's Kafka timestamp (epoch ms; liveness ticks
    aside); None without Kafka timestamps."""
    if "kafka_ms" not in frame.columns:
        return None
    stamps = frame.loc[frame["stream_idx"] != TICK_STREAM, "kafka_ms"].dropna()
    return None if stamps.empty else float(stamps.max())

