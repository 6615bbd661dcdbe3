"""Java Paimon's ``bloom-filter`` file index: the 64-bit bloom filter, the hashes it is fed, its bytes.

Layout of one column's index: the number of hash functions (big-endian int32), then the bit set, bit ``i``
in byte ``i >> 3`` at ``1 << (i & 7)``. A value's 64-bit hash ``h`` sets, for ``k`` in ``1..n``, the bit
``c % bits`` where ``c = int32(h) + k * int32(h >>> 32)`` in 32-bit arithmetic, bit-flipped when negative.
Integers (dates, times and timestamps as their int/long) are hashed with Thomas Wang's 64-bit mix, strings
and binaries with XXH64 (seed 0) of their bytes; floats and doubles by their IEEE bits.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import numpy.typing as npt

__all__ = ["BloomFilter", "bloom_bits", "long_hashes", "xxhash64"]

_MASK64 = (1 << 64) - 1
_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P3 = 1609587929392839161
_P4 = 9650029242287828579
_P5 = 2870177450012600261

Int64s = npt.NDArray[np.int64]


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK64


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _MASK64
    return (_rotl(acc, 31) * _P1) & _MASK64


def _merge(acc: int, value: int) -> int:
    acc ^= _round(0, value)
    return (acc * _P1 + _P4) & _MASK64


def xxhash64(data: bytes) -> int:
    """XXH64 of ``data`` with seed 0, as a signed 64-bit integer (Java's ``LongHashFunction.xx()``)."""
    n = len(data)
    pos = 0
    if n >= 32:
        v1, v2, v3, v4 = (_P1 + _P2) & _MASK64, _P2, 0, (-_P1) & _MASK64
        lanes = struct.unpack_from(f"<{(n // 32) * 4}Q", data)
        for i in range(0, len(lanes), 4):
            v1 = _round(v1, lanes[i])
            v2 = _round(v2, lanes[i + 1])
            v3 = _round(v3, lanes[i + 2])
            v4 = _round(v4, lanes[i + 3])
        pos = (n // 32) * 32
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK64
        for v in (v1, v2, v3, v4):
            acc = _merge(acc, v)
    else:
        acc = _P5
    acc = (acc + n) & _MASK64
    while pos + 8 <= n:
        (lane,) = struct.unpack_from("<Q", data, pos)
        acc ^= _round(0, lane)
        acc = (_rotl(acc, 27) * _P1 + _P4) & _MASK64
        pos += 8
    if pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        acc ^= (word * _P1) & _MASK64
        acc = (_rotl(acc, 23) * _P2 + _P3) & _MASK64
        pos += 4
    while pos < n:
        acc ^= (data[pos] * _P5) & _MASK64
        acc = (_rotl(acc, 11) * _P1) & _MASK64
        pos += 1
    acc ^= acc >> 33
    acc = (acc * _P2) & _MASK64
    acc ^= acc >> 29
    acc = (acc * _P3) & _MASK64
    acc ^= acc >> 32
    return acc - (1 << 64) if acc >= 1 << 63 else acc


def long_hashes(keys: npt.ArrayLike) -> Int64s:
    """Thomas Wang's 64-bit integer hash of each key, in Java's wrapping ``long`` arithmetic."""
    key = np.asarray(keys, dtype=np.int64).copy()
    with np.errstate(over="ignore"):
        key = (~key) + (key << 21)
        key = key ^ (key >> 24)  # numpy's >> on int64 is arithmetic, as Java's >>
        key = (key + (key << 3)) + (key << 8)
        key = key ^ (key >> 14)
        key = (key + (key << 2)) + (key << 4)
        key = key ^ (key >> 28)
        key = key + (key << 31)
    result: Int64s = key
    return result


def bloom_bits(items: int, fpp: float) -> tuple[int, int]:
    """(bits, hash functions) of a filter sized for ``items`` at false-positive rate ``fpp`` (Java's
    ``BloomFilter64``: the bit count rounded up to a whole byte, always adding at least one bit)."""
    nb = _java_int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    bits = nb + (8 - _java_rem(nb, 8))
    functions = max(1, _java_int(math.floor(bits / items * math.log(2) + 0.5)))
    return bits, functions


def _java_int(value: float) -> int:
    """Java's ``(int)`` of a double: toward zero, saturating."""
    if math.isnan(value):
        return 0
    return max(-(1 << 31), min((1 << 31) - 1, int(value)))


def _java_rem(a: int, b: int) -> int:
    return int(math.fmod(a, b))


class BloomFilter:
    """A bloom filter over 64-bit hashes with Java Paimon's bit layout.

    Args:
        functions: the number of hash functions.
        bits: the bit set, ``len(bits) * 8`` bits.
    """

    def __init__(self, functions: int, bits: npt.NDArray[np.uint8]) -> None:
        if len(bits) == 0:
            raise ValueError("a bloom filter needs at least one byte")
        self.functions = functions
        self.bits = bits
        self.num_bits = len(bits) * 8

    @classmethod
    def sized(cls, items: int, fpp: float) -> BloomFilter:
        num_bits, functions = bloom_bits(items, fpp)
        return cls(functions, np.zeros(num_bits // 8, dtype=np.uint8))

    @classmethod
    def from_bytes(cls, data: bytes) -> BloomFilter:
        """The filter of a serialized index (count and bit set); Java reads the count from signed bytes."""
        signed = struct.unpack_from(">4b", data)
        functions = (signed[0] << 24) + (signed[1] << 16) + (signed[2] << 8) + signed[3]
        return cls(functions, np.frombuffer(data, dtype=np.uint8, offset=4))

    def to_bytes(self) -> bytes:
        return struct.pack(">i", self.functions) + self.bits.tobytes()

    def _positions(self, hashes: Int64s) -> npt.NDArray[np.int64]:
        h = np.asarray(hashes, dtype=np.int64)
        low = h.astype(np.int32).astype(np.int64)
        high = (h >> 32).astype(np.int32).astype(np.int64)  # >>> 32 then (int): the same 32 bits
        k = np.arange(1, self.functions + 1, dtype=np.int64)
        wrapped = (low[:, None] + k[None, :] * high[:, None]).astype(np.int32)  # wraps as Java's int
        positive: npt.NDArray[np.int64] = np.where(wrapped < 0, ~wrapped, wrapped).astype(np.int64)
        return positive % self.num_bits

    def add_hashes(self, hashes: Int64s) -> None:
        flags = np.unpackbits(self.bits, bitorder="little").view(np.bool_)
        flags[self._positions(hashes).ravel()] = True
        self.bits = np.packbits(flags, bitorder="little")  # bit i: byte i >> 3, mask 1 << (i & 7)

    def may_contain(self, hash64: int) -> bool:
        positions = self._positions(np.array([hash64], dtype=np.int64)).ravel()
        return bool(np.all(self.bits[positions >> 3] & (1 << (positions & 7)).astype(np.uint8)))
