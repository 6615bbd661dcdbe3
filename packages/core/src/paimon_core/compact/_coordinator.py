"""The unaware-bucket compaction coordinator (docs/append-compaction.md, Paimon ≥ 1.2).

:class:`CompactCoordinator` is the pure planning state: small files pending per partition, each partition
with an *age*. :class:`TableCoordinator` feeds it from a table: the live files of the latest snapshot on the
first scan (and after :meth:`TableCoordinator.restart`), then the delta of every following snapshot
(COMPACT ones included, so compaction outputs that are still small come back as candidates).

Planning per partition: candidates sorted by size ascending go into a bin, each counting ``size + open
cost``; the bin is emitted as a task when it holds more than one file and at least twice the target size,
or (with ``compaction.max.file-num`` set, as Paimon 0.9/1.0 had it) that many files, whatever their size.
What is left is emitted when it holds at least ``compaction.min.file-num`` files. A partition that emitted
nothing ages by one; past age 5 with more than one file pending, everything pending is emitted as one task.
A partition with nothing pending or older than 10 is forgotten; a restarted coordinator (a full scan)
rediscovers its files.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.compact._task import CompactTask
from paimon_core.errors import CorruptMetadataError, SnapshotExpiredError, SnapshotNotFoundError
from paimon_core.manifest import DataFileMeta, FileKind, ManifestEntry
from paimon_core.redaction import get_logger
from paimon_core.table import explain_missing, live_entries, manifest_metas, read_entries

if TYPE_CHECKING:
    from paimon_core.predicate import Predicate
    from paimon_core.table import TableStore

__all__ = ["COMPACT_AGE", "REMOVE_AGE", "CompactCoordinator", "CoordinatorOptions", "TableCoordinator"]

logger = get_logger(__name__)

#: A partition that planned nothing this many times compacts whatever it holds (more than one file).
COMPACT_AGE = 5
#: A partition older than this is forgotten.
REMOVE_AGE = 10
#: ``_TOTAL_BUCKETS`` of unaware-bucket entries.
UNAWARE_TOTAL_BUCKETS = -1


@dataclass(frozen=True)
class CoordinatorOptions:
    """The coordinator's parameters (docs/append-compaction.md), normally read from the table's options."""

    target_file_size: int
    small_file_ratio: float = 0.7
    open_file_cost: int = 4 << 20
    min_file_num: int = 5
    file_num_limit: int = 100_000
    max_file_num: int | None = None

    @property
    def small_file_size(self) -> int:
        """Files below this size are candidates."""
        return int(self.target_file_size * self.small_file_ratio)

    @classmethod
    def of(cls, table: TableStore) -> CoordinatorOptions:
        options = table.options
        return cls(
            target_file_size=options.target_file_size(bool(table.schema.primary_keys)),
            small_file_ratio=options.get_option(opts.COMPACTION_SMALL_FILE_RATIO),
            open_file_cost=options.get_option(opts.SOURCE_SPLIT_OPEN_FILE_COST),
            min_file_num=options.get_option(opts.COMPACTION_MIN_FILE_NUM),
            file_num_limit=options.get_option(opts.COMPACTION_FILE_NUM_LIMIT),
            max_file_num=options.get_option(opts.COMPACTION_MAX_FILE_NUM),
        )


@dataclass
class _Partition:
    files: dict[str, DataFileMeta] = field(default_factory=dict)  # by file name; a bucket has unique names
    age: int = 0


def pack(files: Iterable[DataFileMeta], options: CoordinatorOptions) -> list[list[DataFileMeta]]:
    """Bin-pack one partition's candidates, smallest first (see the module docstring)."""
    bins: list[list[DataFileMeta]] = []
    current: list[DataFileMeta] = []
    weight = 0
    most = options.max_file_num
    for file in sorted(files, key=lambda f: (f.file_size, f.file_name)):
        current.append(file)
        weight += file.file_size + options.open_file_cost
        full = most is not None and len(current) >= most
        if len(current) > 1 and (full or weight >= 2 * options.target_file_size):
            bins.append(current)
            current, weight = [], 0
    if len(current) >= options.min_file_num:
        bins.append(current)
    return bins


class CompactCoordinator:
    """Pending small files per partition and their ages; :meth:`plan` emits compaction tasks.

    Args:
        options: the planning parameters.
        total_buckets: ``_TOTAL_BUCKETS`` of the planned tasks' messages.
    """

    def __init__(self, options: CoordinatorOptions, total_buckets: int = UNAWARE_TOTAL_BUCKETS) -> None:
        self.options = options
        self.total_buckets = total_buckets
        self._partitions: dict[bytes, _Partition] = {}

    # --- state ---------------------------------------------------------------------------------------

    def add_files(self, partition: bytes, files: Iterable[DataFileMeta]) -> int:
        """Add candidate files (those below the small-file size) to a partition; returns how many joined.

        A partition that receives files gets young again (age 0).
        """
        small = self.options.small_file_size
        joined = [f for f in files if f.file_size < small]
        if not joined:
            return 0
        state = self._partitions.setdefault(partition, _Partition())
        state.age = 0
        for file in joined:
            state.files[file.file_name] = file
        return len(joined)

    def remove_files(self, partition: bytes, names: Iterable[str]) -> None:
        """Forget files that are no longer live (deleted by an overwrite or another compaction)."""
        state = self._partitions.get(partition)
        if state is not None:
            for name in names:
                state.files.pop(name, None)

    def pending(self) -> dict[bytes, list[DataFileMeta]]:
        """The files waiting per partition."""
        return {p: list(s.files.values()) for p, s in self._partitions.items()}

    def pending_count(self) -> int:
        return sum(len(s.files) for s in self._partitions.values())

    def age(self, partition: bytes) -> int | None:
        """A partition's age, or None when the coordinator does not track it (forgotten or never seen)."""
        state = self._partitions.get(partition)
        return state.age if state is not None else None

    def clear(self) -> None:
        self._partitions.clear()

    # --- planning ------------------------------------------------------------------------------------

    def plan(self) -> list[CompactTask]:
        """Plan tasks for every partition; planned files leave the pending set, idle partitions age."""
        tasks: list[CompactTask] = []
        for partition, state in self._partitions.items():
            bins = pack(state.files.values(), self.options)
            if not bins:
                state.age += 1
                if state.age > COMPACT_AGE and len(state.files) > 1:
                    bins = [sorted(state.files.values(), key=lambda f: (f.file_size, f.file_name))]
            for files in bins:
                for file in files:
                    del state.files[file.file_name]
                tasks.append(CompactTask(partition, 0, self.total_buckets, tuple(files)))
        self._partitions = {p: s for p, s in self._partitions.items() if s.files and s.age <= REMOVE_AGE}
        return tasks


class TableCoordinator:
    """Feeds a :class:`CompactCoordinator` from an unaware-bucket table and plans against what it read.

    Args:
        table: the table (``bucket = -1``).
        partition_filter: only partitions it accepts (decoded partition values → bool) are compacted.
        predicate: prunes manifests by partition while scanning (an optional speed-up for the filter).
    """

    def __init__(
        self,
        table: TableStore,
        partition_filter: Callable[[dict[str, object]], bool] | None = None,
        predicate: Predicate | None = None,
    ) -> None:
        self.table = table
        self.coordinator = CompactCoordinator(CoordinatorOptions.of(table))
        self.partition_filter = partition_filter
        self.predicate = predicate
        self.snapshot_id: int | None = None  # the last snapshot read
        self._backlog: deque[ManifestEntry] = deque()
        self._accepted: dict[bytes, bool] = {}

    def restart(self) -> None:
        """Forget everything; the next :meth:`scan` reads the latest snapshot in full (rediscovery)."""
        self.coordinator.clear()
        self.snapshot_id = None
        self._backlog.clear()

    def _accepts(self, partition: bytes) -> bool:
        if self.partition_filter is None:
            return True
        hit = self._accepted.get(partition)
        if hit is None:
            hit = bool(self.partition_filter(self.table.partition_values(partition)))
            self._accepted[partition] = hit
        return hit

    def scan(self) -> bool:
        """Read what was committed since the last scan; returns whether anything new was read."""
        sm = self.table.snapshot_manager
        latest = sm.latest()
        if latest is None:
            return False
        if self.snapshot_id is None:
            entries = live_entries(self.table, latest, self.predicate)
            self._feed(entries)
            self.snapshot_id = latest.id
            return True
        if latest.id <= self.snapshot_id:
            self._drain_backlog()
            return False
        for snapshot_id in range(self.snapshot_id + 1, latest.id + 1):
            try:
                snapshot = sm.snapshot(snapshot_id)
            except SnapshotNotFoundError:
                logger.info(
                    "snapshot %s expired before the compaction coordinator read it; rescanning", snapshot_id
                )
                self.restart()
                return self.scan()
            try:
                delta = read_entries(
                    self.table, manifest_metas(self.table, snapshot, delta_only=True), self.predicate
                )
            except CorruptMetadataError as exc:
                if not isinstance(explain_missing(self.table, snapshot_id, exc), SnapshotExpiredError):
                    raise
                logger.info("snapshot %s expired while the compaction coordinator read it; rescanning",
                            snapshot_id)  # fmt: skip
                self.restart()
                return self.scan()
            self._feed(delta)
            self.snapshot_id = snapshot_id
        return True

    def _feed(self, entries: Sequence[ManifestEntry]) -> None:
        small = self.coordinator.options.small_file_size
        removed: dict[bytes, list[str]] = {}
        for entry in entries:
            if entry.bucket != 0 or not self._accepts(entry.partition):
                continue
            if entry.kind == FileKind.DELETE:
                # Java skips DELETE entries; dropping them here spares a certain conflict later.
                removed.setdefault(entry.partition, []).append(entry.file.file_name)
            elif entry.file.file_size < small:
                self._backlog.append(entry)
        for partition, names in removed.items():
            self.coordinator.remove_files(partition, names)
            gone = set(names)
            self._backlog = deque(
                e for e in self._backlog if e.partition != partition or e.file.file_name not in gone
            )
        self._drain_backlog()

    def _drain_backlog(self) -> None:
        """Move at most ``compaction.file-num-limit`` candidates into the coordinator per scan."""
        budget = self.coordinator.options.file_num_limit - self.coordinator.pending_count()
        by_partition: dict[bytes, list[DataFileMeta]] = {}
        while self._backlog and budget > 0:
            entry = self._backlog.popleft()
            by_partition.setdefault(entry.partition, []).append(entry.file)
            budget -= 1
        for partition, files in by_partition.items():
            self.coordinator.add_files(partition, files)

    def plan(self) -> list[CompactTask]:
        return self.coordinator.plan()
