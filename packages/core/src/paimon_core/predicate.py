"""Row filters: evaluated exactly on rows, conservatively on partition values and file statistics.

A filter is given as pyarrow's DNF tuples (``[("dt", "=", "2024-01-01"), ("x", ">", 3)]`` is an AND;
a list of such lists is an OR of ANDs) or built with :func:`col`. A plain ``pyarrow.compute.Expression``
is accepted too: it filters rows but cannot prune partitions or files.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import SchemaError

_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}  # fmt: skip
_SET_OPS = ("in", "not in")
_NULL_OPS = ("is null", "is not null")
OPERATORS = (*_COMPARISONS, *_SET_OPS, *_NULL_OPS)


@dataclass(frozen=True)
class Leaf:
    """``column <op> value``."""

    column: str
    op: str
    value: Any = None

    def to_expression(self, column_type: pa.DataType | None = None) -> pc.Expression:
        field = pc.field(self.column)
        if self.op == "is null":
            return field.is_null()
        if self.op == "is not null":
            return ~field.is_null()
        if self.op in _SET_OPS:
            # SQL, as holds_for: a null never matches, and a null in the list matches nothing. (Arrow's
            # is_in matches a null to a null in the list, and ~is_in keeps nulls.)
            listed = [v for v in self.value if v is not None]
            values = pa.array(listed, type=column_type) if column_type is not None else listed
            found = field.isin(values)
            return found if self.op == "in" else ~found & ~field.is_null()
        value = pa.scalar(self.value, type=column_type) if column_type is not None else self.value
        if self.op in ("=", "=="):
            return field == value
        if self.op == "!=":
            return field != value
        if self.op == "<":
            return field < value
        if self.op == "<=":
            return field <= value
        if self.op == ">":
            return field > value
        return field >= value

    def holds_for(self, value: Any) -> bool:
        """Exact test of one value (partition pruning); SQL semantics: a comparison with null is false."""
        if self.op == "is null":
            return value is None
        if self.op == "is not null":
            return value is not None
        if value is None:
            return False
        if self.op == "in":
            return value in self.value
        if self.op == "not in":
            return value not in self.value
        return _COMPARISONS[self.op](value, self.value)

    def may_match_range(self, lo: Any, hi: Any, null_count: int | None, row_count: int) -> bool:
        """Whether some row of a file with these stats may match (``lo``/``hi`` None = unknown)."""
        if self.op == "is null":
            return null_count is None or null_count > 0
        if self.op == "is not null":
            return null_count is None or null_count < row_count
        if null_count is not None and null_count >= row_count:
            return False  # every value is null: no comparison holds
        if lo is None or hi is None:
            return True
        if isinstance(lo, float) and (self.op == "!=" or (self.op == "in" and _has_nan(self.value))):
            return True  # min/max leave NaN out, yet NaN != x, and Arrow's is_in matches NaN to NaN
        try:
            if self.op in ("=", "=="):
                return bool(lo <= self.value <= hi)
            if self.op == "!=":
                return not (lo == hi == self.value)
            if self.op == "<":
                return bool(lo < self.value)
            if self.op == "<=":
                return bool(lo <= self.value)
            if self.op == ">":
                return bool(hi > self.value)
            if self.op == ">=":
                return bool(hi >= self.value)
            if self.op == "in":
                return any(lo <= v <= hi for v in self.value if v is not None)
        except TypeError:
            return True  # incomparable stats (e.g. truncated strings vs other types): keep the file
        return True


@dataclass(frozen=True)
class Predicate:
    """An OR of ANDs of :class:`Leaf` terms."""

    clauses: tuple[tuple[Leaf, ...], ...]

    @property
    def columns(self) -> frozenset[str]:
        return frozenset(leaf.column for clause in self.clauses for leaf in clause)

    def to_expression(self, schema: pa.Schema | None = None) -> pc.Expression:
        """The row filter; with ``schema``, literals are converted to their column's type first."""
        result: pc.Expression | None = None
        for clause in self.clauses:
            conj: pc.Expression | None = None
            for leaf in clause:
                expr = leaf.to_expression(_column_type(schema, leaf))
                conj = expr if conj is None else conj & expr
            conj = pc.scalar(True) if conj is None else conj
            result = conj if result is None else result | conj
        return pc.scalar(True) if result is None else result

    def evaluate(self, values: Mapping[str, Any]) -> bool | None:
        """Exact result when every column is in ``values``; None when the answer depends on other columns."""
        any_unknown = False
        for clause in self.clauses:
            clause_result: bool | None = True
            for leaf in clause:
                if leaf.column not in values:
                    clause_result = None
                    continue
                if not leaf.holds_for(values[leaf.column]):
                    clause_result = False
                    break
            if clause_result is True:
                return True
            if clause_result is None:
                any_unknown = True
        return None if any_unknown else False

    def may_match(
        self, values: Mapping[str, Any], stats: Mapping[str, tuple[Any, Any, int | None]], row_count: int
    ) -> bool:
        """Conservative test against known exact values (partition) and per-column (min, max, nulls) stats."""
        for clause in self.clauses:
            if all(self._leaf_may_match(leaf, values, stats, row_count) for leaf in clause):
                return True
        return False

    @staticmethod
    def _leaf_may_match(
        leaf: Leaf,
        values: Mapping[str, Any],
        stats: Mapping[str, tuple[Any, Any, int | None]],
        row_count: int,
    ) -> bool:
        if leaf.column in values:
            return leaf.holds_for(values[leaf.column])
        if leaf.column in stats:
            lo, hi, nulls = stats[leaf.column]
            return leaf.may_match_range(lo, hi, nulls, row_count)
        return True


def _has_nan(values: Sequence[Any]) -> bool:
    return any(isinstance(v, float) and math.isnan(v) for v in values)


def _column_type(schema: pa.Schema | None, leaf: Leaf) -> pa.DataType | None:
    if schema is None or leaf.column not in schema.names:
        return None
    column_type = schema.field(leaf.column).type
    try:
        if leaf.op in _SET_OPS:
            pa.array(list(leaf.value), type=column_type)
        elif leaf.op not in _NULL_OPS:
            pa.scalar(leaf.value, type=column_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as exc:
        raise SchemaError(
            f"filter value {leaf.value!r} does not fit column {leaf.column!r} ({column_type}): {exc}"
        ) from None
    return column_type


FilterLike: TypeAlias = "Predicate | pc.Expression | Sequence[Any] | None"


def _parse_leaf(term: Sequence[Any]) -> Leaf:
    if len(term) == 2 and str(term[1]).lower() in _NULL_OPS:
        return Leaf(str(term[0]), str(term[1]).lower())
    if len(term) != 3:
        raise SchemaError(f"filter term {term!r} is not (column, op, value)")
    column, op, value = str(term[0]), str(term[1]).lower(), term[2]
    if op not in OPERATORS:
        raise SchemaError(f"unknown filter operator {op!r}; use one of {', '.join(OPERATORS)}")
    if op in _SET_OPS:
        value = tuple(value)
    return Leaf(column, op, value)


def parse_filter(
    filter: FilterLike, schema: pa.Schema | None = None
) -> tuple[Predicate | None, pc.Expression | None]:
    """Normalize a user filter into (prunable predicate, row expression over ``schema``'s columns)."""
    if filter is None:
        return None, None
    if isinstance(filter, Predicate):
        return filter, filter.to_expression(schema)
    if isinstance(filter, pc.Expression):
        return None, filter
    terms = list(filter)
    if not terms:
        return None, None
    if all(isinstance(t, (list, tuple)) and t and isinstance(t[0], (list, tuple)) for t in terms):
        predicate = Predicate(tuple(tuple(_parse_leaf(t) for t in clause) for clause in terms))
    else:
        predicate = Predicate((tuple(_parse_leaf(t) for t in terms),))
    return predicate, predicate.to_expression(schema)
