"""Data types: schema-file JSON (docs/format.md#schemas, Java's DataTypeJsonParser) and the Arrow mapping."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimon_core.errors import SchemaError, UnsupportedTypeError
from paimon_core.types import (
    MAX_LENGTH,
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
    fields_from_arrow_schema,
    from_arrow_type,
    parse_data_type,
    string_type,
    to_arrow_field,
    to_arrow_schema,
    to_arrow_type,
)

# --- type strings -------------------------------------------------------------------------------------------

PRINTED = [
    (BooleanType(), "BOOLEAN"),
    (TinyIntType(), "TINYINT"),
    (SmallIntType(), "SMALLINT"),
    (IntType(nullable=False), "INT NOT NULL"),
    (BigIntType(), "BIGINT"),
    (FloatType(), "FLOAT"),
    (DoubleType(), "DOUBLE"),
    (DecimalType(10, 2), "DECIMAL(10, 2)"),
    (DecimalType(), "DECIMAL(10, 0)"),
    (string_type(), "STRING"),
    (VarCharType(MAX_LENGTH, nullable=False), "STRING NOT NULL"),
    (VarCharType(20), "VARCHAR(20)"),
    (CharType(3), "CHAR(3)"),
    (bytes_type(), "BYTES"),
    (VarBinaryType(16), "VARBINARY(16)"),
    (BinaryType(16), "BINARY(16)"),
    (DateType(), "DATE"),
    (TimeType(), "TIME(0)"),
    (TimeType(3), "TIME(3)"),
    (TimestampType(), "TIMESTAMP(6)"),
    (TimestampType(3, nullable=False), "TIMESTAMP(3) NOT NULL"),
    (LocalZonedTimestampType(), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    (LocalZonedTimestampType(9, nullable=False), "TIMESTAMP(9) WITH LOCAL TIME ZONE NOT NULL"),
    (VariantType(), "VARIANT"),
    (BlobType(nullable=False), "BLOB NOT NULL"),
]


@pytest.mark.parametrize(("data_type", "text"), PRINTED, ids=[t for _, t in PRINTED])
def test_atomic_types_print_and_parse_like_java(data_type: DataType, text: str) -> None:
    assert data_type.to_json() == text
    assert str(data_type) == text
    assert parse_data_type(text) == data_type


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("int", IntType()),
        ("INTEGER NOT NULL", IntType(nullable=False)),
        ("Integer null", IntType()),
        ("  BIGINT   NOT   NULL ", BigIntType(nullable=False)),
        ("NUMERIC(12, 3)", DecimalType(12, 3)),
        ("dec(5)", DecimalType(5, 0)),
        ("DECIMAL", DecimalType(10, 0)),
        ("DOUBLE PRECISION", DoubleType()),
        ("CHAR", CharType(1)),
        ("VARCHAR", VarCharType(1)),
        ("BINARY", BinaryType(1)),
        ("VARBINARY(2147483647)", bytes_type()),
        ("VARCHAR(2147483647) NOT NULL", string_type(nullable=False)),
        ("TIME", TimeType(0)),
        ("TIME(3) WITHOUT TIME ZONE", TimeType(3)),
        ("TIMESTAMP", TimestampType(6)),
        ("timestamp(3) without time zone", TimestampType(3)),
        ("TIMESTAMP WITH LOCAL TIME ZONE", LocalZonedTimestampType(6)),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL", LocalZonedTimestampType(3, nullable=False)),
        ("TIMESTAMP_LTZ(3)", LocalZonedTimestampType(3)),
        ("timestamp_ltz", LocalZonedTimestampType(6)),
        ("INT ARRAY", ArrayType(IntType())),
        ("INT NOT NULL ARRAY NOT NULL", ArrayType(IntType(nullable=False), nullable=False)),
        ("STRING MULTISET", MultisetType(string_type())),
        ("VECTOR<FLOAT NOT NULL, 3>", VectorType(3, FloatType(nullable=False))),
    ],
)
def test_parser_accepts_aliases_defaults_and_any_case(text: str, expected: DataType) -> None:
    assert parse_data_type(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "FOO",
        "INT(3)",
        "INT NOT",
        "DECIMAL(40, 2)",
        "DECIMAL(5, 6)",
        "TIMESTAMP(10)",
        "VARCHAR(0)",
        "TIMESTAMP WITH TIME ZONE",
        "INT INT",
        "CHAR(3",
        "INT; DROP TABLE",
    ],
)
def test_parser_rejects_invalid_type_strings(text: str) -> None:
    with pytest.raises(SchemaError):
        parse_data_type(text)


@pytest.mark.parametrize("text", ["INTERVAL DAY", "RAW", "GEOMETRY", "MAP<INT, INT>"])
def test_known_but_unsupported_types_raise_unsupported(text: str) -> None:
    with pytest.raises(UnsupportedTypeError):
        parse_data_type(text)


# --- nested types and fields --------------------------------------------------------------------------------

# As Java's JsonSerdeUtil writes them (field order id, name, type, description, defaultValue).
NESTED_JSON = {
    "type": "ROW NOT NULL",
    "fields": [
        {"id": 0, "name": "a", "type": {"type": "ARRAY", "element": "INT NOT NULL"}},
        {"id": 1, "name": "m", "type": {"type": "MAP NOT NULL", "key": "STRING NOT NULL", "value": "DOUBLE"}},
        {
            "id": 2,
            "name": "r",
            "type": {"type": "ROW", "fields": [{"id": 3, "name": "x", "type": "DATE", "description": "day"}]},
            "defaultValue": "null",
        },
        {"id": 4, "name": "s", "type": {"type": "MULTISET", "element": "STRING"}},
        {"id": 5, "name": "v", "type": {"type": "VECTOR NOT NULL", "element": "FLOAT", "length": 8}},
    ],
}


def test_nested_types_round_trip_through_json() -> None:
    parsed = parse_data_type(NESTED_JSON)
    expected = RowType(
        (
            DataField(0, "a", ArrayType(IntType(nullable=False))),
            DataField(1, "m", MapType(string_type(nullable=False), DoubleType(), nullable=False)),
            DataField(2, "r", RowType((DataField(3, "x", DateType(), "day"),)), default_value="null"),
            DataField(4, "s", MultisetType(string_type())),
            DataField(5, "v", VectorType(8, FloatType(), nullable=False)),
        ),
        nullable=False,
    )
    assert parsed == expected
    assert parsed.to_json() == NESTED_JSON
    # Key order matters for byte-identical schema files.
    assert json.dumps(parsed.to_json()) == json.dumps(NESTED_JSON)
    assert str(parsed.fields[2].type) == "ROW<`x` DATE COMMENT 'day'>"


def test_nested_type_keyword_is_case_insensitive() -> None:
    assert parse_data_type({"type": "array not null", "element": "int"}) == ArrayType(
        IntType(), nullable=False
    )


def test_fields_without_ids_are_numbered_like_javas_parser() -> None:
    # DataTypeJsonParser gives a field its id before parsing its type: pre-order.
    value = {
        "type": "ROW",
        "fields": [
            {"name": "a", "type": {"type": "ROW", "fields": [{"name": "x", "type": "INT"}]}},
            {"name": "b", "type": "INT"},
        ],
    }
    row = parse_data_type(value)
    assert isinstance(row, RowType)
    inner = row.fields[0].type
    assert isinstance(inner, RowType)
    assert [row.fields[0].id, inner.fields[0].id, row.fields[1].id] == [0, 1, 2]


def test_partial_field_ids_are_rejected() -> None:
    value = {"type": "ROW", "fields": [{"name": "a", "type": "INT"}, {"id": 7, "name": "b", "type": "INT"}]}
    with pytest.raises(SchemaError, match="partial"):
        parse_data_type(value)


def test_data_field_json_omits_unset_optional_keys() -> None:
    field = DataField(3, "price", DecimalType(10, 2, nullable=False))
    assert field.to_json() == {"id": 3, "name": "price", "type": "DECIMAL(10, 2) NOT NULL"}
    described = DataField(4, "n", IntType(), description="count", default_value="0")
    assert list(described.to_json()) == ["id", "name", "type", "description", "defaultValue"]
    assert DataField.from_json(described.to_json()) == described
    assert DataField.from_json({"id": 1, "name": "x", "type": "INT", "description": None}).description is None


@pytest.mark.parametrize(
    "value",
    [
        {"name": "x", "type": "INT"},
        {"id": "1", "name": "x", "type": "INT"},
        {"id": 1, "type": "INT"},
        {"id": 1, "name": "x", "type": {"type": "ARRAY"}},
        {"id": 1, "name": "x", "type": {"type": "WHAT", "element": "INT"}},
        {"id": 1, "name": "x", "type": 5},
    ],
)
def test_malformed_fields_raise_schema_error(value: dict[str, object]) -> None:
    with pytest.raises(SchemaError):
        DataField.from_json(value)


def test_duplicate_row_field_names_are_rejected() -> None:
    with pytest.raises(SchemaError):
        RowType((DataField(0, "a", IntType()), DataField(1, "a", IntType())))


def test_copy_changes_only_nullability() -> None:
    t = DecimalType(12, 4)
    assert t.copy(False) == DecimalType(12, 4, nullable=False)
    assert t.copy(False).copy(True) == t


# --- hypothesis: print/parse round trip ---------------------------------------------------------------------

_WITHOUT_PARAMETERS: list[Callable[[], DataType]] = [
    BooleanType,
    TinyIntType,
    SmallIntType,
    IntType,
    BigIntType,
    FloatType,
    DoubleType,
    DateType,
]
atomic_types = st.one_of(
    st.sampled_from(_WITHOUT_PARAMETERS).map(lambda make: make()),
    st.builds(lambda p, s: DecimalType(p, min(s, p)), st.integers(1, 38), st.integers(0, 38)),
    st.builds(CharType, st.integers(1, MAX_LENGTH)),
    st.builds(VarCharType, st.integers(1, MAX_LENGTH)),
    st.builds(BinaryType, st.integers(1, MAX_LENGTH)),
    st.builds(VarBinaryType, st.integers(1, MAX_LENGTH)),
    st.builds(TimeType, st.integers(0, 9)),
    st.builds(TimestampType, st.integers(0, 9)),
    st.builds(LocalZonedTimestampType, st.integers(0, 9)),
)


def _with_nullability(t: DataType) -> st.SearchStrategy[DataType]:
    return st.booleans().map(t.copy)


def _nested(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
    names = st.text(min_size=1, max_size=5)
    rows = st.lists(st.tuples(names, children), max_size=3, unique_by=lambda f: f[0]).map(
        lambda fs: RowType(tuple(DataField(i, n, t) for i, (n, t) in enumerate(fs)))
    )
    return st.one_of(children.map(ArrayType), st.builds(MapType, children, children), rows)


any_types = st.recursive(atomic_types.flatmap(_with_nullability), _nested, max_leaves=6).flatmap(
    _with_nullability
)


@given(any_types)
def test_json_round_trip(t: DataType) -> None:
    assert parse_data_type(json.loads(json.dumps(t.to_json()))) == t


# --- Arrow --------------------------------------------------------------------------------------------------

ARROW = [
    (BooleanType(), pa.bool_()),
    (TinyIntType(), pa.int8()),
    (SmallIntType(), pa.int16()),
    (IntType(), pa.int32()),
    (BigIntType(), pa.int64()),
    (FloatType(), pa.float32()),
    (DoubleType(), pa.float64()),
    (DecimalType(38, 10), pa.decimal128(38, 10)),
    (string_type(), pa.string()),
    (bytes_type(), pa.binary()),
    (BinaryType(4), pa.binary(4)),
    (DateType(), pa.date32()),
    (TimeType(0), pa.time32("ms")),
    (TimeType(3), pa.time32("ms")),
    (TimeType(6), pa.time64("us")),
    (TimeType(9), pa.time64("ns")),
    (TimestampType(0), pa.timestamp("ms")),
    (TimestampType(3), pa.timestamp("ms")),
    (TimestampType(4), pa.timestamp("us")),
    (TimestampType(6), pa.timestamp("us")),
    (TimestampType(7), pa.timestamp("ns")),
    (LocalZonedTimestampType(3), pa.timestamp("ms", tz="UTC")),
    (LocalZonedTimestampType(6), pa.timestamp("us", tz="UTC")),
    (LocalZonedTimestampType(9), pa.timestamp("ns", tz="UTC")),
]


@pytest.mark.parametrize(("paimon", "arrow"), ARROW, ids=[str(p) for p, _ in ARROW])
def test_atomic_arrow_mapping(paimon: DataType, arrow: pa.DataType) -> None:
    assert to_arrow_type(paimon) == arrow
    back = from_arrow_type(arrow)
    # Going back gives the canonical type for that Arrow type (precision from the unit).
    assert to_arrow_type(back) == arrow


@pytest.mark.parametrize(
    ("arrow", "paimon"),
    [
        (pa.large_string(), string_type()),
        (pa.string_view(), string_type()),
        (pa.large_binary(), bytes_type()),
        (pa.date64(), DateType()),
        (pa.time32("s"), TimeType(0)),
        (pa.timestamp("s"), TimestampType(0)),
        (pa.timestamp("ms"), TimestampType(3)),
        (pa.timestamp("us", tz="Europe/Paris"), LocalZonedTimestampType(6)),
        (pa.decimal256(20, 2), DecimalType(20, 2)),
        (pa.dictionary(pa.int32(), pa.string()), string_type()),
        (pa.large_list(pa.int64()), ArrayType(BigIntType())),
        (pa.list_(pa.int8(), 3), ArrayType(TinyIntType())),
        (pa.list_(pa.field("e", pa.int32(), nullable=False)), ArrayType(IntType(nullable=False))),
    ],
)
def test_arrow_types_map_to_paimon(arrow: pa.DataType, paimon: DataType) -> None:
    assert from_arrow_type(arrow) == paimon
    assert from_arrow_type(arrow, nullable=False) == paimon.copy(False)


@pytest.mark.parametrize(
    "arrow",
    [
        pa.null(),
        pa.float16(),
        pa.duration("s"),
        pa.month_day_nano_interval(),
        pa.decimal256(40, 2),
        pa.dense_union([pa.field("a", pa.int32())]),
    ],
)
def test_arrow_types_without_paimon_equivalent(arrow: pa.DataType) -> None:
    with pytest.raises(UnsupportedTypeError, match=re.escape(str(arrow).split("<")[0].split("[")[0])):
        from_arrow_type(arrow)


@pytest.mark.parametrize(
    "paimon",
    [
        MultisetType(IntType()),
        VariantType(),
        BlobType(),
        VectorType(3, FloatType()),
        ArrayType(VariantType()),
    ],
)
def test_paimon_types_without_arrow_equivalent(paimon: DataType) -> None:
    with pytest.raises(UnsupportedTypeError):
        to_arrow_type(paimon)


def test_fields_from_arrow_schema_assigns_ids_like_java_schema_builder() -> None:
    # Schema.Builder.column: the column takes the next id, then ReassignFieldId numbers the fields of
    # its type, where a nested field's own id comes after the ids inside its type.
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field(
                "s",
                pa.struct(
                    [pa.field("a", pa.struct([("x", pa.int32()), ("y", pa.int32())])), ("b", pa.int8())]
                ),
            ),
            pa.field("l", pa.list_(pa.struct([("z", pa.string())]))),
            pa.field("m", pa.map_(pa.string(), pa.float64())),
        ]
    )
    fields, highest = fields_from_arrow_schema(schema)
    assert [(f.id, f.name) for f in fields] == [(0, "id"), (1, "s"), (6, "l"), (8, "m")]
    s_type = fields[1].type
    assert isinstance(s_type, RowType)
    a_type = s_type.fields[0].type
    assert isinstance(a_type, RowType)
    assert [(f.id, f.name) for f in a_type.fields] == [(2, "x"), (3, "y")]
    assert [(f.id, f.name) for f in s_type.fields] == [(4, "a"), (5, "b")]
    l_type = fields[2].type
    assert isinstance(l_type, ArrayType) and isinstance(l_type.element, RowType)
    assert l_type.element.fields[0].id == 7
    assert highest == 8
    assert fields[0].type == BigIntType(nullable=False)
    assert fields[3].type == MapType(string_type(nullable=False), DoubleType())


def test_fields_from_arrow_schema_starts_at_first_id() -> None:
    fields, highest = fields_from_arrow_schema(
        pa.schema([("a", pa.int32()), ("b", pa.string())]), first_id=10
    )
    assert [f.id for f in fields] == [10, 11]
    assert highest == 11
    assert fields_from_arrow_schema(pa.schema([]), first_id=5) == ([], 4)


def test_arrow_field_carries_field_ids_like_javas_parquet_writer() -> None:
    field = DataField(5, "l", ArrayType(MapType(IntType(), string_type(), nullable=False)), "doc")
    arrow = to_arrow_field(field)
    assert arrow.name == "l"
    assert arrow.nullable
    assert arrow.metadata == {b"PARQUET:field_id": b"5"}
    element = arrow.type.value_field
    # SpecialFields: base = Integer.MAX_VALUE / 4 = 536870911; element = base + id * 1024 + depth.
    assert element.metadata == {b"PARQUET:field_id": str(536870911 + 5 * 1024 + 1).encode()}
    assert not element.nullable
    # Java hands the column id (not the element's) down: key = base - id * 1024 - depth, value = + depth.
    map_type = element.type
    assert map_type.key_field.metadata == {b"PARQUET:field_id": str(536870911 - 5 * 1024 - 2).encode()}
    assert map_type.item_field.metadata == {b"PARQUET:field_id": str(536870911 + 5 * 1024 + 2).encode()}
    assert not map_type.key_field.nullable


def test_parquet_files_carry_the_field_ids(tmp_path: Path) -> None:
    fields = [
        DataField(0, "id", BigIntType(nullable=False)),
        DataField(1, "r", RowType((DataField(2, "x", IntType()),))),
        DataField(3, "tags", ArrayType(string_type())),
    ]
    schema = to_arrow_schema(fields)
    table = pa.table(
        {"id": [1], "r": [{"x": 7}], "tags": [["a"]]},
        schema=schema,
    )
    pq.write_table(table, tmp_path / "f.parquet")
    parquet_schema = pq.ParquetFile(tmp_path / "f.parquet").schema
    ids = {parquet_schema.column(i).path: parquet_schema.column(i) for i in range(len(parquet_schema))}
    assert set(ids) == {"id", "r.x", "tags.list.element"}
    read = pq.read_schema(tmp_path / "f.parquet")
    assert read.field("id").metadata[b"PARQUET:field_id"] == b"0"
    assert read.field("r").type.field("x").metadata[b"PARQUET:field_id"] == b"2"
    assert read.field("tags").metadata[b"PARQUET:field_id"] == b"3"
    assert not read.field("id").nullable


@given(any_types)
def test_arrow_round_trip_keeps_the_arrow_type(t: DataType) -> None:
    arrow = to_arrow_type(t)
    assert to_arrow_type(from_arrow_type(arrow, t.nullable)).equals(arrow, check_metadata=False)
