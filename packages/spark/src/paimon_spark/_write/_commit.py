"""The driver's side of a write: the tasks' messages made one commit, or their files deleted.

The driver commits through the table's :class:`~paimon_core.table.CommitPipeline`, as ``Table.append``
does: with ``precommit-compact = true`` it first merges the small files of all the tasks (tasks never do),
and after an append an unaware-bucket table runs its compaction coordinator unless ``write-only``. An
aborted job deletes the files of its
finished tasks (unless a commit of them is found, after an unknown commit outcome), and a failed commit
deletes the merged files the same way. A streaming query keeps one pipeline between its micro-batches
(:func:`query_pipeline`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from paimon_core.manifest import IndexFileMeta
from paimon_core.redaction import get_logger
from paimon_core.table import CommitMessage, CommitPipeline, Table
from paimon_spark._options import SourceConfig
from paimon_spark._write._consolidate import consolidate, full_compaction_due

__all__ = ["abort_uncommitted", "commit_tasks", "query_pipeline"]

logger = get_logger(__name__)

_QUERIES_KEPT = 16  # pipelines of streaming queries kept per process, the least recently used dropped
_query_pipelines: OrderedDict[tuple[str, str, int], CommitPipeline] = OrderedDict()
_query_pipelines_lock = threading.Lock()


def query_pipeline(table: Table, commit_user: str) -> CommitPipeline:
    """The commit pipeline of a streaming query's micro-batches into ``table``, kept between them.

    Spark runs every commit of a query in one long-lived Python process but hands it a new writer object
    each time (docs/architecture.md); the pipeline's after-commit coordinator plans from the snapshots since the
    last batch only while it lives on. A new schema (an ALTER between batches) starts a new pipeline.
    """
    key = (table.path, commit_user, table.schema.id)
    with _query_pipelines_lock:
        pipeline = _query_pipelines.get(key)
        if pipeline is None:
            pipeline = _query_pipelines[key] = CommitPipeline(table)
            while len(_query_pipelines) > _QUERIES_KEPT:
                _query_pipelines.popitem(last=False)
        _query_pipelines.move_to_end(key)
        return pipeline


def abort_uncommitted(config: SourceConfig, messages: list[CommitMessage]) -> None:
    """Delete the files of uncommitted messages, unless they turn out to be committed after all."""
    if not messages:
        return
    table = config.open_table()
    names = {f.file_name for m in messages for f in m.new_files}
    live = {e.file.file_name for e in table.live_entries()}
    if names & live:
        logger.warning("not deleting files of an aborted write of %s: they were committed", table.identifier)
        return
    table.new_commit().abort(messages)


def commit_tasks(
    config: SourceConfig,
    table: Table,
    tasks: list[list[CommitMessage]],
    commit: Callable[[list[CommitMessage]], Sequence[int] | None],
    *,
    overwrite: bool = False,
    commit_number: int = 1,
    shuffled: bool = False,
    pipeline: CommitPipeline | None = None,
) -> None:
    """Commit the messages of all the tasks of one write, ``precommit-compact`` applied once over them,
    then (not after an overwrite) the table's after-commit compaction.

    Unless the tasks wrote one bucket each (``shuffled``: they compacted their buckets themselves), a
    primary-key table's messages are first made one commit (:func:`._consolidate.consolidate`:
    one hash index file per dynamic bucket, each written bucket compacted once, as commit number
    ``commit_number`` of a writer). The merge replaces (and deletes) small task files, so Spark's ``abort``
    with the tasks' messages no longer reaches the merged files: a failed commit deletes them here, unless
    they turn out committed. ``pipeline`` runs precommit and after-commit compaction (a fresh one of
    ``table`` when None).
    """
    given = [m for task in tasks for m in task]
    messages, superseded = given, list[IndexFileMeta]()
    if table.has_primary_key and not shuffled:
        full = full_compaction_due(table, commit_number)
        consolidated = consolidate(table, tasks, overwrite=overwrite, full_compaction=full)
        messages, superseded = consolidated.messages, consolidated.superseded
    if pipeline is None:
        pipeline = CommitPipeline(table)
    try:
        merged = pipeline.precommit(messages)
    except BaseException:
        if messages != given:
            abort_uncommitted(config, [m for m in messages if m not in given])
        raise
    try:
        created = commit(merged)
    except BaseException:
        if merged != given:
            try:
                abort_uncommitted(config, merged)
            except Exception:  # the commit's own error matters more; leftovers are orphans
                logger.warning("could not clean up the merged files of a failed commit to %s",
                               table.identifier, exc_info=True)  # fmt: skip
        raise
    for index in superseded:  # the tasks' own index files of buckets merged into one
        try:
            table.storage.delete(table.index_path(index.file_name))
        except OSError:
            logger.warning("could not delete superseded index file %s", index.file_name, exc_info=True)
    if not overwrite:
        pipeline.after_commit(list(created or ()))
