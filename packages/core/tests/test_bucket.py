"""Bucket hashing must equal Java's DefaultBucketFunction (docs/format.md#bucket-of-a-row)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from decimal import Context, Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.binary_row import row_bytes
from paimon_core.bucket import assign_buckets, bucket_of_hash, bucket_of_row, hash_row, murmur3_32
from paimon_core.errors import SchemaError
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
    to_arrow_type,
)

STRING = string_type()
WIDE = Context(prec=60)  # the default context (28 digits) would round 38-digit values

# --- murmur -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "seed", "expected"),
    [
        # Published MurmurHash3_x86_32 verification values (SMHasher); Java's hashBytesByWords is the
        # same function for inputs whose length is a multiple of 4.
        (b"", 0, 0),
        (b"", 1, 0x514E28B7),
        (b"", 0xFFFFFFFF, 0x81F16F39),
        (b"", -1, 0x81F16F39),  # Java passes the seed as an int
        (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
        (b"\xff\xff\xff\xff", 0, 0x76293B50),
        (b"\x21\x43\x65\x87", 0, 0xF55B516B),
        (b"\x21\x43\x65\x87", 0x5082EDEE, 0x2362F9DE),
    ],
)
def test_murmur3_reference_vectors(data: bytes, seed: int, expected: int) -> None:
    result = murmur3_32(data, seed)
    assert -(2**31) <= result < 2**31  # a Java int
    assert result & 0xFFFFFFFF == expected


def test_murmur3_needs_whole_words() -> None:
    with pytest.raises(ValueError):
        murmur3_32(b"abc")


@pytest.mark.parametrize(
    ("hash_code", "buckets", "expected"),
    [(7, 3, 1), (-7, 3, 1), (-(2**31), 7, 2), (2**31 - 1, 10, 7), (-1, 1, 0), (-10, 5, 0)],
)
def test_bucket_of_hash_is_abs_of_truncating_remainder(hash_code: int, buckets: int, expected: int) -> None:
    # Math.abs(h % n) in Java: -7 % 3 == -1, Integer.MIN_VALUE % 7 == -2.
    assert bucket_of_hash(hash_code, buckets) == expected


def test_bucket_count_must_be_positive() -> None:
    with pytest.raises(ValueError):
        bucket_of_hash(1, 0)
    with pytest.raises(ValueError):
        assign_buckets(pa.table({"a": [1]}), ["a"], [IntType()], -1)


# --- against pypaimon ---------------------------------------------------------------------------------------
# Hashes produced once with pypaimon 2.1.0 (pypaimon.write.row_key_extractor: _hash_bytes_by_words over
# GenericRowSerializer.to_bytes(row)[4:], then _bucket_from_hash), run in /work/pypaimonenv. They were
# checked against Java's MurmurHashUtils.hashBytesByWords / DefaultBucketFunction by reading both: same
# constants, LE words, seed 42, fmix with the byte length, Math.abs(hash % n). The row bytes of these keys
# are the same in pypaimon and Java (see test_binary_row.py).

PYPAIMON_HASHES: list[tuple[list[Any], list[DataType], int, list[int]]] = [
    ([1], [IntType()], 1465514398, [0, 0, 1, 5, 8, 14, 30]),
    ([-1], [IntType()], 1133687267, [0, 1, 2, 6, 7, 3, 99]),
    ([0], [IntType()], -300363099, [0, 1, 0, 1, 9, 11, 91]),
    ([123456789], [BigIntType()], -1751827701, [0, 1, 0, 1, 1, 5, 117]),
    (["a"], [STRING], 943281246, [0, 0, 0, 5, 6, 14, 94]),
    (["hello world"], [STRING], 161593394, [0, 0, 2, 4, 4, 2, 50]),
    ([None], [IntType()], -1748325344, [0, 0, 2, 3, 4, 0, 96]),
    ([1, "x"], [IntType(), STRING], -796389773, [0, 1, 2, 4, 3, 13, 13]),
    ([date(2024, 1, 1)], [DateType()], -1439008885, [0, 1, 1, 6, 5, 5, 117]),
    ([Decimal("12.34")], [DecimalType(10, 2)], -1096042293, [0, 1, 0, 3, 3, 5, 53]),
    ([datetime(2024, 1, 1, 12, 0)], [TimestampType(3)], 731456870, [0, 0, 2, 4, 0, 6, 102]),
    ([3.25], [DoubleType()], 249591726, [0, 0, 0, 6, 6, 14, 46]),
    ([True], [BooleanType()], 1465514398, [0, 0, 1, 5, 8, 14, 30]),
    ([7], [SmallIntType()], -348168691, [0, 1, 1, 3, 1, 3, 115]),
    (["日本"], [STRING], -687604583, [0, 1, 2, 1, 3, 7, 103]),
]
BUCKET_COUNTS = [1, 2, 3, 7, 10, 16, 128]


@pytest.mark.parametrize(("values", "types", "expected_hash", "expected_buckets"), PYPAIMON_HASHES)
def test_matches_pypaimon_hashes_and_buckets(
    values: list[Any], types: list[DataType], expected_hash: int, expected_buckets: list[int]
) -> None:
    assert hash_row(values, types) == expected_hash
    assert [bucket_of_row(values, types, n) for n in BUCKET_COUNTS] == expected_buckets
    names = [f"k{i}" for i in range(len(types))]
    table = pa.table(
        {n: pa.array([v], to_arrow_type(t)) for n, v, t in zip(names, values, types, strict=True)}
    )
    for n, expected in zip(BUCKET_COUNTS, expected_buckets, strict=True):
        assert assign_buckets(table, names, types, n).to_pylist() == [expected]


def test_int_key_row_is_sixteen_bytes() -> None:
    # Header (RowKind 0, no nulls) + one slot: Java hashes exactly these 16 bytes.
    assert row_bytes([1], [IntType()]) == bytes(8) + b"\x01" + bytes(7)
    assert hash_row([1], [IntType()]) == murmur3_32(bytes(8) + b"\x01" + bytes(7))


# --- vectorized == scalar -----------------------------------------------------------------------------------

naive = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))
naive_ns = st.datetimes(min_value=datetime(1678, 1, 1), max_value=datetime(2261, 12, 31))  # Arrow ns range


def _values(t: DataType) -> st.SearchStrategy[Any]:
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, (TinyIntType, SmallIntType, IntType, BigIntType)):
        bits = {TinyIntType: 8, SmallIntType: 16, IntType: 32, BigIntType: 64}[type(t)]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if isinstance(t, FloatType):
        return st.floats(width=32, allow_nan=False)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(t, DecimalType):
        return st.integers(-(10**t.precision) + 1, 10**t.precision - 1).map(
            lambda u: Decimal(u).scaleb(-t.scale, WIDE)
        )
    if isinstance(t, BinaryType):
        return st.binary(min_size=t.length, max_size=t.length)
    if isinstance(t, VarBinaryType):
        return st.binary(max_size=30)
    if isinstance(t, DateType):
        return st.dates()
    if isinstance(t, TimeType):
        return st.times()
    if isinstance(t, TimestampType | LocalZonedTimestampType):
        values = naive if t.precision <= 6 else naive_ns
        if isinstance(t, LocalZonedTimestampType):
            return values.map(lambda d: d.replace(tzinfo=timezone.utc))
        return values
    return st.text(max_size=30)


key_types = st.sampled_from(
    [
        BooleanType(),
        TinyIntType(),
        SmallIntType(),
        IntType(),
        BigIntType(),
        FloatType(),
        DoubleType(),
        DecimalType(10, 2),
        DecimalType(18, 0),
        DecimalType(19, 4),
        DecimalType(38, 10),
        STRING,
        CharType(3),
        bytes_type(),
        BinaryType(3),
        BinaryType(9),
        DateType(),
        TimeType(0),
        TimeType(3),
        TimeType(6),
        TimeType(9),
        TimestampType(0),
        TimestampType(3),
        TimestampType(6),
        TimestampType(9),
        LocalZonedTimestampType(3),
        LocalZonedTimestampType(6),
        LocalZonedTimestampType(9),
    ]
)


@st.composite
def key_tables(draw: st.DrawFn) -> tuple[pa.Table, list[DataType], list[list[Any]]]:
    types = draw(st.lists(key_types, min_size=1, max_size=4))
    rows = draw(st.integers(1, 25))
    columns = [draw(st.lists(st.none() | _values(t), min_size=rows, max_size=rows)) for t in types]
    table = pa.table(
        {f"k{i}": pa.array(c, to_arrow_type(t)) for i, (c, t) in enumerate(zip(columns, types, strict=True))}
    )
    return table, types, columns


def _truncate_time(value: Any, t: DataType) -> Any:
    # Arrow holds TIME(0..3) as milliseconds: the scalar path must see the same value.
    if isinstance(t, TimeType) and isinstance(value, time) and t.precision <= 3:
        return value.replace(microsecond=value.microsecond // 1000 * 1000)
    if (
        isinstance(t, TimestampType | LocalZonedTimestampType)
        and isinstance(value, datetime)
        and t.precision <= 3
    ):
        return value.replace(microsecond=value.microsecond // 1000 * 1000)
    return value


@settings(max_examples=300, deadline=None)
@given(key_tables(), st.integers(1, 50))
def test_vectorized_buckets_equal_scalar_buckets(
    data: tuple[pa.Table, list[DataType], list[list[Any]]], n: int
) -> None:
    table, types, columns = data
    names = [f"k{i}" for i in range(len(types))]
    got = assign_buckets(table, names, types, n).to_pylist()
    expected = [
        bucket_of_row([_truncate_time(c[row], t) for c, t in zip(columns, types, strict=True)], types, n)
        for row in range(table.num_rows)
    ]
    assert got == expected


def test_vectorized_buckets_with_nanosecond_timestamps() -> None:
    rng = np.random.default_rng(7)
    raw = rng.integers(-(10**18), 10**18, 500)
    arr = pa.array(raw, pa.timestamp("ns"))
    table = pa.table({"t": arr, "s": pa.array([f"v{i % 13}" for i in range(500)])})
    types: list[DataType] = [TimestampType(9), STRING]
    got = assign_buckets(table, ["t", "s"], types, 17).to_pylist()

    class NanoDatetime(datetime):
        nanosecond = 0

    for i in range(500):
        base = datetime(1970, 1, 1) + timedelta(microseconds=int(raw[i]) // 1000)
        value = NanoDatetime.combine(base.date(), base.time())
        value.nanosecond = int(raw[i]) % 1000
        assert got[i] == bucket_of_row([value, f"v{i % 13}"], types, 17)


def test_long_strings_of_many_lengths() -> None:
    values = ["x" * k + str(k) for k in range(0, 700, 3)] + [None, ""]
    table = pa.table({"s": values})
    got = assign_buckets(table, ["s"], [STRING], 1000).to_pylist()
    assert got == [bucket_of_row([v], [STRING], 1000) for v in values]


def test_wide_decimal_sign_bytes() -> None:
    values = [
        Decimal(u).scaleb(-3, WIDE)
        for u in (-128, 128, -1, 0, -32768, -129, 127, 255, -256, 10**37, -(10**37))
    ]
    table = pa.table({"d": pa.array([*values, None], pa.decimal128(38, 3))})
    got = assign_buckets(table, ["d"], [DecimalType(38, 3)], 997).to_pylist()
    assert got == [bucket_of_row([v], [DecimalType(38, 3)], 997) for v in [*values, None]]


def test_null_wide_timestamp_key_reserves_its_part_like_java() -> None:
    # Java's projection writes writeTimestamp(pos, null, 6): the hashed row is 24 bytes, not 16.
    assert len(row_bytes([None], [TimestampType(6)])) == 24
    table = pa.table({"t": pa.array([None], pa.timestamp("us"))})
    expected = bucket_of_hash(
        murmur3_32(bytes.fromhex("000100000000000000000000100000000000000000000000")), 64
    )
    assert assign_buckets(table, ["t"], [TimestampType(6)], 64).to_pylist() == [expected]


# --- input handling -----------------------------------------------------------------------------------------


def test_chunked_sliced_and_record_batch_inputs() -> None:
    values = list(range(-50, 50))
    expected = [bucket_of_row([v], [IntType()], 8) for v in values]
    chunked = pa.table({"k": pa.chunked_array([values[:30], values[30:]], pa.int32())})
    assert assign_buckets(chunked, ["k"], [IntType()], 8).to_pylist() == expected
    batch = pa.record_batch({"k": pa.array(values, pa.int32())})
    assert assign_buckets(batch, ["k"], [IntType()], 8).to_pylist() == expected
    sliced = pa.table({"k": pa.array([0, *values], pa.int32())}).slice(1)
    assert assign_buckets(sliced, ["k"], [IntType()], 8).to_pylist() == expected
    strings = pa.array(["pad", *map(str, values)]).slice(1)
    assert assign_buckets(pa.table({"s": strings}), ["s"], [STRING], 8).to_pylist() == [
        bucket_of_row([str(v)], [STRING], 8) for v in values
    ]


def test_columns_are_cast_to_the_key_type() -> None:
    table = pa.table(
        {"k": pa.array([1, 2, None], pa.int64()), "d": pa.array(["x", "y", "z"]).dictionary_encode()}
    )
    got = assign_buckets(table, ["k", "d"], [IntType(), STRING], 5).to_pylist()
    assert got == [
        bucket_of_row([v, s], [IntType(), STRING], 5) for v, s in [(1, "x"), (2, "y"), (None, "z")]
    ]
    assert assign_buckets(table, ["k"], [IntType()], 5).type == pa.int32()


def test_bad_key_columns() -> None:
    table = pa.table({"k": pa.array([2**40])})
    with pytest.raises(SchemaError):
        assign_buckets(table, ["missing"], [IntType()], 4)
    with pytest.raises(SchemaError):
        assign_buckets(table, ["k"], [IntType()], 4)  # does not fit an INT
    with pytest.raises(SchemaError):
        assign_buckets(table, [], [], 4)


def test_empty_input() -> None:
    table = pa.table({"k": pa.array([], pa.int32())})
    result = assign_buckets(table, ["k"], [IntType()], 4)
    assert result.type == pa.int32() and len(result) == 0
