"""What a snapshot lists: its manifests, their entries, its live files, and the live-file index.

Below both the read planner (:mod:`._scan`) and the commit: both list entries, neither imports the other.
The functions read through an :class:`EntrySource`, the part of a table store they need; the store
(:mod:`._store`) is one and builds this module's :class:`LiveFileIndex`, so this module cannot name it.

The live-file index: committers ask it whether the files a commit adds are live already (the same
messages committed twice) and whether the files an overwrite or compaction deletes are still live
(conflicts). Reading every manifest of the latest snapshot for each commit would cost a full scan plan;
instead the index reads one full state once per table handle and then only the delta manifests of the
snapshots that came after.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from paimon_core import options as opts
from paimon_core._gc import gc_paused
from paimon_core.binary_row import deserialize_row
from paimon_core.errors import CorruptMetadataError, DataFileError, PaimonError, SnapshotExpiredError
from paimon_core.manifest import (
    FileIdentifier,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    manifest_cache,
    merge_entries,
    read_manifest_file,
    read_manifest_list,
    read_manifest_where,
)
from paimon_core.options import Options
from paimon_core.predicate import Predicate
from paimon_core.snapshot import Snapshot, SnapshotManager
from paimon_core.storage import LocalBackend, StorageBackend, unwrap
from paimon_core.table._compacted_changelog import is_compacted_changelog
from paimon_core.types import DataType

__all__ = [
    "EntrySource",
    "LiveFileIndex",
    "explain_missing",
    "is_changelog_file",
    "live_entries",
    "manifest_metas",
    "read_entries",
]


class EntrySource(Protocol):
    """What listing a snapshot's entries reads of a table (a :class:`~paimon_core.table.TableStore` is one)."""

    @property
    def storage(self) -> StorageBackend: ...

    @property
    def options(self) -> Options: ...

    @property
    def snapshot_manager(self) -> SnapshotManager: ...

    @property
    def partition_keys(self) -> list[str]: ...

    @property
    def partition_types(self) -> list[DataType]: ...

    @property
    def live_files(self) -> LiveFileIndex: ...

    def manifest_path(self, name: str) -> str: ...

    def partition_values(self, partition: bytes) -> dict[str, Any]: ...


def manifest_metas(
    table: EntrySource, snapshot: Snapshot, delta_only: bool = False
) -> list[ManifestFileMeta]:
    metas = (
        []
        if delta_only
        else read_manifest_list(table.storage, table.manifest_path(snapshot.base_manifest_list))
    )
    metas += read_manifest_list(table.storage, table.manifest_path(snapshot.delta_manifest_list))
    return metas


def read_entries(
    table: EntrySource, metas: Sequence[ManifestFileMeta], predicate: Predicate | None = None
) -> list[ManifestEntry]:
    """Read the entries of ``metas`` (in order), pruning manifests and entries by partition."""
    with gc_paused():  # many objects, all kept: collections on the way would only walk them again
        return _read_entries(table, metas, predicate)


def _read_entries(
    table: EntrySource, metas: Sequence[ManifestFileMeta], predicate: Predicate | None
) -> list[ManifestEntry]:
    pruner = _PartitionPruner(table, predicate)
    wanted = [m for m in metas if pruner.manifest_may_match(m)]

    options = table.options
    cached = options.get_option(opts.CACHE_ENABLED)
    threshold = options.get_option(opts.CACHE_MANIFEST_SMALL_FILE_THRESHOLD)
    budget = options.get_option(opts.CACHE_MANIFEST_SMALL_FILE_MEMORY)

    def read_one(meta: ManifestFileMeta) -> list[ManifestEntry]:
        path = table.manifest_path(meta.file_name)
        cacheable = cached and meta.file_size <= threshold
        if pruner.predicate is not None:
            # Entries of other partitions are skipped before their _FILE is decoded; a cached decode is used
            # when there is one, but a filtered read never fills the cache.
            hit = manifest_cache.lookup(path, lambda: table.storage.exists(path)) if cacheable else None
            if hit is None:
                return read_manifest_where(table.storage, path, pruner.partition_may_match)
            return [e for e in hit if pruner.partition_may_match(e.partition)]
        if cacheable:
            return manifest_cache.get(
                path,
                meta.file_size,
                budget,
                lambda: read_manifest_file(table.storage, path),
                lambda: table.storage.exists(path),
            )
        return read_manifest_file(table.storage, path)

    if len(wanted) > 4 and _worth_threads(table, wanted, cached):
        with ThreadPoolExecutor(max_workers=8) as pool:
            chunks = list(pool.map(read_one, wanted))
    else:
        chunks = [read_one(m) for m in wanted]
    return [e for chunk in chunks for e in chunk]


_LOCAL_THREADS_BYTES = 1 << 20


def _worth_threads(table: EntrySource, wanted: Sequence[ManifestFileMeta], cached: bool) -> bool:
    """Whether reading manifests on threads pays: they overlap a remote store's round trips (cache hits
    check their file exists too), but decoding holds the GIL, so on a local disk starting the threads
    costs more than small manifests take to decode (a plan's first read, or one served by the cache)."""
    if not isinstance(unwrap(table.storage), LocalBackend):
        return True
    to_decode = [m for m in wanted if not (cached and manifest_cache.holds(table.manifest_path(m.file_name)))]
    return sum(m.file_size for m in to_decode) >= _LOCAL_THREADS_BYTES


def live_entries(
    table: EntrySource, snapshot: Snapshot | None, predicate: Predicate | None = None
) -> list[ManifestEntry]:
    """The live ADD entries of ``snapshot`` (all of base + delta merged), pruned by partition.

    Raises:
        SnapshotExpiredError: a manifest is missing because the snapshot expired (or was rolled back)
            while it was read.
        CorruptMetadataError: a manifest of a live snapshot is missing or unreadable.
    """
    if snapshot is None:
        return []
    try:
        with gc_paused():
            merged = merge_entries(read_entries(table, manifest_metas(table, snapshot), predicate))
    except CorruptMetadataError as exc:
        raise explain_missing(table, snapshot.id, exc) from exc
    return [e for e in merged if e.kind == FileKind.ADD]


def explain_missing(table: EntrySource, snapshot_id: int, error: PaimonError) -> PaimonError:
    """A :class:`SnapshotExpiredError` when the snapshot whose file was missing is gone, or the missing data
    file is one a newer snapshot replaced; else ``error``.

    A changelog file is never live in a later snapshot, so only its snapshot's expiry explains it: one
    missing while its snapshot is live stays ``error`` (a read or stream must not skip its changes).
    ``snapshot_id``: the oldest snapshot whose files the failed read needed.
    """
    sm = table.snapshot_manager
    retention = opts.retention_summary(table.options)
    expired = sm.expired_error(snapshot_id, detail=str(error), retention=retention)
    # Expiration deletes data files before snapshot files, and EARLIEST, its only earlier sign, may have
    # been set back for a moment by an older run: a file the latest snapshot no longer lists went with the
    # expiration of the snapshot being read.
    if (
        expired is None
        and isinstance(error, DataFileError)
        and error.path is not None
        and not is_changelog_file(table, error.path)
        and _replaced_since(table, snapshot_id, error.path)
    ):
        expired = SnapshotExpiredError(snapshot_id, sm.earliest_id(), retention, str(error))
    return expired if expired is not None else error


def is_changelog_file(table: EntrySource, path: str) -> bool:
    """Whether ``path`` names a changelog file (``changelog-file.prefix``, or a compacted one)."""
    name = path.rsplit("/", 1)[-1]
    return is_compacted_changelog(name) or name.startswith(
        table.options.get_option(opts.CHANGELOG_FILE_PREFIX)
    )


def _replaced_since(table: EntrySource, snapshot_id: int, path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    try:
        latest = table.snapshot_manager.latest()
        if latest is None or latest.id <= snapshot_id:
            return False
        return all(e.file.file_name != name for e in table.live_files.at(latest).values())
    except (PaimonError, OSError):
        return False


class _PartitionPruner:
    def __init__(self, table: EntrySource, predicate: Predicate | None) -> None:
        self.table = table
        keys = set(table.partition_keys)
        self.predicate = predicate if predicate is not None and predicate.columns & keys else None
        self._cache: dict[bytes, bool] = {}

    def manifest_may_match(self, meta: ManifestFileMeta) -> bool:
        if self.predicate is None or meta.partition_stats is None:
            return True
        stats = meta.partition_stats
        types = self.table.partition_types
        try:
            mins = deserialize_row(stats.min_values, types)
            maxs = deserialize_row(stats.max_values, types)
        except Exception:  # stats from an unexpected writer: never prune on what we cannot read
            return True
        nulls = stats.null_counts or [None] * len(types)
        ranges = {
            key: (mins[i], maxs[i], nulls[i] if i < len(nulls) else None)
            for i, key in enumerate(self.table.partition_keys)
        }
        total = meta.num_added_files + meta.num_deleted_files
        return self.predicate.may_match({}, ranges, max(total, 1))

    def partition_may_match(self, partition: bytes) -> bool:
        if self.predicate is None:
            return True
        cached = self._cache.get(partition)
        if cached is None:
            values = self.table.partition_values(partition)
            cached = self.predicate.evaluate(values) is not False
            self._cache[partition] = cached
        return cached


# Beyond this many new snapshots, one full read is cheaper than their deltas.
_MAX_DELTAS = 64
# Changes on top of a full state are kept apart until they reach this share of it (then folded in).
_FOLD_SHARE = 8


class _LiveView(Mapping[FileIdentifier, ManifestEntry]):
    """A full state plus the changes of later snapshots: advancing by a few commits copies the changes, not
    the whole table (the full state is shared by the views of successive snapshots and never changed)."""

    def __init__(
        self,
        base: dict[FileIdentifier, ManifestEntry],
        added: dict[FileIdentifier, ManifestEntry] | None = None,
        removed: frozenset[FileIdentifier] = frozenset(),
    ) -> None:
        self._base = base
        self._added = added or {}
        self._removed = removed  # keys of the base that are gone (or replaced by an added entry)

    def __getitem__(self, key: FileIdentifier) -> ManifestEntry:
        hit = self._added.get(key)
        if hit is not None:
            return hit
        if key in self._removed:
            raise KeyError(key)
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._added or (key not in self._removed and key in self._base)

    def __iter__(self) -> Iterator[FileIdentifier]:
        removed, added = self._removed, self._added
        yield from (k for k in self._base if k not in removed and k not in added)
        yield from added

    def __len__(self) -> int:
        return len(self._base) - len(self._removed) + len(self._added)

    def advanced(self, entries: list[ManifestEntry]) -> _LiveView:
        """The view after applying ``entries`` (a snapshot's delta), in order."""
        added, removed = dict(self._added), set(self._removed)
        for entry in entries:
            key = entry.identifier()
            if entry.kind == FileKind.ADD:
                added[key] = entry
                if key in self._base:
                    removed.add(key)
            else:
                added.pop(key, None)
                if key in self._base:
                    removed.add(key)
        if (len(added) + len(removed)) * _FOLD_SHARE > len(self._base):
            return _LiveView(dict(_LiveView(self._base, added, frozenset(removed)).items()))
        return _LiveView(self._base, added, frozenset(removed))


class LiveFileIndex:
    """Live entries by file identity at one snapshot; thread-safe, one per table handle."""

    def __init__(self, table: EntrySource) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._files = _LiveView({})

    def at(self, snapshot: Snapshot | None) -> Mapping[FileIdentifier, ManifestEntry]:
        """The live entries of ``snapshot`` (read-only; a new mapping whenever the snapshot changes).

        Raises:
            CorruptMetadataError: a manifest of the snapshot cannot be read (the table is unreadable), or
                SnapshotExpiredError when it vanished under us.
        """
        if snapshot is None:
            return {}
        with self._lock:
            cached = self._snapshot
            if cached is not None and cached == snapshot:
                return self._files
            files = None
            if cached is not None and cached.id < snapshot.id <= cached.id + _MAX_DELTAS:
                files = self._advance(cached, snapshot)
            if files is None:
                with gc_paused():
                    files = _LiveView({e.identifier(): e for e in live_entries(self._table, snapshot)})
            self._snapshot, self._files = snapshot, files
            return files

    def _advance(self, cached: Snapshot, target: Snapshot) -> _LiveView | None:
        """Apply the deltas of ``(cached, target]``; None when the chain between them cannot be followed
        (a snapshot expired, or a rollback replaced the cached one): then the caller reads in full."""
        sm = self._table.snapshot_manager
        if sm.try_snapshot(cached.id) != cached:
            return None
        chain = [sm.try_snapshot(i) for i in range(cached.id + 1, target.id)]
        if any(s is None for s in chain):
            return None
        files = self._files
        try:
            for snapshot in [*(s for s in chain if s is not None), target]:
                files = files.advanced(
                    read_entries(self._table, manifest_metas(self._table, snapshot, delta_only=True))
                )
        except CorruptMetadataError:
            return None  # an intermediate delta expired meanwhile: read the target in full
        return files
