"""Commits that race expiration, rollback and orphan removal, replays, two handles (issue 18), and writers open
across a rollback."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.errors import (
    CommitConflictError,
    CommitFilesError,
    CommitHistoryExpiredError,
    CommitIdentifierError,
    CommitStateUnknownError,
    CorruptMetadataError,
    SnapshotExpiredError,
)
from paimon_core.maintenance import create_tag, expire_snapshots, remove_orphan_files, rollback_to
from paimon_core.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64())])
FAR_FUTURE = dt.datetime(2999, 1, 1)
FAR_FUTURE_MS = int(FAR_FUTURE.timestamp() * 1000)


@pytest.fixture()
def table(tmp_path: Any) -> Table:
    catalog = Catalog.open(str(tmp_path / "warehouse"), create=True)
    catalog.create_database("db")
    return catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids)}, schema=SCHEMA)


def _ids(table: Table) -> list[int]:
    return sorted(table.to_arrow().column("id").to_pylist())


def _drop_commit_progress(table: Table) -> None:
    """Rewrite every snapshot without its commit progress record, as Java Paimon writes snapshots."""
    sm = table.snapshot_manager
    for snapshot_id in sm.list_ids():
        snapshot = sm.snapshot(snapshot_id)
        bare = dataclasses.replace(snapshot, properties=None)
        table.storage.write_bytes(sm.snapshot_path(snapshot_id), bare.to_json().encode(), overwrite=True)


def _pause_publish(handle: Table, meanwhile: Callable[[], object]) -> None:
    """Run ``meanwhile`` once, right before ``handle`` publishes its next snapshot (a stalled committer)."""
    manager = handle.snapshot_manager
    real = manager.try_publish
    fired: list[bool] = []

    def paused(snapshot: Any) -> bool:
        if not fired:
            fired.append(True)
            meanwhile()
        return real(snapshot)

    manager.try_publish = paused  # type: ignore[method-assign]


def test_a_publish_into_an_id_freed_by_expiration_is_retried(table: Table, tmp_path: Any) -> None:
    table.append(_rows(1))
    table.append(_rows(2))
    stalled = Catalog.open(str(tmp_path / "warehouse")).get_table("db.t")

    def others_commit_and_expire() -> None:
        for i in (10, 11, 12):
            table.append(_rows(i))
        expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)

    _pause_publish(stalled, others_commit_and_expire)
    created = stalled.append(_rows(3))  # it read latest = 2 and tries snapshot-3, which expiration freed
    assert created == 6
    assert _ids(table) == [1, 2, 3, 10, 11, 12]  # every acknowledged append, once
    sm = table.snapshot_manager
    assert sm.list_ids() == [5, 6]  # the stale snapshot-3 was withdrawn
    assert sm.latest_id() == 6
    # Orphan removal works (it used to count the stale snapshot as live and call the table corrupt), and
    # finds nothing: the withdrawn attempt deleted its own manifests.
    assert remove_orphan_files(table, older_than=FAR_FUTURE, now_millis=FAR_FUTURE_MS).deleted == ()
    assert _ids(table) == [1, 2, 3, 10, 11, 12]
    table.append(_rows(4))
    assert _ids(table) == [1, 2, 3, 4, 10, 11, 12]


def test_a_publish_behind_a_rollback_is_retried(table: Table, tmp_path: Any) -> None:
    for i in (1, 2, 3):
        table.append(_rows(i))
    stalled = Catalog.open(str(tmp_path / "warehouse")).get_table("db.t")
    _pause_publish(stalled, lambda: rollback_to(table, snapshot_id=1))
    assert stalled.append(_rows(9)) == 2  # built on 3, which the rollback removed: rebuilt on 1
    assert _ids(table) == [1, 9]
    assert table.snapshot_manager.list_ids() == [1, 2]


def test_committing_the_same_messages_twice_is_recognised(table: Table) -> None:
    writer = table.new_write()
    writer.write(_rows(1, 2))
    messages = writer.prepare_commit()
    assert table.new_commit().commit(messages) == [1]
    assert table.new_commit().commit(messages) == []  # a user retrying: already committed
    committer = table.new_commit()
    assert committer.commit(messages) == []
    assert _ids(table) == [1, 2]
    other = table.new_write()
    other.write(_rows(3))
    mixed = messages + other.prepare_commit()
    with pytest.raises(CommitFilesError, match="live"):  # half committed: refused, nothing changes
        table.new_commit().commit(mixed)
    assert _ids(table) == [1, 2]
    assert table.snapshot_manager.latest_id() == 1


def test_new_files_that_no_longer_exist_are_refused(table: Table) -> None:
    writer = table.new_write()
    writer.write(_rows(1))
    messages = writer.prepare_commit()
    # deletes the uncommitted file
    remove_orphan_files(table, older_than=FAR_FUTURE, now_millis=FAR_FUTURE_MS)
    with pytest.raises(CommitFilesError, match="no longer exist"):
        table.new_commit().commit(messages)
    assert table.snapshot_manager.latest_id() is None


def test_identifiers_of_one_user_must_grow_across_handles(table: Table) -> None:
    def messages(*ids: int) -> Any:
        writer = table.new_write()
        writer.write(_rows(*ids))
        return writer.prepare_commit()

    old = table.new_commit("job")
    assert old.commit(messages(1), 1) == [1]
    new = table.new_commit("job")
    assert new.commit(messages(2), 2) == [2]
    with pytest.raises(CommitIdentifierError, match="not newer"):
        old.commit(messages(3), 2)  # the older handle must not land a second identifier 2
    with pytest.raises(CommitIdentifierError):
        new.commit(messages(4), 1)
    assert _ids(table) == [1, 2]


def test_a_replay_whose_snapshot_expired_is_not_committed_twice(table: Table) -> None:
    writer = table.new_write()
    writer.write(_rows(1))
    replayed = writer.prepare_commit()
    assert table.new_commit("job").commit(replayed, 5) == [1]
    for i in (2, 3, 4):
        table.append(_rows(i))
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)
    assert table.new_commit("job").commit(replayed, 5) == []  # its files are live: the same commit
    assert _ids(table) == [1, 2, 3, 4]


def test_reads_of_expired_snapshots_say_so(table: Table) -> None:
    for i in (1, 2, 3):
        table.append(_rows(i))
    scan = table.scan(snapshot_id=1)
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)
    with pytest.raises(SnapshotExpiredError, match="snapshot 1 has expired"):
        scan.plan()
    with pytest.raises(SnapshotExpiredError):
        table.to_arrow(snapshot_id=2)


def test_retries_are_counted(table: Table, tmp_path: Any) -> None:
    stalled = Catalog.open(str(tmp_path / "warehouse")).get_table("db.t")
    _pause_publish(stalled, lambda: table.append(_rows(1)))
    committer = stalled.new_commit()
    writer = stalled.new_write()
    writer.write(_rows(2))
    assert committer.commit(writer.prepare_commit()) == [2]
    assert committer.last_attempts == {2: 2}


def test_appends_on_an_unreadable_latest_snapshot_are_refused(table: Table, tmp_path: Any) -> None:
    table.append(_rows(1))
    table.append(_rows(2))
    (manifest,) = [
        m
        for m in (tmp_path / "warehouse" / "db.db" / "t" / "manifest").iterdir()
        if m.name.startswith("manifest-") and not m.name.startswith("manifest-list-")
    ][:1]
    manifest.unlink()
    fresh = Catalog.open(str(tmp_path / "warehouse")).get_table("db.t")
    with pytest.raises(CorruptMetadataError, match="is missing"):
        fresh.append(_rows(3))
    assert fresh.snapshot_manager.latest_id() == 2


def test_a_read_whose_files_expire_midway_says_the_snapshot_expired(table: Table) -> None:
    table.append(_rows(1))
    table.append(_rows(2))
    splits = table.scan(snapshot_id=2).plan()
    table.overwrite(_rows(3))  # the files of snapshot 2 are no longer live ...
    table.append(_rows(4))
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)  # ... and now deleted
    with pytest.raises(SnapshotExpiredError, match="snapshot 2 has expired") as info:
        table.new_read().to_arrow(splits)
    assert "data-" in str(info.value)  # the missing file is named


def test_a_read_whose_replaced_file_went_before_earliest_moved_says_the_snapshot_expired(
    table: Table,
) -> None:
    """Expiration deletes data files before snapshot files, and EARLIEST may be set back for a moment by an
    older run: a missing file that the latest snapshot no longer lists is still told as an expiry."""
    from paimon_core.errors import DataFileError

    table.append(_rows(1))
    splits = table.scan(snapshot_id=1).plan()
    (replaced,) = table.live_entries(1)
    table.overwrite(_rows(2))
    path = f"{table.bucket_dir(replaced.partition, replaced.bucket)}/{replaced.file.file_name}"
    table.storage.delete(path)  # as an expiration to snapshot 2 does, EARLIEST not (or no longer) moved
    with pytest.raises(SnapshotExpiredError, match="snapshot 1 has expired"):
        table.new_read().to_arrow(splits)
    (live,) = table.live_entries(2)
    table.storage.delete(f"{table.bucket_dir(live.partition, live.bucket)}/{live.file.file_name}")
    with pytest.raises(DataFileError, match="listed in snapshot 2 but missing") as info:
        table.to_arrow()  # a file of the latest snapshot: corruption, not expiry
    assert not isinstance(info.value, SnapshotExpiredError)


@pytest.mark.parametrize("recorded", [True, False], ids=["progress-recorded", "history-without-record"])
def test_a_replayed_overwrite_without_files_is_never_repeated_when_its_history_expired(
    table: Table, recorded: bool
) -> None:
    table.append(_rows(1))
    empty = table.new_write().prepare_commit()
    assert table.new_commit("job").overwrite(empty, commit_identifier=7) == [2]  # truncates
    table.append(_rows(2))
    if not recorded:  # as Java or an older release wrote them
        _drop_commit_progress(table)
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)
    # A restarted job replays identifier 7: it adds no files to recognise it by, and truncating again would
    # drop row 2, acknowledged after it. The progress record of the latest snapshot tells it landed;
    # without one, whether it landed cannot be told.
    if recorded:
        assert table.new_commit("job").overwrite(empty, commit_identifier=7) == []
    else:
        with pytest.raises(CommitHistoryExpiredError, match="cannot be told"):
            table.new_commit("job").overwrite(empty, commit_identifier=7)
    assert _ids(table) == [2]
    assert table.new_commit("job").overwrite(empty) == [4]  # the batch identifier is the way out
    assert _ids(table) == []


@pytest.mark.parametrize("midway", [False, True], ids=["compaction-retained", "expiration-midway"])
def test_a_replay_compacted_away_after_its_snapshot_expired_is_not_committed_twice(
    table: Table, midway: bool
) -> None:
    from paimon_core.compact import compact_table

    writer = table.new_write()
    writer.write(_rows(1))
    replayed = writer.prepare_commit()
    assert table.new_commit("job").commit(replayed, 3) == [1]
    table.append(_rows(2))
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)  # the job's snapshot is gone
    compact_table(table.copy({"compaction.min.file-num": "2"}))  # its file is replaced, not yet deleted
    assert table.latest_snapshot().commit_kind.value == "COMPACT"  # type: ignore[union-attr]
    if midway:
        table.append(_rows(4))
        # An expiration to snapshot 4 has moved EARLIEST and not yet deleted anything: snapshot 3 still tells.
        table.snapshot_manager.advance_earliest_hint(4)
    assert table.new_commit("job").commit(replayed, 3) == []  # a restarted job replays identifier 3
    assert _ids(table) == ([1, 2, 4] if midway else [1, 2])


def test_expiration_deletes_data_files_before_the_snapshots_that_deleted_them(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paimon_core.compact import compact_table

    table.append(_rows(1))
    table.append(_rows(2))
    compact_table(table.copy({"compaction.min.file-num": "2"}))
    table.append(_rows(3))
    deleted = _record_deletes(table, monkeypatch)
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)
    data = [i for i, name in enumerate(deleted) if name.startswith("data-")]
    snapshots = [i for i, name in enumerate(deleted) if name.startswith("snapshot-")]
    assert len(data) == 2 and snapshots  # the compaction's two inputs; snapshots 1..3
    assert max(data) < min(snapshots)


def _record_deletes(table: Table, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files deleted through ``table``'s storage from now on, in order."""
    deleted: list[str] = []
    real_delete = table.storage.delete

    def recording(path: str) -> None:
        deleted.append(path.rsplit("/", 1)[-1])
        real_delete(path)

    monkeypatch.setattr(table.storage, "delete", recording)
    return deleted


def _publish_then_time_out(handle: Table, meanwhile: Callable[[], None]) -> None:
    """``handle``'s next publish lands, then ``meanwhile`` runs and the publish raises a timeout."""
    manager = handle.snapshot_manager
    real = manager.try_publish
    fired: list[bool] = []

    def timing_out(snapshot: Any) -> bool:
        landed = real(snapshot)
        if fired:
            return landed
        fired.append(True)
        meanwhile()
        raise TimeoutError("the store did not answer")

    manager.try_publish = timing_out  # type: ignore[method-assign]


def _compact_and_expire(table: Table, *, keep_compaction: bool, recorded: bool = True) -> Callable[[], None]:
    def run() -> None:
        from paimon_core.compact import compact_table

        table.append(_rows(2))
        compact_table(table.copy({"compaction.min.file-num": "2"}))  # replaces the unseen commit's file
        if not keep_compaction:
            table.append(_rows(3))  # ... and the compaction expires too, deleting that file
        if not recorded:
            _drop_commit_progress(table)
        expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)

    return run


def test_an_unknown_outcome_that_landed_and_was_compacted_away_is_not_committed_again(
    table: Table, tmp_path: Any
) -> None:
    timing_out = Catalog.open(str(tmp_path / "warehouse")).get_table("db.t")
    _publish_then_time_out(timing_out, _compact_and_expire(table, keep_compaction=True, recorded=False))
    writer = timing_out.new_write()
    writer.write(_rows(1))
    # The committer's own snapshot expired before it looked again, but the compaction that replaced its
    # file is retained: it landed.
    assert timing_out.new_commit("job").commit(writer.prepare_commit(), 1) == []
    assert _ids(table) == [1, 2]


def test_an_unknown_outcome_that_landed_and_expired_is_told_by_the_progress_record(
    table: Table, tmp_path: Any
) -> None:
    timing_out = Catalog.open(str(tmp_path / "warehouse")).get_table("db.t")
    _publish_then_time_out(timing_out, _compact_and_expire(table, keep_compaction=False))
    writer = timing_out.new_write()
    writer.write(_rows(1))
    messages = writer.prepare_commit()
    # Its snapshot and its files are gone, but the latest snapshot records identifier 1 of "job" landed.
    assert timing_out.new_commit("job").commit(messages, 1) == []
    assert _ids(table) == [1, 2, 3]
    restarted = table.new_commit("job")
    assert restarted.is_committed(1)
    assert restarted.commit(messages, 1) == []
    assert _ids(table) == [1, 2, 3]


def test_an_unknown_outcome_whose_history_expired_unrecorded_is_not_guessed(
    table: Table, tmp_path: Any
) -> None:
    timing_out = Catalog.open(str(tmp_path / "warehouse")).get_table("db.t")
    _publish_then_time_out(timing_out, _compact_and_expire(table, keep_compaction=False, recorded=False))
    writer = timing_out.new_write()
    writer.write(_rows(1))
    messages = writer.prepare_commit()
    with pytest.raises(CommitHistoryExpiredError, match="cannot be told"):
        timing_out.new_commit("job").commit(messages, 1)
    assert _ids(table) == [1, 2, 3]  # not published again (its file is gone): the table reads
    with pytest.raises(CommitHistoryExpiredError):  # a restarted job cannot tell either
        table.new_commit("job").commit(messages, 1)


def test_attempts_that_lose_the_race_delete_their_manifests(table: Table, tmp_path: Any) -> None:
    table.append(_rows(1))
    stalled = Catalog.open(str(tmp_path / "warehouse")).get_table("db.t")
    _pause_publish(stalled, lambda: table.append(_rows(2)))  # the rival takes snapshot 2 first
    committer = stalled.new_commit()
    writer = stalled.new_write()
    writer.write(_rows(3))
    assert committer.commit(writer.prepare_commit()) == [3]
    assert committer.last_attempts == {3: 2}
    # Every manifest and manifest list left is used by a snapshot: the lost attempt deleted its own.
    result = remove_orphan_files(table, older_than=FAR_FUTURE, now_millis=FAR_FUTURE_MS)
    assert [p for p in result.deleted if "/manifest/" in p] == []
    assert _ids(table) == [1, 2, 3]


def test_a_writers_inline_compaction_that_lost_its_race_keeps_the_data_commit(table: Table) -> None:
    from dataclasses import replace

    from paimon_core.compact import compact_table

    table.append(_rows(1))
    table.append(_rows(2))
    inputs = tuple(e.file for e in table.live_entries())
    compact_table(table.copy({"compaction.min.file-num": "2"}))  # another compaction replaced the inputs

    def written(*ids: int) -> Any:
        writer = table.new_write()
        writer.write(_rows(*ids))
        return writer.prepare_commit()[0]

    new, output = written(3), written(1, 2)
    message = replace(new, compact_before=inputs, compact_after=output.new_files)
    created = table.new_commit().commit([message])  # the APPEND lands; the stale rewrite is dropped
    assert len(created) == 1 and table.snapshot_manager.snapshot(created[0]).commit_kind.value == "APPEND"
    assert _ids(table) == [1, 2, 3]
    path = f"{table.bucket_dir(output.partition, output.bucket)}/{output.new_files[0].file_name}"
    assert not table.storage.exists(path)  # the dropped rewrite's file is deleted


@pytest.mark.parametrize(
    "first_keeps", [2, 3], ids=["compaction-left-below", "compaction-is-the-new-earliest"]
)
def test_an_expiration_after_one_that_died_midway_deletes_data_files_before_snapshots(
    table: Table, monkeypatch: pytest.MonkeyPatch, first_keeps: int
) -> None:
    """A first expiration moves EARLIEST and dies before deleting anything (or is still deleting): the next
    one deletes the snapshot files it left, so it deletes the data files their deltas deleted first."""
    from paimon_core.compact import compact_table
    from paimon_core.maintenance import _expire

    table.append(_rows(1))
    table.append(_rows(2))
    compact_table(table.copy({"compaction.min.file-num": "2"}))  # snapshot 3 replaces the two files
    replaced = [e.file.file_name for e in table.live_entries(2)]
    table.append(_rows(4))
    table.append(_rows(5))

    def dies(*_: Any, **__: Any) -> None:
        raise OSError("killed")

    with monkeypatch.context() as patched:
        patched.setattr(_expire, "_delete_data_files", dies)
        with pytest.raises(OSError, match="killed"):
            expire_snapshots(table, retain_max=first_keeps, retain_min=1, older_than=FAR_FUTURE)
    table.append(_rows(6))
    deleted = _record_deletes(table, monkeypatch)
    expire_snapshots(table, retain_max=2, retain_min=1, older_than=FAR_FUTURE)
    assert all(name in deleted for name in replaced)
    assert max(deleted.index(name) for name in replaced) < deleted.index("snapshot-3")
    assert _ids(table) == [1, 2, 4, 5, 6]


KEYED = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])


def _keyed(rows: dict[int, int]) -> pa.Table:
    return pa.table({"id": list(rows), "v": list(rows.values())}, schema=KEYED)


def _values(table: Table) -> dict[int, int]:
    return {row["id"]: row["v"] for row in table.to_arrow().to_pylist()}


@pytest.fixture()
def keyed(tmp_path: Any) -> Table:
    catalog = Catalog.open(str(tmp_path / "keyed"), create=True)
    catalog.create_database("db")
    return catalog.create_table(
        "db.kv", KEYED, primary_keys=["id"], options={"bucket": "1", "write-only": "true"}
    )


def test_a_primary_key_writer_open_across_a_rollback_past_its_snapshot_is_refused(keyed: Table) -> None:
    # Snapshot 1 numbers ids 1..3 with sequence numbers 0..2; the overwrite (2) restarts the bucket at 0, so
    # a writer reading snapshot 2 numbers its record 1: older than id 3's restored record once rolled back.
    keyed.append(_keyed({1: 10, 2: 20, 3: 30}))
    create_tag(keyed, "t1", snapshot_id=1)
    keyed.overwrite(_keyed({5: 50}))
    writer = keyed.new_write()
    writer.write(_keyed({3: 33}))
    rollback_to(keyed, tag="t1")
    messages = writer.prepare_commit()
    with pytest.raises(CommitConflictError, match=r"rolled back .* past snapshot 2"):
        keyed.new_commit().commit(messages)
    assert keyed.snapshot_manager.list_ids() == [1]
    assert _values(keyed) == {1: 10, 2: 20, 3: 30}
    keyed.append(_keyed({3: 33}))  # a writer opened after the rollback
    assert _values(keyed) == {1: 10, 2: 20, 3: 33}


def test_a_primary_key_writer_lands_when_its_snapshot_stays_in_the_history(keyed: Table) -> None:
    keyed.append(_keyed({1: 10, 2: 20}))
    create_tag(keyed, "t1", snapshot_id=1)
    writer = keyed.new_write()  # reads snapshot 1
    writer.write(_keyed({2: 22}))
    keyed.append(_keyed({3: 30}))
    rollback_to(keyed, tag="t1")  # back to the writer's own snapshot: nothing it read went away
    keyed.new_commit().commit(writer.prepare_commit())
    assert _values(keyed) == {1: 10, 2: 22}
    old = keyed.new_write()  # reads snapshot 2, which expiration then removes
    old.write(_keyed({1: 11}))
    for i in range(3):
        keyed.append(_keyed({10 + i: i}))
    assert expire_snapshots(keyed, retain_max=1, retain_min=1) > 0
    keyed.new_commit().commit(old.prepare_commit())
    assert _values(keyed)[1] == 11


def test_a_stalled_compaction_that_moved_a_file_up_is_not_taken_for_landed_in_a_freed_id(
    keyed: Table, tmp_path: Any
) -> None:
    """A primary-key file moved up a level keeps its name, so another compaction of the same file adds the
    very same entry: its being live says nothing about whether a snapshot was built on the stalled one."""
    from paimon_core.compact import CompactJob

    keyed.append(_keyed({1: 10}))
    mover = Catalog.open(str(tmp_path / "keyed")).get_table("db.kv").copy({"compaction.min.file-num": "1"})
    (task,) = CompactJob(mover).plan()
    moved_up = [task.run(mover)]
    assert [f.file_name for f in moved_up[0].compact_after] == [
        f.file_name for f in moved_up[0].compact_before
    ]

    def others_compact_commit_and_expire() -> None:
        compact_table(keyed.copy({"compaction.min.file-num": "1"}))  # 2: moves the same file up
        keyed.append(_keyed({2: 20}))  # 3
        expire_snapshots(keyed, retain_max=1, retain_min=1, older_than=FAR_FUTURE)  # frees snapshot-2

    _pause_publish(mover, others_compact_commit_and_expire)
    # Its snapshot-2, in the freed id, changes what the real 2 changed: which one 3 was built on cannot be
    # told, so the outcome is unknown (it used to be reported as landed in snapshot 2).
    with pytest.raises(CommitStateUnknownError):
        mover.new_commit().commit(moved_up)
    assert keyed.snapshot_manager.latest_id() == 3
    assert _values(keyed) == {1: 10, 2: 20}
    keyed.append(_keyed({1: 11}))
    assert _values(keyed) == {1: 11, 2: 20}
