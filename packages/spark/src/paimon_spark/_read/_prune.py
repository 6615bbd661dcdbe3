"""Which partitions of the target a merge, delete or update has to read.

A merge only needs the target rows a source row can match. When the merge condition is a conjunction with
``<target alias>.<partition column> = <expression of the source>`` among its terms, a target row can only
match in a partition whose value is one the source produces: the distinct values (on Spark) become a
partition filter of the target scan. A delete or update does the same with ``<partition column> =
<constant>`` terms of its ``where``. Anything else (``OR``, ``BETWEEN`` or ``CASE`` at the top level, an
expression whose type is not the column's, a column type compared loosely) reads every partition: the
pruning must never drop a partition that could match.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as st

from paimon_core.table import Table
from paimon_spark._types import to_spark_schema

__all__ = ["NOTHING", "conjuncts", "equated_expressions", "is_column", "partition_filter"]

NOTHING: list[Any] = []
"""The filter that matches no partition (the source produces no partition value)."""

# Types whose Python values from Spark equal the decoded partition values (no time zones, no padding).
_EXACT_TYPES = (
    st.StringType,
    st.VarcharType,
    st.ByteType,
    st.ShortType,
    st.IntegerType,
    st.LongType,
    st.BooleanType,
    st.DateType,
)
_GIVE_UP_WORDS = {"or", "between", "case"}
# Predicates and logical operators: a term holding one of these is not a plain ``a = b``.
_LOOSER_WORDS = {
    "and",
    "or",
    "not",
    "is",
    "in",
    "like",
    "ilike",
    "rlike",
    "regexp",
    "between",
    "case",
    "exists",
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def top_level_chars(text: str) -> list[tuple[int, str]]:
    """The characters of ``text`` outside quotes, backquotes and parentheses, with their positions."""
    out: list[tuple[int, str]] = []
    depth, quote = 0, ""
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0:
            out.append((i, char))
    return out


def _top_level_words(text: str) -> list[tuple[int, int, str]]:
    """(start, end, lower-cased word) of every identifier-like word at the top level of ``text``."""
    visible = [" "] * len(text)
    for i, char in top_level_chars(text):
        visible[i] = char
    return [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer("".join(visible))]


def conjuncts(condition: str) -> list[str] | None:
    """The terms of a top-level ``AND``; None when the condition is not a plain conjunction."""
    words = _top_level_words(condition)
    if any(word in _GIVE_UP_WORDS for _, _, word in words):
        return None
    parts, start = [], 0
    for begin, end, word in words:
        if word == "and":
            parts.append(condition[start:begin])
            start = end
    parts.append(condition[start:])
    return [_unwrap(p) for p in parts if p.strip()]


def _unwrap(term: str) -> str:
    """``term`` without whitespace and the parentheses that enclose all of it."""
    term = term.strip()
    while _enclosed(term):
        term = term[1:-1].strip()
    return term


def _enclosed(term: str) -> bool:
    """Whether the first character of ``term`` is a parenthesis that its last character closes."""
    if not (term.startswith("(") and term.endswith(")")):
        return False
    depth, quote = 0, ""
    for i, char in enumerate(term):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0 and i < len(term) - 1:
                return False
    return True


def _column_pattern(alias: str | None, column: str, *, qualified: bool) -> re.Pattern[str]:
    name = rf"(?:`{re.escape(column)}`|{re.escape(column)})"
    if alias is None:
        return re.compile(rf"^{name}$", re.IGNORECASE)
    prefix = rf"(?:`{re.escape(alias)}`|{re.escape(alias)})\s*\.\s*"
    return re.compile(rf"^{prefix}{name}$" if qualified else rf"^(?:{prefix})?{name}$", re.IGNORECASE)


def is_column(expression: str, alias: str | None, column: str) -> bool:
    """Whether ``expression`` is just ``column`` (bare, backquoted, or qualified with ``alias``)."""
    return bool(_column_pattern(alias, column, qualified=False).match(expression.strip()))


def equated_expressions(terms: list[str], alias: str | None, column: str, *, qualified: bool) -> list[str]:
    """The other sides of the terms ``<alias>.<column> = <expression>`` (either way round).

    With ``qualified``, the column must be written with the alias (a bare name could be the source's).
    """
    pattern = _column_pattern(alias, column, qualified=qualified)
    found = []
    for term in terms:
        # One comparison and no operator that binds looser than it: then the sides are what they look like.
        operators = [(i, char) for i, char in top_level_chars(term) if char in "=<>!"]
        if len(operators) != 1 or operators[0][1] != "=":
            continue
        if any(word in _LOOSER_WORDS for _, _, word in _top_level_words(term)):
            continue
        i = operators[0][0]
        left, right = term[:i].strip(), term[i + 1 :].strip()
        if pattern.match(left):
            found.append(right)
        elif pattern.match(right):
            found.append(left)
    return found


def partition_filter(
    table: Table,
    condition: str,
    alias: str | None,
    values: DataFrame,
    *,
    qualified: bool,
) -> list[Any] | None:
    """A filter for the target scan that keeps the partitions ``condition`` can match, or None (read all).

    ``values`` is where the other sides of the equalities are evaluated: the (aliased) source of a merge,
    or a one-row frame without table columns for a delete or update. :data:`NOTHING` means no partition.
    """
    if not table.partition_keys:
        return None
    terms = conjuncts(condition)
    if not terms:
        return None
    types = {f.name: f.dataType for f in to_spark_schema(table.schema.fields).fields}
    chosen: dict[str, Column] = {}
    for key in table.partition_keys:
        if not isinstance(types[key], _EXACT_TYPES):
            continue
        for expression in equated_expressions(terms, alias, key, qualified=qualified):
            column = _typed(values, expression, types[key])
            if column is not None:
                chosen[key] = column
                break
    if not chosen:
        return None
    names = [f"_p{i}" for i in range(len(chosen))]
    frame = values.select(*[c.alias(n) for c, n in zip(chosen.values(), names, strict=True)])
    rows = frame.dropna().distinct().collect()
    if not rows:
        return NOTHING
    keys = list(chosen)
    if len(keys) == 1:
        return [(keys[0], "in", sorted({row[0] for row in rows}))]
    return [[(key, "=", row[i]) for i, key in enumerate(keys)] for row in rows]


def _typed(values: DataFrame, expression: str, wanted: st.DataType) -> Column | None:
    """The expression as a column of ``values`` when it resolves there with exactly the wanted type."""
    try:
        column = F.expr(expression)
        actual = values.select(column).schema.fields[0].dataType
    except PySparkException:  # does not parse, or names what ``values`` lacks (the target, say)
        return None
    same = actual == wanted or all(isinstance(t, (st.StringType, st.VarcharType)) for t in (actual, wanted))
    return column if same else None
