"""``precommit-compact`` in the Spark sinks: the driver merges the small files of all tasks once per commit.

The Spark tests run a real session (local[2], four tasks per write); the driver-side tests call the sink's
writer objects directly, as the driver would, to check replays and failed commits without a session.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from paimon_core import STANDARD_HOOKS, Catalog, CommitMessage, TableCommit
from paimon_core.errors import CommitConflictError, CommitStateUnknownError
from paimon_core.manifest import FileKind
from paimon_core.snapshot import CommitKind
from paimon_core.table import manifest_metas, read_entries
from paimon_spark._options import SourceConfig
from paimon_spark._write import PaimonBatchWriter, PaimonCommitMessage, PaimonStreamWriter

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])
SPARK_SCHEMA = StructType([StructField("id", LongType(), False), StructField("p", StringType(), True)])
MERGE = {"precommit-compact": "true"}


def data(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": ids, "p": [f"p{i % 2}" for i in ids]}, schema=SCHEMA)


def create(warehouse: str, name: str, **options: str) -> Any:
    """A partitioned ``bucket = -1`` table, ``write-only`` unless told otherwise: the files a commit lands are
    then the sink's alone (no compaction after the commit merges them further)."""
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    options = {"write-only": "true", **options}
    return catalog.create_table(name, SCHEMA, partition_keys=["p"], options=options)


def reopen(warehouse: str, name: str) -> Any:
    return Catalog.open(warehouse).get_table(name)


def adds_per_partition(table: Any, snapshot: Any) -> Counter[str]:
    """How many data files each partition got from one snapshot (its delta manifests)."""
    entries = read_entries(table, manifest_metas(table, snapshot, delta_only=True))
    return Counter(table.partition_values(e.partition)["p"] for e in entries if e.kind == FileKind.ADD)


def ids(table: Any) -> list[int]:
    return sorted(table.to_arrow(columns=["id"]).column("id").to_pylist())


def on_disk(table: Any) -> set[str]:
    return {p.name for p in Path(table.path).rglob("data-*.parquet")}


def live(table: Any) -> set[str]:
    return {e.file.file_name for e in table.live_entries()}


# --- through Spark -------------------------------------------------------------------------------------------


def stream(spark: Any, warehouse: str, target: str, checkpoint: str) -> None:
    """db.src → four tasks → ``target``, one micro-batch per source snapshot, until caught up."""
    frame = (
        spark.readStream.format("paimon")
        .option("warehouse", warehouse)
        .option("read.stream.maxFilesPerTrigger", "1")
        .load("db.src")
        .repartition(4)
    )
    query = (
        frame.writeStream.format("paimon")
        .option("warehouse", warehouse)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(target)
    )
    query.awaitTermination(300)
    assert query.exception() is None


@pytest.mark.slow
def test_streaming_sink_commits_one_file_per_partition_per_batch(
    spark: Any, warehouse: str, tmp_path: Path
) -> None:
    source = create(warehouse, "db.src")
    for start in range(0, 600, 200):
        source.append(data(start, 200))  # one source file, so one micro-batch, per partition and append
    create(warehouse, "db.plain")
    create(warehouse, "db.merged", **MERGE)
    stream(spark, warehouse, "db.plain", str(tmp_path / "plain"))
    checkpoint = str(tmp_path / "merged")
    stream(spark, warehouse, "db.merged", checkpoint)

    plain, merged = reopen(warehouse, "db.plain"), reopen(warehouse, "db.merged")
    # Without the option each of the four tasks commits its own files...
    assert any(n > 1 for s in plain.snapshots() for n in adds_per_partition(plain, s).values())
    # ...with it, every micro-batch lands one file per partition, merged from all tasks.
    snapshots = merged.snapshots()
    assert len(snapshots) == len(plain.snapshots()) >= 3
    for snapshot in snapshots:
        assert snapshot.commit_kind == CommitKind.APPEND
        assert set(adds_per_partition(merged, snapshot).values()) == {1}
    assert ids(merged) == list(range(600))
    assert on_disk(merged) == live(merged)  # the tasks' small files were deleted

    # A crash after the Paimon commit but before Spark recorded the batch: Spark replays the batch, which
    # is recognised before any merge; its new task files are deleted and nothing is committed twice.
    commits = Path(checkpoint) / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    os.remove(commits / str(last))
    crc = commits / f".{last}.crc"
    if crc.exists():
        os.remove(crc)
    stream(spark, warehouse, "db.merged", checkpoint)
    again = reopen(warehouse, "db.merged")
    assert len(again.snapshots()) == len(snapshots)
    assert ids(again) == list(range(600))
    assert on_disk(again) == live(again)


def test_spark_appends_compact_an_unaware_bucket_table_after_committing_as_table_append_does(
    spark: Any, warehouse: str
) -> None:
    """The sinks commit through the table's pipeline: after an append, a ``bucket = -1`` table runs its
    compaction coordinator (COMPACT snapshots of the small files), unless ``write-only``."""
    compacting = create(warehouse, "db.compacting", **{"write-only": "false", "compaction.min.file-num": "2"})
    write_only = create(warehouse, "db.write_only", **{"compaction.min.file-num": "2"})
    for table in (compacting, write_only):
        for start in range(0, 400, 100):
            frame = spark.createDataFrame(data(start, 100).to_pandas(), SPARK_SCHEMA).repartition(4)
            frame.write.format("paimon").option("warehouse", warehouse).mode("append").save(table.identifier)
    kinds = {
        name: [s.commit_kind for s in reopen(warehouse, name).snapshots()]
        for name in ("db.compacting", "db.write_only")
    }
    assert CommitKind.COMPACT in kinds["db.compacting"]
    assert set(kinds["db.write_only"]) == {CommitKind.APPEND}
    assert (
        ids(reopen(warehouse, "db.compacting")) == ids(reopen(warehouse, "db.write_only")) == list(range(400))
    )


@pytest.mark.slow
def test_batch_write_commits_one_file_per_partition(spark: Any, warehouse: str) -> None:
    frame = spark.range(0, 1000, numPartitions=4).selectExpr("id", "concat('p', cast(id % 2 as string)) as p")
    for name, options in (("db.plain", {}), ("db.merged", MERGE)):
        create(warehouse, name, **options)
        frame.write.format("paimon").option("warehouse", warehouse).mode("append").save(name)
    plain, merged = reopen(warehouse, "db.plain"), reopen(warehouse, "db.merged")
    assert adds_per_partition(plain, plain.latest_snapshot()) == {"p0": 4, "p1": 4}
    assert adds_per_partition(merged, merged.latest_snapshot()) == {"p0": 1, "p1": 1}
    assert ids(merged) == list(range(1000))
    # an overwrite goes through the same merge
    (
        frame.where("id < 500")
        .write.format("paimon")
        .option("warehouse", warehouse)
        .option("partitionOverwriteMode", "dynamic")
        .mode("overwrite")
        .save("db.merged")
    )
    merged = reopen(warehouse, "db.merged")
    assert merged.latest_snapshot().commit_kind == CommitKind.OVERWRITE
    assert ids(merged) == list(range(500))
    assert len(merged.live_entries()) == 2
    first = {e.file.file_name for e in merged.live_entries(merged.snapshots()[0].id)}
    assert on_disk(merged) == live(merged) | first  # the first commit's files stay for time travel


# --- the driver side, without a session ----------------------------------------------------------------------


def config_of(warehouse: str, name: str) -> SourceConfig:
    return SourceConfig.parse({"warehouse": warehouse, "path": name})


def tasks(table: Any, start: int, count: int = 4, query_id: str | None = None) -> list[Any]:
    """What ``count`` executor tasks return: each wrote its rows with its own TableWrite."""
    out = []
    for task in range(count):
        writer = table.new_write()
        writer.write(data(start + task * 10, 10))
        out.append(PaimonCommitMessage(writer.prepare_commit(), query_id))
        writer.close()
    return out


def task_files(messages: list[Any]) -> set[str]:
    return {f.file_name for m in messages for c in m.messages for f in c.new_files}


def test_stream_writer_merges_once_and_a_replayed_batch_neither_merges_nor_commits(warehouse: str) -> None:
    table = create(warehouse, "db.t", **MERGE)
    sink = PaimonStreamWriter(config_of(warehouse, "db.t"), SPARK_SCHEMA, overwrite=False)
    first = tasks(table, 0, query_id="q")
    assert len(task_files(first)) == 8  # four tasks, two partitions each
    sink.commit(first, 0)
    table = reopen(warehouse, "db.t")
    assert adds_per_partition(table, table.latest_snapshot()) == {"p0": 1, "p1": 1}
    assert on_disk(table) == live(table)
    replay = tasks(table, 0, query_id="q")  # the same batch written again after a crash
    sink.commit(replay, 0)
    table = reopen(warehouse, "db.t")
    assert len(table.snapshots()) == 1 and ids(table) == list(range(40))
    assert on_disk(table) == live(table)  # the replay's files were deleted, none merged
    sink.commit(tasks(table, 40, query_id="q"), 1)
    assert ids(reopen(warehouse, "db.t")) == list(range(80))


def test_a_streaming_query_keeps_its_after_commit_compactor_between_micro_batches(
    warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark hands every micro-batch's commit a new writer object (in one long-lived process): the query's
    coordinator is built once and plans each batch from the snapshots since the last one."""
    built: list[str] = []

    def counting(store: Any) -> Any:
        built.append(store.identifier)
        assert STANDARD_HOOKS.commit_compactor is not None
        return STANDARD_HOOKS.commit_compactor(store)

    monkeypatch.setattr(Catalog, "hooks", dataclasses.replace(STANDARD_HOOKS, commit_compactor=counting))
    create(warehouse, "db.t", **{"write-only": "false", "compaction.min.file-num": "2"})
    for batch in range(3):
        sink = PaimonStreamWriter(config_of(warehouse, "db.t"), SPARK_SCHEMA, overwrite=False)
        sink.commit(tasks(reopen(warehouse, "db.t"), batch * 40, query_id="q"), batch)
    table = reopen(warehouse, "db.t")
    assert built == ["db.t"]
    assert CommitKind.COMPACT in [s.commit_kind for s in table.snapshots()]
    assert ids(table) == list(range(120))
    PaimonStreamWriter(config_of(warehouse, "db.t"), SPARK_SCHEMA, overwrite=False).commit(
        tasks(table, 120, query_id="other"), 0
    )
    assert built == ["db.t", "db.t"]  # another query, its own coordinator


def failing_commit(monkeypatch: pytest.MonkeyPatch, error: Exception, land_first: bool) -> None:
    """Make every commit fail with ``error``, after landing when ``land_first`` (an unknown outcome)."""
    real = TableCommit.commit

    def commit(self: TableCommit, messages: list[CommitMessage], *args: Any, **kwargs: Any) -> list[int]:
        if land_first:
            real(self, messages, *args, **kwargs)
        raise error

    monkeypatch.setattr(TableCommit, "commit", commit)


def test_a_failed_commit_deletes_the_merged_files(warehouse: str, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create(warehouse, "db.t", **MERGE)
    sink = PaimonBatchWriter(config_of(warehouse, "db.t"), SPARK_SCHEMA, overwrite=False)
    messages = tasks(table, 0)
    failing_commit(monkeypatch, CommitConflictError("lost"), land_first=False)
    with pytest.raises(CommitConflictError):
        sink.commit(messages)
    assert on_disk(table) == set()  # merged files deleted here, task files by the merge
    sink.abort(messages)  # what Spark does next: harmless
    assert reopen(warehouse, "db.t").snapshots() == []


def test_an_unknown_outcome_that_landed_keeps_the_merged_files(
    warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create(warehouse, "db.t", **MERGE)
    sink = PaimonBatchWriter(config_of(warehouse, "db.t"), SPARK_SCHEMA, overwrite=False)
    messages = tasks(table, 0)
    failing_commit(monkeypatch, CommitStateUnknownError("timeout"), land_first=True)
    with pytest.raises(CommitStateUnknownError):
        sink.commit(messages)
    sink.abort(messages)
    table = reopen(warehouse, "db.t")
    assert ids(table) == list(range(40))
    assert on_disk(table) == live(table) and len(live(table)) == 2


# --- primary-key tables: the changelog files of all tasks ----------------------------------------------------

PK_MERGE = {"bucket": "4", "changelog-producer": "input"}  # all changelog files are small


def create_pk(warehouse: str, name: str, **options: str) -> Any:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    return catalog.create_table(
        name, SCHEMA, partition_keys=["p"], primary_keys=["p", "id"], options={**PK_MERGE, **options}
    )


def changelog_on_disk(table: Any) -> set[str]:
    return {p.name for p in Path(table.path).rglob("*changelog-*")}


def changes(table: Any) -> list[tuple[str, int, str]]:
    reading = table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    return sorted(
        (r["rowkind"], r["id"], r["p"]) for b in reading.stream(follow=False) for r in b.to_pylist()
    )


@pytest.mark.slow
def test_batch_write_to_a_primary_key_table_merges_the_changelog_of_all_tasks(
    spark: Any, warehouse: str
) -> None:
    frame = spark.range(0, 400, numPartitions=4).selectExpr("id", "concat('p', cast(id % 2 as string)) as p")
    for name, options in (("db.plain", {}), ("db.merged", MERGE)):
        create_pk(warehouse, name, **options)
        frame.write.format("paimon").option("warehouse", warehouse).mode("append").save(name)
    plain, merged = reopen(warehouse, "db.plain"), reopen(warehouse, "db.merged")
    expected = sorted(("+I", i, f"p{i % 2}") for i in range(400))
    assert changes(plain) == changes(merged) == expected
    # four tasks x two partitions x four buckets of changelog files, one compacted file per partition
    assert len(changelog_on_disk(plain)) > 8
    assert len(changelog_on_disk(merged)) == 2
    assert all(n.startswith("compacted-changelog-") for n in changelog_on_disk(merged))
    assert on_disk(merged) == live(merged)  # data files are never merged on a primary-key table


def test_a_failed_primary_key_commit_leaves_no_changelog(
    warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create_pk(warehouse, "db.t", **MERGE)
    sink = PaimonBatchWriter(config_of(warehouse, "db.t"), SPARK_SCHEMA, overwrite=False)
    messages = tasks(table, 0)
    assert len(changelog_on_disk(table)) > 2
    failing_commit(monkeypatch, CommitConflictError("lost"), land_first=False)
    with pytest.raises(CommitConflictError):
        sink.commit(messages)
    sink.abort(messages)  # what Spark does next
    assert changelog_on_disk(table) == set() and on_disk(table) == set()
    monkeypatch.undo()
    sink.commit(tasks(table, 0))  # a fresh attempt lands, its changelog merged
    table = reopen(warehouse, "db.t")
    assert changes(table) == sorted(("+I", i, f"p{i % 2}") for i in range(40))
    assert len(changelog_on_disk(table)) == 2
