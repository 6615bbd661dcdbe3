"""Queries over Paimon tables: each Paimon table reference becomes a ``paimon`` data source DataFrame, and
Spark runs the statement's own text around them.

A reference's span in the text (its name, and a ``VERSION AS OF`` / ``TIMESTAMP AS OF`` clause after it) is
cut out and replaced by a placeholder that ``spark.sql(text, name=DataFrame)`` fills in; the rest of the
text reaches Spark as written. A reference without an alias keeps its table name as the alias, so
``t.col`` still resolves.

Time travel: ``VERSION AS OF 3`` reads snapshot 3, ``VERSION AS OF 'my-tag'`` the tag, ``TIMESTAMP AS OF '2024-01-01 12:00:00'`` the
snapshot current then (the session time zone interprets it), ``TIMESTAMP AS OF 1700000000`` Unix seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp
from sqlglot.tokenizer_core import Token, TokenType

from paimon_core import options as opts
from paimon_core.table import DataView, SystemTable, resolve_batch_scan
from paimon_spark._sql._errors import SqlError
from paimon_spark._sql._names import PaimonName, Resolver

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "Reference",
    "evaluate",
    "literal_value",
    "meta_end",
    "paimon_references",
    "read_table",
    "reference_reader",
    "run_query",
    "substitute",
    "table_parts",
    "time_travel",
]

PLACEHOLDER = "__paimon_{}"


def table_parts(table: exp.Table) -> list[str]:
    """``catalog.db.t`` as its non-empty parts."""
    return [p.name for p in table.parts]


@dataclass(frozen=True)
class Reference:
    """A Paimon table named in a statement: the node, what it names, and its span in the text."""

    node: exp.Table
    name: PaimonName
    start: int
    end: int  # exclusive


def meta_end(node: exp.Expr) -> int | None:
    ends = [n.meta["end"] for n in node.walk() if isinstance(n.meta, dict) and "end" in n.meta]
    return max(ends) + 1 if ends else None


def _close_parens(tokens: Sequence[Token], start: int, end: int) -> int:
    """``end`` moved past the tokens that close parentheses opened in ``[start, end)`` (a type in a cast,
    a function's closing parenthesis: parts of an expression that carry no position)."""
    depth = 0
    for token in tokens:
        if token.start >= end:
            if depth <= 0:
                break
            end = token.end + 1
        elif token.start < start:
            continue
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
    return end


def _span(table: exp.Table, tokens: Sequence[Token]) -> tuple[int, int] | None:
    parts = table.parts
    first = parts[0].meta if parts else {}
    if "start" not in first:
        return None
    end = meta_end(parts[-1])
    version = table.args.get("version")
    if version is not None and isinstance(version.expression, exp.Expr):
        version_end = meta_end(version.expression)
        if version_end is None:
            return None
        end = _close_parens(tokens, first["start"], version_end)
    return (first["start"], end) if end is not None else None


def paimon_references(expression: exp.Expr, resolver: Resolver, tokens: Sequence[Token]) -> list[Reference]:
    """The Paimon tables a statement reads, in text order.

    Raises:
        SqlError: a Paimon reference whose position in the text is unknown (it cannot be replaced).
    """
    found = []
    for table in expression.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue  # table-valued functions
        name = resolver.table(table_parts(table))
        if name is None:
            continue
        span = _span(table, tokens)
        if span is None:
            raise SqlError(f"cannot place the reference to {name.display} in the statement's text")
        found.append(Reference(table, name, *span))
    return sorted(found, key=lambda r: r.start)


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def substitute(
    text: str, start: int, end: int, references: Sequence[Reference], read: Callable[[Reference], DataFrame]
) -> tuple[str, dict[str, DataFrame]]:
    """``text[start:end]`` with the references inside it replaced by placeholders, and their DataFrames."""
    pieces: list[str] = []
    frames: dict[str, DataFrame] = {}
    position = start
    for reference in references:
        if reference.start < start or reference.end > end:
            continue
        placeholder = PLACEHOLDER.format(len(frames))
        frames[placeholder] = read(reference)
        pieces.append(_escape(text[position : reference.start]))
        pieces.append("{" + placeholder + "}")
        if reference.node.args.get("alias") is None and not _sampled(text, reference.end):
            pieces.append(" AS " + _quote(reference.node.name))
        position = reference.end
    pieces.append(_escape(text[position:end]))
    return "".join(pieces), frames


def _sampled(text: str, position: int) -> bool:
    """Whether TABLESAMPLE follows (an alias must come after it, so none is added)."""
    return text[position:].lstrip().upper().startswith("TABLESAMPLE")


def literal_value(node: exp.Expr) -> tuple[bool, Any]:
    """``(True, value)`` for a literal (string, number, boolean, null, negated number, a cast of one),
    else ``(False, None)``: the caller evaluates it with Spark."""
    if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal):
        ok, value = literal_value(node.this)
        target = node.to.this if isinstance(node.to, exp.DataType) else None
        if ok and target in exp.DataType.INTEGER_TYPES:
            return True, int(value)
        if ok and target in exp.DataType.TEXT_TYPES:
            return True, str(value)
        return False, None
    if isinstance(node, exp.Literal):
        if node.is_string:
            return True, node.this
        number = float(node.this)
        return True, int(number) if number.is_integer() and "." not in node.this else number
    if isinstance(node, exp.Boolean):
        return True, bool(node.this)
    if isinstance(node, exp.Null):
        return True, None
    if isinstance(node, exp.Neg):
        ok, value = literal_value(node.this)
        if ok and isinstance(value, (int, float)):
            return True, -value
    return False, None


def evaluate(spark: SparkSession, node: exp.Expr) -> Any:
    """A constant expression's value: literals here, anything else (``map('k', 'v')``...) by Spark."""
    ok, value = literal_value(node)
    if ok:
        return value
    return spark.sql("SELECT " + node.sql(dialect="spark")).first()[0]  # type: ignore[index]


def time_travel(spark: SparkSession, version: exp.Version) -> dict[str, str]:
    """The data source options of a ``VERSION AS OF`` / ``TIMESTAMP AS OF`` clause."""
    kind = str(version.this).upper()
    node = version.expression
    if kind in ("VERSION", "SYSTEM_VERSION"):
        value = evaluate(spark, node)
        if value is None:
            raise SqlError("VERSION AS OF needs a snapshot id or a tag name, not null")
        text = str(value).strip()
        # A snapshot id, else a tag (tag names are never numbers).
        key = opts.SCAN_SNAPSHOT_ID.key if text.isdigit() else opts.SCAN_TAG_NAME.key
        return {key: text}
    ok, value = literal_value(node)
    if ok and isinstance(value, (int, float)) and not isinstance(value, bool):
        return {opts.SCAN_TIMESTAMP_MILLIS.key: str(int(value * 1000))}
    text = node.sql(dialect="spark")
    millis = spark.sql(f"SELECT unix_millis(CAST(({text}) AS TIMESTAMP))").first()[0]  # type: ignore[index]
    if millis is None:
        raise SqlError(f"TIMESTAMP AS OF {text} is null")
    return {opts.SCAN_TIMESTAMP_MILLIS.key: str(millis)}


def read_table(spark: SparkSession, name: PaimonName, extra: dict[str, str] | None = None) -> DataFrame:
    """The ``paimon`` data source DataFrame of a table (options such as time travel in ``extra``)."""
    return spark.read.format("paimon").options(**name.source_options(), **(extra or {})).load()


def reference_reader(spark: SparkSession) -> Callable[[Reference], DataFrame]:
    def read(reference: Reference) -> DataFrame:
        version = reference.node.args.get("version")
        extra = time_travel(spark, version) if isinstance(version, exp.Version) else {}
        if reference.name.view is None:
            # A missing table, snapshot or tag fails here, typed, rather than inside Spark's planning.
            table = reference.name.open_catalog().get_table(reference.name.identifier, **extra)
            if extra:
                resolve_batch_scan(table.data if isinstance(table, (DataView, SystemTable)) else table)
        return read_table(spark, reference.name, extra)

    return read


def run_query(
    spark: SparkSession,
    run_sql: Callable[..., DataFrame],
    text: str,
    start: int,
    end: int,
    references: Sequence[Reference],
    args: Any = None,
) -> DataFrame:
    """Run ``text[start:end]`` (a query) with Spark, its Paimon references read through the data source."""
    rewritten, frames = substitute(text, start, end, references, reference_reader(spark))
    if not frames:
        return run_sql(text[start:end], args)
    return run_sql(rewritten, args, **frames)
