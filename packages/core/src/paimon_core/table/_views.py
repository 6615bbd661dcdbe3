"""The system tables that read a table's data: ``t$audit_log`` and ``t$ro``.

``$audit_log`` is the table with a ``rowkind`` column in front (``+I``, ``-U``, ``+U``, ``-D``): a batch read
returns each key's merged record with its kind, retractions kept (an incremental read, the changes between
two snapshots merged per key); :meth:`AuditLogTable.stream` follows the table's changes. ``$ro``
("read-optimized") reads only the files of a primary-key table's top level, without a merge: as fresh as
the last full compaction, as fast as an append table (with deletion vectors or the first-row engine, every
level but 0, as Java's batch scan reads them). See docs/system-tables.md.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core import options as opts
from paimon_core.errors import ReadOnlyTableError
from paimon_core.predicate import FilterLike, Predicate, parse_filter
from paimon_core.table._data_split import DataSplit
from paimon_core.table._follow import TableStream
from paimon_core.table._read import ROW_KIND_FIELD, InsertKinds, TableRead
from paimon_core.table._readable import Readable, TimeTravel
from paimon_core.table._scan import TableScan, make_splits
from paimon_core.table.mergetree._reader import KeyValueTableRead

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["AuditLogTable", "DataView", "ReadOptimizedTable"]


class DataView(Readable):
    """A read-only view of a table's data; the readers (``to_arrow``, ``to_batches``, ``to_pandas``,
    ``to_polars``, ``to_duckdb``, the Arrow C stream, iteration) are :class:`Readable`'s."""

    name = ""

    def __init__(self, data: TableStore) -> None:
        self.data = data
        self.identifier = f"{data.identifier}${self.name}"
        self.arrow_schema = data.arrow_schema

    @property
    def field_names(self) -> list[str]:
        return list(self.arrow_schema.names)

    @abstractmethod
    def _plan(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> tuple[TableRead, list[DataSplit]]:
        """The read (which refuses unknown columns) and the splits of the view."""

    def _scan(self, predicate: Predicate | None, travel: TimeTravel) -> TableScan:
        return TableScan(self.data, predicate, travel=travel)

    def _read(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> tuple[TableRead, list[DataSplit], list[str] | None]:
        read, splits = self._plan(columns, filter, travel)
        wanted = None if columns is None or list(columns) == read.output_schema.names else list(columns)
        return read, splits, wanted

    def _read_table(self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel) -> pa.Table:
        read, splits, wanted = self._read(columns, filter, travel)
        data = read.to_arrow(splits)
        return data if wanted is None else data.select(wanted)

    def _read_batches(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> pa.RecordBatchReader:
        read, splits, wanted = self._read(columns, filter, travel)
        if wanted is None:
            return read.to_reader(splits)
        schema = pa.schema([read.output_schema.field(name) for name in wanted])
        return pa.RecordBatchReader.from_batches(schema, (b.select(wanted) for b in read.to_batches(splits)))

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ReadOnlyTableError(f"{self.identifier} is a system table: it cannot be written")

    append = overwrite = delete = new_write = new_commit = _refuse

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identifier!r})"


class AuditLogTable(DataView):
    """``t$audit_log``: the table's records with their row kind (see the module docstring)."""

    name = "audit_log"

    def __init__(self, data: TableStore) -> None:
        super().__init__(data)
        self.arrow_schema = data.arrow_schema.insert(0, ROW_KIND_FIELD)

    def _plan(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> tuple[TableRead, list[DataSplit]]:
        predicate = parse_filter(filter, self.arrow_schema)[0]
        splits = self._scan(predicate, travel).plan()
        return self.new_read(columns, filter), splits

    def new_read(self, columns: Sequence[str] | None = None, filter: FilterLike = None) -> TableRead:
        """The read of the data table's splits (batch or streamed) as this view's rows, ``rowkind`` first:
        for engines that plan the splits themselves."""
        data = self.data
        expression = parse_filter(filter, self.arrow_schema)[1]
        values = _value_columns(columns)
        if data.has_primary_key:
            return KeyValueTableRead(data, values, expression, row_kind=True, keep_delete=True)
        return InsertKinds(data, values, expression)

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
        """Follow the table's changes with their row kinds (``rowkind`` first); arguments as for
        :meth:`Table.stream`."""
        return TableStream(
            self.data,
            _value_columns(columns),
            filter,
            consumer_id=consumer_id,
            follow=follow,
            until_snapshot=until_snapshot,
            poll_interval=poll_interval,
            row_kind=True,
        )


class ReadOptimizedTable(DataView):
    """``t$ro``: a primary-key table's top level read without a merge (see the module docstring)."""

    name = "ro"

    def _plan(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> tuple[TableRead, list[DataSplit]]:
        data = self.data
        predicate, expression = parse_filter(filter, self.arrow_schema)
        scan = self._scan(predicate, travel)
        read = TableRead(data, columns, predicate if predicate is not None else expression)
        if not data.has_primary_key or scan.snapshot is None:
            return read, scan.plan()
        if _skips_level0(data):
            # Java's batch scan of such a table filters levels > 0, replacing $ro's top-level filter: every
            # level above 0 holds each key once (deletion vectors hide the superseded rows; a first-row
            # table's compaction drops later records), so they read without a merge.
            entries = [e for e in scan.files() if e.file.level > 0]
            # each file read on its own through the key-value read: it drops the retractions a level
            # below the top may hold, as Java's read of those splits does
            read = KeyValueTableRead(data, columns, predicate if predicate is not None else expression)
        else:
            top = data.options.merge_tree_levels() - 1
            entries = [e for e in scan.files() if e.file.level == top]
        return read, _one_file_per_split(make_splits(data, scan.snapshot.id, entries))


def _skips_level0(data: TableStore) -> bool:
    """Whether Java's batch scan reads ``data`` (a primary-key table) at every level but 0: deletion
    vectors, or the first-row merge engine."""
    options = data.options
    deletion_vectors = options.get_option(opts.DELETION_VECTORS_ENABLED)
    return bool(deletion_vectors) or options.get_option(opts.MERGE_ENGINE) == "first-row"


def _one_file_per_split(splits: list[DataSplit]) -> list[DataSplit]:
    """Top-level files hold distinct keys: each is read on its own."""
    return [
        DataSplit(s.snapshot_id, s.partition, s.bucket, s.bucket_path, (f,)) for s in splits for f in s.files
    ]


def _value_columns(columns: Sequence[str] | None) -> list[str] | None:
    """The table columns among ``columns`` (the read puts ``rowkind`` in front by itself)."""
    return None if columns is None else [c for c in columns if c != ROW_KIND_FIELD.name]
