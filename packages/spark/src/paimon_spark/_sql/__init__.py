"""Paimon's Spark SQL from Python: :func:`sql` runs a statement as ``spark.sql`` does, serving the Paimon
parts (catalog names, DDL, DML, ``CALL sys.*``, system tables, time travel) itself and handing Spark the
rest. docs/spark/spark-sql.md describes the statements.

Statements are read with sqlglot's Spark dialect (its tokenizer for the few statements its parser keeps
opaque); a statement it cannot read, or that names nothing of Paimon's, goes to ``spark.sql`` unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from paimon_spark._errors import paimon_errors
from paimon_spark._session import register_data_source
from paimon_spark._sql._call import PROCEDURES, call
from paimon_spark._sql._context import Context
from paimon_spark._sql._ddl import (
    alter_command,
    alter_table,
    create_database,
    create_table,
    drop_database,
    drop_table,
    query_after_as,
    truncate,
)
from paimon_spark._sql._dml import delete, insert, merge, update_rows
from paimon_spark._sql._errors import ProcedureNotFoundError, ProcedureUnsupportedError, SqlError
from paimon_spark._sql._names import PaimonName, Resolver, SqlState, session_catalogs, state_of
from paimon_spark._sql._query import paimon_references, run_query
from paimon_spark._sql._show import describe, show, use
from paimon_spark._sql._tables import install_table_calls
from paimon_spark._sql._tokens import Cursor, tokenize, words
from paimon_spark._sql._views import create_view, create_view_statement, forget_view, refresh_views

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "PROCEDURES",
    "ProcedureNotFoundError",
    "ProcedureUnsupportedError",
    "SqlError",
    "create_view",
    "install_sql",
    "spark_sql",
    "sql",
    "state_of",
]

_MARK = "__paimon_sql__"


class _QuietFallback(logging.Filter):
    """sqlglot warns when it keeps a statement as an opaque command; those are read token by token here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_QuietFallback())


def spark_sql(spark: SparkSession) -> Callable[..., DataFrame]:
    """Spark's own ``spark.sql`` (unwrapped when :func:`install_sql` replaced it)."""
    method = spark.sql
    original: Callable[..., DataFrame] = getattr(method, "__wrapped__", method)
    return original


def install_sql(spark: SparkSession) -> None:
    """Make ``spark.sql`` run Paimon's statements as :func:`sql` does (once per session object), and Spark's
    table calls (``spark.table``, ``insertInto``...) take Paimon names (``_tables``).

    A call with keyword arguments (``spark.sql("... {df}", df=df)``) goes to Spark's own method unchanged.
    """
    install_table_calls(spark)
    if getattr(spark.sql, _MARK, False):
        return
    original = spark.sql

    def paimon_aware_sql(sqlQuery: str, args: Any = None, **kwargs: Any) -> DataFrame:
        if kwargs:
            return original(sqlQuery, args, **kwargs)
        return sql(spark, sqlQuery, args)

    paimon_aware_sql.__wrapped__ = original  # type: ignore[attr-defined]
    paimon_aware_sql.__doc__ = original.__doc__
    setattr(paimon_aware_sql, _MARK, True)
    spark.sql = paimon_aware_sql  # type: ignore[method-assign]


def _mentions_paimon(text: str, state: SqlState, catalogs: dict[str, Any]) -> bool:
    """A cheap first look: whether the statement may name anything of Paimon's."""
    if state.catalog is not None:
        return True
    lowered = text.lower()
    needles = ("paimon", "call", *(c.lower() for c in catalogs), *state.views)
    return any(n in lowered for n in needles)


@paimon_errors()
def sql(spark: SparkSession, text: str, args: Any = None) -> DataFrame:
    """Run one SQL statement, as ``spark.sql(text, args)`` does, with Paimon's Spark SQL on Paimon catalogs.

    Catalogs are the session's ``spark.sql.catalog.<name>.warehouse`` settings (``paimon`` usually). Tables
    ``<catalog>.<db>.<table>`` (and ``db.t`` / ``t`` after ``USE <catalog>.<db>``), their system tables
    `` <catalog>.<db>.`t$snapshots` ``, and the temporary views of :func:`paimon_spark.create_temp_view` take:
    ``CREATE / DROP DATABASE``, ``CREATE TABLE [AS SELECT]``, ``ALTER TABLE``, ``DROP / TRUNCATE TABLE``,
    ``SHOW DATABASES / TABLES / PARTITIONS / TAGS / COLUMNS / CREATE TABLE``, ``DESCRIBE [EXTENDED]``,
    ``INSERT INTO / OVERWRITE [PARTITION]``, ``DELETE``, ``UPDATE``, ``MERGE INTO``, ``CALL [cat.]sys.<p>(...)``
    and queries with ``VERSION AS OF`` / ``TIMESTAMP AS OF``. Anything else goes to ``spark.sql`` unchanged.

    Returns:
        The statement's DataFrame: a query's rows, a command's result rows, or an empty one.

    Raises:
        SqlError: a malformed Paimon statement, or arguments that do not fit it.
        ProcedureNotFoundError: ``CALL`` of a procedure there is not.
        ProcedureUnsupportedError: ``CALL`` of a Paimon procedure that does not run here (it says why).
        TableNotFoundError, DatabaseNotFoundError, ConfigError, SchemaError: as the catalog raises them.
    """
    run_sql = spark_sql(spark)
    state = state_of(spark)
    statement = text.strip().rstrip(";").strip()
    catalogs = session_catalogs({str(k): str(v) for k, v in spark.conf.getAll.items()})
    if not statement or not _mentions_paimon(statement, state, catalogs):
        return run_sql(text, args)
    try:
        tokens = tokenize(statement)
    except SqlError:
        return run_sql(text, args)  # Spark names the unterminated quote itself
    if not state.registered:
        register_data_source(spark)
        state.registered = True
    resolver = Resolver(state, catalogs, spark_view=lambda name: _spark_has(spark, name))
    ctx = Context(spark, statement, tokens, resolver, run_sql, args)
    result = _dispatch(ctx, words(tokens, 6))
    return result if result is not None else run_sql(text, args)


def _spark_has(spark: SparkSession, name: str) -> bool:
    """Whether Spark has a temporary view (or a table of its current database) of that name."""
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception:  # a name Spark cannot even parse is not Spark's
        return False


def _rest(ctx: Context, count: int) -> Cursor:
    """A cursor after the statement's first ``count`` tokens."""
    return (
        Cursor(ctx.text[ctx.tokens[count].start :], ctx.text)
        if len(ctx.tokens) > count
        else Cursor("", ctx.text)
    )


def _dispatch(ctx: Context, head: list[str]) -> DataFrame | None:
    first = head[0] if head else ""
    if first == "CALL":
        return call(ctx, ctx.text[ctx.tokens[0].end + 1 :])
    if first == "USE" or head[:2] == ["SET", "CATALOG"]:
        return use(
            ctx,
            _rest(ctx, 1)
            if first == "USE"
            else Cursor("CATALOG " + ctx.text[ctx.tokens[1].end + 1 :], ctx.text),
        )
    if first == "SHOW":
        return show(ctx, Cursor(ctx.text[ctx.tokens[0].end + 1 :], ctx.text))
    if first in ("DESC", "DESCRIBE") and head[1:2] not in (
        ["FUNCTION"],
        ["DATABASE"],
        ["SCHEMA"],
        ["NAMESPACE"],
        ["QUERY"],
        ["CATALOG"],
    ):
        return describe(ctx, _rest(ctx, 1))
    if first in ("CREATE", "DROP") and len(head) > 1 and head[1] in ("DATABASE", "SCHEMA", "NAMESPACE"):
        cursor = _rest(ctx, 2)
        handler = create_database if first == "CREATE" else drop_database
        return _on_database(ctx, handler, cursor)
    if head[:2] == ["DROP", "TABLE"]:
        return _paimon_only(ctx, lambda: drop_table(ctx, _rest(ctx, 2)), 2)
    if head[:2] == ["DROP", "VIEW"]:
        cursor = _rest(ctx, 2)
        cursor.accept("IF", "EXISTS")
        forget_view(ctx.spark, cursor.name()[-1])
        return None
    if head[:2] == ["ALTER", "TABLE"]:
        return _alter(ctx)
    if first == "CREATE" and "VIEW" in head:
        made = create_view_statement(ctx.spark, ctx.run_sql, Cursor(ctx.text))
        if made is not None:
            return made
    return _parsed(ctx)


def _on_database(
    ctx: Context, handler: Callable[[Context, Cursor], DataFrame], cursor: Cursor
) -> DataFrame | None:
    probe = Cursor(cursor.text, ctx.text)
    probe.accept("IF", "NOT", "EXISTS") or probe.accept("IF", "EXISTS")
    if ctx.resolver.database(probe.name()) is None:
        return None
    return handler(ctx, cursor)


def _paimon_only(ctx: Context, action: Callable[[], DataFrame], skip: int) -> DataFrame | None:
    """Run ``action`` when the statement's table (after ``skip`` words and IF [NOT] EXISTS) is Paimon's."""
    probe = _rest(ctx, skip)
    probe.accept("IF", "EXISTS") or probe.accept("IF", "NOT", "EXISTS")
    if ctx.resolver.table(probe.name()) is None:
        return None
    return action()


def _parse(ctx: Context) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(ctx.text, read="spark")
    except (ParseError, TokenError):
        return None


def _alter(ctx: Context) -> DataFrame | None:
    return _paimon_only(ctx, lambda: _alter_paimon_table(ctx), 2)


def _alter_paimon_table(ctx: Context) -> DataFrame:
    parsed = _parse(ctx)
    if isinstance(parsed, exp.Alter):
        return alter_table(ctx, parsed)
    cursor = _rest(ctx, 2)
    cursor.accept("IF", "EXISTS")
    return alter_command(ctx, cursor)


def _target_name(ctx: Context, node: exp.Expr) -> PaimonName | None:
    """The Paimon table a statement's target (``t`` or ``t (columns)``) names, or None."""
    table = node.this if isinstance(node, exp.Schema) else node
    return ctx.resolver.table([p.name for p in table.parts]) if isinstance(table, exp.Table) else None


def _target(ctx: Context, node: exp.Expr) -> bool:
    return _target_name(ctx, node) is not None


def _parsed(ctx: Context) -> DataFrame | None:
    """The statements sqlglot parses: CREATE TABLE, DML, TRUNCATE, and any statement reading Paimon tables."""
    parsed = _parse(ctx)
    if parsed is None or isinstance(parsed, exp.Command):
        return None
    if isinstance(parsed, exp.Create) and str(parsed.args.get("kind")).upper() == "TABLE":
        using = [
            p
            for p in (parsed.args.get("properties") or exp.Properties()).expressions
            if isinstance(p, exp.FileFormatProperty)
        ]
        if _target(ctx, parsed.this) or any(p.name.lower() == "paimon" for p in using):
            return create_table(ctx, parsed)
    if isinstance(parsed, exp.Insert) and (target := _target_name(ctx, parsed.this)) is not None:
        if target.view is None:
            return insert(ctx, parsed)
        # Into a temporary view Spark writes itself (the view's options apply); the view is made anew after.
        references = paimon_references(parsed.args["expression"], _with_ctes(ctx, parsed), ctx.tokens)
        result = run_query(ctx.spark, ctx.run_sql, ctx.text, 0, len(ctx.text), references, ctx.args)
        refresh_views(ctx.spark, ctx.run_sql, target)
        return result
    if isinstance(parsed, exp.Delete) and _target(ctx, parsed.this):
        return delete(ctx, parsed)
    if isinstance(parsed, exp.Update) and _target(ctx, parsed.this):
        return update_rows(ctx, parsed)
    if isinstance(parsed, exp.Merge) and _target(ctx, parsed.this):
        return merge(ctx, parsed)
    if isinstance(parsed, exp.TruncateTable) and any(_target(ctx, t) for t in parsed.expressions):
        return truncate(ctx, parsed)
    if isinstance(parsed, exp.Create) and str(parsed.args.get("kind")).upper() == "VIEW":
        return _create_view(ctx, parsed)
    references = paimon_references(parsed, _with_ctes(ctx, parsed), ctx.tokens)
    if not references:
        return None
    return run_query(ctx.spark, ctx.run_sql, ctx.text, 0, len(ctx.text), references, ctx.args)


def _with_ctes(ctx: Context, parsed: exp.Expr) -> Resolver:
    return ctx.resolver.with_ctes([c.alias for c in parsed.find_all(exp.CTE)])


def _create_view(ctx: Context, parsed: exp.Create) -> DataFrame | None:
    """``CREATE [OR REPLACE] TEMPORARY VIEW v AS <query over Paimon tables>``: a view of the query's DataFrame."""
    query = parsed.args.get("expression")
    if query is None:
        return None
    references = paimon_references(query, _with_ctes(ctx, query), ctx.tokens)
    if not references:
        return None
    properties = parsed.args.get("properties")
    temporary = any(
        isinstance(p, exp.TemporaryProperty) for p in (properties.expressions if properties else [])
    )
    if not temporary:
        raise ctx.error("a view over Paimon tables must be TEMPORARY (Spark's catalog cannot read them)")
    frame = query_after_as(ctx, query)
    name = parsed.this.name
    if parsed.args.get("replace"):
        frame.createOrReplaceTempView(name)
    else:
        frame.createTempView(name)
    return ctx.done()
