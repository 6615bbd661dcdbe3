"""Column values as Java Paimon's file indexes see them: the key a value is hashed or looked up by.

* integers, dates (days), times (milliseconds) and timestamps (milliseconds up to precision 3, else
  microseconds) are Java ints/longs;
* floats and doubles are their IEEE bits, NaN canonical (``floatToIntBits`` / ``doubleToLongBits``);
* strings are their UTF-8 bytes, binaries their bytes; booleans booleans.

Literals of a filter are converted through the column's Arrow type, as the row filter converts them, so an
index answers for the same value the rows are compared with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import types as t

__all__ = ["KeyType", "key_type"]

_UNIT_DIVISOR = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
# A bitmap index writes each key with the width of its Java type.
_INT_WIDTHS: dict[type[t.DataType], str] = {
    t.TinyIntType: "b",
    t.SmallIntType: "h",
    t.IntType: "i",
    t.DateType: "i",
    t.TimeType: "i",
    t.BigIntType: "q",
    t.TimestampType: "q",
    t.LocalZonedTimestampType: "q",
}


@dataclass(frozen=True)
class KeyType:
    """How one column's values become index keys.

    Attributes:
        kind: ``long`` (every integer-like type), ``float`` (32-bit), ``double``, ``bytes`` or ``bool``.
        width: the ``struct`` code of the key in a bitmap index (``s`` for length-prefixed bytes).
        data_type: the column's type.
        text: whether the bytes are a string's (a bitmap index takes strings, not binaries).
    """

    kind: str
    width: str
    data_type: t.DataType
    text: bool = False

    @property
    def arrow_type(self) -> pa.DataType:
        return t.to_arrow_type(self.data_type)

    def keys(self, array: pa.Array | pa.ChunkedArray) -> tuple[Any, npt.NDArray[np.bool_]]:
        """(keys, valid mask) of ``array``: keys an int64 array (``long``, ``float``/``double`` bits),
        a bool array, or a list of bytes (None where null)."""
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
        valid = ~np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if self.kind == "bytes":
            return [None if v is None else bytes(v) for v in _as_bytes(array).to_pylist()], valid
        if self.kind == "bool":
            return np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool), valid
        if self.kind in ("float", "double"):
            width = np.float32 if self.kind == "float" else np.float64
            values = np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False), dtype=width)
            bits = values.view(np.int32 if self.kind == "float" else np.int64).astype(np.int64)
            bits[np.isnan(values)] = 0x7FC00000 if self.kind == "float" else 0x7FF8000000000000
            return bits, valid
        return self._longs(array), valid

    def _longs(self, array: pa.Array) -> npt.NDArray[np.int64]:
        arrow_type = array.type
        if pa.types.is_temporal(arrow_type):  # dates, times, timestamps: their stored integers
            array = array.view(pa.int32() if arrow_type.bit_width == 32 else pa.int64())
        raw = np.asarray(array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        if pa.types.is_timestamp(arrow_type) or pa.types.is_time(arrow_type):
            per_second = _UNIT_DIVISOR[arrow_type.unit]
            precision = getattr(self.data_type, "precision", 0)
            target = 1_000 if pa.types.is_time(arrow_type) or precision <= 3 else 1_000_000
            if per_second >= target:
                return raw // (per_second // target)  # Java keeps the floor (Timestamp.getMillisecond)
            return raw * (target // per_second)
        return raw

    def literal(self, value: Any) -> Any:
        """The key of a filter literal; None when it has none this index can answer for certainly: it does
        not fit the column, or it is a float zero or NaN (whose bits differ from values equal to it)."""
        if value is None or isinstance(value, bool) != (self.kind == "bool"):
            return None
        if isinstance(value, float) and (value == 0.0 or math.isnan(value)):
            return None
        try:
            scalar = pa.scalar(value, type=self.arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
            return None
        if self.kind in ("float", "double") and scalar.as_py() == 0.0:
            return None
        keys, valid = self.keys(pa.array([scalar.as_py()], type=self.arrow_type))
        if not valid[0]:
            return None
        key = keys[0]
        return bool(key) if self.kind == "bool" else key if self.kind == "bytes" else int(key)


def _as_bytes(array: pa.Array) -> pa.Array:
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return pc.cast(array, pa.binary())
    return array


def key_type(data_type: t.DataType) -> KeyType | None:
    """The keys of a column of ``data_type``; None for types no index here takes (decimal, nested...)."""
    if isinstance(data_type, (t.CharType, t.VarCharType)):
        return KeyType("bytes", "s", data_type, text=True)
    if isinstance(data_type, (t.BinaryType, t.VarBinaryType)):
        return KeyType("bytes", "s", data_type)
    if isinstance(data_type, t.BooleanType):
        return KeyType("bool", "?", data_type)
    if isinstance(data_type, t.FloatType):
        return KeyType("float", "i", data_type)
    if isinstance(data_type, t.DoubleType):
        return KeyType("double", "q", data_type)
    width = _INT_WIDTHS.get(type(data_type))
    if width is not None:
        return KeyType("long", width, data_type)
    return None
