"""Batch reads and writes through Spark (local[2])."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.maintenance import create_tag
from paimon_core.table import plan_batch

pytestmark = pytest.mark.slow


def rows(df: Any, key: str = "id") -> list[dict[str, Any]]:
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r[key])


def reader(spark: Any, warehouse: str, **options: str) -> Any:
    return spark.read.format("paimon").option("warehouse", warehouse).options(**options)


def writer(df: Any, warehouse: str, mode: str = "append", **options: str) -> Any:
    return df.write.format("paimon").option("warehouse", warehouse).options(**options).mode(mode)


def data_files(root: str) -> list[str]:
    return sorted(str(p) for p in Path(root).rglob("data-*.parquet"))


def test_write_creates_table_then_round_trip(spark: Any, warehouse: str) -> None:
    df = spark.range(0, 300, numPartitions=3).selectExpr(
        "id",
        "cast(id % 3 as string) as p",
        "cast(id * 0.25 as double) as v",
        "cast(id as decimal(12, 2)) as amount",
        "timestamp_seconds(id) as ts",
        "cast(timestamp_seconds(id) as timestamp_ntz) as local_ts",
        "date_add(to_date('2024-01-01'), cast(id % 5 as int)) as d",
        "array(id, id + 1) as arr",
        "map(cast(id as string), id) as m",
        "named_struct('a', id, 'b', cast(id as string)) as s",
        "cast(cast(id as string) as binary) as bin",
        "id % 2 = 0 as flag",
    )
    writer(df, warehouse, **{"partition-keys": "p"}).save("db.t")
    table = Catalog.open(warehouse).get_table("db.t")
    assert table.partition_keys == ["p"]
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND"]  # one commit for three tasks
    back = reader(spark, warehouse).load("db.t")
    assert back.schema == df.schema.__class__([f for f in back.schema.fields])  # a StructType
    assert [f.name for f in back.schema] == df.columns
    assert rows(back) == rows(df)
    # one Spark partition per split
    assert back.rdd.getNumPartitions() == len(plan_batch(table))
    # the table is read identically by paimon-core
    core = table.to_arrow().sort_by("id")
    assert core.column("id").to_pylist() == list(range(300))
    assert core.column("amount")[7].as_py() == decimal.Decimal("7.00")


def test_spark_reads_core_written_types(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    schema = pa.schema(
        [
            pa.field("id", pa.int32(), nullable=False),
            pa.field("tiny", pa.int8()),
            pa.field("small", pa.int16()),
            pa.field("f", pa.float32()),
            pa.field("ts_ms", pa.timestamp("ms")),
            pa.field("ts_ns", pa.timestamp("ns")),
            pa.field("ltz", pa.timestamp("us", tz="UTC")),
            pa.field("fixed", pa.binary(3)),
            pa.field("tags", pa.map_(pa.string(), pa.int64())),
            pa.field("nested", pa.struct([pa.field("x", pa.list_(pa.string()))])),
        ]
    )
    table = catalog.create_table("db.types", schema)
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    table.append(
        pa.table(
            {
                "id": [1, 2],
                "tiny": [1, None],
                "small": [300, None],
                "f": [1.5, None],
                "ts_ms": [when.replace(microsecond=123000), None],
                "ts_ns": [pa.scalar(1_700_000_000_123_456_789, pa.timestamp("ns")).as_py(), None],
                "ltz": [when.replace(tzinfo=dt.timezone.utc), None],
                "fixed": [b"abc", None],
                "tags": [[("k", 1)], None],
                "nested": [{"x": ["a", None]}, None],
            },
            schema=schema,
        )
    )
    got = rows(reader(spark, warehouse).load("db.types"))
    first = got[0]
    assert first["tiny"] == 1 and first["small"] == 300 and first["f"] == 1.5
    assert first["ts_ms"] == when.replace(microsecond=123000)
    assert first["ts_ns"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456)  # truncated to microseconds
    assert first["ltz"].replace(tzinfo=None) == when  # session time zone is UTC
    assert bytes(first["fixed"]) == b"abc"
    assert first["tags"] == {"k": 1}
    assert first["nested"] == {"x": ["a", None]}
    assert all(v is None for k, v in got[1].items() if k != "id")


def test_append_overwrite_static_and_dynamic(spark: Any, warehouse: str) -> None:
    base = spark.range(0, 30).selectExpr("id", "cast(id % 3 as int) as p")
    writer(base, warehouse, **{"partition-keys": "p"}).save("db.t")
    writer(spark.range(100, 103).selectExpr("id", "1 as p"), warehouse).save("db.t")
    assert reader(spark, warehouse).load("db.t").count() == 33
    # dynamic: only partition p=1 is replaced
    writer(
        spark.range(200, 202).selectExpr("id", "1 as p"),
        warehouse,
        "overwrite",
        partitionOverwriteMode="dynamic",
    ).save("db.t")
    got = rows(reader(spark, warehouse).load("db.t"))
    assert sorted(r["id"] for r in got if r["p"] == 1) == [200, 201]
    assert len([r for r in got if r["p"] != 1]) == 20
    # static (Spark's default): the whole table is replaced
    writer(spark.range(300, 301).selectExpr("id", "2 as p"), warehouse, "overwrite").save("db.t")
    assert rows(reader(spark, warehouse).load("db.t")) == [{"id": 300, "p": 2}]
    kinds = [s.commit_kind.value for s in Catalog.open(warehouse).get_table("db.t").snapshots()]
    assert kinds == ["APPEND", "APPEND", "OVERWRITE", "OVERWRITE"]
    # Spark's session setting is the default of a DataFrame overwrite; an option still wins
    writer(spark.range(400, 401).selectExpr("id", "1 as p"), warehouse).save("db.t")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        paimon_spark.register(spark)
        writer(spark.range(500, 501).selectExpr("id", "1 as p"), warehouse, "overwrite").save("db.t")
        assert rows(reader(spark, warehouse).load("db.t")) == [{"id": 300, "p": 2}, {"id": 500, "p": 1}]
        static = writer(spark.range(600, 601).selectExpr("id", "1 as p"), warehouse, "overwrite")
        static.option("partitionOverwriteMode", "static").save("db.t")
        assert rows(reader(spark, warehouse).load("db.t")) == [{"id": 600, "p": 1}]
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
        paimon_spark.register(spark)


def test_schema_mismatch_is_a_clear_error(spark: Any, warehouse: str) -> None:
    writer(spark.range(3).selectExpr("id", "'x' as name"), warehouse).save("db.t")
    with pytest.raises(Exception, match="unknown columns: extra"):
        writer(spark.range(3).selectExpr("id", "'x' as name", "1 as extra"), warehouse).save("db.t")
    with pytest.raises(Exception, match="missing columns: name"):
        writer(spark.range(3).selectExpr("id"), warehouse).save("db.t")
    with pytest.raises(Exception, match="column 'name' has type"):
        writer(spark.range(3).selectExpr("id", "1.5 as name"), warehouse).save("db.t")
    assert len(Catalog.open(warehouse).get_table("db.t").snapshots()) == 1


def test_failed_job_commits_nothing_and_leaves_no_files(spark: Any, warehouse: str) -> None:
    from pyspark.sql.functions import udf

    writer(spark.range(10).selectExpr("id"), warehouse).save("db.t")
    table_dir = Catalog.open(warehouse).table_path("db.t")
    before = data_files(table_dir)

    done = str(Path(warehouse).parent / "other-task-done")  # written once the driver has the other's result

    def fail_on_last(x):  # type: ignore[no-untyped-def]  # no hints: Spark would read them as a pandas UDF
        if x == 1999:
            # Fail only once the other task has finished and the driver holds its commit message: the job's
            # abort must delete that task's file.
            from pathlib import Path as LocalPath  # resolved in the worker, not pickled from this module

            waited = time.time() + 300
            while not LocalPath(done).exists() and time.time() < waited:
                time.sleep(0.05)
            raise ValueError("boom")
        return x

    explode_on_last = udf(fail_on_last, "long")
    watching = threading.Event()

    def watch() -> None:
        """Mark ``done`` when the driver has taken a task of the job as finished (its result, the commit
        message, handled before the failing task's end, which the scheduler handles after it)."""
        tracker = spark.sparkContext.statusTracker()
        while not watching.is_set():
            for stage in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage)
                if info is not None and info.numCompletedTasks >= 1:
                    Path(done).touch()
                    return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, name="task-watcher")
    watcher.start()
    # Two tasks on two cores: one succeeds (its files must be deleted by the job's abort), one fails
    # (it deletes its own). A task still running when a job aborts may leave an orphan file instead,
    # for remove_orphan_files; here the failure waits for the other task, so nothing may be left.
    failing = spark.range(0, 2000, numPartitions=2).select(explode_on_last("id").alias("id"))
    try:
        with pytest.raises(Exception, match="boom"):
            writer(failing, warehouse).save("db.t")
    finally:
        watching.set()
        watcher.join(60)
    assert Path(done).exists(), "the failing task did not wait for the other one"
    assert len(Catalog.open(warehouse).get_table("db.t").snapshots()) == 1
    deadline = time.time() + 120  # tasks of the failed job may still be finishing
    while data_files(table_dir) != before and time.time() < deadline:
        time.sleep(0.2)
    assert data_files(table_dir) == before


def test_time_travel_by_snapshot_and_timestamp(spark: Any, warehouse: str) -> None:
    writer(spark.range(0, 5), warehouse).save("db.t")
    time.sleep(0.05)
    writer(spark.range(5, 8), warehouse).save("db.t")
    first = Catalog.open(warehouse).get_table("db.t").snapshot_manager.snapshot(1)
    assert reader(spark, warehouse).option("scan.snapshot-id", "1").load("db.t").count() == 5
    by_time = reader(spark, warehouse).option("scan.timestamp-millis", str(first.time_millis)).load("db.t")
    assert by_time.count() == 5
    assert reader(spark, warehouse).load("db.t").count() == 8
    with pytest.raises(Exception, match="tag 't1' does not exist"):
        reader(spark, warehouse).option("scan.tag-name", "t1").load("db.t").count()
    create_tag(Catalog.open(warehouse).get_table("db.t"), "t1", 1)
    assert reader(spark, warehouse).option("scan.tag-name", "t1").load("db.t").count() == 5


def test_load_by_path(spark: Any, warehouse: str) -> None:
    writer(spark.range(4), warehouse).save("db.t")
    path = Catalog.open(warehouse).table_path("db.t")
    assert spark.read.format("paimon").load(path).count() == 4
    spark.range(4, 6).write.format("paimon").mode("append").save(path)
    assert spark.read.format("paimon").load(path).count() == 6


def test_filters_with_and_without_pushdown(spark: Any, warehouse: str) -> None:
    df = spark.range(0, 90, numPartitions=3).selectExpr("id", "cast(id % 3 as string) as p", "id * 2 as v")
    writer(df, warehouse, **{"partition-keys": "p"}).save("db.t")
    query = "p = '1' and v >= 100 and id % 2 = 0"
    expected = sorted(r.id for r in df.filter(query).collect())
    assert sorted(r.id for r in reader(spark, warehouse).load("db.t").filter(query).collect()) == expected
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        paimon_spark.register(spark)
        pushed = reader(spark, warehouse).load("db.t").filter(query)
        assert sorted(r.id for r in pushed.collect()) == expected
        # the partition filter pruned the two other partitions' splits
        assert pushed.rdd.getNumPartitions() == 1
        nulls = reader(spark, warehouse).load("db.t").filter("p is null or p in ('0', '2')")
        assert nulls.count() == 60
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
        paimon_spark.register(spark)


def test_sql_views_and_conf_dynamic_options(spark: Any, warehouse: str) -> None:
    writer(spark.range(3).selectExpr("id", "'a' as tag"), warehouse).save("db.t")
    paimon_spark.create_temp_view(spark, "pt", "db.t", warehouse=warehouse)
    spark.sql("INSERT INTO pt SELECT 10 AS id, 'b' AS tag")
    assert sorted(r.id for r in spark.sql("SELECT id FROM pt").collect()) == [0, 1, 2, 10]
    spark.sql("INSERT OVERWRITE pt SELECT 20 AS id, 'c' AS tag")
    # Spark plans a view over a Python data source once; statements through spark.sql (made Paimon-aware by
    # register) read the table anew and re-create the view after writing through it (docs/spark/spark-sql.md).
    assert spark.sql("SELECT count(*) AS n FROM pt").first().n == 1
    assert [tuple(r) for r in spark.table("pt").collect()] == [(20, "c")]
    for key in ("paimon.paimon.db.t.scan.snapshot-id", "paimon.paimon.*.t.scan.snapshot-id"):
        spark.conf.set(key, "1")
        try:
            paimon_spark.register(spark)
            assert reader(spark, warehouse).load("db.t").count() == 3, key
            # a data source option beats the conf
            assert reader(spark, warehouse).option("scan.snapshot-id", "2").load("db.t").count() == 4
        finally:
            spark.conf.unset(key)
            paimon_spark.register(spark)
    assert reader(spark, warehouse).load("db.t").count() == 1


def test_register_lifts_the_arrow_byte_check_unless_the_session_sets_it(spark: Any, warehouse: str) -> None:
    key = "spark.sql.execution.arrow.maxBytesPerBatch"
    assert spark.conf.get(key) == "2147483647"  # the fixture's register() set it
    spark.conf.set(key, "4k")
    try:
        paimon_spark.register(spark)
        assert spark.conf.get(key) == "4k"  # the session's own value is kept
        # Spark's byte cap then cuts the rows into small Arrow batches; the write is the same
        df = spark.range(0, 2000, numPartitions=2).selectExpr("id", "repeat(cast(id as string), 50) as s")
        writer(df, warehouse).save("db.t")
        assert rows(reader(spark, warehouse).load("db.t")) == rows(df)
    finally:
        spark.conf.unset(key)
        paimon_spark.register(spark)
    assert spark.conf.get(key) == "2147483647"


def test_empty_table_reads_empty(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    catalog.create_table("db.e", pa.schema([pa.field("x", pa.int64())]))
    assert reader(spark, warehouse).load("db.e").count() == 0
    assert os.path.isdir(catalog.table_path("db.e"))


def test_external_data_paths_through_spark(spark: Any, warehouse: str, tmp_path: Path) -> None:
    """Executors write under ``data-file.external-paths`` (the table handle they get carries the options);
    the manifest records each file's full path and Spark reads them from there."""
    roots = [f"file://{tmp_path}/ext-a", f"file://{tmp_path}/ext-b"]
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    catalog.create_table(
        "db.t",
        pa.schema([("id", pa.int64()), ("p", pa.string())]),
        partition_keys=["p"],
        options={
            "data-file.external-paths": ",".join(roots),
            "data-file.external-paths.strategy": "round-robin",
        },
    )
    df = spark.range(0, 200, numPartitions=4).selectExpr("id", "cast(id % 2 as string) as p")
    writer(df, warehouse).save("db.t")
    table = catalog.get_table("db.t")
    paths = [e.file.external_path or "" for e in table.live_entries()]
    assert len(paths) >= 2 and all(p.startswith(tuple(f"{r}/p=" for r in roots)) for p in paths)
    assert data_files(table.path) == []
    assert rows(reader(spark, warehouse).load("db.t")) == rows(df)
