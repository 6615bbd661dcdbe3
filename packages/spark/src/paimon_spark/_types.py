"""Type mapping between Paimon and Spark SQL, both ways (as Java Paimon's ``SparkTypeUtils`` maps them).

| Paimon | Spark |
|---|---|
| BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE | Boolean, Byte, Short, Integer, Long, Float, Double |
| DECIMAL(p, s) | Decimal(p, s) |
| CHAR(n), VARCHAR(n), STRING | Char(n), Varchar(n), String (Spark reads all three as String) |
| BINARY(n), VARBINARY(n), BYTES, BLOB | Binary |
| DATE | Date |
| TIME(p) | Time(min(p, 6)) |
| TIMESTAMP(p) | TimestampNTZ (microseconds) |
| TIMESTAMP_LTZ(p) | Timestamp (microseconds) |
| ARRAY<t>, VECTOR<t, n> | Array |
| MAP<k, v> | Map (a MAP key is refused both ways) |
| ROW<...> | Struct |
| VARIANT | Variant |
| MULTISET<t> | refused |

Spark's interval, null, calendar-interval, geometry and geography types have no Paimon type and are refused.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as st

from paimon_core.errors import UnsupportedTypeError
from paimon_core.types import (
    ArrayType,
    BigIntType,
    BinaryType,
    BlobType,
    BooleanType,
    CharType,
    DataField,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    VariantType,
    VectorType,
    bytes_type,
    string_type,
    to_arrow_type,
)

__all__ = ["from_spark_schema", "from_spark_type", "to_spark_schema", "to_spark_type"]

_SIMPLE_TO_SPARK: dict[type[DataType], st.DataType] = {
    BooleanType: st.BooleanType(),
    TinyIntType: st.ByteType(),
    SmallIntType: st.ShortType(),
    IntType: st.IntegerType(),
    BigIntType: st.LongType(),
    FloatType: st.FloatType(),
    DoubleType: st.DoubleType(),
    DateType: st.DateType(),
    BinaryType: st.BinaryType(),
    VarBinaryType: st.BinaryType(),
    BlobType: st.BinaryType(),
    TimestampType: st.TimestampNTZType(),
    LocalZonedTimestampType: st.TimestampType(),
    VariantType: st.VariantType(),
}


def to_spark_type(data_type: DataType, char_semantics: bool = False) -> st.DataType:
    """The Spark type of a Paimon type.

    Args:
        data_type: the Paimon type.
        char_semantics: map CHAR(n)/VARCHAR(n) to Spark's Char/Varchar instead of String (Spark data sources
            must expose String; DDL may keep the lengths).

    Raises:
        UnsupportedTypeError: MULTISET, or a MAP key that is a MAP.
    """
    simple = _SIMPLE_TO_SPARK.get(type(data_type))
    if simple is not None:
        return simple
    if isinstance(data_type, (CharType, VarCharType)):
        if not char_semantics or data_type.length == string_type().length:
            return st.StringType()
        if isinstance(data_type, CharType):
            return st.CharType(data_type.length)
        return st.VarcharType(data_type.length)
    if isinstance(data_type, DecimalType):
        return st.DecimalType(data_type.precision, data_type.scale)
    if isinstance(data_type, TimeType):
        return st.TimeType(min(data_type.precision, 6))
    if isinstance(data_type, (ArrayType, VectorType)):
        element = data_type.element
        return st.ArrayType(to_spark_type(element, char_semantics), element.nullable)
    if isinstance(data_type, MapType):
        if isinstance(data_type.key, MapType):
            raise UnsupportedTypeError(f"{data_type}: a MAP cannot be a map key in Spark")
        key = to_spark_type(data_type.key, char_semantics)
        value = to_spark_type(data_type.value, char_semantics)
        return st.MapType(key, value, data_type.value.nullable)
    if isinstance(data_type, RowType):
        return st.StructType([_spark_field(f, char_semantics) for f in data_type.fields])
    if isinstance(data_type, MultisetType):
        raise UnsupportedTypeError(f"{data_type}: Spark has no MULTISET type")
    raise UnsupportedTypeError(f"Paimon type {data_type} has no Spark equivalent")


def _spark_field(data_field: DataField, char_semantics: bool) -> st.StructField:
    metadata = {"comment": data_field.description} if data_field.description else {}
    spark_type = to_spark_type(data_field.type, char_semantics)
    return st.StructField(data_field.name, spark_type, data_field.type.nullable, metadata)


def to_spark_schema(fields: list[DataField] | tuple[DataField, ...]) -> st.StructType:
    """The Spark schema of a table's fields (String for CHAR/VARCHAR, as a data source must expose)."""
    return st.StructType([_spark_field(f, False) for f in fields])


def from_spark_type(spark_type: st.DataType, nullable: bool = True) -> DataType:
    """The Paimon type of a Spark type.

    Raises:
        UnsupportedTypeError: the type has no Paimon equivalent, or a map key is a map.
    """
    simple: DataType | None = None
    if isinstance(spark_type, st.BooleanType):
        simple = BooleanType()
    elif isinstance(spark_type, st.ByteType):
        simple = TinyIntType()
    elif isinstance(spark_type, st.ShortType):
        simple = SmallIntType()
    elif isinstance(spark_type, st.IntegerType):
        simple = IntType()
    elif isinstance(spark_type, st.LongType):
        simple = BigIntType()
    elif isinstance(spark_type, st.FloatType):
        simple = FloatType()
    elif isinstance(spark_type, st.DoubleType):
        simple = DoubleType()
    elif isinstance(spark_type, st.DateType):
        simple = DateType()
    elif isinstance(spark_type, st.BinaryType):
        simple = bytes_type()
    elif isinstance(spark_type, st.TimestampNTZType):
        simple = TimestampType(6)
    elif isinstance(spark_type, st.TimestampType):
        simple = LocalZonedTimestampType(6)
    elif isinstance(spark_type, st.VariantType):
        simple = VariantType()
    if simple is not None:
        return simple.copy(nullable)
    return _complex_from_spark(spark_type, nullable)


def _complex_from_spark(spark_type: st.DataType, nullable: bool) -> DataType:
    if isinstance(spark_type, st.CharType):
        return CharType(spark_type.length, nullable=nullable)
    if isinstance(spark_type, st.VarcharType):
        return VarCharType(spark_type.length, nullable=nullable)
    if isinstance(spark_type, st.StringType):
        return string_type(nullable)
    if isinstance(spark_type, st.DecimalType):
        return DecimalType(spark_type.precision, spark_type.scale, nullable=nullable)
    if isinstance(spark_type, st.TimeType):
        return TimeType(spark_type.precision, nullable=nullable)
    if isinstance(spark_type, st.ArrayType):
        element = from_spark_type(spark_type.elementType, spark_type.containsNull)
        return ArrayType(element, nullable=nullable)
    if isinstance(spark_type, st.MapType):
        if isinstance(spark_type.keyType, st.MapType):
            raise UnsupportedTypeError(f"{spark_type.simpleString()}: a MAP cannot be a map key")
        key = from_spark_type(spark_type.keyType, False)
        value = from_spark_type(spark_type.valueType, spark_type.valueContainsNull)
        return MapType(key, value, nullable=nullable)
    if isinstance(spark_type, st.StructType):
        fields = tuple(
            DataField(i, f.name, from_spark_type(f.dataType, f.nullable), f.metadata.get("comment"))
            for i, f in enumerate(spark_type.fields)
        )
        return RowType(fields, nullable=nullable)
    raise UnsupportedTypeError(f"Spark type {spark_type.simpleString()} has no Paimon equivalent")


def from_spark_schema(schema: st.StructType) -> pa.Schema:
    """An Arrow schema for ``Catalog.create_table`` from a Spark schema (field ids are assigned there).

    Raises:
        UnsupportedTypeError: a column's type has no Paimon equivalent.
    """
    fields = []
    for f in schema.fields:
        paimon_type = from_spark_type(f.dataType, f.nullable)
        comment = f.metadata.get("comment")  # Catalog.create_table keeps it as the column's description
        metadata = {"comment": comment} if comment else None
        fields.append(pa.field(f.name, to_arrow_type(paimon_type), nullable=f.nullable, metadata=metadata))
    return pa.schema(fields)
