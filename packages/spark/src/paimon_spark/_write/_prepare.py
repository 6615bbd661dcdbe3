"""A write's checks on the driver, before any task runs: the table opened or created, the DataFrame fitted.

A write by identifier creates the table (and its database and warehouse) from the DataFrame's schema, as
Paimon's Spark writes do; ``mergeSchema`` adds new columns and widens types first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from paimon_core.errors import ConfigError, SchemaError, TableNotFoundError, WarehouseNotFoundError
from paimon_core.redaction import get_logger
from paimon_core.schema_change import SchemaChange, apply_changes, widening_refusal
from paimon_core.table import DataView, GlobalSystemTable, SystemTable, Table, conform_batch
from paimon_core.types import from_arrow_type
from paimon_spark._options import ROW_KIND_COLUMN, SourceConfig
from paimon_spark._types import from_spark_schema

__all__ = ["WriteInput", "ensure_table", "with_null_columns"]

logger = get_logger(__name__)


@dataclass(frozen=True)
class WriteInput:
    """How a DataFrame's columns go into the table, decided on the driver before any task runs.

    Attributes:
        columns: the DataFrame's columns that hold table data.
        row_kinds: the DataFrame's column of row kinds (``rowkind``, not a table column), or None.
        missing: the table's columns the DataFrame lacks, written as nulls (``mergeSchema`` only, as Java
            Paimon fills them).
    """

    columns: tuple[str, ...]
    row_kinds: str | None = None
    missing: tuple[str, ...] = ()


def ensure_table(config: SourceConfig, schema: StructType) -> tuple[Table, WriteInput]:
    """Open the table, or create it from the DataFrame's schema (identifier form only), and check that
    the DataFrame fits it."""
    row_kinds = _row_kind_column(config, schema)
    data_schema = StructType([f for f in schema.fields if f.name != row_kinds])
    try:
        table = config.open_table()
    except (TableNotFoundError, WarehouseNotFoundError):
        if config.is_path:
            raise TableNotFoundError(
                f"{config.location}: create the table first, or write to it by identifier with a warehouse"
            ) from None
        # As Paimon's Spark writes do: a write by identifier creates what it needs, the warehouse included.
        catalog = config.catalog_handle(create=True)
        database = config.location.rpartition(".")[0] or "default"
        catalog.create_database(database, exist_ok=True)
        creation = {k: v for k, v in config.table_options.items() if not k.startswith(("scan.", "consumer"))}
        arrow = from_spark_schema(data_schema)
        keys = {k.lower() for k in config.primary_keys}  # a key column holds no nulls
        arrow = pa.schema([f.with_nullable(False) if f.name.lower() in keys else f for f in arrow])
        catalog.create_table(
            config.location,
            arrow,
            partition_keys=config.partition_keys,
            primary_keys=config.primary_keys,
            options=creation,
            exist_ok=True,
        )
        table = config.open_table()
    if isinstance(table, (SystemTable, GlobalSystemTable, DataView)):
        raise ConfigError(f"{table.identifier} is a system table: it cannot be written")
    if row_kinds is not None and not table.has_primary_key:
        raise SchemaError(
            f"cannot write to {table.identifier}: column {row_kinds!r} holds row kinds, which only a "
            "primary-key table takes (an append table keeps every row as inserted)"
        )
    missing: tuple[str, ...] = ()
    if config.merge_schema:
        table = _merge_schema(config, table, data_schema)
        missing = _absent_columns(table, data_schema)
    _check_keys(table, data_schema)
    _check_fits(table, data_schema, missing)
    return table, WriteInput(tuple(data_schema.fieldNames()), row_kinds, missing)


def _absent_columns(table: Table, schema: StructType) -> tuple[str, ...]:
    """The table's columns the DataFrame lacks: with ``mergeSchema`` they are written as nulls (as Java
    Paimon does), unless one of them takes no nulls."""
    given = {n.lower() for n in schema.fieldNames()}
    absent = [f for f in table.arrow_schema if f.name.lower() not in given]
    required = [f.name for f in absent if not f.nullable and f.name not in table.schema.primary_keys]
    if required:
        raise SchemaError(
            f"cannot write to {table.identifier}: the data lacks columns {required}, which take no nulls "
            "(mergeSchema fills absent columns with nulls)"
        )
    return tuple(f.name for f in absent)


def _row_kind_column(config: SourceConfig, schema: StructType) -> str | None:
    """The DataFrame's ``rowkind`` column when it is not a column of the table (which a table with
    ``rowkind.field`` names itself)."""
    found = next((f.name for f in schema.fields if f.name.lower() == ROW_KIND_COLUMN), None)
    if found is None:
        return None
    try:
        table = config.open_table()
    except TableNotFoundError:
        return found  # a table created from this DataFrame gets no rowkind column
    return None if found.lower() in (n.lower() for n in table.field_names) else found


def _check_keys(table: Table, schema: StructType) -> None:
    """A primary-key table needs the key of every row."""
    names = {n.lower() for n in schema.fieldNames()}
    missing = [k for k in table.schema.primary_keys if k.lower() not in names]
    if missing:
        raise SchemaError(
            f"cannot write to {table.identifier}: the data lacks its primary-key columns {missing} "
            f"(primary key {list(table.schema.primary_keys)})"
        )


def _merge_schema(config: SourceConfig, table: Table, schema: StructType) -> Table:
    """Add the DataFrame's new columns (nullable, at the end) and widen the types it widened."""
    incoming = from_spark_schema(schema)
    current = table.arrow_schema
    changes = []
    for column in incoming:
        if column.name not in current.names:
            changes.append(SchemaChange.add_column(column.name, column.type))
        elif current.field(column.name).type != column.type:
            old, new = (from_arrow_type(t) for t in (current.field(column.name).type, column.type))
            if widening_refusal(old, new) is None:  # narrower data is cast on write instead
                changes.append(
                    SchemaChange.update_column_type(column.name, column.type, keep_nullability=True)
                )
    if not changes:
        return table
    logger.info("merging the schema of %s: %s", table.identifier, changes)
    table.schema_manager.commit_change(lambda latest: apply_changes(latest, changes))
    return config.open_table()


def _check_fits(table: Table, schema: StructType, missing: Sequence[str] = ()) -> None:
    """Fail on the driver, before any task runs, when the data (with the ``missing`` columns filled with
    nulls) cannot be written to the table."""
    names = [*schema.fieldNames(), *missing]
    lowered = {n.lower(): n for n in table.field_names}
    if sorted(n.lower() for n in names) == sorted(lowered) and names != table.field_names:
        wrong = [n for n in names if n not in table.field_names]
        if wrong:
            raise SchemaError(f"columns {wrong} differ in case from the table's {table.field_names}")
    empty = pa.RecordBatch.from_pylist([], schema=to_arrow_schema(schema, timezone="UTC"))
    (empty,) = with_null_columns(iter([empty]), table.arrow_schema, missing)
    try:
        conform_batch(empty, table.arrow_schema)
    except SchemaError as exc:
        raise SchemaError(f"cannot write to {table.identifier}: {exc}") from None


def with_null_columns(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, names: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """The batches with columns ``names`` of ``schema`` added, all null."""
    for batch in batches:
        for name in names:
            batch = batch.append_column(schema.field(name), pa.nulls(batch.num_rows, schema.field(name).type))
        yield batch
