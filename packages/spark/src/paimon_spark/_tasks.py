"""Work on Spark executors through DataFrame operations only, for classic sessions and Spark Connect alike.

A Spark Connect client has no ``SparkContext``: no ``parallelize``, broadcast, accumulators or local
properties. So every distributed step of ``paimon_spark`` is a DataFrame: the work travels inside the
function given to ``mapInArrow`` (pickled with it), a ``spark.range`` with one partition per group of work
says which group each task runs, and each task returns its results pickled in one binary column, which
the driver collects. Commit messages come back to the driver the same way.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = [
    "PICKLED_SCHEMA",
    "collect_pickled",
    "default_parallelism",
    "describe_jobs",
    "is_connect",
    "pickled_batch",
    "run_groups",
]

Item = TypeVar("Item")
Result = TypeVar("Result")

PICKLED_SCHEMA = "result binary"
"""The schema of a task's pickled results: one row per task (or per batch it answers)."""

_PARALLELISM: dict[str, int] = {}  # Spark Connect session id -> its default parallelism


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (which has no ``SparkContext``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def default_parallelism(spark: SparkSession) -> int:
    """Spark's default parallelism: the partitions it gives data with no partition count of its own.

    A classic session asks its ``SparkContext``; over Spark Connect a range of rows with no partition count
    asked for tells it (one small job, once per session).
    """
    if not is_connect(spark):
        return max(1, spark.sparkContext.defaultParallelism)
    key = str(getattr(spark, "session_id", ""))
    if key not in _PARALLELISM:
        partition = F.spark_partition_id().alias("partition")
        row = spark.range(0, 1 << 16).select(partition).agg(F.max("partition")).first()
        _PARALLELISM[key] = max(1, int(row[0]) + 1) if row is not None and row[0] is not None else 1
    return _PARALLELISM[key]


def pickled_batch(value: Any) -> pa.RecordBatch:
    """``value`` pickled into a one-row batch of :data:`PICKLED_SCHEMA`."""
    return pa.RecordBatch.from_arrays([pa.array([pickle.dumps(value)], pa.binary())], ["result"])


def collect_pickled(results: DataFrame) -> list[Any]:
    """Collect a DataFrame of :data:`PICKLED_SCHEMA` whose rows are pickled lists; their items, concatenated."""
    return [item for row in results.collect() for item in pickle.loads(row[0])]


def run_groups(
    spark: SparkSession, groups: Sequence[Sequence[Item]], run: Callable[[Item], Result]
) -> list[Result]:
    """Run ``run`` on every item on the executors, each group in one Spark task; the results in no order.

    The groups travel with the pickled function; the task of partition ``i`` of a ``spark.range`` with one
    row per partition runs group ``i``.
    """
    work = [list(group) for group in groups if group]
    if not work:
        return []

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield pickled_batch([run(item) for item in work[index]])

    indexes = spark.range(0, len(work), 1, numPartitions=len(work))
    results: list[Result] = collect_pickled(indexes.mapInArrow(task, PICKLED_SCHEMA))
    return results


@contextlib.contextmanager
def describe_jobs(spark: SparkSession, description: str) -> Iterator[None]:
    """The Spark UI's description of the jobs started inside (classic sessions; a Connect client cannot set it)."""
    if is_connect(spark):
        yield
        return
    context = spark.sparkContext
    context.setJobDescription(description)
    try:
        yield
    finally:
        context.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]  # clears it
