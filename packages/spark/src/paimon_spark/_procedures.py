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
In ``options``, ``warehouse=...`` names the warehouse (default: the one given to
:func:`register_procedures`, else the session conf ``spark.sql.catalog.paimon.warehouse``), Paimon table
options become dynamic options of the table, and any other key is a catalog (storage) option.

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

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, cast

from pyspark.sql import SparkSession
from pyspark.sql.functions import udtf
from pyspark.sql.udtf import UserDefinedTableFunction

from paimon_core import Catalog
from paimon_core.compact import CompactSummary, compact_database, compact_table
from paimon_core.errors import ConfigError
from paimon_core.table import Table
from paimon_spark._compact import parse_options
from paimon_spark._options import is_paimon_option

__all__ = [
    "COMPACT_DATABASE_PROCEDURE",
    "COMPACT_PROCEDURE",
    "RESULT_SCHEMA",
    "CompactDatabaseProcedure",
    "CompactProcedure",
    "TableProcedure",
    "non_blank",
    "register_procedures",
    "split_procedure_options",
]

COMPACT_PROCEDURE = "paimon_compact"
COMPACT_DATABASE_PROCEDURE = "paimon_compact_database"
_CATALOG_CONF_PREFIX = "spark.sql.catalog.paimon."

RESULT_SCHEMA = (
    "result boolean, table string, files_before bigint, files_after bigint, bytes_before bigint, "
    "bytes_after bigint, rewritten_files bigint, written_files bigint, snapshots bigint, seconds double"
)

Row = tuple[bool, str, int, int, int, int, int, int, int, float]


def split_procedure_options(
    options: str | None, warehouse: str | None, catalog_conf: Mapping[str, str]
) -> tuple[str, dict[str, str], dict[str, str]]:
    """``options`` into (warehouse, catalog conf, dynamic table options); see the module docstring.

    Raises:
        ConfigError: no warehouse anywhere, or a malformed option.
    """
    conf = dict(catalog_conf)
    table_options: dict[str, str] = {}
    for key, value in parse_options(options).items():
        if key == "warehouse":
            warehouse = value
        elif is_paimon_option(key):
            table_options[key] = value
        else:
            conf[key] = value
    if not warehouse:
        raise ConfigError(
            "no warehouse: pass options => 'warehouse=<uri>', register_procedures(spark, warehouse=...), "
            f"or set {_CATALOG_CONF_PREFIX}warehouse",
            "warehouse",
        )
    return warehouse, conf, table_options


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


def non_blank(value: str | None) -> str | None:
    """A procedure's text argument, None when it is missing or blank."""
    return value if value is not None and value.strip() else None


class TableProcedure:
    """Opens ``table`` from ``options`` and the defaults :func:`register_procedures` gives the subclass."""

    warehouse: ClassVar[str | None] = None
    catalog_conf: ClassVar[dict[str, str]] = {}

    def _open(self, table: str, options: str | None) -> Table:
        warehouse, conf, table_options = split_procedure_options(options, self.warehouse, self.catalog_conf)
        return Catalog.open(warehouse, **conf).get_table(table, **table_options)


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


def _session_catalog_conf(spark: SparkSession) -> tuple[str | None, dict[str, str]]:
    conf = {str(k): str(v) for k, v in spark.conf.getAll.items()}
    scoped = {
        k[len(_CATALOG_CONF_PREFIX) :]: v for k, v in conf.items() if k.startswith(_CATALOG_CONF_PREFIX)
    }
    warehouse = scoped.pop("warehouse", None)
    return warehouse, {k: v for k, v in scoped.items() if not is_paimon_option(k)}


def register_procedures(
    spark: SparkSession, warehouse: str | None = None, catalog_conf: Mapping[str, Any] | None = None
) -> None:
    """Register the procedure UDTFs with ``spark``: ``paimon_compact``, ``paimon_compact_database`` and the
    maintenance procedures of :mod:`paimon_spark._maintenance` (tags, rollback, expiration, orphans, consumers).

    Args:
        spark: the session.
        warehouse: the default warehouse (else ``spark.sql.catalog.paimon.warehouse`` from the session conf,
            read now: register again after changing it).
        catalog_conf: default catalog (storage) options, on top of ``spark.sql.catalog.paimon.<key>`` conf.
    """
    conf_warehouse, conf = _session_catalog_conf(spark)
    defaults = {
        "warehouse": warehouse or conf_warehouse,
        "catalog_conf": {**conf, **{str(k): str(v) for k, v in (catalog_conf or {}).items()}},
    }
    # Imported here: the maintenance procedures build on this module.
    from paimon_spark._maintenance import MAINTENANCE_PROCEDURES

    procedures: dict[str, tuple[type, str]] = {
        COMPACT_PROCEDURE: (CompactProcedure, RESULT_SCHEMA),
        COMPACT_DATABASE_PROCEDURE: (CompactDatabaseProcedure, RESULT_SCHEMA),
        **MAINTENANCE_PROCEDURES,
    }
    for name, (base, schema) in procedures.items():
        # Built here, the class is pickled by value, so the defaults travel to the Python worker.
        procedure = type(
            base.__name__,
            (base,),
            {
                **defaults,
                "__module__": __name__,
                "__qualname__": f"register_procedures.<locals>.{base.__name__}",
            },
        )
        # Given a class, udtf wraps it at once (in Spark Connect's own wrapper over Spark Connect).
        function = cast(UserDefinedTableFunction, udtf(procedure, returnType=schema))
        spark.udtf.register(name, function)
