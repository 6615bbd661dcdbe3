"""Scan planning: snapshot → manifests → live files → pruned, bin-packed splits."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from paimon_core import options as opts
from paimon_core._gc import gc_paused
from paimon_core.errors import CorruptMetadataError, PaimonError, SchemaError, UnsupportedTableFeatureError
from paimon_core.fileindex import INDEX_FILE_SUFFIX, FileIndexes, file_index_specs
from paimon_core.manifest import DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta, read_manifest_list
from paimon_core.predicate import Predicate
from paimon_core.snapshot import CommitKind, Snapshot
from paimon_core.stats import decode_stats
from paimon_core.storage import join_path, parent_path
from paimon_core.table._data_split import DataSplit
from paimon_core.table._entries import explain_missing, live_entries, manifest_metas, read_entries
from paimon_core.table._fallback import FallbackRead, fallback_store, falls_back
from paimon_core.table._planner import BatchScanStart, created_since, resolve_batch_scan, scan_options
from paimon_core.table._read import TableRead
from paimon_core.table._store import POSTPONE_BUCKET
from paimon_core.table._time_travel import NOW, TimeTravel
from paimon_core.table.mergetree._incremental import java_split_files
from paimon_core.table.mergetree._layout import KeyValueLayout
from paimon_core.table.mergetree._reader import KeyValueTableRead
from paimon_core.types import DataField, DataType

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore


class Pruner:
    """Prunes the files of a read: partitions exactly, other columns by each file's value statistics and
    file indexes (bloom filters and bitmaps embedded in the manifest or in ``.index`` files, unless
    ``file-index.read.enabled`` is false).

    One pruner serves batch scans (:class:`TableScan`) and streaming reads alike.

    Raises:
        SchemaError: the predicate names columns the table does not have.
    """

    def __init__(self, table: TableStore, predicate: Predicate | None) -> None:
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
        if not self.predicate.may_match(values, ranges, file.row_count):
            return False
        return self._index_may_match(entry)

    @cached_property
    def _index_read(self) -> bool:
        return self.table.options.get_option(opts.FILE_INDEX_READ_ENABLED)

    def _index_may_match(self, entry: ManifestEntry) -> bool:
        """Whether the file's indexes (if any) let the filter match; unreadable indexes prune nothing."""
        assert self.predicate is not None
        file = entry.file
        data = file.embedded_index
        index_files = [name for name in file.extra_files if name.endswith(INDEX_FILE_SUFFIX)]
        if not self._index_read or (data is None and not index_files):
            return True
        if data is None:
            if not self._indexed_by_options:
                return True  # an .index file costs a read: only for columns the options index
            path = file.external_path or join_path(
                self.table.bucket_dir(entry.partition, entry.bucket), file.file_name
            )
            try:
                data = self.table.storage.read_bytes(join_path(parent_path(path), index_files[0]))
            except OSError:
                return True  # the read of the data file reports what is missing
        indexes = FileIndexes.of(data, self._index_columns(file.schema_id))
        return indexes is None or indexes.may_match(self.predicate)

    @cached_property
    def _indexed_by_options(self) -> bool:
        """Whether the table's ``file-index.*.columns`` index a column of the filter."""
        try:
            indexed = {spec.column for spec in file_index_specs(self.table.options)}
        except PaimonError:
            return False  # a bad option fails writes; a read just does not use the index files
        return not indexed.isdisjoint(self._value_columns)

    def _index_columns(self, schema_id: int) -> dict[str, tuple[str, DataType]]:
        """The filter's columns by their name and type in files of ``schema_id`` (same type only)."""
        found: dict[str, tuple[str, DataType]] = {}
        file_fields = self._fields_by_id(schema_id)
        for name in self._value_columns:
            current = self._current_fields[name]
            file_field = file_fields.get(current.id)
            if file_field is not None and file_field.type == current.type:
                found[name] = (file_field.name, file_field.type)
        return found

    def _file_field_list(self, schema_id: int) -> list[DataField]:
        return list(self._fields_by_id(schema_id).values())


class TableScan:
    """Plans a batch read: the snapshot it sees, then its pruned files and splits.

    The snapshot comes from the table's ``scan.*`` options (``scan.mode``, ``scan.snapshot-id``,
    ``scan.tag-name``, ``scan.timestamp[-millis]``, ``incremental-between[-timestamp]``,
    ``scan.file-creation-time-millis``), or from explicit time travel, which wins over them.

    Args:
        table: the table.
        predicate: prunes partitions exactly and files by their value statistics.
        travel: the snapshot to read (a snapshot id, a tag or an instant) instead of what the ``scan.*``
            options choose.
        snapshot: read exactly this snapshot (a tag's, whose file may have expired), ignoring the options.
        fallback: take the partitions this branch lacks from its ``scan.fallback-branch`` (a read of the
            latest snapshot only; :mod:`paimon_core.table._fallback`).

    Raises:
        ConfigError: conflicting or malformed scan options.
        SnapshotNotFoundError, TagNotFoundError: the snapshot or tag asked for does not exist.
    """

    def __init__(
        self,
        table: TableStore,
        predicate: Predicate | None = None,
        *,
        travel: TimeTravel = NOW,
        snapshot: Snapshot | None = None,
        fallback: bool = True,
    ) -> None:
        self.table = table
        self._fallback = fallback and snapshot is None and falls_back(table, travel)
        self.predicate = predicate
        self.pruner = Pruner(table, predicate)
        if snapshot is not None:
            self.start = BatchScanStart(snapshot)
        else:
            self.start = resolve_batch_scan(table, scan_options(table.options, travel))
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
        overwrites = options.get_option(opts.STREAMING_READ_APPEND_OVERWRITE) and not self.start.delta_only
        changelog = (
            self.table.schema.primary_keys
            and not self.start.delta_only
            and incremental_reads_changelog(options)
        )
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
        splits = self._plan_own()
        if self._fallback:
            splits += self._fallback_splits()
        return splits

    def _plan_own(self) -> list[DataSplit]:
        if self.snapshot is None:
            return []
        with gc_paused():
            if self.start.diff and self.table.schema.primary_keys:
                return self._diff_splits()
            since = self.start.incremental_from
            return make_splits(self.table, self.snapshot.id, self.files(), incremental_from=since)

    def _fallback_splits(self) -> list[DataSplit]:
        """The splits of the fallback branch's partitions that this branch does not have (as Java, every
        partition of the branch counts, whatever the filter)."""
        fallback = fallback_store(self.table)
        if fallback is None:
            return []
        mine = {e.partition for e in live_entries(self.table, self.snapshot)} if self.snapshot else set()
        scan = TableScan(fallback, self.predicate, fallback=False)
        return [replace(s, branch=fallback.branch) for s in scan.plan() if s.partition not in mine]

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
        reader = reader_for(self.table, None, self.predicate).to_reader(self.plan())
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
    table: TableStore,
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
        if entry.bucket == POSTPONE_BUCKET:
            continue  # not visible until a compaction moves it into a real bucket, as in Java
        if entry.file.write_cols is not None:
            # a file of some columns only, merged with others by row id: a table of data evolution
            raise UnsupportedTableFeatureError(
                table.identifier,
                "data evolution",
                "data-evolution.enabled",
                f"data file {entry.file.file_name} holds only the columns {', '.join(entry.file.write_cols)} "
                "(_WRITE_COLS)",
            )
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


def reader_for(table: TableStore, columns: Sequence[str] | None, row_filter: Any) -> TableRead:
    """The reader of ``table``'s splits: a merging one for a primary-key table.

    ``row_filter``: a :class:`Predicate` (its terms also skip row groups by their statistics) or a pyarrow
    expression.
    """
    read = (
        KeyValueTableRead(table, columns, row_filter)
        if table.has_primary_key
        else TableRead(table, columns, row_filter)
    )
    if falls_back(table, NOW):
        fallback = fallback_store(table)
        if fallback is not None:
            # the splits of a read that fell back name their branch: each is read with its own reader
            reader = FallbackRead(read, lambda: reader_for(fallback, columns, row_filter))
            return cast(TableRead, reader)
    return read
