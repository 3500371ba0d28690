"""The join instance's state as bytes: one pickled blob, or a header and pieces.

A blob holds ``{"engine": Engine.snapshot(), "meta": counters, "members":
MemberStore.snapshot()}``. The incremental form (ARCHITECTURE §3) splits it: a small
header (``Engine.snapshot_header()``, the counters and the member store's counters) and
*pieces* keyed ``(kind, stream, id)`` — a join window's basic window (id = basic-window
id) or a segment of the member store (id = arrival counter of its first entry) — so a
save writes the pieces changed since the previous one and deletes the expired ones, and
what it writes follows the batch, not the window's content.

Both are plain data pickled with the highest protocol: no class of this package is in
the bytes, so a state written before a module moved restores after it.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.errors import OperatorStateError
from pipeline.operators.config import EngineConfig
from pipeline.operators.contract import PluginEnv
from pipeline.operators.engine.engine import Engine
from pipeline.runtime.members import MemberStore

__all__ = ["MEMBERS_PIECE", "WINDOW_PIECE", "PieceKey", "PieceSizes", "StateChanges",
           "dump_blob", "load_blob", "load_pieces", "state_changes"]

#: a piece of the incremental state: (kind, stream, id)
PieceKey = tuple[str, int, int]
WINDOW_PIECE = "window"
MEMBERS_PIECE = "members"


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


@dataclass
class PieceSizes:
    """The size of each stored piece: what the saves so far wrote and did not delete."""

    sizes: dict[PieceKey, int] = field(default_factory=dict)

    def apply(self, changes: StateChanges) -> None:
        """Account for one save."""
        for key, data in changes.put.items():
            self.sizes[key] = len(data)
        for key in changes.removed:
            self.sizes.pop(key, None)

    @property
    def total(self) -> int:
        """Bytes of every stored piece."""
        return sum(self.sizes.values())


def _pickle(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def dump_blob(engine: Engine, meta: dict[str, Any], members: MemberStore) -> bytes:
    """The whole state as one pickled blob."""
    return _pickle({"engine": engine.snapshot(), "meta": meta, "members": members.snapshot()})


def load_blob(blob: bytes, route_key: int, config: EngineConfig, env: PluginEnv,
              store: MemberStore) -> tuple[Engine, dict[str, Any], MemberStore]:
    """The engine, counters and member store (restored into the empty ``store``) of a
    :func:`dump_blob`; :class:`OperatorStateError` if the bytes are bad."""
    try:
        data = pickle.loads(blob)
        snap = data["engine"]
        meta = dict(data["meta"])
        members = store.restore(data.get("members"))
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError) as exc:
        raise OperatorStateError(
            f"instance {route_key}: unreadable state blob of {len(blob)} bytes: {exc!r}"
        ) from exc
    return Engine.from_snapshot(config, snap, env), meta, members


def state_changes(engine: Engine, meta: dict[str, Any], members: MemberStore
                  ) -> StateChanges:
    """The incremental state written since the previous call (or the restore): the
    header, the basic windows changed by inserts, late inserts or evictions, the
    member-store entries added, and the keys of what expired. Marks everything
    persisted in ``engine`` and ``members``."""
    put: dict[PieceKey, bytes] = {}
    removed: list[PieceKey] = []
    for j, (changed, gone) in enumerate(engine.window_changes()):
        for bid, piece in changed.items():
            put[(WINDOW_PIECE, j, bid)] = _pickle(piece)
        removed += [(WINDOW_PIECE, j, bid) for bid in gone]
    counters, segments, evicted = members.changes()
    for (j, first), segment in segments.items():
        put[(MEMBERS_PIECE, j, first)] = _pickle(segment)
    removed += [(MEMBERS_PIECE, j, first) for j, first in evicted]
    header = _pickle({"engine": engine.snapshot_header(), "meta": meta, "members": counters})
    return StateChanges(header, put, tuple(removed))


def load_pieces(header: bytes, pieces: Mapping[PieceKey, bytes], route_key: int,
                config: EngineConfig, env: PluginEnv, store: MemberStore
                ) -> tuple[Engine, dict[str, Any], MemberStore]:
    """The engine, counters and member store of the latest :func:`state_changes` header
    and every stored piece; :class:`OperatorStateError` if they are bad."""
    try:
        data = pickle.loads(header)
        windows: list[list[dict[str, Any]]] = [[] for _ in range(config.m)]
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
        members = store.restore_pieces(data["members"], segments)
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, IndexError) as exc:
        raise OperatorStateError(
            f"instance {route_key}: unreadable state header of {len(header)} bytes "
            f"or pieces ({len(pieces)}): {exc!r}") from exc
    return Engine.from_pieces(config, snap, windows, env), meta, members
