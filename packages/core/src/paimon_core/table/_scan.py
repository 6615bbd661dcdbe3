"""Scan planning: snapshot → manifests → live files → pruned, bin-packed splits."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from paimon_core import options as opts
from paimon_core._gc import gc_paused
from paimon_core.binary_row import deserialize_row
from paimon_core.errors import (
    CorruptMetadataError,
    DataFileError,
    PaimonError,
    SchemaError,
    SnapshotExpiredError,
)
from paimon_core.manifest import (
    DataFileMeta,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    merge_entries,
    read_manifest_file,
    read_manifest_list,
    read_manifest_where,
)
from paimon_core.manifest._cache import manifest_cache
from paimon_core.predicate import Predicate
from paimon_core.snapshot import CommitKind, Snapshot
from paimon_core.stats import decode_stats
from paimon_core.storage import LocalBackend, unwrap
from paimon_core.table._compacted_changelog import is_compacted_changelog
from paimon_core.table._planner import BatchScanStart, created_since, resolve_batch_scan, scan_options
from paimon_core.types import DataField

if TYPE_CHECKING:
    from paimon_core.table._table import Table


@dataclass(frozen=True)
class DataSplit:
    """A unit of reading: files of one (partition, bucket) of one snapshot.

    ``streaming``: the files of a primary-key table hold changes (a snapshot's new files or changelog
    files), read in order without a merge, each record with its row kind.
    ``incremental_from``: the files are those the snapshots in ``(incremental_from, snapshot_id]`` added
    (``incremental-between``), merged as Java Paimon 0.9 merges them (see
    :mod:`paimon_core.table.mergetree._incremental`).
    ``before_files``: a diff split (``incremental-between-scan-mode = diff``, or two tags): the change from
    these files (the range's start, merged) to ``files`` (its end, merged); files both hold are in neither.
    ``diff_keeps_retractions``: a read that keeps retractions (``$audit_log``) keeps them in both merges of
    a diff split, so a delete still at level 0 is seen (Java 1.1+); Java 0.9, which reads two tags this way,
    drops them.
    """

    snapshot_id: int
    partition: bytes
    bucket: int
    bucket_path: str
    files: tuple[DataFileMeta, ...]
    streaming: bool = False
    incremental_from: int | None = None
    before_files: tuple[DataFileMeta, ...] | None = None
    diff_keeps_retractions: bool = False

    @property
    def first_snapshot_id(self) -> int:
        """The oldest snapshot whose files the split reads: the one to ask about when a file is missing."""
        return self.snapshot_id if self.incremental_from is None else self.incremental_from + 1

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    @property
    def file_size(self) -> int:
        return sum(f.file_size for f in self.files)


def manifest_metas(table: Table, snapshot: Snapshot, delta_only: bool = False) -> list[ManifestFileMeta]:
    metas = (
        []
        if delta_only
        else read_manifest_list(table.storage, table.manifest_path(snapshot.base_manifest_list))
    )
    metas += read_manifest_list(table.storage, table.manifest_path(snapshot.delta_manifest_list))
    return metas


def read_entries(
    table: Table, metas: Sequence[ManifestFileMeta], predicate: Predicate | None = None
) -> list[ManifestEntry]:
    """Read the entries of ``metas`` (in order), pruning manifests and entries by partition."""
    with gc_paused():  # many objects, all kept: collections on the way would only walk them again
        return _read_entries(table, metas, predicate)


def _read_entries(
    table: Table, metas: Sequence[ManifestFileMeta], predicate: Predicate | None
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


def _worth_threads(table: Table, wanted: Sequence[ManifestFileMeta], cached: bool) -> bool:
    """Whether reading manifests on threads pays: they overlap a remote store's round trips (cache hits
    check their file exists too), but decoding holds the GIL, so on a local disk starting the threads
    costs more than small manifests take to decode (a plan's first read, or one served by the cache)."""
    if not isinstance(unwrap(table.storage), LocalBackend):
        return True
    to_decode = [m for m in wanted if not (cached and manifest_cache.holds(table.manifest_path(m.file_name)))]
    return sum(m.file_size for m in to_decode) >= _LOCAL_THREADS_BYTES


def live_entries(
    table: Table, snapshot: Snapshot | None, predicate: Predicate | None = None
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


def explain_missing(table: Table, snapshot_id: int, error: PaimonError) -> PaimonError:
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


def is_changelog_file(table: Table, path: str) -> bool:
    """Whether ``path`` names a changelog file (``changelog-file.prefix``, or a compacted one)."""
    name = path.rsplit("/", 1)[-1]
    return is_compacted_changelog(name) or name.startswith(
        table.options.get_option(opts.CHANGELOG_FILE_PREFIX)
    )


def _replaced_since(table: Table, snapshot_id: int, path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    try:
        latest = table.snapshot_manager.latest()
        if latest is None or latest.id <= snapshot_id:
            return False
        return all(e.file.file_name != name for e in table.live_files.at(latest).values())
    except (PaimonError, OSError):
        return False


class _PartitionPruner:
    def __init__(self, table: Table, predicate: Predicate | None) -> None:
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


class Pruner:
    """Prunes the files of a read: partitions exactly, other columns by each file's value statistics.

    One pruner serves batch scans (:class:`TableScan`) and streaming reads alike.

    Raises:
        SchemaError: the predicate names columns the table does not have.
    """

    def __init__(self, table: Table, predicate: Predicate | None) -> None:
        self.table = table
        self.predicate = predicate
        if predicate is not None:
            unknown = sorted(predicate.columns - set(table.field_names))
            if unknown:
                raise SchemaError(f"filter refers to unknown columns: {', '.join(unknown)}")
        self._file_fields: dict[int, dict[int, DataField]] = {}

    @cached_property
    def _current_fields(self) -> dict[str, DataField]:
        return {f.name: f for f in self.table.schema.fields}

    def _fields_by_id(self, schema_id: int) -> dict[int, DataField]:
        cached = self._file_fields.get(schema_id)
        if cached is None:
            cached = {f.id: f for f in self.table.schema_manager.schema(schema_id).fields}
            self._file_fields[schema_id] = cached
        return cached

    def live(self, snapshot: Snapshot | None) -> list[ManifestEntry]:
        """The live entries of ``snapshot`` that may hold matching rows."""
        entries = live_entries(self.table, snapshot, self.predicate)
        if self.predicate is None:
            return entries
        return [e for e in entries if self.file_may_match(e)]

    def added(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The files ``snapshot`` added (its delta's ADD entries) that may hold matching rows."""
        return self._adds(snapshot, manifest_metas(self.table, snapshot, delta_only=True))

    def changelog(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The changelog files of ``snapshot`` that may hold matching rows."""
        if not snapshot.changelog_manifest_list:
            return []
        path = self.table.manifest_path(snapshot.changelog_manifest_list)
        try:
            metas = read_manifest_list(self.table.storage, path)
        except CorruptMetadataError as exc:
            raise explain_missing(self.table, snapshot.id, exc) from exc
        return self._adds(snapshot, metas)

    def _adds(self, snapshot: Snapshot, metas: list[ManifestFileMeta]) -> list[ManifestEntry]:
        try:
            entries = read_entries(self.table, metas, self.predicate)
        except CorruptMetadataError as exc:
            raise explain_missing(self.table, snapshot.id, exc) from exc
        return [e for e in entries if e.kind == FileKind.ADD and self.file_may_match(e)]

    @cached_property
    def _stats_prune(self) -> bool:
        """Whether file statistics may prune: always for append tables; for primary-key tables only when
        the filter names nothing but key and partition columns (a value decides only after the merge)."""
        if self.predicate is None:
            return False
        schema = self.table.schema
        if not schema.primary_keys:
            return True
        return self.predicate.columns <= set(schema.primary_keys) | set(schema.partition_keys)

    @cached_property
    def _value_columns(self) -> list[str]:
        """The filter's columns that are not partition columns: only their statistics are ever decoded."""
        if self.predicate is None:
            return []
        keys = set(self.table.partition_keys)
        return sorted(c for c in self.predicate.columns if c not in keys)

    def file_may_match(self, entry: ManifestEntry) -> bool:
        if self.predicate is None:
            return True
        values = self.table.partition_values(entry.partition)
        file = entry.file
        if not self._stats_prune or not self._value_columns:
            return self.predicate.may_match(values, {}, file.row_count)
        current_fields = self._current_fields
        file_fields_by_id = self._fields_by_id(file.schema_id)
        wanted: dict[str, str] = {}  # file schema name -> filter (current) name
        ranges: dict[str, tuple[Any, Any, int | None]] = {}
        for name in self._value_columns:
            file_field = file_fields_by_id.get(current_fields[name].id)
            if file_field is None:
                ranges[name] = (None, None, file.row_count)  # column added later: all null in this file
            elif file_field.type == current_fields[name].type:
                wanted[file_field.name] = name
        if wanted:
            fields = self._file_field_list(file.schema_id)
            decoded = decode_stats(file.value_stats, file.value_stats_cols, fields, None, wanted)
            ranges.update((wanted[n], stats) for n, stats in decoded.items())
        return self.predicate.may_match(values, ranges, file.row_count)

    def _file_field_list(self, schema_id: int) -> list[DataField]:
        return list(self._fields_by_id(schema_id).values())


class TableScan:
    """Plans a batch read: the snapshot it sees, then its pruned files and splits.

    The snapshot comes from the table's ``scan.*`` options (``scan.mode``, ``scan.snapshot-id``,
    ``scan.tag-name``, ``scan.timestamp[-millis]``, ``incremental-between[-timestamp]``,
    ``scan.file-creation-time-millis``), or from explicit time travel, which wins over them.

    Args:
        table: the table.
        snapshot_id: time travel to this snapshot.
        predicate: prunes partitions exactly and files by their value statistics.
        snapshot: read exactly this snapshot (a tag's, whose file may have expired), ignoring the options.
        tag: time travel to this tag's snapshot.
        timestamp: time travel to the snapshot current at this instant (datetime, epoch millis or
            ``'yyyy-MM-dd HH:mm:ss'``).

    Raises:
        ConfigError: conflicting or malformed scan options.
        SnapshotNotFoundError, TagNotFoundError: the snapshot or tag asked for does not exist.
    """

    def __init__(
        self,
        table: Table,
        snapshot_id: int | None = None,
        predicate: Predicate | None = None,
        *,
        snapshot: Snapshot | None = None,
        tag: str | None = None,
        timestamp: dt.datetime | int | str | None = None,
    ) -> None:
        self.table = table
        self.predicate = predicate
        self.pruner = Pruner(table, predicate)
        if snapshot is not None:
            self.start = BatchScanStart(snapshot)
        else:
            options = scan_options(table.options, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)
            self.start = resolve_batch_scan(table, options)
        self.snapshot = self.start.snapshot

    def files(self) -> list[ManifestEntry]:
        """The entries the read needs, after partition and statistics pruning."""
        start = self.start
        if start.snapshot is None:
            return []
        if start.incremental_from is None:
            entries = self.pruner.live(start.snapshot)
        elif start.diff:
            entries = self._diff_entries()[1]
        else:
            entries = self._appended_since(start.incremental_from, start.snapshot)
        since = start.file_creation_time_millis
        return entries if since is None else [e for e in entries if created_since(e, since)]

    def _appended_since(self, first: int, last: Snapshot) -> list[ManifestEntry]:
        """What the snapshots in (first, last] appended (OVERWRITE too with streaming-read-append-overwrite);
        for a primary-key table, their new files or their changelog (``incremental-between-scan-mode``)."""
        sm = self.table.snapshot_manager
        options = self.table.options
        overwrites = options.get_option(opts.STREAMING_READ_APPEND_OVERWRITE)
        changelog = self.table.schema.primary_keys and incremental_reads_changelog(options)
        entries: list[ManifestEntry] = []
        for snapshot_id in range(first + 1, last.id + 1):
            snapshot = last if snapshot_id == last.id else sm.snapshot(snapshot_id)
            if changelog:
                if snapshot.commit_kind != CommitKind.OVERWRITE:
                    entries += self._in_split_order(self.pruner.changelog(snapshot))
            elif snapshot.commit_kind == CommitKind.APPEND or (
                overwrites and snapshot.commit_kind == CommitKind.OVERWRITE
            ):
                entries += self._in_split_order(self.pruner.added(snapshot))
        return entries

    def _in_split_order(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        """A snapshot's files of each bucket of a primary-key table in the order Java's split generator
        gives them: the merge of an incremental read depends on it (``mergetree._incremental``)."""
        if not self.table.schema.primary_keys or len(entries) < 2:
            return entries
        from paimon_core.table.mergetree import KeyValueLayout  # mergetree imports this module
        from paimon_core.table.mergetree._incremental import java_split_files

        key_of = KeyValueLayout(self.table.schema).key_of
        by_bucket: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for entry in entries:
            by_bucket.setdefault((entry.partition, entry.bucket), []).append(entry)
        ordered: list[ManifestEntry] = []
        for group in by_bucket.values():
            by_file = {id(e.file): e for e in group}
            ordered += [by_file[id(f)] for f in java_split_files([e.file for e in group], key_of)]
        return ordered

    def _diff_entries(self) -> tuple[list[ManifestEntry], list[ManifestEntry]]:
        """The live files of the diff's start and of its end that the other does not hold."""
        before = self.pruner.live(self.start.diff_from)
        after = self.pruner.live(self.start.snapshot)
        before_names = {e.file.file_name for e in before}
        after_names = {e.file.file_name for e in after}
        return (
            [e for e in before if e.file.file_name not in after_names],
            [e for e in after if e.file.file_name not in before_names],
        )

    def plan(self) -> list[DataSplit]:
        if self.snapshot is None:
            return []
        with gc_paused():
            if self.start.diff and self.table.schema.primary_keys:
                return self._diff_splits()
            since = self.start.incremental_from
            return make_splits(self.table, self.snapshot.id, self.files(), incremental_from=since)

    def _diff_splits(self) -> list[DataSplit]:
        """A split per bucket whose files changed: its end files and its start files (Java's
        ``readIncrementalDiff``)."""
        assert self.snapshot is not None
        before, after = self._diff_entries()
        since = self.start.file_creation_time_millis
        sides: dict[tuple[bytes, int], tuple[list[DataFileMeta], list[DataFileMeta]]] = {}
        for index, entries in enumerate((before, after)):
            for entry in entries:
                if since is None or created_since(entry, since):
                    sides.setdefault((entry.partition, entry.bucket), ([], []))[index].append(entry.file)
        return [
            DataSplit(
                self.snapshot.id,
                partition,
                bucket,
                self.table.bucket_dir(partition, bucket),
                tuple(sorted(after_files, key=_file_order)),
                incremental_from=self.start.incremental_from,
                before_files=tuple(sorted(before_files, key=_file_order)),
                diff_keeps_retractions=not self.start.diff_between_tags,
            )
            for (partition, bucket), (before_files, after_files) in sides.items()
        ]

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The scan's rows (its splits read with its filter) as an Arrow C stream (the PyCapsule interface)."""
        reader = self.table.new_read(filter=self.predicate).to_reader(self.plan())
        capsule: object = reader.__arrow_c_stream__(requested_schema)
        return capsule


def incremental_reads_changelog(options: opts.Options) -> bool:
    """Whether an incremental read of a primary-key table reads changelog files rather than new files."""
    mode = options.get_option(opts.INCREMENTAL_BETWEEN_SCAN_MODE)
    if mode == "auto":
        return options.get_option(opts.CHANGELOG_PRODUCER) != "none"
    return mode == "changelog"


def _file_order(file: DataFileMeta) -> tuple[int, str]:
    return file.min_sequence_number, file.file_name


def make_splits(
    table: Table,
    snapshot_id: int,
    entries: Iterable[ManifestEntry],
    streaming: bool = False,
    incremental_from: int | None = None,
) -> list[DataSplit]:
    """Group files per (partition, bucket) and bin-pack them to ``source.split.target-size``; a bucket of
    a primary-key table is one split (its files merge with each other, or, ``streaming``, are read in
    order as changes; ``incremental_from``: they are a range's files, see :class:`DataSplit`)."""
    target = table.options.get_option(opts.SOURCE_SPLIT_TARGET_SIZE)
    open_cost = table.options.get_option(opts.SOURCE_SPLIT_OPEN_FILE_COST)
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for entry in entries:
        groups.setdefault((entry.partition, entry.bucket), []).append(entry.file)
    splits = []
    for (partition, bucket), files in groups.items():
        if incremental_from is None:  # an incremental read keeps the range's order (mergetree._incremental)
            files.sort(key=_file_order)
        bucket_path = table.bucket_dir(partition, bucket)
        if table.schema.primary_keys:
            splits.append(
                DataSplit(
                    snapshot_id, partition, bucket, bucket_path, tuple(files), streaming, incremental_from
                )
            )
            continue
        current: list[DataFileMeta] = []
        weight = 0
        for file in files:
            cost = max(file.file_size, open_cost)
            if current and weight + cost > target:
                splits.append(DataSplit(snapshot_id, partition, bucket, bucket_path, tuple(current)))
                current, weight = [], 0
            current.append(file)
            weight += cost
        if current:
            splits.append(DataSplit(snapshot_id, partition, bucket, bucket_path, tuple(current)))
    return splits
