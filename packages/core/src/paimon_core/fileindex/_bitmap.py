"""Java Paimon's ``bitmap`` file index: which rows hold each distinct value (and which are null).

Version 1, big-endian: ``version`` byte (1), ``row count`` int32, ``distinct non-null values`` int32,
``has null`` bool, [``null offset`` int32], then per value its key (by type; strings as int32 length +
UTF-8) and an int32 offset; then the bodies, Roaring bitmaps (portable format) one after another. An
offset ``>= 0`` is where the value's bitmap starts in the bodies; a value (or null) in a single row ``r``
has no body and the offset ``-1 - r``.

Version 2 (Java Paimon 1.1+) keeps the same header fields (the null bitmap's length after its offset), then
sorted blocks of (key, offset, length) entries behind a directory of the blocks' first keys. Both are read
here; version 1 is written, which every Java Paimon since 0.9 reads.

A file is skipped when no row can hold a value the filter asks for; the bitmaps themselves only matter
to readers that skip rows, so reading looks at the keys alone.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from paimon_core.deletionvectors import serialize_roaring32
from paimon_core.fileindex._keys import KeyType

__all__ = ["BitmapBuilder", "BitmapKeys", "read_bitmap_keys"]

BITMAP_VERSION_1 = 1
BITMAP_VERSION_2 = 2


def _write_key(key_type: KeyType, key: Any) -> bytes:
    if key_type.width == "s":
        return struct.pack(">i", len(key)) + bytes(key)
    if key_type.width == "?":
        return b"\x01" if key else b"\x00"
    return struct.pack(">" + key_type.width, key)


def _read_key(key_type: KeyType, data: bytes, pos: int) -> tuple[Any, int]:
    if key_type.width == "s":
        (length,) = struct.unpack_from(">i", data, pos)
        if length < 0 or pos + 4 + length > len(data):
            raise ValueError("truncated key")
        return bytes(data[pos + 4 : pos + 4 + length]), pos + 4 + length
    if key_type.width == "?":
        return data[pos] != 0, pos + 1
    (key,) = struct.unpack_from(">" + key_type.width, data, pos)
    return key, pos + struct.calcsize(">" + key_type.width)


@dataclass
class BitmapBuilder:
    """Collects the rows of each distinct value of one column of a data file, in row order."""

    key_type: KeyType
    rows: int = 0
    nulls: list[npt.NDArray[np.int64]] = field(default_factory=list)
    # numeric keys: (keys, rows) per update, grouped at the end; bytes keys: rows by key
    numeric: list[tuple[npt.NDArray[Any], npt.NDArray[np.int64]]] = field(default_factory=list)
    by_bytes: dict[bytes, list[int]] = field(default_factory=dict)

    def add(self, keys: Any, valid: npt.NDArray[np.bool_]) -> None:
        """The keys of the next ``len(valid)`` rows (see :meth:`KeyType.keys`)."""
        nulls = np.flatnonzero(~valid)
        if len(nulls):
            self.nulls.append(nulls + self.rows)
        rows = np.flatnonzero(valid)
        if isinstance(keys, list):
            for row in rows.tolist():
                self.by_bytes.setdefault(keys[row], []).append(row + self.rows)
        elif len(rows):
            self.numeric.append((np.asarray(keys)[rows], rows + self.rows))
        self.rows += len(valid)

    def _groups(self) -> list[tuple[Any, npt.NDArray[np.int64]]]:
        """(key, its rows ascending) in key order."""
        if self.by_bytes:
            return [(k, np.asarray(self.by_bytes[k], dtype=np.int64)) for k in sorted(self.by_bytes)]
        if not self.numeric:
            return []
        keys = np.concatenate([k for k, _ in self.numeric])
        rows = np.concatenate([r for _, r in self.numeric])
        order = np.argsort(keys, kind="stable")  # rows stay ascending within a key
        keys, rows = keys[order], rows[order]
        distinct, starts = np.unique(keys, return_index=True)
        ends = [*starts[1:].tolist(), len(keys)]
        return [(k, rows[a:b]) for k, a, b in zip(distinct.tolist(), starts.tolist(), ends, strict=True)]

    def to_bytes(self) -> bytes:
        """Version 1 bytes (values in sorted order, bodies in the order of their values)."""
        null_rows = _concat(self.nulls)
        groups = self._groups()
        header = bytearray(struct.pack(">B", BITMAP_VERSION_1))
        header += struct.pack(">ii?", self.rows, len(groups), len(null_rows) > 0)
        bodies = bytearray()
        if len(null_rows) == 1:
            header += struct.pack(">i", -1 - int(null_rows[0]))
        elif len(null_rows) > 1:
            header += struct.pack(">i", 0)
            bodies += serialize_roaring32(null_rows)
        for key, rows in groups:
            header += _write_key(self.key_type, key)
            if len(rows) == 1:
                header += struct.pack(">i", -1 - int(rows[0]))
            else:
                header += struct.pack(">i", len(bodies))
                bodies += serialize_roaring32(rows)
        return bytes(header + bodies)


def _concat(parts: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class BitmapKeys:
    """What a bitmap index says about a file: its rows, whether some are null, its distinct values."""

    rows: int
    has_null: bool
    values: frozenset[Any]


def read_bitmap_keys(key_type: KeyType, data: bytes) -> BitmapKeys | None:
    """The keys of a bitmap index; None for a version this reader does not know or unreadable bytes."""
    try:
        version = data[0]
        rows, count, has_null = struct.unpack_from(">ii?", data, 1)
        pos = 10
        if has_null:
            pos += 4  # the null bitmap's offset
            if version == BITMAP_VERSION_2:
                pos += 4  # the null bitmap's length
        values: set[Any] = set()
        if version == BITMAP_VERSION_1:
            for _ in range(count):
                key, pos = _read_key(key_type, data, pos)
                values.add(key)
                pos += 4
        elif version == BITMAP_VERSION_2:
            (blocks,) = struct.unpack_from(">i", data, pos)
            pos += 4
            for _ in range(blocks):  # the directory: each block's first key and offset
                _, pos = _read_key(key_type, data, pos)
                pos += 4
            pos += 4  # the size of the blocks, which follow
            for _ in range(blocks):
                (entries,) = struct.unpack_from(">i", data, pos)
                pos += 4
                for _ in range(entries):
                    key, pos = _read_key(key_type, data, pos)
                    values.add(key)
                    pos += 8
            if len(values) != count:
                return None
        else:
            return None
    except (struct.error, ValueError, IndexError):
        return None
    return BitmapKeys(rows, has_null, frozenset(values))
