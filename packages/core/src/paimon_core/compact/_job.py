"""The dedicated compaction job (Paimon's ``compact`` action): plan, run tasks in parallel, commit COMPACT.

A job plans from the snapshot it reads (the unaware-bucket coordinator, the per-bucket rules of bucketed
tables, or sort compaction), hands the tasks to a runner, and commits all results as one COMPACT snapshot.
The commit checks that every rewritten file is still live. When another compaction or an overwrite removed
some inputs first, the affected results are dropped (their files deleted), the rest is committed, and the
job re-plans from the new latest snapshot: losing a race is never a failure. Appends never conflict with a
compaction, so rows appended meanwhile are kept.

``batch`` mode compacts once (re-planning after lost races); ``streaming`` keeps compacting as new snapshots
land until stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.compact._bucketed import BucketCompactManager, pick_full_compaction
from paimon_core.compact._coordinator import TableCoordinator
from paimon_core.compact._partitions import PartitionFilter, PartitionSpecs
from paimon_core.compact._postpone import plan_postpone, postpone_removals
from paimon_core.compact._runner import CompactionTask, LocalRunner, TaskRunner, delete_outputs
from paimon_core.compact._sort import SortCompactTask, check_sort_columns
from paimon_core.compact._task import CompactTask
from paimon_core.errors import (
    CommitConflictError,
    CommitFilesError,
    CommitRetriesExhaustedError,
    CommitStateUnknownError,
    ConfigError,
    PaimonError,
    SnapshotExpiredError,
)
from paimon_core.manifest import (
    DELETION_VECTORS_INDEX,
    DataFileMeta,
    FileIdentifier,
    IndexFileMeta,
    ManifestEntry,
)
from paimon_core.progress import Progress, human_size, resolve_progress
from paimon_core.redaction import get_logger
from paimon_core.table import (
    POSTPONE_BUCKET,
    CommitMessage,
    MergeTreeCompactTask,
    TableCommit,
    live_entries,
    needs_full_compaction,
)

if TYPE_CHECKING:
    from paimon_core.snapshot import Snapshot
    from paimon_core.table import TableStore

__all__ = ["MODES", "CompactJob", "CompactSummary", "Progress", "compact_table"]

logger = get_logger(__name__)

MODES = ("batch", "streaming")
_MAX_BATCH_REPLANS = 20


@dataclass
class CompactSummary:
    """What a compaction job did.

    ``files_*`` / ``bytes_*`` count the live files of the compacted partitions before the first and after
    the last round (files appended meanwhile included); ``rewritten_*`` count the inputs and outputs of the
    committed tasks.
    """

    table: str
    files_before: int = 0
    bytes_before: int = 0
    files_after: int = 0
    bytes_after: int = 0
    tasks: int = 0
    rewritten_files: int = 0
    rewritten_bytes: int = 0
    written_files: int = 0
    written_bytes: int = 0
    snapshots: list[int] = field(default_factory=list)
    replans: int = 0
    rounds: int = 0
    seconds: float = 0.0
    threshold: str = ""  # when a bucket or partition is compacted (the option deciding it), for the summary

    def merge(self, other: CompactSummary) -> None:
        """Add another job's counts (compact_database sums its tables)."""
        for name in (
            "files_before", "bytes_before", "files_after", "bytes_after", "tasks", "rewritten_files",
            "rewritten_bytes", "written_files", "written_bytes", "replans", "rounds",
        ):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.snapshots.extend(other.snapshots)
        self.seconds = max(self.seconds, other.seconds)

    def __str__(self) -> str:
        if self.tasks == 0 and not self.snapshots:
            why = f": {self.threshold}" if self.threshold else ""
            return (
                f"{self.table}: nothing to compact among {self.files_before} files "
                f"({human_size(self.bytes_before)}){why}; {self.seconds:.1f} s"
            )
        return (
            f"{self.table}: {self.files_before} files ({human_size(self.bytes_before)}) -> "
            f"{self.files_after} files ({human_size(self.bytes_after)}); {self.tasks} tasks rewrote "
            f"{self.rewritten_files} files ({human_size(self.rewritten_bytes)}) into {self.written_files} "
            f"({human_size(self.written_bytes)}); {len(self.snapshots)} COMPACT snapshots, "
            f"{self.replans} re-plans, {self.seconds:.1f} s"
        )


def _threshold(table: TableStore) -> str:
    """When the job compacts a bucket, or a partition of a bucket = -1 append table, as its options say."""
    options = table.options
    if table.schema.primary_keys:
        runs = options.get_option(opts.NUM_SORTED_RUN_COMPACTION_TRIGGER)
        return f"a bucket is compacted once it has {runs} sorted runs ({opts.NUM_SORTED_RUN_COMPACTION_TRIGGER.key})"
    files = options.get_option(opts.COMPACTION_MIN_FILE_NUM)
    where = "a partition" if table.bucket == -1 else "a bucket"
    return (
        f"{where} is compacted once it has {files} files smaller than the target size "
        f"({opts.COMPACTION_MIN_FILE_NUM.key}, target-file-size)"
    )


@dataclass
class _Round:
    tasks: int = 0
    snapshots: list[int] = field(default_factory=list)
    conflicted: bool = False
    planned: bool = False


class CompactJob:
    """Compaction of one table, round by round; see the module docstring.

    Args:
        table: the table.
        partitions: a partition filter (``"dt=1,hh=2;dt=3"``, a dict, or a list of either).
        streaming: keep compacting new snapshots (only :meth:`run` cares).
        order_strategy: ``order`` or ``zorder`` for sort compaction of the chosen partitions (batch only).
        order_by: the sort columns.
        runner: runs the tasks; a :class:`LocalRunner` on threads by default.
        progress: progress display; None = a :class:`Progress` on stderr when it is a terminal.
        commit_user: the committer's identity (a fresh one by default).
    """

    def __init__(
        self,
        table: TableStore,
        *,
        partitions: PartitionSpecs = None,
        streaming: bool = False,
        order_strategy: str | None = None,
        order_by: Sequence[str] | str = (),
        runner: TaskRunner | None = None,
        progress: Progress | None = None,
        commit_user: str | None = None,
    ) -> None:
        self.table = table
        self.postpone = table.bucket == POSTPONE_BUCKET and bool(table.schema.primary_keys)
        self.streaming = streaming
        self.partition_filter = PartitionFilter.of(table, partitions)
        self.predicate = self.partition_filter.predicate() if self.partition_filter else None
        if isinstance(order_by, str):
            order_by = [c.strip() for c in order_by.split(",") if c.strip()]
        self.order_by = tuple(order_by)
        self.order_strategy = order_strategy.lower() if order_strategy else None
        if self.order_strategy is not None and self.postpone:
            raise ConfigError(
                f"sort compaction of {table.identifier}: a postpone-bucket table (bucket = -2) is compacted "
                "into its buckets by key, not sorted"
            )
        if self.order_strategy is not None:
            check_sort_columns(table, self.order_strategy, self.order_by)
            if streaming:
                raise ConfigError("sort compaction runs in batch mode only")
        elif self.order_by:
            raise ConfigError("order_by needs an order_strategy ('order' or 'zorder')")
        self._own_runner = runner is None
        self.runner: TaskRunner = runner if runner is not None else LocalRunner()
        self.progress = progress if progress is not None else Progress()
        self.committer = TableCommit(table, commit_user)
        self.coordinator = (
            TableCoordinator(table, self.partition_filter, self.predicate)
            if table.bucket == -1 and not table.schema.primary_keys
            else None
        )
        self._last_planned_snapshot: int | None = None
        self.summary = CompactSummary(table.identifier, threshold=_threshold(table))

    # --- planning ------------------------------------------------------------------------------------

    def _live(self, snapshot: Snapshot | None = None) -> list[ManifestEntry]:
        latest = snapshot or self.table.snapshot_manager.latest()
        entries = live_entries(self.table, latest, self.predicate)
        if self.partition_filter is None:
            return entries
        accept = self.partition_filter
        return [e for e in entries if accept(self.table.partition_values(e.partition))]

    def plan(self) -> list[CompactionTask]:
        """Plan tasks against the latest snapshot (the unaware coordinator reads only what is new)."""
        if self.order_strategy is not None:
            return self._plan_sort()
        if self.coordinator is not None:
            if not self.coordinator.scan() and self.streaming:
                return []  # nothing new: partitions age only when snapshots arrive
            return list(self.coordinator.plan())
        return self._plan_bucketed()

    def _plan_sort(self) -> list[CompactionTask]:
        assert self.order_strategy is not None
        groups: dict[bytes, list[DataFileMeta]] = {}
        for entry in self._live():
            groups.setdefault(entry.partition, []).append(entry.file)
        return [
            SortCompactTask(partition, tuple(files), self.order_strategy, self.order_by)
            for partition, files in groups.items()
        ]

    def _plan_bucketed(self) -> list[CompactionTask]:
        latest = self.table.snapshot_manager.latest()
        if latest is None or (self.streaming and latest.id == self._last_planned_snapshot):
            return []
        self._last_planned_snapshot = latest.id
        if self.postpone:
            return list(plan_postpone(self.table, self._live(latest), self._deletion_files(latest)))
        options = self.table.options
        target = options.target_file_size(bool(self.table.schema.primary_keys))
        force = options.get_option(opts.COMPACTION_FORCE_REWRITE_ALL_FILES)
        min_files = options.get_option(opts.COMPACTION_MIN_FILE_NUM)
        max_files = options.get_option(opts.COMPACTION_MAX_FILE_NUM)
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for entry in self._live(latest):
            groups.setdefault((entry.partition, entry.bucket), []).append(entry)
        deletion_files = self._deletion_files(latest)
        tasks: list[CompactionTask] = []
        levels = options.merge_tree_levels()
        for (partition, bucket), entries in groups.items():
            files = [e.file for e in entries]
            if self.table.schema.primary_keys:
                vectors = tuple(deletion_files.get((partition, bucket), ()))
                if self.streaming or needs_full_compaction(files, levels, vectors):
                    total = entries[0].total_buckets
                    tasks.append(
                        MergeTreeCompactTask(
                            partition, bucket, total, tuple(files), not self.streaming, deletion_files=vectors
                        )
                    )
                continue
            if self.streaming:
                manager = BucketCompactManager(min_files, target, files, max_file_num=max_files)
                picked = manager.pick_compact_before()
            else:
                picked = pick_full_compaction(files, target, force)
            if picked and (len(picked) > 1 or force):
                tasks.append(CompactTask(partition, bucket, entries[0].total_buckets, tuple(picked)))
        return tasks

    def _deletion_files(self, snapshot: Snapshot) -> dict[tuple[bytes, int], list[IndexFileMeta]]:
        deletion_files: dict[tuple[bytes, int], list[IndexFileMeta]] = {}
        for index in self.table.index_entries(snapshot):
            if index.file.index_type == DELETION_VECTORS_INDEX:
                deletion_files.setdefault((index.partition, index.bucket), []).append(index.file)
        return deletion_files

    # --- running and committing ------------------------------------------------------------------------

    def execute(self, tasks: Sequence[CompactionTask]) -> list[CommitMessage]:
        """Run the tasks with the runner, showing progress."""
        total_bytes = sum(t.input_bytes for t in tasks)
        done_bytes = 0
        messages: list[CommitMessage] = []
        label = f"compact {self.table.identifier}"
        self.progress.update(label, 0, len(tasks), 0, total_bytes)
        try:
            for message in self.runner(self.table, tasks):
                messages.append(message)
                done_bytes += sum(f.file_size for f in message.compact_before)
                self.progress.update(label, len(messages), len(tasks), done_bytes, total_bytes)
        except BaseException:
            delete_outputs(self.table, messages)
            raise
        return messages

    def commit(self, messages: Sequence[CommitMessage]) -> tuple[list[int], bool]:
        """Commit as COMPACT; results whose inputs are gone are dropped. Returns (snapshot ids, conflicted)."""
        if self.postpone:
            return self._commit_all(messages)
        pending = [m for m in messages if m.compact_before]
        conflicted = False
        while pending:
            try:
                created = self.committer.commit(pending)
            except CommitConflictError as exc:
                conflicted = True
                logger.info("compaction of %s lost a race (%s); re-planning", self.table.identifier, exc)
                live = {e.identifier() for e in live_entries(self.table, self.table.latest_snapshot())}
                still: list[CommitMessage] = []
                lost: list[CommitMessage] = []
                for message in pending:
                    keys = _identifiers(message)
                    (still if keys <= live else lost).append(message)
                delete_outputs(self.table, lost)
                if not lost:  # nothing identifiable to drop: give the whole round up
                    delete_outputs(self.table, still)
                    return [], True
                pending = still
                continue
            except CommitFilesError as exc:  # outputs deleted meanwhile (orphan removal): start over
                logger.warning("compaction of %s cannot commit its outputs (%s); re-planning",
                               self.table.identifier, exc)  # fmt: skip
                return [], True  # what is left of the outputs is for orphan removal
            except CommitRetriesExhaustedError:
                logger.warning("compaction of %s kept losing the race for a snapshot id; re-planning",
                               self.table.identifier)  # fmt: skip
                delete_outputs(self.table, pending)
                return [], True
            except CommitStateUnknownError:
                # The snapshot may exist: never delete its files; re-plan from what is really live.
                logger.warning(
                    "compaction commit of %s has an unknown outcome; re-planning", self.table.identifier
                )
                return [], True
            self._count(pending)
            return created, conflicted
        return [], conflicted

    def _commit_all(self, messages: Sequence[CommitMessage]) -> tuple[list[int], bool]:
        """A postpone table's round: the removal of the postponed files and the buckets that took their rows
        go in one snapshot or not at all (see compact/_postpone.py); a lost race re-plans."""
        pending = [m for m in messages if not m.is_empty()]
        if not pending:
            return [], False
        try:
            created = self.committer.commit(pending)
        except (CommitConflictError, CommitRetriesExhaustedError) as exc:
            logger.info("compaction of %s lost a race (%s); re-planning", self.table.identifier, exc)
            delete_outputs(self.table, pending)
            return [], True
        except (CommitFilesError, CommitStateUnknownError) as exc:
            # Outputs gone, or the snapshot may exist: never delete; re-plan from what is really live.
            logger.warning("compaction commit of %s failed (%s); re-planning", self.table.identifier, exc)
            return [], True
        self._count(pending)
        return created, False

    def _count(self, messages: Iterable[CommitMessage]) -> None:
        for message in messages:
            self.summary.tasks += message.bucket != POSTPONE_BUCKET  # a postpone removal is no task
            self.summary.rewritten_files += len(message.compact_before)
            self.summary.rewritten_bytes += sum(f.file_size for f in message.compact_before)
            self.summary.written_files += len(message.compact_after)
            self.summary.written_bytes += sum(f.file_size for f in message.compact_after)

    def run_round(self) -> _Round:
        """Plan, run, commit once. A round whose snapshot or input files expired meanwhile re-plans."""
        result = _Round()
        try:
            tasks = self.plan()
        except SnapshotExpiredError as exc:
            logger.info("compaction of %s planned on an expiring snapshot; re-planning: %s",
                        self.table.identifier, exc)  # fmt: skip
            tasks, result.conflicted = [], True
        result.planned = bool(tasks)
        result.tasks = len(tasks)
        self.summary.rounds += 1
        if tasks:
            try:
                messages = self.execute(tasks)
            except (PaimonError, OSError):
                if not self._inputs_gone(tasks):
                    raise
                logger.info("inputs of a compaction of %s were compacted and expired meanwhile; re-planning",
                            self.table.identifier)  # fmt: skip
                messages = []
                result.conflicted = True
            if messages and self.postpone:
                messages += postpone_removals(tasks)
            if messages:
                result.snapshots, result.conflicted = self.commit(messages)
        self.summary.snapshots.extend(result.snapshots)
        if result.conflicted:
            self.summary.replans += 1
            if self.coordinator is not None:
                self.coordinator.restart()
            self._last_planned_snapshot = None
        return result

    def _inputs_gone(self, tasks: Sequence[CompactionTask]) -> bool:
        """Whether some input file of the tasks is no longer live (another compaction or an overwrite won)."""
        live = {e.file.file_name for e in live_entries(self.table, self.table.latest_snapshot())}
        return any(f.file_name not in live for task in tasks for f in task.files)

    def live_totals(self) -> tuple[int, int]:
        """(file count, bytes) of the live files of the chosen partitions."""
        entries = self._live()
        return len(entries), sum(e.file.file_size for e in entries)

    def run(
        self,
        stop: threading.Event | None = None,
        *,
        poll_interval: float | None = None,
        max_rounds: int | None = None,
    ) -> CompactSummary:
        """Run the job: once (batch, plus re-plans after lost races) or until ``stop`` is set (streaming).

        Args:
            stop: ends a streaming job after its current round.
            poll_interval: seconds between looks for new snapshots; ``continuous.discovery-interval``
                by default.
            max_rounds: end after this many rounds (tests, bounded runs).
        """
        start = time.monotonic()
        if poll_interval is None:
            poll_interval = self.table.options.get_option(opts.CONTINUOUS_DISCOVERY_INTERVAL) / 1000
        stop = stop or threading.Event()
        self.summary.files_before, self.summary.bytes_before = self.live_totals()
        try:
            rounds = 0
            while not stop.is_set():
                result = self.run_round()
                rounds += 1
                if max_rounds is not None and rounds >= max_rounds:
                    break
                if not self.streaming:
                    if not (result.conflicted and self.summary.replans <= _MAX_BATCH_REPLANS):
                        break
                    continue
                if not result.planned or not result.snapshots:
                    stop.wait(poll_interval)
        except KeyboardInterrupt:
            self.progress.message("compaction interrupted; stopping")
        finally:
            if self._own_runner and isinstance(self.runner, LocalRunner):
                self.runner.close()
        self.summary.files_after, self.summary.bytes_after = self.live_totals()
        self.summary.seconds = time.monotonic() - start
        self.progress.message(str(self.summary))
        return self.summary


def _identifiers(message: CommitMessage) -> set[FileIdentifier]:
    return {
        FileIdentifier(
            message.partition,
            message.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_index,
            f.external_path,
        )
        for f in message.compact_before
    }


def compact_table(
    table: TableStore,
    *,
    partitions: PartitionSpecs = None,
    mode: str = "batch",
    order_strategy: str | None = None,
    order_by: Sequence[str] | str = (),
    parallelism: int | None = None,
    processes: bool = False,
    runner: TaskRunner | None = None,
    progress: bool | Progress | None = None,
    stop: threading.Event | None = None,
    poll_interval: float | None = None,
    max_rounds: int | None = None,
) -> CompactSummary:
    """Compact a table: Paimon's ``compact`` action / procedure.

    Args:
        table: the table.
        partitions: only these partitions (``"dt=2024-01-01,hh=1;dt=2024-01-02"``: ``,`` = AND, ``;`` = OR),
            a ``{"dt": ...}`` dict, or a list of either.
        mode: ``batch`` (compact once) or ``streaming`` (keep compacting new snapshots until ``stop``).
        order_strategy: ``order`` or ``zorder``: sort compaction of the chosen partitions by ``order_by``.
        order_by: sort columns (a list, or ``"a,b"``).
        parallelism: tasks run at once (default: CPU count).
        processes: run tasks in local processes instead of threads.
        runner: a custom task runner (e.g. Spark executors); overrides ``parallelism``/``processes``.
        progress: show progress (None: when stderr is a terminal), or a :class:`Progress`.
        stop: ends a streaming job.
        poll_interval: seconds between looks for new snapshots in streaming mode.
        max_rounds: end after this many rounds.

    Returns:
        A :class:`CompactSummary`.
    """
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    display = resolve_progress(progress)
    own_runner = runner is None
    active_runner: TaskRunner = runner or LocalRunner(parallelism, processes)
    try:
        job = CompactJob(
            table,
            partitions=partitions,
            streaming=mode == "streaming",
            order_strategy=order_strategy,
            order_by=order_by,
            runner=active_runner,
            progress=display,
        )
        return job.run(stop, poll_interval=poll_interval, max_rounds=max_rounds)
    finally:
        if own_runner and isinstance(active_runner, LocalRunner):
            active_runner.close()
