"""Conflict detection: an attempt's files and index files checked against its base snapshot.

Plain appends never conflict. Files to add must not be live yet (all live: the messages were committed
before); an overwrite's or compaction's deletes must still be live; a partition keeps one number of buckets;
an index file this commit replaces must not have been replaced by another (Java Paimon's
``ConflictDetection`` makes the same checks). docs/commit-protocol.md, "One attempt". Beyond Java: a
primary-key writer's files land only while the snapshot it read its buckets from is still in the history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.errors import CommitConflictError, CommitFilesError, ConfigError, CorruptMetadataError
from paimon_core.manifest import FileKind, IndexFileMeta, IndexManifestEntry, combine_index_entries
from paimon_core.snapshot import CommitKind, Snapshot
from paimon_core.table._messages import RestoredFrom
from paimon_core.table._store import POSTPONE_BUCKET
from paimon_core.table.commit._changes import Changes, is_compaction_index
from paimon_core.table.commit._entries import delta_entries, explain_missing
from paimon_core.table.commit._outcome import AlreadyLive

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

_CONFLICT_SEARCH_DEPTH = 200  # snapshots searched backwards to name the commit that won a conflict


def check_files(
    table: TableStore, latest: Snapshot | None, changes: Changes, check_live: bool
) -> AlreadyLive | None:
    """Files to add must not be live yet; an overwrite's or compaction's deletes must still be live.

    Returns:
        :class:`AlreadyLive` when every file to add is live already; None when the attempt may go on.

    Raises:
        CommitFilesError: some files to add are live, not all.
        CommitConflictError: files to delete are gone (another overwrite or compaction won).
    """
    if latest is None or not (check_live or changes.check_conflicts):
        return None
    live = table.live_files.at(latest)
    added = [e for e in changes.entries if e.kind == FileKind.ADD]
    duplicated = [e.file.file_name for e in added if e.identifier() in live]
    if duplicated:
        if len(duplicated) == len(added):
            return AlreadyLive()
        raise CommitFilesError(
            f"some files to add are live in {table.path} already (were these messages partly "
            "committed before?); nothing was committed",
            duplicated,
        )
    if not changes.check_conflicts:
        return None
    deleted = [e for e in changes.entries if e.kind == FileKind.DELETE]
    missing = [e.file.file_name for e in deleted if e.identifier() not in live]
    if missing:
        winner = _find_deleter(table, latest, set(missing))
        raise CommitConflictError(
            f"File deletion conflicts detected in {table.path}; give up committing",
            winning_snapshot_id=winner.id if winner else None,
            winning_commit_user=winner.commit_user if winner else None,
            conflicting_files=missing,
        )
    return None


def check_writers_history(table: TableStore, latest: Snapshot | None, changes: Changes) -> None:
    """A primary-key writer's records order after the files it read only in the history it read them from.

    A writer numbers its records after the largest sequence number of the bucket's files in the snapshot it
    read (its lookups, for ``first-row`` and the ``lookup`` changelog, saw that snapshot too). A rollback
    below that snapshot can bring back files with larger sequence numbers (those an overwrite had
    replaced): the writer's newer records would then read as older than them. Java Paimon commits them
    anyway; here the commit is refused.

    Raises:
        CommitConflictError: the table was rolled back past the snapshot a writer read its buckets from.
    """
    for mark in changes.restored_from:
        if not _in_history(table, mark, latest):
            base = latest.id if latest is not None else 0
            raise CommitConflictError(
                f"{table.path} was rolled back (its latest snapshot is {base}) past snapshot "
                f"{mark.snapshot_id}, which a primary-key writer read its buckets from: its records would "
                "not order after the restored ones; nothing was committed. Write them again with a writer "
                "opened after the rollback"
            )


def _in_history(table: TableStore, mark: RestoredFrom, latest: Snapshot | None) -> bool:
    """Whether the snapshot ``mark`` names is an ancestor of ``latest`` (or ``latest`` itself).

    A rollback to ``T`` deletes every snapshot above ``T``; later commits reuse their ids. So the snapshot
    is in the history while its file exists unchanged. Once expired (below ``EARLIEST``) it is taken to be,
    as expiration only removes ancestors of the latest snapshot: a rollback and then the expiration of the
    snapshot's id while a writer stays open across both is not detected.
    """
    if latest is None or latest.id < mark.snapshot_id:
        return False
    sm = table.snapshot_manager
    snapshot = latest if latest.id == mark.snapshot_id else sm.try_snapshot(mark.snapshot_id)
    if snapshot is not None:
        return mark.is_snapshot(snapshot)
    earliest = sm.earliest_id()
    return earliest is not None and mark.snapshot_id < earliest


def check_bucket_numbers(table: TableStore, latest: Snapshot | None, changes: Changes) -> None:
    """A partition's files all have one number of buckets (``_TOTAL_BUCKETS``): files written for another
    number land only where an overwrite replaces all of them (a rescale), as Java's commit checks.

    Raises:
        ConfigError: the files to add have another number of buckets than the partition's live files.
    """
    written = {e.partition: e.total_buckets for e in changes.entries if e.kind == FileKind.ADD}
    written = {p: n for p, n in written.items() if n > 0}
    if latest is None or not written:
        return
    replaced = {e.identifier() for e in changes.entries if e.kind == FileKind.DELETE}
    for identifier, entry in table.live_files.at(latest).items():
        wanted = written.get(entry.partition)
        if wanted is None or entry.total_buckets in (wanted, -1) or identifier in replaced:
            continue
        if entry.bucket == POSTPONE_BUCKET:
            continue  # postponed rows take the partition's number of buckets when compacted
        where = table.identifier
        if table.partition_keys:
            where = f"partition {table.partition_values(entry.partition)} of {where}"
        raise ConfigError(
            f"cannot write {where} with {wanted} buckets: its files have "
            f"{entry.total_buckets} (was 'bucket' changed without a rescale?); {opts.RESCALE_HINT}",
            opts.BUCKET.key,
        )


def index_after(
    table: TableStore, latest: Snapshot | None, changes: Changes
) -> list[IndexManifestEntry] | None:
    """The live index files once the attempt lands; None when it changes none.

    Raises:
        CommitConflictError: another commit replaced an index file this one replaces (or created one
            where this one creates the first): two writers assigned dynamic buckets in one partition.
    """
    has_index = latest is not None and bool(latest.index_manifest)
    if not changes.index_changes and (changes.index_scope is None or not has_index):
        return None
    live: list[IndexManifestEntry] = []
    if latest is not None and has_index:
        try:
            live = table.index_entries(latest)
        except CorruptMetadataError as exc:  # expiration took the base meanwhile: a lost race
            raise explain_missing(table, latest.id, exc) from exc
    scope = changes.index_scope
    if scope is not None:
        return combine_index_entries([e for e in live if not scope(e.partition)], changes.index_changes)
    by_slot = {e.slot: e.file.file_name for e in live}
    replaced = {c.slot: c.file.file_name for c in changes.index_changes if c.kind == FileKind.DELETE}
    stale = [
        c.file
        for c in changes.index_changes
        if c.kind == FileKind.ADD and by_slot.get(c.slot) != replaced.get(c.slot)
    ]
    if stale:
        raise CommitConflictError(
            f"{_stale_index_reason(table, stale[0])}; nothing was committed",
            conflicting_files=[f.file_name for f in stale],
        )
    return combine_index_entries(live, changes.index_changes)


def _stale_index_reason(table: TableStore, file: IndexFileMeta) -> str:
    if is_compaction_index(file):
        return (
            f"the deletion vectors of a bucket of {table.path} changed since this compaction read "
            "them: another compaction of the bucket won"
        )
    return (
        f"the dynamic-bucket hash index of {table.path} changed since this writer read it: "
        "another writer assigned buckets in the same partition (one writer per partition of a "
        "bucket = -1 table)"
    )


def _find_deleter(table: TableStore, latest: Snapshot, names: set[str]) -> Snapshot | None:
    """The newest snapshot (within a bounded search) that deleted one of these files: the conflict's winner."""
    sm = table.snapshot_manager
    earliest = sm.earliest_id() or 1
    for snapshot_id in range(latest.id, max(earliest, latest.id - _CONFLICT_SEARCH_DEPTH) - 1, -1):
        snapshot = sm.try_snapshot(snapshot_id)
        if snapshot is None or snapshot.commit_kind == CommitKind.APPEND:
            continue
        try:
            entries = delta_entries(table, snapshot)
        except CorruptMetadataError:
            return None  # expired while we looked: the winner stays unnamed
        if any(e.kind == FileKind.DELETE and e.file.file_name in names for e in entries):
            return snapshot
    return None
