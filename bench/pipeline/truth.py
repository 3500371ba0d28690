"""The exact results of one sweep input, held compactly: every result's id (32 bytes) and
its members' seqs (8 bytes per stream) in NumPy arrays sorted by id, instead of a Python
dict of lists — 40 B per result against ~1.6 kB, so a positions run at 3× capacity with
tens of millions of true results fits in memory. Read as a ``Mapping`` from result id to
its members' ``(stream, seq)``, with :meth:`TrueResults.completed` computing every
result's completion time at once."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from bench.kit.readback import MemberKey
from pipeline.operators.events import result_ids


class TrueResults(Mapping[str, list[MemberKey]]):
    """Result id → its members' ``(stream, seq)``, over sorted arrays (module docstring)."""

    def __init__(self, streams: Sequence[str], ids: NDArray[np.bytes_],
                 seqs: NDArray[np.int64]) -> None:
        order = np.argsort(ids, kind="stable")
        self.streams = tuple(streams)
        self.ids = ids[order]
        self.seqs = seqs.reshape(ids.shape[0], len(self.streams))[order]

    @classmethod
    def of_members(cls, streams: Sequence[str], seqs: NDArray[np.int64]) -> TrueResults:
        """The results whose members are the rows of ``seqs`` (ids by
        :func:`~pipeline.operators.events.result_ids`)."""
        ids = np.array(result_ids(streams, seqs), dtype="S32")
        return cls(streams, ids, np.asarray(seqs, np.int64))

    @classmethod
    def of_mapping(cls, truth: Mapping[str, Sequence[MemberKey]],
                   streams: Sequence[str] | None = None) -> TrueResults:
        """A mapping id → members as :class:`TrueResults` (members in ``streams`` order,
        by default the order of first appearance)."""
        if isinstance(truth, TrueResults):
            return truth
        names = list(streams or dict.fromkeys(s for keys in truth.values() for s, _ in keys))
        col = {s: i for i, s in enumerate(names)}
        seqs = np.full((len(truth), len(names)), -1, np.int64)
        for row, keys in enumerate(truth.values()):
            for s, q in keys:
                seqs[row, col[s]] = q
        ids = np.array([i.encode() for i in truth], dtype="S32")
        return cls(names, ids, seqs)

    def _find(self, rid: str) -> int | None:
        key = rid.encode()
        at = int(np.searchsorted(self.ids, key))
        return at if at < self.ids.shape[0] and self.ids[at] == key else None

    def __contains__(self, rid: object) -> bool:
        return isinstance(rid, str) and self._find(rid) is not None

    def __getitem__(self, rid: str) -> list[MemberKey]:
        at = self._find(rid)
        if at is None:
            raise KeyError(rid)
        return [(s, int(q)) for s, q in zip(self.streams, self.seqs[at].tolist(), strict=True)
                if q >= 0]

    def __iter__(self) -> Iterator[str]:
        return (i.decode() for i in self.ids.tolist())

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def completed(self, appended: Mapping[MemberKey, int]) -> NDArray[np.float64]:
        """Each result's completion (:func:`~bench.kit.readback.completed_at`: its latest
        member's append time, NaN when one member's is unknown), in id order."""
        done = np.full(len(self), -np.inf)
        for k, name in enumerate(self.streams):
            col = self.seqs[:, k]
            known = [(q, t) for (s, q), t in appended.items() if s == name]
            top = max(int(col.max(initial=-1)), max((q for q, _ in known), default=-1))
            table = np.full(top + 2, np.nan)  # index -1 (no member here): -inf below
            for q, t in known:
                table[q] = float(t)
            table[-1] = -np.inf
            done = np.maximum(done, table[col])  # NaN (unknown) wins
        done[np.isinf(done)] = np.nan
        return done
