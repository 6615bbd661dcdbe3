"""Compaction inside writers, on by default as in Paimon (off with ``write-only = true``).

* Bucketed tables compact per bucket in :meth:`TableWrite.prepare_commit`
  (:class:`~paimon_core.compact.InlineBucketCompaction`).
* Unaware-bucket tables run the coordinator after each commit of a :class:`~paimon_core.table.Table`
  handle (:meth:`Table.append`): :class:`InlineCompactor` keeps the coordinator across commits, reading only
  new snapshots, like the coordinator inside Paimon's Flink write job.
* ``precommit-compact`` merges the small new files (append tables) or changelog files (primary-key
  tables) of one commit before it lands (:func:`precommit_compact`), once over the messages of all the
  commit's writers: ``Table.append`` and the Spark sink's driver call it; writers never do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.compact._changelog import precommit_compact_changelog
from paimon_core.compact._coordinator import CoordinatorOptions
from paimon_core.compact._job import CompactJob, Progress
from paimon_core.compact._runner import LocalRunner, delete_outputs
from paimon_core.compact._task import rewrite_files
from paimon_core.manifest import DataFileMeta, FileSource
from paimon_core.redaction import get_logger
from paimon_core.table import CommitMessage

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["InlineCompactor", "inline_compaction_enabled", "precommit_compact", "precommit_enabled"]

logger = get_logger(__name__)


def inline_compaction_enabled(table: TableStore) -> bool:
    """Writers compact unless ``write-only``."""
    return not table.options.get_option(opts.WRITE_ONLY)


class InlineCompactor:
    """The unaware-bucket coordinator of one table handle, run after each of its commits."""

    def __init__(self, table: TableStore) -> None:
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


def precommit_enabled(table: TableStore) -> bool:
    """Whether :func:`precommit_compact` rewrites anything for this table: ``precommit-compact`` is set and
    the table is an unaware-bucket append table or a primary-key table."""
    if not table.options.get_option(opts.PRECOMMIT_COMPACT):
        return False
    return bool(table.schema.primary_keys) or table.bucket == -1


def _groups(files: Sequence[DataFileMeta], options: CoordinatorOptions) -> list[list[DataFileMeta]]:
    """Cut files, in commit order, into groups that reach the target size or ``compaction.max.file-num``."""
    groups: list[list[DataFileMeta]] = []
    current: list[DataFileMeta] = []
    size = 0
    most = options.max_file_num
    for file in files:
        current.append(file)
        size += file.file_size
        if size >= options.target_file_size or (most is not None and len(current) >= max(most, 2)):
            groups.append(current)
            current, size = [], 0
    if current:
        groups.append(current)
    return [g for g in groups if len(g) > 1]  # a lone file is committed as it is


def precommit_compact(table: TableStore, messages: Sequence[CommitMessage]) -> list[CommitMessage]:
    """Paimon's ``precommit-compact``: merge the small new files of one commit before the commit lands.

    Call it once on the messages of *all* the writers of a commit, just before committing them:
    :meth:`Table.append <paimon_core.table.Table.append>` and ``overwrite`` do, and so does the Spark sink on
    the driver. Writers (:meth:`TableWrite.prepare_commit <paimon_core.table.TableWrite.prepare_commit>`)
    never do, so no file is rewritten twice. It returns the messages unchanged unless
    ``precommit-compact = true`` (``write-only`` does not matter: as in Paimon, this is not the writers'
    inline compaction) and the table is an unaware-bucket append table or a primary-key table. Of a
    primary-key table only the changelog files are merged, by concatenation
    (:func:`~paimon_core.compact._changelog.precommit_compact_changelog`).

    Append tables: per partition, the new files below the small-file size (``target-file-size`` x
    ``compaction.small-file-ratio``) are taken in commit order into groups; a group closes when it reaches
    ``target-file-size`` or holds ``compaction.max.file-num`` files. Each group of two or more files is
    rewritten into APPEND files of ``target-file-size``. The result is still a plain APPEND.

    Commit (or abort) the returned messages, and retry a commit with them, never with the given ones: once
    every group is rewritten, the replaced files are deleted (no snapshot ever listed them). When a rewrite
    fails, what was written is deleted and the given messages stay valid.
    """
    if not precommit_enabled(table):
        return list(messages)
    if table.schema.primary_keys:
        return precommit_compact_changelog(table, messages)
    options = CoordinatorOptions.of(table)
    grouped: dict[bytes, list[CommitMessage]] = {}
    for message in messages:
        grouped.setdefault(message.partition, []).append(message)
    outputs: dict[bytes, list[DataFileMeta]] = {}
    replaced: dict[bytes, list[DataFileMeta]] = {}
    try:
        for partition, group in grouped.items():
            small = [f for m in group for f in m.new_files if f.file_size < options.small_file_size]
            for files in _groups(small, options):
                written = rewrite_files(table, partition, 0, files, FileSource.APPEND)
                outputs.setdefault(partition, []).extend(written)
                replaced.setdefault(partition, []).extend(files)
    except BaseException:
        delete_outputs(table, [CommitMessage(p, 0, -1, new_files=tuple(f)) for p, f in outputs.items()])
        raise
    if not replaced:
        return list(messages)
    delete_outputs(table, [CommitMessage(p, 0, -1, new_files=tuple(f)) for p, f in replaced.items()])
    logger.debug("precommit-compact of %s rewrote %d small files into %d", table.identifier,
                 sum(map(len, replaced.values())), sum(map(len, outputs.values())))  # fmt: skip
    gone = {f.file_name for files in replaced.values() for f in files}
    result: list[CommitMessage] = []
    for partition, group in grouped.items():
        for index, message in enumerate(group):
            kept = tuple(f for f in message.new_files if f.file_name not in gone)
            if index == 0:
                kept += tuple(outputs.get(partition, ()))
            result.append(replace(message, new_files=kept))
    return [m for m in result if not m.is_empty()]
