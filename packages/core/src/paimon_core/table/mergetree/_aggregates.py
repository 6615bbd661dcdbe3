"""Aggregate functions of the ``aggregation`` merge engine (Paimon's ``fields.<c>.aggregate-function``).

Each function folds one column over the ordered records of every key group at once: picks by numpy index
arithmetic (``last_value``, ``first_value``, ...) or Arrow hash aggregates over (group, value) tables (``sum``,
``min``, ``listagg``, ...). Retractions (``-U``/``-D``) call the function's retract where Paimon has one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import ConfigError, MergeError
from paimon_core.options import close_matches
from paimon_core.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarCharType,
    to_arrow_type,
)

__all__ = ["FUNCTIONS", "Aggregator", "aggregator_for", "first_where", "last_where", "take_or_null"]

Indices = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

_NUMERIC = (TinyIntType, SmallIntType, IntType, BigIntType, FloatType, DoubleType, DecimalType)
_COMPARABLE = (*_NUMERIC, CharType, VarCharType, DateType, TimeType, TimestampType, LocalZonedTimestampType)
_STRING = (CharType, VarCharType)

# name -> (accepted types (None: any), can retract)
FUNCTIONS: dict[str, tuple[tuple[type[DataType], ...] | None, bool]] = {
    "sum": (_NUMERIC, True),
    "product": (_NUMERIC, False),
    "max": (_COMPARABLE, False),
    "min": (_COMPARABLE, False),
    "last_value": (None, True),
    "last_non_null_value": (None, True),
    "first_value": (None, False),
    "first_non_null_value": (None, False),
    "listagg": (_STRING, False),
    "bool_and": ((BooleanType,), False),
    "bool_or": ((BooleanType,), False),
    "collect": ((ArrayType,), False),
    "merge_map": ((MapType,), True),
}
_ALIASES = {"first_not_null_value": "first_non_null_value"}


def last_where(groups: Indices, mask: Mask, count: int) -> Indices:
    """For each group (ids non-decreasing), the index of its last row where ``mask`` holds (-1 if none)."""
    result = np.full(count, -1, dtype=np.int64)
    rows = np.nonzero(mask)[0]
    if len(rows):
        owners = groups[rows]
        ends = np.r_[owners[1:] != owners[:-1], True]
        result[owners[ends]] = rows[ends]
    return result


def first_where(groups: Indices, mask: Mask, count: int) -> Indices:
    """For each group, the index of its first row where ``mask`` holds (-1 if none)."""
    result = np.full(count, -1, dtype=np.int64)
    rows = np.nonzero(mask)[0]
    if len(rows):
        owners = groups[rows]
        starts = np.r_[True, owners[1:] != owners[:-1]]
        result[owners[starts]] = rows[starts]
    return result


def take_or_null(column: pa.ChunkedArray | pa.Array, indices: Indices) -> pa.Array:
    """``column`` at ``indices``; -1 gives null."""
    taken = pc.take(column, pa.array(indices, mask=indices < 0))
    return taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken


def _valid(column: pa.ChunkedArray | pa.Array) -> Mask:
    valid: Mask = pc.is_valid(column).to_numpy(zero_copy_only=False)
    return valid


@dataclass(frozen=True)
class Aggregator:
    """One column's aggregate function."""

    column: str
    function: str
    data_type: DataType
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False

    @property
    def arrow_type(self) -> pa.DataType:
        return to_arrow_type(self.data_type)

    def aggregate(
        self, column: pa.ChunkedArray, groups: Indices, count: int, considered: Mask, retract: Mask
    ) -> pa.Array:
        """The folded value of every group (``considered`` rows only; ``retract`` marks -U/-D rows)."""
        adds = considered & ~retract
        retracts = considered & retract
        if retracts.any() and not FUNCTIONS[self.function][1]:
            if not self.ignore_retract:
                raise MergeError(
                    f"aggregate function {self.function!r} of column {self.column!r} cannot retract -U/-D "
                    f"records; set 'fields.{self.column}.ignore-retract' = 'true' to skip them"
                )
            retracts = np.zeros_like(retracts)
        elif self.ignore_retract:
            retracts = np.zeros_like(retracts)
        return _IMPLEMENTATIONS[self.function](self, column, groups, count, adds, retracts)


def _last_value(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask
) -> pa.Array:
    last = last_where(groups, adds | retracts, count)
    return take_or_null(column, np.where((last >= 0) & retracts[np.maximum(last, 0)], -1, last))


def _last_non_null(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask
) -> pa.Array:
    last = last_where(groups, (adds | retracts) & _valid(column), count)
    return take_or_null(column, np.where((last >= 0) & retracts[np.maximum(last, 0)], -1, last))


def _first_value(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask
) -> pa.Array:
    return take_or_null(column, first_where(groups, adds, count))


def _first_non_null(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask
) -> pa.Array:
    return take_or_null(column, first_where(groups, adds & _valid(column), count))


def _hash_aggregate(
    column: Any,
    groups: Indices,
    count: int,
    rows: Mask,
    function: str,
    options: Any = None,
    values: Any = None,
) -> pa.Array:
    """Arrow's hash aggregate ``function`` of the chosen rows per group; groups without rows are null."""
    picked = np.nonzero(rows)[0]
    data = values if values is not None else pc.take(column, pa.array(picked))
    table = pa.table({"g": pa.array(groups[picked]), "v": data})
    grouped = table.group_by("g", use_threads=False).aggregate([("v", function, options)])
    where = np.full(count, -1, dtype=np.int64)
    where[grouped.column("g").to_numpy()] = np.arange(grouped.num_rows)
    return take_or_null(grouped.column(f"v_{function}"), where)


_MIN_ONE = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)


def _sum(agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask) -> pa.Array:
    rows = adds | retracts
    picked = np.nonzero(rows)[0]
    values = pc.take(column, pa.array(picked))
    if retracts.any():
        values = pc.if_else(pa.array(retracts[picked]), pc.negate(values), values)
    summed = _hash_aggregate(column, groups, count, rows, "sum", _MIN_ONE, values)
    return pc.cast(summed, agg.arrow_type, safe=False)  # integer sums wrap as in Java


def _simple(function: str) -> Callable[..., pa.Array]:
    def aggregate(
        agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask
    ) -> pa.Array:
        result = _hash_aggregate(column, groups, count, adds, function, _MIN_ONE)
        return pc.cast(result, agg.arrow_type, safe=False)

    return aggregate


def _listagg(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask
) -> pa.Array:
    non_empty = _valid(column) & (
        pc.fill_null(pc.not_equal(column, ""), False).to_numpy(zero_copy_only=False)
    )
    lists = _hash_aggregate(column, groups, count, adds & non_empty, "list")
    if agg.distinct:
        joined: list[str | None] = []
        for items in lists.to_pylist():
            if items is None:
                joined.append(None)
                continue
            seen: list[str] = []
            for item in items:
                for token in item.split(agg.delimiter):
                    if token not in seen:
                        seen.append(token)
            joined.append(agg.delimiter.join(seen))
        return pa.array(joined, pa.string())
    return pc.cast(pc.binary_join(lists, agg.delimiter), agg.arrow_type)


def _collect(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask
) -> pa.Array:
    lists = _hash_aggregate(column, groups, count, adds & _valid(column), "list")
    merged: list[list[Any] | None] = []
    for items in lists.to_pylist():
        if items is None:
            merged.append(None)
            continue
        flat = [value for item in items for value in item]
        if agg.distinct:
            flat = [v for i, v in enumerate(flat) if v not in flat[:i]]
        merged.append(flat)
    return pa.array(merged, agg.arrow_type)


def _merge_map(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask
) -> pa.Array:
    rows = np.nonzero((adds | retracts) & _valid(column))[0]
    maps: list[dict[Any, Any] | None] = [None] * count
    values = pc.take(column, pa.array(rows)).to_pylist()
    for row, pairs in zip(rows, values, strict=True):
        group = int(groups[row])
        current = maps[group] if maps[group] is not None else {}
        assert current is not None
        if retracts[row]:
            for key, _ in pairs:
                current.pop(key, None)
        else:
            current.update(dict(pairs))
        maps[group] = current
    return pa.array([None if m is None else list(m.items()) for m in maps], agg.arrow_type)


_IMPLEMENTATIONS: dict[str, Callable[..., pa.Array]] = {
    "sum": _sum,
    "product": _simple("product"),
    "max": _simple("max"),
    "min": _simple("min"),
    "bool_and": _simple("all"),
    "bool_or": _simple("any"),
    "last_value": _last_value,
    "last_non_null_value": _last_non_null,
    "first_value": _first_value,
    "first_non_null_value": _first_non_null,
    "listagg": _listagg,
    "collect": _collect,
    "merge_map": _merge_map,
}


def aggregator_for(
    column: str,
    function: str,
    data_type: DataType,
    *,
    ignore_retract: bool = False,
    delimiter: str = ",",
    distinct: bool = False,
) -> Aggregator:
    """The aggregator of ``column``.

    Raises:
        ConfigError: an unknown function (naming close matches), or one that does not fit the column's type.
    """
    name = _ALIASES.get(function.strip().lower(), function.strip().lower())
    if name == "count":
        raise ConfigError(
            f"aggregate function 'count' for column {column!r}: Paimon removed it (0.9, apache/paimon#3932) "
            "because a count cannot be merged correctly; write 1 per row into the column and use 'sum'",
            f"fields.{column}.aggregate-function",
        )
    if name not in FUNCTIONS:
        raise ConfigError(
            f"unknown aggregate function {function!r} for column {column!r}"
            f"{close_matches(name, FUNCTIONS)}; Paimon's functions: {', '.join(sorted(FUNCTIONS))}",
            f"fields.{column}.aggregate-function",
        )
    accepted = FUNCTIONS[name][0]
    if accepted is not None and not isinstance(data_type, accepted):
        raise ConfigError(
            f"aggregate function {name!r} does not fit column {column!r} of type {data_type}",
            f"fields.{column}.aggregate-function",
        )
    return Aggregator(column, name, data_type, ignore_retract, delimiter, distinct)
