"""Vectorized Avro binary encoding of a batch of flat records (the producer's fast path).

Implements the Avro 1.12 specification's binary encoding ("Binary Encoding": zig-zag
varints for int/long, little-endian IEEE 754 for float/double, length-prefixed UTF-8 for
string, length-prefixed bytes, one byte for boolean) for records whose fields are all
primitive. Each field is encoded column-wise with NumPy for the whole batch into a byte
matrix, and the matrices are joined and compacted into the records' encodings, instead
of walking the schema once per record in Python.

Anything the fast path cannot take exactly as the reference encoder would (a value of an
unexpected Python type, a long outside 64 bits, an int outside 32 bits, a missing field
without default, a string too wide for a matrix) raises :class:`FastPathError`; the
caller then falls back to the per-record encoder, which produces the precise error. The
output is byte-identical to fastavro's ``schemaless_writer`` (checked by
tests/unit/connectors/test_avro_batch.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from pipeline.core.errors import FastPathError

_VARINT = ("int", "long")
_FIXED = {"double": "<f8", "float": "<f4"}
_BLOB = ("string", "bytes")
_PRIMITIVES = (*_VARINT, *_FIXED, *_BLOB, "boolean")
_INT32 = (-(2**31), 2**31 - 1)
_NO_DEFAULT = object()
_MAX_CELLS = 1 << 22  # largest string/bytes matrix (n x longest value) built per batch
# A zig-zagged value needs k + 1 varint bytes when it is >= 2**(7k), k = 1..9.
_VARINT_LIMITS = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)


@dataclass(frozen=True)
class FlatField:
    """One primitive field: name, Avro type and default (``_NO_DEFAULT`` if none)."""

    name: str
    kind: str
    default: Any


def zigzag_varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag + base-128 varint encoding of int64 ``values`` (Avro spec, int/long).

    Returns ``(lengths, groups)``: bytes per value (1..10) and a ``(max length, n)`` uint8
    array whose row k is byte k of each value (continuation bit set where another follows).
    """
    v = values.astype(np.int64, copy=False)
    z = ((v << np.int64(1)) ^ (v >> np.int64(63))).view(np.uint64)
    lengths = np.searchsorted(_VARINT_LIMITS, z, side="right").astype(np.int64) + 1
    width = int(lengths.max()) if len(lengths) else 1
    shifts = (np.arange(width, dtype=np.uint64) * np.uint64(7))[:, None]
    groups = ((z[None, :] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    more = np.arange(width)[:, None] < (lengths[None, :] - 1)
    groups |= more.astype(np.uint8) << np.uint8(7)
    return lengths, groups


class FlatRecordEncoder:
    """Batch encoder for one flat record schema (every field of a primitive type)."""

    def __init__(self, fields: Sequence[FlatField]) -> None:
        self._fields = tuple(fields)

    @classmethod
    def for_schema(cls, schema: Mapping[str, Any]) -> FlatRecordEncoder | None:
        """An encoder if ``schema`` is a record of primitive fields, else ``None``."""
        if schema.get("type") != "record":
            return None
        fields = []
        for f in schema.get("fields", []):
            kind = f.get("type")
            if isinstance(kind, dict) and set(kind) == {"type"}:
                kind = kind["type"]
            if kind not in _PRIMITIVES:
                return None
            fields.append(FlatField(f["name"], kind, f.get("default", _NO_DEFAULT)))
        return cls(fields)

    def _columns(self, records: Sequence[Mapping[str, Any]]) -> list[Sequence[Any]]:
        """One list of values per field (defaults where a field with default is missing)."""
        names = [f.name for f in self._fields]
        try:
            if len(names) == 1:
                return [[r[names[0]] for r in records]]
            return list(zip(*map(itemgetter(*names), records), strict=True))
        except KeyError:
            pass  # some record omits a field: fill in defaults column by column
        except (TypeError, AttributeError) as exc:
            raise FastPathError(str(exc)) from exc
        columns: list[Sequence[Any]] = []
        for field in self._fields:
            try:
                if field.default is _NO_DEFAULT:
                    columns.append([r[field.name] for r in records])
                else:
                    columns.append([r.get(field.name, field.default) for r in records])
            except (KeyError, AttributeError, TypeError) as exc:
                raise FastPathError(str(exc)) from exc
        return columns

    def encode(self, records: Sequence[Mapping[str, Any]], header: bytes = b"") -> list[bytes]:
        """``header`` + Avro binary body of each record, byte-identical to fastavro.

        Every field becomes an ``(n, width)`` byte matrix plus the number of bytes each
        record really uses; the matrices are laid side by side and the unused cells masked
        out, which leaves the records' encodings back to back in row-major order.
        """
        n = len(records)
        if n == 0:
            return []
        parts: list[_Part] = []
        if header:
            row = np.frombuffer(header, dtype=np.uint8)
            parts.append(_Part(np.broadcast_to(row, (n, len(row))), None))
        for field, column in zip(self._fields, self._columns(records), strict=True):
            parts.extend(_encode_column(field, column))
        matrix = np.hstack([part.matrix for part in parts])
        used = np.hstack([part.used() for part in parts])
        data = matrix[used].tobytes()
        ends = np.cumsum(used.sum(axis=1)).tolist()
        return [data[s:e] for s, e in zip([0, *ends[:-1]], ends, strict=True)]


@dataclass(frozen=True)
class _Part:
    """Bytes of one field (or the header) for every record of the batch."""

    matrix: np.ndarray  # (n, width) uint8: record i's bytes at matrix[i, :lengths[i]]
    lengths: np.ndarray | None  # bytes used per record; None = the full width

    def used(self) -> np.ndarray:
        """(n, width) bool: which cells hold encoded bytes."""
        n, width = self.matrix.shape
        if self.lengths is None:
            return np.ones((n, width), dtype=bool)
        return np.arange(width)[None, :] < self.lengths[:, None]


def _numeric(column: Sequence[Any], kinds: str) -> np.ndarray:
    try:
        arr = np.asarray(column)
    except (ValueError, OverflowError) as exc:
        raise FastPathError(str(exc)) from exc
    if arr.ndim != 1 or arr.dtype.kind not in kinds:
        raise FastPathError(f"column of dtype {arr.dtype}")
    return arr


def _varint_part(values: np.ndarray) -> _Part:
    lengths, groups = zigzag_varints(values)
    return _Part(groups.T, lengths)


def _encode_column(field: FlatField, column: Sequence[Any]) -> list[_Part]:
    """The parts (1 or 2) holding ``field`` for every record, per the Avro binary encoding."""
    n = len(column)
    kind = field.kind
    if kind in _VARINT:
        values = _numeric(column, "iub")
        if values.dtype.kind == "u" and values.size and int(values.max()) > 2**63 - 1:
            raise FastPathError("long out of range")
        values = values.astype(np.int64)
        if kind == "int" and values.size and (
            int(values.min()) < _INT32[0] or int(values.max()) > _INT32[1]
        ):
            raise FastPathError("int out of range")
        return [_varint_part(values)]
    if kind in _FIXED:
        values = _numeric(column, "fiub").astype(_FIXED[kind])
        return [_Part(values.view(np.uint8).reshape(n, values.dtype.itemsize), None)]
    if kind == "boolean":
        if not all(isinstance(v, bool) for v in column):
            raise FastPathError("non-bool in boolean column")
        return [_Part(np.asarray(column, dtype=np.uint8).reshape(n, 1), None)]
    try:
        if kind == "string":
            payloads = list(map(str.encode, column))
        else:
            if not all(isinstance(v, bytes | bytearray) for v in column):
                raise FastPathError("non-bytes in bytes column")
            payloads = [bytes(v) for v in column]
    except (TypeError, UnicodeEncodeError) as exc:
        raise FastPathError(str(exc)) from exc
    sizes = np.array(list(map(len, payloads)), dtype=np.int64)
    width = max(1, int(sizes.max()))
    if n * width > _MAX_CELLS:
        raise FastPathError(f"values of up to {width} bytes: too wide for a matrix")
    # NumPy's fixed-width bytes dtype pads with NULs; ``sizes`` says which bytes are real.
    padded = np.array(payloads, dtype=f"S{width}").view(np.uint8).reshape(n, width)
    return [_varint_part(sizes), _Part(padded, sizes)]
