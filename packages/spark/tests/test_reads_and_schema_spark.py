"""Spark through the one planner (every scan option reads what Python reads), system tables, mergeSchema."""

from __future__ import annotations

import re
import time
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.maintenance import create_tag

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.string())])


def test_every_scan_option_reads_in_spark_what_python_reads(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})
    times = []
    for step, ident in enumerate([1, 2, 3, 4]):
        data = pa.table({"id": [ident], "p": ["x"]}, schema=SCHEMA)
        table.overwrite(data) if step == 2 else table.append(data)
        times.append(table.latest_snapshot().time_millis)  # type: ignore[union-attr]
        time.sleep(0.01)
    create_tag(table, "two", 2)
    create_tag(table, "four", 4)
    cases: list[dict[str, str]] = [
        {},
        {"scan.snapshot-id": "2"},
        {"scan.tag-name": "two"},
        {"scan.timestamp-millis": str(times[1])},
        {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"},
        {"incremental-between": "1,2"},
        {"incremental-between": "two,four"},
        {"incremental-between-timestamp": f"{times[0]},{times[1]}"},
        {"scan.file-creation-time-millis": str(times[2] + 1)},
    ]
    seen = set()
    for options in cases:
        python = sorted(catalog.get_table("db.t", **options).to_arrow().column("id").to_pylist())
        df = spark.read.format("paimon").option("warehouse", warehouse).options(**options).load("db.t")
        assert sorted(r["id"] for r in df.collect()) == python, options
        seen.add(tuple(python))
    assert len(seen) >= 5  # the cases really read different snapshots


def test_a_misspelled_option_fails_the_read(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA)
    reader = spark.read.format("paimon").option("warehouse", warehouse).option("scan.snapshot-idd", "1")
    with pytest.raises(Exception, match=re.escape("did you mean 'scan.snapshot-id'")):
        reader.load("db.t").collect()


def test_system_tables_load_in_spark(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    table.append(pa.table({"id": [1, 2], "p": ["a", "b"]}, schema=SCHEMA))
    table.append(pa.table({"id": [3], "p": ["a"]}, schema=SCHEMA))
    reader = spark.read.format("paimon").option("warehouse", warehouse)
    snapshots = reader.load("db.t$snapshots")
    assert snapshots.columns[:5] == [
        "snapshot_id",
        "schema_id",
        "commit_user",
        "commit_identifier",
        "commit_kind",
    ]
    assert [r["snapshot_id"] for r in snapshots.orderBy("snapshot_id").collect()] == [1, 2]
    files = reader.load("db.t$files").collect()
    python = catalog.get_table("db.t$files").to_arrow().to_pylist()
    assert sorted(r["file_path"] for r in files) == sorted(r["file_path"] for r in python)
    assert sorted((r["partition"], r["record_count"]) for r in files) == [("{a}", 1), ("{a}", 1), ("{b}", 1)]
    # $statistics: no ANALYZE has run, so no rows, with Java's columns
    statistics = reader.load("db.t$statistics")
    assert statistics.columns == catalog.get_table("db.t$statistics").field_names
    assert statistics.columns[2:] == ["mergedRecordCount", "mergedRecordSize", "colstat"]
    assert statistics.collect() == []


def test_merge_schema_adds_and_widens_columns(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    narrow = pa.schema([pa.field("id", pa.int32()), pa.field("p", pa.string())])
    catalog.create_table("db.t", narrow).append(pa.table({"id": [1], "p": ["a"]}, schema=narrow))
    df = spark.createDataFrame([(2**40, "b", 1.5)], "id bigint, p string, score double")
    writer = df.write.format("paimon").option("warehouse", warehouse).mode("append")
    with pytest.raises(Exception, match="score"):  # without mergeSchema the new column is refused
        writer.save("db.t")
    writer.option("mergeSchema", "true").save("db.t")
    table = catalog.get_table("db.t")
    assert table.arrow_schema.names == ["id", "p", "score"]
    assert table.arrow_schema.field("id").type == pa.int64()
    rows = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "p": "a", "score": None}, {"id": 2**40, "p": "b", "score": 1.5}]


def test_streaming_reads_start_where_the_python_stream_starts(spark: Any, warehouse: str) -> None:
    from paimon_core.table import StreamScan

    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.s", SCHEMA, options={"write-only": "true"})
    times = []
    for ident in [1, 2, 3, 4]:
        table.append(pa.table({"id": [ident * 10, ident * 10 + 1], "p": ["x", "y"]}, schema=SCHEMA))
        times.append(table.latest_snapshot().time_millis)  # type: ignore[union-attr]
        time.sleep(0.01)
    create_tag(table, "two", 2)
    create_tag(table, "four", 4)
    cases: list[dict[str, str]] = [
        {},  # latest-full: the latest snapshot in full
        {"scan.mode": "latest"},  # nothing yet
        {"scan.snapshot-id": "2"},  # deltas from snapshot 2
        {"scan.tag-name": "two"},
        {"scan.timestamp-millis": str(times[2])},
        {"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"},
        {"scan.snapshot-id": "1", "scan.bounded.watermark": "0"},
    ]
    seen = set()
    for number, options in enumerate(cases):
        handle = catalog.get_table("db.s", **options)
        scan = StreamScan(handle)
        start = scan.starting_position()
        python = sorted(
            handle.new_read().to_arrow(scan.plan(start, scan.advance(start))).column("id").to_pylist()
        )
        frame = (
            spark.readStream.format("paimon").option("warehouse", warehouse).options(**options).load("db.s")
        )
        name = f"stream_case_{number}"
        query = frame.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
        query.awaitTermination(300)
        assert sorted(r.id for r in spark.sql(f"SELECT id FROM {name}").collect()) == python, options
        seen.add(tuple(python))
    assert len(seen) >= 4  # the cases really start at different places


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
@pytest.mark.parametrize("path", ["data source mergeSchema", "write() write.merge-schema"])
def test_merge_schema_fills_the_columns_the_data_lacks_with_nulls(
    spark: Any, warehouse: str, path: str, primary_key: bool
) -> None:
    # As Java Paimon: with mergeSchema a DataFrame may lack table columns (written as nulls) while it adds
    # new ones; without it, a missing column is refused.
    import paimon_spark

    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=not primary_key),
            pa.field("p", pa.string()),
            pa.field("q", pa.int32()),
        ]
    )
    keys: dict[str, Any] = {"primary_keys": ["id"], "options": {"bucket": "2"}} if primary_key else {}
    catalog.create_table("db.t", schema, **keys).append(
        pa.table({"id": [1, 2], "p": ["a", "b"], "q": [10, 20]}, schema=schema)
    )
    df = spark.createDataFrame([(2, 2.5), (3, 3.5)], "id bigint, score double")  # lacks p and q

    def save(merge: bool) -> None:
        if path.startswith("data source"):
            writer = df.write.format("paimon").option("warehouse", warehouse).mode("append")
            writer.option("mergeSchema", str(merge).lower()).save("db.t")
        else:
            paimon_spark.write(
                df, "db.t", warehouse=warehouse, options={"write.merge-schema": str(merge).lower()}
            )

    with pytest.raises(Exception, match=r"score|missing"):
        save(merge=False)
    save(merge=True)
    table = catalog.get_table("db.t")
    assert table.arrow_schema.names == ["id", "p", "q", "score"]
    expected = {
        1: {"id": 1, "p": "a", "q": 10, "score": None},
        2: {"id": 2, "p": "b", "q": 20, "score": None},
        3: {"id": 3, "p": None, "q": None, "score": 3.5},
    }
    new_two = {"id": 2, "p": None, "q": None, "score": 2.5}
    rows = sorted(table.to_arrow().to_pylist(), key=lambda r: (r["id"], r["score"] is not None))
    if primary_key:  # the upsert of key 2 replaces its row, its absent columns null
        assert rows == [expected[1], new_two, expected[3]]
    else:
        assert rows == [expected[1], expected[2], new_two, expected[3]]
