"""The ``paimon`` Python data source: batch and streaming reads and writes, Arrow only.

Spark runs every method in a different Python process: the data source and the readers' ``partitions`` on
the driver side, ``read``/``write`` on executors, the writers' ``commit``/``abort`` on the driver again.
Nothing is shared but what is pickled: each side re-opens the table from a :class:`SourceConfig`.

Writes: each task writes Parquet files with a :class:`paimon_core.TableWrite` and returns picklable commit
messages; the driver commits once. With ``precommit-compact = true`` the driver first merges the small files
of all the tasks (:func:`paimon_core.compact.precommit_compact`; tasks never do). A failed task deletes its
files; an aborted job deletes the files of its finished tasks (unless a commit of them is found, after an
unknown commit outcome), and a failed commit deletes the merged files the same way.

Primary-key tables: rows are upserts, or take their kind from a ``rowkind`` column the table does not have.
Spark does not route rows to a Python data source's tasks by bucket, so several tasks may write one bucket:
they write level-0 files only and the driver compacts each written bucket once before the commit
(:mod:`paimon_spark._consolidate`). Streaming ``complete`` mode is an overwrite of the whole result per
micro-batch; Spark refuses ``update`` mode for Python data sources (:func:`paimon_spark.write_stream` has it).

Streaming: offsets are :class:`paimon_core.StreamPosition` dicts (snapshot id, full read or delta, files
done). The sink commits with the streaming query id as commit user and the batch id as commit identifier,
so a batch replayed after a crash is recognised and never committed twice (nor merged again: the check
comes before ``precommit-compact``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    Filter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StringType, StructField, StructType

from paimon_core import options as opts
from paimon_core.compact import precommit_compact
from paimon_core.errors import ConfigError, SchemaError, TableNotFoundError, WarehouseNotFoundError
from paimon_core.manifest import IndexFileMeta
from paimon_core.redaction import get_logger
from paimon_core.schema import SchemaManager
from paimon_core.schema_change import SchemaChange, apply_changes, widening_refusal
from paimon_core.table import (
    AuditLogTable,
    CommitMessage,
    DataSplit,
    DataView,
    StreamPosition,
    StreamScan,
    SystemTable,
    Table,
    TableRead,
    conform_batch,
    plan_batch,
)
from paimon_core.table.mergetree import INSERT
from paimon_core.types import from_arrow_type
from paimon_spark._consolidate import consolidate, full_compaction_due
from paimon_spark._filters import Term, to_terms
from paimon_spark._options import SourceConfig
from paimon_spark._tasks import PICKLED_SCHEMA, collect_pickled, pickled_batch
from paimon_spark._types import from_spark_schema, to_spark_schema
from paimon_spark._upsert import KIND_COLUMN, kinds_of_text, write_kinds

__all__ = ["ROW_KIND_COLUMN", "PaimonDataSource", "WriteInput", "write_in_place"]

logger = get_logger(__name__)

SOURCE_NAME = "paimon"
ROW_KIND_COLUMN = "rowkind"
"""The row kind column of changelog reads (``$audit_log``, ``read.changelog``) and of writes."""


# --- reading -------------------------------------------------------------------------------------------------


class PaimonPartition(InputPartition):
    """Splits read by one Spark task, with the filter terms to apply to their rows."""

    def __init__(self, index: int, splits: Sequence[DataSplit], terms: Sequence[Term]) -> None:
        super().__init__(index)
        self.splits = tuple(splits)
        self.terms = list(terms)


def _partitions(splits: Sequence[DataSplit], terms: Sequence[Term]) -> list[PaimonPartition]:
    return [PaimonPartition(i, (split,), terms) for i, split in enumerate(splits)]


def _bucket_partitions(splits: Sequence[DataSplit]) -> list[PaimonPartition]:
    """A primary-key table's changes: every split of one bucket in one Spark partition, in commit order, so
    that the changes of a key in one micro-batch reach one task in the order they were made (a sink or a
    shuffle keeps the order of the rows of one task; rows of different tasks have none)."""
    groups: dict[tuple[bytes, int], list[DataSplit]] = {}
    for split in splits:  # planned snapshot by snapshot
        groups.setdefault((split.partition, split.bucket), []).append(split)
    return [PaimonPartition(i, group, ()) for i, group in enumerate(groups.values())]


def _changelog_view(config: SourceConfig, table: Table) -> AuditLogTable | None:
    """The view a read returns rows of with their row kinds: ``$audit_log``, or a table read with
    ``read.changelog``; None for other reads."""
    if isinstance(table, AuditLogTable):
        return table
    if config.read_changelog and isinstance(table, Table):
        return AuditLogTable(table)
    return None


def _data_table(config: SourceConfig, table: Table) -> Table:
    """The table whose snapshots a read plans: a view's data table, or the table itself."""
    if isinstance(table, DataView):
        if not isinstance(table, AuditLogTable):
            raise ConfigError(f"{table.identifier} is read whole by one task; it has no splits to plan")
        return table.data
    return table


def _spark_schema(config: SourceConfig, table: Table) -> StructType:
    changelog = _changelog_view(config, table)
    if changelog is not None:
        kind = StructField(ROW_KIND_COLUMN, StringType(), nullable=False)
        return StructType([kind, *to_spark_schema(changelog.data.schema.fields).fields])
    if isinstance(table, DataView):
        return to_spark_schema(table.data.schema.fields)
    return to_spark_schema(table.schema.fields)


def _new_read(config: SourceConfig, columns: list[str], terms: Sequence[Term]) -> TableRead:
    table = config.open_table()
    changelog = _changelog_view(config, table)
    if changelog is not None:
        return changelog.new_read(columns)
    return table.new_read(columns=columns, filter=list(terms) or None)


def _read_partition(
    config: SourceConfig, schema: StructType, partition: PaimonPartition
) -> Iterator[pa.RecordBatch]:
    if not partition.splits:
        return
    read = _new_read(config, schema.fieldNames(), partition.terms)
    # Spark checks each batch against exactly this schema (nullability included).
    target = to_arrow_schema(schema, timezone="UTC")
    for batch in read.to_batches(partition.splits):
        if batch.num_rows:
            yield batch if batch.schema.equals(target) else batch.cast(target, safe=False)


def _read_whole(table: Table) -> bool:
    """Whether a batch read of ``table`` is one task reading it whole (metadata tables, ``$ro``)."""
    if isinstance(table, DataView):
        return not isinstance(table, AuditLogTable)
    return isinstance(table, SystemTable)


class PaimonBatchReader(DataSourceReader):
    """Batch scan of one snapshot (``scan.*`` options resolve which), one Spark partition per split."""

    def __init__(self, config: SourceConfig, schema: StructType) -> None:
        self.config = config
        self.schema = schema
        self.terms: list[Term] = []

    def partitions(self) -> Sequence[InputPartition]:
        table = self.config.open_table()
        if _read_whole(table):
            return [PaimonPartition(0, (), ())]  # metadata: read whole by one task
        splits = plan_batch(_data_table(self.config, table), self.terms or None)
        return _partitions(splits, self.terms) or [PaimonPartition(0, (), ())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PaimonPartition)
        table = self.config.open_table()
        if _read_whole(table):
            target = to_arrow_schema(self.schema, timezone="UTC")
            for batch in table.to_batches(columns=self.schema.fieldNames()):
                yield batch.cast(target, safe=False)
            return
        yield from _read_partition(self.config, self.schema, partition)


class PaimonPushdownReader(PaimonBatchReader):
    """The batch reader with ``pushFilters`` (only usable when Spark's filter pushdown flag is on)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        table = self.config.open_table()
        if isinstance(table, DataView) or _changelog_view(self.config, table) is not None:
            yield from filters  # views and changelog reads filter in Spark
            return
        accepted, rejected = to_terms(filters, table.schema.fields)
        self.terms = accepted
        yield from rejected


# --- writing -------------------------------------------------------------------------------------------------


@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    """What one task wrote, sent to the driver."""

    messages: list[CommitMessage]
    query_id: str | None = None


@dataclass(frozen=True)
class WriteInput:
    """How a DataFrame's columns go into the table, decided on the driver before any task runs.

    Attributes:
        columns: the DataFrame's columns that hold table data.
        row_kinds: the DataFrame's column of row kinds (``rowkind``, not a table column), or None.
        missing: the table's columns the DataFrame lacks, written as nulls (``mergeSchema`` only, as Java
            Paimon fills them).
    """

    columns: tuple[str, ...]
    row_kinds: str | None = None
    missing: tuple[str, ...] = ()


def _flatten(messages: Sequence[WriterCommitMessage | None]) -> list[CommitMessage]:
    return [m for message in messages if isinstance(message, PaimonCommitMessage) for m in message.messages]


def _per_task(messages: Sequence[WriterCommitMessage | None]) -> list[list[CommitMessage]]:
    return [list(m.messages) for m in messages if isinstance(m, PaimonCommitMessage) and m.messages]


def _write_task(
    config: SourceConfig,
    batches: Iterator[pa.RecordBatch],
    plan: WriteInput | None = None,
    overwrite: bool = False,
) -> list[CommitMessage]:
    """One task's batches written into new files; its commit messages (its files deleted on failure)."""
    table = config.open_table()
    if plan is not None and plan.missing:
        batches = with_null_columns(batches, table.arrow_schema, plan.missing)
    if table.has_primary_key and plan is not None:
        # Other tasks may write the same buckets: write level-0 files only, the driver compacts (_consolidate).
        writing = table.copy({opts.WRITE_ONLY.key: "true"})
        names = [*plan.columns, *plan.missing]
        return write_kinds(writing, names, _with_kinds(batches, plan), overwrite=overwrite)
    writer = table.new_write()
    try:
        for batch in batches:
            writer.write(batch)
        return writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        writer.close()


def with_null_columns(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, names: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """The batches with columns ``names`` of ``schema`` added, all null."""
    for batch in batches:
        for name in names:
            batch = batch.append_column(schema.field(name), pa.nulls(batch.num_rows, schema.field(name).type))
        yield batch


def write_in_place(data: DataFrame, config: SourceConfig) -> list[CommitMessage]:
    """Rows written into an append table by the Spark tasks that hold them; the messages of all the tasks."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield pickled_batch(_write_task(config, batches))

    return collect_pickled(data.mapInArrow(write, PICKLED_SCHEMA))


def _with_kinds(batches: Iterator[pa.RecordBatch], plan: WriteInput) -> Iterator[pa.RecordBatch]:
    """The batches with a :data:`KIND_COLUMN`: from the row kind column (checked first), else ``+I``."""
    for batch in batches:
        if plan.row_kinds is None:
            kinds = pa.array(np.full(batch.num_rows, INSERT, dtype=np.int8))
        else:
            kinds = kinds_of_text(batch.column(plan.row_kinds), plan.row_kinds)
            batch = batch.drop_columns([plan.row_kinds])
        yield batch.append_column(KIND_COLUMN, kinds)


def _abort(config: SourceConfig, messages: list[CommitMessage]) -> None:
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


def _commit_all(
    config: SourceConfig,
    table: Table,
    tasks: list[list[CommitMessage]],
    commit: Callable[[list[CommitMessage]], Any],
    *,
    overwrite: bool = False,
    commit_number: int = 1,
    shuffled: bool = False,
) -> None:
    """Commit the messages of all the tasks of one write, ``precommit-compact`` applied once over them.

    Unless the tasks wrote one bucket each (``shuffled``: they compacted their buckets themselves), a
    primary-key table's messages are first made one commit (:func:`~paimon_spark._consolidate.consolidate`:
    one hash index file per dynamic bucket, each written bucket compacted once, as commit number
    ``commit_number`` of a writer). The merge replaces (and deletes) small task files, so Spark's ``abort``
    with the tasks' messages no longer reaches the merged files: a failed commit deletes them here, unless
    they turn out committed.
    """
    given = [m for task in tasks for m in task]
    messages, superseded = given, list[IndexFileMeta]()
    if table.has_primary_key and not shuffled:
        full = full_compaction_due(table, commit_number)
        consolidated = consolidate(table, tasks, overwrite=overwrite, full_compaction=full)
        messages, superseded = consolidated.messages, consolidated.superseded
    try:
        merged = precommit_compact(table, messages)
    except BaseException:
        if messages != given:
            _abort(config, [m for m in messages if m not in given])
        raise
    try:
        commit(merged)
    except BaseException:
        if merged != given:
            try:
                _abort(config, merged)
            except Exception:  # the commit's own error matters more; leftovers are orphans
                logger.warning("could not clean up the merged files of a failed commit to %s",
                               table.identifier, exc_info=True)  # fmt: skip
        raise
    for index in superseded:  # the tasks' own index files of buckets merged into one
        try:
            table.storage.delete(table.index_path(index.file_name))
        except OSError:
            logger.warning("could not delete superseded index file %s", index.file_name, exc_info=True)


def _ensure_table(config: SourceConfig, schema: StructType) -> tuple[Table, WriteInput]:
    """Open the table, or create it from the DataFrame's schema (identifier form only), and check that
    the DataFrame fits it."""
    row_kinds = _row_kind_column(config, schema)
    data_schema = StructType([f for f in schema.fields if f.name != row_kinds])
    try:
        table = config.open_table()
    except (TableNotFoundError, WarehouseNotFoundError):
        if config.is_path:
            raise TableNotFoundError(
                f"{config.location}: create the table first, or write to it by identifier with a warehouse"
            ) from None
        # As Paimon's Spark writes do: a write by identifier creates what it needs, the warehouse included.
        catalog = config.catalog_handle(create=True)
        database = config.location.rpartition(".")[0] or "default"
        catalog.create_database(database, exist_ok=True)
        creation = {k: v for k, v in config.table_options.items() if not k.startswith(("scan.", "consumer"))}
        arrow = from_spark_schema(data_schema)
        keys = {k.lower() for k in config.primary_keys}  # a key column holds no nulls
        arrow = pa.schema([f.with_nullable(False) if f.name.lower() in keys else f for f in arrow])
        catalog.create_table(
            config.location,
            arrow,
            partition_keys=config.partition_keys,
            primary_keys=config.primary_keys,
            options=creation,
            exist_ok=True,
        )
        table = config.open_table()
    if isinstance(table, (SystemTable, DataView)):
        raise ConfigError(f"{table.identifier} is a system table: it cannot be written")
    if row_kinds is not None and not table.has_primary_key:
        raise SchemaError(
            f"cannot write to {table.identifier}: column {row_kinds!r} holds row kinds, which only a "
            "primary-key table takes (an append table keeps every row as inserted)"
        )
    missing: tuple[str, ...] = ()
    if config.merge_schema:
        table = _merge_schema(config, table, data_schema)
        missing = _absent_columns(table, data_schema)
    _check_keys(table, data_schema)
    _check_fits(table, data_schema, missing)
    return table, WriteInput(tuple(data_schema.fieldNames()), row_kinds, missing)


def _absent_columns(table: Table, schema: StructType) -> tuple[str, ...]:
    """The table's columns the DataFrame lacks: with ``mergeSchema`` they are written as nulls (as Java
    Paimon does), unless one of them takes no nulls."""
    given = {n.lower() for n in schema.fieldNames()}
    absent = [f for f in table.arrow_schema if f.name.lower() not in given]
    required = [f.name for f in absent if not f.nullable and f.name not in table.schema.primary_keys]
    if required:
        raise SchemaError(
            f"cannot write to {table.identifier}: the data lacks columns {required}, which take no nulls "
            "(mergeSchema fills absent columns with nulls)"
        )
    return tuple(f.name for f in absent)


def _row_kind_column(config: SourceConfig, schema: StructType) -> str | None:
    """The DataFrame's ``rowkind`` column when it is not a column of the table (which a table with
    ``rowkind.field`` names itself)."""
    found = next((f.name for f in schema.fields if f.name.lower() == ROW_KIND_COLUMN), None)
    if found is None:
        return None
    try:
        table = config.open_table()
    except TableNotFoundError:
        return found  # a table created from this DataFrame gets no rowkind column
    return None if found.lower() in (n.lower() for n in table.field_names) else found


def _check_keys(table: Table, schema: StructType) -> None:
    """A primary-key table needs the key of every row."""
    names = {n.lower() for n in schema.fieldNames()}
    missing = [k for k in table.schema.primary_keys if k.lower() not in names]
    if missing:
        raise SchemaError(
            f"cannot write to {table.identifier}: the data lacks its primary-key columns {missing} "
            f"(primary key {list(table.schema.primary_keys)})"
        )


def _merge_schema(config: SourceConfig, table: Table, schema: StructType) -> Table:
    """Add the DataFrame's new columns (nullable, at the end) and widen the types it widened."""
    incoming = from_spark_schema(schema)
    current = table.arrow_schema
    changes = []
    for column in incoming:
        if column.name not in current.names:
            changes.append(SchemaChange.add_column(column.name, column.type))
        elif current.field(column.name).type != column.type:
            old, new = (from_arrow_type(t) for t in (current.field(column.name).type, column.type))
            if widening_refusal(old, new) is None:  # narrower data is cast on write instead
                changes.append(
                    SchemaChange.update_column_type(column.name, column.type, keep_nullability=True)
                )
    if not changes:
        return table
    logger.info("merging the schema of %s: %s", table.identifier, changes)
    SchemaManager(table.storage, table.path).commit_change(lambda latest: apply_changes(latest, changes))
    return config.open_table()


def _check_fits(table: Table, schema: StructType, missing: Sequence[str] = ()) -> None:
    """Fail on the driver, before any task runs, when the data (with the ``missing`` columns filled with
    nulls) cannot be written to the table."""
    names = [*schema.fieldNames(), *missing]
    lowered = {n.lower(): n for n in table.field_names}
    if sorted(n.lower() for n in names) == sorted(lowered) and names != table.field_names:
        wrong = [n for n in names if n not in table.field_names]
        if wrong:
            raise SchemaError(f"columns {wrong} differ in case from the table's {table.field_names}")
    empty = pa.RecordBatch.from_pylist([], schema=to_arrow_schema(schema, timezone="UTC"))
    (empty,) = with_null_columns(iter([empty]), table.arrow_schema, missing)
    try:
        conform_batch(empty, table.arrow_schema)
    except SchemaError as exc:
        raise SchemaError(f"cannot write to {table.identifier}: {exc}") from None


class PaimonBatchWriter(DataSourceArrowWriter):
    """``df.write.format("paimon").mode("append" | "overwrite")``: one commit per job.

    Into a primary-key table the rows are upserts, or carry their kind in a ``rowkind`` column; the tasks
    write level-0 files and the driver compacts (:mod:`paimon_spark._consolidate`).
    """

    def __init__(self, config: SourceConfig, schema: StructType, overwrite: bool) -> None:
        self.config = config
        self.overwrite = overwrite
        self.plan = _ensure_table(config, schema)[1]

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return PaimonCommitMessage(_write_task(self.config, iterator, self.plan, self.overwrite))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        table = self.config.open_table()
        committer = table.new_commit()
        tasks = _per_task(messages)
        if self.overwrite:
            dynamic, spec = self.config.dynamic_overwrite, self.config.overwrite_partition
            _commit_all(
                self.config,
                table,
                tasks,
                lambda m: committer.overwrite(m, spec, dynamic=dynamic),
                overwrite=True,
            )
        else:
            _commit_all(self.config, table, tasks, committer.commit)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _abort(self.config, _flatten(messages))


class PaimonStreamWriter(DataSourceStreamArrowWriter):
    """Structured Streaming sink, exactly-once through (query id, batch id).

    Spark gives it ``append`` mode, or ``complete`` mode as an overwrite of the whole result each
    micro-batch (primary-key tables only); Spark refuses ``update`` mode for Python data sources.
    """

    def __init__(self, config: SourceConfig, schema: StructType, overwrite: bool) -> None:
        self.config = config
        self.overwrite = overwrite
        table, self.plan = _ensure_table(config, schema)
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
        return PaimonCommitMessage(_write_task(self.config, iterator, self.plan, self.overwrite), query_id)

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
        if self.overwrite:
            dynamic = self.config.dynamic_overwrite
            _commit_all(
                self.config,
                table,
                tasks,
                lambda m: committer.overwrite(m, dynamic=dynamic, commit_identifier=batchId),
                overwrite=True,
                commit_number=batchId + 1,
            )
        else:
            _commit_all(
                self.config, table, tasks, lambda m: committer.commit(m, batchId), commit_number=batchId + 1
            )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _abort(self.config, _flatten(messages))


def commit_user_for_query(query_id: str) -> str:
    """The Paimon commit user of a streaming query: stable across restarts from the same checkpoint."""
    return f"spark-{query_id}"


# --- streaming reads -----------------------------------------------------------------------------------------


def _position(offset: dict[str, Any]) -> StreamPosition:
    return StreamPosition.from_json(offset)


def _offset(position: StreamPosition) -> dict[str, Any]:
    return {"snapshot": position.snapshot_id, "full": position.full, "file": position.file_index}


class PaimonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reads: the starting snapshot (per ``scan.mode``), then what each new snapshot adds (an
    append table's new files, a primary-key table's changes as its ``changelog-producer`` makes them).

    A primary-key table streamed plainly gives its upserts (``+I``, ``+U``) and leaves retractions out, as
    ``Table.stream(row_kind=False)`` does; ``$audit_log`` or ``read.changelog = true`` put a ``rowkind``
    column first and keep every change.
    """

    def __init__(self, config: SourceConfig, schema: StructType) -> None:
        self.config = config
        self.schema = schema
        self._scan: StreamScan | None = None
        self._initial: StreamPosition | None = None
        self._target: StreamPosition | None = None
        self._last_end: StreamPosition | None = None
        self._recorded: StreamPosition | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors only need the config and schema; the scan holds caches and storage handles.
        return {"config": self.config, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"], state["schema"])  # type: ignore[misc]

    @property
    def scan(self) -> StreamScan:
        if self._scan is None:
            table = self.config.open_table()
            if isinstance(table, (SystemTable, DataView)) and not isinstance(table, AuditLogTable):
                raise ConfigError(f"{table.identifier} cannot be read as a stream (only $audit_log can)")
            self._scan = StreamScan(_data_table(self.config, table))
        return self._scan

    def initialOffset(self) -> dict[str, Any]:
        return _offset(self._starting_position())

    def _starting_position(self) -> StreamPosition:
        """Resolved once: Spark asks ``initialOffset`` again when it runs the first micro-batch, and a start
        resolved anew (the latest snapshot by then) would be past the end it planned that batch to, which
        lost the whole starting read. (A restart before the first batch committed resolves it anew in a new
        reader: :meth:`StreamScan.restarted_start` reads that range from where it ends.)"""
        if self._initial is None:
            self._initial = self.scan.starting_position()
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.config.max_files_per_trigger is not None:
            return ReadMaxFiles(self.config.max_files_per_trigger)
        if self.config.max_rows_per_trigger is not None:
            return ReadMaxRows(self.config.max_rows_per_trigger)
        return ReadAllAvailable()

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        if start is not None:
            begin = _position(start)
            # Spark plans the next batch only after the previous one (ending at ``start``) is committed
            # to its checkpoint: record the consumer progress now rather than wait for ``commit``.
            self._record(begin)
        else:  # Spark before 4.2 calls latestOffset() without arguments
            begin = self._last_end or self._starting_position()
        limited = limit is not None and not isinstance(limit, ReadAllAvailable)
        end = self.scan.advance(
            begin,
            max_files=self.config.max_files_per_trigger if limited else None,
            max_rows=self.config.max_rows_per_trigger if limited else None,
        )
        if self._target is not None and end > self._target:
            end = max(begin, self._target)
        self._last_end = end
        return _offset(end)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.scan.latest_position()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        splits = self.scan.plan(_position(start), _position(end))
        if self.scan.primary_key:
            return _bucket_partitions(splits)
        return _partitions(splits, ())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PaimonPartition)
        yield from _read_partition(self.config, self.schema, partition)

    def commit(self, end: dict[str, Any]) -> None:
        self._record(_position(end))

    def _record(self, position: StreamPosition) -> None:
        if self._recorded is None or position > self._recorded:
            self.scan.record_progress(position)
            self._recorded = position


# --- the data source -----------------------------------------------------------------------------------------


class PaimonDataSource(DataSource):
    """``spark.read.format("paimon")`` and friends; register with :func:`paimon_spark.register`.

    ``register`` makes a subclass carrying the session's ``paimon.*`` conf and the filter pushdown flag,
    because the data source runs in Python workers that cannot see the session.
    """

    session_conf: ClassVar[dict[str, str]] = {}
    filter_pushdown: ClassVar[bool] = False

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.config = SourceConfig.parse(dict(options), self.session_conf)

    def schema(self) -> StructType:
        return _spark_schema(self.config, self.config.open_table())

    def reader(self, schema: StructType) -> DataSourceReader:
        cls = PaimonPushdownReader if self.filter_pushdown else PaimonBatchReader
        return cls(self.config, schema)

    def writer(self, schema: StructType, overwrite: bool) -> PaimonBatchWriter:
        return PaimonBatchWriter(self.config, schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return PaimonStreamReader(self.config, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> PaimonStreamWriter:
        return PaimonStreamWriter(self.config, schema, overwrite)
