"""Partition directory names exactly as Java Paimon computes them (docs/format.md#partition-directories).

Java derives a data file's directory from the partition row (``FileStorePathFactory``), so the names
must match: ``<key>=<value>`` per partition key, joined by ``/``, keys and values escaped Hive-style by
``PartitionPathUtils.escapePathName``, values rendered by ``InternalRowPartitionComputer``:

* ``partition.legacy-name=true`` (the default): Java ``toString()`` of the internal value, so DATE is the
  day number (``19723``), TIME the millisecond of day, TIMESTAMP ``LocalDateTime.toString()``
  (``2024-01-01T10:00``), DECIMAL the plain string at the column's scale, FLOAT/DOUBLE
  ``Float/Double.toString`` (``1.0E10``).
* ``partition.legacy-name=false``: ``CAST(value AS STRING)``, so DATE ``2024-01-01``, TIMESTAMP
  ``2024-01-01 10:00:00`` with the fraction its precision asks for.
* Null, empty and whitespace-only values become ``partition.default-name``.

Every component starts with ``<key>=``, so it is never ``.`` or ``..``, and ``/`` and ``\\`` are escaped:
a value cannot lead out of the table directory.

Java renders TIMESTAMP_LTZ with ``CAST`` (non-legacy names) in the JVM's default time zone; this module
uses UTC, which matches a JVM running in UTC. Legacy names of BINARY/VARBINARY columns are Java array
identities (``[B@1b6d3586``), which nobody can reproduce, so they are rejected. Float and double text
follows Java 19 and later (shortest digits); older JVMs print a few values with extra digits.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta, timezone
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any

import numpy as np

from paimon_core.binary_row import date_days, decimal_unscaled, time_millis, timestamp_parts
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
    "DEFAULT_PARTITION_NAME",
    "escape_path_name",
    "java_double_to_string",
    "java_float_to_string",
    "parse_partition_path",
    "parse_partition_value",
    "partition_path",
    "partition_value_string",
    "unescape_path_name",
]

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"

# PartitionPathUtils.CHAR_TO_ESCAPE: control characters and "#%'*/:=?\{}[]^ plus DEL.
_ESCAPED = frozenset([*map(chr, range(0x20)), '"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f"])
_ESCAPED |= frozenset("{}[]^")
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


# --- escaping ---------------------------------------------------------------------------------------------


def escape_path_name(name: str) -> str:
    """Java's ``PartitionPathUtils.escapePathName``: ``%XX`` (upper-case hex) for the special characters.

    Raises:
        SchemaError: the name is empty (Java refuses it too).
    """
    if not name:
        raise SchemaError("a partition path name must not be empty")
    if not any(c in _ESCAPED for c in name):
        return name
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in name)


_HEX_PAIR = re.compile(r"[+-]?[0-9A-Fa-f]+")


def unescape_path_name(name: str) -> str:
    """Java's ``PartitionPathUtils.unescapePathName``, quirks included.

    Each ``%`` followed by two characters that ``Integer.parseInt(.., 16)`` accepts with a non-negative
    result becomes that character; anything else is kept as is.
    """
    if "%" not in name:
        return name
    out = []
    i = 0
    while i < len(name):
        c = name[i]
        if c == "%" and i + 2 < len(name):
            pair = name[i + 1 : i + 3]
            if _HEX_PAIR.fullmatch(pair) and int(pair, 16) >= 0:
                out.append(chr(int(pair, 16)))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


# --- value rendering --------------------------------------------------------------------------------------


def _java_is_whitespace(c: str) -> bool:
    """``Character.isWhitespace``: Unicode space separators except no-break ones, and some controls."""
    if c in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f":
        return True
    return unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in "\u00a0\u2007\u202f"


def _is_null_or_whitespace(text: str | None) -> bool:
    return text is None or all(_java_is_whitespace(c) for c in text)


def partition_value_string(
    value: Any, data_type: DataType, default_name: str = DEFAULT_PARTITION_NAME, legacy: bool = True
) -> str:
    """The unescaped text of one partition value, as Java puts it in the directory name.

    Raises:
        SchemaError: the value does not fit the type.
        UnsupportedTypeError: the type cannot be a partition key here (binary with legacy names, nested).
    """
    if value is None:
        return default_name
    try:
        text = _legacy_string(value, data_type) if legacy else _cast_string(value, data_type)
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, SchemaError):
            raise
        raise SchemaError(f"partition value {value!r} does not fit {data_type}: {exc}") from exc
    return default_name if _is_null_or_whitespace(text) else text


def _common_string(value: Any, t: DataType) -> str | None:
    """The text both modes share (Java's toString of strings, booleans and numbers), else None."""
    if isinstance(t, (CharType, VarCharType)):
        if not isinstance(value, str):
            raise TypeError(f"expected a str, got {type(value).__name__}")
        return value
    if isinstance(t, BooleanType):
        if not isinstance(value, (bool, int)):
            raise TypeError(f"expected a bool, got {type(value).__name__}")
        return "true" if value else "false"
    if isinstance(t, (TinyIntType, SmallIntType, IntType, BigIntType)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an int, got {type(value).__name__}")
        return str(value)
    if isinstance(t, FloatType):
        return java_float_to_string(float(value))
    if isinstance(t, DoubleType):
        return java_double_to_string(float(value))
    if isinstance(t, DecimalType):
        return _plain_decimal(decimal_unscaled(value, t.precision, t.scale), t.scale)
    return None


def _legacy_string(value: Any, t: DataType) -> str:
    common = _common_string(value, t)
    if common is not None:
        return common
    if isinstance(t, DateType):
        return str(date_days(value))
    if isinstance(t, TimeType):
        return str(time_millis(value))
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        millis, nanos = timestamp_parts(value, isinstance(t, LocalZonedTimestampType))
        return _local_date_time_string(millis, nanos)
    if isinstance(t, (BinaryType, VarBinaryType)):
        raise UnsupportedTypeError(
            f"legacy partition names of {t} columns are Java object identities; "
            "set partition.legacy-name=false to partition by binary values"
        )
    raise UnsupportedTypeError(f"{t} cannot be a partition key")


def _cast_string(value: Any, t: DataType) -> str:
    common = _common_string(value, t)
    if common is not None:
        return common
    if isinstance(t, DateType):
        return (date.fromordinal(date_days(value) + _EPOCH_ORDINAL)).isoformat()
    if isinstance(t, TimeType):
        return _format_time_millis(time_millis(value), t.precision)
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        millis, nanos = timestamp_parts(value, isinstance(t, LocalZonedTimestampType))
        return _format_timestamp(millis, nanos, t.precision)
    if isinstance(t, (BinaryType, VarBinaryType)):
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"expected bytes, got {type(value).__name__}")
        return bytes(value).decode("utf-8", errors="replace")
    raise UnsupportedTypeError(f"{t} cannot be a partition key")


def _plain_decimal(unscaled: int, scale: int) -> str:
    """``BigDecimal.toPlainString()`` of ``unscaled * 10**-scale``."""
    digits = str(abs(unscaled))
    if scale:
        digits = digits.rjust(scale + 1, "0")
        digits = digits[:-scale] + "." + digits[-scale:]
    return "-" + digits if unscaled < 0 else digits


def _split_millis(millis: int, nanos: int) -> tuple[date, int, int, int, int]:
    """(date, hour, minute, second, nano of second) of Java's ``Timestamp.toLocalDateTime``."""
    days, millis_of_day = divmod(millis, 86_400_000)
    nano_of_day = millis_of_day * 1_000_000 + nanos
    seconds, nano = divmod(nano_of_day, 1_000_000_000)
    return date.fromordinal(days + _EPOCH_ORDINAL), seconds // 3600, seconds // 60 % 60, seconds % 60, nano


def _local_date_time_string(millis: int, nanos: int) -> str:
    """``LocalDateTime.toString()``: seconds only when non-zero, fractions in groups of 3 digits."""
    day, hour, minute, second, nano = _split_millis(millis, nanos)
    text = f"{day.isoformat()}T{hour:02d}:{minute:02d}"
    if second or nano:
        text += f":{second:02d}"
        if nano:
            if nano % 1_000_000 == 0:
                text += f".{nano // 1_000_000:03d}"
            elif nano % 1000 == 0:
                text += f".{nano // 1000:06d}"
            else:
                text += f".{nano:09d}"
    return text


def _format_timestamp(millis: int, nanos: int, precision: int) -> str:
    """``DateTimeUtils.formatTimestamp``: nine fraction digits, trailing zeros cut down to ``precision``."""
    day, hour, minute, second, nano = _split_millis(millis, nanos)
    fraction = f"{nano:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    text = f"{day.isoformat()} {hour:02d}:{minute:02d}:{second:02d}"
    return text + "." + fraction if fraction else text


def _format_time_millis(millis: int, precision: int) -> str:
    """``DateTimeUtils.formatTimestampMillis``: the fraction stops at the last non-zero digit."""
    millis %= 86_400_000
    hour, rest = divmod(millis, 3_600_000)
    minute, rest = divmod(rest, 60_000)
    second, ms = divmod(rest, 1000)
    text = f"{hour:02d}:{minute:02d}:{second:02d}"
    if precision > 0:
        text += "."
        while precision > 0:
            text += chr(ord("0") + ms // 100)
            ms = ms % 100 * 10
            if ms == 0:
                break
            precision -= 1
    return text


# --- Java's Float.toString / Double.toString --------------------------------------------------------------

_TWO_DIGITS = Context(prec=2, rounding=ROUND_HALF_EVEN)


def _java_decimal_text(negative: bool, digits: str, exponent: int) -> str:
    """Java's layout of ``d1.d2d3.. * 10**exponent``: plain in [1e-3, 1e7), else ``d.dddE<n>``."""
    sign = "-" if negative else ""
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            fraction = digits[exponent + 1 :] or "0"
        else:
            whole, fraction = "0", "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{fraction}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest(text: str) -> tuple[str, int]:
    """(significant digits without trailing zeros, decimal exponent of the first digit) of a number."""
    _, digit_tuple, exp = Decimal(text).as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    return digits, exp + len(digit_tuple) - 1


def _java_floating_text(x: float, shortest: str, round_trips: Any) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    digits, exponent = _shortest(shortest.lstrip("-"))
    if len(digits) == 1:
        # Java (since 19) picks the closest decimal among those of one *or two* digits that round to x.
        two = abs(Decimal(x)).normalize(_TWO_DIGITS)
        if round_trips(str(two)):
            digits, exponent = _shortest(str(two))
    return _java_decimal_text(x < 0, digits, exponent)


def java_double_to_string(x: float) -> str:
    """Java's ``Double.toString`` (Java 19+ algorithm: the shortest decimal that rounds to ``x``)."""
    return _java_floating_text(x, repr(x), lambda text: float(text) == abs(x))


def java_float_to_string(x: float) -> str:
    """Java's ``Float.toString`` of the float32 nearest to ``x`` (Java 19+ algorithm)."""
    single = np.float32(x)
    shortest = np.format_float_scientific(single, unique=True, trim="-")
    return _java_floating_text(float(single), shortest, lambda text: np.float32(text) == abs(single))


# --- paths ------------------------------------------------------------------------------------------------


def partition_path(
    keys: Sequence[str],
    values: Sequence[Any],
    types: Sequence[DataType],
    default_name: str = DEFAULT_PARTITION_NAME,
    legacy: bool = True,
) -> str:
    """The partition directory relative to the table, e.g. ``dt=19723/region=us%2Feast`` (no trailing
    slash; ``""`` without partition keys)."""
    if not len(keys) == len(values) == len(types):
        raise SchemaError(f"partition keys {list(keys)} need one value and one type each")
    return "/".join(
        escape_path_name(key) + "=" + escape_path_name(partition_value_string(value, t, default_name, legacy))
        for key, value, t in zip(keys, values, types, strict=True)
    )


def parse_partition_path(
    path: str,
    keys: Sequence[str],
    types: Sequence[DataType],
    default_name: str = DEFAULT_PARTITION_NAME,
    legacy: bool = True,
) -> list[Any]:
    """The partition values of a directory name made by :func:`partition_path` (the inverse).

    Raises:
        SchemaError: the path does not have one ``key=value`` component per key, in order.
    """
    components = [c for c in path.split("/") if c]
    if len(components) != len(keys):
        raise SchemaError(f"partition path {path!r} does not match the partition keys {list(keys)}")
    values = []
    for component, key, t in zip(components, keys, types, strict=True):
        name, sep, text = component.rpartition("=")
        if not sep or not name or not text or unescape_path_name(name) != key:
            raise SchemaError(f"partition path component {component!r} is not {key}=<value>")
        values.append(parse_partition_value(unescape_path_name(text), t, default_name, legacy))
    return values


_TIMESTAMP_TEXT = re.compile(r"(-?\d{4,})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?")
_TIME_TEXT = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?")


def parse_partition_value(
    text: str, data_type: DataType, default_name: str = DEFAULT_PARTITION_NAME, legacy: bool = True
) -> Any:
    """The value of an unescaped partition text; ``None`` for the default name.

    Dates, times and timestamps are accepted in both the legacy and the CAST form. Timestamps come back
    with microsecond resolution.

    Raises:
        SchemaError: the text is not a value of the type.
    """
    if text == default_name:
        return None
    try:
        return _parse_value(text, data_type, legacy)
    except (TypeError, ValueError, ArithmeticError) as exc:
        if isinstance(exc, SchemaError):
            raise
        raise SchemaError(f"partition value {text!r} is not a {data_type}: {exc}") from exc


def _parse_value(text: str, t: DataType, legacy: bool) -> Any:
    if isinstance(t, (CharType, VarCharType)):
        return text
    if isinstance(t, BooleanType):
        if text.lower() not in ("true", "false"):
            raise ValueError("expected true or false")
        return text.lower() == "true"
    if isinstance(t, (TinyIntType, SmallIntType, IntType, BigIntType)):
        return int(text)
    if isinstance(t, FloatType):
        return float(np.float32(text))
    if isinstance(t, DoubleType):
        return float(text)
    if isinstance(t, DecimalType):
        return Decimal(text)
    if isinstance(t, DateType):
        if re.fullmatch(r"-?\d+", text):
            return date.fromordinal(int(text) + _EPOCH_ORDINAL)
        return date.fromisoformat(text)
    if isinstance(t, TimeType):
        if re.fullmatch(r"\d+", text):
            return (datetime.min + timedelta(milliseconds=int(text))).time()
        match = _TIME_TEXT.fullmatch(text)
        if match is None:
            raise ValueError("expected HH:mm[:ss[.fff]]")
        hour, minute, second, fraction = match.groups()
        return time(int(hour), int(minute), int(second or 0), int((fraction or "0").ljust(9, "0")) // 1000)
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        match = _TIMESTAMP_TEXT.fullmatch(text)
        if match is None:
            raise ValueError("expected yyyy-MM-ddTHH:mm[:ss[.fff]] or yyyy-MM-dd HH:mm:ss[.fff]")
        year, month, day, hour, minute, second, fraction = match.groups()
        micro = int((fraction or "0").ljust(9, "0")) // 1000
        value = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micro)
        return value.replace(tzinfo=timezone.utc) if isinstance(t, LocalZonedTimestampType) else value
    if isinstance(t, (BinaryType, VarBinaryType)) and not legacy:
        return text.encode("utf-8")
    raise UnsupportedTypeError(f"cannot read partition values of type {t}")
