"""Schema JSON (docs/format.md#schemas), schema helpers and evolution, and the schema manager."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from paimon_core.errors import CorruptMetadataError, SchemaError, TableAlreadyExistsError
from paimon_core.schema import SchemaManager, TableSchema, highest_field_id
from paimon_core.storage import StorageBackend, clear_memory_store, get_backend
from paimon_core.types import (
    ArrayType,
    BigIntType,
    DataField,
    DateType,
    IntType,
    MapType,
    RowType,
    VarCharType,
    string_type,
)


@pytest.fixture
def table_path() -> Iterator[str]:
    path = f"memory://schemas-{uuid.uuid4().hex}/db.db/t"
    yield path
    clear_memory_store(path)


@pytest.fixture
def storage(table_path: str) -> StorageBackend:
    return get_backend(table_path, {})


def simple_schema(**changes: Any) -> TableSchema:
    values: dict[str, Any] = dict(
        id=0,
        fields=(
            DataField(0, "dt", string_type()),
            DataField(1, "id", BigIntType(nullable=False), "the key"),
            DataField(2, "v", IntType()),
        ),
        highest_field_id=2,
        partition_keys=("dt",),
        primary_keys=(),
        options={"bucket": "-1"},
        time_millis=1_700_000_000_000,
    )
    values.update(changes)
    return TableSchema(**values)


# --- JSON ---------------------------------------------------------------------------------------------------


def test_to_json_matches_javas_layout() -> None:
    # Written by hand in the shape of a Java (Jackson) schema file.
    expected = """{
  "version" : 3,
  "id" : 0,
  "fields" : [ {
    "id" : 0,
    "name" : "dt",
    "type" : "STRING"
  }, {
    "id" : 1,
    "name" : "id",
    "type" : "BIGINT NOT NULL",
    "description" : "the key"
  }, {
    "id" : 2,
    "name" : "v",
    "type" : "INT"
  } ],
  "highestFieldId" : 2,
  "partitionKeys" : [ "dt" ],
  "primaryKeys" : [ ],
  "options" : {
    "bucket" : "-1"
  },
  "timeMillis" : 1700000000000
}"""
    assert simple_schema().to_json() == expected


def test_comment_is_written_only_when_set() -> None:
    data = json.loads(simple_schema(comment="hello").to_json())
    assert list(data)[-2:] == ["comment", "timeMillis"]
    assert data["comment"] == "hello"
    assert "comment" not in json.loads(simple_schema().to_json())


def test_round_trip_with_nested_types() -> None:
    nested = RowType(
        (DataField(4, "x", IntType()), DataField(5, "tags", ArrayType(string_type()))), nullable=True
    )
    schema = simple_schema(
        fields=(
            DataField(0, "dt", string_type()),
            DataField(3, "r", nested),
            DataField(6, "m", MapType(VarCharType(10), DateType())),
        ),
        highest_field_id=6,
        primary_keys=("dt",),
        comment="c",
    )
    assert TableSchema.from_json(schema.to_json()) == schema


def test_reads_pypaimon_schema_with_null_comment() -> None:
    text = (
        '{"version": 3, "id": 0, "fields": [{"id": 0, "name": "dt", "type": "STRING"}], "highestFieldId": 0,'
        ' "partitionKeys": ["dt"], "primaryKeys": [], "options": {}, "comment": null, "timeMillis": 5}'
    )
    schema = TableSchema.from_json(text)
    assert schema.comment is None
    assert schema.options == {}
    assert schema.time_millis == 5
    assert '"comment"' not in schema.to_json()


@pytest.mark.parametrize(
    ("version", "options", "expected"),
    [
        (None, {}, {"bucket": "1", "file.format": "orc"}),
        (1, {"bucket": "4"}, {"bucket": "4", "file.format": "orc"}),
        (2, {}, {"file.format": "orc"}),
        (2, {"file.format": "parquet"}, {"file.format": "parquet"}),
        (3, {}, {}),
    ],
)
def test_old_versions_get_their_defaults(version: int | None, options: dict[str, str], expected: Any) -> None:
    data: dict[str, Any] = {
        "id": 0,
        "fields": [{"id": 0, "name": "a", "type": "INT"}],
        "highestFieldId": 0,
        "partitionKeys": [],
        "primaryKeys": [],
        "options": options,
    }
    if version is not None:
        data["version"] = version
    schema = TableSchema.from_json(json.dumps(data))
    assert schema.options == expected
    assert schema.time_millis == 0  # missing timeMillis


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("id"),
        lambda d: d.pop("fields"),
        lambda d: d.pop("highestFieldId"),
        lambda d: d.pop("options"),
        lambda d: d.pop("partitionKeys"),
        lambda d: d.pop("primaryKeys"),
        lambda d: d["fields"].append({"id": 9, "name": "x", "type": "NOT A TYPE"}),
        lambda d: d["fields"].append({"name": "no_id", "type": "INT"}),
        lambda d: d.update(partitionKeys="dt"),
    ],
)
def test_bad_schema_files_raise_corrupt_metadata_with_the_path(mutate: Any) -> None:
    data = json.loads(simple_schema().to_json())
    mutate(data)
    with pytest.raises(CorruptMetadataError) as info:
        TableSchema.from_json(json.dumps(data), "t/schema/schema-0")
    assert info.value.path == "t/schema/schema-0"


def test_bad_json_raises_corrupt_metadata() -> None:
    with pytest.raises(CorruptMetadataError):
        TableSchema.from_json("{", "p")


# --- helpers ------------------------------------------------------------------------------------------------


def test_key_helpers() -> None:
    schema = simple_schema(primary_keys=("dt", "id"))
    assert schema.field_names == ["dt", "id", "v"]
    assert schema.field_by_name("v").id == 2
    assert [f.name for f in schema.partition_fields()] == ["dt"]
    assert schema.trimmed_primary_keys() == ["id"]
    assert schema.bucket_keys() == ["id"]
    assert schema.logical_row_type().field_names == ["dt", "id", "v"]
    with pytest.raises(SchemaError):
        schema.field_by_name("nope")


def test_bucket_key_option_wins_and_is_checked() -> None:
    assert simple_schema(options={"bucket-key": " v, id "}).bucket_keys() == ["v", "id"]
    assert simple_schema().bucket_keys() == []
    with pytest.raises(SchemaError):
        simple_schema(options={"bucket-key": "nope"}).bucket_keys()
    with pytest.raises(SchemaError):
        simple_schema(options={"bucket-key": "dt"}).bucket_keys()
    with pytest.raises(SchemaError):
        simple_schema(primary_keys=("id",), options={"bucket-key": "v"}).bucket_keys()


def test_primary_key_equal_to_partition_is_rejected() -> None:
    with pytest.raises(SchemaError):
        simple_schema(primary_keys=("dt",)).trimmed_primary_keys()


def test_new_schema_normalizes_primary_keys_and_computes_the_highest_id() -> None:
    nested = RowType((DataField(7, "x", IntType()),))
    schema = TableSchema.new(
        [DataField(0, "k", IntType()), DataField(1, "r", nested)],
        primary_keys=["k"],
        options={"bucket": 2},  # type: ignore[dict-item]
    )
    assert schema.field_by_name("k").type == IntType(nullable=False)
    assert schema.highest_field_id == 7
    assert schema.options == {"bucket": "2"}
    assert schema.time_millis > 0
    kept = TableSchema.new(
        [DataField(0, "k", IntType())], primary_keys=["k"], options={"primary-key.nullable": "true"}
    )
    assert kept.field_by_name("k").type.nullable


@pytest.mark.parametrize(
    ("fields", "partition_keys", "primary_keys"),
    [
        ([DataField(0, "a", IntType()), DataField(1, "a", IntType())], (), ()),
        ([DataField(0, "a", IntType()), DataField(0, "b", IntType())], (), ()),
        ([DataField(0, "a", IntType())], ("b",), ()),
        ([DataField(0, "a", IntType())], (), ("a", "a")),
        ([DataField(0, "a", IntType()), DataField(1, "b", IntType())], ("a",), ("a",)),
    ],
)
def test_new_schema_rejects_bad_definitions(fields: Any, partition_keys: Any, primary_keys: Any) -> None:
    with pytest.raises(SchemaError):
        TableSchema.new(fields, partition_keys, primary_keys)


def test_highest_field_id_covers_nested_fields() -> None:
    deep = ArrayType(MapType(IntType(), RowType((DataField(42, "z", IntType()),))))
    assert highest_field_id([DataField(0, "a", deep), DataField(3, "b", IntType())]) == 42
    assert highest_field_id([]) == -1


def test_add_columns_assigns_ids_like_java() -> None:
    schema = simple_schema(highest_field_id=10)  # ids 3..10 were used by dropped columns
    inner = RowType((DataField(0, "c", IntType()), DataField(0, "d", IntType())))
    nested = RowType(
        (
            DataField(0, "a", IntType()),
            DataField(0, "b", inner),
            DataField(0, "e", ArrayType(RowType((DataField(0, "f", IntType()),)))),
        )
    )
    evolved = schema.add_columns([("n", nested, "new"), ("plain", string_type(), None)])
    assert evolved.id == schema.id
    assert evolved.fields[:3] == schema.fields
    column = evolved.field_by_name("n")
    assert column.id == 11 and column.description == "new"
    assert isinstance(column.type, RowType)
    # Java's ReassignFieldId numbers a nested row's fields before the field holding that row.
    ids = {f.name: f.id for f in column.type.fields}
    assert ids == {"a": 12, "b": 15, "e": 17}
    b_type = column.type.field("b").type
    assert isinstance(b_type, RowType)
    assert [(f.name, f.id) for f in b_type.fields] == [("c", 13), ("d", 14)]
    e_type = column.type.field("e").type
    assert isinstance(e_type, ArrayType) and isinstance(e_type.element, RowType)
    assert e_type.element.fields[0].id == 16
    assert evolved.field_by_name("plain").id == 18
    assert evolved.highest_field_id == 18


def test_add_columns_rejects_not_null_and_duplicates() -> None:
    schema = simple_schema()
    with pytest.raises(SchemaError, match="NOT NULL"):
        schema.add_columns([("x", IntType(nullable=False), None)])
    with pytest.raises(SchemaError, match="already exists"):
        schema.add_columns([("v", IntType(), None)])
    with pytest.raises(SchemaError, match="already exists"):
        schema.add_columns([("x", IntType(), None), ("x", IntType(), None)])


# --- the manager --------------------------------------------------------------------------------------------


def test_create_and_read(storage: StorageBackend, table_path: str) -> None:
    manager = SchemaManager(storage, table_path)
    assert manager.latest() is None
    assert manager.latest_id() is None
    schema = simple_schema()
    manager.create(schema)
    assert storage.read_bytes(f"{table_path}/schema/schema-0") == schema.to_json().encode()
    assert SchemaManager(storage, table_path).latest() == schema
    assert manager.list_ids() == [0]
    with pytest.raises(TableAlreadyExistsError):
        manager.create(schema)


def test_create_needs_id_zero(storage: StorageBackend, table_path: str) -> None:
    with pytest.raises(SchemaError):
        SchemaManager(storage, table_path).create(simple_schema(id=1))


def test_commit_change_writes_the_next_id(storage: StorageBackend, table_path: str) -> None:
    manager = SchemaManager(storage, table_path)
    manager.create(simple_schema())
    evolved = manager.commit_change(lambda s: s.add_columns([("x", IntType(), None)]))
    assert evolved.id == 1
    assert manager.latest_id() == 1
    fresh = SchemaManager(storage, table_path)
    assert fresh.schema(1) == evolved
    assert fresh.schema(0) == simple_schema()
    assert fresh.schema(1).field_by_name("x").id == 3


def test_commit_change_reapplies_after_losing_a_race(storage: StorageBackend, table_path: str) -> None:
    manager = SchemaManager(storage, table_path)
    manager.create(simple_schema())
    rival = SchemaManager(storage, table_path)
    calls: list[int] = []

    def change(latest: TableSchema) -> TableSchema:
        calls.append(latest.id)
        if len(calls) == 1:
            # Another writer commits schema-1 between our read and our write.
            rival.commit_change(lambda s: s.add_columns([("theirs", IntType(), None)]))
        return latest.add_columns([("ours", IntType(), None)])

    result = manager.commit_change(change)
    assert calls == [0, 1]
    assert result.id == 2
    assert result.field_names == ["dt", "id", "v", "theirs", "ours"]
    assert result.field_by_name("ours").id == 4


def test_commit_change_on_missing_table(storage: StorageBackend, table_path: str) -> None:
    with pytest.raises(SchemaError):
        SchemaManager(storage, table_path).commit_change(lambda s: s)


def test_missing_or_mismatched_schema_files_are_corrupt(storage: StorageBackend, table_path: str) -> None:
    manager = SchemaManager(storage, table_path)
    with pytest.raises(CorruptMetadataError, match="does not exist"):
        manager.schema(3)
    storage.write_bytes(manager.schema_path(4), simple_schema(id=7).to_json().encode())
    with pytest.raises(CorruptMetadataError, match="holds schema id 7"):
        manager.schema(4)
