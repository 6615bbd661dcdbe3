"""Writing a postpone-bucket table (``bucket = -2``): rows wait in ``bucket-postpone/``, unmerged and unsorted.

See docs/primary-key-tables.md ("Postpone buckets"). As Java Paimon (1.1+) writes such a table, a writer puts
every record of a partition, in arrival order, into level-0 files of bucket -2 (its directory is
``bucket-postpone``), with the sequence number Java leaves unset (-1), and never reads the table first:
there is no merge tree to restore and nothing to compact. Readers do not see these files; a compaction
(:mod:`paimon_core.compact`) assigns their rows to real buckets and merges them there.

The files are Avro without value statistics where this build writes Avro and Avro holds the table's
columns (Java's writer sets ``file.format = avro`` and ``metadata.stats-mode = none`` for them, and keeps
the table's format when Avro cannot hold a column); otherwise in the table's ``file.format``.

Each writer names its files ``<data-file.prefix>-u-<user>-s-<writer id>-w-<uuid>-<n>``, Java's pattern, so a
compaction can tell one writer's files (and their order) from another's.
"""

from __future__ import annotations

import random
import uuid
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import options as opts
from paimon_core.errors import ConfigError, MergeError, SchemaError
from paimon_core.table._messages import CommitMessage
from paimon_core.table._store import POSTPONE_BUCKET
from paimon_core.table._write import DataFileWriter, check_writable_format
from paimon_core.table.mergetree._layout import KeyValueLayout, is_add
from paimon_core.table.mergetree._merge import MergeEngine

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = [
    "UNKNOWN_SEQUENCE",
    "PostponeBucketWriter",
    "postpone_file_prefix",
    "postpone_write_table",
    "writer_prefix",
]

UNKNOWN_SEQUENCE = -1  # Java's KeyValue.UNKNOWN_SEQUENCE: a postponed record gets its number when compacted
_FILE_SOURCE_APPEND = 0
_WRITER_MARK = "-w-"


def postpone_file_prefix(table: TableStore) -> str:
    """A fresh writer's file name prefix: ``<data-file.prefix>-u-<user>-s-<writer id>-w-`` (Java's)."""
    prefix = table.options.get_option(opts.DATA_FILE_PREFIX)
    user = uuid.uuid4()
    writer_id = random.randrange(2**31 - 1)  # Java: a random non-negative int per writer
    return f"{prefix}-u-{user}-s-{writer_id}{_WRITER_MARK}"


def postpone_write_table(table: TableStore) -> TableStore:
    """The table as a postpone writer writes it: Avro files without value statistics, as Java's, when Avro
    can be written here and holds the table's columns; else the table unchanged."""
    try:
        avro = table.copy({opts.FILE_FORMAT.key: "avro", opts.STATS_MODE.key: "none"})
        check_writable_format(avro)
    except (ConfigError, SchemaError):
        return table
    return avro


def writer_prefix(file_name: str) -> str:
    """The prefix a postpone file shares with the other files of its writer (the whole name when the name
    does not follow the pattern: such a file is a writer of its own)."""
    mark = file_name.rfind(_WRITER_MARK)
    return file_name if mark < 0 else file_name[: mark + len(_WRITER_MARK)]


class PostponeBucketWriter:
    """The postponed records of one partition, as one writer writes them (Java's ``PostponeBucketWriter``).

    Args:
        table: the table.
        partition: the partition's BinaryRow bytes.
        engine: the table's merge engine, which checks the first retraction written (as Java does) so a
            record the compaction would refuse is refused now.
        prefix: the writer's file name prefix (:func:`postpone_file_prefix`).
    """

    def __init__(self, table: TableStore, partition: bytes, engine: MergeEngine, prefix: str) -> None:
        self.table = table
        self.partition = partition
        self.bucket = POSTPONE_BUCKET
        self.directory = table.bucket_dir(partition, POSTPONE_BUCKET)
        self.layout = KeyValueLayout(table.schema)
        self.engine = engine
        self.retract_checked = False
        options = table.options
        self.writer = DataFileWriter(
            table=postpone_write_table(table),
            partition=partition,
            directory=self.directory,
            bucket=POSTPONE_BUCKET,
            next_seq=0,
            target_size=options.target_file_size(True),
            file_source=_FILE_SOURCE_APPEND,
            layout=self.layout,
            level=0,
            row_group_bytes=options.parquet_block_size(),
            name_prefix=prefix,
        )

    @property
    def buffered_bytes(self) -> int:
        return self.writer.buffered_bytes

    def write(self, values: pa.RecordBatch, kinds: pa.Array) -> None:
        """Add rows of the table's value schema with their row kinds, in arrival order."""
        count = values.num_rows
        sequence = pa.array(np.full(count, UNKNOWN_SEQUENCE, dtype=np.int64))
        records = pa.Table.from_arrays([sequence, kinds, *values.columns], schema=self.layout.records_schema)
        if not self.retract_checked:
            self._check_retraction(records)
        for batch in self.layout.to_file_rows(records).to_batches():
            self.writer.add(batch)

    def _check_retraction(self, records: pa.Table) -> None:
        """Merge the first retraction alone, as Java's writer does once: an engine that refuses it (first-row,
        partial-update without a way to apply deletes...) refuses it here, not at the compaction."""
        adds = is_add(records.column(1))
        if pc.all(adds).as_py():
            return
        first = int(pc.index(adds, False).as_py())
        try:
            self.engine.merge_groups(records.slice(first, 1), np.zeros(1, dtype=np.int64), passthrough=False)
        except MergeError as exc:
            raise MergeError(f"{self.table.identifier}: {exc}") from exc
        self.retract_checked = True

    def own(self) -> None:
        """Copy the buffered rows into buffers of their own (they may be slices of a larger input)."""
        self.writer.own()

    def spill(self) -> None:
        """Free the buffer: its rows go to the open file (postponed rows need no order, so nothing is sorted
        or kept aside)."""
        self.writer.flush()

    def prepare_commit(self, full_compaction: bool = False) -> CommitMessage | None:
        """Close the open file and hand over the files written since the last call (bucket -2, total
        buckets -2 as Java's entries have them). A postpone bucket is never compacted by its writer."""
        del full_compaction
        files = self.writer.close()
        if not files:
            return None
        return CommitMessage(self.partition, POSTPONE_BUCKET, self.table.bucket, new_files=tuple(files))

    def created_paths(self) -> list[str]:
        """Files this writer wrote that no message holds yet (for an abort)."""
        return self.writer.abort()

    def close(self) -> None:
        """Nothing kept on local disk: nothing to release."""
