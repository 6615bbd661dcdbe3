"""Filters pushed into Parquet: row groups skipped by their statistics, rows filtered as they are decoded.

A read's :class:`~paimon_core.predicate.Predicate` is checked against each row group's column statistics
(min, max, null count) before anything is decoded. A data file keeps the schema it was written with, so
the predicate's columns are found in it by field id: under their old names, as all-null columns when the
file predates them, and with their min/max cast to the current type when the type was widened (a change
that does not keep the order, anything to ``string``, only uses null counts). What the statistics cannot
decide is left to the row filter, which runs on every decoded batch, so memory follows what matches.

Parquet's page index would let a reader skip pages too, but pyarrow can neither read it nor decode part
of a row group: row groups are the unit skipped here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paimon_core.predicate import Leaf, Predicate

__all__ = ["RowGroupFilter", "compile_mask", "rows_of_groups"]

Stats = tuple[Any, Any, int | None]
"""A column's (min, max, null count) in one row group; None where unknown."""


@dataclass(frozen=True)
class RowGroupFilter:
    """Chooses the row groups of a data file that may hold rows ``predicate`` accepts.

    Attributes:
        predicate: leaves whose literals are Python values of their column's (current) type.
        types: the current Arrow type of each column the predicate names.
    """

    predicate: Predicate
    types: Mapping[str, pa.DataType]

    @classmethod
    def of(
        cls, predicate: Predicate | None, schema: pa.Schema, keep: Callable[[Leaf], bool] | None = None
    ) -> RowGroupFilter | None:
        """The filter for ``predicate`` over ``schema``'s columns; None when it can rule nothing out.

        ``keep`` chooses the leaves that may prune (a merged read keeps only key columns): the others,
        like the leaves statistics cannot decide, are dropped from their clause, which only widens it.
        """
        if predicate is None:
            return None
        types = {name: schema.field(name).type for name in predicate.columns if name in schema.names}

        def prunes(leaf: Leaf) -> bool:
            return leaf.column in types and (keep is None or keep(leaf))

        clauses = []
        for clause in predicate.clauses:
            kept = tuple(_typed_leaf(leaf, types[leaf.column]) for leaf in clause if prunes(leaf))
            if not kept:
                return None  # this clause may accept any row: nothing can be ruled out
            clauses.append(kept)
        return cls(Predicate(tuple(clauses)), types)

    def row_groups(
        self, metadata: pq.FileMetaData, file_schema: pa.Schema, names: Mapping[str, str | None]
    ) -> list[int] | None:
        """The row groups that may hold a matching row, in order; None when every one may.

        Args:
            metadata: the data file's Parquet metadata.
            file_schema: the file's Arrow schema.
            names: for each column of the table, its name in this file (None: the file predates it).
        """
        columns = self._file_columns(metadata, file_schema, names)
        chosen = []
        for index in range(metadata.num_row_groups):
            group = metadata.row_group(index)
            stats = {name: read(group) for name, read in columns.items()}
            if self.predicate.may_match({}, stats, group.num_rows):
                chosen.append(index)
        return None if len(chosen) == metadata.num_row_groups else chosen

    def _file_columns(
        self, metadata: pq.FileMetaData, file_schema: pa.Schema, names: Mapping[str, str | None]
    ) -> dict[str, Callable[[pq.RowGroupMetaData], Stats]]:
        """How to read each predicate column's statistics from a row group of this file."""
        leaves = {metadata.schema.column(j).path: j for j in range(metadata.num_columns)}
        columns: dict[str, Callable[[pq.RowGroupMetaData], Stats]] = {}
        for name, table_type in self.types.items():
            if name not in names:
                continue
            file_name = names[name]
            if file_name is None:
                columns[name] = _all_null
                continue
            index = leaves.get(file_name)
            if index is None or file_name not in file_schema.names:
                continue  # a nested column: its statistics are per leaf
            file_type = file_schema.field(file_name).type
            columns[name] = _stats_reader(index, file_type, table_type)
        return columns


def _all_null(group: pq.RowGroupMetaData) -> Stats:
    return None, None, group.num_rows


def _stats_reader(
    index: int, file_type: pa.DataType, table_type: pa.DataType
) -> Callable[[pq.RowGroupMetaData], Stats]:
    convert = _converter(file_type, table_type)
    floating = pa.types.is_floating(file_type)

    def read(group: pq.RowGroupMetaData) -> Stats:
        chunk = group.column(index)
        stats = chunk.statistics if chunk.is_stats_set else None
        if stats is None:
            return None, None, None
        nulls = stats.null_count if stats.has_null_count else None
        if convert is None or not stats.has_min_max or chunk.physical_type == "INT96":
            return None, None, nulls
        try:  # pyarrow before 20 cannot convert some statistics (decimals stored as integers)
            lo, hi = stats.min, stats.max
            if floating and (math.isnan(lo) or math.isnan(hi)):
                return None, None, nulls
            return convert(lo), convert(hi), nulls
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None, None, nulls

    return read


def _converter(file_type: pa.DataType, table_type: pa.DataType) -> Callable[[Any], Any] | None:
    """Turns a file's statistic into a value of the table's type; None when its order is not kept."""
    if file_type == table_type:
        return _identity
    t = pa.types
    widened = (
        (t.is_integer(file_type) and (t.is_integer(table_type) or t.is_floating(table_type)))
        or (t.is_floating(file_type) and t.is_floating(table_type))
        or (t.is_decimal(file_type) and t.is_decimal(table_type))
        or (_is_text(file_type) and _is_text(table_type))
        or (_is_bytes(file_type) and _is_bytes(table_type))
        or (t.is_timestamp(file_type) and t.is_timestamp(table_type) and file_type.tz == table_type.tz)
    )
    if not widened:
        return None

    def convert(value: Any) -> Any:
        return pa.scalar(value, file_type).cast(table_type).as_py()

    return convert


def _identity(value: Any) -> Any:
    return value


def _is_text(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))


def _is_bytes(arrow_type: pa.DataType) -> bool:
    t = pa.types
    return bool(
        t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or t.is_fixed_size_binary(arrow_type)
    )


def _typed_leaf(leaf: Leaf, column_type: pa.DataType) -> Leaf:
    """``leaf`` with its literals as Python values of the column's type, as statistics are read."""
    if leaf.op in ("is null", "is not null"):
        return leaf
    try:
        if leaf.op in ("in", "not in"):
            return Leaf(leaf.column, leaf.op, tuple(pa.array(list(leaf.value), column_type).to_pylist()))
        return Leaf(leaf.column, leaf.op, pa.scalar(leaf.value, column_type).as_py())
    except (pa.ArrowException, TypeError, ValueError):
        return leaf  # the row filter reports the mismatch; statistics then compare what they can


def rows_of_groups(metadata: pq.FileMetaData, groups: Sequence[int]) -> npt.NDArray[np.int64]:
    """The positions in the file of the rows of ``groups``, in order."""
    starts = np.zeros(metadata.num_row_groups + 1, dtype=np.int64)
    starts[1:] = np.cumsum([metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)])
    if not groups:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(starts[g], starts[g + 1], dtype=np.int64) for g in groups])


def compile_mask(
    predicate: Predicate, schema: pa.Schema
) -> Callable[[pa.Table], pa.ChunkedArray | pa.Array] | None:
    """``predicate`` as a function from a batch of rows to its selection mask: the same answer as
    ``predicate.to_expression(schema)``, without planning an expression for every batch. None when a
    column is not in ``schema`` (the expression then reports it)."""
    if any(name not in schema.names for name in predicate.columns):
        return None
    clauses = [[_leaf_mask(leaf, schema.field(leaf.column).type) for leaf in c] for c in predicate.clauses]

    def mask(data: pa.Table) -> pa.ChunkedArray | pa.Array:
        result = None
        for clause in clauses:
            conj = None
            for leaf in clause:
                value = leaf(data)
                conj = value if conj is None else pc.and_kleene(conj, value)
            if conj is None:
                conj = pa.repeat(pa.scalar(True), data.num_rows)
            result = conj if result is None else pc.or_kleene(result, conj)
        return result if result is not None else pa.repeat(pa.scalar(True), data.num_rows)

    return mask


def _leaf_mask(leaf: Leaf, column_type: pa.DataType) -> Callable[[pa.Table], Any]:
    """One leaf as Arrow kernels: the kernels :meth:`Leaf.to_expression` names, with the same literals."""
    name, op = leaf.column, leaf.op
    if op == "is null":
        return lambda data: pc.is_null(data.column(name))
    if op == "is not null":
        return lambda data: pc.invert(pc.is_null(data.column(name)))
    if op in ("in", "not in"):
        values = pa.array([v for v in leaf.value if v is not None], type=column_type)
        if op == "in":
            return lambda data: pc.is_in(data.column(name), value_set=values)

        def not_in(data: pa.Table) -> Any:
            column = data.column(name)
            return pc.and_kleene(pc.invert(pc.is_in(column, value_set=values)), pc.is_valid(column))

        return not_in
    scalar = pa.scalar(leaf.value, type=column_type)
    kernel = _KERNELS[op]
    return lambda data: kernel(data.column(name), scalar)


_KERNELS: dict[str, Callable[[Any, Any], Any]] = {
    "=": pc.equal, "==": pc.equal, "!=": pc.not_equal,
    "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal,
}  # fmt: skip
