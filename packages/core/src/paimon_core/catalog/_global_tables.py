"""The rows of the catalog-wide system tables, ``sys.all_table_options`` and ``sys.catalog_options``
(:class:`~paimon_core.table.GlobalSystemTable`): what a catalog knows of itself and of its tables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from paimon_core.errors import ConfigError
from paimon_core.redaction import redacted_options
from paimon_core.schema import SchemaManager
from paimon_core.table import GLOBAL_SYSTEM_TABLES, SYSTEM_DATABASE, GlobalSystemTable

__all__ = ["global_system_table", "is_global_system_table"]


class Catalog(Protocol):
    """What the tables read of a catalog (a protocol: the catalog module imports this one)."""

    warehouse: str
    options: dict[str, str]

    def list_databases(self) -> list[str]: ...

    def list_tables(self, database: str) -> list[str]: ...

    def _schema_manager(self, identifier: str) -> SchemaManager: ...


def is_global_system_table(database: str, table: str) -> bool:
    """Whether ``database.table`` names a catalog-wide system table (``sys.<name>``)."""
    return database == SYSTEM_DATABASE and "$" not in table


def global_system_table(catalog: Catalog, name: str) -> GlobalSystemTable:
    """The catalog-wide system table ``sys.<name>`` of ``catalog``.

    Raises:
        ConfigError: no such system table.
    """
    if name == "all_table_options":
        return GlobalSystemTable(name, lambda: _all_table_options(catalog))
    if name == "catalog_options":
        return GlobalSystemTable(name, lambda: _catalog_options(catalog))
    known = ", ".join(f"{SYSTEM_DATABASE}.{n}" for n in GLOBAL_SYSTEM_TABLES)
    raise ConfigError(f"unknown system table {SYSTEM_DATABASE}.{name}; there are {known}", "table")


def _all_table_options(catalog: Catalog) -> Iterator[dict[str, Any]]:
    """Each table's stored options (its latest schema's), a row per option, by database, table and key."""
    for database in catalog.list_databases():
        for table in catalog.list_tables(database):
            schema = catalog._schema_manager(f"{database}.{table}").latest()
            if schema is None:  # dropped meanwhile
                continue
            for key, value in sorted(redacted_options(schema.options).items()):
                yield {"database_name": database, "table_name": table, "key": key, "value": value}


def _catalog_options(catalog: Catalog) -> Iterator[dict[str, Any]]:
    """The options the catalog was opened with, ``warehouse`` included (as Java's catalog context holds it)."""
    options = {"warehouse": catalog.warehouse, **catalog.options}
    for key, value in sorted(redacted_options(options).items()):
        yield {"key": key, "value": value}
