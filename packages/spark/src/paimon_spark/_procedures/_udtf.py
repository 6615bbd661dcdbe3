"""What every procedure UDTF shares: its ``options`` argument, its text arguments, the table it opens.

In ``options``, ``warehouse=...`` names the warehouse (default: the one given to
:func:`~paimon_spark.register_procedures`, else the session conf ``spark.sql.catalog.paimon.warehouse``),
Paimon table options become dynamic options of the table, and any other key is a catalog (storage) option.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pyspark.sql import SparkSession

from paimon_core import Catalog
from paimon_core.errors import ConfigError
from paimon_core.table import Table
from paimon_spark._options import is_paimon_option, parse_options

__all__ = ["TableProcedure", "non_blank", "session_catalog_conf", "split_procedure_options"]

CATALOG_CONF_PREFIX = "spark.sql.catalog.paimon."


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
            f"or set {CATALOG_CONF_PREFIX}warehouse",
            "warehouse",
        )
    return warehouse, conf, table_options


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


def session_catalog_conf(spark: SparkSession) -> tuple[str | None, dict[str, str]]:
    """The session's default warehouse and catalog options (``spark.sql.catalog.paimon.*`` conf)."""
    conf = {str(k): str(v) for k, v in spark.conf.getAll.items()}
    scoped = {k[len(CATALOG_CONF_PREFIX) :]: v for k, v in conf.items() if k.startswith(CATALOG_CONF_PREFIX)}
    warehouse = scoped.pop("warehouse", None)
    return warehouse, {k: v for k, v in scoped.items() if not is_paimon_option(k)}
