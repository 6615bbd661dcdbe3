"""A data file's deletion vector: the positions of its deleted rows, and its framed serialized form.

Framed form (what an index file holds per data file, and what a split's deletion file points at):

* 32-bit (``BitmapDeletionVector``, every Paimon version): big-endian int32 size, big-endian int32 magic
  1581511376, the portable 32-bit Roaring bitmap, big-endian CRC-32 of magic + bitmap. size counts magic +
  bitmap, and is also the length the index manifest records.
* 64-bit (``Bitmap64DeletionVector``, Paimon >= 1.2, ``deletion-vectors.bitmap64``): big-endian int32 size,
  magic 1681511377 *little-endian*, the 64-bit layout of :mod:`._roaring64`, big-endian CRC-32 of magic +
  bitmap. The index manifest records the whole frame's length (size + 8). Paimon 0.9-1.1 cannot read it.

A reader tells the two apart by the magic number.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from paimon_core.deletionvectors._roaring32 import deserialize_roaring32, serialize_roaring32
from paimon_core.deletionvectors._roaring64 import MAX_POSITION_64, deserialize_roaring64, serialize_roaring64
from paimon_core.errors import CorruptDeletionVectorError

__all__ = ["MAGIC_32", "MAGIC_64", "MAX_POSITION_32", "MAX_POSITION_64", "DeletionVector", "decode_frame"]

#: Magic number of a 32-bit deletion vector, written big-endian.
MAGIC_32 = 1581511376
#: Magic number of a 64-bit deletion vector, written little-endian.
MAGIC_64 = 1681511377
#: The largest position a 32-bit deletion vector holds (Java refuses files with more rows).
MAX_POSITION_32 = (1 << 31) - 1

_MAGIC_32_BYTES = struct.pack(">i", MAGIC_32)
_MAGIC_64_BYTES = struct.pack("<i", MAGIC_64)

Positions = npt.NDArray[np.int64]


class DeletionVector:
    """The deleted row positions (0-based, counting every row) of one data file.

    Mutable like Java's: :meth:`add` and :meth:`merge` change it in place. Positions added in many small
    calls are buffered and sorted once, when next read.

    Args:
        positions: deleted positions, in any order, repeats allowed.
        bitmap64: serialize as a 64-bit deletion vector (Paimon >= 1.2) instead of a 32-bit one.

    Raises:
        ValueError: a position is negative or beyond what the bitmap holds.
    """

    __slots__ = ("_bitmap64", "_pending", "_positions")

    def __init__(self, positions: npt.ArrayLike | None = None, *, bitmap64: bool = False) -> None:
        self._bitmap64 = bitmap64
        self._positions: Positions = np.empty(0, np.int64)
        self._pending: list[Positions] = []
        if positions is not None:
            self.add(positions)

    @property
    def bitmap64(self) -> bool:
        """Whether this serializes as a 64-bit deletion vector."""
        return self._bitmap64

    @property
    def max_position(self) -> int:
        return MAX_POSITION_64 if self._bitmap64 else MAX_POSITION_32

    @property
    def positions(self) -> Positions:
        """The deleted positions, sorted and distinct (a read-only array)."""
        if self._pending:
            merged = np.unique(np.concatenate([self._positions, *self._pending]))
            merged.flags.writeable = False
            self._positions = merged
            self._pending = []
        return self._positions

    # --- changing ----------------------------------------------------------------------------------------

    def add(self, positions: int | npt.ArrayLike) -> None:
        """Mark rows as deleted (Java's ``delete``).

        Raises:
            ValueError: a position is negative or larger than :attr:`max_position`.
        """
        new = np.atleast_1d(np.asarray(positions)).ravel()
        if not len(new):
            return
        if new.dtype.kind not in "iu":
            raise ValueError(f"deletion vector positions must be integers, not {new.dtype}")
        if new.dtype == np.uint64 and int(new.max()) > MAX_POSITION_64:
            raise ValueError(f"position {int(new.max())} is beyond {self.max_position}")
        new = new.astype(np.int64)
        low, high = int(new.min()), int(new.max())
        if low < 0 or high > self.max_position:
            bad = low if low < 0 else high
            kind = "64" if self._bitmap64 else "32"
            raise ValueError(
                f"position {bad} is outside [0, {self.max_position}] of a {kind}-bit deletion vector"
            )
        self._pending.append(new)

    def merge(self, other: DeletionVector) -> None:
        """Add every position of ``other`` (Java's ``merge``); this vector keeps its bitmap kind.

        Raises:
            ValueError: ``other`` holds a position this vector's bitmap cannot.
        """
        self.add(other.positions)

    # --- reading -----------------------------------------------------------------------------------------

    @property
    def cardinality(self) -> int:
        """How many rows are deleted."""
        return len(self.positions)

    def __len__(self) -> int:
        return self.cardinality

    def is_empty(self) -> bool:
        return self.cardinality == 0

    def is_deleted(self, position: int) -> bool:
        p = self.positions
        i = int(np.searchsorted(p, position))
        return i < len(p) and int(p[i]) == position

    def deleted_mask(self, row_count: int) -> npt.NDArray[np.bool_]:
        """A boolean array over a file of ``row_count`` rows, True where the row is deleted.

        Use ``~mask`` (or ``pyarrow.compute.invert``) to keep the live rows.

        Raises:
            CorruptDeletionVectorError: a position is at or beyond ``row_count``: the vector does not belong
                to a file of that many rows.
        """
        p = self.positions
        if len(p) and int(p[-1]) >= row_count:
            raise CorruptDeletionVectorError(
                f"deletion vector marks row {int(p[-1])} deleted, but the data file has {row_count} rows"
            )
        mask = np.zeros(row_count, bool)
        mask[p] = True
        return mask

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeletionVector):
            return NotImplemented
        return self._bitmap64 == other._bitmap64 and np.array_equal(self.positions, other.positions)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        shown = ", ".join(str(p) for p in self.positions[:8].tolist())
        more = ", ..." if self.cardinality > 8 else ""
        kind = ", bitmap64=True" if self._bitmap64 else ""
        return f"DeletionVector([{shown}{more}]{kind}) with {self.cardinality} deleted"

    # --- serialized form ---------------------------------------------------------------------------------

    def bitmap_bytes(self) -> bytes:
        """The bare bitmap (portable Roaring serialization), without magic number, size or checksum."""
        if self._bitmap64:
            return serialize_roaring64(self.positions)
        return serialize_roaring32(self.positions)

    def serialize(self) -> bytes:
        """The framed form: size, magic number, bitmap, checksum."""
        payload = (_MAGIC_64_BYTES if self._bitmap64 else _MAGIC_32_BYTES) + self.bitmap_bytes()
        if len(payload) + 8 > (1 << 31) - 1:
            raise ValueError("a deletion vector cannot exceed 2 GiB serialized")
        return struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))

    @classmethod
    def deserialize(cls, data: bytes | memoryview, *, length: int | None = None) -> DeletionVector:
        """Decode exactly one framed deletion vector.

        Args:
            data: the frame's bytes.
            length: the length the index manifest records, to check against the frame.

        Raises:
            CorruptDeletionVectorError: unknown magic number, checksum mismatch, truncated or malformed.
        """
        vector, end = decode_frame(data, 0, length)
        if end != len(data):
            raise CorruptDeletionVectorError(f"{len(data) - end} bytes after the deletion vector")
        return vector

    @classmethod
    def union(cls, vectors: Iterable[DeletionVector], *, bitmap64: bool = False) -> DeletionVector:
        """A new vector holding every position of ``vectors``."""
        out = cls(bitmap64=bitmap64)
        for vector in vectors:
            out.merge(vector)
        return out


def frame_size(data: bytes | memoryview, offset: int) -> int:
    """The whole frame's byte count (size int + size + checksum), from the size int at ``data[offset]``.

    Raises:
        CorruptDeletionVectorError: truncated or negative size.
    """
    if offset + 4 > len(data):
        raise CorruptDeletionVectorError("truncated deletion vector: no size")
    (size,) = struct.unpack_from(">i", data, offset)
    if size < 4:
        raise CorruptDeletionVectorError(f"deletion vector size {size} is too small")
    return int(size) + 8


def decode_frame(
    data: bytes | memoryview, offset: int, length: int | None = None
) -> tuple[DeletionVector, int]:
    """Decode the framed deletion vector at ``data[offset]``; returns it and the offset after its checksum.

    Raises:
        CorruptDeletionVectorError: see :meth:`DeletionVector.deserialize`.
    """
    end = offset + frame_size(data, offset)
    size = end - offset - 8
    if end > len(data):
        raise CorruptDeletionVectorError(
            f"truncated deletion vector: its size says {end - offset} bytes, {len(data) - offset} remain"
        )
    magic = bytes(data[offset + 4 : offset + 8])
    if magic == _MAGIC_32_BYTES:
        bitmap64, expected = False, size
    elif magic == _MAGIC_64_BYTES:
        bitmap64, expected = True, size + 8
    else:
        raise CorruptDeletionVectorError(
            f"unknown deletion vector magic number {int.from_bytes(magic, 'big')} (expected {MAGIC_32} "
            f"big-endian or {MAGIC_64} little-endian)"
        )
    if length is not None and length != expected:
        raise CorruptDeletionVectorError(
            f"deletion vector size {size} disagrees with the recorded length {length}"
        )
    payload = data[offset + 4 : end - 4]
    (stored,) = struct.unpack_from(">I", data, end - 4)
    actual = zlib.crc32(payload)
    if stored != actual:
        raise CorruptDeletionVectorError(
            f"deletion vector checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"
        )
    decode = deserialize_roaring64 if bitmap64 else deserialize_roaring32
    # Bounded by the checksum, so that a malformed bitmap cannot read past its frame.
    positions, bitmap_end = decode(memoryview(data)[: end - 4], offset + 8)
    if bitmap_end != end - 4:
        raise CorruptDeletionVectorError(
            f"the bitmap ends {end - 4 - bitmap_end} bytes before its deletion vector's checksum"
        )
    vector = DeletionVector(bitmap64=bitmap64)
    frozen = positions.astype(np.int64)
    frozen.flags.writeable = False
    vector._positions = frozen
    return vector, end
