"""Paimon <-> Spark type mapping, both ways."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import types as st

from paimon_core.errors import UnsupportedTypeError
from paimon_core.types import (
    ArrayType,
    DataField,
    IntType,
    MapType,
    MultisetType,
    RowType,
    parse_data_type,
    string_type,
)
from paimon_spark import from_spark_schema, from_spark_type, to_spark_type

PAIMON_TO_SPARK = [
    ("BOOLEAN", st.BooleanType()),
    ("TINYINT", st.ByteType()),
    ("SMALLINT", st.ShortType()),
    ("INT", st.IntegerType()),
    ("BIGINT", st.LongType()),
    ("FLOAT", st.FloatType()),
    ("DOUBLE", st.DoubleType()),
    ("DECIMAL(38, 10)", st.DecimalType(38, 10)),
    ("CHAR(3)", st.StringType()),
    ("VARCHAR(7)", st.StringType()),
    ("STRING", st.StringType()),
    ("BINARY(4)", st.BinaryType()),
    ("VARBINARY(9)", st.BinaryType()),
    ("BYTES", st.BinaryType()),
    ("DATE", st.DateType()),
    ("TIME(3)", st.TimeType(3)),
    ("TIME(9)", st.TimeType(6)),
    ("TIMESTAMP(3)", st.TimestampNTZType()),
    ("TIMESTAMP(9)", st.TimestampNTZType()),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", st.TimestampType()),
    ("VARIANT", st.VariantType()),
    ({"type": "ARRAY", "element": "INT NOT NULL"}, st.ArrayType(st.IntegerType(), False)),
    (
        {"type": "MAP", "key": "STRING NOT NULL", "value": "DOUBLE"},
        st.MapType(st.StringType(), st.DoubleType()),
    ),
    (
        {
            "type": "ROW",
            "fields": [
                {"id": 0, "name": "a", "type": "INT NOT NULL"},
                {"id": 1, "name": "b", "type": {"type": "ARRAY", "element": "STRING"}},
            ],
        },
        st.StructType(
            [st.StructField("a", st.IntegerType(), False), st.StructField("b", st.ArrayType(st.StringType()))]
        ),
    ),
]


@pytest.mark.parametrize(("paimon", "spark"), PAIMON_TO_SPARK, ids=[str(p) for p, _ in PAIMON_TO_SPARK])
def test_paimon_to_spark(paimon: str, spark: st.DataType) -> None:
    assert to_spark_type(parse_data_type(paimon)) == spark


SPARK_TO_PAIMON = [
    (st.BooleanType(), "BOOLEAN"),
    (st.ByteType(), "TINYINT"),
    (st.ShortType(), "SMALLINT"),
    (st.IntegerType(), "INT"),
    (st.LongType(), "BIGINT"),
    (st.FloatType(), "FLOAT"),
    (st.DoubleType(), "DOUBLE"),
    (st.DecimalType(10, 2), "DECIMAL(10, 2)"),
    (st.StringType(), "STRING"),
    (st.CharType(5), "CHAR(5)"),
    (st.VarcharType(5), "VARCHAR(5)"),
    (st.BinaryType(), "BYTES"),
    (st.DateType(), "DATE"),
    (st.TimeType(6), "TIME(6)"),
    (st.TimestampType(), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    (st.TimestampNTZType(), "TIMESTAMP(6)"),
    (st.VariantType(), "VARIANT"),
    (st.ArrayType(st.LongType(), False), "ARRAY<BIGINT NOT NULL>"),
    (st.MapType(st.IntegerType(), st.StringType()), "MAP<INT NOT NULL, STRING>"),
]


@pytest.mark.parametrize(("spark", "paimon"), SPARK_TO_PAIMON, ids=[p for _, p in SPARK_TO_PAIMON])
def test_spark_to_paimon(spark: st.DataType, paimon: str) -> None:
    assert str(from_spark_type(spark)) == paimon


def test_round_trip_of_every_mappable_type() -> None:
    for paimon, _ in PAIMON_TO_SPARK:
        original = parse_data_type(paimon)
        back = from_spark_type(to_spark_type(original, char_semantics=True), original.nullable)
        if not isinstance(paimon, str):
            assert str(back) == str(original)
        elif paimon.startswith(("BINARY", "VARBINARY")):
            assert str(back) == "BYTES"  # Spark's Binary has no length
        elif paimon in ("TIMESTAMP(3)", "TIMESTAMP(9)", "TIME(3)", "TIME(9)"):
            assert type(back) is type(original)  # Spark keeps microseconds
        else:
            assert back == original, paimon


def test_struct_fields_keep_nullability_and_comment() -> None:
    spark_type = st.StructType(
        [
            st.StructField("x", st.IntegerType(), False, {"comment": "the x"}),
            st.StructField("y", st.StringType()),
        ]
    )
    row = from_spark_type(spark_type)
    assert str(row) == "ROW<`x` INT NOT NULL COMMENT 'the x', `y` STRING>"


@pytest.mark.parametrize(
    "paimon",
    [
        MultisetType(IntType()),
        MapType(MapType(IntType(nullable=False), IntType(), nullable=False), IntType()),
        RowType((DataField(0, "m", ArrayType(MultisetType(string_type()))),)),
    ],
    ids=["multiset", "map-key-map", "nested-multiset"],
)
def test_paimon_types_spark_cannot_hold(paimon: object) -> None:
    with pytest.raises(UnsupportedTypeError):
        to_spark_type(paimon)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "spark",
    [
        st.MapType(st.MapType(st.IntegerType(), st.IntegerType()), st.IntegerType()),
        st.DayTimeIntervalType(),
        st.YearMonthIntervalType(),
        st.NullType(),
        st.CalendarIntervalType(),
    ],
    ids=["map-key-map", "day-time", "year-month", "null", "calendar"],
)
def test_spark_types_paimon_cannot_hold(spark: st.DataType) -> None:
    with pytest.raises(UnsupportedTypeError):
        from_spark_type(spark)


def test_schema_for_table_creation() -> None:
    schema = st.StructType(
        [
            st.StructField("id", st.LongType(), False),
            st.StructField("ts", st.TimestampType()),
            st.StructField("tags", st.MapType(st.StringType(), st.ArrayType(st.IntegerType()))),
        ]
    )
    arrow = from_spark_schema(schema)
    assert arrow.field("id").type == pa.int64() and not arrow.field("id").nullable
    assert arrow.field("ts").type == pa.timestamp("us", tz="UTC")
    assert pa.types.is_map(arrow.field("tags").type)
