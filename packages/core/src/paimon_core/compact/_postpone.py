"""Compacting a postpone-bucket table (``bucket = -2``): its postponed rows into real buckets.

See docs/primary-key-tables.md ("Postpone buckets"). Writers leave a partition's records unmerged in its
postpone bucket (``bucket-postpone/``, invisible to readers). The compaction, as Java Paimon's does:

* takes the partition's number of buckets from its real buckets' files (``_TOTAL_BUCKETS``), or
  ``postpone.default-bucket-num`` when it has none yet, so partitions may have different numbers;
* reads the postponed files in the order they were written (scan order, which is commit order; the files of
  one writer by creation time), gives each record the bucket Java's hash of its bucket key picks, and
  writes the records of each bucket, in that order, into the bucket's merge tree, which numbers them after
  the bucket's files and runs the compaction the tree asks for, with the table's merge engine;
* commits one COMPACT snapshot that removes the postponed files and adds the buckets' new files.

A task is one real bucket of one partition (the runner protocol: one commit message per task); it reads
all the postponed files of its partition and keeps the rows of its bucket. The job adds the message that
removes the postponed files, and commits all the messages of a round together or none of them: a postponed
file whose rows are in the new bucket files must go in the same snapshot, or its rows would be merged twice.
Appends meanwhile only add postponed files and never conflict; another compaction that removed some of the
postponed files first makes this commit fail its check, and the job re-plans.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_core import options as opts
from paimon_core.bucket import assign_buckets
from paimon_core.manifest import DataFileMeta, IndexFileMeta, ManifestEntry
from paimon_core.storage import join_path
from paimon_core.table import POSTPONE_BUCKET, CommitMessage, DataSplit
from paimon_core.table.mergetree import KeyValueTableRead, MergeTreeWriter, writer_prefix

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["PostponeCompactTask", "plan_postpone", "postpone_removals"]


@dataclass(frozen=True)
class PostponeCompactTask:
    """Move one partition's postponed rows of one real bucket into it (picklable).

    Attributes:
        partition, bucket, total_buckets: the real bucket and the partition's number of buckets.
        postponed: the partition's postponed files, in the order their records were written.
        bucket_files: the bucket's live files.
        deletion_files: the bucket's deletion-vector index files, from the snapshot of ``bucket_files``.
    """

    partition: bytes
    bucket: int
    total_buckets: int
    postponed: tuple[DataFileMeta, ...]
    bucket_files: tuple[DataFileMeta, ...] = ()
    deletion_files: tuple[IndexFileMeta, ...] = ()

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        """Every input file (for the job's check that its inputs are still live)."""
        return (*self.postponed, *self.bucket_files)

    @property
    def input_bytes(self) -> int:
        return sum(f.file_size for f in self.files)

    def run(self, table: TableStore) -> CommitMessage:
        tree = MergeTreeWriter(
            table,
            self.partition,
            self.bucket,
            table.bucket_dir(self.partition, self.bucket),
            self.bucket_files,
            True,  # a postpone table's writers never compact: the compaction does (Java: write-only false)
            self.deletion_files,
        )
        try:
            for values, kinds in self._records(table):
                tree.write(values, kinds)
                if tree.buffered_bytes > tree.buffer_limit:
                    tree.spill()  # write-buffer-size bounds the task as it bounds a writer
            tree.compact_picked()
            message = tree.prepare_commit()
        except BaseException:
            for path in tree.created_paths():
                table.storage.delete(path)
            raise
        finally:
            tree.close()
        if message is None:
            return CommitMessage(self.partition, self.bucket, self.total_buckets)
        return _as_compaction(table, message, self.total_buckets)

    def _records(self, table: TableStore) -> Iterable[tuple[pa.RecordBatch, pa.Array]]:
        """The postponed records of this bucket, in written order: (values, row kinds) batches."""
        if not self.postponed:
            return
        reader = KeyValueTableRead(table)
        directory = table.bucket_dir(self.partition, POSTPONE_BUCKET)
        split = DataSplit(0, self.partition, POSTPONE_BUCKET, directory, self.postponed)
        for file in self.postponed:
            records = reader.read_records(split, file)
            if records.num_rows == 0:
                continue
            values = records.drop_columns([records.column_names[0], records.column_names[1]])
            batch = values.combine_chunks().to_batches()[0] if values.num_rows else None
            if batch is None:
                continue
            buckets = assign_buckets(batch, table.bucket_keys, table.bucket_key_types, self.total_buckets)
            mine = buckets.to_numpy(zero_copy_only=False) == self.bucket
            if not mine.any():
                continue
            mask = pa.array(mine)
            kinds = records.column(1).combine_chunks().filter(mask)
            yield batch.filter(mask), kinds


def _as_compaction(table: TableStore, message: CommitMessage, total_buckets: int) -> CommitMessage:
    """A bucket writer's message as part of a COMPACT commit (Java's ``BucketFiles``): its new files are
    compaction outputs, and new files a compaction already replaced are deleted and left out."""
    new = {f.file_name: f for f in message.new_files}
    before = []
    for file in message.compact_before:
        if file.file_name in new:
            del new[file.file_name]
        else:
            before.append(file)
    after = [*new.values(), *message.compact_after]
    kept = {f.file_name for f in after}
    directory = table.bucket_dir(message.partition, message.bucket)
    for file in message.new_files:
        if file.file_name not in new and file.file_name not in kept:
            table.storage.delete(file.external_path or join_path(directory, file.file_name))
    return replace(
        message,
        total_buckets=total_buckets,
        new_files=(),
        compact_before=tuple(before),
        compact_after=tuple(after),
        changelog_files=(),
        compact_changelog_files=(*message.changelog_files, *message.compact_changelog_files),
        restored_from=None,
    )


def plan_postpone(
    table: TableStore,
    entries: Sequence[ManifestEntry],
    deletion_files: dict[tuple[bytes, int], list[IndexFileMeta]],
) -> list[PostponeCompactTask]:
    """The tasks of one round: every real bucket of each partition with postponed files, and (as Java) the
    real buckets of other partitions that have level-0 files."""
    postponed: dict[bytes, list[DataFileMeta]] = {}
    real: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    counts: dict[bytes, int] = {}
    for entry in entries:
        if entry.bucket == POSTPONE_BUCKET:
            postponed.setdefault(entry.partition, []).append(entry.file)
            continue
        real.setdefault((entry.partition, entry.bucket), []).append(entry.file)
        if entry.total_buckets > 0:
            counts[entry.partition] = entry.total_buckets
    default = table.options.get_option(opts.POSTPONE_DEFAULT_BUCKET_NUM)
    tasks = []
    for partition, files in postponed.items():
        total = counts.get(partition, default)
        ordered = tuple(_written_order(files))
        for bucket in range(total):
            key = (partition, bucket)
            tasks.append(
                PostponeCompactTask(
                    partition,
                    bucket,
                    total,
                    ordered,
                    tuple(real.get(key, ())),
                    tuple(deletion_files.get(key, ())),
                )
            )
    for (partition, bucket), files in real.items():
        if partition not in postponed and any(f.level == 0 for f in files):
            key = (partition, bucket)
            tasks.append(
                PostponeCompactTask(
                    partition, bucket, counts[partition], (), tuple(files), tuple(deletion_files.get(key, ()))
                )
            )
    return tasks


def _written_order(files: Sequence[DataFileMeta]) -> list[DataFileMeta]:
    """The files in scan order (commit order), the files of one writer among them by creation time (Java's
    order within a writer; its rolling files of one commit are already so)."""
    positions: dict[str, list[int]] = {}
    for index, file in enumerate(files):
        positions.setdefault(writer_prefix(file.file_name), []).append(index)
    ordered = list(files)
    for indices in positions.values():
        mine = sorted((files[i] for i in indices), key=lambda f: f.creation_time or 0)
        for index, file in zip(indices, mine, strict=True):
            ordered[index] = file
    return ordered


def postpone_removals(tasks: Sequence[object]) -> list[CommitMessage]:
    """The messages that remove the postponed files the (postpone) tasks moved, one per partition."""
    seen: dict[bytes, tuple[DataFileMeta, ...]] = {}
    for task in tasks:
        if isinstance(task, PostponeCompactTask) and task.postponed:
            seen[task.partition] = task.postponed
    return [
        CommitMessage(partition, POSTPONE_BUCKET, POSTPONE_BUCKET, compact_before=files)
        for partition, files in seen.items()
    ]
