"""Merge-on-read of primary-key tables: a split's key-range sections, read raw or merged.

See docs/primary-key-tables.md ("Reading"). A section holding one sorted run without deletes has each key
once: its files are read as plain Parquet, with filters pushed down. Other sections are concatenated,
ordered once and merged by the table's merge engine; value filters run only after the merge, and only the
filter's key (and partition) terms skip row groups of the merged files: every record of a key is in or out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import options as opts
from paimon_core.formats import ParquetDataFile, cast_column
from paimon_core.manifest import DataFileMeta
from paimon_core.predicate import Predicate
from paimon_core.table._data_split import DataSplit
from paimon_core.table._pushdown import RowGroupFilter, rows_of_groups
from paimon_core.table._read import ROW_KIND_FIELD, TableRead, with_inserts
from paimon_core.table.mergetree._changelog import LeveledRecords, drop_superseded
from paimon_core.table.mergetree._incremental import (
    diff_records,
    java_sections,
    java_split_files,
    order_as_java_merge,
)
from paimon_core.table.mergetree._layout import SEQUENCE_NUMBER, VALUE_KIND, KeyValueLayout, is_add
from paimon_core.table.mergetree._levels import SortedRun, interval_partition
from paimon_core.table.mergetree._merge import (
    FirstRow,
    MergeEngine,
    merge_in_order,
    merge_order,
    merge_order_of_runs,
)
from paimon_core.table.mergetree._merge_options import merge_engine

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["KeyValueTableRead", "merge_records", "row_kind_text"]

_KIND_TEXT = pa.array(["+I", "-U", "+U", "-D"], pa.string())


def row_kind_text(kinds: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``_VALUE_KIND`` bytes as Paimon's short strings."""
    taken = pc.take(_KIND_TEXT, kinds)
    return taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken


_STREAM_BUFFER = 256 << 10  # a merge reads column chunks through buffers this size, not whole
_STREAM_ROWS = 1024


def merge_records(
    records: pa.Table,
    layout: KeyValueLayout,
    engine: MergeEngine,
    descending: bool,
    sorted_runs: bool = False,
) -> pa.Table:
    """Order ``records`` and merge them into one record per key (retractions kept). ``sorted_runs``: the
    records are sorted runs one after another, oldest first (see :func:`merge_order`)."""
    keys = layout.key_names
    if sorted_runs:
        order, groups = merge_order_of_runs(records, keys, layout.sequence_fields, descending)
        return merge_in_order(records, order, keys, engine, groups)
    return merge_in_order(
        records, merge_order(records, keys, layout.sequence_fields, descending), keys, engine
    )


def only_adds(records: pa.Table) -> pa.Table:
    """The records that are rows (``+I``/``+U``); retractions hide older data and are dropped at read."""
    adds = is_add(records.column(VALUE_KIND))
    return records if pc.all(adds).as_py() is not False else records.filter(adds)


class KeyValueTableRead(TableRead):
    """Reads splits of a primary-key table: every key once, merged by the table's merge engine.

    Streaming splits (a snapshot's changes) are read as they are, in order. With ``row_kind`` the output
    starts with a ``rowkind`` column (``+I``, ``-U``, ``+U``, ``-D``): a merged row has the kind of its
    merged record, a row read without a merge is ``+I``. ``keep_delete`` keeps merged retractions (and so
    merges every section, as Java's audit log does); otherwise retractions are dropped.
    """

    def __init__(
        self,
        table: TableStore,
        columns: Sequence[str] | None = None,
        row_filter: Predicate | pc.Expression | None = None,
        row_kind: bool = False,
        keep_delete: bool = False,
    ) -> None:
        super().__init__(table, columns, row_filter)
        self.row_kind = row_kind
        self.keep_delete = keep_delete
        if row_kind:
            self.output_schema = self.output_schema.insert(0, ROW_KIND_FIELD)
        self.layout = KeyValueLayout(table.schema)
        self.engine = merge_engine(table.schema, table.options)
        self.descending = table.options.get_option(opts.SEQUENCE_FIELD_SORT_ORDER) == "descending"
        self.max_level = table.options.merge_tree_levels() - 1
        # Java's batch reads of first-row tables skip level 0: a key counts once compaction has checked
        # it against the older levels (docs/primary-key-tables.md, "Reading").
        # Deletion vectors hide the old rows of updated keys: levels above 0 hold each key once, and level
        # 0 becomes visible after its (lookup) compaction, as with first-row.
        self.deletion_vectors_on = self.deletion_vectors.enabled
        self.skip_level0 = isinstance(self.engine, FirstRow) or self.deletion_vectors_on
        # With the lookup producer, a compaction writes each key's complete value: the newest record above
        # level 0 supersedes older ones (Java wraps the merge function in its LookupMergeFunction).
        producer = table.options.get_option(opts.CHANGELOG_PRODUCER)
        lookup = producer == "lookup" or self.deletion_vectors_on
        self.lookup_merge = lookup and not isinstance(self.engine, FirstRow)
        # Merged files: a key's records all pass or all fail terms on the key (or the partition), so those
        # terms may skip row groups; a value's term decides only once the key's records are merged.
        keys = {*table.schema.primary_keys, *table.schema.partition_keys}
        self.key_row_groups = RowGroupFilter.of(
            self.predicate, table.arrow_schema, keep=lambda leaf: leaf.column in keys
        )

    def read_records(
        self, split: DataSplit, file: DataFileMeta, prune: RowGroupFilter | None = None
    ) -> pa.Table:
        """A data file's records: sequence number, row kind and every column of the current schema;
        without the row groups ``prune`` rules out."""
        present, wanted = self._record_columns(file)
        with self._open(split, self._file_path(split, file)) as parquet:
            groups = self.selected_row_groups(parquet, file, prune)
            if groups is None:
                data = parquet.read(wanted)
                return self._conform_records(self.deletion_vectors.apply(split, file, data), present)
            assert isinstance(parquet, ParquetDataFile)  # only Parquet has row groups to select
            data = parquet.read_row_groups(groups, wanted)
            positions = rows_of_groups(parquet.metadata, groups)
        return self._conform_records(self.deletion_vectors.apply(split, file, data, positions), present)

    def read_positioned(self, split: DataSplit, file: DataFileMeta) -> tuple[pa.Table, npt.NDArray[np.int64]]:
        """A data file's records (as :meth:`read_records`) and the position of each in the file."""
        records = self.read_records(split, file)
        kept = self.deletion_vectors.kept_mask(split, file)
        positions = np.arange(file.row_count, dtype=np.int64)
        return records, positions if kept is None else positions[kept]

    def iter_run(self, split: DataSplit, run: SortedRun, chunk_bytes: int) -> Iterator[pa.Table]:
        """The records of a sorted run's files, in key order, in chunks of about ``chunk_bytes``."""
        for file in run.files:
            present, wanted = self._record_columns(file)
            kept = self.deletion_vectors.kept_mask(split, file)
            start = 0  # position of the next batch's first row in the file
            with self._open(split, self._file_path(split, file), buffer_size=_STREAM_BUFFER) as parquet:
                pending: list[pa.RecordBatch] = []
                size = 0
                for batch in parquet.iter_batches(batch_size=_STREAM_ROWS, columns=wanted):
                    if kept is not None:
                        mask = kept[start : start + batch.num_rows]
                        start += batch.num_rows
                        batch = batch.filter(pa.array(mask))
                    pending.append(batch)
                    size += batch.nbytes
                    if size >= chunk_bytes:
                        yield self._conform_records(pa.Table.from_batches(pending), present)
                        pending, size = [], 0
                if pending:
                    yield self._conform_records(pa.Table.from_batches(pending), present)

    def _record_columns(self, file: DataFileMeta) -> tuple[list[str | None], list[str]]:
        file_schema = self.table.schema_manager.schema(file.schema_id)
        by_id = {f.id: f.name for f in file_schema.fields}
        present = [by_id.get(f.id) for f in self.table.schema.fields]
        return present, [SEQUENCE_NUMBER, VALUE_KIND, *(name for name in present if name is not None)]

    def _conform_records(self, data: pa.Table, present: Sequence[str | None]) -> pa.Table:
        target = self.layout.records_schema
        columns = [data.column(SEQUENCE_NUMBER), data.column(VALUE_KIND)]
        for name, field in zip(present, target.remove(0).remove(0), strict=True):
            if name is None:
                columns.append(pa.nulls(data.num_rows, field.type))
                continue
            column = data.column(name)
            columns.append(column if column.type == field.type else cast_column(column, field.type))
        return pa.Table.from_arrays(columns, schema=target)

    def read_keys(self, split: DataSplit, file: DataFileMeta) -> pa.Table:
        """The key columns of a data file, under the key names."""
        physical = [f"_KEY_{name}" for name in self.layout.key_names]
        with self._open(split, self._file_path(split, file)) as parquet:
            data = parquet.read(physical)
        return data.rename_columns(list(self.layout.key_names))

    def read_leveled(
        self, split: DataSplit, files: Sequence[DataFileMeta], prune: RowGroupFilter | None = None
    ) -> LeveledRecords:
        """The records of ``files`` in merge order, each with the level of its file."""
        tables = [self.read_records(split, f, prune) for f in files]
        records = pa.concat_tables(tables) if tables else self.layout.records_schema.empty_table()
        levels = np.repeat(np.array([f.level for f in files], dtype=np.int32), [t.num_rows for t in tables])
        return LeveledRecords.order(records, levels, self.layout, self.descending)

    def merged(
        self, split: DataSplit, files: Sequence[DataFileMeta], prune: RowGroupFilter | None = None
    ) -> pa.Table:
        """The merged records of ``files`` (retractions kept), without the keys ``prune`` rules out."""
        if self.lookup_merge:
            leveled = drop_superseded(self.read_leveled(split, files, prune))
            return self.engine.merge(leveled.records, leveled.groups)
        # oldest first: a key's records then usually follow their sequence numbers (see merge_order)
        by_age = sorted(files, key=lambda f: (f.max_sequence_number, f.min_sequence_number))
        tables = [self.read_records(split, f, prune) for f in by_age]
        records = pa.concat_tables(tables) if tables else self.layout.records_schema.empty_table()
        return merge_records(records, self.layout, self.engine, self.descending, sorted_runs=True)

    def read_split(self, split: DataSplit) -> pa.Table:
        if split.before_files is not None:
            return self._read_diff(split, split.before_files)
        if split.streaming:
            return self._read_changes(split)
        return self._read_merged(split) if split.incremental_from is None else self._read_incremental(split)

    def _read_incremental(self, split: DataSplit) -> pa.Table:
        """A range's files, merged as Java 0.9's reader merges them (see ``mergetree._incremental``): no
        raw shortcut and no row-group pruning, which would change how a run's records meet."""
        parts = []
        key_of = self.layout.key_of
        for section in java_sections(java_split_files(split.files, key_of), key_of):
            runs, levels = [], []
            for run in section:
                tables = [self.read_records(split, f) for f in run.files]
                runs.append(pa.concat_tables(tables))
                levels += [
                    np.full(t.num_rows, f.level, np.int32) for f, t in zip(run.files, tables, strict=True)
                ]
            leveled = order_as_java_merge(runs, np.concatenate(levels), self.layout, self.descending)
            if self.lookup_merge:
                leveled = drop_superseded(leveled)
            rows = self.engine.merge(leveled.records, leveled.groups)
            parts.append(self._as_output(rows if self.keep_delete else only_adds(rows)))
        return pa.concat_tables(parts) if parts else self.output_schema.empty_table()

    def _read_diff(self, split: DataSplit, before_files: Sequence[DataFileMeta]) -> pa.Table:
        """The change from the merged ``before_files`` to the merged files of the split."""
        retractions = self.keep_delete and split.diff_keeps_retractions
        before = self._merged_keys(split, before_files, retractions)
        after = self._merged_keys(split, split.files, retractions)
        changes = diff_records(before, after, self.layout.key_names, self.keep_delete)
        return self._as_output(changes)

    def _merged_keys(self, split: DataSplit, files: Sequence[DataFileMeta], retractions: bool) -> pa.Table:
        """Every key of ``files`` once, merged; a key merged to a retraction kept only with ``retractions``."""
        parts = [
            self.merged(split, [f for run in section for f in run.files])
            for section in interval_partition(list(files), self.layout.key_of)
        ]
        parts = parts if retractions else [only_adds(part) for part in parts]
        return pa.concat_tables(parts) if parts else self.layout.records_schema.empty_table()

    def _read_changes(self, split: DataSplit) -> pa.Table:
        """A streaming split: every record of its files in order, with its row kind."""
        parts = []
        for file in split.files:
            records = self.read_records(split, file, self.key_row_groups)
            parts.append(self._as_output(records if self.keep_delete else only_adds(records)))
        if not parts:
            return self.output_schema.empty_table()
        return pa.concat_tables(parts).cast(self.output_schema)

    def _read_merged(self, split: DataSplit) -> pa.Table:
        parts = []
        files = [f for f in split.files if f.level > 0] if self.skip_level0 else list(split.files)
        if self.deletion_vectors_on and not self.keep_delete and all(f.delete_row_count == 0 for f in files):
            # Java's raw-convertible split: every key once, old rows hidden by the deletion vectors
            parts = [self._read_raw(split, f) for f in files]
            return pa.concat_tables(parts) if parts else self.output_schema.empty_table()
        for section in interval_partition(files, self.layout.key_of):
            if not self.keep_delete and _is_raw(section, len(files), self.max_level):
                parts += [self._read_raw(split, f) for run in section for f in run.files]
                continue
            rows = self.merged(split, [f for run in section for f in run.files], self.key_row_groups)
            parts.append(self._as_output(rows if self.keep_delete else only_adds(rows)))
        if not parts:
            return self.output_schema.empty_table()
        return pa.concat_tables(parts)

    def _read_raw(self, split: DataSplit, file: DataFileMeta) -> pa.Table:
        """A file that needs no merge, read as plain Parquet (its rows ``+I`` when kinds are asked for)."""
        data = self.read_file(split, file)
        return with_inserts(data) if self.row_kind else data

    def _as_output(self, rows: pa.Table) -> pa.Table:
        """Records (merged, or changes as they are) as output rows: values, their kind when asked for."""
        values = rows.drop_columns([SEQUENCE_NUMBER, VALUE_KIND])
        if self.row_kind:
            values = values.add_column(0, ROW_KIND_FIELD, row_kind_text(rows.column(VALUE_KIND)))
        if self.row_filter is not None:
            values = values.filter(self.row_filter)
        return values.select(self.output_schema.names)

    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table:
        if len(splits) > 1:
            with ThreadPoolExecutor(max_workers=4) as pool:
                tables = list(pool.map(self.read_split, splits))
        else:
            tables = [self.read_split(s) for s in splits]
        if not tables:
            return self.output_schema.empty_table()
        return pa.concat_tables(tables)

    def to_batches(self, splits: Sequence[DataSplit]) -> Iterator[pa.RecordBatch]:
        for split in splits:
            yield from self.read_split(split).to_batches()


def _is_raw(section: Sequence[SortedRun], split_files: int, max_level: int) -> bool:
    """Whether a section can be read without a merge: one sorted run that holds every key once and no
    retraction. Files at the top level never hold retractions (compaction drops them there); elsewhere the
    files' delete counts are trusted only for a split of one file, as Java does (other writers' counts
    may be wrong)."""
    if len(section) != 1 or any(f.delete_row_count != 0 for f in section[0].files):
        return False
    return split_files == 1 or all(f.level == max_level for f in section[0].files)
