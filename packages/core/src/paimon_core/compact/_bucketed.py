"""Compaction of bucketed append tables (``bucket = N``): one sliding window per (partition, bucket).

See docs/append-compaction.md. The files of a bucket queue up by minimum sequence number. A window slides over the queue: once it
holds ``compaction.min.file-num`` files (or ``compaction.max.file-num``, when that is set and smaller: Paimon
0.9/1.0's cap) they are compacted; if it reaches twice the target size first, its oldest file drops out (a
big file never joins a compaction of small ones). Outputs keep the sequence order, so the bucket's read order
is kept. A full compaction (the dedicated batch job) drops the leading files that already have the target
size and rewrites the rest when small files outnumber big ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.manifest import DataFileMeta

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["FULL_COMPACT_MIN_FILE", "BucketCompactManager", "InlineBucketCompaction", "pick_full_compaction"]

#: A full compaction of a bucket needs at least this many files (Java ``FULL_COMPACT_MIN_FILE``).
FULL_COMPACT_MIN_FILE = 3


def _by_sequence(files: Iterable[DataFileMeta]) -> list[DataFileMeta]:
    return sorted(files, key=lambda f: (f.min_sequence_number, f.file_name))


def pick_full_compaction(
    files: Sequence[DataFileMeta], target_size: int, force_rewrite_all: bool = False
) -> list[DataFileMeta] | None:
    """The files a full compaction of one bucket rewrites, or None when it would change nothing.

    Leading files (in sequence order) that already have the target size stay; the rest is rewritten when it
    holds at least :data:`FULL_COMPACT_MIN_FILE` files and more small files than big ones.
    ``compaction.force-rewrite-all-files`` rewrites everything.
    """
    queue = _by_sequence(files)
    if force_rewrite_all:
        return queue or None
    if len(queue) < FULL_COMPACT_MIN_FILE:
        return None
    start = 0
    while start < len(queue) and queue[start].file_size >= target_size:
        start += 1
    rest = queue[start:]
    big = sum(1 for f in rest if f.file_size >= target_size)
    small = len(rest) - big
    if small > big and len(rest) >= FULL_COMPACT_MIN_FILE:
        return rest
    return None


@dataclass
class BucketCompactManager:
    """The compaction queue of one (partition, bucket) of a bucketed append table.

    Args:
        min_file_num: ``compaction.min.file-num``.
        target_size: ``target-file-size``.
        queue: the files waiting, restored from the bucket's live files and fed with new ones.
        max_file_num: ``compaction.max.file-num``: a window of this many files is compacted too (at least
            two files: rewriting one file alone gains nothing).
    """

    min_file_num: int
    target_size: int
    queue: list[DataFileMeta] = field(default_factory=list)
    max_file_num: int | None = None

    def __post_init__(self) -> None:
        self.queue = _by_sequence(self.queue)

    @property
    def trigger(self) -> int:
        """The window size that triggers a compaction."""
        if self.max_file_num is None:
            return self.min_file_num
        return min(self.min_file_num, max(self.max_file_num, 2))

    def add_new_file(self, file: DataFileMeta) -> None:
        self.queue.append(file)
        self.queue = _by_sequence(self.queue)

    def pick_compact_before(self) -> list[DataFileMeta] | None:
        """Slide the window over the queue; the files it picks leave the queue.

        Files that slid out of the window because it grew to twice the target size leave the queue too:
        they are big enough on their own (Java drops them the same way).
        """
        window: list[DataFileMeta] = []
        total = 0
        trigger = self.trigger
        for index, file in enumerate(self.queue):
            window.append(file)
            total += file.file_size
            if len(window) >= trigger:
                self.queue = self.queue[index + 1 :]
                return window
            if total >= 2 * self.target_size:
                total -= window.pop(0).file_size
        # Nothing picked: the files dropped from the window's tail are gone; the window waits for more.
        self.queue = window
        return None

    def notify_result(self, after: Sequence[DataFileMeta]) -> None:
        """A compaction finished: its last output, when still small, waits for the next one."""
        if after and after[-1].file_size < self.target_size:
            self.add_new_file(after[-1])


class InlineBucketCompaction:
    """The inline compaction a :class:`~paimon_core.table.TableWrite` of a bucketed table runs per bucket.

    The first bucket touched restores the live files of every bucket from the latest snapshot (one scan);
    each ``prepare_commit`` then queues the bucket's new files and compacts when the window fills.
    """

    def __init__(self, table: TableStore) -> None:
        self.table = table
        self._min_file_num = table.options.get_option(opts.COMPACTION_MIN_FILE_NUM)
        self._max_file_num = table.options.get_option(opts.COMPACTION_MAX_FILE_NUM)
        self._target = table.options.target_file_size(bool(table.schema.primary_keys))
        self._managers: dict[tuple[bytes, int], BucketCompactManager] = {}
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None

    def restore(self, restored: dict[tuple[bytes, int], list[DataFileMeta]]) -> None:
        """Hand over the live files per bucket (the writer reads them anyway to restore sequence numbers)."""
        if self._restored is None:
            self._restored = restored

    def _manager(self, partition: bytes, bucket: int) -> BucketCompactManager:
        key = (partition, bucket)
        manager = self._managers.get(key)
        if manager is None:
            if self._restored is None:
                self._restored = {}
                for entry in self.table.live_entries():
                    self._restored.setdefault((entry.partition, entry.bucket), []).append(entry.file)
            restored = self._restored.pop(key, [])
            manager = BucketCompactManager(
                self._min_file_num, self._target, list(restored), max_file_num=self._max_file_num
            )
            self._managers[key] = manager
        return manager

    def compact(
        self, partition: bytes, bucket: int, new_files: Sequence[DataFileMeta]
    ) -> tuple[tuple[DataFileMeta, ...], tuple[DataFileMeta, ...]]:
        """Queue ``new_files`` and run a compaction if the window fills: returns (before, after)."""
        from paimon_core.compact._task import rewrite_files

        manager = self._manager(partition, bucket)
        for file in new_files:
            manager.add_new_file(file)
        picked = manager.pick_compact_before()
        if not picked:
            return (), ()
        after = rewrite_files(self.table, partition, bucket, picked)
        manager.notify_result(after)
        return tuple(picked), tuple(after)
