"""DDL of Paimon tables and databases: ``CREATE TABLE [AS SELECT]``, ``DROP TABLE``, ``CREATE / DROP DATABASE``,
``ALTER TABLE`` (columns, properties, rename, tags, ``DROP PARTITION``) and ``TRUNCATE TABLE``.

Column types are Spark's (``BIGINT``, ``STRUCT<a: INT>``...), read by Spark's own type parser. Table
properties are Paimon table options, ``'primary-key'`` names the primary key and ``'comment'`` is the
table's comment; ``PARTITIONED BY (...)`` names the partition keys. Tables created through SQL also get the
catalog's ``spark.sql.catalog.<name>.table-default.<key>`` options.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.types import DataType as SparkType
from pyspark.sql.types import StructType
from sqlglot import exp

from paimon_core import Catalog
from paimon_core.errors import TagNotFoundError
from paimon_core.maintenance import create_tag, delete_tag
from paimon_core.options import parse_duration_ms
from paimon_core.schema_change import Move, SchemaChange
from paimon_core.table import Table
from paimon_core.tag import split_tag_names
from paimon_core.types import DataType
from paimon_spark._sql._context import Context
from paimon_spark._sql._errors import SqlError
from paimon_spark._sql._names import DEFAULT_DATABASE, CatalogConf, PaimonName
from paimon_spark._sql._query import literal_value, paimon_references, run_query, table_parts
from paimon_spark._sql._tokens import Cursor
from paimon_spark._sql._views import create_view
from paimon_spark._types import from_spark_schema, from_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "alter_command",
    "alter_table",
    "create_database",
    "create_table",
    "drop_database",
    "drop_table",
    "partition_spec",
    "query_after_as",
    "spark_type",
    "truncate",
]

PRIMARY_KEY = "primary-key"
COMMENT = "comment"


def spark_type(ctx: Context, text: str) -> SparkType:
    """A Spark type from its SQL text (``BIGINT``, ``DECIMAL(10, 2)``, ``STRUCT<a: INT>``).

    Raises:
        SqlError: Spark cannot read it.
    """
    try:
        return SparkType.fromDDL(text)
    except Exception as exc:  # Spark's ParseException, whatever the session kind
        raise ctx.error(f"unknown type {text!r} ({str(exc).splitlines()[0]})") from None


def _paimon_type(ctx: Context, node: exp.Expr, nullable: bool = True) -> DataType:
    return from_spark_type(spark_type(ctx, node.sql(dialect="spark")), nullable)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _column_ddl(ctx: Context, column: exp.ColumnDef) -> str:
    kind = column.args.get("kind")
    if kind is None:
        raise ctx.error(f"column {column.name!r} has no type")
    ddl = f"{_quote(column.name)} {kind.sql(dialect='spark')}"
    for constraint in column.args.get("constraints") or []:
        inner = constraint.args.get("kind")
        if isinstance(inner, exp.NotNullColumnConstraint):
            ddl += " NOT NULL"
        elif isinstance(inner, exp.CommentColumnConstraint):
            ddl += " COMMENT " + _text(inner.this.name)
        else:
            raise ctx.error(f"column {column.name!r}: {constraint.sql(dialect='spark')} is not supported")
    return ddl


def _properties(
    ctx: Context, create: exp.Create
) -> tuple[dict[str, str], list[str], list[exp.ColumnDef], str | None]:
    """TBLPROPERTIES / OPTIONS, partition keys, partition columns declared in PARTITIONED BY, comment."""
    options: dict[str, str] = {}
    keys: list[str] = []
    declared: list[exp.ColumnDef] = []
    comment = None
    properties = create.args.get("properties")
    for prop in properties.expressions if properties is not None else []:
        if isinstance(prop, exp.FileFormatProperty):
            if prop.name.lower() != "paimon":
                raise ctx.error(f"USING {prop.name}: Paimon catalogs hold Paimon tables only")
        elif isinstance(prop, exp.PartitionedByProperty):
            for key in prop.this.expressions:
                if isinstance(key, exp.ColumnDef):
                    declared.append(key)
                keys.append(key.name)
        elif isinstance(prop, exp.SchemaCommentProperty):
            comment = prop.this.name
        elif isinstance(prop, exp.OptionsProperty):
            options.update({p.name: _property_value(ctx, p) for p in prop.expressions})
        elif isinstance(prop, exp.Property):
            options[prop.name] = _property_value(ctx, prop)
        elif isinstance(prop, exp.LocationProperty):
            raise ctx.error("LOCATION is not supported: a Paimon table lives in its catalog's warehouse")
        else:
            raise ctx.error(f"{prop.sql(dialect='spark')} is not supported")
    comment = options.pop(COMMENT, comment)
    return options, keys, declared, comment


def _property_value(ctx: Context, prop: exp.Expr) -> str:
    ok, value = literal_value(prop.args["value"])
    if not ok or value is None:
        raise ctx.error(f"property {prop.name!r} needs a literal value")
    return str(value).lower() if isinstance(value, bool) else str(value)


def _keys(text: str | None) -> list[str]:
    return [k.strip() for k in (text or "").split(",") if k.strip()]


def _with_keys_required(schema: pa.Schema, primary_keys: list[str]) -> pa.Schema:
    """Primary-key columns hold no nulls (Paimon makes them NOT NULL)."""
    keys = {k.lower() for k in primary_keys}
    return pa.schema([f.with_nullable(False) if f.name.lower() in keys else f for f in schema])


def create_table(ctx: Context, create: exp.Create) -> DataFrame:
    """``CREATE TABLE [IF NOT EXISTS] name (columns) ... [AS query]``."""
    if create.args.get("replace"):
        raise ctx.error("CREATE OR REPLACE TABLE is not supported: DROP TABLE, then CREATE TABLE")
    target = create.this.this if isinstance(create.this, exp.Schema) else create.this
    parts = table_parts(target)
    options, partition_keys, declared, comment = _properties(ctx, create)
    name = ctx.resolver.table(parts)
    view_name = None
    if name is None:  # CREATE TABLE t ... USING paimon in Spark's own catalog
        name, options = _session_catalog_target(ctx, parts, options)
        view_name = parts[-1]
    assert name.catalog is not None
    primary_keys = _keys(options.pop(PRIMARY_KEY, None))
    table_options = {**name.catalog.table_defaults, **options}
    catalog = name.catalog.open(create=True)
    if name.database == DEFAULT_DATABASE or view_name is not None:
        # The default database is there from the start, as in Paimon's Spark catalog; a USING paimon table
        # of Spark's catalog gets its database as a DataFrame write by identifier would.
        catalog.create_database(name.database, exist_ok=True)
    query = create.args.get("expression")
    if query is not None and catalog.table_exists(name.identifier) and create.args.get("exists"):
        return ctx.done()  # CTAS IF NOT EXISTS of an existing table writes nothing
    data = query_after_as(ctx, query) if query is not None else None
    columns = [c for c in (create.this.expressions if isinstance(create.this, exp.Schema) else [])]
    if data is not None:
        if columns:
            raise ctx.error("CREATE TABLE AS SELECT takes its columns from the query, not a column list")
        schema = from_spark_schema(data.schema)
    else:
        if not columns and not declared:
            raise ctx.error("CREATE TABLE needs its columns (or AS SELECT)")
        ddl = ", ".join(_column_ddl(ctx, c) for c in [*columns, *declared])
        struct = spark_type(ctx, ddl)
        assert isinstance(struct, StructType)
        schema = from_spark_schema(struct)
    catalog.create_table(
        name.identifier,
        _with_keys_required(schema, primary_keys),
        partition_keys=partition_keys,
        primary_keys=primary_keys,
        options=table_options,
        comment=comment,
        exist_ok=bool(create.args.get("exists")),
    )
    if data is not None:
        data.write.format("paimon").options(**name.source_options()).mode("append").save()
    if view_name is not None:
        create_view(ctx.spark, ctx.run_sql, view_name, name.identifier, _view_options(name))
    return ctx.done()


def _view_options(name: PaimonName) -> dict[str, str]:
    return {k: v for k, v in name.source_options().items() if k != "table"}


def _session_catalog_target(
    ctx: Context, parts: list[str], options: dict[str, str]
) -> tuple[PaimonName, dict[str, str]]:
    """Where ``CREATE TABLE t ... USING paimon`` (a name of Spark's session catalog) puts the Paimon table:
    the warehouse its OPTIONS give, else the session's Paimon catalog; the name ``t`` becomes a temporary view.

    Raises:
        SqlError: neither is there (the table would be a session catalog entry Spark never passes back to the
            data source with its options).
    """
    given = {k.lower(): v for k, v in options.items()}
    warehouse = given.pop("warehouse", None)
    identifier = given.pop("table", None)
    catalog = CatalogConf("paimon", warehouse) if warehouse else ctx.resolver.default_catalog()
    if catalog is None:
        raise ctx.error(
            "CREATE TABLE ... USING paimon in Spark's session catalog cannot keep the table's options (Spark "
            "passes none of them back to a Python data source); set spark.sql.catalog.paimon.warehouse and "
            "run paimon_spark.sql(spark, 'CREATE TABLE paimon.<db>.<table> ...'), or give OPTIONS "
            "(warehouse '<uri>')"
        )
    if identifier is None:
        database = parts[-2] if len(parts) > 1 else ctx.resolver.database_in(catalog)
        identifier = f"{database}.{parts[-1]}"
    database, _, table = identifier.rpartition(".")
    rest = {k: v for k, v in options.items() if k.lower() not in ("warehouse", "table")}
    return PaimonName(catalog, database or "default", table), rest


def query_after_as(ctx: Context, query: exp.Expr) -> Any:
    """The DataFrame of the query of ``CREATE TABLE | VIEW ... AS <query>``: the text after the statement's
    first top-level ``AS``."""
    start = None
    depth = 0
    for token in ctx.tokens:
        kind = token.token_type.name
        if kind == "L_PAREN":
            depth += 1
        elif kind == "R_PAREN":
            depth -= 1
        elif kind == "ALIAS" and depth == 0:
            start = token.end + 1
            break
    if start is None:
        raise ctx.error("cannot find the query of CREATE TABLE ... AS")
    references = paimon_references(query, ctx.resolver, ctx.tokens)
    return run_query(ctx.spark, ctx.run_sql, ctx.text, start, len(ctx.text), references, ctx.args)


def drop_table(ctx: Context, cursor: Cursor) -> DataFrame:
    """``DROP TABLE [IF EXISTS] name [PURGE]``."""
    missing_ok = cursor.accept("IF", "EXISTS")
    name = ctx.paimon_table(cursor.name())
    cursor.accept("PURGE")
    cursor.expect_end()
    if name.view is not None:
        raise ctx.error(
            f"{name.table} is a temporary view: DROP VIEW it, or drop the table by its catalog name"
        )
    name.open_catalog().drop_table(name.identifier, missing_ok=missing_ok)
    return ctx.done()


def create_database(ctx: Context, cursor: Cursor) -> DataFrame:
    """``CREATE DATABASE|SCHEMA|NAMESPACE [IF NOT EXISTS] name [COMMENT ...] [WITH DBPROPERTIES (...)]``."""
    exist_ok = cursor.accept("IF", "NOT", "EXISTS")
    parts = cursor.name()
    target = ctx.resolver.database(parts)
    if target is None:
        raise _not_paimon(ctx, parts)
    catalog, database = target
    catalog.open(create=True).create_database(database, exist_ok=exist_ok)
    return ctx.done()


def drop_database(ctx: Context, cursor: Cursor) -> DataFrame:
    """``DROP DATABASE|SCHEMA|NAMESPACE [IF EXISTS] name [RESTRICT|CASCADE]``."""
    missing_ok = cursor.accept("IF", "EXISTS")
    parts = cursor.name()
    cascade = cursor.accept("CASCADE")
    cursor.accept("RESTRICT")
    cursor.expect_end()
    target = ctx.resolver.database(parts)
    if target is None:
        raise _not_paimon(ctx, parts)
    catalog, database = target
    catalog.open().drop_database(database, missing_ok=missing_ok, cascade=cascade)
    if ctx.resolver.state.catalog == catalog.name and ctx.resolver.state.database == database:
        ctx.resolver.state.database = "default"
    return ctx.done()


def _not_paimon(ctx: Context, parts: list[str]) -> SqlError:
    return ctx.error(f"{'.'.join(parts)} is not a database of a Paimon catalog")


# --- ALTER TABLE ---------------------------------------------------------------------------------------------


def _column_path(node: exp.Expr) -> list[str]:
    """``v.f1`` (a Column, a Dot or an Identifier) as its parts."""
    if isinstance(node, exp.Column):
        return [p.name for p in node.parts]
    if isinstance(node, exp.Dot):
        return [*_column_path(node.this), node.expression.name]
    return [node.name]


def _add_column(ctx: Context, column: exp.ColumnDef) -> SchemaChange:
    path = _column_path(column.this)
    kind = column.args.get("kind")
    if kind is None:
        raise ctx.error(f"ADD COLUMN {'.'.join(path)} needs a type")
    comment = None
    nullable = True
    for constraint in column.args.get("constraints") or []:
        inner = constraint.args.get("kind")
        if isinstance(inner, exp.CommentColumnConstraint):
            comment = inner.this.name
        elif isinstance(inner, exp.NotNullColumnConstraint):
            nullable = False
        else:
            raise ctx.error(f"{constraint.sql(dialect='spark')} is not supported")
    move = None
    position = column.args.get("position")
    if position is not None:
        where = str(position.args.get("position")).upper()
        move = Move.first(path[-1]) if where == "FIRST" else Move.after(path[-1], position.this.name)
    data_type = _paimon_type(ctx, kind, nullable)
    return SchemaChange.add_column(path if len(path) > 1 else path[0], data_type, comment, move)


def _alter_column(ctx: Context, action: exp.AlterColumn) -> SchemaChange:
    path = _column_path(action.this)
    if action.args.get("dtype") is not None:
        return SchemaChange.update_column_type(
            path, _paimon_type(ctx, action.args["dtype"]), keep_nullability=True
        )
    if action.args.get("comment") is not None:
        return SchemaChange.update_column_comment(path, action.args["comment"].name)
    if action.args.get("allow_null") is not None:
        return SchemaChange.update_column_nullability(path, bool(action.args["allow_null"]))
    raise ctx.error(f"ALTER COLUMN {action.sql(dialect='spark')} is not supported")


def _changes(ctx: Context, action: exp.Expr) -> list[SchemaChange]:
    if isinstance(action, exp.ColumnDef):
        return [_add_column(ctx, action)]
    if isinstance(action, exp.Schema):
        return [_add_column(ctx, c) for c in action.expressions if isinstance(c, exp.ColumnDef)]
    if isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper().startswith("COLUMN"):
        paths = []
        for node in action.args.get("tables") or []:
            paths += (
                [_column_path(n) for n in node.expressions]
                if isinstance(node, exp.Schema)
                else [_column_path(node)]
            )
        return [SchemaChange.drop_column(p) for p in paths]
    if isinstance(action, exp.RenameColumn):
        return [SchemaChange.rename_column(_column_path(action.this), action.args["to"].name)]
    if isinstance(action, exp.AlterColumn):
        return [_alter_column(ctx, action)]
    if isinstance(action, exp.AlterSet):
        changes = []
        for properties in action.expressions:
            for prop in properties.expressions:
                key, value = prop.name, _property_value(ctx, prop)
                if key == PRIMARY_KEY:
                    raise ctx.error("the primary key of a table cannot change")
                changes.append(
                    SchemaChange.update_comment(value)
                    if key == COMMENT
                    else SchemaChange.set_option(key, value)
                )
        return changes
    raise ctx.error(f"{action.sql(dialect='spark')} is not supported")


def alter_table(ctx: Context, alter: exp.Alter) -> DataFrame:
    """``ALTER TABLE`` as sqlglot reads it: columns, ``SET TBLPROPERTIES``, ``RENAME TO``."""
    name = ctx.paimon_table(table_parts(alter.this))
    catalog = _data_catalog(ctx, name)
    actions = alter.args.get("actions") or []
    renames = [a for a in actions if isinstance(a, exp.AlterRename)]
    if renames:
        if len(actions) > 1:
            raise ctx.error("RENAME TO cannot be combined with other changes")
        return _rename_table(ctx, catalog, name, table_parts(renames[0].this))
    drops = [a for a in actions if isinstance(a, exp.DropPartition)]
    if drops:
        table = ctx.open(name)
        for drop in drops:
            for partition in drop.expressions:
                _overwrite_empty(table, partition_spec(ctx, table, partition.expressions))
        return ctx.done()
    changes = [change for action in actions for change in _changes(ctx, action)]
    catalog.alter_table(name.identifier, changes)
    return ctx.done()


def _data_catalog(ctx: Context, name: PaimonName) -> Catalog:
    if name.system is not None:
        raise ctx.error(f"{name.display} is a system table: it cannot change")
    return name.open_catalog()


def _rename_table(ctx: Context, catalog: Catalog, name: PaimonName, to: list[str]) -> DataFrame:
    """``RENAME TO [db.]t`` (a catalog name before it is refused, as Paimon does)."""
    if len(to) > 2:
        raise ctx.error("RENAME TO takes [database.]table, without a catalog")
    database = to[0] if len(to) == 2 else name.database
    catalog.rename_table(name.identifier, f"{database}.{to[-1]}")
    return ctx.done()


def alter_command(ctx: Context, cursor: Cursor) -> DataFrame:
    """The ``ALTER TABLE name ...`` forms sqlglot does not parse: ``UNSET TBLPROPERTIES``, ``ALTER COLUMN``
    with a nested name, a position or ``TYPE``, and the tag statements."""
    name = ctx.paimon_table(cursor.name())
    if cursor.accept("UNSET", "TBLPROPERTIES"):
        cursor.accept("IF", "EXISTS")
        keys = cursor.strings()
        cursor.expect_end()
        changes = [
            SchemaChange.update_comment(None) if k == COMMENT else SchemaChange.remove_option(k) for k in keys
        ]
        _data_catalog(ctx, name).alter_table(name.identifier, changes)
        return ctx.done()
    if (
        cursor.accept("ALTER", "COLUMN")
        or cursor.accept("CHANGE", "COLUMN")
        or cursor.accept("ALTER")
        or cursor.accept("CHANGE")
    ):
        change = _column_command(ctx, cursor)
        _data_catalog(ctx, name).alter_table(name.identifier, [change])
        return ctx.done()
    return _tag_command(ctx, cursor, ctx.open(name))


def _column_command(ctx: Context, cursor: Cursor) -> SchemaChange:
    path = cursor.name()
    if cursor.accept("TYPE"):
        return SchemaChange.update_column_type(
            path, from_spark_type(spark_type(ctx, cursor.rest())), keep_nullability=True
        )
    if cursor.accept("FIRST"):
        cursor.expect_end()
        return SchemaChange.update_column_position(Move.first(_top(ctx, path)))
    if cursor.accept("AFTER"):
        other = cursor.name()
        cursor.expect_end()
        return SchemaChange.update_column_position(Move.after(_top(ctx, path), _top(ctx, other)))
    if cursor.accept("COMMENT"):
        comment = cursor.string()
        cursor.expect_end()
        return SchemaChange.update_column_comment(path, comment)
    if cursor.accept("SET", "NOT", "NULL"):
        return SchemaChange.update_column_nullability(path, False)
    if cursor.accept("DROP", "NOT", "NULL"):
        return SchemaChange.update_column_nullability(path, True)
    raise cursor.error("TYPE, FIRST, AFTER, COMMENT, SET NOT NULL or DROP NOT NULL")


def _top(ctx: Context, path: list[str]) -> str:
    if len(path) != 1:
        raise ctx.error(f"moving the nested field {'.'.join(path)} is not supported")
    return path[0]


def _tag_command(ctx: Context, cursor: Cursor, table: Table) -> DataFrame:
    """``CREATE [OR REPLACE] TAG [IF NOT EXISTS] t [AS OF VERSION n] [RETAIN n DAYS]``, ``REPLACE TAG``,
    ``DELETE TAG [IF EXISTS] 'a,b'``, ``RENAME TAG a TO b``."""
    if cursor.accept("CREATE", "OR", "REPLACE", "TAG") or cursor.accept("REPLACE", "TAG"):
        return _create_tag(ctx, cursor, table, replace=True)
    if cursor.accept("CREATE", "TAG"):
        return _create_tag(ctx, cursor, table, replace=False)
    if cursor.accept("DELETE", "TAG"):
        cursor.accept("IF", "EXISTS")
        names = cursor.name()
        cursor.expect_end()
        delete_tag(table, split_tag_names(".".join(names)))
        return ctx.done()
    if cursor.accept("RENAME", "TAG"):
        old = ".".join(cursor.name())
        cursor.expect("TO")
        new = ".".join(cursor.name())
        cursor.expect_end()
        tags = table.tag_manager
        tag = tags.tag(old)
        tags.create(new, tag.snapshot, tag.time_retained)
        tags.delete([old])
        return ctx.done()
    raise cursor.error("a supported ALTER TABLE clause")


def _create_tag(ctx: Context, cursor: Cursor, table: Table, *, replace: bool) -> DataFrame:
    exist_ok = cursor.accept("IF", "NOT", "EXISTS")
    tag = ".".join(cursor.name())
    snapshot = None
    if cursor.accept("AS", "OF", "VERSION"):
        token = cursor.current
        if token is None or not token.text.isdigit():
            raise cursor.error("a snapshot id")
        snapshot = int(token.text)
        cursor.index += 1
    retained = None
    if cursor.accept("RETAIN"):
        amount = cursor.current
        if amount is None or not amount.text.isdigit():
            raise cursor.error("a number")
        cursor.index += 1
        unit = cursor.peek_words(1)[0]
        cursor.index += 1
        retained = _retention(ctx, int(amount.text), unit)
    cursor.expect_end()
    if replace:
        try:
            table.tag_manager.tag(tag)
            delete_tag(table, tag)
        except TagNotFoundError:
            pass
    create_tag(table, tag, snapshot, retained, ignore_if_exists=exist_ok)
    return ctx.done()


def _retention(ctx: Context, amount: int, unit: str) -> dt.timedelta:
    unit = unit.rstrip("S")
    if unit not in ("DAY", "HOUR", "MINUTE", "SECOND"):
        raise ctx.error(f"RETAIN needs DAYS, HOURS, MINUTES or SECONDS, not {unit!r}")
    return dt.timedelta(milliseconds=parse_duration_ms(f"{amount} {unit.lower()}"))


# --- partitions ----------------------------------------------------------------------------------------------


def partition_spec(ctx: Context, table: Table, items: list[exp.Expr]) -> dict[str, Any]:
    """``PARTITION (k = v, ...)`` as a spec of static values (a key without a value is skipped: dynamic).

    Raises:
        SqlError: a key that is not a partition key, or a value that is not a literal.
    """
    keys = {k.lower(): k for k in table.partition_keys}
    spec: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, exp.EQ):
            if item.name.lower() not in keys:
                raise ctx.error(
                    f"{item.name!r} is not a partition key of {table.identifier} ({table.partition_keys})"
                )
            continue
        key = item.this.name
        if key.lower() not in keys:
            raise ctx.error(f"{key!r} is not a partition key of {table.identifier} ({table.partition_keys})")
        ok, value = literal_value(item.expression)
        if not ok:
            raise ctx.error(f"partition value of {key!r} must be a literal")
        spec[keys[key.lower()]] = value
    return spec


def _overwrite_empty(table: Table, spec: dict[str, Any]) -> None:
    """Remove the rows of the partitions ``spec`` covers (all of them for ``{}``) in one OVERWRITE snapshot."""
    table.new_commit().overwrite([], {k: str(v) for k, v in spec.items()})


def truncate(ctx: Context, statement: exp.TruncateTable) -> DataFrame:
    """``TRUNCATE TABLE name [PARTITION (k = v, ...)]``."""
    for target in statement.expressions:
        table = ctx.open(ctx.paimon_table(table_parts(target)))
        partition = statement.args.get("partition")
        spec = partition_spec(ctx, table, partition.expressions) if partition is not None else {}
        _overwrite_empty(table, spec)
    return ctx.done()
