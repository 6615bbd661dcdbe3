"""Scan modes and streaming reads of append tables.

A stream is a sequence of *positions*. ``StreamPosition(snapshot_id, full, file_index)`` is the point before
reading snapshot ``snapshot_id``: all of it (``full``: the live files, Paimon's ALL scan) or only its delta,
of which the first ``file_index`` files (in a fixed order) are already consumed. Engines keep positions as
their offsets; reading from one position to the next is deterministic, so a replayed range returns the same
rows. After the starting snapshot, only APPEND snapshots contribute (their delta ADD files); COMPACT and
OVERWRITE snapshots are skipped, so compaction never re-emits rows (``streaming-read-append-overwrite`` makes
an OVERWRITE's new files count too).

Batch reads use the same resolution of ``scan.mode`` through :func:`resolve_batch_scan` (time travel by
snapshot id or timestamp, file creation time filters).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paimon_core import options as opts
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import ConfigError, SnapshotNotFoundError
from paimon_core.manifest import FileKind, ManifestEntry
from paimon_core.predicate import FilterLike, Predicate, parse_filter
from paimon_core.snapshot import CommitKind, Snapshot
from paimon_core.table._scan import DataSplit, TableScan, make_splits, manifest_metas, read_entries
from paimon_core.tag import TagManager

if TYPE_CHECKING:
    from paimon_core.table._table import Table

__all__ = [
    "BatchScanStart",
    "StreamPosition",
    "StreamScan",
    "plan_batch",
    "resolve_batch_scan",
]

_STREAM_MODES = (
    "latest",
    "latest-full",
    "full",
    "from-snapshot",
    "from-snapshot-full",
    "from-timestamp",
    "from-file-creation-time",
)


def _resolve_mode(options: opts.Options) -> str:
    """``scan.mode=default`` resolved from the other ``scan.*`` options (spec §8)."""
    mode = options.get_option(opts.SCAN_MODE)
    if mode != "default":
        return "latest-full" if mode == "full" else mode
    if options.get_option(opts.SCAN_TIMESTAMP_MILLIS) is not None:
        return "from-timestamp"
    if options.get_option(opts.SCAN_SNAPSHOT_ID) is not None or options.get_option(opts.SCAN_TAG_NAME):
        return "from-snapshot"
    if options.get_option(opts.SCAN_FILE_CREATION_TIME_MILLIS) is not None:
        return "from-file-creation-time"
    return "latest-full"


def _required(options: opts.Options, option: opts.Option[int | None], mode: str) -> int:
    value = options.get_option(option)
    if value is None:
        raise ConfigError(f"scan.mode={mode} needs '{option.key}'", option.key)
    return value


def _start_snapshot(table: Table, mode: str) -> Snapshot:
    """The snapshot of ``scan.tag-name`` (kept by the tag even after it expired) or ``scan.snapshot-id``."""
    tag = table.options.get_option(opts.SCAN_TAG_NAME)
    if tag is not None:
        return TagManager(table.storage, table.path).tag(tag).snapshot
    return table.snapshot_manager.snapshot(_required(table.options, opts.SCAN_SNAPSHOT_ID, mode))


def _creation_filter(options: opts.Options, mode: str) -> int | None:
    value = options.get_option(opts.SCAN_FILE_CREATION_TIME_MILLIS)
    if mode == "from-file-creation-time" and value is None:
        raise ConfigError(f"scan.mode={mode} needs 'scan.file-creation-time-millis'", "scan.mode")
    return value


def _created_since(entry: ManifestEntry, since_millis: int | None) -> bool:
    if since_millis is None:
        return True
    created = entry.file.creation_time_epoch_millis()
    return created is None or created >= since_millis


# --- batch ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchScanStart:
    """What a batch read reads: one snapshot (None = empty table) and an optional creation time filter."""

    snapshot: Snapshot | None
    file_creation_time_millis: int | None = None


def resolve_batch_scan(table: Table) -> BatchScanStart:
    """Resolve ``scan.mode`` and its options for a batch read (time travel by id or timestamp).

    Raises:
        ConfigError: the mode cannot be used for batch reads, or a needed option is missing.
        SnapshotNotFoundError: ``scan.snapshot-id`` does not exist, or no snapshot is as old as
            ``scan.timestamp-millis``.
    """
    options = table.options
    mode = _resolve_mode(options)
    sm = table.snapshot_manager
    creation = _creation_filter(options, mode)
    if mode in ("latest-full", "latest", "from-file-creation-time"):
        return BatchScanStart(sm.latest(), creation)
    if mode in ("from-snapshot", "from-snapshot-full"):
        return BatchScanStart(_start_snapshot(table, mode), creation)
    if mode == "from-timestamp":
        millis = _required(options, opts.SCAN_TIMESTAMP_MILLIS, mode)
        snapshot = sm.snapshot_at_or_before_time(millis)
        if snapshot is None:
            raise SnapshotNotFoundError(None, f"no snapshot of {table.identifier} is as old as {millis} ms")
        return BatchScanStart(snapshot, creation)
    raise ConfigError(f"scan.mode={mode} is not supported for batch reads of append tables", "scan.mode")


def plan_batch(table: Table, filter: FilterLike = None) -> list[DataSplit]:
    """The splits of a batch read honouring ``scan.*`` options (``table.scan`` ignores them)."""
    predicate, _ = parse_filter(filter)
    start = resolve_batch_scan(table)
    if start.snapshot is None:
        return []
    scan = TableScan(table, predicate=predicate, snapshot=start.snapshot)
    entries = [e for e in scan.files() if _created_since(e, start.file_creation_time_millis)]
    return make_splits(table, start.snapshot.id, entries)


# --- streaming -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class StreamPosition:
    """A point in a stream; see the module docstring. JSON round-trips through :meth:`to_json`."""

    snapshot_id: int
    full: bool = False
    file_index: int = 0

    def to_json(self) -> str:
        return json.dumps({"snapshot": self.snapshot_id, "full": self.full, "file": self.file_index})

    @classmethod
    def from_json(cls, text: str | dict[str, Any]) -> StreamPosition:
        data = json.loads(text) if isinstance(text, str) else text
        return cls(int(data["snapshot"]), bool(data.get("full", False)), int(data.get("file", 0)))


class StreamScan:
    """Plans a streaming read of an append table.

    Args:
        table: the table; its options (``scan.mode`` and friends, ``streaming-read-append-overwrite``)
            decide where the stream starts and what it reads.
        filter: prunes partitions and files (rows are filtered by the reader).
        consumer_id: start from this consumer's recorded progress when it has one (unless
            ``consumer.ignore-progress``); defaults to the ``consumer-id`` option.
    """

    def __init__(self, table: Table, filter: FilterLike = None, consumer_id: str | None = None) -> None:
        self.table = table
        self.predicate: Predicate | None = parse_filter(filter)[0]
        self.mode = _resolve_mode(table.options)
        if self.mode not in _STREAM_MODES:
            raise ConfigError(f"scan.mode={self.mode} is not supported for streaming reads", "scan.mode")
        self.creation_since = _creation_filter(table.options, self.mode)
        self.read_overwrite = table.options.get_option(opts.STREAMING_READ_APPEND_OVERWRITE)
        self.consumer_id = consumer_id or table.options.get_option(opts.CONSUMER_ID)
        self._file_cache: dict[tuple[int, bool], list[ManifestEntry]] = {}
        self._pruner: _PruningScan | None = None

    # --- where to start --------------------------------------------------------------------------------

    def starting_position(self) -> StreamPosition:
        """The first position of a new stream (from consumer progress or the scan mode)."""
        if self.consumer_id and not self.table.options.get_option(opts.CONSUMER_IGNORE_PROGRESS):
            consumer = ConsumerManager(self.table.storage, self.table.path).consumer(self.consumer_id)
            if consumer is not None:
                return StreamPosition(consumer.next_snapshot)
        return self._mode_start()

    def _mode_start(self) -> StreamPosition:
        options, mode, sm = self.table.options, self.mode, self.table.snapshot_manager
        latest = sm.latest_id()
        earliest = sm.earliest_id()
        if mode in ("latest-full", "from-file-creation-time"):
            # An empty table: its first snapshot's delta is all its data.
            return StreamPosition(latest, full=True) if latest is not None else StreamPosition(1)
        if mode == "latest":
            return StreamPosition((latest or 0) + 1)
        if mode == "from-snapshot":
            tag = options.get_option(opts.SCAN_TAG_NAME)
            if tag is not None:
                wanted = TagManager(self.table.storage, self.table.path).tag(tag).snapshot.id
            else:
                wanted = _required(options, opts.SCAN_SNAPSHOT_ID, mode)
            return StreamPosition(max(wanted, earliest or wanted))
        if mode == "from-snapshot-full":
            return StreamPosition(_start_snapshot(self.table, mode).id, full=True)
        # from-timestamp: deltas from (the last snapshot committed before the instant) + 1.
        millis = _required(options, opts.SCAN_TIMESTAMP_MILLIS, mode)
        before = sm.snapshot_at_or_before_time(millis - 1)
        if before is not None:
            return StreamPosition(before.id + 1)
        return StreamPosition(earliest or 1)

    # --- what one position holds ---------------------------------------------------------------------------

    def files(self, snapshot_id: int, full: bool) -> list[ManifestEntry]:
        """The files a snapshot contributes to the stream, in a fixed order (the offsets count in it).

        Raises:
            SnapshotNotFoundError: the snapshot expired before it was read.
        """
        key = (snapshot_id, full)
        cached = self._file_cache.get(key)
        if cached is not None:
            return cached
        snapshot = self.table.snapshot_manager.snapshot(snapshot_id)
        if full:
            entries = self._pruning_scan().files_of(snapshot)
        elif self._is_streamed(snapshot):
            metas = manifest_metas(self.table, snapshot, delta_only=True)
            delta = read_entries(self.table, metas, self.predicate)
            entries = [e for e in delta if e.kind == FileKind.ADD and self._file_may_match(e)]
        else:
            entries = []
        entries = [e for e in entries if _created_since(e, self.creation_since)]
        entries.sort(key=lambda e: (e.partition, e.bucket, e.file.file_name))
        if len(self._file_cache) > 64:
            self._file_cache.clear()
        self._file_cache[key] = entries
        return entries

    def _is_streamed(self, snapshot: Snapshot) -> bool:
        if snapshot.commit_kind == CommitKind.APPEND:
            return True
        return snapshot.commit_kind == CommitKind.OVERWRITE and self.read_overwrite

    def _pruning_scan(self) -> _PruningScan:
        if self._pruner is None:
            self._pruner = _PruningScan(self.table, self.predicate)
        return self._pruner

    def _file_may_match(self, entry: ManifestEntry) -> bool:
        return self._pruning_scan().file_may_match(entry)

    # --- moving -----------------------------------------------------------------------------------------

    def latest_position(self) -> StreamPosition:
        """The position after everything committed so far (the next snapshot to appear)."""
        return StreamPosition((self.table.snapshot_manager.latest_id() or 0) + 1)

    def advance(
        self, start: StreamPosition, max_files: int | None = None, max_rows: int | None = None
    ) -> StreamPosition:
        """The end of the next range from ``start``: everything available, or less under the limits.

        A range holds at least one file when any is available, so a stream always makes progress.
        """
        end = self.latest_position()
        if max_files is None and max_rows is None:
            return max(start, end)
        files = rows = 0
        position = start
        while position.snapshot_id < end.snapshot_id:
            entries = self.files(position.snapshot_id, position.full)
            for index in range(position.file_index, len(entries)):
                size = entries[index].file.row_count
                if files and (
                    (max_files is not None and files + 1 > max_files)
                    or (max_rows is not None and rows + size > max_rows)
                ):
                    return StreamPosition(position.snapshot_id, position.full, index)
                files += 1
                rows += size
            position = StreamPosition(position.snapshot_id + 1)
        return position

    def entries_between(
        self, start: StreamPosition, end: StreamPosition
    ) -> Iterator[tuple[int, ManifestEntry]]:
        """(snapshot id, entry) for every file in [start, end)."""
        position = start
        while position < end and position.snapshot_id <= end.snapshot_id:
            entries = self.files(position.snapshot_id, position.full)
            stop = len(entries)
            if end.snapshot_id == position.snapshot_id:
                stop = min(stop, end.file_index)
            for index in range(position.file_index, stop):
                yield position.snapshot_id, entries[index]
            position = StreamPosition(position.snapshot_id + 1)

    def plan(self, start: StreamPosition, end: StreamPosition) -> list[DataSplit]:
        """The splits holding the rows from ``start`` up to (not including) ``end``."""
        by_snapshot: dict[int, list[ManifestEntry]] = {}
        for snapshot_id, entry in self.entries_between(start, end):
            by_snapshot.setdefault(snapshot_id, []).append(entry)
        splits: list[DataSplit] = []
        for snapshot_id, entries in sorted(by_snapshot.items()):
            splits.extend(make_splits(self.table, snapshot_id, entries))
        return splits

    def consumer_next_snapshot(self, position: StreamPosition) -> int | None:
        """What a consumer records at ``position``: nothing while a full snapshot is only partly read."""
        if position.full:
            return None
        return position.snapshot_id

    def record_progress(self, position: StreamPosition) -> None:
        """Write ``position`` to the consumer (when there is a consumer id)."""
        if not self.consumer_id:
            return
        next_snapshot = self.consumer_next_snapshot(position)
        if next_snapshot is None:
            return
        manager = ConsumerManager(self.table.storage, self.table.path)
        manager.reset_consumer(self.consumer_id, Consumer(next_snapshot))


class _PruningScan(TableScan):
    """A :class:`TableScan` used for its partition and statistics pruning on any snapshot."""

    def __init__(self, table: Table, predicate: Predicate | None) -> None:
        super().__init__(table, None, predicate)

    def files_of(self, snapshot: Snapshot) -> list[ManifestEntry]:
        self.snapshot = snapshot
        return self.files()

    def file_may_match(self, entry: ManifestEntry) -> bool:
        return self.predicate is None or self._file_may_match(entry)
