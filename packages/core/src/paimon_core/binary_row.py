"""BinaryRow: Java Paimon's row encoding, byte for byte (docs/format.md#binaryrow).

Partitions, statistics and keys in manifests are BinaryRows; Java compares them byte-wise and hashes
them for buckets, so the bytes written here must be exactly those Java's ``BinaryRowWriter`` writes.

Layout of the row bytes: a header of ``((arity + 63 + 8) // 64) * 8`` bytes (byte 0 = RowKind, always 0
here; field ``i`` is null when bit ``i + 8`` is set), one 8-byte little-endian slot per field, then the
variable part, each value zero-padded to a multiple of 8 bytes and laid out in field order. The *stored*
form (manifest ``bytes`` fields) prefixes the row bytes with the arity as a big-endian int32.

Python values: ``bool``; ``int`` for TINYINT..BIGINT; ``float``; ``str`` for CHAR/VARCHAR; ``bytes`` for
BINARY/VARBINARY; ``decimal.Decimal`` (or ``int``) for DECIMAL; ``datetime.date`` (or the day number) for
DATE; ``datetime.time`` (or milliseconds of day) for TIME; a naive ``datetime`` (wall clock, stored as if
UTC) for TIMESTAMP; an aware ``datetime`` for TIMESTAMP_LTZ (a naive one is taken as UTC); ``None`` for
null. Objects with a ``nanosecond`` attribute (pandas Timestamps) keep their nanoseconds. Reading gives
back the same types, with timestamps truncated to microseconds (Python's resolution) and LTZ values in UTC.

Two Java details that matter for byte equality:

* A null DECIMAL with precision > 18 or a null TIMESTAMP with precision > 3 still reserves its variable
  part (16 or 8 zero bytes) and its slot holds that offset, because Java's ``RowHelper`` and generated
  projections write such nulls with ``writeDecimal(pos, null, p)`` / ``writeTimestamp(pos, null, p)``.
  (pypaimon 2.1 writes an all-zero slot and no variable part instead.)
* The unscaled bytes of a wide decimal are Java's ``BigInteger.toByteArray()``: the minimal two's
  complement, e.g. -128 is the single byte ``80`` (pypaimon 2.1 writes ``ff 80``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from datetime import date, datetime, time, timedelta, timezone
from decimal import ROUND_HALF_UP, Context, Decimal
from functools import lru_cache
from typing import Any

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
)

__all__ = [
    "EMPTY_ROW",
    "RowCodec",
    "codec_for",
    "date_days",
    "decimal_unscaled",
    "deserialize_row",
    "null_bits_size",
    "row_bytes",
    "serialize_row",
    "serialize_single",
    "time_millis",
    "timestamp_parts",
]

EMPTY_ROW = bytes(12)
"""The stored bytes of the row with no fields (arity 0): what unpartitioned tables use as partition."""

MAX_FIX_PART_DATA_SIZE = 7
HEADER_SIZE_IN_BITS = 8

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1)
_MICROS_PER_DAY = 86_400_000_000
_DECIMAL_CONTEXT = Context(prec=100, rounding=ROUND_HALF_UP)

_ARITY = struct.Struct(">i")
_I8 = struct.Struct("<b")
_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")

# A field writer stores one non-null value: (row buffer, slot offset, value, variable part, cursor) and
# returns the new cursor (the offset where the next variable-length value goes).
_Writer = Callable[[bytearray, int, Any, list[bytes], int], int]
# A null writer does the same for a null value (only wide decimals and timestamps need more than the bit).
_NullWriter = Callable[[bytearray, int, list[bytes], int], int]
# A field reader decodes one non-null value: (row bytes, row start, slot offset) -> value.
_Reader = Callable[[bytes, int, int], Any]


def null_bits_size(arity: int) -> int:
    """Bytes of the header (RowKind + null bits) of a row with ``arity`` fields."""
    return ((arity + 63 + HEADER_SIZE_IN_BITS) // 64) * 8


# --- value conversions (shared with bucket hashing and partition naming) ----------------------------------


def decimal_unscaled(value: Any, precision: int, scale: int) -> int:
    """The unscaled integer Java stores for ``value`` in DECIMAL(precision, scale).

    The value is rounded half-up to ``scale`` digits, like Java's ``Decimal.fromBigDecimal``. Java turns
    a value with too many digits into null; here it is an error.
    """
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, int) and not isinstance(value, bool):
        number = Decimal(value)
    elif isinstance(value, float):
        number = Decimal(repr(value))  # the shortest repr, like Java's BigDecimal.valueOf(double)
    else:
        raise TypeError(f"expected a Decimal, got {type(value).__name__}")
    if not number.is_finite():
        raise ValueError(f"{value} is not a finite decimal")
    quantized = number.quantize(Decimal(1).scaleb(-scale), context=_DECIMAL_CONTEXT)
    unscaled = int(quantized.scaleb(scale, context=_DECIMAL_CONTEXT))
    if abs(unscaled) >= 10**precision:
        raise ValueError(f"{value} does not fit DECIMAL({precision}, {scale})")
    return unscaled


def _decimal_from_unscaled(unscaled: int, scale: int) -> Decimal:
    return Decimal(unscaled).scaleb(-scale, context=_DECIMAL_CONTEXT)


def _java_big_integer_bytes(value: int) -> bytes:
    """``BigInteger.toByteArray()``: minimal big-endian two's complement, at least one byte."""
    magnitude_bits = value.bit_length() if value >= 0 else (~value).bit_length()
    return value.to_bytes(magnitude_bits // 8 + 1, "big", signed=True)


def timestamp_parts(value: Any, local_zoned: bool) -> tuple[int, int]:
    """(epoch milliseconds, nano of millisecond) of a datetime, as Java's ``Timestamp`` holds them.

    Milliseconds are floored, so the nanos are always in ``[0, 999_999]``.
    """
    if not isinstance(value, datetime):
        raise TypeError(f"expected a datetime, got {type(value).__name__}")
    if value.utcoffset() is not None:
        if not local_zoned:
            raise ValueError("TIMESTAMP (without time zone) needs a naive datetime; use TIMESTAMP_LTZ")
        value = value.astimezone(timezone.utc)
    seconds_of_day = (value.hour * 60 + value.minute) * 60 + value.second
    micros = (value.toordinal() - _EPOCH_ORDINAL) * _MICROS_PER_DAY + seconds_of_day * 1_000_000
    micros += value.microsecond
    nanos_extra = int(getattr(value, "nanosecond", 0))
    return micros // 1000, (micros % 1000) * 1000 + nanos_extra


def _timestamp_from_parts(millis: int, nanos: int, local_zoned: bool) -> datetime:
    result = _EPOCH + timedelta(microseconds=millis * 1000 + nanos // 1000)
    return result.replace(tzinfo=timezone.utc) if local_zoned else result


def date_days(value: Any) -> int:
    """Days since 1970-01-01 of a date (Java's internal DATE value)."""
    if isinstance(value, datetime):
        raise TypeError("expected a date, got a datetime")
    if isinstance(value, date):
        return value.toordinal() - _EPOCH_ORDINAL
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"expected a date, got {type(value).__name__}")


def time_millis(value: Any) -> int:
    """Milliseconds of day of a time (Java's internal TIME value; finer digits are dropped)."""
    if isinstance(value, time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"expected a time, got {type(value).__name__}")


# --- writers ----------------------------------------------------------------------------------------------


def _round_up_to_word(n: int) -> int:
    return (n + 7) & ~7


def _fixed_writer(packer: struct.Struct, convert: Callable[[Any], Any]) -> _Writer:
    def write(buf: bytearray, slot: int, value: Any, var: list[bytes], cursor: int) -> int:
        packer.pack_into(buf, slot, convert(value))
        return cursor

    return write


def _write_var_bytes(buf: bytearray, slot: int, data: bytes, var: list[bytes], cursor: int) -> int:
    length = len(data)
    if length <= MAX_FIX_PART_DATA_SIZE:
        # Inline: the bytes in the low bytes of the slot, 0x80 | length in the highest one.
        buf[slot : slot + length] = data
        buf[slot + 7] = 0x80 | length
        return cursor
    padded = _round_up_to_word(length)
    var.append(data + bytes(padded - length) if padded != length else data)
    _U64.pack_into(buf, slot, (cursor << 32) | length)
    return cursor + padded


def _write_string(buf: bytearray, slot: int, value: Any, var: list[bytes], cursor: int) -> int:
    if not isinstance(value, str):
        raise TypeError(f"expected a str, got {type(value).__name__}")
    return _write_var_bytes(buf, slot, value.encode("utf-8"), var, cursor)


def _write_binary(buf: bytearray, slot: int, value: Any, var: list[bytes], cursor: int) -> int:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    return _write_var_bytes(buf, slot, bytes(value), var, cursor)


def _boolean(value: Any) -> int:
    if not isinstance(value, (bool, int)):
        raise TypeError(f"expected a bool, got {type(value).__name__}")
    return 1 if value else 0


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int, got {type(value).__name__}")
    return value


def _decimal_writer(t: DecimalType) -> _Writer:
    precision, scale = t.precision, t.scale
    if t.is_compact:
        return _fixed_writer(_I64, lambda v: decimal_unscaled(v, precision, scale))

    def write(buf: bytearray, slot: int, value: Any, var: list[bytes], cursor: int) -> int:
        data = _java_big_integer_bytes(decimal_unscaled(value, precision, scale))
        var.append(data + bytes(16 - len(data)))  # always 16 bytes reserved, whatever the length
        _U64.pack_into(buf, slot, (cursor << 32) | len(data))
        return cursor + 16

    return write


def _timestamp_writer(precision: int, local_zoned: bool) -> _Writer:
    if precision <= 3:
        return _fixed_writer(_I64, lambda v: timestamp_parts(v, local_zoned)[0])

    def write(buf: bytearray, slot: int, value: Any, var: list[bytes], cursor: int) -> int:
        millis, nanos = timestamp_parts(value, local_zoned)
        var.append(_I64.pack(millis))
        _U64.pack_into(buf, slot, (cursor << 32) | nanos)
        return cursor + 8

    return write


def _reserving_null_writer(size: int) -> _NullWriter:
    """Java keeps the variable part of a null wide decimal / timestamp: zeros, offset in the slot."""

    def write(buf: bytearray, slot: int, var: list[bytes], cursor: int) -> int:
        var.append(bytes(size))
        _U64.pack_into(buf, slot, cursor << 32)
        return cursor + size

    return write


def _writer_for(t: DataType) -> tuple[_Writer, _NullWriter | None]:
    if isinstance(t, BooleanType):
        return _fixed_writer(struct.Struct("<B"), _boolean), None
    if isinstance(t, TinyIntType):
        return _fixed_writer(_I8, _integer), None
    if isinstance(t, SmallIntType):
        return _fixed_writer(_I16, _integer), None
    if isinstance(t, IntType):
        return _fixed_writer(_I32, _integer), None
    if isinstance(t, BigIntType):
        return _fixed_writer(_I64, _integer), None
    if isinstance(t, FloatType):
        return _fixed_writer(_F32, float), None
    if isinstance(t, DoubleType):
        return _fixed_writer(_F64, float), None
    if isinstance(t, DateType):
        return _fixed_writer(_I32, date_days), None
    if isinstance(t, TimeType):
        return _fixed_writer(_I32, time_millis), None
    if isinstance(t, DecimalType):
        return _decimal_writer(t), None if t.is_compact else _reserving_null_writer(16)
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        local_zoned = isinstance(t, LocalZonedTimestampType)
        null_writer = None if t.precision <= 3 else _reserving_null_writer(8)
        return _timestamp_writer(t.precision, local_zoned), null_writer
    if isinstance(t, (CharType, VarCharType)):
        return _write_string, None
    if isinstance(t, (BinaryType, VarBinaryType)):
        return _write_binary, None
    raise UnsupportedTypeError(f"BinaryRow encoding of {t} is not supported (only atomic types are)")


# --- readers ----------------------------------------------------------------------------------------------


def _fixed_reader(packer: struct.Struct, convert: Callable[[Any], Any] | None = None) -> _Reader:
    if convert is None:
        return lambda data, base, slot: packer.unpack_from(data, slot)[0]
    return lambda data, base, slot: convert(packer.unpack_from(data, slot)[0])


def _read_var_bytes(data: bytes, base: int, slot: int) -> bytes:
    word = _U64.unpack_from(data, slot)[0]
    if word & (1 << 63):
        return bytes(data[slot : slot + ((word >> 56) & 0x7F)])
    offset, length = word >> 32, word & 0xFFFFFFFF
    return bytes(data[base + offset : base + offset + length])


def _reader_for(t: DataType) -> _Reader:
    if isinstance(t, BooleanType):
        return lambda data, base, slot: data[slot] != 0
    if isinstance(t, TinyIntType):
        return _fixed_reader(_I8)
    if isinstance(t, SmallIntType):
        return _fixed_reader(_I16)
    if isinstance(t, IntType):
        return _fixed_reader(_I32)
    if isinstance(t, BigIntType):
        return _fixed_reader(_I64)
    if isinstance(t, FloatType):
        return _fixed_reader(_F32)
    if isinstance(t, DoubleType):
        return _fixed_reader(_F64)
    if isinstance(t, DateType):
        return _fixed_reader(_I32, lambda days: date.fromordinal(days + _EPOCH_ORDINAL))
    if isinstance(t, TimeType):
        return _fixed_reader(_I32, lambda ms: (datetime.min + timedelta(milliseconds=ms)).time())
    if isinstance(t, DecimalType):
        return _decimal_reader(t)
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        return _timestamp_reader(t.precision, isinstance(t, LocalZonedTimestampType))
    if isinstance(t, (CharType, VarCharType)):
        return lambda data, base, slot: _read_var_bytes(data, base, slot).decode("utf-8")
    if isinstance(t, (BinaryType, VarBinaryType)):
        return _read_var_bytes
    raise UnsupportedTypeError(f"BinaryRow decoding of {t} is not supported (only atomic types are)")


def _decimal_reader(t: DecimalType) -> _Reader:
    scale = t.scale
    if t.is_compact:
        return _fixed_reader(_I64, lambda unscaled: _decimal_from_unscaled(unscaled, scale))

    def read(data: bytes, base: int, slot: int) -> Decimal:
        word = _U64.unpack_from(data, slot)[0]
        offset, length = base + (word >> 32), word & 0xFFFFFFFF
        return _decimal_from_unscaled(
            int.from_bytes(data[offset : offset + length], "big", signed=True), scale
        )

    return read


def _timestamp_reader(precision: int, local_zoned: bool) -> _Reader:
    if precision <= 3:
        return _fixed_reader(_I64, lambda millis: _timestamp_from_parts(millis, 0, local_zoned))

    def read(data: bytes, base: int, slot: int) -> datetime:
        word = _U64.unpack_from(data, slot)[0]
        millis = _I64.unpack_from(data, base + (word >> 32))[0]
        return _timestamp_from_parts(millis, word & 0xFFFFFFFF, local_zoned)

    return read


# --- the codec --------------------------------------------------------------------------------------------


class RowCodec:
    """Encoder/decoder of BinaryRows of one fixed list of field types (layout computed once)."""

    def __init__(self, types: Sequence[DataType]) -> None:
        self.types = tuple(types)
        self.arity = len(self.types)
        self.null_bits_size = null_bits_size(self.arity)
        self.fixed_size = self.null_bits_size + 8 * self.arity
        self._prefix = _ARITY.pack(self.arity)
        writers = [_writer_for(t) for t in self.types]
        self._writers = [w for w, _ in writers]
        self._null_writers = [n for _, n in writers]
        self._readers = [_reader_for(t) for t in self.types]

    def row_bytes(self, values: Sequence[Any]) -> bytes:
        """The row bytes (no arity prefix): what Java hashes for buckets."""
        if len(values) != self.arity:
            raise SchemaError(f"expected {self.arity} values for {self._describe()}, got {len(values)}")
        buf = bytearray(self.fixed_size)
        var: list[bytes] = []
        cursor = self.fixed_size
        slot = self.null_bits_size
        for i, value in enumerate(values):
            if value is None:
                bit = i + HEADER_SIZE_IN_BITS
                buf[bit >> 3] |= 1 << (bit & 7)
                null_writer = self._null_writers[i]
                if null_writer is not None:
                    cursor = null_writer(buf, slot, var, cursor)
            else:
                try:
                    cursor = self._writers[i](buf, slot, value, var, cursor)
                except (TypeError, ValueError, OverflowError, struct.error) as exc:
                    raise SchemaError(f"field {i} ({self.types[i]}): cannot encode {value!r}: {exc}") from exc
            slot += 8
        if var:
            buf += b"".join(var)
        return bytes(buf)

    def serialize(self, values: Sequence[Any]) -> bytes:
        """The stored bytes: big-endian arity, then the row bytes."""
        return self._prefix + self.row_bytes(values)

    def deserialize(self, data: bytes) -> list[Any]:
        """Decode stored bytes (arity prefix included)."""
        if len(data) < 4 or _ARITY.unpack_from(data, 0)[0] != self.arity:
            raise SchemaError(f"stored row does not have arity {self.arity}: {bytes(data[:4]).hex()}")
        return self.read_row_bytes(data, 4)

    def read_row_bytes(self, data: bytes, base: int = 0) -> list[Any]:
        """Decode the row bytes that start at ``base`` in ``data``."""
        if len(data) - base < self.fixed_size:
            raise SchemaError(f"row of {len(data) - base} bytes is shorter than its fixed part")
        values: list[Any] = []
        slot = base + self.null_bits_size
        for i, reader in enumerate(self._readers):
            bit = i + HEADER_SIZE_IN_BITS
            if data[base + (bit >> 3)] & (1 << (bit & 7)):
                values.append(None)
            else:
                values.append(reader(data, base, slot))
            slot += 8
        return values

    def deserialize_fields(self, data: bytes, positions: Sequence[int]) -> list[Any]:
        """Decode only the fields at ``positions`` of stored bytes (arity prefix included), in that order."""
        if len(data) < 4 or _ARITY.unpack_from(data, 0)[0] != self.arity:
            raise SchemaError(f"stored row does not have arity {self.arity}: {bytes(data[:4]).hex()}")
        if len(data) - 4 < self.fixed_size:
            raise SchemaError(f"row of {len(data) - 4} bytes is shorter than its fixed part")
        values: list[Any] = []
        for i in positions:
            bit = i + HEADER_SIZE_IN_BITS
            if data[4 + (bit >> 3)] & (1 << (bit & 7)):
                values.append(None)
            else:
                values.append(self._readers[i](data, 4, 4 + self.null_bits_size + 8 * i))
        return values

    def _describe(self) -> str:
        return "(" + ", ".join(str(t) for t in self.types) + ")"


@lru_cache(maxsize=512)
def _cached_codec(types: tuple[DataType, ...]) -> RowCodec:
    return RowCodec(types)


def codec_for(types: Sequence[DataType]) -> RowCodec:
    """A (cached) :class:`RowCodec` for these field types."""
    return _cached_codec(tuple(types))


def serialize_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """Stored bytes of a row: big-endian int32 arity followed by the row bytes.

    Raises:
        SchemaError: a value does not fit its type (UnsupportedTypeError for nested types).
    """
    return codec_for(types).serialize(values)


def row_bytes(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """Row bytes without the arity prefix (the input of the bucket hash)."""
    return codec_for(types).row_bytes(values)


def deserialize_row(data: bytes, types: Sequence[DataType]) -> list[Any]:
    """Values of a stored row (arity prefix included)."""
    return codec_for(types).deserialize(data)


def serialize_single(value: Any, data_type: DataType) -> bytes:
    """Stored bytes of a one-field row."""
    return codec_for((data_type,)).serialize((value,))
