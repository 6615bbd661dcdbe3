"""``USE``, ``SHOW DATABASES / TABLES / PARTITIONS / TAGS / COLUMNS / CREATE TABLE`` and ``DESCRIBE`` of
Paimon catalogs, with the columns Spark's own commands give."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlglot.tokenizer_core import TokenType

from paimon_core.errors import DatabaseNotFoundError
from paimon_core.redaction import redact, redacted_options
from paimon_core.table import Table
from paimon_spark._sql._context import Context
from paimon_spark._sql._names import DEFAULT_DATABASE, CatalogConf, PaimonName
from paimon_spark._sql._tokens import Cursor
from paimon_spark._types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["describe", "show", "use"]


def _like(pattern: str | None) -> re.Pattern[str] | None:
    """Spark's SHOW ... LIKE pattern: ``*`` any characters, ``|`` alternatives, case-insensitive."""
    if pattern is None:
        return None
    alternatives = (
        "".join(".*" if c == "*" else re.escape(c) for c in p.strip()) for p in pattern.split("|")
    )
    return re.compile("|".join(f"(?:{a})" for a in alternatives), re.IGNORECASE)


def _matches(pattern: re.Pattern[str] | None, name: str) -> bool:
    return pattern is None or pattern.fullmatch(name) is not None


def use(ctx: Context, cursor: Cursor) -> DataFrame | None:
    """``USE [CATALOG | NAMESPACE | DATABASE] name`` and ``SET CATALOG name``; None when the name is Spark's
    (the statement then goes to Spark, and Spark's catalog is the current one again)."""
    state, catalogs = ctx.resolver.state, ctx.resolver.catalogs
    if cursor.accept("CATALOG"):
        parts = cursor.name()
        cursor.expect_end()
        if len(parts) == 1 and parts[0] in catalogs:
            state.catalog, state.database = parts[0], "default"
            return ctx.done()
        state.catalog = None
        return None
    namespace = cursor.accept("NAMESPACE") or cursor.accept("DATABASE") or cursor.accept("SCHEMA")
    parts = cursor.name()
    cursor.expect_end()
    if parts[0] in catalogs and (len(parts) == 2 or (len(parts) == 1 and not namespace)):
        catalog, database = catalogs[parts[0]], parts[1] if len(parts) == 2 else "default"
    elif len(parts) == 1 and ctx.resolver.current is not None:
        catalog, database = ctx.resolver.current, parts[0]
    else:
        state.catalog = None
        return None
    if database == DEFAULT_DATABASE:  # made when first used, as Paimon's Spark catalog makes it
        catalog.open(create=True).create_database(DEFAULT_DATABASE, exist_ok=True)
    else:
        opened = catalog.open()
        if not opened.database_exists(database):
            raise DatabaseNotFoundError(database, opened.list_databases())
    state.catalog, state.database = catalog.name, database
    return ctx.done()


def show(ctx: Context, cursor: Cursor) -> DataFrame | None:
    """``SHOW ...`` of a Paimon catalog or table; None when it is about Spark's own."""
    if cursor.accept("DATABASES") or cursor.accept("NAMESPACES") or cursor.accept("SCHEMAS"):
        return _show_databases(ctx, cursor)
    if cursor.accept("TABLES"):
        return _show_tables(ctx, cursor)
    if cursor.accept("PARTITIONS"):
        return _on_table(ctx, cursor, _show_partitions)
    if cursor.accept("TAGS"):
        return _on_table(ctx, cursor, _show_tags)
    if cursor.accept("CREATE", "TABLE"):
        return _on_table(ctx, cursor, _show_create)
    if cursor.accept("COLUMNS"):
        if not (cursor.accept("FROM") or cursor.accept("IN")):
            raise cursor.error("FROM or IN")
        return _on_table(ctx, cursor, _show_columns)
    return None


def _show_databases(ctx: Context, cursor: Cursor) -> DataFrame | None:
    parts = cursor.name() if cursor.accept("IN") or cursor.accept("FROM") else []
    pattern = _like(cursor.string() if cursor.accept("LIKE") else None)
    cursor.expect_end()
    catalog = ctx.resolver.catalog(parts)
    if catalog is None:
        return None
    names = [d for d in catalog.open().list_databases() if _matches(pattern, d)]
    return ctx.rows("namespace string", [(d,) for d in names])


def _show_tables(ctx: Context, cursor: Cursor) -> DataFrame | None:
    parts = cursor.name() if cursor.accept("IN") or cursor.accept("FROM") else []
    pattern = _like(cursor.string() if cursor.accept("LIKE") else None)
    cursor.expect_end()
    if parts:
        target = ctx.resolver.database(parts)
    else:
        current = ctx.resolver.current
        target = (current, ctx.resolver.state.database) if current is not None else None
    if target is None:
        return None
    catalog, database = target
    names = [t for t in catalog.open().list_tables(database) if _matches(pattern, t)]
    return ctx.rows(
        "namespace string, tableName string, isTemporary boolean", [(database, t, False) for t in names]
    )


def _on_table(
    ctx: Context, cursor: Cursor, action: Callable[[Context, Cursor, PaimonName, Table], DataFrame]
) -> DataFrame | None:
    parts = cursor.name()
    name = ctx.resolver.table(parts)
    if name is None:
        return None
    return action(ctx, cursor, name, ctx.open(name))


def _partition_text(table: Table, values: dict[str, Any]) -> str:
    return "/".join(f"{k}={'null' if values[k] is None else values[k]}" for k in table.partition_keys)


def _show_partitions(ctx: Context, cursor: Cursor, name: PaimonName, table: Table) -> DataFrame:
    spec: dict[str, str] = {}
    if cursor.accept("PARTITION"):
        spec = _spec_text(ctx, cursor.group())
    cursor.expect_end()
    if not table.partition_keys:
        raise ctx.error(f"{name.display} is not partitioned")
    keys = {k.lower(): k for k in table.partition_keys}
    unknown = [k for k in spec if k.lower() not in keys]
    if unknown:
        raise ctx.error(f"{unknown} are not partition keys of {name.display} ({table.partition_keys})")
    seen = {e.partition for e in table.live_entries()} if table.latest_snapshot() else set()
    texts = []
    for partition in seen:
        values = table.partition_values(partition)
        if all(str(values[keys[k.lower()]]) == v for k, v in spec.items()):
            texts.append(_partition_text(table, values))
    return ctx.rows("partition string", [(t,) for t in sorted(texts)])


def _spec_text(ctx: Context, text: str) -> dict[str, str]:
    """``k = 'v', k2 = 3`` as strings."""
    spec = {}
    inner = Cursor(text, ctx.text)
    while True:
        key = inner.name()[0]
        inner.expect_type(TokenType.EQ, "'='")
        value = inner.current
        if value is None or value.token_type in (TokenType.COMMA, TokenType.R_PAREN):
            raise inner.error("a value")
        inner.index += 1
        spec[key] = value.text
        if inner.accept_type(TokenType.COMMA) is None:
            inner.expect_end()
            return spec


def _show_tags(ctx: Context, cursor: Cursor, name: PaimonName, table: Table) -> DataFrame:
    cursor.expect_end()
    return ctx.rows("tag string", [(t,) for t in table.tag_manager.names()])


def _show_columns(ctx: Context, cursor: Cursor, name: PaimonName, table: Table) -> DataFrame:
    cursor.expect_end()
    return ctx.rows("col_name string", [(n,) for n in table.field_names])


def _type_text(field: Any) -> str:
    return str(to_spark_type(field.type).simpleString())


def _show_create(ctx: Context, cursor: Cursor, name: PaimonName, table: Table) -> DataFrame:
    cursor.expect_end()
    schema = table.schema
    columns = []
    for field in schema.fields:
        column = f"  `{field.name}` {_type_text(field).upper()}"
        if not field.type.nullable:
            column += " NOT NULL"
        if field.description:
            column += " COMMENT '" + field.description.replace("'", "\\'") + "'"
        columns.append(column)
    text = f"CREATE TABLE {name.display} (\n" + ",\n".join(columns) + ")\n"
    if schema.partition_keys:
        text += f"PARTITIONED BY ({', '.join(schema.partition_keys)})\n"
    if schema.comment:
        text += "COMMENT '" + schema.comment.replace("'", "\\'") + "'\n"
    properties = redacted_options(schema.options)
    if schema.primary_keys:
        properties = {"primary-key": ",".join(schema.primary_keys), **properties}
    if properties:
        pairs = ",\n".join(f"  '{k}' = '{v}'" for k, v in properties.items())
        text += f"TBLPROPERTIES (\n{pairs})\n"
    return ctx.rows("createtab_stmt string", [(text,)])


def describe(ctx: Context, cursor: Cursor) -> DataFrame | None:
    """``DESC[RIBE] [TABLE] [EXTENDED | FORMATTED] name``: columns, partitioning, and with EXTENDED the
    table's location, primary key, comment and options."""
    cursor.accept("TABLE")
    extended = cursor.accept("EXTENDED") or cursor.accept("FORMATTED")
    parts = cursor.name()
    cursor.expect_end()
    name = ctx.resolver.table(parts)
    if name is None:
        return None
    table = ctx.open(name)
    rows: list[tuple[str, str, str | None]] = [
        (f.name, _type_text(f), f.description) for f in table.schema.fields
    ]
    if table.partition_keys:
        types = {f.name: f for f in table.schema.fields}
        rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
        rows += [(k, _type_text(types[k]), types[k].description) for k in table.partition_keys]
    if extended:
        rows += _details(name, table, name.catalog)
    return ctx.rows("col_name string, data_type string, comment string", rows)


def _details(
    name: PaimonName, table: Table, catalog: CatalogConf | None
) -> list[tuple[str, str, str | None]]:
    schema = table.schema
    options = ", ".join(f"{k}={v}" for k, v in sorted(redacted_options(schema.options).items()))
    rows: list[tuple[str, str, str | None]] = [
        ("", "", ""),
        ("# Detailed Table Information", "", ""),
        ("Catalog", catalog.name if catalog is not None else "", ""),
        ("Database", name.database if catalog is not None else "", ""),
        ("Table", name.table, ""),
        ("Type", "MANAGED", ""),
        ("Provider", "paimon", ""),
        ("Location", redact(table.path), ""),
        ("Primary Key", ",".join(schema.primary_keys), ""),
        ("Table Properties", f"[{options}]", ""),
    ]
    if schema.comment:
        rows.append(("Comment", schema.comment, ""))
    return rows
