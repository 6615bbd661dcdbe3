"""The catalog-wide system tables of database ``sys``: ``sys.all_table_options`` and ``sys.catalog_options``.

They describe the catalog, not one table (Java Paimon's ``AllTableOptionsTable`` and ``CatalogOptionsTable``);
the catalog hands each its rows. Secret values are redacted as ``$options`` redacts them. See
docs/system-tables.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from paimon_core.table._system import RowsTable

__all__ = ["GLOBAL_SYSTEM_TABLES", "SYSTEM_DATABASE", "GlobalSystemTable"]

SYSTEM_DATABASE = "sys"
"""The database of the catalog-wide system tables (Java's ``Catalog.SYSTEM_DATABASE_NAME``)."""

GLOBAL_SYSTEM_TABLES: dict[str, pa.Schema] = {
    "all_table_options": pa.schema(
        [
            pa.field("database_name", pa.string()),
            pa.field("table_name", pa.string()),
            pa.field("key", pa.string()),
            pa.field("value", pa.string()),
        ]
    ),
    "catalog_options": pa.schema(
        [pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string(), nullable=False)]
    ),
}
"""Each catalog-wide system table's columns, as Java types them."""


class GlobalSystemTable(RowsTable):
    """A read-only catalog-wide system table (``sys.<name>``): the readers are those of a table's system
    tables, with ``columns`` and ``filter``; no time travel (``TypeError``); writes raise
    :class:`~paimon_core.errors.ReadOnlyTableError`."""

    def __init__(self, name: str, rows: Callable[[], Iterable[dict[str, Any]]]) -> None:
        self.name = name
        self.identifier = f"{SYSTEM_DATABASE}.{name}"
        self._typed(GLOBAL_SYSTEM_TABLES[name])
        self._row_source = rows

    def _rows(self) -> Iterable[dict[str, Any]]:
        return self._row_source()
