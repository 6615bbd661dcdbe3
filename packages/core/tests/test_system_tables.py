"""System tables: ``catalog.get_table("db.t$snapshots")`` and friends, with Paimon's columns and values."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConfigError, ReadOnlyTableError, SystemTable
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.maintenance import create_tag
from paimon_core.table import SYSTEM_TABLES

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])


@pytest.fixture()
def table(catalog: Catalog) -> Any:
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"], options={"write-only": "true"})
    t.append(pa.table({"id": [1, 2, 3], "dt": ["d1", "d1", "d2"]}, schema=SCHEMA))
    t.append(pa.table({"id": [4], "dt": ["d2"]}, schema=SCHEMA))
    catalog.alter_options("db.t", {"snapshot.num-retained.max": "50"})
    create_tag(catalog.get_table("db.t"), "first", 1, time_retained=dt.timedelta(hours=1, minutes=30))
    ConsumerManager(t.storage, t.path).reset_consumer("job", Consumer(2))
    return catalog.get_table("db.t")


def _rows(catalog: Catalog, name: str, **options: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = catalog.get_table(f"db.t${name}", **options).to_arrow().to_pylist()
    return rows


def test_snapshots(catalog: Catalog, table: Any) -> None:
    rows = _rows(catalog, "snapshots")
    assert [r["snapshot_id"] for r in rows] == [1, 2]
    assert [r["commit_kind"] for r in rows] == ["APPEND", "APPEND"]
    assert [r["total_record_count"] for r in rows] == [3, 4]
    assert [r["delta_record_count"] for r in rows] == [3, 1]
    snapshot = table.snapshot_manager.snapshot(2)
    assert rows[1]["commit_user"] == snapshot.commit_user
    assert rows[1]["commit_time"] == dt.datetime.fromtimestamp(snapshot.time_millis / 1000)
    assert rows[1]["base_manifest_list"] == snapshot.base_manifest_list
    system = catalog.get_table("db.t$snapshots")
    assert isinstance(system, SystemTable)
    assert system.arrow_schema.names[:6] == [
        "snapshot_id", "schema_id", "commit_user", "commit_identifier", "commit_kind", "commit_time",
    ]  # fmt: skip
    assert system.to_arrow(columns=["snapshot_id"], filter=[("snapshot_id", ">", 1)]).to_pylist() == [
        {"snapshot_id": 2}
    ]


def test_schemas_and_options(catalog: Catalog, table: Any) -> None:
    schemas = _rows(catalog, "schemas")
    assert [r["schema_id"] for r in schemas] == [0, 1]  # alter_options made schema 1
    assert [f["name"] for f in json.loads(schemas[1]["fields"])] == ["id", "dt"]
    assert json.loads(schemas[1]["partition_keys"]) == ["dt"] and json.loads(schemas[1]["primary_keys"]) == []
    assert json.loads(schemas[1]["options"])["snapshot.num-retained.max"] == "50"
    options = {r["key"]: r["value"] for r in _rows(catalog, "options")}
    assert options == {"write-only": "true", "snapshot.num-retained.max": "50"}


def test_files_partitions_and_manifests(catalog: Catalog, table: Any) -> None:
    files = _rows(catalog, "files")
    assert sorted((r["partition"], r["record_count"]) for r in files) == [
        ("{d1}", 2),
        ("{d2}", 1),
        ("{d2}", 1),
    ]
    entry = {e.file.file_name: e for e in table.live_entries()}
    for row in files:
        name = row["file_path"].rsplit("/", 1)[-1]
        assert row["file_size_in_bytes"] == entry[name].file.file_size
        assert row["file_format"] == "parquet" and row["level"] == 0 and row["file_source"] == "APPEND"
    first = next(r for r in files if r["partition"] == "{d1}")
    assert first["min_value_stats"] == "{id=1, dt=d1}" and first["max_value_stats"] == "{id=2, dt=d1}"
    assert first["null_value_counts"] == "{id=0, dt=0}"
    # The data table's scan options choose the snapshot described.
    assert len(_rows(catalog, "files", **{"scan.snapshot-id": "1"})) == 2
    partitions = {r["partition"]: r for r in _rows(catalog, "partitions")}
    assert {p: (r["record_count"], r["file_count"]) for p, r in partitions.items()} == {
        "{d1}": (2, 1),
        "{d2}": (2, 2),
    }
    manifests = _rows(catalog, "manifests")
    assert sum(m["num_added_files"] for m in manifests) == 3
    assert {m["min_partition_stats"] for m in manifests} <= {"{d1}", "{d2}"}


def test_tags_consumers_and_branches(catalog: Catalog, table: Any) -> None:
    (tag,) = _rows(catalog, "tags")
    assert (tag["tag_name"], tag["snapshot_id"], tag["record_count"]) == ("first", 1, 3)
    assert tag["time_retained"] == "PT1H30M"
    assert _rows(catalog, "consumers") == [{"consumer_id": "job", "next_snapshot_id": 2}]
    assert _rows(catalog, "branches") == []


def test_every_system_table_reads_and_refuses_writes(catalog: Catalog, table: Any) -> None:
    for name in SYSTEM_TABLES:
        system = catalog.get_system_table(f"db.t${name}")
        assert system.to_batches().read_all().schema == system.arrow_schema
        with pytest.raises(ReadOnlyTableError):
            system.append(pa.table({"x": [1]}))
    with pytest.raises(ConfigError, match="unknown system table 'snapshot'"):
        catalog.get_table("db.t$snapshot")


def test_file_level_tables_describe_the_live_files(catalog: Catalog) -> None:
    """``$buckets`` sums ``$files`` per bucket, ``$file_key_ranges`` repeats its keys, ``$table_indexes``
    lists the dynamic-bucket hash index and the deletion vectors, each with their live files only."""
    schema = pa.schema(
        [pa.field("k", pa.int64(), nullable=False), pa.field("s", pa.string(), nullable=False)]
    )
    dv = catalog.create_table(
        "db.dv", schema, primary_keys=["k", "s"], options={"bucket": "2", "deletion-vectors.enabled": "true"}
    )
    dv.append(pa.table({"k": [1, 2, 3, 4], "s": ["a", "b", "c", "d"]}, schema=schema))
    dv.append(pa.table({"k": [2, 9], "s": ["b", "z"]}, schema=schema))
    dv.append(pa.table({"k": [3, 1], "s": ["c", "a"]}, schema=schema))  # deletes rows of compacted files
    files = catalog.get_table("db.dv$files").to_arrow().to_pylist()
    sums: dict[int, list[int]] = {}
    for row in files:
        total = sums.setdefault(row["bucket"], [0, 0, 0])
        total[0] += row["record_count"]
        total[1] += row["file_size_in_bytes"]
        total[2] += 1
    buckets = catalog.get_table("db.dv$buckets").to_arrow().to_pylist()
    assert {
        b["bucket"]: [b["record_count"], b["file_size_in_bytes"], b["file_count"]] for b in buckets
    } == sums
    ranges = catalog.get_table("db.dv$file_key_ranges").to_arrow().to_pylist()
    keys = [(r["file_path"], r["min_key"], r["max_key"]) for r in ranges]
    assert sorted(keys) == sorted((r["file_path"], r["min_key"], r["max_key"]) for r in files)
    assert all(k[1] is not None and k[1].startswith("[") and ", " in k[1] for k in keys)  # [k, s]
    indexes = catalog.get_table("db.dv$table_indexes").to_arrow().to_pylist()
    live_names = {r["file_path"].rsplit("/", 1)[-1] for r in files}
    assert {i["index_type"] for i in indexes} <= {"DELETION_VECTORS"}
    assert any(index["dv_ranges"] for index in indexes)
    for index in indexes:
        assert {d["f0"] for d in index["dv_ranges"]} <= live_names

    dynamic = catalog.create_table("db.dyn", schema, primary_keys=["k", "s"], options={"bucket": "-1"})
    dynamic.append(pa.table({"k": [1, 2], "s": ["a", "b"]}, schema=schema))
    hashes = catalog.get_table("db.dyn$table_indexes").to_arrow().to_pylist()
    assert [(h["index_type"], h["row_count"], h["dv_ranges"]) for h in hashes] == [("HASH", 2, None)]


def test_catalog_wide_system_tables(warehouse: str) -> None:
    """``sys.all_table_options`` lists every table's stored options, ``sys.catalog_options`` the catalog's;
    secrets redacted as ``$options`` redacts them (the model: the schemas and the options given)."""
    from paimon_core.redaction import redacted_options
    from paimon_core.table import GlobalSystemTable

    given = {"s3.secret-key": "hush", "commit.max-retries": "4"}
    catalog = Catalog.open(warehouse, **given)
    for database, name, options in [
        ("db", "a", {"bucket": "2", "bucket-key": "id"}),
        ("db", "b", {}),
        ("x", "c", {"file.format": "orc", "snapshot.num-retained.max": "19"}),
    ]:
        catalog.create_database(database, exist_ok=True)
        catalog.create_table(f"{database}.{name}", SCHEMA, options=options)
    # another engine may store any key in a schema: a credential among them is shown masked
    manager = catalog._schema_manager("db.a")
    latest = manager.latest()
    assert latest is not None
    assert manager.commit(
        replace(latest, id=latest.id + 1, options={**latest.options, "fs.oss.accessKeySecret": "hidden"})
    )
    everything = catalog.get_table("sys.all_table_options")
    assert isinstance(everything, GlobalSystemTable)
    rows = everything.to_arrow().to_pylist()
    expected = [
        {"database_name": d, "table_name": t, "key": k, "value": v}
        for d in catalog.list_databases()
        for t in catalog.list_tables(d)
        for k, v in sorted(redacted_options(catalog.get_table(f"{d}.{t}").schema.options).items())
    ]
    assert rows == expected and len(rows) >= 3
    assert "hidden" not in str(rows) and {"key": "bucket", "value": "2"}.items() <= rows[0].items()
    options = catalog.get_table("sys.catalog_options").to_arrow().to_pylist()
    assert options == [
        {"key": k, "value": v} for k, v in sorted(redacted_options({**given, "warehouse": warehouse}).items())
    ]
    assert {"key": "s3.secret-key", "value": "hush"} not in options
    assert catalog.get_table("sys.catalog_options").to_arrow(
        columns=["value"], filter=[("key", "=", "commit.max-retries")]
    ).to_pylist() == [{"value": "4"}]
    with pytest.raises(ConfigError, match=r"sys\.all_table_options"):
        catalog.get_table("sys.nope")
    with pytest.raises(ReadOnlyTableError):
        everything.append(pa.table({"key": ["a"]}))
