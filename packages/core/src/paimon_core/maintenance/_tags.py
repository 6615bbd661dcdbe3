"""Tag procedures and rollback (docs/format.md#tags, docs/format.md#rollback), with Paimon's argument names."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paimon_core.errors import (
    CommitConflictError,
    ConfigError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
    StorageError,
    TagNotFoundError,
)
from paimon_core.maintenance._expire import clean_after_last_tag
from paimon_core.options import parse_duration_ms, to_millis
from paimon_core.snapshot import EARLIEST_HINT, Snapshot
from paimon_core.tag import Tag, TagManager, split_tag_names

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = [
    "create_tag",
    "create_tag_from_timestamp",
    "delete_tag",
    "find_snapshot",
    "parse_time_retained",
    "rename_tag",
    "rollback_to",
    "rollback_to_timestamp",
]


def _tags(table: TableStore) -> TagManager:
    return table.tag_manager


def create_tag(
    table: TableStore,
    tag: str,
    snapshot_id: int | None = None,
    time_retained: dt.timedelta | str | None = None,
    *,
    ignore_if_exists: bool = False,
) -> Tag:
    """Tag ``snapshot_id`` (the latest snapshot by default), optionally with a time-to-live ('7 d').

    Raises:
        SnapshotNotFoundError: the snapshot does not exist (or the table has none).
        TagAlreadyExistsError: the tag exists and ``ignore_if_exists`` is false.
    """
    sm = table.snapshot_manager
    snapshot = find_snapshot(table, snapshot_id) if snapshot_id is not None else sm.latest()
    if snapshot is None:
        raise SnapshotNotFoundError(None, f"{table.identifier} has no snapshot to tag")
    return _tags(table).create(
        tag, snapshot, parse_time_retained(time_retained), ignore_if_exists=ignore_if_exists
    )


def parse_time_retained(time_retained: dt.timedelta | str | None) -> dt.timedelta | None:
    if not isinstance(time_retained, str):
        return time_retained
    try:
        return dt.timedelta(milliseconds=parse_duration_ms(time_retained))
    except ValueError as exc:
        raise ConfigError(f"time_retained: {exc}") from None


def find_snapshot(table: TableStore, snapshot_id: int) -> Snapshot:
    """Snapshot ``snapshot_id``, or, once it expired, the copy a tag keeps of it (as Java's ``findSnapshot``).

    Raises:
        SnapshotExpiredError, SnapshotNotFoundError: neither the snapshot nor a tag of it exists.
    """
    try:
        return table.snapshot_manager.snapshot(snapshot_id)
    except SnapshotNotFoundError:  # SnapshotExpiredError included
        for tagged in _tags(table).tagged_snapshots():
            if tagged.id == snapshot_id:
                return tagged
        raise


def create_tag_from_timestamp(
    table: TableStore,
    tag: str,
    timestamp: dt.datetime | int | str,
    time_retained: dt.timedelta | str | None = None,
) -> Tag:
    """Paimon's ``create_tag_from_timestamp``: tag the earliest snapshot committed at or after ``timestamp``
    (epoch millis, a datetime, or 'yyyy-MM-dd HH:mm:ss' local time). As in Java, the snapshots tags keep count
    too: an expired snapshot a tag still holds is tagged again when it is the earliest that recent.

    Raises:
        SnapshotNotFoundError: no retained or tagged snapshot is that recent.
        TagAlreadyExistsError: the tag exists.
    """
    millis = to_millis(timestamp)
    sm = table.snapshot_manager
    before = sm.snapshot_at_or_before_time(millis - 1)
    earliest, latest = sm.earliest_id(), sm.latest_id()
    first = earliest if before is None else before.id + 1
    found = None
    for snapshot_id in range(first or 1, (latest or 0) + 1):
        snapshot = sm.try_snapshot(snapshot_id)
        if snapshot is not None and snapshot.time_millis >= millis:
            found = snapshot
            break
    # Java takes the first tagged snapshot (by id) that recent when it is older than the one found.
    tagged = next((s for s in _tags(table).tagged_snapshots() if s.time_millis >= millis), None)
    if tagged is not None and (found is None or tagged.time_millis < found.time_millis):
        found = tagged
    if found is None:
        raise SnapshotNotFoundError(
            None,
            f"no snapshot of {table.identifier} was committed at or after {timestamp!r} ({millis} epoch ms)",
        )
    return _tags(table).create(tag, found, parse_time_retained(time_retained))


def rename_tag(table: TableStore, tag: str, target_tag: str) -> Tag:
    """Paimon's ``rename_tag``: the tag keeps its snapshot, creation time and time-to-live under ``target_tag``.

    Raises:
        TagNotFoundError: ``tag`` does not exist.
        TagAlreadyExistsError: ``target_tag`` exists.
    """
    return _tags(table).rename(tag, target_tag)


def rollback_to_timestamp(table: TableStore, timestamp: dt.datetime | int | str) -> Snapshot:
    """Paimon's ``rollback_to_timestamp``: :func:`rollback_to` the newest snapshot committed at or before
    ``timestamp`` (as :func:`create_tag_from_timestamp` takes it); returns that snapshot.

    Raises:
        SnapshotNotFoundError: every retained snapshot is newer.
    """
    millis = to_millis(timestamp)
    target = table.snapshot_manager.snapshot_at_or_before_time(millis)
    if target is None:
        raise SnapshotNotFoundError(
            None,
            f"no snapshot of {table.identifier} was committed at or before {timestamp!r} ({millis} epoch ms)",
        )
    rollback_to(table, snapshot_id=target.id)
    return target


def delete_tag(table: TableStore, tag: str | Sequence[str]) -> list[str]:
    """Delete tags (a name, ``'a,b'`` or a list); returns the names deleted. Missing tags are skipped, as in Java.

    When a deleted tag was the last to keep a snapshot that has expired, the files only that snapshot used
    are deleted too (docs/format.md#tags): data files that neither neighbouring tag nor the earliest snapshot uses,
    then its manifests.
    """
    tags = _tags(table)
    # every tag is read before any is deleted: the remaining ones decide what a deleted tag's files still serve
    remaining = {t.name: t.snapshot for t in tags.tags()}
    removed = []
    for name in split_tag_names(tag):
        snapshot = remaining.pop(name, None)
        if snapshot is None or not tags.delete([name]):
            continue
        removed.append(name)
        others = {s.id: s for s in remaining.values()}
        if snapshot.id in others or table.snapshot_manager.snapshot_exists(snapshot.id):
            continue
        clean_after_last_tag(table, snapshot, [others[i] for i in sorted(others)])
    return removed


def rollback_to(table: TableStore, snapshot_id: int | None = None, tag: str | None = None) -> None:
    """Make ``snapshot_id`` (or the snapshot of ``tag``) the latest again (docs/format.md#rollback).

    Newer snapshot files and tags of newer snapshots are deleted; data files and manifests are left for
    :func:`remove_orphan_files`, as Java does since 1.2. Like Java's, this is for a table no one is
    writing to: a commit racing the rollback is rolled back with the snapshots it sits on.

    What the rollback restores is written before anything is deleted, and the newer snapshots go oldest
    first, so that the latest one goes last: a rollback that dies midway leaves the table reading either
    the latest snapshot it had or the target, never a snapshot in between and never an empty table, and
    running it again finishes the job.

    Raises:
        ConfigError: neither or both of ``snapshot_id`` and ``tag``.
        SnapshotNotFoundError / TagNotFoundError: the target does not exist (``SnapshotExpiredError``: it
            expired, even if an expiration that died left its file).
        StorageError: the restored snapshot or the EARLIEST hint could not be written (nothing was deleted).
        CommitConflictError: commits kept landing while it ran (run it again when no one writes).
    """
    if (snapshot_id is None) == (tag is None):
        raise ConfigError("rollback_to needs exactly one of snapshot_id and tag")
    sm = table.snapshot_manager
    tags = _tags(table)
    if tag is not None:
        target = tags.tag(tag).snapshot
    else:
        assert snapshot_id is not None
        target = sm.snapshot(snapshot_id)
        earliest = sm.earliest_id()
        if earliest is not None and target.id < earliest:
            # a file an expiration that died left below EARLIEST: its data files may be gone already
            raise SnapshotExpiredError(target.id, earliest)
    latest = sm.latest_id()
    if latest is None or target.id > latest:
        raise SnapshotNotFoundError(target.id, f"snapshot {target.id} is newer than the latest ({latest})")
    if tag is not None:
        _restore_tagged_snapshot(table, target)
    # Should LATEST lag behind (a committer died before moving it), keep it off the ids about to go:
    # a hint whose successor is missing would be trusted.
    sm.advance_latest_hint(latest)
    _delete_newer_snapshots(table, target.id)
    for later in tags.tags():
        if later.snapshot.id > target.id:
            with contextlib.suppress(TagNotFoundError):
                tags.delete([later.name])
    sm.write_latest_hint(target.id)


def _restore_tagged_snapshot(table: TableStore, target: Snapshot) -> None:
    """Write back the snapshot file of a tag whose snapshot expired (or is missing), and move EARLIEST back
    to it when it is older than the earliest snapshot, before any newer snapshot is deleted.

    Until then the file sits below EARLIEST, where readers ignore it; from then on it is the earliest
    snapshot and the latest stays what it was, until the newer snapshots are gone.
    """
    sm = table.snapshot_manager
    earliest = sm.earliest_id()
    expired = earliest is not None and target.id < earliest
    if not expired and sm.snapshot_exists(target.id):
        return
    path = sm.snapshot_path(target.id)
    try:
        table.storage.write_bytes(path, target.to_json().encode("utf-8"), overwrite=True)
    except OSError as exc:
        raise StorageError(f"rollback could not write back {path}; nothing was rolled back: {exc}") from exc
    if expired and not sm.write_earliest_hint(target.id):
        raise StorageError(
            f"rollback could not set {sm.hint_path(EARLIEST_HINT)} to {target.id}; nothing was rolled back"
        )


_ROLLBACK_SWEEPS = 5


def _delete_newer_snapshots(table: TableStore, target: int) -> None:
    """Delete every snapshot file above ``target``, oldest first, and list again until none is left.

    Oldest first, the latest snapshot goes last: until then readers and writers see the table as it was
    (ids above ``target`` that are already gone are a hole below the latest, which nothing reads), and
    when it goes they see ``target``. A commit that lands on the latest snapshot meanwhile is found by the
    next listing and rolled back with the others (its committer may already have reported it), so no
    snapshot is left on top of a hole.

    Raises:
        CommitConflictError: commits kept landing through every sweep (the table reads the newest).
    """
    sm = table.snapshot_manager
    for _ in range(_ROLLBACK_SWEEPS):
        doomed = [i for i in sm.list_ids() if i > target]
        if not doomed:
            return
        for newer in doomed:
            with contextlib.suppress(FileNotFoundError):
                table.storage.delete(sm.snapshot_path(newer))
    left = [i for i in sm.list_ids() if i > target]
    if left:
        raise CommitConflictError(
            f"rollback of {table.identifier} to snapshot {target} gave up: commits kept landing while it "
            f"deleted the newer snapshots (snapshots {left[0]}..{left[-1]} are there, the table reads "
            f"{left[-1]}); run it again when no one writes to the table",
            winning_snapshot_id=left[-1],
        )
