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
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import IntegerType, StructField, StructType

from paimon_core import options as opts
from paimon_core.bucket import assign_buckets
from paimon_core.errors import ConfigError
from paimon_core.table import CommitMessage, KeyValueTableWrite, Table
from paimon_spark._options import SourceConfig

__all__ = ["BUCKET_COLUMN", "KIND_COLUMN", "check_row_level", "write_records"]

KIND_COLUMN = "__paimon_kind"
BUCKET_COLUMN = "__paimon_bucket"

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


def write_records(table: Table, config: SourceConfig, records: DataFrame) -> list[CommitMessage]:
    """Write the records (the table's columns plus :data:`KIND_COLUMN`) on the executors.

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
    rows = routed.mapInArrow(_writer(config, table.field_names), "message binary").collect()
    return [message for row in rows for message in pickle.loads(row[0])]


def _bucketer(table: Table) -> Any:
    keys, types, buckets = table.bucket_keys, table.bucket_key_types, table.bucket

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield batch.append_column(BUCKET_COLUMN, assign_buckets(batch, keys, types, buckets))

    return assign


def _writer(config: SourceConfig, names: list[str]) -> Any:
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        messages = _write_task(config, names, batches)
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(messages)], pa.binary())], ["message"])

    return write


def _write_task(
    config: SourceConfig, names: list[str], batches: Iterator[pa.RecordBatch]
) -> list[CommitMessage]:
    """One task's records, written in arrival order: each run of rows of one kind at a time."""
    table = config.open_table()
    writer = table.new_write()
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
