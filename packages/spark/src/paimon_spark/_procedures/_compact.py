"""Compaction on Spark: the dedicated compaction job with its tasks run by Spark executors.

The driver plans with :class:`paimon_core.compact.CompactJob` (the unaware-bucket coordinator, per-bucket
rules, or sort compaction), ships the picklable tasks to executors in a DataFrame job (``mapInArrow``, so it
runs over Spark Connect too), collects the picklable commit messages and commits them as one COMPACT
snapshot on the driver. Lost races with other
compactions or overwrites are re-planned by the job; concurrent appends never conflict.

Python API (Paimon's argument names)::

    import paimon_spark
    paimon_spark.compact(spark, warehouse="/wh", database="db", table="t", partitions="dt=1;dt=2")
    paimon_spark.compact(spark, warehouse="/wh", table="db.t", order_strategy="zorder", order_by="a,b")
    paimon_spark.compact(spark, warehouse="/wh", table="db.t", where="dt > '2024-01-01'")
    paimon_spark.compact(spark, warehouse="/wh", table="db.t", mode="streaming", stop=event)
    paimon_spark.compact_database(spark, warehouse="/wh", including_tables="db\\.events_.*")

A Spark task that fails is retried by Spark (its partial output is deleted by the task itself). Outputs of a
task attempt whose result Spark throws away (a lost executor, speculation) stay behind as orphan files that
no snapshot references, as with Paimon; they never change what readers see.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, StructType

from paimon_core import Catalog
from paimon_core.compact import (
    MODES,
    CompactionTask,
    CompactJob,
    CompactSummary,
    Progress,
    run_task,
)
from paimon_core.compact import compact_database as core_compact_database
from paimon_core.errors import ConfigError
from paimon_core.redaction import get_logger
from paimon_core.table import CommitMessage, Table, TableStore
from paimon_spark._errors import paimon_errors
from paimon_spark._options import parse_options
from paimon_spark._tasks import default_parallelism, describe_jobs, run_groups
from paimon_spark._types import to_spark_type

__all__ = [
    "SparkRunner",
    "compact",
    "compact_database",
    "open_compact_table",
    "where_partitions",
]

logger = get_logger(__name__)


class SparkRunner:
    """Runs compaction tasks on Spark executors, in groups of tasks, one Spark task per group.

    Args:
        spark: the session (the driver side), classic or Spark Connect.
        parallelism: Spark tasks per round; by default one per compaction task, up to Spark's default
            parallelism times 4 (small tasks balance better across executors).
    """

    def __init__(self, spark: SparkSession, parallelism: int | None = None) -> None:
        self.spark = spark
        self.parallelism = parallelism
        self._default_slots: int | None = None  # asked once: over Spark Connect it costs a small job

    def __call__(self, table: TableStore, tasks: Sequence[CompactionTask]) -> Iterator[CommitMessage]:
        if not tasks:
            return iter(())
        if self.parallelism is None and self._default_slots is None:
            self._default_slots = default_parallelism(self.spark) * 4
        slots = self.parallelism or self._default_slots or 1
        partitions = max(1, min(len(tasks), slots))
        # Largest first, dealt round-robin: one group per Spark task, none gets all the big tasks.
        ordered = sorted(tasks, key=lambda t: t.input_bytes, reverse=True)
        dealt = [ordered[i::partitions] for i in range(partitions)]
        with describe_jobs(self.spark, f"paimon compact {table.identifier}: {len(tasks)} tasks"):
            # The table handle pickles by location and options; executors re-open it.
            messages = run_groups(self.spark, dealt, lambda task: run_task(table, task))
        return iter(messages)


def open_compact_table(
    warehouse: str,
    database: str | None,
    table: str,
    catalog_conf: Mapping[str, Any] | None = None,
    options: str | Mapping[str, Any] | None = None,
) -> tuple[Catalog, Table]:
    """The catalog and the table (``database`` + ``table``, or ``table`` = ``db.t``) with dynamic options."""
    identifier = f"{database}.{table}" if database else table
    catalog = Catalog.open(warehouse, **dict(catalog_conf or {}))
    return catalog, catalog.get_table(identifier, **parse_options(options))


def where_partitions(spark: SparkSession, table: Table, where: str) -> list[dict[str, Any]]:
    """The live partitions of ``table`` matching the SQL predicate ``where`` (over partition columns).

    Spark evaluates the predicate on a small DataFrame of the table's partition values, so any Spark SQL
    expression works (``dt > '2024-01-01' and hh < 20``). Returns partition specs for the job's filter.

    Raises:
        ConfigError: the table is not partitioned.
    """
    keys = table.partition_keys
    if not keys:
        raise ConfigError(f"'where' needs a partitioned table; {table.identifier} has no partition keys")
    types = {f.name: f.type for f in table.schema.fields}
    schema = StructType([StructField(k, to_spark_type(types[k]), True) for k in keys])
    seen = {e.partition for e in table.live_entries()} if table.latest_snapshot() else set()
    values = [tuple(table.partition_values(p)[k] for k in keys) for p in seen]
    if not values:
        return []
    matched = spark.createDataFrame(values, schema).where(where).collect()
    return [{k: row[k] for k in keys} for row in matched]


def _stop_event(stop: threading.Event | None) -> threading.Event:
    return stop if stop is not None else threading.Event()


@paimon_errors()
def compact(
    spark: SparkSession,
    *,
    warehouse: str,
    table: str,
    database: str | None = None,
    partitions: str | Sequence[str] | None = None,
    where: str | None = None,
    mode: str = "batch",
    order_strategy: str | None = None,
    order_by: str | Sequence[str] = (),
    options: str | Mapping[str, Any] | None = None,
    catalog_conf: Mapping[str, Any] | None = None,
    parallelism: int | None = None,
    progress: bool | Progress | None = None,
    stop: threading.Event | None = None,
    poll_interval: float | None = None,
    max_rounds: int | None = None,
) -> CompactSummary:
    """Compact a table with Spark executors: Paimon's ``compact`` action / procedure.

    Args:
        spark: the session; tasks run on its executors, commits happen here on the driver.
        warehouse: the warehouse URI.
        table: the table name (with ``database``) or ``db.table``.
        database: the database.
        partitions: partition filter (``"dt=1,hh=2;dt=3"``: ``,`` = AND, ``;`` = OR), or a list of specs.
        where: a partition predicate in Spark SQL (cannot be combined with ``partitions``).
        mode: ``batch`` (compact once) or ``streaming`` (keep compacting new snapshots until ``stop``).
        order_strategy: ``order`` or ``zorder`` (``none`` = plain compaction): sort compaction by ``order_by``.
        order_by: sort columns (``"a,b"`` or a list).
        options: dynamic table options, ``"k1=v1,k2=v2"`` or a mapping (``target-file-size``...).
        catalog_conf: catalog (storage) options.
        parallelism: Spark partitions per round (see :class:`SparkRunner`).
        progress: progress lines (None: when stderr is a terminal), or a :class:`Progress`.
        stop: ends a streaming job after its current round.
        poll_interval: streaming: seconds between looks for new snapshots.
        max_rounds: end after this many rounds.

    Returns:
        The job's :class:`~paimon_core.compact.CompactSummary`.

    Raises:
        ConfigError: bad arguments (unknown mode, ``where`` with ``partitions``, sort in streaming mode...).
    """
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if where and partitions:
        raise ConfigError("give either 'partitions' or 'where', not both")
    if order_strategy is not None and order_strategy.lower() == "none":
        order_strategy = None
    _, handle = open_compact_table(warehouse, database, table, catalog_conf, options)
    specs: str | Sequence[Any] | None = partitions
    if where:
        specs = where_partitions(spark, handle, where)
        if not specs:
            # Nothing matches now; a streaming job still watches the predicate's partitions only.
            if mode == "batch":
                summary = CompactSummary(handle.identifier)
                display = progress if isinstance(progress, Progress) else Progress(progress)
                display.message(f"{handle.identifier}: no partition matches {where!r}")
                return summary
            raise ConfigError(f"no partition of {handle.identifier} matches {where!r}")
    display = progress if isinstance(progress, Progress) else Progress(progress)
    job = CompactJob(
        handle,
        partitions=specs,
        streaming=mode == "streaming",
        order_strategy=order_strategy,
        order_by=order_by,
        runner=SparkRunner(spark, parallelism),
        progress=display,
    )
    return job.run(_stop_event(stop), poll_interval=poll_interval, max_rounds=max_rounds)


@paimon_errors()
def compact_database(
    spark: SparkSession,
    *,
    warehouse: str,
    including_databases: str | None = None,
    including_tables: str | None = None,
    excluding_tables: str | None = None,
    mode: str = "divided",
    streaming: bool = False,
    catalog_conf: Mapping[str, Any] | None = None,
    parallelism: int | None = None,
    progress: bool | Progress | None = None,
    stop: threading.Event | None = None,
    poll_interval: float = 10.0,
    max_rounds: int | None = None,
) -> dict[str, CompactSummary]:
    """Compact the tables chosen by regular expressions, with Spark executors (Paimon's ``compact_database``).

    Args:
        spark: the session.
        warehouse: the warehouse URI.
        including_databases: databases to include (regex on the whole name; default all).
        including_tables: tables to include, matched on ``db.table`` (default all).
        excluding_tables: tables to leave out, matched on ``db.table``.
        mode: ``divided`` (one job per table) or ``combined`` (one job that also picks up new tables).
        streaming: keep compacting until ``stop`` is set.
        catalog_conf: catalog (storage) options.
        parallelism: as for :func:`compact`.
        progress: as for :func:`compact`.
        stop: as for :func:`compact`.
        poll_interval: as for :func:`compact`.
        max_rounds: as for :func:`compact`.

    Returns:
        A summary per compacted table, by full name.
    """
    catalog = Catalog.open(warehouse, **dict(catalog_conf or {}))
    return core_compact_database(
        catalog,
        including_databases=including_databases,
        including_tables=including_tables,
        excluding_tables=excluding_tables,
        mode=mode,
        streaming=streaming,
        runner=SparkRunner(spark, parallelism),
        progress=progress,
        stop=_stop_event(stop),
        poll_interval=poll_interval,
        max_rounds=max_rounds,
    )
