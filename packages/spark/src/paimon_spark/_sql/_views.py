"""Temporary views of Paimon tables, and keeping them current.

Spark 4.3 plans the read of a Python data source once per data source instance, and a temporary view
holds one instance for its whole life: rows written after the view's first query never show in it. So the
views made here are recorded per session, statements of :func:`paimon_spark.sql` read them through a new
DataFrame each time, and after a write to a table every recorded view of that table is created anew.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pyspark.sql.types import StructType
from sqlglot.tokenizer_core import TokenType

from paimon_spark._options import SOURCE_NAME
from paimon_spark._sql._names import PaimonName, ViewDef, state_of
from paimon_spark._sql._tokens import Cursor

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["create_view", "create_view_statement", "forget_view", "refresh_views"]


def _quote_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")


def create_view(
    spark: SparkSession, run_sql: Callable[..., DataFrame], view: str, table: str, options: Mapping[str, str]
) -> None:
    """``CREATE OR REPLACE TEMPORARY VIEW <view> USING paimon OPTIONS (table ..., ...)``, recorded."""
    pairs = {"table": table, **options}
    rendered = ", ".join(f"`{k}` '{_quote_text(v)}'" for k, v in pairs.items())
    quoted = "`" + view.replace("`", "``") + "`"
    run_sql(f"CREATE OR REPLACE TEMPORARY VIEW {quoted} USING {SOURCE_NAME} OPTIONS ({rendered})")
    state_of(spark).views[view.lower()] = ViewDef(table, dict(options))


def create_view_statement(
    spark: SparkSession, run_sql: Callable[..., DataFrame], cursor: Cursor
) -> DataFrame | None:
    """``CREATE [OR REPLACE] TEMP[ORARY] VIEW v USING paimon OPTIONS (k 'v', ...)`` written as SQL: made
    as :func:`create_view` makes it (recorded); None for another statement or another source."""
    cursor.expect("CREATE")
    replace = cursor.accept("OR", "REPLACE")
    cursor.accept("GLOBAL")
    temporary = cursor.accept("TEMPORARY") or cursor.accept("TEMP")
    if not cursor.accept("VIEW"):
        return None
    cursor.accept("IF", "NOT", "EXISTS")
    view = cursor.name()
    forget_view(spark, view[-1])  # whatever it becomes, it is no longer the view recorded under that name
    if not temporary or len(view) != 1 or not cursor.accept("USING") or not cursor.accept(SOURCE_NAME):
        return None
    options: dict[str, str] = {}
    if cursor.accept("OPTIONS"):
        inner = Cursor(cursor.group(), cursor.statement)
        while not inner.at_end():
            key = (
                ".".join(inner.name())
                if inner.current is not None and inner.current.token_type != TokenType.STRING
                else inner.string()
            )
            inner.accept_type(TokenType.EQ)
            options[key] = inner.string()
            if inner.accept_type(TokenType.COMMA) is None:
                break
        inner.expect_end()
    cursor.expect_end()
    lowered = {k.lower(): v for k, v in options.items()}
    table = lowered.pop("table", None) or lowered.pop("path", None)
    if table is None or (not replace and view[0].lower() in state_of(spark).views):
        return None  # Spark reports what is wrong
    create_view(
        spark,
        run_sql,
        view[0],
        table,
        {k: v for k, v in options.items() if k.lower() not in ("table", "path")},
    )
    return spark.createDataFrame([], StructType([]))


def forget_view(spark: SparkSession, view: str) -> None:
    state_of(spark).views.pop(view.lower(), None)


def _location(name: PaimonName) -> tuple[str | None, str]:
    options = name.source_options()
    return (options.get("warehouse", "").rstrip("/") or None), options["table"]


def refresh_views(spark: SparkSession, run_sql: Callable[..., DataFrame], written: PaimonName) -> None:
    """Create anew the recorded views of the table a statement wrote."""
    location = _location(written)
    for view, definition in list(state_of(spark).views.items()):
        if _location(PaimonName(None, "", view, definition)) == location:
            create_view(spark, run_sql, view, definition.table, definition.options)
