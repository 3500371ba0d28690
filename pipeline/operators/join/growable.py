"""An append-only NumPy array with amortized O(1) appends (basic-window columns)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import DTypeLike, NDArray


class GrowableArray:
    """Rows of shape ``row_shape`` appended one at a time; ``view()`` is the filled part."""

    __slots__ = ("_buf", "_n")

    def __init__(self, row_shape: tuple[int, ...], dtype: DTypeLike, capacity: int = 16) -> None:
        self._buf: NDArray[Any] = np.empty((capacity, *row_shape), dtype=dtype)
        self._n = 0

    @staticmethod
    def from_array(arr: NDArray[Any]) -> GrowableArray:
        g = GrowableArray(arr.shape[1:], arr.dtype, max(16, len(arr)))
        g._buf[: len(arr)] = arr
        g._n = len(arr)
        return g

    def __len__(self) -> int:
        return self._n

    def _reserve(self, n: int) -> None:
        if n > len(self._buf):
            cap = max(n, 2 * len(self._buf))
            buf = np.empty((cap, *self._buf.shape[1:]), dtype=self._buf.dtype)
            buf[: self._n] = self._buf[: self._n]
            self._buf = buf

    def append(self, value: Any) -> None:
        if self._n == len(self._buf):
            self._reserve(self._n + 1)
        self._buf[self._n] = value
        self._n += 1

    def insert(self, i: int, value: Any) -> None:
        """Put ``value`` at row ``i``, shifting rows i.. up by one (one memmove)."""
        n = self._n
        if n == len(self._buf):
            self._reserve(n + 1)
        buf = self._buf
        buf[i + 1 : n + 1] = buf[i:n]  # overlapping: NumPy copies through a buffer
        buf[i] = value
        self._n = n + 1

    def extend(self, values: NDArray[Any]) -> None:
        k = len(values)
        self._reserve(self._n + k)
        self._buf[self._n : self._n + k] = values
        self._n += k

    def view(self) -> NDArray[Any]:
        return self._buf[: self._n]

    def delete(self, rows: NDArray[np.int64]) -> None:
        """Remove the rows ``rows`` (ascending, distinct), keeping the others in order —
        one vectorized compaction (memory-bounded windows evict single tuples)."""
        n = self._n
        if rows.shape[0] == 1:  # one row: one overlapping copy (NumPy buffers it)
            i = int(rows[0])
            self._buf[i : n - 1] = self._buf[i + 1 : n]
            self._n = n - 1
            return
        keep = np.ones(n, dtype=bool)
        keep[rows] = False
        kept = self._buf[:n][keep]
        self._buf[: kept.shape[0]] = kept
        self._n = int(kept.shape[0])
