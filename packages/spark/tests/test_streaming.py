"""Structured Streaming through Spark (local[2]): the source, the exactly-once sink, limits, consumers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConsumerManager
from paimon_spark import commit_user_for_query

from .conftest import stream_once

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("word", pa.string())])


def batch(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": ids, "word": [f"w{i % 7}" for i in ids]}, schema=SCHEMA)


def make_source(warehouse: str, partitioned: bool = False) -> Any:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    keys = ["word"] if partitioned else []
    return catalog.create_table("db.src", SCHEMA, partition_keys=keys)


def dst_ids(warehouse: str) -> list[int]:
    return sorted(Catalog.open(warehouse).get_table("db.dst").to_arrow().column("id").to_pylist())


def test_stream_to_stream_exactly_once_across_restarts_and_replays(
    spark: Any, warehouse: str, tmp_path: Path
) -> None:
    source = make_source(warehouse)
    source.append(batch(0, 10))
    source.append(batch(10, 10))
    checkpoint = str(tmp_path / "ckpt")
    query = stream_once(spark, warehouse, checkpoint)
    assert dst_ids(warehouse) == list(range(20))
    # restart from the checkpoint: only the new append
    source.append(batch(20, 5))
    stream_once(spark, warehouse, checkpoint)
    assert dst_ids(warehouse) == list(range(25))
    dst = Catalog.open(warehouse).get_table("db.dst")
    users = {s.commit_user for s in dst.snapshots()}
    assert users == {commit_user_for_query(str(query.id))}
    # a crash after the Paimon commit but before Spark recorded the batch: Spark replays it
    commits = Path(checkpoint) / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    os.remove(commits / str(last))
    crc = commits / f".{last}.crc"
    if crc.exists():
        os.remove(crc)
    snapshots_before = len(dst.snapshots())
    stream_once(spark, warehouse, checkpoint)
    assert dst_ids(warehouse) == list(range(25))
    assert len(Catalog.open(warehouse).get_table("db.dst").snapshots()) == snapshots_before
    # the replayed batch's rewritten files were deleted, not left behind
    live = {e.file.file_name for e in Catalog.open(warehouse).get_table("db.dst").live_entries()}
    on_disk = {p.name for p in Path(dst.path).rglob("data-*.parquet")}
    assert on_disk == live


def test_limits_split_micro_batches(spark: Any, warehouse: str, tmp_path: Path) -> None:
    source = make_source(warehouse, partitioned=True)
    source.append(batch(0, 70))  # seven partitions: seven files
    source.append(batch(70, 7))
    stream_once(spark, warehouse, str(tmp_path / "c1"), **{"read.stream.maxFilesPerTrigger": "3"})
    assert dst_ids(warehouse) == list(range(77))
    dst = Catalog.open(warehouse).get_table("db.dst")
    assert len(dst.snapshots()) >= 5  # ceil(14 files / 3)


def test_scan_modes_and_consumer_progress(spark: Any, warehouse: str, tmp_path: Path) -> None:
    source = make_source(warehouse)
    source.append(batch(0, 5))
    source.append(batch(5, 5))
    stream_once(spark, warehouse, str(tmp_path / "c1"), **{"scan.mode": "latest", "consumer-id": "job1"})
    assert not Catalog.open(warehouse).table_exists("db.dst") or dst_ids(warehouse) == []
    source.append(batch(10, 3))
    stream_once(spark, warehouse, str(tmp_path / "c1"), **{"scan.mode": "latest", "consumer-id": "job1"})
    assert dst_ids(warehouse) == [10, 11, 12]
    consumers = ConsumerManager(source.storage, source.path)
    # Spark commits a batch's source offsets when the next batch starts (or at the next restart).
    assert consumers.consumer("job1") is not None
    stream_once(spark, warehouse, str(tmp_path / "c1"), **{"scan.mode": "latest", "consumer-id": "job1"})
    assert consumers.consumer("job1").next_snapshot == 4  # type: ignore[union-attr]
    # a new query (new checkpoint) with the same consumer id resumes where the consumer stopped
    source.append(batch(13, 2))
    stream_once(spark, warehouse, str(tmp_path / "c2"), **{"consumer-id": "job1"})
    assert dst_ids(warehouse) == [10, 11, 12, 13, 14]
    # from-snapshot: deltas starting at snapshot 2
    frame = (
        spark.readStream.format("paimon")
        .option("warehouse", warehouse)
        .option("scan.snapshot-id", "2")
        .load("db.src")
    )
    query = frame.writeStream.format("memory").queryName("from_snapshot").trigger(availableNow=True).start()
    query.awaitTermination(300)
    got = sorted(r.id for r in spark.sql("SELECT id FROM from_snapshot").collect())
    assert got == list(range(5, 15))
