"""The catalog-wide system tables of database ``sys``: ``sys.all_table_options`` and ``sys.catalog_options``.

They describe the catalog, not one table (Java Paimon's ``AllTableOptionsTable`` and ``CatalogOptionsTable``);
the catalog hands each its rows. Secret values are redacted as ``$options`` redacts them. See
docs/system-tables.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pyarrow as pa

from paimon_core.errors import ReadOnlyTableError
from paimon_core.predicate import FilterLike
from paimon_core.schema import TableSchema
from paimon_core.table._readable import Readable, TimeTravel
from paimon_core.table._system import select_rows
from paimon_core.types import DataField, from_arrow_type

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


class GlobalSystemTable(Readable):
    """A read-only catalog-wide system table (``sys.<name>``): the readers are those of a table's system
    tables, with ``columns`` and ``filter``; no time travel (``TypeError``); writes raise
    :class:`~paimon_core.errors.ReadOnlyTableError`."""

    _time_travels = False

    def __init__(self, name: str, rows: Callable[[], Iterable[dict[str, Any]]]) -> None:
        self.name = name
        self.identifier = f"{SYSTEM_DATABASE}.{name}"
        self.arrow_schema = GLOBAL_SYSTEM_TABLES[name]
        self._rows = rows
        self.schema = TableSchema(
            id=0,
            fields=tuple(
                DataField(i, f.name, from_arrow_type(f.type, f.nullable))
                for i, f in enumerate(self.arrow_schema)
            ),
            highest_field_id=len(self.arrow_schema) - 1,
        )

    @property
    def field_names(self) -> list[str]:
        return list(self.arrow_schema.names)

    def _read_table(self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel) -> pa.Table:
        return select_rows(list(self._rows()), self.arrow_schema, columns, filter, self.identifier)

    def _read_batches(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> pa.RecordBatchReader:
        table = self._read_table(columns, filter, travel)
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ReadOnlyTableError(f"{self.identifier} is a system table: it cannot be written")

    append = overwrite = new_write = new_commit = _refuse

    def __repr__(self) -> str:
        return f"GlobalSystemTable({self.identifier!r})"
