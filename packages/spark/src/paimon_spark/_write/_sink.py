"""The ``paimon`` data source's writers: ``df.write.format("paimon")`` and ``writeStream.format("paimon")``.

Each task writes files (:mod:`._task`) and returns picklable commit messages; the driver commits once
(:mod:`._commit`). Primary-key tables: rows are upserts, or take their kind from a ``rowkind`` column the
table does not have. Spark does not route rows to a Python data source's tasks by bucket, so several tasks
may write one bucket: they write level-0 files only and the driver compacts each written bucket once before
the commit (:mod:`._consolidate`). Streaming ``complete`` mode is an overwrite of the whole result per
micro-batch; Spark refuses ``update`` mode for Python data sources (:func:`paimon_spark.write_stream` has it).

The streaming sink commits with the streaming query id as commit user and the batch id as commit
identifier, so a batch replayed after a crash is recognised and never committed twice (nor merged again:
the check comes before ``precommit-compact``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from paimon_core.errors import ConfigError
from paimon_core.redaction import get_logger
from paimon_core.table import CommitMessage
from paimon_spark._options import SourceConfig
from paimon_spark._write._commit import abort_uncommitted, commit_tasks, query_pipeline
from paimon_spark._write._prepare import ensure_table
from paimon_spark._write._task import write_task

__all__ = ["PaimonBatchWriter", "PaimonCommitMessage", "PaimonStreamWriter", "commit_user_for_query"]

logger = get_logger(__name__)


@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    """What one task wrote, sent to the driver."""

    messages: list[CommitMessage]
    query_id: str | None = None


def _flatten(messages: Sequence[WriterCommitMessage | None]) -> list[CommitMessage]:
    return [m for message in messages if isinstance(message, PaimonCommitMessage) for m in message.messages]


def _per_task(messages: Sequence[WriterCommitMessage | None]) -> list[list[CommitMessage]]:
    return [list(m.messages) for m in messages if isinstance(m, PaimonCommitMessage) and m.messages]


class PaimonBatchWriter(DataSourceArrowWriter):
    """``df.write.format("paimon").mode("append" | "overwrite")``: one commit per job.

    Into a primary-key table the rows are upserts, or carry their kind in a ``rowkind`` column; the tasks
    write level-0 files and the driver compacts (:mod:`._consolidate`).
    """

    def __init__(self, config: SourceConfig, schema: StructType, overwrite: bool) -> None:
        self.config = config
        self.overwrite = overwrite
        self.plan = ensure_table(config, schema)[1]

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return PaimonCommitMessage(write_task(self.config, iterator, self.plan, self.overwrite))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        table = self.config.open_table()
        committer = table.new_commit()
        tasks = _per_task(messages)
        if self.overwrite:
            dynamic, spec = self.config.dynamic_overwrite, self.config.overwrite_partition
            commit_tasks(
                self.config,
                table,
                tasks,
                lambda m: committer.overwrite(m, spec, dynamic=dynamic),
                overwrite=True,
            )
        else:
            commit_tasks(self.config, table, tasks, committer.commit)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        abort_uncommitted(self.config, _flatten(messages))


class PaimonStreamWriter(DataSourceStreamArrowWriter):
    """Structured Streaming sink, exactly-once through (query id, batch id).

    Spark gives it ``append`` mode, or ``complete`` mode as an overwrite of the whole result each
    micro-batch (primary-key tables only); Spark refuses ``update`` mode for Python data sources.
    """

    def __init__(self, config: SourceConfig, schema: StructType, overwrite: bool) -> None:
        self.config = config
        self.overwrite = overwrite
        table, self.plan = ensure_table(config, schema)
        if overwrite and not table.has_primary_key:  # only complete mode truncates a streaming sink
            raise ConfigError(
                f"complete output mode into {table.identifier}, an append table: an aggregation's results "
                "change, which only a primary-key table can take (create it with the grouping columns as "
                "its primary key, option 'primary-key'), or use append mode",
                "outputMode",
            )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        query_id = context.getLocalProperty("sql.streaming.queryId") if context is not None else None
        return PaimonCommitMessage(write_task(self.config, iterator, self.plan, self.overwrite), query_id)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        query_ids = {m.query_id for m in messages if isinstance(m, PaimonCommitMessage) and m.query_id}
        flat = _flatten(messages)
        if not query_ids:
            if flat:
                raise RuntimeError("streaming write tasks did not report the query id; refusing to commit")
            return
        if len(query_ids) > 1:
            raise RuntimeError(f"one micro-batch written by several queries: {sorted(query_ids)}")
        table = self.config.open_table()
        committer = table.new_commit(commit_user_for_query(query_ids.pop()))
        if committer.is_committed(batchId):
            logger.info("batch %s already committed to %s; dropping its rewrite", batchId, table.identifier)
            committer.abort(flat)
            return
        tasks = _per_task(messages)
        pipeline = query_pipeline(table, committer.commit_user)
        if self.overwrite:
            dynamic = self.config.dynamic_overwrite
            commit_tasks(
                self.config,
                table,
                tasks,
                lambda m: committer.overwrite(m, dynamic=dynamic, commit_identifier=batchId),
                overwrite=True,
                commit_number=batchId + 1,
                pipeline=pipeline,
            )
        else:
            commit_tasks(
                self.config,
                table,
                tasks,
                lambda m: committer.commit(m, batchId),
                commit_number=batchId + 1,
                pipeline=pipeline,
            )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        abort_uncommitted(self.config, _flatten(messages))


def commit_user_for_query(query_id: str) -> str:
    """The Paimon commit user of a streaming query: stable across restarts from the same checkpoint."""
    return f"spark-{query_id}"
