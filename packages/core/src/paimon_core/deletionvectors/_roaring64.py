"""64-bit positions as Paimon (>= 1.2) serializes them: the portable layout of Iceberg's ``RoaringPositionBitmap``.

Little-endian: a uint64 count of 32-bit bitmaps, then for each, in key order, a uint32 key (the positions'
high 32 bits) and a portable 32-bit Roaring bitmap of their low 32 bits. Java keeps one bitmap per key from
0 up to the largest and writes them all, empty ones included, so that is what is written here (up to a
bound); readers accept any increasing keys. Keys are at most 2**31 - 2, which bounds positions at :data:`MAX_POSITION_64`.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

from paimon_core.deletionvectors._roaring32 import deserialize_roaring32, serialize_roaring32
from paimon_core.errors import CorruptDeletionVectorError

__all__ = ["MAX_POSITION_64", "deserialize_roaring64", "serialize_roaring64"]

_MAX_KEY = (1 << 31) - 2
#: The largest position a 64-bit deletion vector holds (Java's ``OptimizedRoaringBitmap64.MAX_VALUE``).
MAX_POSITION_64 = (_MAX_KEY << 32) | 0x80000000

_MAX_DENSE_KEYS = 1 << 10

Positions = npt.NDArray[np.int64]


def serialize_roaring64(positions: npt.ArrayLike) -> bytes:
    """Serialize sorted, distinct positions in ``[0, MAX_POSITION_64]``.

    Empty bitmaps fill the keys below the largest, as Java writes them, unless that would take more than
    :data:`_MAX_DENSE_KEYS` keys (positions beyond 2**42, files no writer produces): then only the keys that
    hold positions are written, which readers accept alike.
    """
    p = np.asarray(positions, dtype=np.int64)
    keys = p >> 32
    used, starts = np.unique(keys, return_index=True)
    bounds = np.append(starts, len(p)).tolist()
    low = (p & 0xFFFFFFFF).astype(np.uint32)
    bitmaps = {
        int(key): serialize_roaring32(low[bounds[i] : bounds[i + 1]]) for i, key in enumerate(used.tolist())
    }
    written = sorted(bitmaps)
    if written and written[-1] < _MAX_DENSE_KEYS:
        written = list(range(written[-1] + 1))
    empty = serialize_roaring32(np.empty(0, np.uint32))
    parts = [struct.pack("<Q", len(written))]
    for key in written:
        parts.append(struct.pack("<I", key))
        parts.append(bitmaps.get(key, empty))
    return b"".join(parts)


def deserialize_roaring64(data: bytes | memoryview, offset: int = 0) -> tuple[Positions, int]:
    """Decode the 64-bit layout starting at ``data[offset]``.

    Returns:
        The positions, sorted and distinct, and the offset just after the bitmap.

    Raises:
        CorruptDeletionVectorError: truncated, a bitmap count or key out of range, keys not increasing,
            or a malformed 32-bit bitmap.
    """
    if offset + 8 > len(data):
        raise CorruptDeletionVectorError("malformed 64-bit Roaring bitmap: truncated bitmap count")
    (count,) = struct.unpack_from("<q", data, offset)
    if not 0 <= count <= (1 << 31) - 1:
        raise CorruptDeletionVectorError(f"malformed 64-bit Roaring bitmap: bitmap count {count}")
    position = offset + 8
    last_key = -1
    parts: list[Positions] = [np.empty(0, np.int64)]
    for _ in range(count):
        if position + 4 > len(data):
            raise CorruptDeletionVectorError("malformed 64-bit Roaring bitmap: truncated key")
        (key,) = struct.unpack_from("<i", data, position)
        if not last_key < key <= _MAX_KEY:
            raise CorruptDeletionVectorError(
                f"malformed 64-bit Roaring bitmap: key {key} after {last_key} (keys increase, at most {_MAX_KEY})"
            )
        low, position = deserialize_roaring32(data, position + 4)
        parts.append((np.int64(key) << 32) | low.astype(np.int64))
        last_key = key
    return np.concatenate(parts), position
