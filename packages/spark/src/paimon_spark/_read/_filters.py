"""Spark's pushed filters → Paimon predicate terms (used to prune partitions and files, then applied exactly).

Only filters on top-level columns of types whose Python values compare exactly with Paimon's (numbers,
decimals, strings, booleans, dates) are accepted; every other filter is handed back to Spark, which then
evaluates it itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
)

from paimon_core.types import (
    BigIntType,
    BooleanType,
    CharType,
    DataField,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarCharType,
)

__all__ = ["to_terms"]

_SAFE_TYPES = (
    BooleanType,
    TinyIntType,
    SmallIntType,
    IntType,
    BigIntType,
    FloatType,
    DoubleType,
    DecimalType,
    CharType,
    VarCharType,
    DateType,
)
_COMPARISONS: dict[type[Filter], str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}

Term = tuple[Any, ...]


def _term(spark_filter: Filter, fields: dict[str, DataField]) -> Term | None:
    attribute: tuple[str, ...] = tuple(getattr(spark_filter, "attribute", ()))
    if len(attribute) != 1 or attribute[0] not in fields:
        return None
    name = attribute[0]
    if not isinstance(fields[name].type, _SAFE_TYPES):
        return None
    op = _COMPARISONS.get(type(spark_filter))
    if op is not None:
        value = spark_filter.value  # type: ignore[attr-defined]
        return None if value is None else (name, op, value)
    if isinstance(spark_filter, In):
        values = tuple(v for v in spark_filter.value if v is not None)
        return (name, "in", values) if values else None
    if isinstance(spark_filter, IsNull):
        return (name, "is null")
    if isinstance(spark_filter, IsNotNull):
        return (name, "is not null")
    return None


def to_terms(filters: Sequence[Filter], fields: Sequence[DataField]) -> tuple[list[Term], list[Filter]]:
    """Split Spark filters into (accepted AND terms, filters Spark must still evaluate)."""
    by_name = {f.name: f for f in fields}
    accepted: list[Term] = []
    rejected: list[Filter] = []
    for spark_filter in filters:
        term = _term(spark_filter, by_name)
        if term is None:
            rejected.append(spark_filter)
        else:
            accepted.append(term)
    return accepted, rejected
