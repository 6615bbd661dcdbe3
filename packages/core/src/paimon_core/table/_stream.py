"""Scan modes and streaming reads.

A stream is a sequence of *positions*. ``StreamPosition(snapshot_id, full, file_index)`` is the point before
reading snapshot ``snapshot_id``: all of it (``full``: the live files, Paimon's ALL scan) or only its delta,
of which the first ``file_index`` files (in a fixed order) are already consumed. Engines keep positions as
their offsets; reading from one position to the next is deterministic, so a replayed range returns the same
rows.

Append tables: after the starting snapshot, only APPEND snapshots contribute (their delta ADD files);
COMPACT and OVERWRITE snapshots are skipped, so compaction never re-emits rows
(``streaming-read-append-overwrite`` makes an OVERWRITE's new files count too).

Primary-key tables stream their changes (docs/primary-key-tables.md, "Changelog"): the starting snapshot is
read merged, then each snapshot contributes what the table's ``changelog-producer`` defines: ``none``, the
new files of APPEND snapshots read as they are (each record with its row kind); ``input``, the changelog
files of APPEND snapshots; ``lookup`` and ``full-compaction``, the changelog files of COMPACT snapshots
(their starting read then skips level 0, or reads only the top level, whose changes come later as
changelog). A bucket's files of a full snapshot are never split across ranges: they merge with each other.

Where a stream starts is resolved by :func:`~paimon_core.table._planner.resolve_stream_start`, next to the
batch resolution (:func:`resolve_batch_scan`); one :class:`Pruner` serves both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paimon_core import options as opts
from paimon_core.consumer import Consumer
from paimon_core.errors import ConfigError
from paimon_core.manifest import ManifestEntry
from paimon_core.predicate import FilterLike, Predicate, parse_filter
from paimon_core.snapshot import CommitKind, Snapshot
from paimon_core.table._data_split import DataSplit
from paimon_core.table._planner import (
    STREAM_MODES,
    BatchScanStart,
    created_since,
    creation_filter,
    resolve_batch_scan,
    resolve_mode,
    resolve_stream_start,
)
from paimon_core.table._scan import Pruner, TableScan, make_splits

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = [
    "BatchScanStart",
    "StreamPosition",
    "StreamScan",
    "plan_batch",
    "resolve_batch_scan",
]


def plan_batch(table: TableStore, filter: FilterLike = None) -> list[DataSplit]:
    """The splits of a batch read honouring the table's ``scan.*`` options (what ``table.scan`` plans)."""
    return TableScan(table, predicate=parse_filter(filter)[0]).plan()


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
    """Plans a streaming read (see the module docstring).

    Args:
        table: the table; its options (``scan.mode`` and friends, ``streaming-read-append-overwrite``)
            decide where the stream starts and what it reads.
        filter: prunes partitions and files (rows are filtered by the reader).
        consumer_id: start from this consumer's recorded progress when it has one (unless
            ``consumer.ignore-progress``); defaults to the ``consumer-id`` option.
    """

    def __init__(self, table: TableStore, filter: FilterLike = None, consumer_id: str | None = None) -> None:
        self.table = table
        self.primary_key = bool(table.schema.primary_keys)
        self.producer = table.options.get_option(opts.CHANGELOG_PRODUCER)
        if self.primary_key and table.options.get_option(opts.STREAMING_READ_OVERWRITE):
            raise ConfigError(
                "streaming-read-overwrite (reading the changes of OVERWRITE commits of a primary-key table) "
                "is not supported here; overwrites are skipped by streaming reads",
                opts.STREAMING_READ_OVERWRITE.key,
            )
        self.predicate: Predicate | None = parse_filter(filter)[0]
        self.mode = resolve_mode(table.options)
        if self.mode not in STREAM_MODES:
            raise ConfigError(f"scan.mode={self.mode} is not supported for streaming reads", "scan.mode")
        self.creation_since = creation_filter(table.options, self.mode)
        # from-creation-timestamp with no snapshot to start from reads the latest snapshot's files created
        # since the instant, then every delta (Java filters only its starting scan)
        self.full_read_since = (
            table.options.get_option(opts.SCAN_CREATION_TIME_MILLIS)
            if self.mode == "from-creation-timestamp"
            else None
        )
        self.read_overwrite = table.options.get_option(opts.STREAMING_READ_APPEND_OVERWRITE)
        self.consumer_id = consumer_id or table.options.get_option(opts.CONSUMER_ID)
        self._file_cache: dict[tuple[int, bool], list[ManifestEntry]] = {}
        self.pruner = Pruner(table, self.predicate)
        self.watermark_bound = table.options.get_option(opts.SCAN_BOUNDED_WATERMARK)
        self._bound_checked = 0
        self._bounded_end: int | None = None

    # --- where to start --------------------------------------------------------------------------------

    def starting_position(self) -> StreamPosition:
        """The first position of a new stream (from consumer progress or the scan mode)."""
        options = self.table.options
        if self.consumer_id:
            options = options.with_overrides({opts.CONSUMER_ID.key: self.consumer_id})
        start = resolve_stream_start(self.table, options)
        return StreamPosition(start.snapshot_id, full=start.full)

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
            entries = [e for e in self.pruner.live(snapshot) if self._in_full_read(e.file.level)]
        elif not self._is_streamed(snapshot):
            entries = []
        elif self.primary_key and self.producer != "none":
            entries = self.pruner.changelog(snapshot)
        else:
            entries = self.pruner.added(snapshot)
        entries = [e for e in entries if created_since(e, self.creation_since)]
        if full and self.full_read_since is not None:
            entries = [e for e in entries if created_since(e, self.full_read_since)]
        if self.primary_key:  # a bucket's changes in the order they were made
            entries.sort(key=lambda e: (e.partition, e.bucket, e.file.min_sequence_number, e.file.file_name))
        else:
            entries.sort(key=lambda e: (e.partition, e.bucket, e.file.file_name))
        if len(self._file_cache) > 64:
            self._file_cache.clear()
        self._file_cache[key] = entries
        return entries

    def _is_streamed(self, snapshot: Snapshot) -> bool:
        if self.primary_key:
            # Java's follow-up scanners: compaction changelog comes with COMPACT snapshots
            wanted = (
                CommitKind.COMPACT if self.producer in ("lookup", "full-compaction") else CommitKind.APPEND
            )
            return snapshot.commit_kind == wanted
        if snapshot.commit_kind == CommitKind.APPEND:
            return True
        return snapshot.commit_kind == CommitKind.OVERWRITE and self.read_overwrite

    def _in_full_read(self, level: int) -> bool:
        """Whether a file at ``level`` belongs to the starting read of a primary-key table's stream."""
        if not self.primary_key:
            return True
        if self.producer == "lookup":
            return level > 0
        if self.producer == "full-compaction":
            return level == self.table.options.merge_tree_levels() - 1
        return True

    # --- moving -----------------------------------------------------------------------------------------

    def latest_position(self) -> StreamPosition:
        """The position after everything committed so far (the next snapshot to appear), or, with
        ``scan.bounded.watermark``, before the first snapshot whose watermark passes the bound (the stream
        ends there)."""
        latest = self.table.snapshot_manager.latest_id() or 0
        if self.watermark_bound is None:
            return StreamPosition(latest + 1)
        if self._bounded_end is None:
            sm = self.table.snapshot_manager
            for snapshot_id in range(max(self._bound_checked + 1, sm.earliest_id() or 1), latest + 1):
                watermark = sm.snapshot(snapshot_id).watermark
                if watermark is not None and watermark > self.watermark_bound:
                    self._bounded_end = snapshot_id
                    break
                self._bound_checked = snapshot_id
        return StreamPosition(self._bounded_end if self._bounded_end is not None else latest + 1)

    @property
    def ended(self) -> bool:
        """Whether a bounded stream has reached its end (``scan.bounded.watermark``)."""
        return self._bounded_end is not None

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
                    cut = self._cut(entries, position, index)
                    if cut is not None:
                        return cut
                files += 1
                rows += size
            position = StreamPosition(position.snapshot_id + 1)
        return position

    def _cut(
        self, entries: list[ManifestEntry], position: StreamPosition, index: int
    ) -> StreamPosition | None:
        """Where a range that would end before ``entries[index]`` ends: there, or, inside a full read of a
        primary-key table, at the start of that file's bucket (None: the bucket started the range, so the
        range takes all of it)."""
        if not (self.primary_key and position.full):
            return StreamPosition(position.snapshot_id, position.full, index)
        bucket = (entries[index].partition, entries[index].bucket)
        start = index
        while (
            start > position.file_index
            and (entries[start - 1].partition, entries[start - 1].bucket) == bucket
        ):
            start -= 1
        if start > position.file_index:
            return StreamPosition(position.snapshot_id, position.full, start)
        return None

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
        """The splits holding the rows from ``start`` up to (not including) ``end``.

        A full ``start`` past ``end`` is read from :meth:`restarted_start` instead.
        """
        start = self.restarted_start(start, end)
        by_snapshot: dict[int, list[ManifestEntry]] = {}
        for snapshot_id, entry in self.entries_between(start, end):
            by_snapshot.setdefault(snapshot_id, []).append(entry)
        full = {start.snapshot_id} if start.full else set()
        splits: list[DataSplit] = []
        for snapshot_id, entries in sorted(by_snapshot.items()):
            streaming = self.primary_key and snapshot_id not in full
            splits.extend(make_splits(self.table, snapshot_id, entries, streaming))
        return splits

    def restarted_start(self, start: StreamPosition, end: StreamPosition) -> StreamPosition:
        """Where a range from a full ``start`` to ``end`` is read from when ``start`` is past ``end``.

        Only an engine that resolved its starting position again after it had logged the end of its first
        range gets there: Spark keeps no start offset for a query's first micro-batch, so a query restarted
        before that batch committed asks a new source for the start, and the table has moved on. Read from
        there the range would be empty, and every later change would retract a row never read. The full read
        of the snapshot before ``end`` (of ``end``'s own when ``end`` is inside a full read) leaves a reader
        where the range first planned would have: at the table as of ``end``.
        """
        if not start.full or start <= end:
            return start
        if end.full:
            return StreamPosition(end.snapshot_id, full=True)
        if end.snapshot_id > 1:
            return StreamPosition(end.snapshot_id - 1, full=True)
        return start

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
        manager = self.table.consumer_manager
        manager.reset_consumer(self.consumer_id, Consumer(next_snapshot))
