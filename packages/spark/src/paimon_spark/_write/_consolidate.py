"""One commit from the files that several Spark tasks wrote into a primary-key table's buckets.

Paimon counts on one writer per (partition, bucket) per commit: it numbers the bucket's records, compacts
the bucket's merge tree and, with dynamic buckets (``bucket = -1``), places the partition's new keys and
writes the bucket's hash index. A Python data source cannot ask Spark for a distribution of its input
(Spark's ``PythonWrite`` is a plain ``Write``, not a ``RequiresDistributionAndOrdering``), so the tasks of
``df.write.format("paimon")`` and of ``writeStream.format("paimon")`` get the rows as the DataFrame is
partitioned, and several of them may write one bucket. Those tasks therefore only write level-0 files, as
``write-only`` writers do (two compactions of one bucket would both rewrite its old files: an aggregation
table would count their rows twice). The driver, which gets every task's messages, then makes them one
commit:

* a dynamic bucket that took new keys from several tasks gets one hash index file holding all of their
  hashes, which replaces the bucket's old file; a key hash that two tasks placed in different buckets is
  refused (:class:`SplitKeyError`: the key would live in two buckets), and nothing is committed;
* unless the table is ``write-only``, every written bucket is compacted once, here, as a writer of its own
  would have compacted after its flush (universal compaction; a full one every
  ``full-compaction.delta-commits`` commits), so the ``lookup`` and ``full-compaction`` changelog
  producers, first-row tables and deletion vectors see what one writer would give them.

Records of one key written by two tasks carry overlapping sequence numbers, so which of them wins is not
defined, as Spark gives the rows of different partitions no order anyway. :func:`paimon_spark.write` and
:func:`paimon_spark.write_stream` shuffle rows by bucket instead, and their writers compact on the executors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from paimon_core import options as opts
from paimon_core.errors import CommitConflictError, PaimonError
from paimon_core.manifest import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    DataFileMeta,
    IndexFileMeta,
    ManifestNamer,
)
from paimon_core.redaction import get_logger
from paimon_core.table import POSTPONE_BUCKET, CommitMessage, MergeTreeCompactTask, Table
from paimon_core.table.mergetree import read_hash_index

__all__ = ["Consolidated", "SplitKeyError", "consolidate", "full_compaction_due"]

logger = get_logger(__name__)

_Bucket = tuple[bytes, int]
# A hash index file is the bucket's 32-bit key hashes, big-endian, nothing else (primary-key-tables.md).
_HASH_DTYPE = np.dtype(">i4")


class SplitKeyError(PaimonError, ValueError):
    """Two Spark tasks of one write put the same new key hash into different buckets of a dynamic-bucket
    table (that key would live in two buckets). Attributes: ``partition`` (its values), ``buckets``."""

    def __init__(self, message: str, partition: dict[str, object], buckets: tuple[int, int]) -> None:
        super().__init__(message)
        self.partition = partition
        self.buckets = buckets


@dataclasses.dataclass(frozen=True)
class Consolidated:
    """What to commit, and the index files it no longer needs once it is committed."""

    messages: list[CommitMessage]
    superseded: list[IndexFileMeta]


def full_compaction_due(table: Table, commit_number: int) -> bool:
    """Whether the ``commit_number``-th commit (from 1) of a writer runs a full compaction."""
    every = table.options.full_compaction_delta_commits()
    return every is not None and commit_number % every == 0


def consolidate(
    table: Table, tasks: Sequence[Sequence[CommitMessage]], *, overwrite: bool, full_compaction: bool
) -> Consolidated:
    """The messages of one commit from the messages of each task (see the module docstring).

    Args:
        tasks: each task's messages (level-0 files; a dynamic bucket's index files).
        overwrite: the commit replaces the buckets' data: compaction starts from the new files alone.
        full_compaction: compact every written bucket fully.

    Raises:
        SplitKeyError: two tasks placed one new key hash in different buckets.
        CommitConflictError: tasks of one write restored different index files for one bucket.

    On failure, every file this wrote is deleted; the tasks' messages stay valid.
    """
    written: list[CommitMessage] = []
    try:
        messages: list[CommitMessage] = [m for task in tasks for m in task]
        superseded: list[IndexFileMeta] = []
        if table.bucket == -1:
            messages, merged, superseded = _merge_hash_indexes(table, tasks)
            written += merged
        # a postpone-bucket table's writes wait unmerged in bucket -2 until its compaction job runs
        if not table.options.get_option(opts.WRITE_ONLY) and table.bucket != POSTPONE_BUCKET:
            compactions = _compact_written(table, messages, overwrite=overwrite, full=full_compaction)
            written += compactions
            messages += compactions
    except BaseException:
        table.delete_new_files(written)
        raise
    return Consolidated(messages, superseded)


# --- dynamic buckets: one hash index file per bucket -------------------------------------------------------


def _merge_hash_indexes(
    table: Table, tasks: Sequence[Sequence[CommitMessage]]
) -> tuple[list[CommitMessage], list[CommitMessage], list[IndexFileMeta]]:
    """(messages, messages of the index files written here, the tasks' index files they replace)."""
    messages = [m for task in tasks for m in task]
    changed: dict[bytes, set[int]] = {}  # partition -> the tasks that added keys to it
    files: dict[_Bucket, list[tuple[int, CommitMessage]]] = {}
    for number, task in enumerate(tasks):
        for message in task:
            if _hash_files(message.new_index_files):
                changed.setdefault(message.partition, set()).add(number)
                files.setdefault((message.partition, message.bucket), []).append((number, message))
    shared = {p for p, numbers in changed.items() if len(numbers) > 1}
    if not shared:
        return messages, [], []
    cache: dict[str, npt.NDArray[np.int32]] = {}

    def hashes(meta: IndexFileMeta) -> npt.NDArray[np.int32]:
        if meta.file_name not in cache:
            cache[meta.file_name] = read_hash_index(table, meta)
        return cache[meta.file_name]

    replacement: dict[_Bucket, CommitMessage] = {}
    superseded: list[IndexFileMeta] = []
    namer = ManifestNamer()
    for partition in shared:
        buckets = {b: owners for (p, b), owners in files.items() if p == partition}
        _refuse_split_keys(table, partition, buckets, hashes)
        for bucket, owners in buckets.items():
            if len(owners) < 2:
                continue
            previous = {tuple(f.file_name for f in _hash_files(m.deleted_index_files)) for _, m in owners}
            if len(previous) > 1:
                raise CommitConflictError(
                    f"tasks of one write to {table.identifier} started from different hash index files of "
                    f"bucket {bucket} of partition {table.partition_values(partition)}: another writer "
                    "committed new keys meanwhile; write again"
                )
            news = [f for _, m in owners for f in _hash_files(m.new_index_files)]
            union = np.unique(np.concatenate([hashes(f) for f in news]))
            merged = _write_hash_index(table, namer("index"), union)
            replaced = _hash_files(owners[0][1].deleted_index_files)
            replacement[(partition, bucket)] = CommitMessage(
                partition, bucket, table.bucket, new_index_files=(merged,), deleted_index_files=replaced
            )
            superseded += news
    gone = {f.file_name for f in superseded}
    result = [_without_index_files(m, gone) for m in messages]
    result += replacement.values()
    written = list(replacement.values())
    logger.info("%s: merged the hash index files of %d buckets written by several tasks", table.identifier,
                len(replacement))  # fmt: skip
    return result, written, superseded


def _refuse_split_keys(
    table: Table,
    partition: bytes,
    buckets: dict[int, list[tuple[int, CommitMessage]]],
    hashes: Callable[[IndexFileMeta], npt.NDArray[np.int32]],
) -> None:
    """Refuse a new key hash that two tasks placed in different buckets of the partition."""
    placed: list[npt.NDArray[np.int32]] = []
    owner: list[npt.NDArray[np.int32]] = []
    for bucket, owners in buckets.items():
        for _, message in owners:
            old = [hashes(f) for f in _hash_files(message.deleted_index_files)]
            for new in _hash_files(message.new_index_files):
                added = np.setdiff1d(hashes(new), np.concatenate([np.empty(0, np.int32), *old]))
                placed.append(added)
                owner.append(np.full(len(added), bucket, np.int32))
    if not placed:
        return
    all_hashes = np.concatenate(placed)
    all_buckets = np.concatenate(owner)
    order = np.lexsort((all_buckets, all_hashes))
    sorted_hashes, sorted_buckets = all_hashes[order], all_buckets[order]
    split = (sorted_hashes[1:] == sorted_hashes[:-1]) & (sorted_buckets[1:] != sorted_buckets[:-1])
    if split.any():
        at = int(np.flatnonzero(split)[0])
        pair = (int(sorted_buckets[at]), int(sorted_buckets[at + 1]))
        values = table.partition_values(partition)
        raise SplitKeyError(
            f"cannot commit this write to {table.identifier}: two Spark tasks put new keys with the same "
            f"hash into buckets {pair[0]} and {pair[1]} of partition {values} (a dynamic-bucket table keeps "
            "a key in one bucket). Write with paimon_spark.write / paimon_spark.write_stream, which give "
            "each partition one writer, or repartition the DataFrame by the primary key first",
            values,
            pair,
        )


def _hash_files(files: Sequence[IndexFileMeta]) -> tuple[IndexFileMeta, ...]:
    return tuple(f for f in files if f.index_type == HASH_INDEX)


def _without_index_files(message: CommitMessage, gone: set[str]) -> CommitMessage:
    if not any(f.file_name in gone for f in message.new_index_files):
        return message
    return dataclasses.replace(
        message,
        new_index_files=tuple(f for f in message.new_index_files if f.index_type != HASH_INDEX),
        deleted_index_files=tuple(f for f in message.deleted_index_files if f.index_type != HASH_INDEX),
    )


def _write_hash_index(table: Table, name: str, hashes: npt.NDArray[np.int32]) -> IndexFileMeta:
    data = hashes.astype(_HASH_DTYPE).tobytes()
    table.storage.write_bytes(table.index_path(name), data, overwrite=False)
    return IndexFileMeta(HASH_INDEX, name, len(data), len(hashes))


# --- compaction of the written buckets --------------------------------------------------------------------


def _compact_written(
    table: Table, messages: Sequence[CommitMessage], *, overwrite: bool, full: bool
) -> list[CommitMessage]:
    """Compact each bucket that got new files once, from its live files (none for an overwrite) and them."""
    new: dict[_Bucket, list[DataFileMeta]] = {}
    totals: dict[_Bucket, int] = {}
    for message in messages:
        if message.new_files:
            key = (message.partition, message.bucket)
            new.setdefault(key, []).extend(message.new_files)
            totals[key] = message.total_buckets
    if not new:
        return []
    live: dict[_Bucket, list[DataFileMeta]] = {}
    vectors: dict[_Bucket, list[IndexFileMeta]] = {}
    snapshot = None if overwrite else table.latest_snapshot()
    if snapshot is not None:
        for entry in table.live_entries(snapshot.id):
            if (entry.partition, entry.bucket) in new:
                live.setdefault((entry.partition, entry.bucket), []).append(entry.file)
        for index in table.index_entries(snapshot):
            if index.file.index_type == DELETION_VECTORS_INDEX and (index.partition, index.bucket) in new:
                vectors.setdefault((index.partition, index.bucket), []).append(index.file)
    done: list[CommitMessage] = []
    try:
        for (partition, bucket), files in new.items():
            task = MergeTreeCompactTask(
                partition,
                bucket,
                totals[(partition, bucket)],
                (*live.get((partition, bucket), ()), *files),
                full,
                tuple(vectors.get((partition, bucket), ())),
            )
            message = task.run(table)
            if not message.is_empty():
                done.append(message)
    except BaseException:
        table.delete_new_files(done)
        raise
    return done
