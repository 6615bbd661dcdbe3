"""Writing primary-key tables: one merge tree per (partition, bucket), flushed to level 0 and compacted.

See docs/primary-key-tables.md ("Writing", "Levels and compaction"). A :class:`MergeTreeWriter` numbers
the records of its bucket, buffers them, and on flush orders and merges them into level-0 files. Unless
``write-only``, it then asks the universal picker for a compaction and runs it before accepting more
records (a synchronous compaction never lets sorted runs pile up past ``num-sorted-run.stop-trigger``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import options as opts
from paimon_core.errors import MergeError, SchemaError
from paimon_core.manifest import DELETION_VECTORS_INDEX, DataFileMeta, IndexFileMeta
from paimon_core.redaction import get_logger
from paimon_core.table._convert import conform_batch, iter_batches
from paimon_core.table._data_split import DataSplit
from paimon_core.table._entries import live_entries
from paimon_core.table._messages import CommitMessage, RestoredFrom
from paimon_core.table._split import pieces
from paimon_core.table._store import POSTPONE_BUCKET
from paimon_core.table._write import DataFileWriter, TableWrite
from paimon_core.table.mergetree._changelog import (
    Compacted,
    LeveledRecords,
    drop_superseded,
    full_compaction_changelog,
    lookup_changelog,
    new_keys_changelog,
)
from paimon_core.table.mergetree._deletion import BucketDeletionVectors
from paimon_core.table.mergetree._dynamic_bucket import DynamicBucketAssigner
from paimon_core.table.mergetree._kway import merge_sorted_runs
from paimon_core.table.mergetree._layout import VALUE_KIND, is_add, kinds_of
from paimon_core.table.mergetree._levels import (
    CompactUnit,
    Levels,
    RewriteGroup,
    SortedRun,
    UniversalCompaction,
    Upgrade,
    pick_full_compaction,
    plan_unit,
)
from paimon_core.table.mergetree._merge import (
    DELETE,
    FIRST_ROW_RETRACTION_REFUSAL,
    INSERT,
    Deduplicate,
    FirstRow,
    Indices,
    group_ids,
    order_records,
)
from paimon_core.table.mergetree._postpone import PostponeBucketWriter, postpone_file_prefix
from paimon_core.table.mergetree._reader import KeyValueTableRead, merge_records, only_adds
from paimon_core.table.mergetree._spill import SpilledRuns

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["KeyValueTableWrite", "MergeTreeCompactTask", "MergeTreeWriter", "needs_full_compaction"]

logger = get_logger(__name__)

_FILE_SOURCE_COMPACT = 1
_DECODED_PER_STORED_BYTE = 4  # a guess at how much larger rows are in memory than in Parquet


class MergeTreeWriter:
    """The merge tree of one (partition, bucket): records in, level-0 files and compactions out.

    Args:
        table: the table.
        partition, bucket, directory: where the bucket lives.
        restored: the bucket's live files; sequence numbers continue after theirs.
        compact: run universal compaction after flushes (False for ``write-only`` writers).
        deletion_files: the bucket's deletion-vector index files, from the snapshot of ``restored``.
    """

    def __init__(
        self,
        table: TableStore,
        partition: bytes,
        bucket: int,
        directory: str,
        restored: Sequence[DataFileMeta],
        compact: bool,
        deletion_files: Sequence[IndexFileMeta] = (),
    ) -> None:
        options = table.options
        self.table = table
        self.partition = partition
        self.bucket = bucket
        self.directory = directory
        self.compact = compact
        self.reader = KeyValueTableRead(table)
        self.layout = self.reader.layout
        self.dv: BucketDeletionVectors | None = None
        if options.get_option(opts.DELETION_VECTORS_ENABLED):
            self.dv = BucketDeletionVectors(table, deletion_files)
            self.reader.deletion_vectors = self.dv  # compaction reads see the vectors as they change
        self.first_row = isinstance(self.reader.engine, FirstRow)
        self.producer = options.get_option(opts.CHANGELOG_PRODUCER)
        # Lookup compaction (Java's needLookup): first-row, and wherever reads merge in lookup mode
        # (the lookup producer, deletion vectors).
        self.lookup = self.first_row or self.reader.lookup_merge
        self.deduplicate_changelog = options.get_option(opts.CHANGELOG_PRODUCER_ROW_DEDUPLICATE)
        self.levels = Levels(restored, options.merge_tree_levels(), self.layout.key_of)
        self.next_sequence = max((f.max_sequence_number for f in restored), default=-1) + 1
        self.target_size = options.target_file_size(True)
        self.picker = UniversalCompaction(
            options.get_option(opts.COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT),
            options.get_option(opts.COMPACTION_SIZE_RATIO),
            options.get_option(opts.NUM_SORTED_RUN_COMPACTION_TRIGGER),
            # first-row compacts by lookup: every compaction takes level 0 up (Java's ForceUpLevel0)
            options.get_option(opts.COMPACTION_FORCE_UP_LEVEL_0) or self.lookup,
        )
        self.small_file_size = int(self.target_size * options.get_option(opts.COMPACTION_SMALL_FILE_RATIO))
        self.buffered: list[pa.Table] = []
        self.buffered_bytes = 0
        self.buffer_limit = options.get_option(opts.WRITE_BUFFER_SIZE)
        self.spillable = options.get_option(opts.WRITE_BUFFER_SPILLABLE)
        self.max_spill_bytes = options.get_option(opts.WRITE_BUFFER_SPILL_MAX_DISK_SIZE)
        self.spilled = SpilledRuns(
            self.layout,
            self.reader.engine,
            self.reader.descending,
            self.buffer_limit,
            options.get_option(opts.SPILL_COMPRESSION),
            options.get_option(opts.LOCAL_SORT_MAX_NUM_FILE_HANDLES),
        )
        self.new_files: list[DataFileMeta] = []
        self.changelog_files: list[DataFileMeta] = []
        self.compact_before: dict[str, DataFileMeta] = {}
        self.compact_after: list[DataFileMeta] = []
        self.compact_changelog: list[DataFileMeta] = []

    # --- records in ------------------------------------------------------------------------------------------

    def write(self, values: pa.RecordBatch, kinds: pa.Array) -> None:
        """Buffer rows of the table's value schema with their row kinds; numbers them in arrival order."""
        count = values.num_rows
        sequence = pa.array(np.arange(self.next_sequence, self.next_sequence + count, dtype=np.int64))
        self.next_sequence += count
        records = pa.Table.from_arrays([sequence, kinds, *values.columns], schema=self.layout.records_schema)
        self.buffered.append(records)
        self.buffered_bytes += records.nbytes

    def own(self) -> None:
        """Copy the buffered records into buffers of their own (they may be slices of a larger input)."""
        if self.buffered:
            records = pa.concat_tables(self.buffered)
            self.buffered = [pa.Table.from_batches([pa.concat_batches(records.to_batches())])]
            self.buffered_bytes = self.buffered[0].nbytes

    def spill(self) -> None:
        """Free the buffer: to a sorted run on local disk when spillable (and the disk has room), else
        into level-0 files."""
        full = self.max_spill_bytes is not None and self.spilled.disk_bytes >= self.max_spill_bytes
        if not self.spillable or full:
            self.flush()
            return
        if self.buffered:
            records = pa.concat_tables(self.buffered)
            self.buffered, self.buffered_bytes = [], 0
            self._input_changelog(records)
            self.spilled.spill(records)

    def flush(self) -> None:
        """Order and merge the buffer (and spilled runs) into level-0 files, then compact if the tree asks."""
        if not self.buffered and not self.spilled.runs:
            return
        records = pa.concat_tables(self.buffered) if self.buffered else None
        self.buffered, self.buffered_bytes = [], 0
        ordered = self._input_changelog(records) if records is not None else None
        merged: pa.Table | Iterable[pa.Table]
        if self.spilled.runs:
            merged = self.spilled.drain(records)
        elif ordered is not None:
            merged = self.reader.engine.merge(*ordered)  # ordered once for the changelog and the merge
        else:
            assert records is not None
            merged = merge_records(records, self.layout, self.reader.engine, self.reader.descending)
        files = self._write_files(merged, level=0, file_source=0)
        self.new_files += files
        for file in files:
            self.levels.add_level0_file(file)
        if self.compact:
            self._compact(self.picker.pick(self.levels.num_levels, self.levels.sorted_runs()))

    def _input_changelog(self, records: pa.Table) -> tuple[pa.Table, Indices] | None:
        """``changelog-producer = input``: every buffered record, unmerged, in merge order, into level-0
        changelog files (a spilled buffer's records are written when they spill). Returns the records
        ordered, with their key groups (None without that producer)."""
        if self.producer != "input":
            return None
        layout = self.layout
        ordered, groups = order_records(
            records, layout.key_names, layout.sequence_fields, self.reader.descending
        )
        self.changelog_files += self._write_files(ordered, 0, 0, changelog=True)
        return ordered, groups

    # --- compaction -------------------------------------------------------------------------------------------

    def full_compaction(self) -> None:
        """Merge every sorted run of the bucket into the top level (with deletion vectors, a bucket on the
        top level already has its files with deleted rows rewritten, as Java >= 1.0 does)."""
        self.flush()
        unit = pick_full_compaction(self.levels.num_levels, self.levels.sorted_runs())
        if unit is not None or self.dv is None:
            self._compact(unit)
            return
        top = self.levels.max_level
        deleted = [f for f in self.levels.all_files() if self.dv.has_deletions(f.file_name)]
        self._execute(top, [RewriteGroup((SortedRun((f,)),), drop_delete=True) for f in deleted])

    def compact_picked(self) -> None:
        """Run the compaction the universal picker asks for, if any."""
        self.flush()
        self._compact(self.picker.pick(self.levels.num_levels, self.levels.sorted_runs()))

    def _compact(self, unit: CompactUnit | None) -> None:
        if unit is None:
            return
        output = unit.output_level
        plan = plan_unit(
            unit,
            self.levels,
            self.layout.key_of,
            self.small_file_size,
            self._upgrade_strategy,
            deletion_vectors=self.dv is not None,
        )
        self._execute(output, plan.rewrites, plan.upgrades, plan.changelog_upgrades)

    def _execute(
        self,
        output: int,
        rewrites: Sequence[RewriteGroup],
        upgrades: Sequence[DataFileMeta] = (),
        changelog_upgrades: Sequence[DataFileMeta] = (),
    ) -> None:
        """Move files up to ``output`` and rewrite groups there."""
        before: list[DataFileMeta] = []
        after: list[DataFileMeta] = []
        for file in (*upgrades, *changelog_upgrades):
            before.append(file)
            after.append(replace(file, level=output))
        if self.producer in ("lookup", "full-compaction") or self.dv is not None:
            for file in changelog_upgrades:
                # The file moves up as it is; the lookup gives its changelog and deletes older rows.
                self._compaction_changelog(self._changelog_merge(self._split([file]), [file], output), output)
        # Each group is rewritten into files of its own, as Java does: outputs never span an upgraded file.
        for group in rewrites:
            files = group.files
            chunks = self._rewrite(group, output)
            if group.drop_delete:
                chunks = (only_adds(c) for c in chunks)
            before += files
            after += self._write_files(chunks, output, _FILE_SOURCE_COMPACT)
            if self.dv is not None:
                self.dv.forget(f.file_name for f in files)
        self.levels.update(before, after)
        self._record_compaction(before, after)

    def _compaction_changelog(self, compacted: Compacted, output: int) -> None:
        if self.producer in ("lookup", "full-compaction"):
            self.compact_changelog += self._write_files(compacted.changelog, output, 0, changelog=True)

    def _upgrade_strategy(self, file: DataFileMeta, output: int) -> Upgrade:
        """Java's ``upgradeStrategy`` of the table's compaction rewriter."""
        top = output == self.levels.max_level
        if self.producer == "full-compaction":
            return Upgrade.CHANGELOG if top else Upgrade.PLAIN
        if not self.lookup or file.level != 0:
            return Upgrade.PLAIN
        if top or (isinstance(self.reader.engine, Deduplicate) and not self.layout.sequence_fields):
            return Upgrade.CHANGELOG  # the file's records stay the bucket's newest as they are
        return Upgrade.REWRITE  # they merge with what higher levels hold

    def _lookup_rewrite(self, group: RewriteGroup, output: int) -> bool:
        """Whether rewriting ``group`` runs the producer's merge (Java's ``rewriteChangelog``): it gives the
        changelog and, with deletion vectors, deletes the older rows it looks up."""
        if self.producer == "full-compaction":
            return output == self.levels.max_level
        if self.producer == "lookup" or self.dv is not None:
            return group.upgrade or (output > 0 and any(f.level == 0 for f in group.files))
        return False

    def _split(self, files: Sequence[DataFileMeta]) -> DataSplit:
        return DataSplit(0, self.partition, self.bucket, self.directory, tuple(files))

    def _rewrite(self, group: RewriteGroup, output: int) -> Iterable[pa.Table]:
        """The merged records of a rewrite group, in chunks (its changelog written on the way)."""
        files = group.files
        split = self._split(files)
        if self._lookup_rewrite(group, output):
            compacted = self._changelog_merge(split, files, output)
            self._compaction_changelog(compacted, output)
            return [compacted.merged]
        if self.first_row:
            merged = self.reader.merged(split, files)
            # a -U/-D stored by another writer (Java write-only): refused here, as Java's compaction does
            engine = self.reader.engine
            refuses = isinstance(engine, FirstRow) and not engine.ignore_delete
            if refuses and not pc.all(is_add(merged.column(VALUE_KIND))).as_py():
                raise MergeError(f"{self.table.identifier}: {FIRST_ROW_RETRACTION_REFUSAL}")
            return [merged.filter(pa.array(self._not_above(merged, split, output)))]
        if self.lookup:
            return [self.reader.merged(split, files)]  # the reader merges as lookup mode does
        if _DECODED_PER_STORED_BYTE * sum(f.file_size for f in files) <= self.buffer_limit:
            return [self.reader.merged(split, files)]  # fits the buffer: one sort is fastest
        chunk_bytes = self.buffer_limit // (2 * len(group.runs))  # one chunk per run fits the buffer
        runs = [self.reader.iter_run(split, run, chunk_bytes) for run in group.runs]
        layout = self.layout
        return merge_sorted_runs(
            runs, layout.key_names, layout.sequence_fields, self.reader.descending, self.reader.engine
        )

    def _changelog_merge(self, split: DataSplit, files: Sequence[DataFileMeta], output: int) -> Compacted:
        """Merge ``files`` and produce their changelog, as the table's producer defines it."""
        reader, layout = self.reader, self.layout
        leveled = reader.read_leveled(split, files)
        values = layout.value_schema.names
        if self.producer == "full-compaction":
            return full_compaction_changelog(
                leveled, reader.engine, self.levels.max_level, self.deduplicate_changelog, values
            )
        if self.first_row:
            merged, owners = reader.engine.merge_groups(leveled.records, leveled.groups, passthrough=False)
            has_high = np.zeros(leveled.group_count, dtype=bool)
            has_high[leveled.groups[leveled.levels > 0]] = True
            kept = self._not_above(merged, split, output) | has_high[owners]
            merged, owners = merged.filter(pa.array(kept)), owners[kept]
            return Compacted(merged, new_keys_changelog(merged, ~has_high[owners]))
        leveled = drop_superseded(leveled)
        needed = np.ones(leveled.group_count, dtype=bool)
        needed[leveled.groups[leveled.levels > 0]] = False
        found = self._lookup_above(split, leveled.records.filter(pa.array(needed[leveled.groups])), output)
        if found is not None:
            records = pa.concat_tables([leveled.records, found[0]])
            levels = np.concatenate([leveled.levels, found[1]])
            leveled = LeveledRecords.order(records, levels, layout, reader.descending)
        return lookup_changelog(leveled, reader.engine, self.deduplicate_changelog, values)

    def _files_above(self, records: pa.Table, output: int) -> list[DataFileMeta]:
        """Files on levels above ``output`` whose key range meets that of ``records`` (in key order)."""
        key_of = self.layout.key_of
        low = key_of(self.layout.key_row(records, 0))
        high = key_of(self.layout.key_row(records, records.num_rows - 1))
        return [
            f
            for run in self.levels.sorted_runs()
            for f in run.files
            if f.level > output and not (key_of(f.max_key) < low or key_of(f.min_key) > high)
        ]

    def _lookup_above(
        self, split: DataSplit, records: pa.Table, output: int
    ) -> tuple[pa.Table, npt.NDArray[np.int32]] | None:
        """For the keys of ``records`` (key-ordered), their record on the lowest level above ``output`` that
        holds them, with its level (Java's ``LookupLevels.lookup``). With deletion vectors, each record found
        is deleted from its file: the compaction writes the key's new value below it."""
        if records.num_rows == 0:
            return None
        files = self._files_above(records, output)
        if not files:
            return None
        reads = [self.reader.read_positioned(split, f) for f in files]
        found = pa.concat_tables([r for r, _ in reads])
        positions = np.concatenate([p for _, p in reads])
        owners = np.repeat(np.arange(len(files)), [len(p) for _, p in reads])
        levels = np.array([f.level for f in files], dtype=np.int32)[owners]
        rows = self._rows_with_keys_of(found, records)
        if len(rows) == 0:
            return None
        # each key's row on its lowest level: the newest complete value
        names = list(self.layout.key_names)
        probe = found.select(names).take(pa.array(rows))
        probe = probe.append_column("__level", pa.array(levels[rows])).append_column("__row", pa.array(rows))
        probe = probe.sort_by([*((name, "ascending") for name in names), ("__level", "ascending")])
        keys = group_ids(probe, names)
        first: npt.NDArray[np.int64] = probe.column("__row").to_numpy()[np.r_[True, keys[1:] != keys[:-1]]]
        if self.dv is not None:
            for owner in np.unique(owners[first]):
                self.dv.delete_rows(files[owner].file_name, positions[first[owners[first] == owner]])
        return found.take(pa.array(first)), levels[first]

    def _not_above(self, merged: pa.Table, split: DataSplit, output: int) -> npt.NDArray[np.bool_]:
        """First-row lookup: which merged keys no level above ``output`` holds (those keep their row)."""
        kept = np.ones(merged.num_rows, dtype=bool)
        if merged.num_rows == 0:
            return kept
        others = self._files_above(merged, output)
        if not others:
            return kept
        known = pa.concat_tables([self.reader.read_keys(split, f) for f in others])
        kept[self._rows_with_keys_of(merged, known)] = False
        return kept

    def _rows_with_keys_of(self, records: pa.Table, keys: pa.Table) -> npt.NDArray[np.int64]:
        """The indices (ascending) of the rows of ``records`` whose key ``keys`` holds."""
        names = list(self.layout.key_names)
        probe = records.select(names).append_column("__row", pa.array(np.arange(records.num_rows)))
        found: npt.NDArray[np.int64] = (
            probe.join(keys.select(names), keys=names, join_type="left semi").column("__row").to_numpy()
        )
        return np.sort(found)

    def _record_compaction(self, before: Sequence[DataFileMeta], after: Sequence[DataFileMeta]) -> None:
        after_names = {f.file_name for f in after}
        for file in before:
            if file in self.compact_after:
                # An output of an earlier, uncommitted compaction: no snapshot will ever list it.
                self.compact_after.remove(file)
                if file.file_name not in self.compact_before and file.file_name not in after_names:
                    self._delete(file)
            else:
                self.compact_before[file.file_name] = file
        self.compact_after += after

    def _delete(self, file: DataFileMeta) -> None:
        try:
            for path in file.paths(self.directory):
                self.table.storage.delete(path)
        except OSError:
            logger.warning("could not delete intermediate file %s", file.file_name, exc_info=True)

    def _write_files(
        self, records: pa.Table | Iterable[pa.Table], level: int, file_source: int, changelog: bool = False
    ) -> list[DataFileMeta]:
        """Records in merge order into rolling files at ``level`` (changelog files with ``changelog``)."""
        chunks = [records] if isinstance(records, pa.Table) else records
        prefix = self.table.options.get_option(opts.CHANGELOG_FILE_PREFIX) if changelog else None
        writer = DataFileWriter(
            table=self.table,
            partition=self.partition,
            directory=self.directory,
            bucket=self.bucket,
            next_seq=0,
            target_size=self.target_size,
            file_source=file_source,
            layout=self.layout,
            level=level,
            row_group_bytes=min(self.buffer_limit // 4, self.table.options.parquet_block_size()),
            name_prefix=prefix,
            changelog=changelog,
            file_index=not changelog,
        )
        try:
            for chunk in chunks:
                for batch in self.layout.to_file_rows(chunk).to_batches():
                    writer.add(batch)
            return writer.close()
        except BaseException:
            for path in writer.abort():
                self.table.storage.delete(path)
            raise

    # --- out --------------------------------------------------------------------------------------------------

    def prepare_commit(self, full_compaction: bool = False) -> CommitMessage | None:
        """Flush, optionally compact everything, and hand over what changed since the last call."""
        if full_compaction:
            self.full_compaction()
        else:
            self.flush()
        new_index, replaced_index = self.dv.prepare_commit() if self.dv is not None else ((), ())
        message = CommitMessage(
            self.partition,
            self.bucket,
            self.table.bucket,
            new_index_files=new_index,
            deleted_index_files=replaced_index,
            new_files=tuple(self.new_files),
            compact_before=tuple(self.compact_before.values()),
            compact_after=tuple(self.compact_after),
            changelog_files=tuple(self.changelog_files),
            compact_changelog_files=tuple(self.compact_changelog),
        )
        self.new_files, self.compact_before, self.compact_after = [], {}, []
        self.changelog_files, self.compact_changelog = [], []
        return None if message.is_empty() else message

    def close(self) -> None:
        """Release the runs spilled to local disk."""
        self.spilled.close()

    def created_paths(self) -> list[str]:
        """Files this writer wrote that no commit holds yet (for an abort)."""
        before = set(self.compact_before)
        return [
            path
            for f in (*self.new_files, *self.compact_after, *self.changelog_files, *self.compact_changelog)
            if f.file_name not in before
            for path in f.paths(self.directory)
        ]


class KeyValueTableWrite(TableWrite):
    """Writes upserts and deletes into a primary-key table (nothing is visible until committed).

    ``write(data)`` upserts (``+I``), or takes each row's kind from the ``rowkind.field`` column;
    ``delete(keys)`` writes ``-D`` records for the given keys.
    """

    def __init__(self, table: TableStore, *, overwrite: bool = False, full_compaction: bool = False) -> None:
        super().__init__(table)
        self._overwrite = overwrite
        self._trees: dict[tuple[bytes, int], MergeTreeWriter | PostponeBucketWriter] = {}
        # bucket = -2: every partition's records wait unmerged in its postpone bucket (mergetree/_postpone.py)
        self._postpone_prefix = postpone_file_prefix(table) if table.bucket == POSTPONE_BUCKET else None
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        self._restored_from: RestoredFrom | None = None  # the snapshot of `_restored`
        self._deletion_files: dict[tuple[bytes, int], list[IndexFileMeta]] = {}
        self._compact = not table.options.get_option(opts.WRITE_ONLY)
        self._full_compaction = full_compaction
        self._rowkind_field = table.options.get_option(opts.ROWKIND_FIELD)
        self._ignore_delete = table.options.get_option(opts.IGNORE_DELETE)
        # first-row keeps a key's first row for ever: a retraction is refused as it arrives (Java refuses it
        # when it merges, at the writer's compaction), never stored to be dropped or refused later
        self._refuse_retractions = (
            not self._ignore_delete and table.options.get_option(opts.MERGE_ENGINE) == "first-row"
        )
        self._commits = 0
        self._assigner = DynamicBucketAssigner(table, fresh=overwrite) if table.bucket == -1 else None

    def write(self, data: Any, kind: int = INSERT) -> None:
        """Write an Arrow table / batch / reader, an iterable of batches, or a pandas DataFrame.

        Raises:
            SchemaError: the data does not fit the table's schema, a primary-key value is null, or a
                ``rowkind.field`` value is not a row kind.
            MergeError: a -U/-D record for a first-row table without ``ignore-delete``.
        """
        if self._closed:
            raise RuntimeError("this TableWrite was already committed or aborted")
        for batch in iter_batches(data):
            if batch.num_rows == 0:
                continue
            batch = conform_batch(batch, self._arrow_schema)
            borrowed: set[MergeTreeWriter | PostponeBucketWriter] = set()
            for piece in pieces(batch, self._memory.piece_bytes):  # never a copy of a whole large input
                for key, part in self._split(piece):
                    tree = self._tree_for(*key)
                    if part is piece and piece.num_rows < batch.num_rows:
                        borrowed.add(tree)  # buffers a slice of the batch
                    kinds = self._kinds(part, kind)
                    if self._refuse_retractions and not pc.all(is_add(kinds)).as_py():
                        raise MergeError(f"{self.table.identifier}: {FIRST_ROW_RETRACTION_REFUSAL}")
                    # ignore-delete: dropped before anything sees them, as Java's TableWriteImpl does
                    if self._ignore_delete:
                        adds = is_add(kinds)
                        part, kinds = part.filter(adds), kinds.filter(adds)
                        if part.num_rows == 0:
                            continue
                    tree.write(part, kinds)
                self._bound_memory()
            for tree in borrowed:
                tree.own()  # a slice left buffered would keep all of the input batch alive

    def delete(self, keys: Any) -> None:
        """Delete the rows with these primary keys (data holding at least the key and partition columns).

        Raises:
            SchemaError: a key or partition column is missing or null.
        """
        for batch in iter_batches(keys):
            self.write(_complete(batch, self._arrow_schema, self.table.schema.primary_keys), DELETE)

    def _split(self, batch: pa.RecordBatch) -> Iterator[tuple[tuple[tuple[Any, ...], int], pa.RecordBatch]]:
        if self._postpone_prefix is not None:
            for (values, _), part in super()._split(batch):  # by partition only
                yield (values, POSTPONE_BUCKET), part
            return
        if self._assigner is None:
            yield from super()._split(batch)
            return
        for (values, _), part in super()._split(batch):  # by partition only
            buckets = self._assigner.assign(self._partition_bytes(values), part)
            first = int(buckets[0])
            if (buckets == first).all():
                yield (values, first), part
                continue
            order = np.argsort(buckets, kind="stable")
            sorted_buckets = buckets[order]
            starts = np.flatnonzero(np.r_[True, sorted_buckets[1:] != sorted_buckets[:-1]])
            for start, end in zip(starts, [*starts[1:], len(order)], strict=True):
                yield (values, int(sorted_buckets[start])), part.take(pa.array(order[start:end]))

    def _kinds(self, part: pa.RecordBatch, kind: int) -> pa.Array:
        if self._rowkind_field is not None and kind == INSERT:
            return kinds_of(part.column(self._rowkind_field), self._rowkind_field)
        return pa.array(np.full(part.num_rows, kind, dtype=np.int8))

    def _tree_for(
        self, partition_values: tuple[Any, ...], bucket: int
    ) -> MergeTreeWriter | PostponeBucketWriter:
        table = self.table
        partition = self._partition_bytes(partition_values)
        key = (partition, bucket)
        tree = self._trees.get(key)
        if tree is None and self._postpone_prefix is not None:
            engine = KeyValueTableRead(table).engine
            tree = self._trees[key] = PostponeBucketWriter(table, partition, engine, self._postpone_prefix)
        elif tree is None:
            tree = MergeTreeWriter(
                table,
                partition,
                bucket,
                table.bucket_dir(partition, bucket),
                self._restore(partition, bucket),
                self._compact,
                self._deletion_files.get(key, ()),
            )
            self._trees[key] = tree
        return tree

    def _restore(self, partition: bytes, bucket: int) -> list[DataFileMeta]:
        if self._overwrite:
            return []  # the overwrite replaces the bucket's files: start a fresh tree
        if self._restored is None:
            self._restored = {}
            snapshot = self.table.snapshot_manager.latest()
            if snapshot is not None:
                self._restored_from = RestoredFrom.of(snapshot)
                for entry in live_entries(self.table, snapshot):
                    self._restored.setdefault((entry.partition, entry.bucket), []).append(entry.file)
                for index in self.table.index_entries(snapshot):
                    if index.file.index_type == DELETION_VECTORS_INDEX:
                        self._deletion_files.setdefault((index.partition, index.bucket), []).append(
                            index.file
                        )
        return self._restored.get((partition, bucket), [])

    def _bound_memory(self) -> None:
        total = sum(t.buffered_bytes for t in self._trees.values())
        while total > self._memory.buffered_bytes:
            largest = max(self._trees.values(), key=lambda t: t.buffered_bytes)
            if largest.buffered_bytes == 0:
                break
            total -= largest.buffered_bytes
            largest.spill()

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush every bucket (compacting as the tree asks) and return the commit messages."""
        self._commits += 1
        every = self.table.options.full_compaction_delta_commits()
        full = self._full_compaction or (every is not None and self._commits % every == 0)
        messages = []
        for tree in self._trees.values():
            message = tree.prepare_commit(full_compaction=full)
            if message is not None and message.new_files:
                message = replace(message, restored_from=self._restored_from)
            if self._assigner is not None and isinstance(tree, MergeTreeWriter):
                new, replaced = self._assigner.index_changes(tree.partition, tree.bucket)
                if new:
                    message = message or CommitMessage(tree.partition, tree.bucket, self.table.bucket)
                    message = replace(
                        message,
                        new_index_files=(*new, *message.new_index_files),
                        deleted_index_files=(*replaced, *message.deleted_index_files),
                    )
            if message is not None:
                messages.append(message)
        return messages

    def abort(self, messages: list[CommitMessage] | None = None) -> None:
        """Delete every file this writer (or the given uncommitted messages) created."""
        paths = [p for tree in self._trees.values() for p in tree.created_paths()]
        for tree in self._trees.values():
            tree.close()
        self.table.delete_new_files(messages or ())
        for path in paths:
            try:
                self.table.storage.delete(path)
            except OSError:
                logger.warning("could not delete %s while aborting a write", path, exc_info=True)
        self._trees.clear()
        self._closed = True

    def close(self) -> None:
        for tree in self._trees.values():
            tree.close()
        super().close()


def _complete(batch: pa.RecordBatch, schema: pa.Schema, primary_keys: Sequence[str]) -> pa.RecordBatch:
    """A delete's keys widened to full rows (absent value columns are null), conformed to ``schema``.

    Raises:
        SchemaError: a primary-key column is missing or holds nulls, a NOT NULL value column is
            missing, or a column does not fit the table's schema.
    """
    names = batch.schema.names
    missing = [k for k in primary_keys if k not in names]
    if missing:
        raise SchemaError(f"a delete needs the primary-key columns; {missing} are missing")
    for key in primary_keys:
        nulls = batch.column(key).null_count
        if nulls:
            raise SchemaError(
                f"a delete's primary-key column {key!r} holds {nulls} null values: every key needs a value"
            )
    required = [f.name for f in schema if not f.nullable and f.name not in names]
    if required:
        raise SchemaError(
            f"a delete of this table needs the values of its NOT NULL columns {required} (a -D record "
            "stores the whole row): pass full rows"
        )
    columns = [batch.column(f.name) if f.name in names else pa.nulls(batch.num_rows, f.type) for f in schema]
    return conform_batch(pa.RecordBatch.from_arrays(columns, names=schema.names), schema)


@dataclass(frozen=True)
class MergeTreeCompactTask:
    """Compact one bucket of a primary-key table (the dedicated job's unit of work; picklable).

    Attributes:
        partition, bucket, total_buckets: the bucket and its entries' ``_TOTAL_BUCKETS``.
        files: the bucket's live files.
        full: merge everything into the top level; otherwise compact what the universal picker picks.
        deletion_files: the bucket's deletion-vector index files, from the snapshot of ``files``.
    """

    partition: bytes
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    full: bool = True
    deletion_files: tuple[IndexFileMeta, ...] = ()

    @property
    def input_bytes(self) -> int:
        return sum(f.file_size for f in self.files)

    def run(self, table: TableStore) -> CommitMessage:
        tree = MergeTreeWriter(
            table,
            self.partition,
            self.bucket,
            table.bucket_dir(self.partition, self.bucket),
            self.files,
            True,
            self.deletion_files,
        )
        if self.full:
            tree.full_compaction()
        else:
            tree.compact_picked()
        message = tree.prepare_commit()
        return message or CommitMessage(self.partition, self.bucket, self.total_buckets)


def needs_full_compaction(
    files: Sequence[DataFileMeta], num_levels: int, deletion_files: Sequence[IndexFileMeta] = ()
) -> bool:
    """Whether a full compaction of a bucket holding ``files`` (and deletion vectors in ``deletion_files``)
    would change anything."""
    if any(meta.row_count > 0 for meta in deletion_files):
        return True  # files with deleted rows are rewritten
    return len(files) > 1 or any(f.level != num_levels - 1 or f.delete_row_count != 0 for f in files)
