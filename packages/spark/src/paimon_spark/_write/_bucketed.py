"""Writing DataFrames with one writer per bucket: :func:`write` (batch) and :func:`write_stream`.

The ``paimon`` data source cannot choose how Spark distributes the rows it writes (see
:mod:`._consolidate`), so into a primary-key table its tasks write level-0 files only and the
driver compacts. These helpers shuffle first, as Paimon's own Spark writer does: a fixed-bucket table's
rows by partition and Paimon's bucket of their bucket key, a dynamic-bucket table's by partition (its
bucket assigner must see every new key of a partition). Each (partition, bucket) then has one writer,
which numbers its records in order and compacts its bucket on the executor; the driver commits once
(:mod:`._upsert`). Append tables need no shuffle: their rows are written where they are.

A ``rowkind`` column that the table does not have gives each row its kind (``+I``, ``-U``, ``+U``,
``-D``); a bad value fails the job in the shuffle's first stage, before any writer starts.

:func:`write_stream` is ``foreachBatch`` with that write and the sink's exactly-once commit: commit user
``spark-<query id>``, commit identifier the batch id, so a batch Spark runs again after a restart is
recognised and skipped. It supports ``update`` mode, which Spark refuses for Python data sources, and
``complete`` mode, which replaces the table's content every micro-batch.

Over Spark Connect the ``foreachBatch`` function runs in a Python process of the server, with a session of
its own that has neither the query's id (a classic session reads it from the query thread's local
properties) nor the query among its active streams. So :func:`write_stream` names the query and, in the
first micro-batch, finds that name among the active queries of the session that started it; the id is
the checkpoint's, the same after a restart.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from paimon_core.errors import ConfigError
from paimon_core.redaction import get_logger
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER
from paimon_core.table import CommitMessage, Table, TableCommit
from paimon_core.table.mergetree import INSERT
from paimon_spark._errors import paimon_errors
from paimon_spark._options import SPARK_OVERWRITE_MODE_CONF, SourceConfig
from paimon_spark._tasks import is_connect
from paimon_spark._types import to_spark_type
from paimon_spark._write._commit import abort_uncommitted, commit_tasks
from paimon_spark._write._prepare import WriteInput, ensure_table
from paimon_spark._write._sink import commit_user_for_query
from paimon_spark._write._task import write_in_place
from paimon_spark._write._upsert import KIND_COLUMN, kind_column, write_records

__all__ = ["write", "write_stream"]

logger = get_logger(__name__)

_MODES = ("append", "overwrite")
_OUTPUT_MODES = ("append", "update", "complete")
_QUERY_ID = "sql.streaming.queryId"
_CONNECT_QUERY_IDS: dict[tuple[str, str], str] = {}  # (the query run's session, query name) -> query id


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
    paimon, plan = ensure_table(config, df.schema)
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
    query_name: str | None = None,
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
        query_name: the streaming query's name. Over Spark Connect the query is found by its name (see the
            module docs): name it here, not with ``queryName`` on the result; by default it is
            ``paimon-<random hex>`` there, and unnamed on classic sessions.

    Raises:
        ConfigError: an unknown output mode; ``update`` or ``complete`` into an append table.
        RuntimeError: (in the query, over Spark Connect) the query was renamed after ``write_stream``.
        SchemaError: as for :func:`write`.
    """
    if output_mode not in _OUTPUT_MODES:
        raise ConfigError(
            f"output_mode must be one of {', '.join(_OUTPUT_MODES)}, got {output_mode!r}", "output_mode"
        )
    config = _config(df.sparkSession, table, warehouse, options)
    paimon, plan = ensure_table(config, df.schema)
    if output_mode != "append" and not paimon.has_primary_key:
        raise ConfigError(
            f"{output_mode} output mode into {paimon.identifier}, an append table: an aggregation's results "
            "change, which only a primary-key table can take (create it with the grouping columns as its "
            "primary key, option 'primary-key'), or use append mode",
            "output_mode",
        )
    overwrite = output_mode == "complete"
    session = df.sparkSession
    owner: str | None = None  # over Spark Connect: the id of the session that starts the query
    if is_connect(session):
        owner = str(session.session_id)  # type: ignore[attr-defined]  # a Connect session has one
        query_name = query_name or f"paimon-{uuid.uuid4().hex}"
    name = query_name

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        query_id = _query_id(batch, owner, name)
        target = config.open_table()
        committer = target.new_commit(commit_user_for_query(query_id))
        if committer.is_committed(batch_id):
            logger.info("batch %s already committed to %s; not writing it again", batch_id, target.identifier)
            # Still run it: its stateful operators commit their state for the batch (Spark checks that).
            batch.write.format("noop").mode("overwrite").save()
            return
        _write_and_commit(batch, config, target, plan, committer, overwrite=overwrite, identifier=batch_id)

    writer = df.writeStream.outputMode(output_mode).foreachBatch(write_batch)
    return writer.queryName(query_name) if query_name else writer


def _query_id(batch: DataFrame, owner: str | None, name: str | None) -> str:
    """The id of the streaming query whose micro-batch ``batch`` is: stable across restarts."""
    if owner is None:  # classic: foreachBatch runs on the query's thread, whose local properties hold it
        query_id = batch.sparkSession.sparkContext.getLocalProperty(_QUERY_ID)
        if not query_id:
            raise RuntimeError("foreachBatch ran outside a streaming query: no query id to commit as")
        return str(query_id)
    assert name is not None
    run = str(batch.sparkSession.session_id)  # type: ignore[attr-defined]  # one per run of the query
    if (run, name) not in _CONNECT_QUERY_IDS:
        _CONNECT_QUERY_IDS[run, name] = _find_connect_query(owner, name)
    return _CONNECT_QUERY_IDS[run, name]


def _find_connect_query(owner: str, name: str) -> str:
    """Over Spark Connect, in the server's foreachBatch process: the id of the query named ``name`` among
    the active queries of session ``owner``."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    url = os.environ.get("SPARK_CONNECT_LOCAL_URL")  # set by the server for its foreachBatch processes
    if not url:
        raise RuntimeError("foreachBatch over Spark Connect ran outside the server: no query id to commit as")
    # A handle on the user's session; never stopped, which would end that session.
    started_by = ConnectSession.builder.remote(f"{url};session_id={owner}").create()
    found = [query.id for query in started_by.streams.active if query.name == name]
    if not found:
        raise RuntimeError(
            f"no active streaming query named {name!r}: over Spark Connect, write_stream finds its query by "
            "name; give the name as write_stream(query_name=...), not with queryName()"
        )
    return str(found[0])


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
    types = {f.name: f.type for f in table.schema.fields}
    columns += [F.lit(None).cast(to_spark_type(types[c])).alias(c) for c in plan.missing]  # mergeSchema
    if table.has_primary_key:
        kind = kind_column(plan.row_kinds) if plan.row_kinds is not None else F.lit(INSERT).cast("tinyint")
        messages = write_records(
            table, config, df.select(*columns, kind.alias(KIND_COLUMN)), overwrite=overwrite
        )
    else:
        messages = write_in_place(df.select(*columns), config)
    number = BATCH_COMMIT_IDENTIFIER if identifier is None else identifier
    created: list[int] = []

    def commit(merged: list[CommitMessage]) -> list[int]:
        if overwrite:
            dynamic = config.dynamic_overwrite
            created.extend(committer.overwrite(merged, dynamic=dynamic, commit_identifier=number))
        else:
            created.extend(committer.commit(merged, number))
        return created

    try:
        commit_tasks(config, table, [messages], commit, shuffled=True)
    except BaseException:
        abort_uncommitted(config, messages)
        raise
    return created
