"""The commit protocol: concurrency, retries, conflicts, idempotence, unknown outcomes."""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, CommitConflictError, CommitStateUnknownError
from paimon_core.errors import CommitIdentifierError, CommitRetriesExhaustedError
from paimon_core.snapshot import CommitKind
from paimon_core.table import CommitMessage

SCHEMA = pa.schema([pa.field("writer", pa.int32()), pa.field("seq", pa.int32())])


# Run by separate interpreters: a module-level function of a test module cannot be pickled for
# multiprocessing under pytest's importlib import mode.
_APPENDER = """
import sys
import pyarrow as pa
from paimon_core import Catalog

warehouse, writer, commits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
schema = pa.schema([pa.field("writer", pa.int32()), pa.field("seq", pa.int32())])
options = {"commit.max-retries": "1000", "commit.max-retry-wait": "200 ms"}
table = Catalog.open(warehouse).get_table("db.t", **options)  # write-only is a table option
for seq in range(commits):
    table.append(pa.table({"writer": [writer], "seq": [seq]}, schema=schema))
"""


@pytest.mark.slow
def test_four_processes_append_concurrently(warehouse: str, catalog: Catalog) -> None:
    # write-only: Paimon's multi-writer setup (compaction belongs to one dedicated job), so every
    # snapshot is one of the appends
    catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})
    workers = [
        subprocess.Popen([sys.executable, "-c", _APPENDER, warehouse, str(w), "25"], stderr=subprocess.PIPE)
        for w in range(4)
    ]
    for p in workers:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    table = catalog.get_table("db.t")
    ids = [s.id for s in table.snapshots()]
    assert ids == list(range(1, 101))  # dense, nothing lost
    rows = sorted((r["writer"], r["seq"]) for r in table.to_arrow().to_pylist())
    assert rows == sorted((w, s) for w in range(4) for s in range(25))  # each row exactly once
    latest = table.latest_snapshot()
    assert latest is not None and latest.total_record_count == 100


def test_threads_append_concurrently(catalog: Catalog) -> None:
    options = {"commit.max-retries": "1000", "commit.max-retry-wait": "50 ms", "write-only": "true"}
    table = catalog.create_table("db.t", SCHEMA, options=options)
    errors: list[BaseException] = []

    def run(writer: int) -> None:
        try:
            for seq in range(10):
                table.append(pa.table({"writer": [writer], "seq": [seq]}, schema=SCHEMA))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [s.id for s in table.snapshots()] == list(range(1, 41))
    assert table.to_arrow().num_rows == 40


def _delete_message(table: Any) -> list[CommitMessage]:
    return [
        CommitMessage(e.partition, e.bucket, e.total_buckets, deleted_files=(e.file,))
        for e in table.live_entries()
    ]


def test_deleting_a_file_already_gone_is_a_typed_conflict(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))
    stale = _delete_message(table)  # planned against snapshot 1
    winner = table.new_commit("overwriter")
    winner.overwrite([], partition={})  # removes the file first
    with pytest.raises(CommitConflictError) as info:
        table.new_commit("late").commit(stale)
    error = info.value
    assert error.winning_snapshot_id == 2
    assert error.winning_commit_user == "overwriter"
    assert error.conflicting_files == (stale[0].deleted_files[0].file_name,)
    assert [s.id for s in table.snapshots()] == [1, 2]  # nothing published by the loser


def test_compaction_commit_is_checked_and_kind_compact(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))
    table.append(pa.table({"writer": [2], "seq": [2]}, schema=SCHEMA))
    entries = table.live_entries()
    # "compact" file 2 into a copy of itself under the same data (a rewrite with no logical change)
    writer = table.new_write()
    writer.write(table.to_arrow())
    (rewritten,) = writer.prepare_commit()
    message = CommitMessage(
        entries[0].partition,
        0,
        -1,
        compact_before=tuple(e.file for e in entries),
        compact_after=rewritten.new_files,
    )
    assert table.new_commit("compactor").commit([message]) == [3]
    assert table.latest_snapshot().commit_kind == CommitKind.COMPACT  # type: ignore[union-attr]
    assert sorted(r["writer"] for r in table.to_arrow().to_pylist()) == [1, 2]
    # Committed twice: its output is live already, so it is recognised and nothing happens.
    assert table.new_commit("compactor-2").commit([message]) == []
    writer = table.new_write()
    writer.write(table.to_arrow())
    (again,) = writer.prepare_commit()
    other = CommitMessage(
        entries[0].partition, 0, -1, compact_before=message.compact_before, compact_after=again.new_files
    )
    with pytest.raises(CommitConflictError):  # another rewrite of the same inputs: they are no longer live
        table.new_commit("compactor-3").commit([other])


def test_retries_are_bounded(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table(
        "db.t", SCHEMA, options={"commit.max-retries": "2", "commit.min-retry-wait": "1 ms"}
    )
    monkeypatch.setattr(table.snapshot_manager, "try_publish", lambda snapshot: False)  # always lose the race
    with pytest.raises(CommitRetriesExhaustedError):
        table.append(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))


def test_unknown_outcome_is_resolved_by_looking_for_own_snapshot(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    real_publish = table.snapshot_manager.try_publish
    calls = []

    def publish_then_time_out(snapshot: Any) -> bool:
        calls.append(snapshot.id)
        real_publish(snapshot)  # the write lands ...
        raise TimeoutError("connection dropped after the request was sent")  # ... but we never hear back

    table.snapshot_manager.try_publish = publish_then_time_out  # type: ignore[method-assign]
    created = table.append(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))
    assert created == 1 and calls == [1]  # found its own snapshot; no second, duplicate commit
    table.snapshot_manager.try_publish = real_publish  # type: ignore[method-assign]
    assert table.to_arrow().num_rows == 1 and len(table.snapshots()) == 1


def test_unknown_outcome_that_did_not_land_is_reported(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", SCHEMA, options={"commit.max-retries": "1", "commit.min-retry-wait": "1 ms"}
    )

    def never_lands(snapshot: Any) -> bool:
        raise TimeoutError("store unreachable")

    table.snapshot_manager.try_publish = never_lands  # type: ignore[method-assign]
    with pytest.raises(CommitStateUnknownError):
        table.append(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))


def test_streaming_style_identifiers_are_exactly_once(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    committed = {}
    for identifier in (1, 2, 3):
        writer = table.new_write()
        writer.write(pa.table({"writer": [0], "seq": [identifier]}, schema=SCHEMA))
        committed[identifier] = writer.prepare_commit()
        assert table.new_commit("stream").commit(committed[identifier], identifier)
    # a restarted job replays identifier 2 and 3 with the same messages: recognised, nothing committed twice
    restarted = table.new_commit("stream")
    for identifier in (2, 3):
        assert restarted.commit(committed[identifier], identifier) == []
    # a job that rewrote the data of a replayed identifier asks is_committed first (as the Spark sink does)
    writer = table.new_write()
    writer.write(pa.table({"writer": [0], "seq": [3]}, schema=SCHEMA))
    rewritten = writer.prepare_commit()
    assert restarted.is_committed(3)
    with pytest.raises(CommitIdentifierError, match="identifier 3 is not newer"):  # never silently dropped
        restarted.commit(rewritten, 3)
    restarted.abort(rewritten)
    assert sorted(table.to_arrow().column("seq").to_pylist()) == [1, 2, 3]


def test_a_streaming_commit_with_a_compaction_lands_both_under_its_identifier(catalog: Catalog) -> None:
    """The writers' compaction follows the APPEND as a COMPACT snapshot of the same identifier: not mistaken
    for another committer of this user having committed the identifier; a replay is still recognised."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    options = {"bucket": "1", "num-sorted-run.compaction-trigger": "2"}
    table = catalog.create_table("db.kv", schema, primary_keys=["k"], options=options)
    committer = table.new_commit("stream")
    compacted = False
    for identifier in range(1, 5):
        writer = table.new_write()
        writer.write(pa.table({"k": [1, 2], "v": [identifier] * 2}, schema=schema))
        messages = writer.prepare_commit()
        writer.close()
        compacted |= any(m.compact_before for m in messages)
        created = committer.commit(messages, identifier)
        kinds = [s.commit_kind for s in table.snapshots() if s.id in created]
        assert kinds[0] == CommitKind.APPEND and set(kinds[1:]) <= {CommitKind.COMPACT}
        assert {s.commit_identifier for s in table.snapshots() if s.id in created} == {identifier}
        assert table.new_commit("stream").commit(messages, identifier) == []  # a replay
    assert compacted
    assert table.to_arrow().column("v").to_pylist() == [4, 4]


def test_overwrite_replaces_files_added_meanwhile_in_scope(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))
    writer = table.new_write()
    writer.write(pa.table({"writer": [9], "seq": [9]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    table.append(pa.table({"writer": [2], "seq": [2]}, schema=SCHEMA))  # lands between prepare and commit
    table.new_commit().overwrite(messages, partition={})
    assert table.to_arrow().to_pylist() == [{"writer": 9, "seq": 9}]
    latest = table.latest_snapshot()
    assert latest is not None and latest.total_record_count == 1 and latest.delta_record_count == -1


def test_message_for_unknown_bucket_count_keeps_total_buckets(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, options={"bucket": "2", "bucket-key": "writer"})
    table.append(pa.table({"writer": [1, 2, 3], "seq": [1, 2, 3]}, schema=SCHEMA))
    assert {e.total_buckets for e in table.live_entries()} == {2}
    message = replace(_delete_message(table)[0], deleted_files=())
    assert message.is_empty()


def test_overwrite_with_unknown_outcome_finds_itself_before_rereading(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))
    real_publish = table.snapshot_manager.try_publish

    def publish_then_time_out(snapshot: Any) -> bool:
        real_publish(snapshot)
        raise TimeoutError("no answer")

    table.snapshot_manager.try_publish = publish_then_time_out  # type: ignore[method-assign]
    assert table.overwrite(pa.table({"writer": [2], "seq": [2]}, schema=SCHEMA)) == 2
    table.snapshot_manager.try_publish = real_publish  # type: ignore[method-assign]
    assert [s.commit_kind for s in table.snapshots()] == [CommitKind.APPEND, CommitKind.OVERWRITE]
    assert table.to_arrow().to_pylist() == [{"writer": 2, "seq": 2}]


def test_failure_to_read_after_unknown_outcome_is_reported_as_unknown(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    manager = table.snapshot_manager
    real_publish, real_snapshot = manager.try_publish, manager.try_snapshot

    def publish_then_time_out(snapshot: Any) -> bool:
        real_publish(snapshot)
        manager.try_snapshot = broken_read  # type: ignore[method-assign]
        raise TimeoutError("no answer")

    def broken_read(snapshot_id: int) -> Any:
        raise ConnectionError("store unreachable")

    manager.try_publish = publish_then_time_out  # type: ignore[method-assign]
    with pytest.raises(CommitStateUnknownError):  # not a plain ConnectionError: it may have landed
        table.append(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))
    manager.try_snapshot = real_snapshot  # type: ignore[method-assign]
    assert len(table.snapshots()) == 1  # it had landed ...
    assert table.to_arrow().num_rows == 1  # ... and its files were not cleaned up


def test_a_failed_history_search_is_repeated_before_the_next_commit(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    writer = table.new_write()
    writer.write(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    assert table.new_commit("job").commit(messages, 7) == [1]
    restarted = table.new_commit("job")  # a restart: it must find identifier 7 in the history
    manager = table.snapshot_manager
    real_snapshot = manager.try_snapshot

    def unreachable(snapshot_id: int) -> Any:
        raise ConnectionError("store unreachable")

    manager.try_snapshot = unreachable  # type: ignore[method-assign]
    with pytest.raises(CommitStateUnknownError, match="store unreachable"):  # it cannot tell
        restarted.commit(messages, 7)
    manager.try_snapshot = real_snapshot  # type: ignore[method-assign]
    assert restarted.commit(messages, 7) == []  # searched again: already committed, not committed twice
    assert table.to_arrow().num_rows == 1
