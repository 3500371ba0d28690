"""One join operator instance (one route key) as the Spark processor runs it — no Spark here.

The :class:`JoinInstance` wraps the operator :class:`~pipeline.operators.engine.Engine`
(Ji et al. Fig. 2: K-slack → Synchronizer → m-way join, GrubJoin shedding) with what a
keyed, checkpointed runtime needs: rebuild from pickled state bytes, take a micro-batch of
envelope rows as a pandas frame, emit result and metrics frames, and keep the ATR
ownership guard of Gu et al. §2 (a result is emitted only by the instance owning its
master tuple's segment, :meth:`pipeline.diffusion.routing.Router.owns_result`).

Plain Python + pandas + NumPy, so it is unit-tested against the oracle without Spark.
"""

from __future__ import annotations

import json
import math
import pickle
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipeline.core.errors import OperatorStateError
from pipeline.diffusion.routing import Router, RouterConfig
from pipeline.operators.config import EngineConfig
from pipeline.operators.engine import Engine
from pipeline.operators.events import Event, JoinResult
from pipeline.operators.hooks import PluginEnv
from pipeline.operators.validator import (
    Admission,
    InputValidator,
    Rejected,
    ValidatorConfig,
    engine_holds,
)
from pipeline.operators.virtual_cpu import WallBudget
from pipeline.runtime.members import MemberStore
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import Spec

#: columns of the processor's output (one schema, ``kind`` = result | metric)
OUTPUT_DDL = (
    "kind string, instance string, id string, result_time long, members string, "
    "emit_time long, time long, wall_time long, z double, harvest_fractions string, "
    "k_ms long, recall_target double, instant_recall_target double, "
    "estimated_recall double, measured_recall double, rate_in double, rate_out double, "
    "queue_drops long, state_size long, extra string, dl_key binary, dl_value binary, "
    "payload binary, dl_reason string, dl_topic string, dl_partition int, dl_offset long, "
    "dl_raw binary"
)
OUTPUT_COLUMNS = tuple(part.strip().split(" ")[0] for part in OUTPUT_DDL.split(","))
TICK_STREAM = -1  # routing liveness rows: not events, only "the query has input"
#: the wall budget's lag target, a share of the trigger interval: a micro-batch should end
#: before the next one is due, so its freshest input is at most one trigger old when it
#: does (a smaller share trades output for latency headroom)
LAG_TARGET_SHARE = 1.0
DEADLETTER_KEY = -1  # route key of rejected input rows: passed through as kind=deadletter
#: incremental state (ARCHITECTURE §3): a piece is (kind, stream, id) — a join window's
#: basic window (id = basic-window id) or a segment of the member store (id = arrival
#: counter of its first entry)
PieceKey = tuple[str, int, int]
WINDOW_PIECE = "window"
MEMBERS_PIECE = "members"
_METRIC_KEYS = ("time", "z", "k_ms", "instant_recall_target", "estimated_recall",
                "measured_recall", "queue_drops")


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
        )

    def member_store(self) -> MemberStore:
        """An empty store of the members' Kafka coordinates and payloads."""
        return MemberStore(self.engine.streams, self.engine.windows,
                           offset_ids=self.offset_ids, payload=self.payload,
                           separator=self.payload_separator)

    def env(self, wall_clock: Callable[[], float]) -> PluginEnv:
        """The plug-ins' environment: the instance's wall clock and the job's speed-up."""
        return PluginEnv(clock=wall_clock, speedup=self.speedup)


@dataclass(frozen=True)
class StateChanges:
    """One save of the incremental state: the pickled header (engine header, counters,
    member-store counters), the pickled pieces changed since the previous save, and the
    keys of the pieces to delete (expired basic windows, evicted member segments)."""

    header: bytes
    put: dict[PieceKey, bytes]
    removed: tuple[PieceKey, ...]

    @property
    def size(self) -> int:
        """Bytes of the header and the pieces written."""
        return len(self.header) + sum(len(b) for b in self.put.values())


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
        self._piece_bytes: dict[PieceKey, int] = {}
        #: judges each tuple against its stream's clock before K-slack; its state travels
        #: in ``meta["validator"]`` (small: the clocks' recent arrivals, held tuples)
        self.validator = (InputValidator.from_snapshot(config.validation,
                                                       self.meta.get("validator"))
                          if config.validation is not None else None)

    # ------------------------------------------------------------------ state
    def dump(self) -> bytes:
        """Pickled engine snapshot + counters (what the Spark state store keeps)."""
        blob = pickle.dumps({"engine": self.engine.snapshot(), "meta": self.meta,
                             "members": self.members.snapshot()},
                            protocol=pickle.HIGHEST_PROTOCOL)
        self.state_bytes = len(blob)
        return blob

    @classmethod
    def load(cls, config: InstanceConfig, route_key: int, blob: bytes,
             wall_clock: Callable[[], float]) -> JoinInstance:
        """Rebuild from :meth:`dump` bytes; :class:`OperatorStateError` if they are bad."""
        try:
            data = pickle.loads(blob)
            snap = data["engine"]
            meta = dict(data["meta"])
            members = config.member_store().restore(data.get("members"))
        except (pickle.UnpicklingError, EOFError, KeyError, TypeError) as exc:
            raise OperatorStateError(
                f"instance {route_key}: unreadable state blob of {len(blob)} bytes: {exc!r}"
            ) from exc
        engine = Engine.from_snapshot(config.engine, snap, config.env(wall_clock))
        return cls(config, route_key, wall_clock, engine=engine, meta=meta, members=members)

    def changes(self) -> StateChanges:
        """The incremental state written since the previous call (or the restore): the
        header, the basic windows changed by inserts, late inserts or evictions, the
        member-store entries added, and the keys of what expired. Marks everything
        persisted, so call it once per save (a save that is not committed must be
        followed by :meth:`from_pieces` of the committed state, never by this object)."""
        put: dict[PieceKey, bytes] = {}
        removed: list[PieceKey] = []
        for j, (changed, gone) in enumerate(self.engine.window_changes()):
            for bid, piece in changed.items():
                put[(WINDOW_PIECE, j, bid)] = _pickle(piece)
            removed += [(WINDOW_PIECE, j, bid) for bid in gone]
        members, segments, evicted = self.members.changes()
        for (j, first), segment in segments.items():
            put[(MEMBERS_PIECE, j, first)] = _pickle(segment)
        removed += [(MEMBERS_PIECE, j, first) for j, first in evicted]
        header = _pickle({"engine": self.engine.snapshot_header(), "meta": self.meta,
                          "members": members})
        for key, data in put.items():
            self._piece_bytes[key] = len(data)
        for key in removed:
            self._piece_bytes.pop(key, None)
        self.state_bytes = len(header) + sum(self._piece_bytes.values())
        return StateChanges(header, put, tuple(removed))

    @classmethod
    def from_pieces(cls, config: InstanceConfig, route_key: int, header: bytes,
                    pieces: Mapping[PieceKey, bytes],
                    wall_clock: Callable[[], float]) -> JoinInstance:
        """Rebuild from the latest :meth:`changes` header and every stored piece (the
        same instance as before that save); :class:`OperatorStateError` if they are bad."""
        try:
            data = pickle.loads(header)
            windows: list[list[dict[str, Any]]] = [[] for _ in range(config.engine.m)]
            segments: dict[tuple[int, int], dict[str, Any]] = {}
            for (kind, j, ident), blob in pieces.items():
                if kind == WINDOW_PIECE:
                    windows[j].append(pickle.loads(blob))
                elif kind == MEMBERS_PIECE:
                    segments[(j, ident)] = pickle.loads(blob)
                else:
                    raise OperatorStateError(f"unknown state piece {(kind, j, ident)!r}")
            snap = data["engine"]
            meta = dict(data["meta"])
            members = config.member_store().restore_pieces(data["members"], segments)
        except (pickle.UnpicklingError, EOFError, KeyError, TypeError, IndexError) as exc:
            raise OperatorStateError(
                f"instance {route_key}: unreadable state header of {len(header)} bytes "
                f"or pieces ({len(pieces)}): {exc!r}") from exc
        engine = Engine.from_pieces(config.engine, snap, windows, config.env(wall_clock))
        inst = cls(config, route_key, wall_clock, engine=engine, meta=meta, members=members)
        inst._piece_bytes = {piece: len(blob) for piece, blob in pieces.items()}
        inst.state_bytes = len(header) + sum(inst._piece_bytes.values())
        return inst

    # ------------------------------------------------------------------ input
    def events(self, frame: pd.DataFrame) -> list[Event]:
        """Envelope rows → events in arrival order (ties: stream, seq); ticks skipped."""
        rows = _sorted_rows(frame)
        if rows.empty:
            return []
        out = self._events_of(rows)
        self._remember(rows, out)
        return out

    def _events_of(self, rows: pd.DataFrame) -> list[Event]:
        """Sorted envelope rows → events (attributes: only what the predicate reads)."""
        if rows.empty:
            return []
        # only what the predicate reads (the engine never looks at other attributes)
        needed = set(self.config.engine.predicate.attributes)
        attrs = {name: rows[name].tolist() for name in self.config.attributes
                 if name in needed}
        for name, values in attrs.items():
            if values and isinstance(values[0], list):  # Arrow map → list of (key, value)
                attrs[name] = [dict(v) for v in values]
        out = []
        for i, (s, seq, ts, arr) in enumerate(zip(
                rows["stream_idx"].tolist(), rows["seq"].tolist(),
                rows["event_time"].tolist(), rows["arrival_time"].tolist(), strict=True)):
            out.append(Event(int(s), int(seq), int(ts), int(arr),
                             {name: attrs[name][i] for name in attrs}))
        return out

    def admit(self, frame: pd.DataFrame) -> tuple[list[Event], list[pd.DataFrame]]:
        """Envelope rows → the events the engine may take (arrival order) and the dead
        letters of the rejected ones (:mod:`pipeline.operators.validator`); exact
        duplicates are dropped. Without validation: every event, no dead letters."""
        rows = _sorted_rows(frame)
        events = self._events_of(rows)
        if self.validator is not None and "stream_idx" in frame.columns:
            ticks = frame.loc[frame["stream_idx"] == TICK_STREAM, "arrival_time"]
            if len(ticks):  # ATR over G > 1: this instance sees only its segments
                self.validator.observe_reference(int(ticks.max()))
        if self.validator is None:
            if events:
                self._remember(rows, events)
            return events, []
        adm = self.validator.admit(list(zip(events, range(len(events)), strict=True)),
                                   lambda evs: engine_holds(self.engine, evs))
        return self._admitted(rows, adm)

    def _admitted(self, rows: pd.DataFrame, adm: Admission
                  ) -> tuple[list[Event], list[pd.DataFrame]]:
        """Remember the accepted events, detach the held ones from this batch's rows,
        build the dead letters and store the validator's state in ``meta``."""
        assert self.validator is not None
        self.validator.held = [(ev, self._row_info(rows, info) if isinstance(info, int)
                                else info) for ev, info in self.validator.held]
        accepted = [ev for ev, _ in adm.accepted]
        self._remember_infos(rows, adm.accepted)
        dead = self._dead_letters(rows, adm.rejected)
        self.meta["validator"] = self.validator.snapshot()
        return accepted, [dead] if dead is not None else []

    @staticmethod
    def _row_info(rows: pd.DataFrame, i: int) -> dict[str, Any]:
        """What a held or rejected tuple needs later: key, coordinates, bytes, payload."""
        row = rows.iloc[i]

        def get(name: str) -> Any:
            value = row[name] if name in rows.columns else None
            if value is None or (isinstance(value, float) and math.isnan(value)):
                return None
            return value

        raw, key, pay = get("raw"), get("dl_key"), get("payload")
        return {"key": bytes(key) if key is not None else None,
                "partition": _opt_int(get("partition")), "offset": _opt_int(get("offset")),
                "raw": bytes(raw) if raw is not None else b"",
                "payload": bytes(pay) if pay is not None else None}

    def _remember_infos(self, rows: pd.DataFrame, items: list[tuple[Event, Any]]) -> None:
        """:meth:`_remember` for accepted events: this batch's rows by position, held ones
        from their detached info."""
        store = self.members
        if not store.keep or not items:
            return
        positions = [info for _, info in items if isinstance(info, int)]
        if len(positions) == len(items):
            self._remember(rows.iloc[positions], [ev for ev, _ in items])
            return
        for ev, info in items:
            if isinstance(info, int):
                info = self._row_info(rows, info)
            store.add(ev.stream, ev.seq, ev.ts, info["partition"], info["offset"],
                      info["payload"] if store.payload else None)

    def _dead_letters(self, rows: pd.DataFrame, rejected: list[Rejected]
                      ) -> pd.DataFrame | None:
        """``kind=deadletter`` rows of rejected tuples (encoded as ``dead_letter`` records
        in Spark SQL). With ATR a tuple reaches several instances; only the owner of its
        timestamp's segment writes its dead letter, so each is written once."""
        out = []
        atr = self.router.config.mode == "atr"
        for r in rejected:
            if atr and not self.router.owns(self.route_key, r.event.ts):
                continue
            info = self._row_info(rows, r.info) if isinstance(r.info, int) else r.info
            topics = self.config.topics
            out.append({"kind": "deadletter", "instance": str(self.route_key),
                        "dl_key": info["key"], "dl_reason": r.reason,
                        "dl_topic": topics[r.event.stream] if topics else "",
                        "dl_partition": info["partition"], "dl_offset": info["offset"],
                        "dl_raw": info["raw"]})
        self.meta["deadletters"] = int(self.meta.get("deadletters", 0)) + len(out)
        return _frame(out) if out else None

    def _remember(self, rows: pd.DataFrame, events: list[Event]) -> None:
        """The events' Kafka coordinates and payload bytes, for their results."""
        store = self.members
        if not store.keep:
            return
        n = len(events)
        parts = _column(rows, "partition", n)
        offsets = _column(rows, "offset", n)
        payloads = _column(rows, "payload", n) if store.payload else [None] * n
        for ev, part, off, pay in zip(events, parts, offsets, payloads, strict=True):
            store.add(ev.stream, ev.seq, ev.ts, _opt_int(part), _opt_int(off),
                      bytes(pay) if pay is not None else None)

    def process(self, frame: pd.DataFrame) -> list[pd.DataFrame]:
        """One micro-batch of this key's rows → result and metrics frames.

        With a wall budget (ARCHITECTURE §5), the batch's time outside the join and its lag —
        the age of its freshest input record (Kafka timestamp) once its outputs are
        built, over ``LAG_TARGET_SHARE × trigger`` — go to
        :meth:`~pipeline.operators.virtual_cpu.WallBudget.observe_batch` (ours)."""
        budget = self._wall_budget()
        start = self._wall()
        timed_before = budget.timed_total if budget is not None else 0.0
        events, dead = self.admit(frame)
        results = self.engine.process_many(events)
        out = self._output(results) + dead
        if budget is not None:
            end = self._wall()
            overhead = (end - start) - (budget.timed_total - timed_before)
            budget.observe_batch(overhead, self._lag_ratio(frame, end))
        return out

    def _wall_budget(self) -> WallBudget | None:
        budget = getattr(self.engine.shedder, "budget", None)
        return budget if isinstance(budget, WallBudget) else None

    def _lag_ratio(self, frame: pd.DataFrame, end_s: float) -> float | None:
        """Age of the batch's freshest input at ``end_s`` (wall seconds, epoch clock) over
        the lag target; None without Kafka timestamps."""
        if "kafka_ms" not in frame.columns:
            return None
        stamps = frame.loc[frame["stream_idx"] != TICK_STREAM, "kafka_ms"].dropna()
        if stamps.empty:
            return None
        age_ms = end_s * 1000.0 - float(stamps.max())
        target_ms = LAG_TARGET_SHARE * self.config.trigger_ms
        return max(0.0, age_ms) / target_ms if target_ms > 0 else None

    def flush(self) -> list[pd.DataFrame]:
        """Input went idle: release every buffer (Engine.flush) and emit what follows."""
        self.meta["flushes"] = int(self.meta.get("flushes", 0)) + 1
        dead: list[pd.DataFrame] = []
        results: list[JoinResult] = []
        if self.validator is not None and self.validator.held:
            adm = self.validator.flush(lambda evs: engine_holds(self.engine, evs))
            events, dead = self._admitted(_sorted_rows(pd.DataFrame()), adm)
            results = self.engine.process_many(events)
        return self._output(results + self.engine.flush()) + dead

    # ------------------------------------------------------------------ output
    def _owned(self, results: list[JoinResult]) -> list[JoinResult]:
        """Gu et al. §2 guard: keep results whose master member this instance owns."""
        if self.router.config.mode != "atr":
            return results
        master = self.router.config.master
        return [r for r in results if self.router.owns(self.route_key,
                                                       r.members[master].event_time)]

    def _output(self, results: list[JoinResult]) -> list[pd.DataFrame]:
        frames: list[pd.DataFrame] = []
        owned = self._owned(results)
        now = int(self._wall_ms())
        if owned:
            frame = result_frame(owned, str(self.route_key), now, self.members)
            if len(frame) < len(owned):  # a member's payload was not kept: never expected
                self.meta["payload_missing"] = int(self.meta.get("payload_missing", 0)) + (
                    len(owned) - len(frame))
            frames.append(frame)
            self.meta["emitted"] = int(self.meta.get("emitted", 0)) + len(frame)
        self.members.evict(int(self.engine.join.join_time))
        rows = self._metric_rows(now)
        if rows:
            frames.append(_frame(rows))
        return frames

    def _wall_ms(self) -> float:
        return self._wall() * 1000.0

    def state_size(self) -> int:
        """Tuples held in the join windows, K-slack buffers and the Synchronizer."""
        eng = self.engine
        return int(eng.join.state_size() + sum(len(k) for k in eng.kslacks) + len(eng.sync))

    def _memory_extra(self) -> dict[str, float]:
        """With ``[memory]`` on, for ``extra``: the evictions so far, ``window_state`` (tuples
        in the join windows, at most ``memory_budget``) and ``kslack_tuples`` (K-slack and
        Synchronizer, outside the bound); nothing when it is off."""
        mem = self.engine.memory_metrics()
        if mem is None:
            return {}
        return {key: float(mem[key])
                for key in ("evictions", "window_state", "memory_budget", "kslack_tuples")}

    def _metric_rows(self, wall_now: int) -> list[dict[str, Any]]:
        """``drain_metrics`` rows merged per stream time → ``operator_metrics`` fields.

        ``rate_in``/``rate_out`` are tuples/results per second of stream time since the
        previous drain (ARCHITECTURE §7); policy-specific numbers go to ``extra``."""
        merged: dict[int, dict[str, Any]] = {}
        for row in self.engine.drain_metrics():
            merged.setdefault(int(row["time"]), {}).update(row)
        out: list[dict[str, Any]] = []
        if not merged:
            return out
        # counters are only known per micro-batch: average them over the stream time
        # since the previous drain
        stats = self.engine.stats
        # counters and the engine clock (arrival time) both stand at the end of the batch
        last_t = self.meta.get("last_time")
        t_end = int(self.engine.clock)
        span_s = (t_end - last_t) / 1000.0 if last_t is not None and t_end > last_t else 0.0
        d_in = stats.inputs - int(self.meta.get("last_inputs", 0))
        d_out = stats.results - int(self.meta.get("last_results", 0))
        rate_in = d_in / span_s if span_s > 0 else 0.0
        rate_out = d_out / span_s if span_s > 0 else 0.0
        self.meta.update(last_time=t_end, last_inputs=stats.inputs, last_results=stats.results)
        memory = self._memory_extra()
        for t in sorted(merged):
            row = merged[t]
            fractions = row.get("harvest_fractions") or []
            flat = [float(v) for r in fractions for v in (r if isinstance(r, list) else [r])]
            extra = {k: float(v) for k, v in row.items()
                     if k not in _METRIC_KEYS and isinstance(v, int | float)
                     and not isinstance(v, bool) and math.isfinite(float(v))}
            extra.update(memory)
            if self.validator is not None:
                extra.update(self.validator.metrics())
            if self.state_bytes:
                extra["state_bytes"] = float(self.state_bytes)
            out.append({
                "kind": "metric", "instance": str(self.route_key),
                "time": t, "wall_time": wall_now,
                "z": float(row.get("z", 1.0)),
                "harvest_fractions": json.dumps(flat),
                "k_ms": int(row.get("k_ms", self.engine.slack.current_k())),
                "recall_target": float(self.config.engine.disorder.recall),
                "instant_recall_target": _opt_float(row.get("instant_recall_target")),
                "estimated_recall": _opt_float(row.get("estimated_recall")),
                "measured_recall": _opt_float(row.get("measured_recall")),
                "rate_in": rate_in,
                "rate_out": rate_out,
                "queue_drops": int(row.get("queue_drops", stats.dropped)),
                "state_size": self.state_size(),
                "extra": json.dumps(extra),
            })
        return out


def _sorted_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The event rows (ticks skipped) in arrival order (ties: stream, seq)."""
    if frame.empty or "stream_idx" not in frame.columns:
        return frame.iloc[0:0]
    rows = frame[frame["stream_idx"] != TICK_STREAM]
    if rows.empty:
        return rows
    return rows.sort_values(["arrival_time", "stream_idx", "seq"], kind="stable")


def _pickle(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _column(rows: pd.DataFrame, name: str, n: int) -> list[Any]:
    """A column as a list (``n`` Nones if the frame has none)."""
    return rows[name].tolist() if name in rows.columns else [None] * n


def _opt_int(value: Any) -> int | None:
    if value is None:
        return None
    f = float(value)
    return int(f) if math.isfinite(f) else None


def _opt_float(value: Any) -> float | None:
    if value is None:
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows (subsets of the output columns) → a frame with every output column."""
    frame = pd.DataFrame(rows)
    for col in OUTPUT_COLUMNS:
        if col not in frame.columns:
            frame[col] = None
    return frame[list(OUTPUT_COLUMNS)]


def dead_letter_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Rejected input rows (routed to :data:`DEADLETTER_KEY`) → ``kind=deadletter`` rows."""
    frame = _frame([{"kind": "deadletter"}] * len(rows))
    frame["dl_key"] = rows["dl_key"].to_numpy()
    frame["dl_value"] = rows["dl_value"].to_numpy()
    return frame


def result_frame(results: list[JoinResult], instance: str, emit_ms: int,
                 members: MemberStore | None = None) -> pd.DataFrame:
    """Join results → output rows (``members`` as JSON with the Kafka coordinates,
    decoded again in Spark SQL; ``payload``: the members' payload bytes). A result whose
    payload is incomplete is left out (the caller counts it)."""
    rows = []
    for r in results:
        payload = members.payload_of(r) if members is not None else None
        if members is not None and members.payload and payload is None:
            continue
        listed = members.members_json(r) if members is not None else r.to_json()["members"]
        rows.append({"kind": "result", "instance": instance, "id": r.id,
                     "result_time": r.result_time, "members": json.dumps(listed),
                     "emit_time": emit_ms, "payload": payload})
    return _frame(rows) if rows else _frame([]).iloc[0:0]
