"""The m-way join with memory-bounded windows (``[memory]`` on).

:class:`BoundedWindow` is a :class:`StreamWindow` whose ``insert`` asks the memory policy
first: MWayJoin's Alg. 2 inserts a tuple right after its probe (or, late, without one),
so "probe first, then compete for admission" (Das et al. §2.3) needs no change to the
join itself. :class:`BoundedJoin` also feeds the policy every arrival (value statistics)
and every probe's results (lagprob's match lags) and snapshots its state.
"""

from __future__ import annotations

from typing import Any

from pipeline.core.errors import OperatorStateError
from pipeline.operators.config import MemoryConfig
from pipeline.operators.join.config import JoinConfig, JoinOutput, Outcome
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.join.plan import ProbePlan
from pipeline.operators.join.predicates import Predicate
from pipeline.operators.join.windows import StreamWindow
from pipeline.operators.memory.bound import BoundedMemory
from pipeline.operators.memory.policies import build_memory, restore_memory


class BoundedWindow(StreamWindow):
    """One stream's window; a tuple is stored only if the memory policy admits it."""

    __slots__ = ("owner", "stream")

    def __init__(self, window_ms: int, b: int, predicate: Predicate, owner: BoundedJoin,
                 stream: int) -> None:
        super().__init__(window_ms, b, predicate)
        self.owner = owner
        self.stream = stream

    def insert(self, ts: int, seq: int, enc: Any) -> None:
        join = self.owner
        if join.memory.admit(join.windows, self.stream, ts, seq, enc, join.join_time):
            super().insert(ts, seq, enc)


class BoundedJoin(MWayJoin):
    """:class:`MWayJoin` whose windows hold at most the policy's budget of tuples."""

    def __init__(self, config: JoinConfig, memory: BoundedMemory) -> None:
        super().__init__(config)
        self.memory = memory
        self.windows = [
            BoundedWindow(w, config.basic_window_ms, config.predicate, self, i)
            for i, w in enumerate(config.windows)
        ]

    def process(self, stream: int, ts: int, seq: int, enc: Any,
                plan: ProbePlan | None = None) -> JoinOutput:
        self.memory.observe_arrival(stream, ts, enc)
        out = super().process(stream, ts, seq, enc, plan)
        if out.outcome is Outcome.PROBED and self.memory.needs_probes:
            self.memory.observe_probe(stream, ts, out.tss)
        return out

    def insert(self, stream: int, ts: int, seq: int, enc: Any) -> None:
        """Warm-up insert: counted by the statistics, then admitted like any tuple."""
        self.memory.observe_arrival(stream, ts, enc)
        super().insert(stream, ts, seq, enc)

    def snapshot_header(self) -> dict[str, Any]:
        """The plain join's header plus the memory policy (also in :meth:`snapshot`)."""
        return {**super().snapshot_header(), "memory": self.memory.snapshot()}

    @classmethod
    def restore(cls, config: JoinConfig, memory: MemoryConfig,
                snap: dict[str, Any]) -> BoundedJoin:
        """Inverse of :meth:`snapshot` (the policy class comes from ``memory.mode``)."""
        policy = restore_memory(memory, config.windows, config.predicate, snap.get("memory"))
        if policy is None:
            raise OperatorStateError("memory: a bounded join needs a mode other than 'off'")
        plain = MWayJoin.from_snapshot(config, snap)  # validates the join's part
        join = cls(config, policy)
        for win, ws in zip(join.windows, snap["windows"], strict=True):
            win.restore(ws)
        join.join_time = plain.join_time
        join.sel_matches = plain.sel_matches
        join.sel_trials = plain.sel_trials
        join.probes = plain.probes
        return join


def make_join(config: JoinConfig, memory: MemoryConfig | None = None) -> MWayJoin:
    """The plain join (``memory`` off or None) or a bounded one."""
    policy = None if memory is None else build_memory(memory, config.windows, config.predicate)
    return MWayJoin(config) if policy is None else BoundedJoin(config, policy)
