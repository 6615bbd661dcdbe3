"""The maintenance procedures as Spark SQL UDTFs, on a real local Spark session."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.consumer import ConsumerManager
from paimon_core.tag import TagManager


def _table(warehouse: str, appends: int) -> Any:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table(
        "db.t", pa.schema([("id", pa.int64())]), options={"write-only": "true"}, exist_ok=True
    )
    for i in range(appends):
        table.append(pa.table({"id": [i]}))
    return table


def _ids(spark: Any, warehouse: str, **options: str) -> list[int]:
    frame = spark.read.format("paimon").option("warehouse", warehouse).options(**options).load("db.t")
    return sorted(r["id"] for r in frame.collect())


def _call(spark: Any, sql: str) -> Any:
    (row,) = spark.sql(sql).collect()
    return row["result"]


def test_tags_rollback_and_consumers(spark: Any, warehouse: str) -> None:
    table = _table(warehouse, appends=4)
    paimon_spark.register_procedures(spark, warehouse=warehouse)
    assert _call(spark, "SELECT * FROM paimon_create_tag(table => 'db.t', tag => 'two', snapshot_id => 2)")
    assert _call(spark, "SELECT * FROM paimon_create_tag(table => 'db.t', tag => 'four')")
    tags = TagManager(table.storage, table.path)
    assert [(t.name, t.snapshot.id) for t in tags.tags()] == [("two", 2), ("four", 4)]
    assert _ids(spark, warehouse, **{"scan.tag-name": "two"}) == [0, 1]

    assert _call(spark, "SELECT * FROM paimon_rollback_to(table => 'db.t', tag => 'two')")
    assert _ids(spark, warehouse) == [0, 1]
    assert tags.names() == ["two"]  # tags newer than the target go with the rollback
    assert _call(spark, "SELECT * FROM paimon_delete_tag(table => 'db.t', tag => 'two')")
    assert tags.names() == []

    consumers = ConsumerManager(table.storage, table.path)
    sql = "SELECT * FROM paimon_reset_consumer(table => 'db.t', consumer_id => 'job', next_snapshot_id => 2)"
    assert _call(spark, sql)
    assert consumers.consumers() == {"job": 2}
    assert _call(spark, "SELECT * FROM paimon_reset_consumer(table => 'db.t', consumer_id => 'job')")
    assert consumers.consumers() == {}
    with pytest.raises(Exception, match="snapshot 9"):
        _call(spark, sql.replace("=> 2", "=> 9"))
    for consumer_id in ("job1", "job2", "other"):
        consumers.reset_to(consumer_id, 2)
    clear = "SELECT * FROM paimon_clear_consumers(table => 'db.t', including_consumers => 'job.*'{})"
    assert _call(spark, clear.format(", excluding_consumers => 'job2'"))
    assert consumers.consumers() == {"job2": 2, "other": 2}
    assert _call(spark, "SELECT * FROM paimon_clear_consumers(table => 'db.t')")
    assert consumers.consumers() == {}


def test_tags_and_rollback_by_time_and_name(spark: Any, warehouse: str) -> None:
    table = _table(warehouse, appends=3)
    paimon_spark.register_procedures(spark, warehouse=warehouse)
    times = [s.time_millis for s in table.snapshots()]
    sql = "SELECT * FROM paimon_create_tag_from_timestamp(table => 'db.t', tag => 'second', timestamp => {})"
    first_at = next(i + 1 for i, t in enumerate(times) if t >= times[1])  # 2 unless two share a millisecond
    assert _call(spark, sql.format(times[1])) == first_at
    assert _call(
        spark, "SELECT * FROM paimon_rename_tag(table => 'db.t', tag => 'second', target_tag => 'two')"
    )
    tags = TagManager(table.storage, table.path)
    assert [(t.name, t.snapshot.id) for t in tags.tags()] == [("two", first_at)]
    newest_before = max(i + 1 for i, t in enumerate(times) if t <= times[0])
    rolled = f"SELECT * FROM paimon_rollback_to_timestamp(table => 'db.t', timestamp => {times[0]})"
    assert _call(spark, rolled) == newest_before
    assert _ids(spark, warehouse) == list(range(newest_before))


def test_expire_snapshots_and_remove_orphan_files(spark: Any, warehouse: str) -> None:
    table = _table(warehouse, appends=6)
    paimon_spark.register_procedures(spark, warehouse=warehouse)
    expired = _call(
        spark,
        "SELECT * FROM paimon_expire_snapshots(table => 'db.t', retain_max => 2, retain_min => 2, "
        "older_than => '2999-01-01 00:00:00')",
    )
    assert expired == 4
    assert [s.id for s in table.snapshots()] == [5, 6]
    assert _ids(spark, warehouse) == list(range(6))

    orphan = Path(table.path) / "bucket-0" / "data-orphan-0.parquet"
    orphan.write_bytes(b"not referenced by any snapshot")
    old = time.time() - 3 * 86400
    os.utime(orphan, (old, old))
    dry = "SELECT * FROM paimon_remove_orphan_files(table => 'db.t', dry_run => true)"
    assert _call(spark, dry) == 1 and orphan.exists()
    assert _call(spark, "SELECT * FROM paimon_remove_orphan_files(table => 'db.t')") == 1
    assert not orphan.exists()
    assert _ids(spark, warehouse) == list(range(6))
