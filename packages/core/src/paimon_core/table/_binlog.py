"""``t$binlog``: the table's changes as ``$audit_log`` reads them, each value column an array.

A batch read gives one-element arrays (``[v]``) with each row's kind. A streamed read (a snapshot's
changes) packs an update's ``-U`` row and the ``+U`` row after it into one ``+U`` row of two-element arrays,
``[before, after]``; inserts and deletes stay one-element arrays. This is Java Paimon's ``BinlogTable``.
See docs/system-tables.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_core.predicate import FilterLike
from paimon_core.table._data_split import DataSplit
from paimon_core.table._follow import TableStream
from paimon_core.table._read import ROW_KIND_FIELD, TableRead
from paimon_core.table._readable import TimeTravel
from paimon_core.table._views import AuditLogTable, DataView, ReadOptimizedTable

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["BinlogTable", "binlog_schema", "data_view", "to_binlog"]


def binlog_schema(schema: pa.Schema) -> pa.Schema:
    """``rowkind`` first, then each column of ``schema`` (``rowkind`` aside) as a nullable array of its
    type with nullable elements (Java's ``ArrayType(type.nullable())``)."""
    fields = [ROW_KIND_FIELD]
    for field in schema:
        if field.name != ROW_KIND_FIELD.name:
            element = pa.field("element", field.type, nullable=True)
            fields.append(pa.field(field.name, pa.list_(element), nullable=True))
    return pa.schema(fields)


def _pairs(kinds: list[str]) -> tuple[list[int], list[int], list[int]]:
    """The rows (``kinds`` of a change read, in order) grouped as Java's ``PackChangelogReader`` groups
    them: a ``-U`` takes the row after it. Returns each group's kind row, the value offsets and the value
    rows."""
    kind_rows: list[int] = []
    offsets = [0]
    rows: list[int] = []
    i, n = 0, len(kinds)
    while i < n:
        if kinds[i] == "-U" and i + 1 < n:
            rows += [i, i + 1]
            kind_rows.append(i + 1)  # the pair has the second row's kind
            i += 2
        else:
            rows.append(i)
            kind_rows.append(i)
            i += 1
        offsets.append(len(rows))
    return kind_rows, offsets, rows


def to_binlog(changes: pa.Table, schema: pa.Schema, pack: bool) -> pa.Table:
    """``changes`` (``rowkind`` first, as ``$audit_log`` reads them) as ``schema``'s binlog rows; ``pack``
    pairs each ``-U`` with the row after it."""
    kinds = changes.column(ROW_KIND_FIELD.name).combine_chunks()
    if pack:
        kind_rows, offsets, rows = _pairs(kinds.to_pylist())
        taken = pa.array(rows, pa.int64())
        out_kinds = kinds.take(pa.array(kind_rows, pa.int64()))
    else:
        offsets = list(range(changes.num_rows + 1))
        taken = None
        out_kinds = kinds
    offset_array = pa.array(offsets, pa.int32())
    columns: list[pa.Array] = [out_kinds]
    for field in schema:
        if field.name == ROW_KIND_FIELD.name:
            continue
        values = changes.column(field.name).combine_chunks()
        if taken is not None:
            values = values.take(taken)
        columns.append(pa.ListArray.from_arrays(offset_array, values, type=field.type))
    return pa.Table.from_arrays(columns, schema=schema)


class BinlogRead(TableRead):
    """The binlog rows of splits: the audit log's read of each split, then :func:`to_binlog` (packed for a
    streaming split, as Java packs a split that ``isStreaming``)."""

    def __init__(self, changes: TableRead, schema: pa.Schema) -> None:
        super().__init__(changes.table, None, None)
        self.changes = changes
        self.output_schema = schema

    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table:
        tables = [
            pa.Table.from_batches(list(self.to_batches([split])), self.output_schema) for split in splits
        ]
        return pa.concat_tables(tables) if tables else self.output_schema.empty_table()

    def to_batches(self, splits: Sequence[DataSplit]) -> Iterator[pa.RecordBatch]:
        schema = self.changes.output_schema
        for split in splits:
            # a -U and its +U are neighbours within one split's read: pack the split's rows together
            changes = pa.Table.from_batches(list(self.changes.to_batches([split])), schema)
            if changes.num_rows:
                yield from to_binlog(changes, self.output_schema, split.streaming).to_batches()


class BinlogTable(AuditLogTable):
    """``t$binlog``: the audit log with array columns (see the module docstring)."""

    name = "binlog"

    def __init__(self, data: TableStore) -> None:
        super().__init__(data)
        self.arrow_schema = binlog_schema(data.arrow_schema)

    def new_read(self, columns: Sequence[str] | None = None, filter: FilterLike = None) -> TableRead:
        """The binlog rows of the data table's splits (batch or streamed), ``rowkind`` first.

        A filter applies to the data table's columns (as their values, not the arrays)."""
        changes = AuditLogTable(self.data).new_read(columns, filter)
        return BinlogRead(changes, _wanted(self.arrow_schema, columns))

    def _plan(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> tuple[TableRead, list[DataSplit]]:
        read, splits = AuditLogTable(self.data)._plan(columns, filter, travel)
        return BinlogRead(read, _wanted(self.arrow_schema, columns)), splits

    def stream(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        *,
        consumer_id: str | None = None,
        follow: bool = True,
        until_snapshot: int | None = None,
        poll_interval: float | None = None,
    ) -> TableStream:
        """Follow the table's changes as binlog rows (``rowkind`` first, updates packed); arguments as for
        :meth:`Table.stream`."""
        stream = super().stream(
            columns,
            filter,
            consumer_id=consumer_id,
            follow=follow,
            until_snapshot=until_snapshot,
            poll_interval=poll_interval,
        )
        stream._read = BinlogRead(stream._read, _wanted(self.arrow_schema, columns))
        stream.schema = stream._read.output_schema
        return stream


def _wanted(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    """``schema`` with only ``columns`` (``rowkind`` always first: the read needs it to pack)."""
    if columns is None:
        return schema
    return pa.schema([ROW_KIND_FIELD, *(schema.field(c) for c in columns if c != ROW_KIND_FIELD.name)])


def data_view(data: TableStore, name: str) -> DataView:
    """The data-reading system table ``name`` (``audit_log``, ``binlog`` or ``ro``) of ``data``."""
    views: dict[str, type[DataView]] = {
        AuditLogTable.name: AuditLogTable,
        BinlogTable.name: BinlogTable,
        ReadOptimizedTable.name: ReadOptimizedTable,
    }
    return views[name](data)
