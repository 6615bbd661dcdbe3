"""Row-kind writes into primary-key tables on Spark: what ``merge_into``, ``delete_from`` and ``update`` write.

A primary-key table never rewrites a file to change a row: a changed row is written again as an upsert of
its key and a removed one as a ``-D`` record, and reads merge them with the old records. The records go
through core's :class:`~paimon_core.table.KeyValueTableWrite` on the executors, after a shuffle that gives
every (partition, bucket) exactly one writer, so that the bucket's sequence numbers keep the order of one
writer: fixed-bucket tables route by Paimon's bucket of the bucket key (computed with
:func:`paimon_core.bucket.assign_buckets`), dynamic-bucket tables by partition (the bucket assigner must
see every new key of a partition). The tasks return their commit messages and the driver commits them
once, an APPEND (writers that are not ``write-only`` compact as usual and add a COMPACT snapshot).

Which engines take which records follows Paimon (``PrimaryKeyTableUtils.validatePKUpsertDeletable`` and
the row-level operation checks of its Spark and Flink integrations): updates and merges need
``deduplicate`` or ``partial-update``; deletes need ``deduplicate``, ``partial-update`` with
``partial-update.remove-record-on-delete`` or ``partial-update.remove-record-on-sequence-group``, or
``aggregation`` with ``aggregation.remove-record-on-delete``.

The same shuffle serves :func:`paimon_spark.write` and :func:`paimon_spark.write_stream` (``_bucketed.py``),
where a DataFrame's ``rowkind`` column (``+I``, ``-U``, ``+U``, ``-D``, as ``$audit_log`` names them) gives
each row its kind. The ``paimon`` data source's writers cannot shuffle; they write through
:func:`write_kinds` too, without compacting (``_task.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StructField, StructType

from paimon_core import options as opts
from paimon_core.bucket import assign_buckets
from paimon_core.errors import ConfigError, SchemaError
from paimon_core.table import CommitMessage, KeyValueTableWrite, Table
from paimon_spark._options import SourceConfig
from paimon_spark._tasks import PICKLED_SCHEMA, collect_pickled, pickled_batch

__all__ = [
    "BUCKET_COLUMN",
    "KIND_COLUMN",
    "ROW_KINDS",
    "check_row_level",
    "kind_column",
    "kinds_of_text",
    "write_kinds",
    "write_records",
]

KIND_COLUMN = "__paimon_kind"
BUCKET_COLUMN = "__paimon_bucket"
ROW_KINDS = ("+I", "-U", "+U", "-D")
"""Paimon's row kinds as text, each at the index of its ``_VALUE_KIND`` byte."""

_UPSERT_ENGINES = ("deduplicate", "partial-update")


def check_row_level(table: Table, operation: str, *, upserts: bool, deletes: bool) -> None:
    """Refuse what the table's merge engine cannot take, before any work (Paimon's rules).

    Args:
        operation: ``merge_into``, ``update`` or ``delete_from``, for the message.
        upserts: the operation updates rows (a merge always may).
        deletes: the operation writes ``-D`` records.

    Raises:
        ConfigError: the merge engine or its options do not allow the operation.
    """
    options = table.options
    engine = options.get_option(opts.MERGE_ENGINE)
    if upserts and engine not in _UPSERT_ENGINES:
        raise ConfigError(
            f"{operation} of {table.identifier}: merge engine {engine} cannot take it, only "
            f"{' and '.join(_UPSERT_ENGINES)} can (as in Paimon)",
            opts.MERGE_ENGINE.key,
        )
    if not deletes:
        return
    if options.get_option(opts.IGNORE_DELETE):
        raise ConfigError(
            f"{operation} of {table.identifier} deletes rows, but the table sets ignore-delete: the "
            "deletes would be dropped",
            opts.IGNORE_DELETE.key,
        )
    removes = {
        "deduplicate": True,
        "partial-update": options.get_option(opts.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)
        or options.get_option(opts.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP) is not None,
        "aggregation": options.get_option(opts.AGGREGATION_REMOVE_RECORD_ON_DELETE),
    }
    if not removes.get(engine, False):
        needed = {
            "partial-update": f"{opts.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key} = true (or "
            f"{opts.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP.key})",
            "aggregation": f"{opts.AGGREGATION_REMOVE_RECORD_ON_DELETE.key} = true",
        }.get(engine)
        hint = f"; set {needed}" if needed else ""
        raise ConfigError(
            f"{operation} of {table.identifier} deletes rows, which merge engine {engine} refuses{hint}",
            opts.MERGE_ENGINE.key,
        )


def write_records(
    table: Table, config: SourceConfig, records: DataFrame, *, overwrite: bool = False
) -> list[CommitMessage]:
    """Write the records (columns of the table plus :data:`KIND_COLUMN`) on the executors.

    ``overwrite``: the writers start the buckets empty (and dynamic buckets with an empty index), for an
    OVERWRITE commit of the messages.

    Returns the commit messages of all the tasks, for one commit on the driver.
    """
    keys = [f"`{k}`" for k in table.partition_keys]
    if table.bucket > 0:
        bucketed = records.mapInArrow(
            _bucketer(table), StructType([*records.schema.fields, StructField(BUCKET_COLUMN, IntegerType())])
        )
        routed = bucketed.repartition(*keys, BUCKET_COLUMN).drop(BUCKET_COLUMN)
    elif keys:
        routed = records.repartition(*keys)
    else:
        routed = records.repartition(1)
    names = [name for name in records.columns if name != KIND_COLUMN]
    return collect_pickled(routed.mapInArrow(_writer(config, names, overwrite), PICKLED_SCHEMA))


def kind_column(rowkind: str) -> Column:
    """The ``_VALUE_KIND`` byte of each row from its ``rowkind`` text column, as a Spark expression.

    A null or unknown kind fails the Spark task that meets it (``raise_error``): before a shuffle, that
    is before any writer has started.
    """
    text = F.upper(F.trim(F.col(f"`{rowkind}`")))
    message = F.concat(
        F.lit("row kind '"),
        F.coalesce(F.col(f"`{rowkind}`"), F.lit("null")),
        F.lit(f"' in column '{rowkind}' is not one of {', '.join(ROW_KINDS)}"),
    )
    chosen = functools.reduce(
        lambda expr, item: expr.when(text == item[1], F.lit(item[0])),
        list(enumerate(ROW_KINDS))[1:],
        F.when(text == ROW_KINDS[0], F.lit(0)),
    )
    return chosen.otherwise(F.raise_error(message)).cast("tinyint")


def kinds_of_text(text: pa.Array | pa.ChunkedArray, column: str) -> pa.Array:
    """The ``_VALUE_KIND`` bytes of ``+I``/``-U``/``+U``/``-D`` strings.

    Raises:
        SchemaError: a null or unknown row kind (naming it and the column).
    """
    codes = pc.index_in(pc.utf8_upper(pc.utf8_trim_whitespace(text)), value_set=pa.array(ROW_KINDS))
    if codes.null_count:
        bad = pc.filter(text, pc.is_null(codes))[0].as_py()
        raise SchemaError(f"row kind {bad!r} in column {column!r} is not one of {', '.join(ROW_KINDS)}")
    return pc.cast(codes, pa.int8())


def _bucketer(table: Table) -> Any:
    keys, types, buckets = table.bucket_keys, table.bucket_key_types, table.bucket

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield batch.append_column(BUCKET_COLUMN, assign_buckets(batch, keys, types, buckets))

    return assign


def _writer(config: SourceConfig, names: list[str], overwrite: bool) -> Any:
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield pickled_batch(write_kinds(config.open_table(), names, batches, overwrite=overwrite))

    return write


def write_kinds(
    table: Table, names: list[str], batches: Iterator[pa.RecordBatch], *, overwrite: bool = False
) -> list[CommitMessage]:
    """One task's records (columns ``names`` plus :data:`KIND_COLUMN`), written in arrival order: each run
    of rows of one kind at a time. Returns the task's commit messages; a failure deletes its files."""
    writer = table.new_write(overwrite=overwrite)
    if not isinstance(writer, KeyValueTableWrite):
        raise TypeError(f"{table.identifier} is not a primary-key table")
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            kinds = batch.column(KIND_COLUMN).to_numpy(zero_copy_only=False)
            rows = batch.select(names)
            starts = np.flatnonzero(np.r_[True, kinds[1:] != kinds[:-1]])
            for start, end in zip(starts.tolist(), [*starts[1:].tolist(), len(kinds)], strict=True):
                writer.write(rows.slice(start, end - start), int(kinds[start]))
        return writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        writer.close()
