"""Snapshot expiration (docs/format.md#snapshot-expiration), as Java's ``ExpireSnapshotsImpl`` and ``SnapshotDeletion`` do it.

The range ``[E, end)`` keeps at least ``snapshot.num-retained.min`` snapshots and at most ``.max``; a
snapshot goes only when its successor is older than ``snapshot.time-retained`` (or ``older_than``); never one
a consumer has still to read; at most ``snapshot.expire.limit`` per run.

Only the deltas of ``[E, end]`` (and of snapshot files left below ``E``) are read to find data files: a
file DELETEd there is live in no snapshot from ``end`` on (names are unique and a file never comes back), so
it goes unless the nearest tag before the deleting snapshot still uses it (a file's life is an interval, so
the nearest tag is the only one to ask).
Manifests work the same way: one used by an expired snapshot and by any later snapshot or tag is also used
by ``end`` or by a tag of the range, which are the only ones read to keep them.

Order: first decide what goes (reading the deltas and lists while they are all there), then move
``EARLIEST`` forward to ``end``, then delete data files, then the snapshot files in ascending order, then
manifests and manifest lists. Java writes ``EARLIEST`` last and deletes snapshot files after their files.
Here no snapshot is deleted before ``EARLIEST`` has moved above it, nor while an older snapshot file
remains (each run deletes every snapshot file below its ``end``, oldest first): a reader or writer that
meets a missing file of an expiring snapshot is told the snapshot expired (not that the table is corrupt),
a concurrent run starts from ``end`` and never re-reads this range, and a committer can detect a publish
into a freed id (docs/commit-protocol.md). A data file goes before the snapshot that deleted it: a
committer that finds no snapshot deleting its files, and then finds the files still there, knows they were
never committed (docs/commit-protocol.md, exactly once). A run that dies midway leaves only files that no
retained snapshot or tag reaches; ``remove_orphan_files`` removes them. Snapshots ``>= end``, such as a concurrent commit's, are
never touched, and no file that ``end`` uses is deleted.

Index manifests and the index files they list (dynamic-bucket hash indexes) go like manifests: when no
kept snapshot or tag of the range uses them.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.errors import ConfigError, CorruptMetadataError
from paimon_core.maintenance._branches import metadata_paths, other_branches_reach
from paimon_core.maintenance._reach import entry_paths
from paimon_core.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    read_index_manifest,
    read_manifest_file,
    read_manifest_list,
)
from paimon_core.options import to_millis
from paimon_core.progress import Progress, ProgressCounter, resolve_progress
from paimon_core.redaction import get_logger
from paimon_core.snapshot import EARLIEST_HINT, Snapshot
from paimon_core.storage import Capability, join_path, parent_path
from paimon_core.table import live_entries, real_changelog_path

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["expire_snapshots"]

logger = get_logger(__name__)

_IO_THREADS = 8
_FileKey = tuple[bytes, int, str]  # (partition, bucket, file name): how Java matches a file against a tag


def expire_snapshots(
    table: TableStore,
    *,
    retain_max: int | None = None,
    retain_min: int | None = None,
    older_than: dt.datetime | int | str | None = None,
    max_deletes: int | None = None,
    now_millis: int | None = None,
    progress: bool | Progress | None = False,
) -> int:
    """Paimon's ``expire_snapshots``; arguments left out come from the table options.

    Args:
        table: the table.
        retain_max: keep at most this many snapshots (``snapshot.num-retained.max``).
        retain_min: keep at least this many (``snapshot.num-retained.min``).
        older_than: expire snapshots whose successor is older than this (default: now minus
            ``snapshot.time-retained``): a datetime (naive = local time), epoch millis or
            ``'yyyy-MM-dd HH:mm:ss'``.
        max_deletes: expire at most this many snapshots in this run (``snapshot.expire.limit``).
        now_millis: the current time in epoch millis (default: the clock).
        progress: show the files deleted so far (None: when stderr is a terminal), or a :class:`Progress`.

    Returns:
        How many snapshots expired.

    Raises:
        ConfigError: bad retention arguments.
        CorruptMetadataError: a snapshot or tag file cannot be parsed (nothing was deleted).
    """
    options = table.options
    retain_min = retain_min if retain_min is not None else options.get_option(opts.SNAPSHOT_NUM_RETAINED_MIN)
    retain_max = retain_max if retain_max is not None else options.get_option(opts.SNAPSHOT_NUM_RETAINED_MAX)
    limit = max_deletes if max_deletes is not None else options.get_option(opts.SNAPSHOT_EXPIRE_LIMIT)
    if min(retain_min, retain_max, limit) < 1 or retain_min > retain_max:
        raise ConfigError(
            f"need 1 <= retain_min ({retain_min}) <= retain_max ({retain_max}) and max_deletes ({limit}) >= 1"
        )
    if older_than is not None:
        threshold = to_millis(older_than)
    else:
        now = now_millis if now_millis is not None else int(time.time() * 1000)
        threshold = now - options.get_option(opts.SNAPSHOT_TIME_RETAINED)
    sm = table.snapshot_manager
    latest, earliest = sm.latest_id(), sm.earliest_id()
    if latest is None or earliest is None:
        return 0
    if sm.earliest_hint_is_stale():
        # Above every snapshot, EARLIEST would never move forward again: set it to the real earliest.
        sm.write_earliest_hint(earliest)
    end = _expire_end(table, latest, earliest, retain_min, retain_max, limit, threshold)
    if end <= earliest:
        if not table.storage.exists(sm.hint_path(EARLIEST_HINT)):
            sm.advance_earliest_hint(earliest)
        if any(i < earliest for i in sm.list_ids()):
            # A run that died after moving EARLIEST left snapshot files (and their files) below it: finish.
            _expire_until(table, earliest, earliest, resolve_progress(progress))
        return 0
    return _expire_until(table, earliest, end, resolve_progress(progress))


def might_expire(table: TableStore, latest_id: int, now_millis: int | None = None) -> bool:
    """Whether the table options let anything expire, judged without reading a manifest (writers ask
    this after each commit; most commits read one hint and stop)."""
    options = table.options
    sm = table.snapshot_manager
    earliest = sm.earliest_id()
    if earliest is None:
        return False
    count = latest_id - earliest + 1
    if count <= options.get_option(opts.SNAPSHOT_NUM_RETAINED_MIN):
        return False
    if count > options.get_option(opts.SNAPSHOT_NUM_RETAINED_MAX):
        return True
    successor = sm.try_snapshot(earliest + 1)
    now = now_millis if now_millis is not None else int(time.time() * 1000)
    return successor is not None and successor.time_millis < now - options.get_option(
        opts.SNAPSHOT_TIME_RETAINED
    )


def _expire_end(
    table: TableStore,
    latest: int,
    earliest: int,
    retain_min: int,
    retain_max: int,
    limit: int,
    threshold: int,
) -> int:
    """The first snapshot id to keep (docs/format.md#snapshot-expiration)."""
    low = max(latest - retain_max + 1, earliest)
    max_exclusive = latest - retain_min + 1
    consumer_min = table.consumer_manager.min_next_snapshot()
    if consumer_min is not None:
        max_exclusive = min(max_exclusive, consumer_min)
    max_exclusive = min(max_exclusive, earliest + limit)
    sm = table.snapshot_manager
    for snapshot_id in range(low, max_exclusive):
        successor = sm.try_snapshot(snapshot_id + 1)  # None: removed meanwhile by another process
        if successor is not None and threshold <= successor.time_millis:
            return snapshot_id
    return max_exclusive


def _expire_until(table: TableStore, begin: int, end: int, display: Progress) -> int:
    """Expire the snapshots ``[begin, end)``; returns how many there were."""
    sm = table.snapshot_manager
    snapshots = [s for s in (sm.try_snapshot(i) for i in range(begin, end + 1)) if s is not None]
    if not snapshots or snapshots[-1].id != end:
        # `end` vanished under us (a rollback or another expiration): what it keeps is unknown.
        logger.info("snapshot %s of %s is gone; expiration skipped", end, table.identifier)
        return 0
    kept, expired = snapshots[-1], snapshots[:-1]
    tags = table.tag_manager.tagged_snapshots()

    # What goes is decided while every file is still there: data files deleted by the deltas of
    # [begin, end] and changelog files of expired snapshots, never one that `end` still uses (a delta in
    # the range could belong to a stale publish that lost to expiration); metadata that neither `end` nor a
    # tag of the range uses. The delta of `begin` and those of snapshot files left below it (by a run that
    # died, or one still deleting data files) are read again: this run deletes those snapshot files, and a
    # snapshot file goes only after the data files its delta deleted.
    doomed = _data_files_to_delete(table, snapshots, tags)
    doomed |= _left_over_data_files(table, begin, tags)
    for snapshot in expired:
        if snapshot.changelog_manifest_list:
            doomed.update(_changelog_files(table, snapshot))
    doomed -= _paths_used_by(table, kept)
    metadata = _unused_metadata_paths(table, expired, [*_tags_sharing_metadata(tags, begin, end), kept])
    doomed, metadata = _keep_for_other_branches(table, doomed, metadata)

    # 1. EARLIEST: readers that still hold an expired snapshot get SnapshotExpiredError from here on
    sm.advance_earliest_hint(end)
    below = sorted({s.id for s in expired} | {i for i in sm.list_ids() if i < end})
    total = len(below) + len(doomed) + sum(len(paths) for paths, _ in metadata)
    counter = display.counter("expire-snapshots", total, "files")
    # 2. the files only expired snapshots used, while the snapshots that deleted them are still there: a
    # replayed commit whose files a compaction replaced sees either that compaction or its files gone
    _delete_data_files(table, doomed, counter)
    # 3. every snapshot file below `end`, oldest first: no snapshot is deleted before EARLIEST has moved
    # above it, nor while an older one remains, which is what lets a committer tell a publish into a freed
    # id (docs/commit-protocol.md, E1)
    for snapshot_id in below:  # also what a concurrent run has not deleted yet, and stale publishes
        with contextlib.suppress(FileNotFoundError):
            table.storage.delete(sm.snapshot_path(snapshot_id))
        counter.advance()
    for paths, what in metadata:  # manifests, then lists, then statistics files
        _delete_all(table, paths, what, counter)
    logger.info("expired snapshots [%s, %s) of %s", begin, end, table.identifier)
    return len(expired)


def _keep_for_other_branches(
    table: TableStore, data: set[str], metadata: list[tuple[set[str], str]]
) -> tuple[set[str], list[tuple[set[str], str]]]:
    """``data`` and ``metadata`` without what another branch of the table (or main) still uses."""
    other = other_branches_reach(table)
    if other is None:
        return data, metadata
    used = metadata_paths(table, other)
    return data - other.data, [(paths - used, what) for paths, what in metadata]


def _paths_used_by(table: TableStore, snapshot: Snapshot) -> set[str]:
    """Every data file path the snapshot uses (through the handle's live-file index: usually incremental)."""
    return {path for entry in table.live_files.at(snapshot).values() for path in entry_paths(table, entry)}


def clean_after_last_tag(table: TableStore, snapshot: Snapshot, other_tags: list[Snapshot]) -> None:
    """Delete what only an expired ``snapshot`` used, now that its last tag is gone (Java's ``deleteTag``).

    Data files go unless the nearest other tag before it, or the nearer of the next tag and the earliest
    snapshot, uses them (a file's life is an interval of snapshots: those two neighbours are the only ones
    to ask); then the snapshot's manifests and lists that neither neighbour uses. Whatever cannot be read
    keeps the files it might protect.
    """
    earliest = table.snapshot_manager.earliest()
    if earliest is None:
        logger.warning(
            "%s lists no snapshot; keeping the files of deleted tag's snapshot %s", table, snapshot.id
        )
        return
    before = [t for t in other_tags if t.id < snapshot.id]
    after = [t for t in other_tags if t.id > snapshot.id]
    right = after[0] if after and after[0].id < earliest.id else earliest
    neighbours = [*before[-1:], right]
    try:
        entries = live_entries(table, snapshot)
    except CorruptMetadataError as exc:
        logger.warning("cannot read the files of snapshot %s; keeping them: %s", snapshot.id, exc)
        entries = None
    used = [_tag_files(table, n) for n in neighbours]
    if entries is not None and all(u is not None for u in used):
        kept = frozenset().union(*(u for u in used if u is not None))
        doomed = {
            path
            for entry in entries
            if (entry.partition, entry.bucket, entry.file.file_name) not in kept
            for path in entry_paths(table, entry)
        }
    else:
        doomed = set()
    doomed, metadata = _keep_for_other_branches(
        table, doomed, _unused_metadata_paths(table, [snapshot], neighbours)
    )
    _delete_data_files(table, doomed)
    for paths, what in metadata:
        _delete_all(table, paths, what)


def _delete_data_files(table: TableStore, paths: set[str], counter: ProgressCounter | None = None) -> None:
    _delete_all(table, paths, "data file", counter)
    if table.options.get_option(opts.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES):
        _remove_empty_dirs(table, paths)


def _unused_metadata_paths(
    table: TableStore, gone: list[Snapshot], kept: list[Snapshot]
) -> list[tuple[set[str], str]]:
    """(paths, what) of the metadata of ``gone`` that ``kept`` does not use, in deletion order: manifests,
    manifest lists, statistics files, index files, index manifests. Empty when a list of ``kept`` cannot be read."""
    keep = _metadata_in_use(table, kept)
    if keep is None:
        return []
    manifests, lists, statistics = _unused_metadata(table, gone, keep)
    index_manifests = {s.index_manifest for s in gone if s.index_manifest and s.index_manifest not in keep}
    index_files = {
        name
        for m in index_manifests
        for name in _index_files_quietly(table, m)
        if _INDEX_FILE + name not in keep
    }
    return [
        ({table.manifest_path(m) for m in manifests}, "manifest"),
        ({table.manifest_path(m) for m in lists}, "manifest list"),
        ({join_path(table.path, "statistics", s) for s in statistics}, "statistics file"),
        ({table.index_path(n) for n in index_files}, "index file"),
        ({table.manifest_path(m) for m in index_manifests}, "index manifest"),
    ]


def _data_files_to_delete(table: TableStore, snapshots: list[Snapshot], tags: list[Snapshot]) -> set[str]:
    """Paths of the files that the deltas of ``snapshots`` delete (and do not re-add), minus those the
    nearest earlier tag still uses; a snapshot whose delta or tag cannot be read deletes nothing."""
    tag_ids = [t.id for t in tags]
    nearest_tag = {s.id: _nearest_before(tags, tag_ids, s.id) for s in snapshots}
    needed = {t.id: t for t in nearest_tag.values() if t is not None}
    with ThreadPoolExecutor(max_workers=_IO_THREADS) as pool:
        tag_files = dict(zip(needed, pool.map(lambda t: _tag_files(table, t), needed.values()), strict=True))
        deltas = list(pool.map(lambda s: _deleted_in_delta(table, s), snapshots))
    doomed: set[str] = set()
    for snapshot, deleted in zip(snapshots, deltas, strict=True):
        tag = nearest_tag[snapshot.id]
        used_by_tag = tag_files[tag.id] if tag is not None else frozenset()
        if deleted is None or used_by_tag is None:
            continue
        for entry in deleted:
            if (entry.partition, entry.bucket, entry.file.file_name) not in used_by_tag:
                doomed.update(entry_paths(table, entry))
    return doomed


def _left_over_data_files(table: TableStore, begin: int, tags: list[Snapshot]) -> set[str]:
    """Data files deleted by the deltas of snapshot files left below ``begin``, minus what any tag uses (a
    left-over file may be a stale publish, placed anywhere among the tags)."""
    sm = table.snapshot_manager
    left = [s for s in (sm.try_snapshot(i) for i in sm.list_ids() if i < begin) if s is not None]
    if not left:
        return set()
    every_tag: set[_FileKey] = set()
    for tag in tags:
        files = _tag_files(table, tag)
        if files is None:
            return set()  # orphan removal deletes them later
        every_tag |= files
    doomed: set[str] = set()
    for snapshot in left:
        for entry in _deleted_in_delta(table, snapshot) or ():
            if (entry.partition, entry.bucket, entry.file.file_name) not in every_tag:
                doomed.update(entry_paths(table, entry))
    return doomed


def _nearest_before(tags: list[Snapshot], tag_ids: list[int], snapshot_id: int) -> Snapshot | None:
    # Strictly before: a tag on the deleting snapshot itself no longer has the file.
    index = bisect.bisect_left(tag_ids, snapshot_id) - 1
    return tags[index] if index >= 0 else None


def _tag_files(table: TableStore, tag: Snapshot) -> frozenset[_FileKey] | None:
    """The live files of a tagged snapshot, or None if its manifests cannot be read."""
    try:
        return frozenset((e.partition, e.bucket, e.file.file_name) for e in live_entries(table, tag))
    except CorruptMetadataError as exc:
        logger.warning(
            "cannot read the files of tagged snapshot %s; keeping what it may use: %s", tag.id, exc
        )
        return None


def _deleted_in_delta(table: TableStore, snapshot: Snapshot) -> list[ManifestEntry] | None:
    """The DELETE entries of a snapshot's delta not re-added there (a level upgrade), or None if unreadable."""
    try:
        entries = [
            e for m in _read_list(table, snapshot.delta_manifest_list) for e in _read_manifest(table, m)
        ]
    except CorruptMetadataError as exc:
        # After an interrupted run the delta may be gone; its files went before it did.
        logger.warning(
            "cannot read the delta of snapshot %s; deleting none of its files: %s", snapshot.id, exc
        )
        return None
    deleted: dict[_FileKey, ManifestEntry] = {}
    for entry in entries:
        key = (entry.partition, entry.bucket, entry.file.file_name)
        if entry.kind == FileKind.ADD:
            deleted.pop(key, None)
        else:
            deleted[key] = entry
    return list(deleted.values())


def _changelog_files(table: TableStore, snapshot: Snapshot) -> set[str]:
    """Files the snapshot's changelog manifests add; unreadable manifests are skipped (Java's rule)."""
    paths: set[str] = set()
    for meta in _read_list_quietly(table, snapshot.changelog_manifest_list):
        try:
            entries = _read_manifest(table, meta)
        except CorruptMetadataError as exc:
            logger.info("skipping unreadable changelog manifest %s: %s", meta.file_name, exc)
            continue
        # a slice of a compacted changelog file stands for its physical file, listed in the same snapshot
        paths.update(real_changelog_path(_data_path(table, e)) for e in entries if e.kind == FileKind.ADD)
    return paths


def _tags_sharing_metadata(tags: list[Snapshot], begin: int, end: int) -> list[Snapshot]:
    """Tags whose manifests an expired snapshot may share: the last tag at or before ``begin`` and every
    tag in between up to ``end`` (Java's ``findSkippingTags``)."""
    before_end = [t for t in tags if t.id < end]
    at_or_before_begin = [i for i, t in enumerate(before_end) if t.id <= begin]
    first = at_or_before_begin[-1] if at_or_before_begin else 0
    return before_end[first:]


def _metadata_in_use(table: TableStore, snapshots: list[Snapshot]) -> set[str] | None:
    """Manifest lists, manifests, index manifests and statistics files the snapshots use; None when some
    list cannot be read (then no metadata is deleted this run)."""
    used: set[str] = set()
    seen_index: set[str] = set()
    try:
        for snapshot in snapshots:
            for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
                used.add(name)
                used.update(m.file_name for m in _read_list(table, name))
            used.update(n for n in (snapshot.index_manifest, snapshot.statistics) if n)
            if snapshot.index_manifest and snapshot.index_manifest not in seen_index:
                seen_index.add(snapshot.index_manifest)
                used.update(_INDEX_FILE + e.file.file_name for e in table.index_entries(snapshot))
    except CorruptMetadataError as exc:
        logger.warning("cannot tell which manifests are still used; deleting none: %s", exc)
        return None
    return used


def _unused_metadata(
    table: TableStore, expired: list[Snapshot], keep: set[str]
) -> tuple[set[str], set[str], set[str]]:
    """(manifests, manifest lists, statistics files) of the expired snapshots that nothing kept uses."""
    manifests: set[str] = set()
    lists: set[str] = set()
    statistics: set[str] = set()
    for snapshot in expired:
        for name in (
            snapshot.base_manifest_list,
            snapshot.delta_manifest_list,
            snapshot.changelog_manifest_list,
        ):
            if not name or name in keep:
                continue
            lists.add(name)
            manifests.update(m.file_name for m in _read_list_quietly(table, name) if m.file_name not in keep)
        if snapshot.statistics and snapshot.statistics not in keep:
            statistics.add(snapshot.statistics)
    return manifests, lists, statistics


_INDEX_FILE = "index/"  # marks index file names in a used set that also holds manifest names


def _index_files_quietly(table: TableStore, index_manifest: str) -> list[str]:
    """The index files an index manifest lists, or none if it is gone or unreadable."""
    try:
        entries = read_index_manifest(table.storage, table.manifest_path(index_manifest))
    except CorruptMetadataError as exc:
        logger.info("skipping unreadable index manifest %s: %s", index_manifest, exc)
        return []
    return [e.file.file_name for e in entries]


def _read_list(table: TableStore, name: str) -> list[ManifestFileMeta]:
    return read_manifest_list(table.storage, table.manifest_path(name))


def _read_list_quietly(table: TableStore, name: str | None) -> list[ManifestFileMeta]:
    """A manifest list, or nothing if it is gone or unreadable (an earlier run may have deleted it)."""
    if not name:
        return []
    try:
        return _read_list(table, name)
    except CorruptMetadataError as exc:
        logger.info("skipping unreadable manifest list %s: %s", name, exc)
        return []


def _read_manifest(table: TableStore, meta: ManifestFileMeta) -> list[ManifestEntry]:
    return read_manifest_file(table.storage, table.manifest_path(meta.file_name))


def _data_path(table: TableStore, entry: ManifestEntry) -> str:
    file = entry.file
    return file.external_path or join_path(table.bucket_dir(entry.partition, entry.bucket), file.file_name)


def _delete_all(
    table: TableStore, paths: set[str], what: str, counter: ProgressCounter | None = None
) -> None:
    """Delete in parallel; a file already gone is fine, another failure is logged and leaves an orphan."""
    storage = table.storage

    def delete(path: str) -> None:
        try:
            storage.delete(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            logger.warning("could not delete %s %s: %s", what, path, exc)
        if counter is not None:
            counter.advance()

    _run(delete, sorted(paths))


def _run(action: Callable[[str], None], items: list[str]) -> None:
    if len(items) <= 1:
        for item in items:
            action(item)
        return
    with ThreadPoolExecutor(max_workers=min(_IO_THREADS, len(items))) as pool:
        list(pool.map(action, items))


def _remove_empty_dirs(table: TableStore, deleted: set[str]) -> None:
    """Remove directories the deletions left empty, bucket first, then partitions up to the table root.

    Object stores have no empty directories to remove. Elsewhere the emptiness test and ``delete_dir`` are
    two calls (the storage API has no non-recursive delete), which is why this stays opt-in, as in Java.
    """
    if Capability.DIRECTORIES not in table.storage.capabilities:
        return
    root = table.path.rstrip("/")
    for directory in sorted({parent_path(p) for p in deleted}, key=len, reverse=True):
        while directory.startswith(root + "/"):
            try:
                if table.storage.list_dir(directory):
                    break
                table.storage.delete_dir(directory)
            except OSError:
                break
            directory = parent_path(directory)
