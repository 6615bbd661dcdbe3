"""What to commit: writers' messages translated into the manifest entries and index changes of one snapshot.

The first stage of a commit (:mod:`._api` calls it): no I/O but the live files an overwrite replaces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from paimon_core import options as opts
from paimon_core.errors import SchemaError
from paimon_core.manifest import (
    DELETION_VECTORS_INDEX,
    FileKind,
    IndexFileMeta,
    IndexManifestEntry,
    ManifestEntry,
)
from paimon_core.snapshot import CommitKind, Snapshot
from paimon_core.table._messages import CommitMessage, RestoredFrom

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

OverwriteScope = Callable[[bytes], bool]  # whether an overwrite replaces the partition (stored bytes)


@dataclass(frozen=True)
class Changes:
    """The changes one snapshot makes; built again for every attempt when they depend on the base."""

    kind: CommitKind
    entries: list[ManifestEntry]
    check_conflicts: bool
    watermark: int | None = None  # the writer's event-time watermark; snapshots keep the largest
    index_changes: tuple[IndexManifestEntry, ...] = ()
    index_scope: OverwriteScope | None = None  # an overwrite drops the index files of these partitions
    changelog: tuple[ManifestEntry, ...] = ()  # changelog files, listed in the snapshot's changelog list
    restored_from: tuple[RestoredFrom, ...] = ()  # the snapshots primary-key writers continued from
    full_manifest_merge: bool = False  # compact_manifest: merge every base manifest, whatever its size


def restored_from(messages: Sequence[CommitMessage]) -> tuple[RestoredFrom, ...]:
    """The distinct snapshots the messages' primary-key writers read their buckets from."""
    return tuple(dict.fromkeys(m.restored_from for m in messages if m.restored_from is not None))


BuildChanges = Callable[[Snapshot | None], Changes]
"""The changes of an attempt on a base snapshot (None for an empty table)."""


def entries(messages: Sequence[CommitMessage], attribute: str, kind: FileKind) -> list[ManifestEntry]:
    """One entry of ``kind`` for each file in the messages' ``attribute`` (``new_files``, ...)."""
    found = []
    for message in messages:
        for file in getattr(message, attribute):
            found.append(ManifestEntry(kind, message.partition, message.bucket, message.total_buckets, file))
    return found


def compaction_entries(messages: Sequence[CommitMessage]) -> list[ManifestEntry]:
    """The files the messages' compactions delete, then those they write."""
    return entries(messages, "compact_before", FileKind.DELETE) + entries(
        messages, "compact_after", FileKind.ADD
    )


def index_changes(messages: Sequence[CommitMessage], *, compaction: bool) -> tuple[IndexManifestEntry, ...]:
    """The messages' index files of the data commit (hash indexes) or of the compaction (deletion vectors,
    which compactions write, as Java 0.9 routes them): what they replace (DELETE), then what they add."""
    changes = [
        IndexManifestEntry(kind, m.partition, m.bucket, file)
        for kind, attribute in ((FileKind.DELETE, "deleted_index_files"), (FileKind.ADD, "new_index_files"))
        for m in messages
        for file in getattr(m, attribute)
        if is_compaction_index(file) == compaction
    ]
    return tuple(changes)


def is_compaction_index(file: IndexFileMeta) -> bool:
    """Whether a compaction wrote this index file (deletion vectors), rather than a writer (hash index)."""
    return file.index_type == DELETION_VECTORS_INDEX


def compaction_messages(messages: Sequence[CommitMessage]) -> list[CommitMessage]:
    """The compaction part of each message: what to delete when its COMPACT snapshot is dropped."""
    return [
        CommitMessage(
            m.partition,
            m.bucket,
            m.total_buckets,
            compact_before=m.compact_before,
            compact_after=m.compact_after,
            compact_changelog_files=m.compact_changelog_files,
            new_index_files=tuple(f for f in m.new_index_files if is_compaction_index(f)),
        )
        for m in messages
    ]


def force_create_snapshot(table: TableStore, messages: Sequence[CommitMessage]) -> bool:
    """Whether to publish a snapshot although the messages change nothing."""
    if table.options.get_option(opts.COMMIT_FORCE_CREATE_SNAPSHOT):
        return True
    ignore_empty = table.options.get_option(opts.SNAPSHOT_IGNORE_EMPTY_COMMIT)
    return ignore_empty is False and not any(not m.is_empty() for m in messages)


def overwrite_scope(
    table: TableStore,
    partition: Mapping[str, Any] | None,
    dynamic: bool,
    new_entries: Sequence[ManifestEntry],
) -> OverwriteScope | None:
    """The partitions an overwrite replaces; None when a dynamic overwrite has no data (it changes nothing).

    Raises:
        SchemaError: the static spec names unknown columns, or new files lie outside it.
    """
    if partition is not None:
        scope = static_scope(table, partition)
        if any(not scope(e.partition) for e in new_entries):
            raise SchemaError(f"overwrite of partition {dict(partition)} got rows of other partitions")
        return scope
    if dynamic and table.partition_keys:
        present = {e.partition for e in new_entries}
        if not present:
            return None  # Paimon: a dynamic overwrite with no data changes nothing
        return lambda partition: partition in present
    return lambda partition: True


def static_scope(table: TableStore, spec: Mapping[str, Any]) -> OverwriteScope:
    """The partitions matching a static spec (``{"dt": "2024-01-01"}``), memoised per stored partition."""
    unknown = [k for k in spec if k not in table.partition_keys]
    if unknown:
        raise SchemaError(f"overwrite spec names non-partition columns: {', '.join(unknown)}")
    cache: dict[bytes, bool] = {}

    def in_scope(partition: bytes) -> bool:
        hit = cache.get(partition)
        if hit is None:
            values = table.partition_values(partition)
            hit = all(_same_partition_value(values[k], v) for k, v in spec.items())
            cache[partition] = hit
        return hit

    return in_scope


def overwrite_changes(
    table: TableStore,
    messages: Sequence[CommitMessage],
    scope: OverwriteScope,
    new_entries: list[ManifestEntry],
    watermark: int | None,
) -> BuildChanges:
    """The changes of an overwrite, built on each attempt's base."""

    def build(latest: Snapshot | None) -> Changes:
        # The scope is re-read on every attempt: files added meanwhile in the scope are replaced too.
        # The deletes are live in `latest` by construction and the publish only lands on top of
        # `latest`, so re-checking them against `latest` would find nothing.
        live = table.live_files.at(latest)
        doomed = [replace(e, kind=FileKind.DELETE) for e in live.values() if scope(e.partition)]
        return Changes(
            CommitKind.OVERWRITE,
            doomed + new_entries,
            check_conflicts=False,
            watermark=watermark,
            index_changes=index_changes(messages, compaction=False),
            index_scope=scope,
        )

    return build


def _same_partition_value(stored: Any, given: Any) -> bool:
    if stored is None or given is None:
        return stored is given
    if isinstance(stored, str) or isinstance(given, str):
        return str(stored) == str(given)
    return bool(stored == given)
