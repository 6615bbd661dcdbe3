"""Reading splits into Arrow data: projection, schema evolution by field id, row filters.

A filtered read skips the row groups whose statistics rule out every row (``_pushdown.py``), decodes only
the columns it returns or filters on, and filters each batch as it is decoded, so its memory follows what
matches rather than the files' size.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import options as opts
from paimon_core.deletionvectors import DeletionVector, read_deletion_vectors
from paimon_core.errors import DataFileError, PaimonError, SchemaError
from paimon_core.formats import DataFile, ParquetDataFile, cast_column, open_data_file
from paimon_core.manifest import DELETION_VECTORS_INDEX, DataFileMeta, IndexFileMeta
from paimon_core.predicate import Predicate
from paimon_core.storage import LocalBackend, join_path, local_path, unwrap
from paimon_core.table._compacted_changelog import read_changelog_slice
from paimon_core.table._data_split import DataSplit
from paimon_core.table._entries import explain_missing, is_changelog_file
from paimon_core.table._pushdown import RowGroupFilter, compile_mask, rows_of_groups

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

_BATCH_ROWS = 64 * 1024

ROW_KIND_FIELD = pa.field("rowkind", pa.string(), nullable=False)
"""The row kind column of changes and of ``$audit_log`` (Paimon's name)."""


class TableRead:
    """Reads splits of a table as Arrow data with the table's current schema.

    Args:
        table: the table.
        columns: the columns to return, in this order; all when None.
        row_filter: rows that fail it are dropped: a :class:`~paimon_core.predicate.Predicate` (whose
            statistics also skip row groups) or an Arrow expression over the table's column names.
    """

    def __init__(
        self,
        table: TableStore,
        columns: Sequence[str] | None = None,
        row_filter: Predicate | pc.Expression | None = None,
    ) -> None:
        self.table = table
        schema = table.arrow_schema
        if columns is not None:
            unknown = [c for c in columns if c not in schema.names]
            if unknown:
                raise SchemaError(f"unknown columns: {', '.join(unknown)}; the table has {schema.names}")
        self.columns = list(columns) if columns is not None else list(schema.names)
        self.output_schema = pa.schema([schema.field(c) for c in self.columns])
        self._values_schema = self.output_schema  # what reading a file returns, before subclasses add to it
        self.predicate = row_filter if isinstance(row_filter, Predicate) else None
        self.row_filter = self.predicate.to_expression(schema) if self.predicate is not None else row_filter
        needed = set(self.columns)
        if self.predicate is not None:
            needed |= self.predicate.columns
        elif row_filter is not None:
            needed |= _expression_columns(row_filter, schema.names)
        self._read_fields = [f for f in table.schema.fields if f.name in needed]
        self._read_schema = pa.schema([schema.field(f.name) for f in self._read_fields])
        self._row_mask = compile_mask(self.predicate, schema) if self.predicate is not None else None
        self.row_groups = RowGroupFilter.of(self.predicate, schema)
        """Skips row groups of the files read as they are (every file here; see the subclass)."""
        self.deletion_vectors = DeletionVectorCache(table)

    def _file_path(self, split: DataSplit, file: DataFileMeta) -> str:
        return file.external_path or join_path(split.bucket_path, file.file_name)

    def _file_names(self, file: DataFileMeta) -> dict[str, str | None]:
        """Each column of the table under its name in ``file`` (None when the file predates it)."""
        file_schema = self.table.schema_manager.schema(file.schema_id)
        by_id = {f.id: f.name for f in file_schema.fields}
        return {f.name: by_id.get(f.id) for f in self.table.schema.fields}

    def _column_plan(self, file: DataFileMeta) -> list[tuple[str | None, pa.Field]]:
        """For each field to read, the column name in this file (None when the file predates the column)."""
        names = self._file_names(file)
        return [(names[f.name], self._read_schema.field(f.name)) for f in self._read_fields]

    @contextmanager
    def _open(self, split: DataSplit, path: str, buffer_size: int = 0) -> Iterator[DataFile]:
        """Open a data file; every failure, opening or reading, names the file. ``buffer_size`` > 0 streams
        column chunks through buffers of that size instead of reading whole row groups' chunks.

        Raises:
            SnapshotExpiredError: the file is gone because the split's snapshot expired meanwhile.
            DataFileError: the file is missing from a live snapshot, truncated, not in its format (told by
                its suffix), or in a format not read here.
        """
        storage = self.table.storage
        try:
            # Arrow reads local files itself, anything else from memory it owns (formats/_readers.py says why).
            source: str | bytes | BinaryIO | None = read_changelog_slice(storage, path)
            if source is None:
                local = isinstance(unwrap(storage), LocalBackend)
                source = local_path(path) if local else storage.open_input(path)
            parquet = open_data_file(path, source, buffer_size=buffer_size)
            try:
                yield parquet
            finally:
                parquet.close()
        except FileNotFoundError:
            if split.snapshot_id <= 0:  # files outside any snapshot (a compaction's inputs)
                raise DataFileError(f"data file {path} is missing from storage", path) from None
            snapshot_id = split.first_snapshot_id
            listed = f"snapshot {snapshot_id}" if snapshot_id == split.snapshot_id else "a snapshot read"
            what = "changelog file" if is_changelog_file(self.table, path) else "data file"
            missing = DataFileError(f"{what} {path} is listed in {listed} but missing from storage", path)
            raise explain_missing(self.table, snapshot_id, missing) from None
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, PaimonError):
                raise
            raise DataFileError(f"cannot read data file {path}: {exc}", path) from exc

    def _conform(self, data: pa.Table, plan: list[tuple[str | None, pa.Field]]) -> pa.Table:
        columns = []
        for file_name, field in plan:
            if file_name is None:
                columns.append(pa.nulls(data.num_rows, field.type))
                continue
            column = data.column(file_name)
            if column.type != field.type:
                column = cast_column(column, field.type)
            columns.append(column)
        table = pa.Table.from_arrays(columns, schema=self._read_schema)
        if self._row_mask is not None:
            table = table.filter(self._row_mask(table))
        elif self.row_filter is not None:
            table = table.filter(self.row_filter)
        if table.schema.names != self.columns:
            table = table.select(self.columns)
        return table

    def selected_row_groups(
        self, parquet: DataFile, file: DataFileMeta, prune: RowGroupFilter | None
    ) -> list[int] | None:
        """The row groups of ``file`` that ``prune`` cannot rule out; None for all of them (and for a format
        without row-group statistics)."""
        if prune is None or not isinstance(parquet, ParquetDataFile):
            return None
        return prune.row_groups(parquet.metadata, parquet.schema_arrow, self._file_names(file))

    def read_file(self, split: DataSplit, file: DataFileMeta) -> pa.Table:
        plan = self._column_plan(file)
        present = [name for name, _ in plan if name is not None]
        with self._open(split, self._file_path(split, file)) as parquet:
            if self.row_filter is None:
                data = parquet.read(present)
                return self._conform(self.deletion_vectors.apply(split, file, data), plan)
            batches = list(self._filtered_batches(split, file, parquet, plan, present))
        return pa.Table.from_batches(batches, schema=self._values_schema)

    def iter_file_batches(self, split: DataSplit, file: DataFileMeta) -> Iterator[pa.RecordBatch]:
        plan = self._column_plan(file)
        present = [name for name, _ in plan if name is not None]
        with self._open(split, self._file_path(split, file)) as parquet:
            yield from self._filtered_batches(split, file, parquet, plan, present)

    def _filtered_batches(
        self,
        split: DataSplit,
        file: DataFileMeta,
        parquet: DataFile,
        plan: list[tuple[str | None, pa.Field]],
        present: list[str],
    ) -> Iterator[pa.RecordBatch]:
        """The rows of ``file`` that pass the filter and the deletion vector, batch by batch: row groups
        the statistics rule out are not read, and each batch is filtered as soon as it is decoded."""
        groups = self.selected_row_groups(parquet, file, self.row_groups)
        if groups is not None and not groups:
            return
        kept = self.deletion_vectors.kept_mask(split, file)
        if kept is not None and groups is not None:
            assert isinstance(parquet, ParquetDataFile)  # only Parquet has row groups to select
            kept = kept[rows_of_groups(parquet.metadata, groups)]  # positions stay the file's
        offset = 0
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, row_groups=groups, columns=present):
            data = pa.Table.from_batches([batch])
            if kept is not None:
                data = data.filter(pa.array(kept[offset : offset + batch.num_rows]))
            offset += batch.num_rows
            conformed = self._conform(data, plan)
            if conformed.num_rows:
                yield from conformed.to_batches()

    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table:
        work = [(s, f) for s in splits for f in s.files]
        if len(work) > 1:
            with ThreadPoolExecutor(max_workers=4) as pool:
                tables = list(pool.map(lambda item: self.read_file(*item), work))
        else:
            tables = [self.read_file(s, f) for s, f in work]
        if not tables:
            return self.output_schema.empty_table()
        return pa.concat_tables(tables)

    def to_batches(self, splits: Sequence[DataSplit]) -> Iterator[pa.RecordBatch]:
        for split in splits:
            for file in split.files:
                yield from self.iter_file_batches(split, file)

    def to_reader(self, splits: Sequence[DataSplit]) -> pa.RecordBatchReader:
        """A streaming reader: memory stays bounded by one batch per file read."""
        return pa.RecordBatchReader.from_batches(self.output_schema, self.to_batches(splits))


class InsertKinds(TableRead):
    """An append table's rows, each ``+I``."""

    def __init__(
        self, table: TableStore, columns: Sequence[str] | None, row_filter: Predicate | pc.Expression | None
    ) -> None:
        super().__init__(table, columns, row_filter)
        self.output_schema = self.output_schema.insert(0, ROW_KIND_FIELD)

    def read_file(self, split: DataSplit, file: DataFileMeta) -> pa.Table:
        return with_inserts(super().read_file(split, file))

    def iter_file_batches(self, split: DataSplit, file: DataFileMeta) -> Iterator[pa.RecordBatch]:
        for batch in super().iter_file_batches(split, file):
            yield from with_inserts(pa.Table.from_batches([batch])).to_batches()


def with_inserts(table: pa.Table) -> pa.Table:
    """``table`` with a ``rowkind`` column of ``+I`` in front."""
    return table.add_column(0, ROW_KIND_FIELD, pa.repeat(pa.scalar("+I"), table.num_rows))


class DeletionVectorCache:
    """The deletion vectors of the files a read meets: a snapshot's index manifest is read once, a
    bucket's deletion-vector files once per (snapshot, partition, bucket).

    Deletion vectors hide rows of data files (docs/primary-key-tables.md, "Deletion vectors"); a batch read
    drops them. Streaming splits (changes) never have any applied, as in Java.
    """

    def __init__(self, table: TableStore) -> None:
        self.table = table
        self.enabled = table.options.get_option(opts.DELETION_VECTORS_ENABLED)
        self._vectors: dict[tuple[int, bytes, int], dict[str, DeletionVector]] = {}
        self._index_files: dict[int, dict[tuple[bytes, int], list[IndexFileMeta]]] = {}
        self._lock = threading.Lock()

    def vectors(self, split: DataSplit) -> dict[str, DeletionVector]:
        if not self.enabled or split.streaming or split.snapshot_id <= 0:
            return {}
        key = (split.snapshot_id, split.partition, split.bucket)
        with self._lock:
            found = self._vectors.get(key)
            if found is None:
                found = self._load(split)
                self._vectors[key] = found
            return found

    def _load(self, split: DataSplit) -> dict[str, DeletionVector]:
        by_bucket = self._index_files.get(split.snapshot_id)
        if by_bucket is None:
            by_bucket = {}
            snapshot = self.table.snapshot_manager.snapshot(split.snapshot_id)
            for entry in self.table.index_entries(snapshot):
                if entry.file.index_type == DELETION_VECTORS_INDEX:
                    by_bucket.setdefault((entry.partition, entry.bucket), []).append(entry.file)
            self._index_files[split.snapshot_id] = by_bucket
        vectors: dict[str, DeletionVector] = {}
        for meta in by_bucket.get((split.partition, split.bucket), []):
            vectors.update(read_deletion_vectors(self.table, meta))
        return vectors

    def kept_mask(self, split: DataSplit, file: DataFileMeta) -> npt.NDArray[np.bool_] | None:
        """True for each row of ``file`` no deletion vector hides; None when none hides any."""
        vector = self.vectors(split).get(file.file_name)
        if vector is None or vector.is_empty():
            return None
        kept: npt.NDArray[np.bool_] = ~vector.deleted_mask(file.row_count)
        return kept

    def apply(
        self,
        split: DataSplit,
        file: DataFileMeta,
        data: pa.Table,
        positions: npt.NDArray[np.int64] | None = None,
    ) -> pa.Table:
        """``data`` without the rows the deletion vector of ``file`` hides: ``data`` holds the rows at
        ``positions`` of the file (every row, in order, when None)."""
        kept = self.kept_mask(split, file)
        if kept is None:
            return data
        return data.filter(pa.array(kept if positions is None else kept[positions]))


def _expression_columns(expression: pc.Expression, names: Sequence[str]) -> set[str]:
    # pyarrow has no public API to list an expression's fields; its text form names them.
    text = str(expression)
    return {name for name in names if name in text}
