"""Partition directory names, checked against Java's PartitionPathUtils and InternalRowPartitionComputer.

Expected strings come from reading the Java sources (apache/paimon 5dacde5): escapePathName's character
list, Object.toString of the internal values (LocalDateTime.toString, BigDecimal.toPlainString,
Float/Double.toString) and, for partition.legacy-name=false, the CastExecutors to STRING
(DateTimeUtils.formatDate / formatTimestamp / formatTimestampMillis).
"""

from __future__ import annotations

import posixpath
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimon_core.errors import SchemaError, UnsupportedTypeError
from paimon_core.partition import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    java_double_to_string,
    java_float_to_string,
    parse_partition_path,
    parse_partition_value,
    partition_path,
    partition_value_string,
    unescape_path_name,
)
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
    bytes_type,
    string_type,
)

STRING = string_type()

# PartitionPathUtils.CHAR_TO_ESCAPE, copied from the Java source as a literal list.
JAVA_ESCAPED = {chr(c) for c in range(0x20)} | set("\"#%'*/:=?\\\x7f{}[]^")


# --- escaping -----------------------------------------------------------------------------------------------


def test_escaped_characters_are_exactly_javas() -> None:
    for code in range(256):
        c = chr(code)
        expected = f"%{code:02X}" if c in JAVA_ESCAPED else c
        assert escape_path_name(c) == expected, repr(c)


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("us/east", "us%2Feast"),
        ("a=b", "a%3Db"),
        ("100%", "100%25"),
        ("C:\\dir", "C%3A%5Cdir"),
        ("line\nbreak", "line%0Abreak"),
        ("{x}[y]^", "%7Bx%7D%5By%5D%5E"),
        ("..", ".."),
        ("日本語 ü", "日本語 ü"),
        ("tab\there", "tab%09here"),
    ],
)
def test_escape_examples(raw: str, escaped: str) -> None:
    assert escape_path_name(raw) == escaped
    assert unescape_path_name(escaped) == raw


def test_escape_refuses_empty_names() -> None:
    with pytest.raises(SchemaError):
        escape_path_name("")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("%2f", "/"),  # lower-case hex is accepted
        ("50%", "50%"),  # too short: kept
        ("%4", "%4"),
        ("a%zzb", "a%zzb"),  # not hex: kept
        ("%+1x", "\x01x"),  # Integer.parseInt("+1", 16) == 1
        ("%-1x", "%-1x"),  # negative: kept
        ("%-0x", "\x00x"),  # "-0" parses to 0
        ("%%41", "%A"),
    ],
)
def test_unescape_follows_javas_integer_parse(text: str, expected: str) -> None:
    assert unescape_path_name(text) == expected


@given(st.text(min_size=1))
def test_escape_round_trips_and_never_leaves_a_separator(text: str) -> None:
    escaped = escape_path_name(text)
    assert "/" not in escaped and "\\" not in escaped and "=" not in escaped
    assert unescape_path_name(escaped) == text


# --- legacy names (the default) -----------------------------------------------------------------------------

LEGACY = [
    ("abc", STRING, "abc"),
    ("x", CharType(1), "x"),
    (True, BooleanType(), "true"),
    (False, BooleanType(), "false"),
    (-5, TinyIntType(), "-5"),
    (300, SmallIntType(), "300"),
    (2024, IntType(), "2024"),
    (-(2**63), BigIntType(), "-9223372036854775808"),
    (date(2024, 1, 1), DateType(), "19723"),
    (date(1969, 12, 31), DateType(), "-1"),
    (time(10, 0, 0, 500000), TimeType(3), "36000500"),
    (Decimal("1.5"), DecimalType(10, 2), "1.50"),
    (Decimal("-0.05"), DecimalType(10, 2), "-0.05"),
    (Decimal("-0"), DecimalType(5, 2), "0.00"),
    (Decimal("12345678901234567890.123"), DecimalType(38, 3), "12345678901234567890.123"),
    (7, DecimalType(4, 0), "7"),
    (1.0, DoubleType(), "1.0"),
    (1e7, DoubleType(), "1.0E7"),
    (0.1, FloatType(), "0.1"),
    (datetime(2024, 1, 1, 10, 0), TimestampType(6), "2024-01-01T10:00"),
    (datetime(2024, 1, 1, 10, 0, 5), TimestampType(6), "2024-01-01T10:00:05"),
    (datetime(2024, 1, 1, 0, 0, 0, 120000), TimestampType(3), "2024-01-01T00:00:00.120"),
    (datetime(2024, 1, 1, 0, 0, 0, 123456), TimestampType(6), "2024-01-01T00:00:00.123456"),
    (datetime(2024, 1, 1, 0, 0, 0, 1), TimestampType(6), "2024-01-01T00:00:00.000001"),
    (datetime(1960, 2, 29, 23, 59, 59, 999000), TimestampType(3), "1960-02-29T23:59:59.999"),
    (datetime(5, 1, 1), TimestampType(3), "0005-01-01T00:00"),
    (
        datetime(2024, 1, 1, 12, 30, tzinfo=timezone(timedelta(hours=2))),
        LocalZonedTimestampType(3),
        "2024-01-01T10:30",
    ),
]


@pytest.mark.parametrize(("value", "data_type", "expected"), LEGACY, ids=[e for _, _, e in LEGACY])
def test_legacy_value_strings(value: Any, data_type: DataType, expected: str) -> None:
    assert partition_value_string(value, data_type) == expected


def test_nanoseconds_print_nine_digits() -> None:
    class NanoDatetime(datetime):
        nanosecond = 5

    value = NanoDatetime(2024, 1, 1, 0, 0, 0, 0)
    assert partition_value_string(value, TimestampType(9)) == "2024-01-01T00:00:00.000000005"
    assert partition_value_string(value, TimestampType(9), legacy=False) == "2024-01-01 00:00:00.000000005"


def test_legacy_binary_names_are_not_reproducible() -> None:
    for t in (bytes_type(), BinaryType(2)):
        with pytest.raises(UnsupportedTypeError, match="legacy-name"):
            partition_value_string(b"ab", t)


# --- CAST names (partition.legacy-name=false) ---------------------------------------------------------------

CAST = [
    ("abc", STRING, "abc"),
    (12, IntType(), "12"),
    (Decimal("1.5"), DecimalType(10, 2), "1.50"),
    (date(2024, 1, 1), DateType(), "2024-01-01"),
    (date(1, 1, 1), DateType(), "0001-01-01"),
    # formatTimestamp: nine digits, trailing zeros cut but never below the precision.
    (datetime(2024, 1, 1, 10, 0), TimestampType(6), "2024-01-01 10:00:00.000000"),
    (datetime(2024, 1, 1, 10, 0), TimestampType(3), "2024-01-01 10:00:00.000"),
    (datetime(2024, 1, 1, 10, 0), TimestampType(0), "2024-01-01 10:00:00"),
    (datetime(2024, 1, 1, 10, 0, 0, 120000), TimestampType(0), "2024-01-01 10:00:00.12"),
    (datetime(2024, 1, 1, 10, 0, 0, 120000), TimestampType(6), "2024-01-01 10:00:00.120000"),
    (datetime(2024, 1, 1, 10, 0, 0, 123456), TimestampType(3), "2024-01-01 10:00:00.123456"),
    (datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc), LocalZonedTimestampType(0), "2024-01-01 12:00:00"),
    # formatTimestampMillis: the fraction stops after the last non-zero digit (at least one digit).
    (time(10, 0), TimeType(0), "10:00:00"),
    (time(10, 0), TimeType(3), "10:00:00.0"),
    (time(10, 0, 0, 500000), TimeType(3), "10:00:00.5"),
    (time(10, 0, 0, 120000), TimeType(3), "10:00:00.12"),
    (time(10, 0, 0, 123000), TimeType(2), "10:00:00.12"),
    (time(23, 59, 59, 999000), TimeType(9), "23:59:59.999"),
    (b"\xc3\xa9t\xc3\xa9", bytes_type(), "été"),
    (b"\xff", VarBinaryType(3), "\ufffd"),
]


@pytest.mark.parametrize(("value", "data_type", "expected"), CAST, ids=[e for _, _, e in CAST])
def test_cast_value_strings(value: Any, data_type: DataType, expected: str) -> None:
    assert partition_value_string(value, data_type, legacy=False) == expected


# --- Java's Double.toString / Float.toString ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (-2.5, "-2.5"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (1e-4, "1.0E-4"),
        (1234567.0, "1234567.0"),
        (1e7, "1.0E7"),
        (123456789.0, "1.23456789E8"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e23, "1.0E23"),
        (2e-3, "0.002"),
        (5e-324, "4.9E-324"),  # Java picks the closer two-digit decimal
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_java_double_to_string(value: float, expected: str) -> None:
    assert java_double_to_string(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1.0"),
        (0.1, "0.1"),
        (1 / 3, "0.33333334"),
        (1e10, "1.0E10"),
        (3.4028234663852886e38, "3.4028235E38"),
        (1.401298464324817e-45, "1.4E-45"),
        (16777217.0, "1.6777216E7"),
    ],
)
def test_java_float_to_string(value: float, expected: str) -> None:
    assert java_float_to_string(value) == expected


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_text_reads_back_to_the_same_double(value: float) -> None:
    text = java_double_to_string(value)
    assert float(text) == value
    mantissa = text.split("E")[0]
    assert "." in mantissa and not mantissa.endswith(".")


# --- defaults and hostile values ----------------------------------------------------------------------------


@pytest.mark.parametrize("blank", [None, "", " ", "\t\n", "\u2003", "\u3000 "])
def test_null_empty_and_whitespace_values_use_the_default_name(blank: str | None) -> None:
    assert partition_value_string(blank, STRING) == DEFAULT_PARTITION_NAME
    assert partition_value_string(blank, STRING, "NULL_PART") == "NULL_PART"


def test_no_break_space_is_not_java_whitespace() -> None:
    assert partition_value_string("\u00a0", STRING) == "\u00a0"


def test_partition_path_examples() -> None:
    assert partition_path([], [], []) == ""
    assert partition_path(["dt"], [date(2024, 1, 1)], [DateType()]) == "dt=19723"
    assert (
        partition_path(["dt", "region"], [date(2024, 1, 1), "us/east"], [DateType(), STRING])
        == "dt=19723/region=us%2Feast"
    )
    assert (
        partition_path(["dt", "region"], [date(2024, 1, 1), None], [DateType(), STRING], legacy=False)
        == "dt=2024-01-01/region=__DEFAULT_PARTITION__"
    )
    assert partition_path(["a/b"], ["="], [STRING]) == "a%2Fb=%3D"


@pytest.mark.parametrize(
    "value",
    [
        ".",
        "..",
        "../..",
        "../../etc/passwd",
        "/",
        "/abs",
        "a/../../b",
        "\\..\\..",
        "%2e%2e",
        "=",
        "\0",
        "x" * 1000,
    ],
)
def test_hostile_values_stay_inside_the_table(value: str) -> None:
    path = partition_path(["k", "j"], [value, value], [STRING, STRING])
    components = path.split("/")
    assert len(components) == 2
    for component in components:
        assert component not in (".", "..")
        assert component.startswith(("k=", "j="))
    table = "/warehouse/db.db/t"
    assert posixpath.normpath(posixpath.join(table, path, "bucket-0")).startswith(table + "/")
    assert parse_partition_path(path, ["k", "j"], [STRING, STRING]) == [value, value]


def test_mismatched_lengths_are_errors() -> None:
    with pytest.raises(SchemaError):
        partition_path(["a", "b"], [1], [IntType()])


# --- reading names back -------------------------------------------------------------------------------------

ROUND_TRIP = [
    ("abc", STRING),
    ("a/b=c%", STRING),
    (True, BooleanType()),
    (-7, TinyIntType()),
    (123456789012, BigIntType()),
    (Decimal("-12.50"), DecimalType(6, 2)),
    (2.5, DoubleType()),
    (float(np.float32(0.1)), FloatType()),
    (date(2024, 2, 29), DateType()),
    (time(13, 14, 15, 16000), TimeType(3)),
    (datetime(2024, 1, 1, 10, 0), TimestampType(6)),
    (datetime(2024, 1, 1, 10, 0, 0, 123456), TimestampType(6)),
    (datetime(2024, 1, 1, 10, 0, 0, 120000), TimestampType(0)),
    (datetime(2024, 1, 1, 10, 0, tzinfo=timezone.utc), LocalZonedTimestampType(3)),
    (None, IntType()),
]


@pytest.mark.parametrize("legacy", [True, False])
@pytest.mark.parametrize(("value", "data_type"), ROUND_TRIP, ids=[str(t) for _, t in ROUND_TRIP])
def test_parse_partition_path_inverts_partition_path(value: Any, data_type: DataType, legacy: bool) -> None:
    path = partition_path(["p"], [value], [data_type], legacy=legacy)
    assert parse_partition_path(path, ["p"], [data_type], legacy=legacy) == [value]
    assert parse_partition_path(path + "/", ["p"], [data_type], legacy=legacy) == [value]


def test_parse_binary_cast_names() -> None:
    path = partition_path(["b"], [b"ab/c"], [bytes_type()], legacy=False)
    assert parse_partition_path(path, ["b"], [bytes_type()], legacy=False) == [b"ab/c"]


@pytest.mark.parametrize(
    "path",
    ["", "dt=1", "dt=1/x=2/y=3", "dt=1/y=2", "dt=1/x", "dt=1/=2", "dt=1/x="],
)
def test_parse_partition_path_rejects_paths_of_other_keys(path: str) -> None:
    with pytest.raises(SchemaError):
        parse_partition_path(path, ["dt", "x"], [IntType(), IntType()])


@pytest.mark.parametrize(
    ("text", "data_type"),
    [("abc", IntType()), ("maybe", BooleanType()), ("2024-13-01", DateType()), ("10:00", TimestampType(3))],
)
def test_parse_partition_value_rejects_garbage(text: str, data_type: DataType) -> None:
    with pytest.raises(SchemaError):
        parse_partition_value(text, data_type)


def test_parse_accepts_both_date_forms() -> None:
    assert parse_partition_value("19723", DateType()) == date(2024, 1, 1)
    assert parse_partition_value("2024-01-01", DateType()) == date(2024, 1, 1)
    assert parse_partition_value("2024-01-01 10:00:00", TimestampType(0)) == datetime(2024, 1, 1, 10, 0)
    assert parse_partition_value("2024-01-01T10:00", TimestampType(0)) == datetime(2024, 1, 1, 10, 0)
