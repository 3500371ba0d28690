"""A transactional, in-memory stand-in for Spark's stateful-processor handle.

Spark commits a micro-batch's state updates with the batch, or drops them when the task
fails and the batch is replayed. :class:`FakeStateStore` keeps committed and staged values
of every state variable — list and value states whole, map states entry by entry — and
counts the bytes each batch hands it; the test decides when a batch commits or rolls
back, and :class:`FakeStateHandle` hands the processor list, value and map states over
that store. Timers are accepted and ignored.

>>> store = FakeStateStore()
>>> handle = FakeStateHandle(store)
>>> blob = handle.getValueState("blob", None)
>>> blob.update((b"v1",))
>>> store.commit()
>>> blob.update((b"v2",))
>>> blob.get()
(b'v2',)
>>> store.rollback()
>>> blob.get()
(b'v1',)
>>> pieces = handle.getMapState("pieces", None, None)
>>> pieces.updateValue(("w", 1), (b"abc",))
>>> store.commit()
>>> pieces.removeKey(("w", 1))
>>> pieces.updateValue(("w", 2), (b"de",))
>>> sorted(pieces.keys()), store.staged_bytes
([('w', 2)], 11)
>>> store.rollback()
>>> list(pieces.iterator()), store.commits
([(('w', 1), (b'abc',))], [2, 12])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pipeline.runtime.row_size import row_bytes

_GONE = object()  # a map entry removed in the staged batch


class FakeStateStore:
    """Committed and staged values of every state variable (one micro-batch = one txn)."""

    def __init__(self) -> None:
        self.committed: dict[str, Any] = {}
        self.staged: dict[str, Any] = {}
        self.maps: dict[str, dict[Any, Any]] = {}
        self.staged_maps: dict[str, dict[Any, Any]] = {}
        #: bytes of the rows written (keys and values) in the open batch
        self.staged_bytes = 0
        #: bytes written by each committed batch
        self.commits: list[int] = []

    def read(self, name: str) -> Any:
        """The staged value of ``name``, else the committed one, else None."""
        return self.staged.get(name, self.committed.get(name))

    def write(self, name: str, value: Any, rows: list[tuple[Any, ...]]) -> None:
        """Stage ``value`` for ``name`` (``rows``: what the caller wrote, counted)."""
        self.staged[name] = value
        self.staged_bytes += sum(row_bytes(r) for r in rows)

    def read_map(self, name: str) -> dict[Any, Any]:
        """The map ``name`` as the open batch sees it (committed entries, staged changes)."""
        out = dict(self.maps.get(name, {}))
        for key, value in self.staged_maps.get(name, {}).items():
            if value is _GONE:
                out.pop(key, None)
            else:
                out[key] = value
        return out

    def write_map(self, name: str, key: Any, value: Any) -> None:
        """Stage one map entry (``_GONE``: removed)."""
        self.staged_maps.setdefault(name, {})[key] = value
        if value is not _GONE:
            self.staged_bytes += row_bytes(key) + row_bytes(value)

    def commit(self) -> None:
        """The batch succeeded: its staged updates become the committed state."""
        self.committed.update(self.staged)
        for name in self.staged_maps:
            self.maps[name] = self.read_map(name)
        self.staged, self.staged_maps = {}, {}
        self.commits.append(self.staged_bytes)
        self.staged_bytes = 0

    def rollback(self) -> None:
        """The batch failed: drop its staged updates."""
        self.staged, self.staged_maps = {}, {}
        self.staged_bytes = 0


class FakeListState:
    """``ListState`` over one variable of a :class:`FakeStateStore`."""

    def __init__(self, store: FakeStateStore, name: str) -> None:
        self.store, self.name = store, name

    def exists(self) -> bool:
        return self.store.read(self.name) is not None

    def get(self) -> Any:
        return iter(self.store.read(self.name) or [])

    def put(self, rows: list[tuple[Any, ...]]) -> None:
        self.store.write(self.name, list(rows), list(rows))


class FakeValueState(FakeListState):
    """``ValueState`` over one variable of a :class:`FakeStateStore`."""

    def get(self) -> Any:
        return self.store.read(self.name)

    def update(self, row: tuple[Any, ...]) -> None:
        self.store.write(self.name, row, [row])


class FakeMapState:
    """``MapState`` over one variable of a :class:`FakeStateStore`: entries are staged
    one by one and committed or rolled back with the batch."""

    def __init__(self, store: FakeStateStore, name: str) -> None:
        self.store, self.name = store, name

    def exists(self) -> bool:
        return bool(self.store.read_map(self.name))

    def getValue(self, key: tuple[Any, ...]) -> tuple[Any, ...] | None:  # noqa: N802 - Spark API
        return self.store.read_map(self.name).get(tuple(key))

    def containsKey(self, key: tuple[Any, ...]) -> bool:  # noqa: N802 - Spark API
        return tuple(key) in self.store.read_map(self.name)

    def updateValue(self, key: tuple[Any, ...], value: tuple[Any, ...]) -> None:  # noqa: N802
        self.store.write_map(self.name, tuple(key), tuple(value))

    def iterator(self) -> Iterator[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        return iter(list(self.store.read_map(self.name).items()))

    def keys(self) -> Iterator[tuple[Any, ...]]:
        return iter(list(self.store.read_map(self.name)))

    def values(self) -> Iterator[tuple[Any, ...]]:
        return iter(list(self.store.read_map(self.name).values()))

    def removeKey(self, key: tuple[Any, ...]) -> None:  # noqa: N802 - Spark API
        self.store.write_map(self.name, tuple(key), _GONE)

    def clear(self) -> None:
        for key in self.store.read_map(self.name):
            self.store.write_map(self.name, key, _GONE)


class FakeStateHandle:
    """The ``StatefulProcessorHandle`` calls the processor makes, over ``store``."""

    def __init__(self, store: FakeStateStore) -> None:
        self.store = store

    def getListState(self, name: str, schema: Any) -> FakeListState:  # noqa: N802 - Spark API
        return FakeListState(self.store, name)

    def getValueState(self, name: str, schema: Any) -> FakeValueState:  # noqa: N802 - Spark API
        return FakeValueState(self.store, name)

    def getMapState(self, name: str, key_schema: Any,  # noqa: N802 - Spark API
                    value_schema: Any) -> FakeMapState:
        return FakeMapState(self.store, name)

    def listTimers(self) -> list[int]:  # noqa: N802 - Spark API
        return []

    def deleteTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        return None

    def registerTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        return None
