"""What a Spark task of a write runs: its rows into new files, its commit messages back to the driver.

A failed task deletes its files. Into a primary-key table the tasks of the ``paimon`` data source write
level-0 files only (several of them may write one bucket); the driver compacts (:mod:`._consolidate`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame

from paimon_core import options as opts
from paimon_core.table import CommitMessage
from paimon_core.table.mergetree import INSERT
from paimon_spark._options import SourceConfig
from paimon_spark._tasks import PICKLED_SCHEMA, collect_pickled, pickled_batch
from paimon_spark._write._prepare import WriteInput, with_null_columns
from paimon_spark._write._upsert import KIND_COLUMN, kinds_of_text, write_kinds

__all__ = ["write_in_place", "write_task"]


def write_task(
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


def write_in_place(data: DataFrame, config: SourceConfig) -> list[CommitMessage]:
    """Rows written into an append table by the Spark tasks that hold them; the messages of all the tasks."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield pickled_batch(write_task(config, batches))

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
