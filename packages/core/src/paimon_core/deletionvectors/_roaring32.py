"""32-bit Roaring bitmaps in the portable serialization format, encoded and decoded with numpy.

The format (RoaringFormatSpec; Java's ``RoaringBitmap.serialize``, CRoaring's ``portable_serialize``) is
little-endian throughout. Values are split into a 16-bit key (high half) and a 16-bit low half; each key with
values has a container:

* cookie: ``12346`` then the container count as a uint32, or, when any container is a run container,
  ``12347 | (count - 1) << 16`` followed by a bitset marking the run containers (bit i of byte i // 8);
* per container: key and cardinality - 1, two uint16s;
* per container, unless there are run containers and fewer than 4 containers: the uint32 byte offset of its
  data from the start of the bitmap (readers do not need them);
* the containers' data: an *array* container (cardinality <= 4096, not a run container) lists its low halves
  as uint16s; a *bitmap* container (cardinality > 4096) is 1024 uint64 words, bit v set for low half v; a
  *run* container is a uint16 run count, then (start, length - 1) uint16 pairs.

Which container a writer picks is fixed by Java's ``runOptimize()``, which Paimon calls before serializing:
a run container when its size (2 + 4 * runs bytes) is strictly smaller than the array (2 bytes per value)
or bitmap (8192 bytes) it would otherwise be. So every set of values has one encoding, the one Java writes.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

from paimon_core.errors import CorruptDeletionVectorError

__all__ = ["deserialize_roaring32", "serialize_roaring32"]

SERIAL_COOKIE_NO_RUNCONTAINER = 12346
SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4  # with run containers, offsets are written only from this many containers on
_ARRAY_MAX = 4096  # the largest cardinality of an array container
_BITMAP_BYTES = 8192
_MAX_CONTAINERS = 1 << 16
# Bitmap containers are decoded this many at a time (each expands to 64 KiB of bits).
_BITMAP_CHUNK = 64

Values = npt.NDArray[np.uint32]
_Int64s = npt.NDArray[np.int64]


def _exclusive_cumsum(counts: _Int64s) -> _Int64s:
    out = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


def _local_index(counts: _Int64s) -> _Int64s:
    """For groups of the given sizes laid end to end, each element's index within its group."""
    total = int(counts.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(_exclusive_cumsum(counts), counts)


# --- writing ----------------------------------------------------------------------------------------------


def serialize_roaring32(values: npt.ArrayLike) -> bytes:
    """The portable serialization of a 32-bit Roaring bitmap holding ``values``, as Java writes it after
    ``runOptimize()``.

    Args:
        values: sorted, distinct integers in ``[0, 2**32)``.
    """
    v = np.asarray(values, dtype=np.uint32)
    n = len(v)
    if n == 0:
        return struct.pack("<II", SERIAL_COOKIE_NO_RUNCONTAINER, 0)
    high = v >> 16
    first = np.empty(n, bool)  # first value of its container
    first[0] = True
    np.not_equal(high[1:], high[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    keys = high[starts].astype(np.uint16)
    cards = np.diff(np.append(starts, n)).astype(np.int64)
    container_of = np.cumsum(first) - 1
    # A run starts at a container's first value and after every gap.
    run_first = first.copy()
    run_first[1:] |= np.diff(v) != 1
    runs = np.add.reduceat(run_first.astype(np.int64), starts)

    bitmap_kind = cards > _ARRAY_MAX
    plain_size = np.where(bitmap_kind, _BITMAP_BYTES, 2 * cards)
    run_size = 2 + 4 * runs
    is_run = run_size < plain_size
    sizes = np.where(is_run, run_size, plain_size)

    body = np.zeros(int(sizes.sum()) // 2, dtype="<u2")  # every container's data has an even size
    word_start = _exclusive_cumsum(sizes) // 2
    low = (v & 0xFFFF).astype(np.uint16)
    _fill_arrays(body, word_start, low, container_of, starts, ~bitmap_kind & ~is_run)
    _fill_bitmaps(body, word_start, low, container_of, bitmap_kind & ~is_run)
    _fill_runs(body, word_start, low, container_of, run_first, runs, is_run)

    header = _header(keys, cards, is_run, sizes)
    return header + body.tobytes()


def _header(
    keys: npt.NDArray[np.uint16], cards: _Int64s, is_run: npt.NDArray[np.bool_], sizes: _Int64s
) -> bytes:
    count = len(keys)
    has_run = bool(is_run.any())
    if has_run:
        head = struct.pack("<I", SERIAL_COOKIE | ((count - 1) << 16))
        head += np.packbits(is_run, bitorder="little").tobytes()
    else:
        head = struct.pack("<II", SERIAL_COOKIE_NO_RUNCONTAINER, count)
    descriptive = np.empty(2 * count, dtype="<u2")
    descriptive[0::2] = keys
    descriptive[1::2] = cards - 1
    head += descriptive.tobytes()
    if not has_run or count >= _NO_OFFSET_THRESHOLD:
        data_start = len(head) + 4 * count
        head += (data_start + _exclusive_cumsum(sizes)).astype("<u4").tobytes()
    return head


def _fill_arrays(
    body: npt.NDArray[np.uint16],
    word_start: _Int64s,
    low: npt.NDArray[np.uint16],
    container_of: _Int64s,
    starts: npt.NDArray[np.intp],
    is_array: npt.NDArray[np.bool_],
) -> None:
    members = np.flatnonzero(is_array[container_of])
    c = container_of[members]
    body[word_start[c] + (members - starts[c])] = low[members]


def _fill_bitmaps(
    body: npt.NDArray[np.uint16],
    word_start: _Int64s,
    low: npt.NDArray[np.uint16],
    container_of: _Int64s,
    is_bitmap: npt.NDArray[np.bool_],
) -> None:
    members = np.flatnonzero(is_bitmap[container_of])
    if not len(members):
        return
    # Little-endian uint64 words: value x is bit x % 8 of byte x // 8 of the container's data. Values are
    # sorted and distinct, so the bits of one byte are adjacent and their sum is their OR.
    byte_at = 2 * word_start[container_of[members]] + (low[members] >> 3).astype(np.int64)
    bits = np.left_shift(1, low[members] & 7).astype(np.uint8)
    new_byte = np.empty(len(byte_at), bool)
    new_byte[0] = True
    np.not_equal(byte_at[1:], byte_at[:-1], out=new_byte[1:])
    firsts = np.flatnonzero(new_byte)
    body.view(np.uint8)[byte_at[firsts]] = np.add.reduceat(bits, firsts)


def _fill_runs(
    body: npt.NDArray[np.uint16],
    word_start: _Int64s,
    low: npt.NDArray[np.uint16],
    container_of: _Int64s,
    run_first: npt.NDArray[np.bool_],
    runs: _Int64s,
    is_run: npt.NDArray[np.bool_],
) -> None:
    if not is_run.any():
        return
    run_starts = np.flatnonzero(run_first)
    run_lengths = np.diff(np.append(run_starts, len(low)))
    run_container = container_of[run_starts]
    # A run's ordinal within its container: runs of earlier containers come before it.
    ordinal = np.arange(len(run_starts)) - _exclusive_cumsum(runs)[run_container]
    chosen = is_run[run_container]
    at = word_start[run_container[chosen]] + 1 + 2 * ordinal[chosen]
    body[at] = low[run_starts[chosen]]
    body[at + 1] = run_lengths[chosen] - 1
    run_containers = np.flatnonzero(is_run)
    body[word_start[run_containers]] = runs[run_containers]


# --- reading ----------------------------------------------------------------------------------------------


def _corrupt(message: str) -> CorruptDeletionVectorError:
    return CorruptDeletionVectorError(f"malformed Roaring bitmap: {message}")


class _Reader:
    """Bounds-checked reads from a buffer."""

    def __init__(self, data: bytes | memoryview, position: int) -> None:
        self.data = data
        self.position = position

    def need(self, end: int) -> None:
        if end > len(self.data):
            raise _corrupt(f"truncated: needs {end} bytes, has {len(self.data)}")

    def uint32(self) -> int:
        self.need(self.position + 4)
        (value,) = struct.unpack_from("<I", self.data, self.position)
        self.position += 4
        return int(value)

    def array(self, dtype: str, count: int) -> npt.NDArray[np.generic]:
        size = np.dtype(dtype).itemsize * count
        self.need(self.position + size)
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.position)
        self.position += size
        return out


def deserialize_roaring32(data: bytes | memoryview, offset: int = 0) -> tuple[Values, int]:
    """Decode a portable 32-bit Roaring bitmap that starts at ``data[offset]``.

    Reads every container kind, whichever encoding the writer chose.

    Returns:
        The values, sorted and distinct, and the offset just after the bitmap.

    Raises:
        CorruptDeletionVectorError: the bytes are not a well-formed bitmap (unknown cookie, truncated,
            keys or values out of order, a bitmap container whose cardinality disagrees with its bits).
    """
    reader = _Reader(data, offset)
    cookie = reader.uint32()
    if cookie & 0xFFFF == SERIAL_COOKIE:
        count = (cookie >> 16) + 1
        bitset = np.asarray(reader.array("u1", (count + 7) // 8), dtype=np.uint8)
        is_run = np.unpackbits(bitset, bitorder="little")[:count].astype(bool)
    elif cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        count = reader.uint32()
        if count > _MAX_CONTAINERS:
            raise _corrupt(f"{count} containers (at most {_MAX_CONTAINERS})")
        is_run = np.zeros(count, bool)
    else:
        raise _corrupt(f"unknown cookie {cookie:#010x}")
    descriptive = reader.array("<u2", 2 * count).astype(np.int64)
    keys, cards = descriptive[0::2], descriptive[1::2] + 1
    if count > 1 and not (np.diff(keys) > 0).all():
        raise _corrupt("container keys are not increasing")
    if not is_run.any() or count >= _NO_OFFSET_THRESHOLD:
        reader.array("<u4", count)  # offsets: the sizes below place every container
    body_start = reader.position
    sizes, run_counts = _container_sizes(reader, cards, is_run)
    end = body_start + int(sizes.sum())
    reader.need(end)
    body = np.frombuffer(data, dtype="<u2", count=(end - body_start) // 2, offset=body_start)
    word_start = _exclusive_cumsum(sizes) // 2

    is_bitmap = ~is_run & (cards > _ARRAY_MAX)
    is_array = ~is_run & ~is_bitmap
    parts = [
        _read_arrays(body, word_start, cards, is_array),
        _read_bitmaps(body, word_start, cards, is_bitmap),
        _read_runs(body, word_start, run_counts, is_run),
    ]
    containers = np.concatenate([p[0] for p in parts])
    lows = np.concatenate([p[1] for p in parts])
    # Each part lists its containers in order; a stable sort by container merges the parts.
    order = np.argsort(containers.astype(np.uint16), kind="stable")
    values = ((keys[containers[order]] << 16) | lows[order]).astype(np.uint32)
    if len(values) > 1 and not (np.diff(values.astype(np.int64)) > 0).all():
        raise _corrupt("values within a container are not increasing")
    return values, end


def _container_sizes(
    reader: _Reader, cards: _Int64s, is_run: npt.NDArray[np.bool_]
) -> tuple[_Int64s, _Int64s]:
    """Each container's data size, and each run container's run count (0 for the others).

    A run container's size is in its own first word, so the containers before it must be placed first:
    one step per run container, none per value.
    """
    sizes = np.where(cards > _ARRAY_MAX, _BITMAP_BYTES, 2 * cards)
    sizes[is_run] = 0
    run_counts = np.zeros(len(cards), np.int64)
    if is_run.any():
        before = _exclusive_cumsum(sizes)
        extra = 0
        for i in np.flatnonzero(is_run).tolist():
            at = reader.position + int(before[i]) + extra
            reader.need(at + 2)
            (runs,) = struct.unpack_from("<H", reader.data, at)
            run_counts[i] = runs
            sizes[i] = 2 + 4 * runs
            extra += int(sizes[i])
    return sizes, run_counts


def _read_arrays(
    body: npt.NDArray[np.uint16], word_start: _Int64s, cards: _Int64s, is_array: npt.NDArray[np.bool_]
) -> tuple[_Int64s, _Int64s]:
    chosen = np.flatnonzero(is_array)
    counts = cards[chosen]
    containers = np.repeat(chosen, counts)
    lows = body[word_start[containers] + _local_index(counts)].astype(np.int64)
    return containers.astype(np.int64), lows


def _read_bitmaps(
    body: npt.NDArray[np.uint16], word_start: _Int64s, cards: _Int64s, is_bitmap: npt.NDArray[np.bool_]
) -> tuple[_Int64s, _Int64s]:
    chosen = np.flatnonzero(is_bitmap)
    raw = body.view(np.uint8)
    containers: list[_Int64s] = [np.empty(0, np.int64)]
    lows: list[_Int64s] = [np.empty(0, np.int64)]
    for first in range(0, len(chosen), _BITMAP_CHUNK):
        chunk = chosen[first : first + _BITMAP_CHUNK]
        at = 2 * word_start[chunk][:, None] + np.arange(_BITMAP_BYTES)
        bits = np.unpackbits(raw[at], axis=1, bitorder="little")
        counted = bits.sum(axis=1, dtype=np.int64)
        if (counted != cards[chunk]).any():
            raise _corrupt("a bitmap container's cardinality disagrees with its bits")
        row, col = np.nonzero(bits)
        containers.append(chunk[row].astype(np.int64))
        lows.append(col.astype(np.int64))
    return np.concatenate(containers), np.concatenate(lows)


def _read_runs(
    body: npt.NDArray[np.uint16], word_start: _Int64s, run_counts: _Int64s, is_run: npt.NDArray[np.bool_]
) -> tuple[_Int64s, _Int64s]:
    chosen = np.flatnonzero(is_run)
    counts = run_counts[chosen]
    run_container = np.repeat(chosen, counts)
    at = word_start[run_container] + 1 + 2 * _local_index(counts)
    starts = body[at].astype(np.int64)
    lengths = body[at + 1].astype(np.int64) + 1
    if (starts + lengths > 1 << 16).any():
        raise _corrupt("a run goes past its container")
    containers = np.repeat(run_container, lengths)
    lows = np.repeat(starts, lengths) + _local_index(lengths)
    return containers.astype(np.int64), lows
