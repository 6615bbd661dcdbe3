"""Bad input gets a typed error and loses nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConfigError, CorruptMetadataError, SchemaError
from paimon_core.errors import DataFileError, PaimonError

SCHEMA = pa.schema([pa.field("k", pa.string()), pa.field("v", pa.int64())])


def _table_dir(warehouse: str) -> Path:
    return Path(warehouse) / "db.db" / "t"


def _rows(n: int, start: int = 0, key: str = "a") -> pa.Table:
    return pa.table({"k": [key] * n, "v": list(range(start, start + n))}, schema=SCHEMA)


def test_corrupt_latest_snapshot_is_a_typed_error_and_older_ones_still_read(
    catalog: Catalog, warehouse: str
) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(3))
    table.append(_rows(2, 3))
    (_table_dir(warehouse) / "snapshot" / "snapshot-2").write_text('{"version": 3, "id": 2, "schemaI')
    with pytest.raises(CorruptMetadataError) as info:
        table.to_arrow()
    assert "snapshot-2" in str(info.value)
    assert table.to_arrow(snapshot_id=1).num_rows == 3


def test_garbage_latest_hint_is_ignored(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(3))
    table.append(_rows(2, 3))
    (_table_dir(warehouse) / "snapshot" / "LATEST").write_text("not a number")
    assert table.to_arrow().num_rows == 5
    assert table.append(_rows(1, 5)) == 3


def test_stale_latest_hint_never_causes_a_lost_commit(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(1))
    table.append(_rows(1, 1))
    (_table_dir(warehouse) / "snapshot" / "LATEST").write_text("1")
    assert table.append(_rows(1, 2)) == 3
    assert table.to_arrow().num_rows == 3


def test_missing_manifest_is_a_typed_error_naming_the_file(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(3))
    manifests = sorted((_table_dir(warehouse) / "manifest").glob("manifest-[!l]*"))
    assert manifests
    os.remove(manifests[0])
    with pytest.raises(CorruptMetadataError) as info:
        table.to_arrow()
    assert manifests[0].name in str(info.value)


def test_missing_data_file_is_a_typed_error(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(3))
    (data_file,) = (_table_dir(warehouse) / "bucket-0").glob("data-*.parquet")
    os.remove(data_file)
    with pytest.raises(DataFileError) as info:
        table.to_arrow()
    assert data_file.name in str(info.value)
    assert info.value.path is not None and info.value.path.endswith(data_file.name)


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_unreadable_data_file_is_a_typed_error_naming_it(
    catalog: Catalog, warehouse: str, damage: str
) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(100))
    (data_file,) = (_table_dir(warehouse) / "bucket-0").glob("data-*.parquet")
    content = data_file.read_bytes()
    data_file.write_bytes(content[: len(content) // 2] if damage == "truncate" else b"not parquet" * 50)
    for read in (table.to_arrow, lambda: list(table.to_batches())):
        with pytest.raises(DataFileError) as info:
            read()
        assert data_file.name in str(info.value)


@pytest.mark.parametrize(
    "batch",
    [
        pa.table({"k": ["a"]}),  # missing column
        pa.table({"k": ["a"], "v": [1], "extra": [1]}),  # unknown column
        pa.table({"k": [1], "v": [1]}),  # wrong type, no silent string conversion
        pa.table({"k": ["a"], "v": ["1"]}),
    ],
)
def test_batch_with_wrong_schema_is_rejected_and_nothing_lands(
    catalog: Catalog, warehouse: str, batch: pa.Table
) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(2))
    with pytest.raises(SchemaError):
        table.append(batch)
    assert len(table.snapshots()) == 1 and table.to_arrow().num_rows == 2
    assert len(list((_table_dir(warehouse) / "bucket-0").glob("*.parquet"))) == 1  # no leftovers


def test_failed_write_midway_leaves_no_files(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    batches = [_rows(5).to_batches()[0], pa.table({"k": ["a"], "v": ["x"]}).to_batches()[0]]
    with pytest.raises(SchemaError):
        table.append(batches)
    assert table.snapshots() == []
    assert not list(_table_dir(warehouse).glob("**/*.parquet"))


def test_not_null_column_rejects_nulls(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("k", pa.string(), nullable=False)])
    table = catalog.create_table("db.t", schema)
    with pytest.raises(SchemaError):
        table.append(pa.table({"k": ["a", None]}))


ROWS = pa.schema(
    [
        pa.field("p", pa.string(), nullable=False),
        pa.field("k", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
        pa.field("s", pa.struct([pa.field("a", pa.int64(), nullable=False)])),
    ]
)
_KEYED = {"partition_keys": ["p"], "primary_keys": ["p", "k"]}


def _declared(**columns: pa.Array) -> pa.Table:
    """Data declared with the table's own schema (Arrow does not enforce NOT NULL)."""
    present = {**{"p": pa.array(["x", "x"]), "k": pa.array([1, 2]), "v": pa.array(["a", "b"])}, **columns}
    present.setdefault("s", pa.array([{"a": 1}, None], ROWS.field("s").type))
    return pa.Table.from_arrays([present[name] for name in ROWS.names], schema=ROWS)


# Each door that takes user data, with a null where the table allows none: (table, call, column named).
_NULL_DOORS = {
    "append-not-null-column": ({}, "append", _declared(k=pa.array([1, None])), "'k'"),
    "append-nested-not-null": (
        {},
        "append",
        _declared(s=pa.array([{"a": 1}, {"a": None}], ROWS[3].type)),
        "'s.a'",
    ),
    "upsert-null-key": (_KEYED, "append", _declared(k=pa.array([1, None])), "'k'"),
    "upsert-null-partition": (_KEYED, "append", _declared(p=pa.array(["x", None])), "'p'"),
    "delete-null-key": (_KEYED, "delete", pa.table({"p": ["x", "x"], "k": [1, None]}), "'k'"),
    "delete-null-key-declared": (_KEYED, "delete", _declared(k=pa.array([1, None])), "'k'"),
    "delete-null-partition": (_KEYED, "delete", pa.table({"p": ["x", None], "k": [1, 2]}), "'p'"),
    "delete-wrong-key-type": (_KEYED, "delete", pa.table({"p": ["x"], "k": ["1"]}), "'k'"),
}


@pytest.mark.parametrize(("options", "door", "data", "named"), _NULL_DOORS.values(), ids=list(_NULL_DOORS))
def test_nulls_where_the_table_allows_none_are_a_schema_error_naming_the_column(
    catalog: Catalog, options: dict[str, Any], door: str, data: pa.Table, named: str
) -> None:
    table = catalog.create_table("db.t", ROWS, **options)
    table.append(_declared())
    before = table.to_arrow()
    with pytest.raises(SchemaError) as info:
        getattr(table, door)(data)
    assert named in str(info.value)
    assert len(table.snapshots()) == 1 and table.to_arrow().equals(before)
    assert len(list(Path(table.path).rglob("*.parquet"))) == 1  # nothing left behind


def test_a_delete_by_key_needs_the_values_of_not_null_columns(catalog: Catalog) -> None:
    schema = pa.schema(
        [pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False)]
    )
    table = catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "1"})
    table.append(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    with pytest.raises(SchemaError, match=r"NOT NULL columns \['v'\]"):  # a -D record stores the whole row
        table.delete(pa.table({"k": [1]}))
    table.delete(pa.table({"k": [1], "v": ["a"]}))
    assert table.to_arrow().to_pylist() == [{"k": 2, "v": "b"}]


def test_safe_widening_is_accepted(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("v", pa.int16()), pa.field("f", pa.float64())])
    table = catalog.create_table("db.t", schema)
    table.append(pa.table({"v": pa.array([1, 2], pa.int64()), "f": pa.array([1, 2], pa.int32())}))
    assert table.to_arrow().to_pylist() == [{"v": 1, "f": 1.0}, {"v": 2, "f": 2.0}]
    with pytest.raises(SchemaError):  # overflow is not silently wrapped
        table.append(pa.table({"v": pa.array([70000], pa.int64()), "f": [1.0]}))


def test_unknown_and_invalid_options(catalog: Catalog) -> None:
    with pytest.raises(ConfigError) as info:
        catalog.create_table("db.t", SCHEMA, options={"buckets": "4"})
    assert info.value.key == "buckets"
    with pytest.raises(ConfigError):
        catalog.create_table("db.t", SCHEMA, options={"bucket": "zero"})
    with pytest.raises(ConfigError):
        catalog.create_table("db.t", SCHEMA, options={"bucket": "4"})  # needs bucket-key
    with pytest.raises(ConfigError):
        catalog.create_table("db.t", SCHEMA, options={"target-file-size": "lots"})
    assert not catalog.table_exists("db.t")
    table = catalog.create_table("db.t", SCHEMA, options={"fields.k.stats-mode": "full"})
    with pytest.raises(ConfigError):
        catalog.get_table("db.t", **{"no.such": "1"})
    with pytest.raises(ConfigError):
        catalog.alter_options("db.t", {"bucket": "3"})  # immutable
    assert table.options.get("fields.k.stats-mode") == "full"


@pytest.mark.parametrize(
    "value",
    [
        "a/b",
        "..",
        ".",
        "k=v",
        "100%",
        "x\x01y",
        "",
        "  ",
        "tab\tnew\nline",
        "ünï/cødé",
        "a" * 200,
        "#?*:[]{}^'\"",
    ],
)
def test_hostile_partition_values_are_escaped_inside_the_table(
    catalog: Catalog, warehouse: str, value: str
) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["k"])
    table.append(pa.table({"k": [value, "plain"], "v": [1, 2]}, schema=SCHEMA))
    root = _table_dir(warehouse).resolve()
    for parquet in root.glob("**/*.parquet"):
        assert parquet.resolve().is_relative_to(root)
        partition_dir = parquet.parent.parent
        assert partition_dir.parent == root  # exactly one directory level per partition key
        assert partition_dir.name.startswith("k=")
    result = {r["v"]: r["k"] for r in table.to_arrow().to_pylist()}
    assert result == {1: value, 2: "plain"}
    assert table.to_arrow(filter=[("k", "=", value)]).column("v").to_pylist() == [1]


def test_partition_value_escaping_matches_java_rules(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["k"])
    table.append(pa.table({"k": ["a/b=c%d", None], "v": [1, 2]}, schema=SCHEMA))
    names = sorted(p.name for p in _table_dir(warehouse).iterdir() if p.name.startswith("k="))
    assert names == ["k=__DEFAULT_PARTITION__", "k=a%2Fb%3Dc%25d"]


def test_errors_share_one_root() -> None:
    for error in (ConfigError, CorruptMetadataError, SchemaError):
        assert issubclass(error, PaimonError)


def test_a_partition_value_too_long_for_a_file_name_is_a_typed_error(
    catalog: Catalog, warehouse: str
) -> None:
    schema = pa.schema([pa.field("k", pa.string()), pa.field("p", pa.string())])
    table = catalog.create_table("db.parts", schema, partition_keys=["p"])
    with pytest.raises(DataFileError, match="cannot create data file") as info:
        table.append(pa.table({"k": ["a"], "p": ["x" * 5000]}, schema=schema))
    assert info.value.path is not None and "x" * 5000 in info.value.path
    assert len(str(info.value)) < 1000  # names the file without repeating a 5,000-character path
    assert table.latest_snapshot() is None
