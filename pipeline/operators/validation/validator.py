"""Input validation against stream time, before K-slack: far-future and too-late tuples,
duplicates (ours; ARCHITECTURE §7, "bad records are never lost").

A tuple that decoded fine can still be hostile to the join. One stamped 50 years ahead
would advance its K-slack buffer's local time, the Synchronizer and ⋈T, so every valid
tuple after it is late; several of them join among themselves. One stamped an hour back
can join nothing (its window partners expired long ago) and, under Max-K-slack, would
raise K to an hour. The validator judges each tuple against the *stream's* clock, never
the wall clock (harvest's own streams start at time 0; a backlog is replayed minutes
after it was written):

* **clock**: per stream, the median arrival time of its last ``clock_size`` *accepted*
  tuples. No rejected tuple moves it, so no burst of bad tuples can, even where an
  instance sees a stream only now and then (aligned tuple routing sends an instance the
  tuples of its own segments; in between, the far-future tuples whose segment it owns
  would be all it sees). A real jump of the stream's time (a producer that was down for
  an hour) is taken once ``clock_size`` tuples of the stream in a row were ahead and
  agree among themselves (within ``max_future_ms``): those go to the dead letters, the
  ones after them are judged against the new clock (``jumps`` counts it). The run must
  have begun in an earlier call than the one that completes it: the runtime sorts each
  micro-batch by arrival, so the far-future tuples of one batch form a run at its end
  however they were interleaved with valid ones; a real jump goes on into the next
  batch, a hostile burst is broken there by the stream's valid tuples. A run more than
  ``max_future_ms`` ahead of the reference (below) is never a jump: the reference
  follows a real jump of the input's time by itself. Until a stream
  has ``quorum`` tuples it borrows the clock of all streams together (the median of the
  last ``clock_size`` accepted arrivals of any stream). With aligned tuple routing the
  runtime also passes the stream time the routing tasks' batches vouch for
  (:meth:`observe_reference`).
* **bootstrap**: the first tuples of an instance are *held* until ``quorum`` of them
  have arrived; then the clock is their median and each held tuple is judged against
  it, in arrival order. So a far-future tuple cannot be the one that defines time, even
  as the very first record. With a reference, a tuple far ahead of it is rejected instead
  of held, so even a majority of them cannot. While fewer than ``quorum`` of the held
  tuples were accepted, the warm-up's median stands in for the missing ones. At the end
  of input (:meth:`InputValidator.flush`) fewer than ``quorum`` held tuples are judged
  against their own median.
* **future**: arrival or event time more than ``max_future_ms`` ahead of the reference
  clock — the largest clock of any stream, so a slow stream whose median lags is judged
  by the others — is rejected (reason ``future: ...``).
* **late**: event time more than ``max_late_ms`` behind the stream's own clock is
  rejected (``late: ...``): it could join nothing, and it goes to the dead letters
  instead of being dropped silently. The default bound (:func:`default_max_late_ms`) is
  the largest window plus the largest K the disorder policy may choose.
* **duplicates**: a tuple whose (stream, seq) is already held — in this batch (the
  warm-up's accepted tuples included), or by the engine (K-slack, Synchronizer, join
  windows; :func:`engine_holds`) — with the same event time and attributes is an exact
  duplicate (a producer retrying outside idempotence): dropped and counted, never joined
  twice. The same (stream, seq) with a different event time or attributes is rejected
  (``duplicate seq: ...``). The engine holds every tuple that can still join, so the
  check needs no state of its own; a duplicate of a tuple the engine no longer holds
  joins nothing it joined (the original expired, was shed or evicted) or is rejected as
  late.

Rejected tuples travel on with an opaque ``info`` (the runtime's record coordinates and
bytes) so the runtime can write them to the dead-letter topic.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipeline.core.errors import OperatorStateError
from pipeline.operators.events import Event, event_from_state, event_state
from pipeline.operators.validation import batch
from pipeline.operators.validation.clock import StreamTime
from pipeline.operators.validation.config import (
    Admission,
    Held,
    Lookup,
    Rejected,
    ValidatorConfig,
)
from pipeline.operators.validation.holds import same_attrs

__all__ = ["InputValidator"]


def _with_accepted(lookup: Lookup | None, accepted: Sequence[tuple[Event, Any]]
                   ) -> Lookup | None:
    """``lookup`` and the tuples this call accepted already (the bootstrap's): they reach
    the engine only after the call, so a duplicate of one later in the call is found here."""
    if not accepted:
        return lookup
    mine = {(ev.stream, ev.seq): (ev.ts, ev.attrs) for ev, _ in accepted}

    def both(events: Sequence[Event]) -> Held:
        found = dict(lookup(events)) if lookup is not None else {}
        for ev in events:
            key = (ev.stream, ev.seq)
            if key in mine:
                found.setdefault(key, mine[key])
        return found

    return both


class InputValidator:
    """The per-instance validator (see the module docstring). State: the clocks' recent
    arrivals, the held bootstrap tuples and the counters; :meth:`snapshot` is small."""

    def __init__(self, config: ValidatorConfig) -> None:
        self.config = config
        n = config.clock_size
        #: the clocks (:mod:`~pipeline.operators.validation.clock`)
        self.time = StreamTime(len(config.streams), n, config.quorum)
        self.held: list[tuple[Event, Any]] = []
        #: per stream, the arrivals of the latest run of future rejections (a jump of the
        #: stream's time once it is ``clock_size`` long)
        self.pending: list[deque[int]] = [deque(maxlen=n) for _ in config.streams]
        #: per stream, whether its pending run began in the current call (not a jump yet)
        self._fresh = [False] * len(config.streams)
        self.bootstrapped = False
        self.counts: dict[str, int] = {"duplicates": 0, "future": 0, "late": 0,
                                       "conflicts": 0, "jumps": 0}

    # ------------------------------------------------------------------ clocks
    @property
    def _medians(self) -> list[int | None]:
        """Each stream clock's cached median (the state the batch path must reproduce)."""
        return [c.cached for c in self.time.streams]

    @property
    def _stale(self) -> list[int]:
        return [c.stale for c in self.time.streams]

    @property
    def _all_median(self) -> int | None:
        return self.time.common.cached

    @property
    def _all_stale(self) -> int:
        return self.time.common.stale

    def _observe(self, ev: Event) -> None:
        self.time.observe(ev.stream, ev.arrival)

    def _reset_clocks(self, items: Iterable[tuple[Event, Any]]) -> None:
        """The clocks from ``items`` only (after the bootstrap: its accepted tuples). While
        those are fewer than the quorum, the common clock counts the bootstrap's median
        for each one missing: with some held tuples rejected, the accepted ones alone
        would leave no clock, and the tuples after them would pass unjudged."""
        median = self.time.common_clock()
        self.time.clear()
        for ev, _ in items:
            self._observe(ev)
        common = self.time.common
        if median is not None:
            for _ in range(self.config.quorum - len(common.ring)):
                common.observe(median)

    def _future(self, ev: Event) -> None:
        """A tuple of ``ev``'s stream was rejected as future. ``clock_size`` of them in a
        row (no accepted tuple of the stream between them) that agree among themselves
        (within ``max_future_ms``), in a run that began in an earlier call and that the
        reference does not contradict, are the stream's new time: its clock jumps to them."""
        pending = self.pending[ev.stream]
        if not pending:
            self._fresh[ev.stream] = True
        pending.append(ev.arrival)
        if len(pending) < self.config.clock_size or self._fresh[ev.stream]:
            return
        bound = self.config.max_future_ms
        if max(pending) - min(pending) > bound:
            return
        reference = self.time.reference
        if reference is not None and min(pending) > reference + bound:
            return
        self.counts["jumps"] += 1
        for t in pending:
            self.time.observe(ev.stream, t)
        self.time.streams[ev.stream].invalidate()
        self.time.common.invalidate()
        pending.clear()

    def clocks(self) -> tuple[list[int | None], int | None]:
        """(each stream's clock, the common clock)."""
        time = self.time
        return ([time.stream_clock(i) for i in range(len(time.streams))],
                time.common_clock())

    # ------------------------------------------------------------------ judging
    def _ahead(self, ev: Event, ref: int) -> str | None:
        """The ``future`` reason if ``ev``'s arrival or event time is more than
        ``max_future_ms`` ahead of ``ref`` (counted), else None."""
        cfg = self.config
        for what, t in (("arrival_time", ev.arrival), ("event_time", ev.ts)):
            if t > ref + cfg.max_future_ms:
                self.counts["future"] += 1
                return (f"future: {what} {t} is {t - ref} ms ahead of the stream clock {ref} "
                        f"(stream {cfg.streams[ev.stream]}; disorder.max_future_ms = "
                        f"{cfg.max_future_ms})")
        return None

    def _verdict(self, ev: Event) -> tuple[str | None, bool]:
        """Why ``ev`` is rejected by the clock rules (None: it is not), and whether it is
        ahead of the clock."""
        cfg, time = self.config, self.time
        common = time.common_clock()
        own = time.stream_clock(ev.stream)
        known = [c for c in (time.stream_clock(i) for i in range(len(time.streams)))
                 if c is not None]
        if common is not None:
            known.append(common)
        if time.reference is not None and known:
            known.append(time.reference)
        if not known:
            return None, False
        ref = max(known)
        name = cfg.streams[ev.stream]
        ahead = self._ahead(ev, ref)
        if ahead is not None:
            return ahead, True
        mine = own if own is not None else (common if common is not None else ref)
        if ev.ts < mine - cfg.max_late_ms:
            self.counts["late"] += 1
            return (f"late: event_time {ev.ts} is {mine - ev.ts} ms behind stream {name}'s "
                    f"clock {mine} (disorder.max_late_ms = {cfg.max_late_ms}); it can join "
                    "nothing"), False
        return None, False

    def _duplicate(self, ev: Event, seen_here: dict[tuple[int, int], tuple[int, Any]],
                   held: Held) -> tuple[bool, str | None]:
        """(exact duplicate?, conflict reason) against this call's tuples and the engine."""
        key = (ev.stream, ev.seq)
        seen = seen_here.get(key)
        if seen is None:
            seen = held.get(key)
        if seen is None:
            return False, None
        ts, attrs = seen
        if ts == ev.ts and (attrs is None or same_attrs(attrs, ev.attrs)):
            return True, None
        self.counts["conflicts"] += 1
        name = self.config.streams[ev.stream]
        what = (f"event_time {ts}, now {ev.ts}" if ts != ev.ts
                else "the same event_time and other attributes")
        return False, (f"duplicate seq: ({name}, {ev.seq}) was seen before with {what}; "
                       "the first one is kept")

    def admit(self, items: Sequence[tuple[Event, Any]], lookup: Lookup | None = None
              ) -> Admission:
        """Judge ``items`` (arrival order) after any held ones; ``lookup`` gives the
        engine's copies of (stream, seq) keys (duplicate check)."""
        out = Admission()
        rest = items
        self._fresh = [False] * len(self.pending)  # the runs still open began earlier
        if not self.bootstrapped:
            rest = items[self._hold(items, out):]
            if len(self.held) < self.config.quorum:
                return out
            todo, self.held = self.held, []
            self.bootstrapped = True
            self._judge(todo, lookup, out, bootstrap=True)
        if rest:
            self._judge(rest, _with_accepted(lookup, out.accepted), out, bootstrap=False)
        return out

    def _hold(self, items: Sequence[tuple[Event, Any]], out: Admission) -> int:
        """The warm-up: hold ``items`` until the quorum; how many it took. With a
        reference, one more than ``max_future_ms`` ahead of it is rejected as future at
        once: held, tuples like it could be most of the warm-up and its median theirs
        (with aligned tuple routing an instance may see far-future copies before any
        valid tuple of its own)."""
        taken = 0
        for ev, info in items:
            if len(self.held) >= self.config.quorum:
                break
            taken += 1
            ref = self.time.reference
            reason = self._ahead(ev, ref) if ref is not None else None
            if reason is not None:
                out.rejected.append(Rejected(ev, info, reason))
                continue
            self._observe(ev)
            self.held.append((ev, info))
        return taken

    def flush(self, lookup: Lookup | None = None) -> Admission:
        """End of input: judge the held tuples against their own median."""
        out = Admission()
        if self.held:
            todo, self.held = self.held, []
            self.bootstrapped = True
            self.time.quorum = 1  # the end of input takes whatever is there
            try:
                self._judge(todo, lookup, out, bootstrap=True)
            finally:
                self.time.quorum = self.config.quorum
        return out

    def _judge(self, items: Sequence[tuple[Event, Any]], lookup: Lookup | None,
               out: Admission, *, bootstrap: bool) -> None:
        """Judge ``items`` in order. The clocks follow the accepted tuples only (so a
        burst of bad ones cannot become the majority of an instance that sees a stream
        only now and then, as with aligned tuple routing); the bootstrap's held tuples
        were observed to define the first clock, which then keeps the accepted ones."""
        held: Held = lookup([ev for ev, _ in items]) if lookup is not None and items else {}
        if not bootstrap and len(items) >= batch.MIN_BATCH:
            batch.judge_batch(  # the same verdicts and state, as arrays
                self.time, self.pending, self.config, items, held, out,
                lambda j, seen: self._judge_one(items[j], held, seen, out, False))
            return
        seen: dict[tuple[int, int], tuple[int, Any]] = {}
        first = len(out.accepted)
        for item in items:
            self._judge_one(item, held, seen, out, bootstrap)
        if bootstrap:
            self._reset_clocks(out.accepted[first:])

    def _judge_one(self, item: tuple[Event, Any], held: Held,
                   seen: dict[tuple[int, int], tuple[int, Any]], out: Admission,
                   bootstrap: bool) -> None:
        """One tuple of :meth:`_judge` (``seen``: this call's accepted tuples)."""
        ev, info = item
        reason, future = self._verdict(ev)
        if reason is None:
            dup, reason = self._duplicate(ev, seen, held)
            if dup:
                out.duplicates += 1
                self.counts["duplicates"] += 1
                return
        if reason is not None:
            out.rejected.append(Rejected(ev, info, reason))
            if future and not bootstrap:
                self._future(ev)
            return
        seen[(ev.stream, ev.seq)] = (ev.ts, ev.attrs)
        out.accepted.append((ev, info))
        if not bootstrap:
            self._observe(ev)
            self.pending[ev.stream].clear()

    def observe_reference(self, arrival_ms: int) -> None:
        """Stream time seen elsewhere: with aligned tuple routing an instance gets the
        tuples of its own segments only (G − 1 segments' worth of gap between them), so
        the reference of a routing task's whole batch (:func:`~pipeline.operators.
        validation.clock.batch_reference`, the upper edge of its bulk) keeps its future
        bound current. Quantiles of a batch: no single tuple moves it."""
        self.time.reference = int(arrival_ms)

    def metrics(self) -> dict[str, float]:
        """Counters for the metrics' ``extra`` (cumulative) and the tuples held."""
        out = {f"validator_{k}": float(v) for k, v in self.counts.items()}
        out["validator_held"] = float(len(self.held))
        return out

    # ------------------------------------------------------------------ state
    def snapshot(self) -> dict[str, Any]:
        """Plain data (the held tuples' ``info`` must be picklable)."""
        return {
            "rings": [list(c.ring) for c in self.time.streams],
            "all": list(self.time.common.ring),
            "held": [(event_state(ev), info) for ev, info in self.held],
            "pending": [list(p) for p in self.pending],
            "bootstrapped": self.bootstrapped,
            "counts": dict(self.counts),
            "reference": self.time.reference,
        }

    @classmethod
    def from_snapshot(cls, config: ValidatorConfig, snap: Mapping[str, Any] | None
                      ) -> InputValidator:
        """Inverse of :meth:`snapshot` (None: a new validator)."""
        v = cls(config)
        if snap is None:
            return v
        try:
            for clock, values in zip(v.time.streams, snap["rings"], strict=True):
                clock.ring.extend(int(t) for t in values)
            v.time.common.ring.extend(int(t) for t in snap["all"])
            v.held = [(event_from_state(ev), info) for ev, info in snap["held"]]
            for pending, values in zip(v.pending, snap.get("pending", []), strict=False):
                pending.extend(int(t) for t in values)
            v.bootstrapped = bool(snap["bootstrapped"])
            v.counts.update({str(k): int(n) for k, n in snap["counts"].items()})
            ref = snap.get("reference")
            v.time.reference = int(ref) if ref is not None else None
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"cannot restore the validator: {exc!r}") from exc
        return v

