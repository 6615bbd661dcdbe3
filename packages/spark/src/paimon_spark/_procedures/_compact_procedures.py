"""Compaction procedures for Spark SQL users: UDTFs in place of Paimon's ``CALL sys.compact(...)``.

``CALL`` needs a JVM procedure catalog; a Python UDTF is the closest thing PySpark offers::

    paimon_spark.register_procedures(spark, warehouse="/wh")       # register(spark) does this too
    SELECT * FROM paimon_compact(table => 'db.t', partitions => 'dt=1;dt=2',
                                 order_strategy => 'zorder', order_by => 'a,b',
                                 options => 'target-file-size=256 mb')
    SELECT * FROM paimon_compact_database(including_databases => 'db', mode => 'divided')

Arguments keep Paimon's names: ``table``, ``partitions`` (``,`` = AND, ``;`` = OR), ``order_strategy``
(``order``, ``zorder`` or ``none``), ``order_by``, ``options`` (``'k1=v1,k2=v2'``); for the database form
``including_databases``, ``including_tables``, ``excluding_tables``, ``mode`` (``divided``/``combined``).
``options`` is read as for every procedure (:mod:`._udtf`).

Limits, because a UDTF runs in one Python worker with no SparkSession:

* the compaction runs inside that worker on local threads (``LocalRunner``), not spread over executors:
  for big tables use :func:`paimon_spark.compact` or the ``paimon-spark compact`` action;
* ``where`` (a SQL predicate) needs Spark to evaluate it, so the UDTF rejects it: pass ``partitions``, or
  call :func:`paimon_spark.compact` with ``where=...`` from Python;
* batch mode only (a UDTF call must end).

Each call returns one row per compacted table: ``result`` (true when the job ran), the table, file and byte
counts before and after, files rewritten and written, COMPACT snapshots committed, and seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from paimon_core import Catalog
from paimon_core.compact import CompactSummary, compact_database, compact_table
from paimon_core.errors import ConfigError
from paimon_spark._procedures._udtf import TableProcedure, non_blank, split_procedure_options

__all__ = [
    "COMPACT_DATABASE_PROCEDURE",
    "COMPACT_PROCEDURE",
    "RESULT_SCHEMA",
    "CompactDatabaseProcedure",
    "CompactProcedure",
]

COMPACT_PROCEDURE = "paimon_compact"
COMPACT_DATABASE_PROCEDURE = "paimon_compact_database"

RESULT_SCHEMA = (
    "result boolean, table string, files_before bigint, files_after bigint, bytes_before bigint, "
    "bytes_after bigint, rewritten_files bigint, written_files bigint, snapshots bigint, seconds double"
)

Row = tuple[bool, str, int, int, int, int, int, int, int, float]


def _row(summary: CompactSummary) -> Row:
    return (
        True,
        summary.table,
        summary.files_before,
        summary.files_after,
        summary.bytes_before,
        summary.bytes_after,
        summary.rewritten_files,
        summary.written_files,
        len(summary.snapshots),
        round(summary.seconds, 3),
    )


class CompactProcedure(TableProcedure):
    """``paimon_compact(table, partitions, where, order_strategy, order_by, options)`` as a UDTF class.

    :func:`register_procedures` registers a subclass carrying the default warehouse and catalog conf.
    """

    def eval(
        self,
        table: str,
        partitions: str | None = None,
        where: str | None = None,
        order_strategy: str | None = None,
        order_by: str | None = None,
        options: str | None = None,
    ) -> Iterator[Row]:
        if non_blank(where):
            raise ConfigError(
                "paimon_compact runs without a SparkSession and cannot evaluate 'where'; pass 'partitions' "
                "(',' = AND, ';' = OR) or call paimon_spark.compact(spark, where=...) from Python"
            )
        handle = self._open(table, options)
        strategy = non_blank(order_strategy)
        if strategy is not None and strategy.lower() == "none":
            strategy = None
        summary = compact_table(
            handle,
            partitions=non_blank(partitions),
            order_strategy=strategy,
            order_by=non_blank(order_by) or (),
            progress=False,
        )
        yield _row(summary)


class CompactDatabaseProcedure:
    """``paimon_compact_database(including_databases, mode, including_tables, excluding_tables, options)``."""

    warehouse: ClassVar[str | None] = None
    catalog_conf: ClassVar[dict[str, str]] = {}

    def eval(
        self,
        including_databases: str | None = None,
        mode: str | None = None,
        including_tables: str | None = None,
        excluding_tables: str | None = None,
        options: str | None = None,
    ) -> Iterator[Row]:
        warehouse, conf, table_options = split_procedure_options(options, self.warehouse, self.catalog_conf)
        if table_options:
            raise ConfigError(
                f"paimon_compact_database takes catalog options only, not {', '.join(sorted(table_options))}"
            )
        summaries = compact_database(
            Catalog.open(warehouse, **conf),
            including_databases=non_blank(including_databases),
            including_tables=non_blank(including_tables),
            excluding_tables=non_blank(excluding_tables),
            mode=non_blank(mode) or "divided",
            progress=False,
        )
        for summary in summaries.values():
            yield _row(summary)
