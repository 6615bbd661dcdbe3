"""Compaction end to end: tasks, the batch and streaming job, races, inline compaction, precommit-compact."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core import Catalog, CommitMessage
from paimon_core.compact import (
    CompactJob,
    CompactTask,
    LocalRunner,
    compact_table,
    precommit_compact,
)
from paimon_core.manifest import FileKind, FileSource
from paimon_core.snapshot import CommitKind
from paimon_core.table import manifest_metas, read_entries

SCHEMA = pa.schema([pa.field("k", pa.string()), pa.field("id", pa.int64()), pa.field("payload", pa.string())])
SMALL = {
    "write-only": "true",
    "target-file-size": "256 kb",
    "source.split.open-file-cost": "1 b",
    "compaction.min.file-num": "3",
}


def rows(start: int, count: int, keys: Sequence[str] = ("a", "b", "c")) -> pa.Table:
    ids = np.arange(start, start + count)
    rng = np.random.default_rng(start)
    return pa.table(
        {
            "k": [keys[i % len(keys)] for i in ids],
            "id": ids,
            # Random text compresses badly, so file sizes follow the row counts.
            "payload": [rng.bytes(40).hex() for _ in ids],
        },
        schema=SCHEMA,
    )


def table_of(catalog: Catalog, name: str = "db.t", **options: str) -> Any:
    return catalog.create_table(name, SCHEMA, partition_keys=["k"], options={**SMALL, **options})


def ids(table: Any) -> list[int]:
    return sorted(table.to_arrow(columns=["id"]).column("id").to_pylist())


def kinds(table: Any) -> list[CommitKind]:
    return [s.commit_kind for s in table.snapshots()]


def test_task_rewrites_to_target_size_with_sequence_numbers_from_the_first_input(catalog: Catalog) -> None:
    table = table_of(catalog, **{"target-file-size": "64 kb"})
    for start in range(0, 6000, 500):
        table.append(rows(start, 500, keys=["a"]))
    entries = table.live_entries()
    inputs = tuple(sorted((e.file for e in entries), key=lambda f: f.file_name))
    task = CompactTask(entries[0].partition, 0, -1, inputs)
    message = task.run(table)
    after = message.compact_after
    target = 64 * 1024
    assert message.compact_before == inputs
    assert len(after) >= 3
    assert all(0.5 * target <= f.file_size <= 1.5 * target for f in after[:-1])
    assert after[-1].file_size <= 1.5 * target
    assert sum(f.row_count for f in after) == sum(f.row_count for f in inputs)
    assert after[0].min_sequence_number == inputs[0].min_sequence_number
    for prev, nxt in itertools.pairwise(after):
        assert nxt.min_sequence_number == prev.max_sequence_number + 1
    assert all(f.file_source == FileSource.COMPACT and f.level == 0 for f in after)
    table.new_commit().commit([message])
    assert kinds(table)[-1] == CommitKind.COMPACT
    assert ids(table) == list(range(6000))


def test_batch_job_compacts_into_fewer_files_and_reads_back_identically(catalog: Catalog) -> None:
    table = table_of(catalog)
    for start in range(0, 3000, 100):
        table.append(rows(start, 100))
    before = table.to_arrow().sort_by("id")
    files_before = len(table.live_entries())
    summary = compact_table(table, progress=False)
    assert kinds(table).count(CommitKind.COMPACT) == 1
    assert table.to_arrow().sort_by("id").equals(before)
    assert summary.files_before == files_before == 90
    assert summary.files_after == len(table.live_entries()) < files_before
    assert summary.tasks >= 3 and summary.rewritten_files > 0 and summary.snapshots
    assert "files" in str(summary)


def test_small_files_converge_to_target_over_repeated_runs(catalog: Catalog) -> None:
    table = table_of(catalog)
    target = 256 * 1024
    for start in range(0, 12_000, 200):
        table.append(rows(start, 200, keys=["a"]))
    for _ in range(4):
        compact_table(table, progress=False)
    sizes = sorted(e.file.file_size for e in table.live_entries())
    small = [s for s in sizes if s < 0.7 * target]
    assert len(small) <= 2, sizes  # what the min-file-num rule leaves behind
    assert len(sizes) <= 12_000 * 90 // target + 3
    assert ids(table) == list(range(12_000))


def test_partition_filter_compacts_only_chosen_partitions(catalog: Catalog) -> None:
    table = table_of(catalog)
    for start in range(0, 1200, 100):
        table.append(rows(start, 100, keys=["a", "b", "c"]))

    def per_partition() -> dict[str, int]:
        return {
            table.partition_values(p)["k"]: n for p, n in _count_by_partition(table.live_entries()).items()
        }

    assert per_partition() == {"a": 12, "b": 12, "c": 12}
    compact_table(table, partitions="k=a;k=c", progress=False)
    counts = per_partition()
    assert counts["b"] == 12 and counts["a"] < 12 and counts["c"] < 12
    compact_table(table, partitions=[{"k": "b"}], progress=False)
    assert per_partition()["b"] < 12
    assert ids(table) == list(range(1200))


def _count_by_partition(entries: Any) -> dict[bytes, int]:
    counts: dict[bytes, int] = {}
    for entry in entries:
        counts[entry.partition] = counts.get(entry.partition, 0) + 1
    return counts


class _Interfering:
    """A runner that does something to the table after the tasks ran, before the job commits."""

    def __init__(self, action: Any) -> None:
        self.action = action
        self.calls = 0

    def __call__(self, table: Any, tasks: Sequence[Any]) -> Iterator[CommitMessage]:
        messages = [t.run(table) for t in tasks]
        self.calls += 1
        if self.calls == 1:
            self.action()
        yield from messages


def test_a_compaction_that_loses_to_an_overwrite_is_replanned(catalog: Catalog) -> None:
    table = table_of(catalog)
    for start in range(0, 900, 100):
        table.append(rows(start, 100))
    replacement = pa.table({"k": ["a"], "id": [-1], "payload": ["x"]}, schema=SCHEMA)
    runner = _Interfering(lambda: catalog.get_table("db.t").overwrite(replacement, partition={"k": "a"}))
    summary = compact_table(table, runner=runner, progress=False)
    assert summary.replans == 1
    expected = sorted([-1] + [i for i in range(900) if i % 3 != 0])
    assert ids(table) == expected  # the overwrite won for "a"; b and c were compacted, nothing lost
    assert kinds(table).count(CommitKind.COMPACT) >= 1
    live_names = {e.file.file_name for e in table.live_entries()}
    directory = Path(table.bucket_dir(table.live_entries()[0].partition, 0)).parent.parent
    on_disk = {p.name for p in directory.rglob("data-*.parquet")}
    dropped = on_disk - live_names
    # The lost task's outputs were deleted; only the replaced inputs (kept for time travel) remain.
    assert all(_is_input(table, name) for name in dropped)


def _is_input(table: Any, name: str) -> bool:
    for snapshot in table.snapshots():
        if any(e.file.file_name == name for e in table.live_entries(snapshot.id)):
            return True
    return False


def test_a_compaction_that_loses_to_another_compaction_is_replanned(catalog: Catalog) -> None:
    table = table_of(catalog)
    for start in range(0, 900, 100):
        table.append(rows(start, 100))
    other = lambda: compact_table(catalog.get_table("db.t"), partitions="k=b", progress=False)  # noqa: E731
    summary = compact_table(table, runner=_Interfering(other), progress=False)
    assert summary.replans == 1
    assert ids(table) == list(range(900))
    assert kinds(table).count(CommitKind.COMPACT) == 2  # the winner's and this job's (a and c)


def test_appends_during_a_compaction_are_kept(catalog: Catalog) -> None:
    table = table_of(catalog)
    for start in range(0, 900, 100):
        table.append(rows(start, 100))
    append = lambda: catalog.get_table("db.t").append(rows(900, 100))  # noqa: E731
    summary = compact_table(table, runner=_Interfering(append), progress=False)
    assert summary.replans == 0
    assert ids(table) == list(range(1000))


def test_streaming_job_compacts_new_appends_until_stopped(catalog: Catalog) -> None:
    table = table_of(catalog)
    stop = threading.Event()
    result: list[Any] = []
    job = threading.Thread(
        target=lambda: result.append(
            compact_table(table, mode="streaming", stop=stop, poll_interval=0.02, progress=False)
        )
    )
    job.start()
    writer = catalog.get_table("db.t")
    try:
        for start in range(0, 1500, 100):
            writer.append(rows(start, 100, keys=["a"]))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and CommitKind.COMPACT not in kinds(writer):
            time.sleep(0.05)
        for start in range(1500, 2500, 100):  # more appends after a compaction landed
            writer.append(rows(start, 100, keys=["a"]))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(writer.live_entries()) > 3:
            time.sleep(0.05)
    finally:
        stop.set()
        job.join(30)
    assert not job.is_alive()
    assert kinds(writer).count(CommitKind.COMPACT) >= 2
    assert len(writer.live_entries()) <= 3
    assert ids(writer) == list(range(2500))
    assert result and result[0].tasks >= 2


def test_streaming_job_and_concurrent_appenders_lose_nothing(catalog: Catalog) -> None:
    table = table_of(catalog, **{"commit.max-retries": "1000", "commit.max-retry-wait": "20 ms"})
    stop = threading.Event()
    errors: list[BaseException] = []

    def append(worker: int) -> None:
        handle = catalog.get_table("db.t")
        try:
            for i in range(15):
                handle.append(rows(worker * 10_000 + i * 10, 10))
        except BaseException as exc:
            errors.append(exc)

    job = threading.Thread(
        target=compact_table, args=(catalog.get_table("db.t"),),
        kwargs={"mode": "streaming", "stop": stop, "poll_interval": 0.01, "progress": False},
    )  # fmt: skip
    job.start()
    writers = [threading.Thread(target=append, args=(w,)) for w in range(3)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    time.sleep(0.3)
    stop.set()
    job.join(30)
    assert errors == []
    expected = sorted(w * 10_000 + i * 10 + j for w in range(3) for i in range(15) for j in range(10))
    assert ids(table) == expected
    assert CommitKind.COMPACT in kinds(table)


# --- writers -------------------------------------------------------------------------------------------


def test_write_only_writers_never_compact(catalog: Catalog) -> None:
    table = table_of(catalog)
    for start in range(0, 1000, 50):
        table.append(rows(start, 50))
    assert set(kinds(table)) == {CommitKind.APPEND}
    bucketed = catalog.create_table("db.b", SCHEMA, options={**SMALL, "bucket": "2", "bucket-key": "id"})
    for start in range(0, 1000, 50):
        bucketed.append(rows(start, 50))
    assert set(kinds(bucketed)) == {CommitKind.APPEND}


def test_unaware_bucket_appends_compact_inline_by_default(catalog: Catalog) -> None:
    options = {k: v for k, v in SMALL.items() if k != "write-only"}
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["k"], options=options)
    for start in range(0, 600, 50):
        table.append(rows(start, 50, keys=["a"]))
    assert CommitKind.COMPACT in kinds(table)
    assert len(table.live_entries()) < 12
    assert ids(table) == list(range(600))
    appends = [s for s in table.snapshots() if s.commit_kind == CommitKind.APPEND]
    assert len(appends) == 12  # every append landed as its own APPEND snapshot


def test_a_failing_inline_compaction_is_reported_once(
    catalog: Catalog, warehouse: str, caplog: pytest.LogCaptureFixture
) -> None:
    options = {k: v for k, v in SMALL.items() if k != "write-only"}
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["k"], options=options)
    table.append(rows(0, 10, keys=["a"]))
    (first,) = Path(warehouse, "db.db", "t", "k=a", "bucket-0").glob("data-*.parquet")
    first.unlink()  # every compaction of partition a now fails on this file
    with caplog.at_level(logging.DEBUG, logger="paimon_core.compact._inline"):
        for start in range(10, 60, 10):
            table.append(rows(start, 10, keys=["a"]))  # the appends land all the same
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "failed" in warnings[0].getMessage()
    assert warnings[0].exc_info is not None and first.name in str(warnings[0].exc_info[1])
    assert sum("still fails" in r.getMessage() for r in caplog.records) >= 2
    assert len([s for s in table.snapshots() if s.commit_kind == CommitKind.APPEND]) == 6


def test_bucketed_writers_compact_each_bucket_inline(catalog: Catalog) -> None:
    options = {k: v for k, v in SMALL.items() if k != "write-only"}
    table = catalog.create_table("db.b", SCHEMA, options={**options, "bucket": "2", "bucket-key": "id"})
    for start in range(0, 500, 50):
        table.append(rows(start, 50))
    assert CommitKind.COMPACT in kinds(table)
    entries = table.live_entries()
    assert {e.bucket for e in entries} == {0, 1}
    assert all(e.total_buckets == 2 for e in entries)
    assert len(entries) < 20
    assert ids(table) == list(range(500))
    # Sequence numbers of a bucket never overlap: the bucket's order is kept.
    for bucket in (0, 1):
        files = sorted((e.file for e in entries if e.bucket == bucket), key=lambda f: f.min_sequence_number)
        for prev, nxt in itertools.pairwise(files):
            assert nxt.min_sequence_number > prev.max_sequence_number


def test_bucketed_dedicated_job_full_compaction(catalog: Catalog) -> None:
    table = catalog.create_table("db.b", SCHEMA, options={**SMALL, "bucket": "2", "bucket-key": "id"})
    for start in range(0, 400, 50):
        table.append(rows(start, 50))
    assert len(table.live_entries()) == 16
    compact_table(table, progress=False)
    entries = table.live_entries()
    assert len(entries) == 2 and {e.bucket for e in entries} == {0, 1}
    assert ids(table) == list(range(400))


def test_compaction_tasks_share_their_reading_threads(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bucket's task of a few small files must not start threads of its own to read them ahead.
    table = catalog.create_table("db.b", SCHEMA, options={**SMALL, "bucket": "8", "bucket-key": "id"})
    for start in range(0, 600, 100):
        table.append(rows(start, 100))
    started: list[str] = []
    real_start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    compact_table(table, progress=False, parallelism=2)
    assert len(table.live_entries()) == 8
    assert ids(table) == list(range(600))
    readers = [name for name in started if name.startswith("paimon-compact-read")]
    assert len(readers) <= 4, readers  # one shared pool, however many tasks


def test_compactions_judge_the_dictionary_columns_once(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counting a sample's distinct values per column costs as much as encoding a small bucket's output:
    # the tasks of a table share one judgement.
    import pyarrow.compute as pc

    table = catalog.create_table("db.b", SCHEMA, options={**SMALL, "bucket": "8", "bucket-key": "id"})
    for start in range(0, 24_000, 4000):
        table.append(rows(start, 4000, keys=("a",)))
    counted: list[int] = []
    count_distinct = pc.count_distinct

    def counting(*args: Any, **kwargs: Any) -> Any:
        counted.append(1)
        time.sleep(0.05)  # widens the window in which parallel tasks would each judge
        return count_distinct(*args, **kwargs)

    monkeypatch.setattr(pc, "count_distinct", counting)
    compact_table(table, progress=False, parallelism=4)
    entries = table.live_entries()
    assert len(entries) == 8
    assert len(counted) <= len(SCHEMA.names)  # once per column, not per bucket
    assert ids(table) == list(range(24_000))
    for entry in entries:  # the judgement holds in every output: k (one value) in a dictionary, id plain
        path = Path(table.bucket_dir(entry.partition, entry.bucket)) / entry.file.file_name
        chunk = {
            c.path_in_schema: c
            for c in (pq.ParquetFile(path).metadata.row_group(0).column(i) for i in range(3))
        }
        assert chunk["k"].has_dictionary_page and not chunk["id"].has_dictionary_page


def delta_adds(table: Any, snapshot: Any) -> list[Any]:
    """The files a snapshot's delta manifests add."""
    entries = read_entries(table, manifest_metas(table, snapshot, delta_only=True))
    return [e for e in entries if e.kind == FileKind.ADD]


def on_disk(table: Any) -> set[str]:
    return {p.name for p in Path(table.path).rglob("data-*.parquet")}


def write_tasks(table: Any, tasks: int = 4, rows_each: int = 100) -> list[CommitMessage]:
    """What ``tasks`` writers (say, Spark tasks) of one commit hand over."""
    messages: list[CommitMessage] = []
    for task in range(tasks):
        writer = table.new_write()
        writer.write(rows(task * rows_each, rows_each))
        messages.extend(writer.prepare_commit())
        writer.close()
    return messages


def test_precommit_compact_merges_small_files_of_one_commit(catalog: Catalog) -> None:
    table = table_of(catalog, **{"precommit-compact": "true", "write-only": "false"})
    messages = write_tasks(table)
    originals = [f.file_name for m in messages for f in m.new_files]
    assert len(originals) == 12
    merged = precommit_compact(table, messages)
    table.new_commit().commit(merged)
    assert kinds(table) == [CommitKind.APPEND]
    entries = table.live_entries()
    assert len(entries) == 3  # one file per partition
    assert all(e.file.file_source == FileSource.APPEND for e in entries)
    assert ids(table) == list(range(400))
    assert on_disk(table) == {e.file.file_name for e in entries}  # the originals are gone


def test_writers_never_merge_their_own_files_precommit_is_applied_once_per_commit(catalog: Catalog) -> None:
    table = table_of(catalog, **{"precommit-compact": "true", "write-only": "false"})
    calls: list[int] = []

    def recording(t: Any, messages: list[CommitMessage]) -> list[CommitMessage]:
        calls.append(sum(len(m.new_files) for m in messages))
        return precommit_compact(t, messages)

    table.hooks = dataclasses.replace(table.hooks, precommit=recording)
    messages = write_tasks(table, tasks=2)
    assert calls == []  # prepare_commit leaves the merge to whoever gathers the commit's messages
    assert len({f.file_name for m in messages for f in m.new_files} & on_disk(table)) == 6
    table.append(rows(1000, 30))
    assert calls == [3]  # Table.append: once, over its files
    assert len(delta_adds(table, table.latest_snapshot())) == 3


def test_several_table_writes_commit_one_file_per_partition(catalog: Catalog) -> None:
    # write-only does not switch precommit-compact off: it is not the writers' inline compaction.
    table = table_of(catalog, **{"precommit-compact": "true"})
    for commit in range(2):
        messages = write_tasks(table)
        for m in messages:
            assert len(m.new_files) == 1  # each writer: one small file per partition
        table.new_commit("engine").commit(precommit_compact(table, messages), commit_identifier=commit)
    snapshots = table.snapshots()
    assert [s.commit_kind for s in snapshots] == [CommitKind.APPEND, CommitKind.APPEND]
    for snapshot in snapshots:
        added = delta_adds(table, snapshot)
        assert sorted(e.partition for e in added) == sorted({e.partition for e in added})  # 1 per partition
        assert len(added) == 3
    assert ids(table) == sorted([*range(400), *range(400)])
    assert on_disk(table) == {e.file.file_name for e in table.live_entries()}


def test_precommit_compact_is_off_by_default_and_for_other_tables(catalog: Catalog) -> None:
    plain = table_of(catalog)
    messages = write_tasks(plain)
    assert precommit_compact(plain, messages) == messages
    bucketed = catalog.create_table(
        "db.b", SCHEMA, options={**SMALL, "bucket": "2", "bucket-key": "id", "precommit-compact": "true"}
    )
    writer = bucketed.new_write()
    writer.write(rows(0, 100))
    messages = writer.prepare_commit()
    assert precommit_compact(bucketed, messages) == messages


def test_precommit_compact_groups_honour_target_size_and_max_file_num(catalog: Catalog) -> None:
    table = table_of(catalog, **{"precommit-compact": "true"})
    messages = write_tasks(table, tasks=6, rows_each=30)
    merged = precommit_compact(table, messages)
    assert len([f for m in merged for f in m.new_files]) == 3
    capped = table_of(catalog, "db.capped", **{"precommit-compact": "true", "compaction.max.file-num": "2"})
    merged = precommit_compact(capped, write_tasks(capped, tasks=6, rows_each=30))
    # six files per partition, at most two per rewrite: three outputs per partition
    assert len([f for m in merged for f in m.new_files]) == 9
    capped.new_commit().commit(merged)
    assert sorted(capped.to_arrow(columns=["id"]).column("id").to_pylist()) == list(range(180))
    # a file above the small-file size (target x compaction.small-file-ratio) is left as it is
    big = table_of(catalog, "db.big", **{"precommit-compact": "true", "target-file-size": "8 kb"})
    messages = write_tasks(big, tasks=2, rows_each=300)
    sizes = {f.file_name: f.file_size for m in messages for f in m.new_files}
    assert all(size > 0.7 * 8192 for size in sizes.values())
    assert precommit_compact(big, messages) == messages


def test_a_failed_precommit_rewrite_leaves_the_given_messages_valid(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = table_of(catalog, **{"precommit-compact": "true"})
    messages = write_tasks(table)
    before = on_disk(table)
    from paimon_core.compact import _inline
    from paimon_core.compact._task import rewrite_files as real

    done: list[int] = []

    def failing_second(*args: Any, **kwargs: Any) -> Any:
        if done:
            raise OSError("disk full")
        done.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_inline, "rewrite_files", failing_second)
    with pytest.raises(OSError, match="disk full"):
        precommit_compact(table, messages)
    assert on_disk(table) == before  # the first partition's output is gone, every original is there
    table.new_commit().commit(messages)
    assert ids(table) == list(range(400))


# --- API shape for engines ---------------------------------------------------------------------------


def test_tasks_messages_and_table_pickle(catalog: Catalog) -> None:
    import pickle

    table = table_of(catalog, **{"target-file-size": "128 kb"})
    for start in range(0, 600, 100):
        table.append(rows(start, 100))
    job = CompactJob(table, runner=LocalRunner(1))
    tasks = job.plan()
    assert tasks
    clone = pickle.loads(pickle.dumps(table))
    assert clone.options.get("target-file-size") == "128 kb"
    message = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(tasks[0])).run(clone)))
    created, conflicted = job.commit([message])
    assert created and not conflicted
    assert ids(table) == list(range(600))


def test_process_runner(catalog: Catalog) -> None:
    table = table_of(catalog)
    for start in range(0, 900, 100):
        table.append(rows(start, 100))
    summary = compact_table(table, parallelism=2, processes=True, progress=False)
    assert summary.tasks == 3
    assert ids(table) == list(range(900))
