"""Writing DataFrames with one writer per bucket: :func:`write` (batch) and :func:`write_stream`.

The ``paimon`` data source cannot choose how Spark distributes the rows it writes (see
:mod:`paimon_spark._consolidate`), so into a primary-key table its tasks write level-0 files only and the
driver compacts. These helpers shuffle first, as Paimon's own Spark writer does: a fixed-bucket table's
rows by partition and Paimon's bucket of their bucket key, a dynamic-bucket table's by partition (its
bucket assigner must see every new key of a partition). Each (partition, bucket) then has one writer,
which numbers its records in order and compacts its bucket on the executor; the driver commits once
(:mod:`paimon_spark._upsert`). Append tables need no shuffle: their rows are written where they are.

A ``rowkind`` column that the table does not have gives each row its kind (``+I``, ``-U``, ``+U``,
``-D``); a bad value fails the job in the shuffle's first stage, before any writer starts.

:func:`write_stream` is ``foreachBatch`` with that write and the sink's exactly-once commit: commit user
``spark-<query id>``, commit identifier the batch id, so a batch Spark runs again after a restart is
recognised and skipped. It supports ``update`` mode, which Spark refuses for Python data sources, and
``complete`` mode, which replaces the table's content every micro-batch.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from paimon_core.errors import ConfigError
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER
from paimon_core.table import CommitMessage, Table, TableCommit
from paimon_core.table.mergetree import INSERT
from paimon_spark._errors import paimon_errors
from paimon_spark._options import SPARK_OVERWRITE_MODE_CONF, SourceConfig
from paimon_spark._source import (
    WriteInput,
    _abort,
    _commit_all,
    _ensure_table,
    _write_task,
    commit_user_for_query,
)
from paimon_spark._upsert import KIND_COLUMN, kind_column, write_records

__all__ = ["write", "write_stream"]

logger = logging.getLogger(__name__)

_MODES = ("append", "overwrite")
_OUTPUT_MODES = ("append", "update", "complete")
_QUERY_ID = "sql.streaming.queryId"


@paimon_errors()
def write(
    df: DataFrame,
    table: str,
    *,
    warehouse: str | None = None,
    mode: str = "append",
    options: Mapping[str, Any] | None = None,
) -> list[int]:
    """Write ``df`` into ``table`` in one commit, each (partition, bucket) by one Spark task.

    Args:
        table: ``db.t`` (with ``warehouse``) or a table directory; created from ``df``'s schema when
            absent (with the ``partition-keys`` / ``primary-key`` options).
        mode: ``append`` (upserts into a primary-key table) or ``overwrite`` (the whole table, or with
            ``partitionOverwriteMode = dynamic`` the partitions in ``df``).
        options: data source options, as ``.option(...)`` takes them (dynamic table options, storage
            options, ``partitionOverwriteMode``...).

    Returns:
        The ids of the snapshots made (an APPEND or OVERWRITE, then the writers' COMPACT, if any).

    Raises:
        SchemaError: ``df`` lacks the primary-key columns or does not fit the table; a ``rowkind`` column
            into an append table.
        ConfigError: an unknown mode or option.
    """
    if mode not in _MODES:
        raise ConfigError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}", "mode")
    config = _config(df.sparkSession, table, warehouse, options)
    paimon, plan = _ensure_table(config, df.schema)
    committer = paimon.new_commit()
    overwrite = mode == "overwrite"
    return _write_and_commit(df, config, paimon, plan, committer, overwrite=overwrite, identifier=None)


def write_stream(
    df: DataFrame,
    table: str,
    *,
    warehouse: str | None = None,
    output_mode: str = "append",
    options: Mapping[str, Any] | None = None,
) -> DataStreamWriter:
    """``df.writeStream`` set up to write each micro-batch into ``table`` as :func:`write` does, exactly once.

    Set the checkpoint location and trigger on the result and ``start()`` it. The table is created (and
    ``df`` checked against it) now, before the query runs.

    Args:
        output_mode: ``append`` (upserts, or rows with a ``rowkind`` column), ``update`` (an aggregation's
            changed rows, upserted) or ``complete`` (an aggregation's whole result, replacing the table's
            content each micro-batch). ``update`` and ``complete`` need a primary-key table.
        table: as for :func:`write`.
        warehouse: as for :func:`write`.
        options: as for :func:`write`.

    Raises:
        ConfigError: an unknown output mode; ``update`` or ``complete`` into an append table.
        SchemaError: as for :func:`write`.
    """
    if output_mode not in _OUTPUT_MODES:
        raise ConfigError(
            f"output_mode must be one of {', '.join(_OUTPUT_MODES)}, got {output_mode!r}", "output_mode"
        )
    config = _config(df.sparkSession, table, warehouse, options)
    paimon, plan = _ensure_table(config, df.schema)
    if output_mode != "append" and not paimon.has_primary_key:
        raise ConfigError(
            f"{output_mode} output mode into {paimon.identifier}, an append table: an aggregation's results "
            "change, which only a primary-key table can take (create it with the grouping columns as its "
            "primary key, option 'primary-key'), or use append mode",
            "output_mode",
        )
    overwrite = output_mode == "complete"

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        query_id = batch.sparkSession.sparkContext.getLocalProperty(_QUERY_ID)
        if not query_id:
            raise RuntimeError("foreachBatch ran outside a streaming query: no query id to commit as")
        target = config.open_table()
        committer = target.new_commit(commit_user_for_query(query_id))
        if committer.is_committed(batch_id):
            logger.info("batch %s already committed to %s; not writing it again", batch_id, target.identifier)
            # Still run it: its stateful operators commit their state for the batch (Spark checks that).
            batch.write.format("noop").mode("overwrite").save()
            return
        _write_and_commit(batch, config, target, plan, committer, overwrite=overwrite, identifier=batch_id)

    return df.writeStream.outputMode(output_mode).foreachBatch(write_batch)


def _config(
    spark: SparkSession, table: str, warehouse: str | None, options: Mapping[str, Any] | None
) -> SourceConfig:
    given = {str(k): str(v) for k, v in (options or {}).items()}
    given["table"] = table
    if warehouse is not None:
        given["warehouse"] = warehouse
    conf = {
        str(k): str(v)
        for k, v in spark.conf.getAll.items()
        if str(k).startswith(("paimon.", "spark.paimon.")) or k == SPARK_OVERWRITE_MODE_CONF
    }
    return SourceConfig.parse(given, conf)


def _write_and_commit(
    df: DataFrame,
    config: SourceConfig,
    table: Table,
    plan: WriteInput,
    committer: TableCommit,
    *,
    overwrite: bool,
    identifier: int | None,
) -> list[int]:
    """Write on the executors, then commit once (an overwrite when ``overwrite``)."""
    named = {n.lower(): n for n in table.field_names}  # the table's spelling of each column
    columns = [F.col(f"`{c}`").alias(named.get(c.lower(), c)) for c in plan.columns]
    if table.has_primary_key:
        kind = kind_column(plan.row_kinds) if plan.row_kinds is not None else F.lit(INSERT).cast("tinyint")
        messages = write_records(
            table, config, df.select(*columns, kind.alias(KIND_COLUMN)), overwrite=overwrite
        )
    else:
        messages = _write_in_place(df.select(*columns), config)
    number = BATCH_COMMIT_IDENTIFIER if identifier is None else identifier
    created: list[int] = []

    def commit(merged: list[CommitMessage]) -> None:
        if overwrite:
            dynamic = config.dynamic_overwrite
            created.extend(committer.overwrite(merged, dynamic=dynamic, commit_identifier=number))
        else:
            created.extend(committer.commit(merged, number))

    try:
        _commit_all(config, table, [messages], commit, shuffled=True)
    except BaseException:
        _abort(config, messages)
        raise
    return created


def _write_in_place(data: DataFrame, config: SourceConfig) -> list[CommitMessage]:
    """An append table's rows, written by the tasks that hold them."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        messages = _write_task(config, batches)
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(messages)], pa.binary())], ["message"])

    rows = data.mapInArrow(write, "message binary").collect()
    return [message for row in rows for message in pickle.loads(row[0])]
