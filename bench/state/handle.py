"""A stand-in for Spark's stateful-processor handle that counts what a processor writes
(``harvest bench state``'s processor part): value, list and map states kept in memory,
every write sized in bytes (:func:`~pipeline.runtime.row_size.row_bytes`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pipeline.runtime.row_size import row_bytes


class _Counter:
    def __init__(self) -> None:
        self.bytes = 0


class _ListState:
    def __init__(self, counter: _Counter) -> None:
        self.counter = counter
        self.rows: list[Any] | None = None

    def exists(self) -> bool:
        return self.rows is not None

    def get(self) -> Iterator[Any]:
        return iter(self.rows or [])

    def put(self, rows: list[Any]) -> None:
        self.rows = list(rows)
        self.counter.bytes += sum(row_bytes(r) for r in rows)


class _ValueState(_ListState):
    def get(self) -> Any:
        return self.rows

    def update(self, row: Any) -> None:
        self.rows = row
        self.counter.bytes += row_bytes(row)


class _MapState:
    def __init__(self, counter: _Counter) -> None:
        self.counter = counter
        self.entries: dict[Any, Any] = {}

    def exists(self) -> bool:
        return bool(self.entries)

    def containsKey(self, key: Any) -> bool:  # noqa: N802 - Spark API
        return tuple(key) in self.entries

    def updateValue(self, key: Any, value: Any) -> None:  # noqa: N802 - Spark API
        self.entries[tuple(key)] = tuple(value)
        self.counter.bytes += row_bytes(key) + row_bytes(value)

    def removeKey(self, key: Any) -> None:  # noqa: N802 - Spark API
        self.entries.pop(tuple(key), None)

    def iterator(self) -> Iterator[Any]:
        return iter(list(self.entries.items()))


class CountingHandle:
    """The state calls :class:`JoinProcessor` makes, in memory, counting the bytes of
    every row it writes (every batch commits; timers are ignored)."""

    def __init__(self) -> None:
        self.counter = _Counter()

    def getListState(self, name: str, schema: Any) -> _ListState:  # noqa: N802 - Spark API
        return _ListState(self.counter)

    def getValueState(self, name: str, schema: Any) -> _ValueState:  # noqa: N802 - Spark API
        return _ValueState(self.counter)

    def getMapState(self, name: str, key_schema: Any, value_schema: Any  # noqa: N802
                    ) -> _MapState:
        return _MapState(self.counter)

    def listTimers(self) -> list[int]:  # noqa: N802 - Spark API
        return []

    def deleteTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        return None

    def registerTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        return None
