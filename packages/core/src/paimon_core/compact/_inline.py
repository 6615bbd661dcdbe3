"""Compaction inside writers, on by default as in Paimon (off with ``write-only = true``).

* Bucketed tables compact per bucket in :meth:`TableWrite.prepare_commit`
  (:class:`~paimon_core.compact.InlineBucketCompaction`).
* Unaware-bucket tables run the coordinator after each commit of a :class:`~paimon_core.table.Table`
  handle (:meth:`Table.append`): :class:`InlineCompactor` keeps the coordinator across commits, reading only
  new snapshots, like the coordinator inside Paimon's Flink write job.
* ``precommit-compact`` merges one commit's small new files before they are committed
  (:func:`precommit_compact`); engines with many writers call it on the messages of all writers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.compact._job import CompactJob, Progress
from paimon_core.compact._runner import LocalRunner, delete_outputs
from paimon_core.compact._task import rewrite_files
from paimon_core.manifest import DataFileMeta, FileSource
from paimon_core.table import CommitMessage

if TYPE_CHECKING:
    from paimon_core.table import Table

__all__ = ["InlineCompactor", "inline_compaction_enabled", "precommit_compact"]

logger = logging.getLogger(__name__)


def inline_compaction_enabled(table: Table) -> bool:
    """Writers compact unless ``write-only``."""
    return not table.options.get_option(opts.WRITE_ONLY)


class InlineCompactor:
    """The unaware-bucket coordinator of one table handle, run after each of its commits."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.job = CompactJob(table, streaming=True, runner=LocalRunner(1), progress=Progress(False))
        self.failure: str | None = None  # the error of the last round, while rounds keep failing

    def after_commit(self) -> list[int]:
        """Plan against the new snapshots and commit what the coordinator emits.

        The data is committed already, so a failing compaction only logs: it is retried after the next
        commit (a lost race re-plans from the latest snapshot). A failure is reported once, with its
        traceback; while later rounds fail the same way they log at debug level only.
        """
        try:
            created = self.job.run_round().snapshots
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
            if failure != self.failure:
                logger.warning("inline compaction of %s failed; it is retried after each commit, and reported "
                               "again only if it fails differently", self.table.identifier, exc_info=True)  # fmt: skip
            else:
                logger.debug("inline compaction of %s still fails: %s", self.table.identifier, failure)
            self.failure = failure
            if self.job.coordinator is not None:
                self.job.coordinator.restart()
            return []
        if self.failure is not None:
            logger.info("inline compaction of %s works again", self.table.identifier)
            self.failure = None
        return created


def _bins(files: Sequence[DataFileMeta], target: int) -> list[list[DataFileMeta]]:
    bins: list[list[DataFileMeta]] = []
    current: list[DataFileMeta] = []
    size = 0
    for file in files:
        current.append(file)
        size += file.file_size
        if size >= target:
            bins.append(current)
            current, size = [], 0
    if current:
        bins.append(current)
    return bins


def precommit_compact(table: Table, messages: Sequence[CommitMessage]) -> list[CommitMessage]:
    """Merge the small new files of uncommitted messages, per partition, before they are committed.

    Paimon's ``precommit-compact``: small files (below ``target-file-size``) of each partition are grouped
    in commit order until a group reaches the target size, each group of two or more is rewritten, and the
    originals are deleted (they were never visible). The result is still a plain APPEND. Only unaware-bucket
    tables are merged (a bucket's writer order must be kept otherwise); other messages pass unchanged.
    """
    if table.bucket != -1:
        return list(messages)
    target = table.options.target_file_size(bool(table.schema.primary_keys))
    grouped: dict[bytes, list[CommitMessage]] = {}
    for message in messages:
        grouped.setdefault(message.partition, []).append(message)
    result: list[CommitMessage] = []
    for partition, group in grouped.items():
        small = [f for m in group for f in m.new_files if f.file_size < target]
        bins = [b for b in _bins(small, target) if len(b) > 1]
        if not bins:
            result.extend(group)
            continue
        replaced = {f.file_name for b in bins for f in b}
        outputs: list[DataFileMeta] = []
        try:
            for files in bins:
                outputs.extend(rewrite_files(table, partition, 0, files, FileSource.APPEND))
        except BaseException:
            delete_outputs(table, [CommitMessage(partition, 0, -1, new_files=tuple(outputs))])
            raise
        originals = [f for m in group for f in m.new_files if f.file_name in replaced]
        delete_outputs(table, [CommitMessage(partition, 0, -1, new_files=tuple(originals))])
        for index, message in enumerate(group):
            kept = tuple(f for f in message.new_files if f.file_name not in replaced)
            if index == 0:
                kept += tuple(outputs)
            result.append(
                CommitMessage(
                    message.partition,
                    message.bucket,
                    message.total_buckets,
                    new_files=kept,
                    deleted_files=message.deleted_files,
                    compact_before=message.compact_before,
                    compact_after=message.compact_after,
                )
            )
    return [m for m in result if not m.is_empty()]
