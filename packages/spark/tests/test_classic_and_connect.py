"""One suite of reads and writes run twice: on a classic SparkSession and over Spark Connect.

The ``any_spark`` fixture gives the classic ``local[2]`` session, then a Spark Connect client of a Connect
server in the same Spark (conftest). A Connect client has no ``SparkContext``, so what passes here with both
passes without ``parallelize``, broadcasts, accumulators or local properties: batch and streaming reads and
writes of append and primary-key tables, ``paimon_spark.write`` / ``write_stream``, compaction on executors,
the SQL procedures, ``merge_into``, ``delete_from`` and ``update``. The ``paimon-spark`` actions also run
as a Connect client in a process of their own, one with no JVM at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.snapshot import CommitKind
from paimon_core.table import Table

from .conftest import finished, stream_once

pytestmark = pytest.mark.slow

EVENTS = pa.schema([("id", pa.int64()), ("word", pa.string()), ("day", pa.string())])


def catalog(warehouse: str) -> Catalog:
    opened = Catalog.open(warehouse)
    opened.create_database("db", exist_ok=True)
    return opened


def table(warehouse: str, name: str = "db.t") -> Table:
    return Catalog.open(warehouse).get_table(name)


def rows_of(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in frame.collect())


def read(spark: Any, warehouse: str, name: str = "db.t", **options: str) -> list[tuple[Any, ...]]:
    return rows_of(spark.read.format("paimon").option("warehouse", warehouse).options(**options).load(name))


def events(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {"id": ids, "word": [f"w{i % 3}" for i in ids], "day": [f"d{i % 2}" for i in ids]}, schema=EVENTS
    )


def start(writer: Any) -> Any:
    """``writer.start()``. Spark waits ten seconds at most (a fixed limit) for the Python process of a
    Connect ``foreachBatch`` to connect back; where the machine is so loaded that importing PySpark takes
    longer, a start that failed that way is tried again, four times at most."""
    for attempt in range(5):
        try:
            return writer.start()
        except Exception as error:
            if "failed to connect back" not in str(error) or attempt == 4:
                raise
    raise AssertionError("unreachable")


def test_append_table_writes_reads_views_and_time_travel(any_spark: Any, warehouse: str) -> None:
    spark = any_spark
    frame = spark.createDataFrame([(1, "a", "d0"), (2, "b", "d1")], "id long, word string, day string")
    writer = frame.write.format("paimon").option("warehouse", warehouse).option("partition-keys", "day")
    writer.mode("append").save("db.t")
    more = spark.createDataFrame([(3, "c", "d0")], "id long, word string, day string")
    more.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t")
    assert read(spark, warehouse) == [(1, "a", "d0"), (2, "b", "d1"), (3, "c", "d0")]
    assert read(spark, warehouse, **{"scan.snapshot-id": "1"}) == [(1, "a", "d0"), (2, "b", "d1")]

    paimon_spark.create_temp_view(spark, "events_view", "db.t", warehouse=warehouse)
    spark.sql("INSERT INTO events_view VALUES (4, 'd', 'd1')")
    assert rows_of(spark.sql("SELECT id FROM events_view WHERE day = 'd1'")) == [(2,), (4,)]

    replacement = spark.createDataFrame([(9, "z", "d0")], "id long, word string, day string")
    replacement.write.format("paimon").option("warehouse", warehouse).mode("overwrite").save("db.t")
    assert read(spark, warehouse) == [(9, "z", "d0")]
    assert [s.commit_kind for s in table(warehouse).snapshots()][-1] == CommitKind.OVERWRITE


def test_primary_key_table_upserts_and_deletes(any_spark: Any, warehouse: str) -> None:
    spark = any_spark
    options = {"primary-key": "id", "bucket": "2"}
    first = spark.createDataFrame([(i, f"v{i}") for i in range(6)], "id long, v string")
    paimon_spark.write(first, "db.kv", warehouse=warehouse, options=options)
    changes = spark.createDataFrame(
        [(1, "new", "+U"), (2, None, "-D"), (7, "v7", "+I")], "id long, v string, rowkind string"
    )
    paimon_spark.write(changes, "db.kv", warehouse=warehouse)
    # The data source's tasks write level 0 and the driver compacts the buckets they wrote.
    upserts = spark.createDataFrame([(3, "three"), (8, "v8")], "id long, v string")
    upserts.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.kv")
    expected = [(0, "v0"), (1, "new"), (3, "three"), (4, "v4"), (5, "v5"), (7, "v7"), (8, "v8")]
    assert read(spark, warehouse, "db.kv") == expected
    assert sorted(table(warehouse, "db.kv").to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": k, "v": v} for k, v in expected
    ]


def test_streams_between_tables_exactly_once_across_restarts(
    any_spark: Any, warehouse: str, tmp_path: Path
) -> None:
    spark = any_spark
    source = catalog(warehouse).create_table("db.src", EVENTS)
    source.append(events(0, 10))
    checkpoint = str(tmp_path / "checkpoint")

    query = stream_once(spark, warehouse, checkpoint)
    source.append(events(10, 5))
    stream_once(spark, warehouse, checkpoint)
    ids = table(warehouse, "db.dst").to_arrow().column("id").to_pylist()
    assert sorted(ids) == list(range(15))
    users = {s.commit_user for s in table(warehouse, "db.dst").snapshots()}
    assert users == {paimon_spark.commit_user_for_query(str(query.id))}


def test_write_stream_update_mode_commits_once_per_batch_as_the_query(
    any_spark: Any, warehouse: str, tmp_path: Path
) -> None:
    """``write_stream`` is foreachBatch: over Connect it runs in the server's Python process, where it finds
    its query's id (the commit user) by the name it gave the query."""
    spark = any_spark
    words = catalog(warehouse).create_table("db.words", pa.schema([("word", pa.string())]))
    words.append(pa.table({"word": ["a", "b", "a"]}))
    checkpoint = str(tmp_path / "checkpoint")

    def run() -> Any:
        stream = spark.readStream.format("paimon").option("warehouse", warehouse).load("db.words")
        counts = stream.groupBy("word").count().withColumnRenamed("count", "n")
        writer = paimon_spark.write_stream(
            counts, "db.counts", warehouse=warehouse, output_mode="update", options={"primary-key": "word"}
        )
        return finished(start(writer.option("checkpointLocation", checkpoint).trigger(availableNow=True)))

    first = run()
    words.append(pa.table({"word": ["b", "c"]}))
    second = run()  # a restart from the checkpoint: the same query id
    assert str(second.id) == str(first.id)
    assert read(spark, warehouse, "db.counts") == [("a", 2), ("b", 2), ("c", 1)]
    counts = table(warehouse, "db.counts")
    appends = [s for s in counts.snapshots() if s.commit_kind == CommitKind.APPEND]
    assert {s.commit_user for s in appends} == {paimon_spark.commit_user_for_query(str(first.id))}
    assert sorted(s.commit_identifier for s in appends) == [0, 1]


def test_compaction_on_executors(any_spark: Any, warehouse: str) -> None:
    spark = any_spark
    options = {"write-only": "true", "compaction.min.file-num": "2", "source.split.open-file-cost": "1 b"}
    events_table = catalog(warehouse).create_table("db.t", EVENTS, partition_keys=["day"], options=options)
    for start in range(0, 40, 10):
        events_table.append(events(start, 10))
    before = read(spark, warehouse)
    summary = paimon_spark.compact(
        spark, warehouse=warehouse, table="db.t", where="day = 'd0'", progress=False
    )
    compacted = table(warehouse)
    files: dict[str, int] = {}
    for entry in compacted.live_entries():
        day = compacted.partition_values(entry.partition)["day"]
        files[day] = files.get(day, 0) + 1
    assert files == {"d0": 1, "d1": 4}
    assert (summary.files_before, summary.files_after, summary.tasks) == (4, 1, 1)  # of the chosen partition
    assert [s.commit_kind for s in compacted.snapshots()][-1] == CommitKind.COMPACT
    paimon_spark.compact(spark, warehouse=warehouse, table="db.t", progress=False)
    assert len(table(warehouse).live_entries()) == 2
    assert read(spark, warehouse) == before


def test_procedures_in_sql(any_spark: Any, warehouse: str) -> None:
    spark = any_spark
    options = {"write-only": "true", "compaction.min.file-num": "2"}
    events_table = catalog(warehouse).create_table("db.t", EVENTS, options=options)
    for start in range(0, 9, 3):
        events_table.append(events(start, 3))
    paimon_spark.register_procedures(spark, warehouse=warehouse)

    def call(sql: str) -> Any:
        (row,) = spark.sql(sql).collect()
        return row[0]

    assert call("SELECT * FROM paimon_create_tag(table => 'db.t', tag => 'two', snapshot_id => 2)")
    assert call("SELECT * FROM paimon_compact(table => 'db.t')")
    assert len(table(warehouse).live_entries()) == 1
    assert [row[0] for row in read(spark, warehouse, **{"scan.tag-name": "two"})] == list(range(6))
    assert call("SELECT * FROM paimon_rollback_to(table => 'db.t', tag => 'two')")
    assert [row[0] for row in read(spark, warehouse)] == list(range(6))


@pytest.mark.parametrize("primary_key", [True, False], ids=["primary-key", "append"])
def test_merge_into_delete_and_update(any_spark: Any, warehouse: str, primary_key: bool) -> None:
    spark = any_spark
    schema = pa.schema([pa.field("id", pa.int64(), nullable=not primary_key), ("v", pa.string())])
    options = {"bucket": "2"} if primary_key else {}
    target = catalog(warehouse).create_table(
        "db.t", schema, primary_keys=["id"] if primary_key else [], options=options
    )
    target.append(pa.table({"id": list(range(6)), "v": [f"v{i}" for i in range(6)]}, schema=schema))
    source = spark.createDataFrame([(1, "one"), (4, None), (9, "nine")], "id long, v string")
    summary = paimon_spark.merge_into(
        spark,
        warehouse=warehouse,
        target_table="db.t",
        target_alias="T",
        source_table=source,
        source_alias="S",
        merge_condition="T.id = S.id",
        matched_upsert_condition="S.v IS NOT NULL",
        matched_upsert_setting="v = S.v",
        matched_delete_condition="S.v IS NULL",
        not_matched_insert_values="*",
    )
    assert (summary.updated, summary.deleted, summary.inserted) == (1, 1, 1)
    paimon_spark.delete_from(spark, warehouse=warehouse, table="db.t", where="id = 0")
    paimon_spark.update(spark, warehouse=warehouse, table="db.t", set={"v": "upper(v)"}, where="id > 2")
    expected = [(1, "one"), (2, "v2"), (3, "V3"), (5, "V5"), (9, "NINE")]
    assert read(spark, warehouse) == expected


def test_cli_actions_as_a_connect_client_without_a_jvm(
    connect_url: str, warehouse: str, tmp_path: Path
) -> None:
    options = {"write-only": "true", "compaction.min.file-num": "2"}
    events_table = catalog(warehouse).create_table("db.t", EVENTS, partition_keys=["day"], options=options)
    for start in range(0, 30, 10):
        events_table.append(events(start, 10))
    before = events_table.to_arrow().sort_by("id")
    # No Spark to start a JVM from: a client that tried (a classic session) would fail.
    env = {**os.environ, "SPARK_HOME": str(tmp_path / "no-spark-here")}
    completed = subprocess.run(
        [
            sys.executable, "-m", "paimon_spark.cli", "compact", "--remote", connect_url,
            "--warehouse", warehouse, "--table", "db.t", "--no_progress",
        ],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "db.t: 6 files" in completed.stdout and "-> 2 files" in completed.stdout
    assert table(warehouse).to_arrow().sort_by("id") == before
