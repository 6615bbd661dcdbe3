"""Java-compatible bucket assignment for fixed-bucket tables (docs/format.md#bucket-of-a-row, ``bucket-function.type=default``).

Java hashes the BinaryRow of the bucket-key columns (row bytes, no arity prefix) with
``MurmurHashUtils.hashBytesByWords`` (Murmur3 x86 32-bit over little-endian 4-byte words, seed 42; the
row length is always a multiple of 8) and takes ``Math.abs(hash % numBuckets)`` with Java's truncating
``%``.

:func:`assign_buckets` does this for whole Arrow batches without a Python loop per row: the key rows are
laid out as ``uint32`` word matrices straight from the Arrow buffers (one matrix per group of rows whose
variable-length parts have the same padded sizes) and hashed with numpy.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from paimon_core.binary_row import codec_for, null_bits_size
from paimon_core.errors import SchemaError, UnsupportedTypeError
from paimon_core.types import (
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    to_arrow_type,
)

__all__ = [
    "DEFAULT_SEED",
    "assign_buckets",
    "bucket_of_hash",
    "bucket_of_row",
    "hash_keys",
    "hash_row",
    "murmur3_32",
]

DEFAULT_SEED = 42
_MASK = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_N = 0xE6546B64
_F1 = 0x85EBCA6B
_F2 = 0xC2B2AE35

U32Array = npt.NDArray[np.uint32]


# --- scalar -----------------------------------------------------------------------------------------------


def murmur3_32(data: bytes, seed: int = DEFAULT_SEED) -> int:
    """Java's ``MurmurHashUtils.hashBytesByWords``: Murmur3 32-bit over 4-byte LE words, as a signed int.

    Raises:
        ValueError: the length is not a multiple of 4 (Java asserts the same).
    """
    if len(data) % 4:
        raise ValueError(f"hashBytesByWords needs a length that is a multiple of 4, got {len(data)}")
    h = seed & _MASK
    for (k,) in struct.iter_unpack("<I", data):
        k = (k * _C1) & _MASK
        k = ((k << 15) | (k >> 17)) & _MASK
        k = (k * _C2) & _MASK
        h ^= k
        h = ((h << 13) | (h >> 19)) & _MASK
        h = (h * 5 + _N) & _MASK
    h ^= len(data)
    h ^= h >> 16
    h = (h * _F1) & _MASK
    h ^= h >> 13
    h = (h * _F2) & _MASK
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def bucket_of_hash(hash_code: int, num_buckets: int) -> int:
    """``Math.abs(hash % numBuckets)`` with Java's truncating remainder."""
    if num_buckets <= 0:
        raise ValueError(f"the number of buckets must be positive, got {num_buckets}")
    return abs(hash_code) % num_buckets  # |a rem n| == |a| mod n for truncating rem


def hash_row(values: Sequence[Any], types: Sequence[DataType]) -> int:
    """Java's ``BinaryRow.hashCode()`` of the row of these values."""
    return murmur3_32(codec_for(types).row_bytes(values))


def bucket_of_row(values: Sequence[Any], types: Sequence[DataType], num_buckets: int) -> int:
    """The bucket Java assigns to a row whose bucket-key values are ``values``."""
    return bucket_of_hash(hash_row(values, types), num_buckets)


# --- numpy murmur -----------------------------------------------------------------------------------------


def _mix(h: U32Array, k: U32Array) -> U32Array:
    k = k * np.uint32(_C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k = k * np.uint32(_C2)
    h = h ^ k
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    mixed: U32Array = h * np.uint32(5) + np.uint32(_N)
    return mixed


def _finish(h: U32Array, length: int | npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
    h = h ^ (np.uint32(length) if isinstance(length, int) else length.astype(np.uint32))
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(_F1)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(_F2)
    h = h ^ (h >> np.uint32(16))
    return h.view(np.int32)


def _hash_words(words: U32Array) -> npt.NDArray[np.int32]:
    """Murmur hash of each row of a (rows, words) matrix of little-endian words."""
    h = np.full(words.shape[0], DEFAULT_SEED, dtype=np.uint32)
    for column in range(words.shape[1]):
        h = _mix(h, words[:, column])
    return _finish(h, 4 * words.shape[1])


def _buckets_from_hashes(hashes: npt.NDArray[np.int32], num_buckets: int) -> pa.Array:
    return pa.array(np.abs(hashes.astype(np.int64)) % num_buckets, type=pa.int32())


# --- Arrow column access ----------------------------------------------------------------------------------


def _valid_mask(arr: pa.Array) -> npt.NDArray[np.bool_]:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=np.bool_)
    mask: npt.NDArray[np.bool_] = arr.is_valid().to_numpy(zero_copy_only=False)
    return mask


def _primitive_values(arr: pa.Array, dtype: str, per_value: int = 1) -> npt.NDArray[Any]:
    """The values buffer of a fixed-width array as numpy, ``per_value`` items of ``dtype`` per value.

    Null slots hold whatever the buffer holds; callers mask them.
    """
    values: npt.NDArray[Any] = np.frombuffer(
        arr.buffers()[1], dtype=dtype, count=(arr.offset + len(arr)) * per_value
    )
    return values[arr.offset * per_value :]


_NANOS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}


def _to_millis_and_nanos(
    raw: npt.NDArray[np.int64], unit: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Floored milliseconds and the nano of millisecond, like Java's ``Timestamp.fromMicros`` & co."""
    per_unit = _NANOS_PER_UNIT[unit]
    if per_unit >= 1_000_000:
        return raw * (per_unit // 1_000_000), np.zeros_like(raw)
    units_per_milli = 1_000_000 // per_unit
    return np.floor_divide(raw, units_per_milli), np.mod(raw, units_per_milli) * per_unit


def _large_offsets(arr: pa.Array) -> npt.NDArray[np.int64]:
    offsets: npt.NDArray[np.int64] = np.frombuffer(
        arr.buffers()[1], dtype="<i8", count=arr.offset + len(arr) + 1
    ).astype(np.int64)
    return offsets[arr.offset :]


def _gather(
    data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64], width: int
) -> npt.NDArray[np.uint8]:
    """(rows, width) bytes: each row's ``lengths`` bytes from ``data`` at ``starts``, zero-padded.

    ``data`` must extend at least ``width`` bytes past every start (callers pad it).
    """
    windows = np.lib.stride_tricks.sliding_window_view(data, width)
    out: npt.NDArray[np.uint8] = windows[starts]
    out *= np.arange(width)[None, :] < lengths[:, None]
    return out


# --- vectorized row layout --------------------------------------------------------------------------------


class _Column:
    """One key field laid out for a batch: its slot words and its variable part, if any.

    ``var_size`` is the padded size of each row's variable part (0 = none). When it is positive the
    high slot word is the offset of that part, which depends on the fields before it and is filled per
    group of rows with the same layout. Null rows are already zero (or reserve their part like Java).
    """

    def __init__(self, arr: pa.Array, t: DataType) -> None:
        self.n = len(arr)
        self.valid = _valid_mask(arr)
        self.slot = np.zeros((self.n, 2), dtype=np.uint32)
        self.var_size: npt.NDArray[np.int64] | None = None
        self._var: tuple[Any, ...] = ()
        if isinstance(t, (CharType, VarCharType, BinaryType, VarBinaryType)):
            self._init_bytes(arr)
        elif isinstance(t, DecimalType) and not t.is_compact:
            self._init_wide_decimal(arr)
        elif isinstance(t, (TimestampType, LocalZonedTimestampType)) and t.precision > 3:
            millis, nanos = _to_millis_and_nanos(
                _primitive_values(arr, "<i8").astype(np.int64), arr.type.unit
            )
            self.slot[:, 0] = np.where(self.valid, nanos, 0)
            self.var_size = np.full(self.n, 8, dtype=np.int64)  # reserved for nulls too
            self._var = ("words", np.where(self.valid[:, None], millis.view("<u4").reshape(self.n, 2), 0))
        else:
            self.slot[:] = self._fixed_slot(arr, t)
            self.slot[~self.valid] = 0

    def _fixed_slot(self, arr: pa.Array, t: DataType) -> U32Array:
        slot = np.zeros((self.n, 2), dtype=np.uint32)
        if isinstance(t, BooleanType):
            slot[:, 0] = arr.fill_null(False).to_numpy(zero_copy_only=False)
        elif isinstance(t, TinyIntType):
            slot[:, 0] = _primitive_values(arr, "<u1")
        elif isinstance(t, SmallIntType):
            slot[:, 0] = _primitive_values(arr, "<u2")
        elif isinstance(t, (IntType, DateType, FloatType)):
            slot[:, 0] = _primitive_values(arr, "<u4")
        elif isinstance(t, TimeType):
            raw = _primitive_values(arr, "<i4" if pa.types.is_time32(arr.type) else "<i8")
            slot[:, 0] = _to_millis_and_nanos(raw.astype(np.int64), arr.type.unit)[0].astype(np.uint32)
        elif isinstance(t, (BigIntType, DoubleType)):
            slot[:] = _primitive_values(arr, "<u4", 2).reshape(self.n, 2)
        elif isinstance(t, DecimalType):  # compact: the low 8 bytes of the 16-byte two's complement
            slot[:] = _primitive_values(arr, "<u4", 4).reshape(self.n, 4)[:, :2]
        elif isinstance(t, (TimestampType, LocalZonedTimestampType)):
            millis, _ = _to_millis_and_nanos(_primitive_values(arr, "<i8").astype(np.int64), arr.type.unit)
            slot[:] = millis.view("<u4").reshape(self.n, 2)
        else:
            raise UnsupportedTypeError(f"bucket keys of type {t} are not supported")
        return slot

    def _init_bytes(self, arr: pa.Array) -> None:
        arr = arr.cast(pa.large_binary())
        offsets = _large_offsets(arr)
        starts = offsets[:-1]
        lengths = np.where(self.valid, offsets[1:] - starts, 0)
        buffer = arr.buffers()[2]
        data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, np.uint8)
        # Pad once so that every value can be read as a whole padded window.
        data = np.concatenate([data, np.zeros(int(lengths.max(initial=0)) + 8, dtype=np.uint8)])
        inline = self.valid & (lengths <= 7)
        slot_bytes = _gather(data, starts[inline], lengths[inline], 8)
        slot_bytes[:, 7] = 0x80 | lengths[inline]
        self.slot[inline] = slot_bytes.view("<u4")
        long = lengths > 7
        self.slot[long, 0] = lengths[long]
        self.var_size = np.where(long, (lengths + 7) // 8 * 8, 0)
        self._var = ("bytes", data, starts, lengths)

    def _init_wide_decimal(self, arr: pa.Array) -> None:
        # Java stores BigInteger.toByteArray(): the big-endian two's complement without redundant
        # leading sign bytes, then zeros up to 16 bytes.
        big_endian = np.ascontiguousarray(_primitive_values(arr, "<u1", 16).reshape(self.n, 16)[:, ::-1])
        head, after = big_endian[:, :-1], big_endian[:, 1:]
        redundant = ((head == 0) & (after < 0x80)) | ((head == 0xFF) & (after >= 0x80))
        # The number of leading redundant bytes: the index of the first byte that is needed.
        strip = np.where(redundant.all(axis=1), 15, np.argmin(redundant, axis=1))
        length = np.where(self.valid, 16 - strip, 0)
        columns = np.arange(16)
        index = np.minimum(strip[:, None] + columns[None, :], 15)
        minimal = np.take_along_axis(big_endian, index, axis=1) * (columns[None, :] < length[:, None])
        self.slot[:, 0] = length
        self.var_size = np.full(self.n, 16, dtype=np.int64)  # reserved for nulls too
        self._var = ("words", np.ascontiguousarray(minimal, dtype=np.uint8).view("<u4"))

    def var_words(self, rows: npt.NDArray[np.int64], size: int) -> U32Array:
        """The variable part of these rows (all of padded size ``size``) as words."""
        if self._var[0] == "words":
            words: U32Array = self._var[1][rows]
            return words
        _, data, starts, lengths = self._var
        gathered = _gather(data, starts[rows], lengths[rows], size)
        return gathered.view("<u4")


def _vector_hashes(columns: Sequence[pa.Array], types: Sequence[DataType]) -> npt.NDArray[np.int32]:
    """Hashes of the key rows, laid out as word matrices per group of rows with the same layout."""
    fields = [_Column(arr, t) for arr, t in zip(columns, types, strict=True)]
    n = fields[0].n
    header_words = null_bits_size(len(fields)) // 4
    fixed_words = header_words + 2 * len(fields)
    var_fields = [i for i, f in enumerate(fields) if f.var_size is not None]
    groups = []
    for rows, sizes in _layout_groups([fields[i].var_size for i in var_fields], n):
        words = np.zeros((len(rows), fixed_words + sum(sizes) // 4), dtype=np.uint32)
        for i, f in enumerate(fields):
            words[:, header_words + 2 * i : header_words + 2 * i + 2] = f.slot[rows]
            nulls = ~f.valid[rows]
            words[nulls, (8 + i) // 32] |= np.uint32(1 << ((8 + i) % 32))
        cursor = 4 * fixed_words
        for i, size in zip(var_fields, sizes, strict=True):
            if size:
                words[:, header_words + 2 * i + 1] = cursor
                words[:, cursor // 4 : (cursor + size) // 4] = fields[i].var_words(rows, size)
                cursor += size
        groups.append((rows, words))
    result = np.empty(n, dtype=np.int32)
    if len(groups) == 1:
        result[groups[0][0]] = _hash_words(groups[0][1])
    else:
        _hash_ragged(groups, result)
    return result


def _hash_ragged(groups: list[tuple[npt.NDArray[np.int64], U32Array]], result: npt.NDArray[np.int32]) -> None:
    """Hash groups of rows of different word counts with one numpy pass per word position.

    Rows are ordered by word count, longest first, and stored column by column, so the rows that still
    have a word at position ``c`` are a prefix of that column. The work is proportional to the total
    number of words, not to groups times words.
    """
    groups = sorted(groups, key=lambda g: -g[1].shape[1])
    widths = np.array([g[1].shape[1] for g in groups], dtype=np.int64)
    counts = np.array([len(g[0]) for g in groups], dtype=np.int64)
    max_width = int(widths[0])
    # active[c] = rows with more than c words; columns are stored one after the other.
    active = np.array([int(counts[widths > c].sum()) for c in range(max_width)], dtype=np.int64)
    column_start = np.concatenate([[0], np.cumsum(active)[:-1]])
    flat = np.empty(int(active.sum()), dtype=np.uint32)
    first_row = 0
    for (_, words), count, width in zip(groups, counts.tolist(), widths.tolist(), strict=True):
        positions = column_start[None, :width] + (first_row + np.arange(count))[:, None]
        flat[positions] = words
        first_row += count
    h = np.full(first_row, DEFAULT_SEED, dtype=np.uint32)
    for c in range(max_width):
        rows = int(active[c])
        h[:rows] = _mix(h[:rows], flat[column_start[c] : column_start[c] + rows])
    hashes = _finish(h, np.repeat(4 * widths, counts))
    result[np.concatenate([g[0] for g in groups])] = hashes


def _layout_groups(
    var_sizes: Sequence[npt.NDArray[np.int64] | None], n: int
) -> list[tuple[npt.NDArray[np.int64], list[int]]]:
    """Rows grouped by the sizes of their variable parts (one group when there are none)."""
    sizes = [s for s in var_sizes if s is not None]
    if all(s[0] == s.min() == s.max() for s in sizes):
        return [(np.arange(n, dtype=np.int64), [int(s[0]) for s in sizes])]
    # One int64 code per row (sizes are multiples of 8), unless that could overflow.
    radix = [int(s.max()) // 8 + 1 for s in sizes]
    if float(np.prod(np.array(radix, dtype=np.float64))) < 2.0**62:
        code = np.zeros(n, dtype=np.int64)
        for size, base in zip(sizes, radix, strict=True):
            code = code * base + size // 8
        codes, inverse = np.unique(code, return_inverse=True)
        keys = [[int(v) for v in np.unravel_index(c, radix)] for c in codes.tolist()]
        keys = [[8 * v for v in key] for key in keys]
    else:
        unique_rows, inverse = np.unique(np.stack(sizes, axis=1), axis=0, return_inverse=True)
        keys = [[int(v) for v in row] for row in unique_rows]
    inverse = inverse.reshape(-1)
    if len(keys) <= 64:
        return [(np.flatnonzero(inverse == g), key) for g, key in enumerate(keys)]
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(keys)))[:-1]
    return list(zip(np.split(order, bounds), keys, strict=True))


# --- entry point ------------------------------------------------------------------------------------------


def assign_buckets(
    data: pa.Table | pa.RecordBatch,
    key_columns: Sequence[str],
    key_types: Sequence[DataType],
    num_buckets: int,
) -> pa.Array:
    """The bucket of every row, as Java computes it from the bucket-key columns (an int32 array).

    Columns whose Arrow type differs from the key type's Arrow type are cast first (safely).

    Raises:
        SchemaError: a key column is missing or cannot hold its key type.
        ValueError: ``num_buckets`` is not positive.
    """
    if num_buckets <= 0:
        raise ValueError(f"the number of buckets must be positive, got {num_buckets}")
    hashes = hash_keys(data, key_columns, key_types)
    if data.num_rows == 0:
        return pa.array([], type=pa.int32())
    return _buckets_from_hashes(hashes, num_buckets)


def hash_keys(
    data: pa.Table | pa.RecordBatch, key_columns: Sequence[str], key_types: Sequence[DataType]
) -> npt.NDArray[np.int32]:
    """Java's ``BinaryRow.hashCode()`` of every row's key columns (the dynamic-bucket hash index values).

    Raises:
        SchemaError: a key column is missing or cannot hold its key type.
    """
    if len(key_columns) != len(key_types) or not key_columns:
        raise SchemaError("bucket keys need one type per column and at least one column")
    if data.num_rows == 0:
        return np.empty(0, np.int32)
    columns = [_key_column(data, name, t) for name, t in zip(key_columns, key_types, strict=True)]
    return _vector_hashes(columns, key_types)


def _key_column(data: pa.Table | pa.RecordBatch, name: str, t: DataType) -> pa.Array:
    index = data.schema.get_field_index(name)
    if index < 0:
        raise SchemaError(f"bucket key column {name!r} is missing from the data")
    column = data.column(index)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    target = to_arrow_type(t)
    if not column.type.equals(target):
        try:
            column = column.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(f"bucket key column {name!r} of type {column.type} is not {t}: {exc}") from exc
    return column
