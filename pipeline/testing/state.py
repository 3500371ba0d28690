"""A transactional, in-memory stand-in for Spark's stateful-processor handle.

Spark commits a micro-batch's state updates with the batch, or drops them when the task
fails and the batch is replayed. :class:`FakeStateStore` keeps committed and staged values
of every state variable; the test decides when a batch commits or rolls back, and
:class:`FakeStateHandle` hands the processor list and value states over that store.
Timers are accepted and ignored.

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
"""

from __future__ import annotations

from typing import Any


class FakeStateStore:
    """Committed and staged values of every state variable (one micro-batch = one txn)."""

    def __init__(self) -> None:
        self.committed: dict[str, Any] = {}
        self.staged: dict[str, Any] = {}

    def read(self, name: str) -> Any:
        """The staged value of ``name``, else the committed one, else None."""
        return self.staged.get(name, self.committed.get(name))

    def commit(self) -> None:
        """The batch succeeded: its staged updates become the committed state."""
        self.committed.update(self.staged)
        self.staged = {}

    def rollback(self) -> None:
        """The batch failed: drop its staged updates."""
        self.staged = {}


class FakeListState:
    """``ListState`` over one variable of a :class:`FakeStateStore`."""

    def __init__(self, store: FakeStateStore, name: str) -> None:
        self.store, self.name = store, name

    def exists(self) -> bool:
        return self.store.read(self.name) is not None

    def get(self) -> Any:
        return iter(self.store.read(self.name) or [])

    def put(self, rows: list[tuple[Any, ...]]) -> None:
        self.store.staged[self.name] = list(rows)


class FakeValueState(FakeListState):
    """``ValueState`` over one variable of a :class:`FakeStateStore`."""

    def get(self) -> Any:
        return self.store.read(self.name)

    def update(self, row: tuple[Any, ...]) -> None:
        self.store.staged[self.name] = row


class FakeStateHandle:
    """The ``StatefulProcessorHandle`` calls the processor makes, over ``store``."""

    def __init__(self, store: FakeStateStore) -> None:
        self.store = store

    def getListState(self, name: str, schema: Any) -> FakeListState:  # noqa: N802 - Spark API
        return FakeListState(self.store, name)

    def getValueState(self, name: str, schema: Any) -> FakeValueState:  # noqa: N802 - Spark API
        return FakeValueState(self.store, name)

    def listTimers(self) -> list[int]:  # noqa: N802 - Spark API
        return []

    def deleteTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        return None

    def registerTimer(self, t: int) -> None:  # noqa: N802 - Spark API
        return None
