"""Writing Arrow data into rolling Parquet files per (partition, bucket), bounded in memory."""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paimon_core import options as opts
from paimon_core.binary_row import EMPTY_ROW, serialize_row
from paimon_core.bucket import assign_buckets
from paimon_core.errors import DataFileError, PaimonError, StorageError
from paimon_core.manifest import DataFileMeta, SimpleStats, local_wall_clock_millis
from paimon_core.partition import partition_path
from paimon_core.stats import StatsCollector
from paimon_core.storage import join_path
from paimon_core.table._convert import conform_batch, iter_batches
from paimon_core.table._hooks import BucketCompaction
from paimon_core.table._messages import CommitMessage

if TYPE_CHECKING:
    from paimon_core.table._table import Table
    from paimon_core.table.mergetree import KeyValueLayout
    from paimon_core.table.mergetree._layout import KeyValueFileStats

logger = logging.getLogger(__name__)

_STATS_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="paimon-stats")
_FILE_SOURCE_APPEND = 0
# pyarrow 20 added the page row limit (parquet.page.row.count.limit); older versions cut pages by size only.
_LIMITS_PAGE_ROWS = "max_rows_per_page" in inspect.signature(pq.ParquetWriter.__init__).parameters


def storage_arrow_type(arrow_type: pa.DataType) -> pa.DataType:
    """The Arrow type written to Parquet: Java writes BINARY(n) as a plain BYTE_ARRAY."""
    if pa.types.is_fixed_size_binary(arrow_type):
        return pa.binary()
    return arrow_type


def storage_arrow_schema(schema: pa.Schema) -> pa.Schema:
    fields = [f.with_type(storage_arrow_type(f.type)) for f in schema]
    return pa.schema(fields, metadata=schema.metadata)


@dataclass
class _OpenFile:
    name: str
    path: str
    stream: BinaryIO
    writer: pq.ParquetWriter
    stats: StatsCollector
    min_seq: int
    key_value: KeyValueFileStats | None = None
    rows: int = 0


@dataclass
class DataFileWriter:
    """Rolling Parquet writer for one (partition, bucket); rows are buffered into row groups.

    The table's Parquet options shape the files as parquet-java's do in Java Paimon: a row group is cut
    when the buffered rows reach ``parquet.block.size`` (``file.block-size``) bytes, pages at
    ``parquet.page.size`` bytes or ``parquet.page.row.count.limit`` rows, and ``parquet.compression``,
    ``parquet.enable.dictionary`` (also per column, ``parquet.enable.dictionary#<column>``),
    ``parquet.dictionary.page.size`` and ``parquet.writer.version`` are honoured.

    With a ``layout`` it writes the files of a primary-key table: its rows are key-value rows
    (:meth:`KeyValueLayout.to_file_rows`), sorted by key, and the metadata records keys, sequence
    numbers, deletes and ``level``.
    """

    table: Table
    partition: bytes
    directory: str
    bucket: int
    next_seq: int
    target_size: int
    file_source: int = _FILE_SOURCE_APPEND
    layout: KeyValueLayout | None = None
    level: int = 0
    row_group_bytes: int | None = None  # buffered bytes that start a flush; the block size when None
    name_prefix: str | None = None  # the file name prefix; ``data-file.prefix`` when None
    buffered: list[pa.RecordBatch] = field(default_factory=list)
    buffered_bytes: int = 0
    written: list[DataFileMeta] = field(default_factory=list)
    _file: _OpenFile | None = None
    _file_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    _file_counter: int = 0
    _compression_ratio: float = 1.0
    _block_size: int = 0

    def __post_init__(self) -> None:
        self._block_size = self.table.options.parquet_block_size()
        if self.row_group_bytes is None:
            self.row_group_bytes = self._block_size

    def add(self, batch: pa.RecordBatch) -> None:
        self.buffered.append(batch)
        self.buffered_bytes += batch.nbytes
        if self.buffered_bytes >= (self.row_group_bytes or self._block_size):
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows: row groups of at most the block size, files of about the target size."""
        if not self.buffered:
            return
        data = pa.Table.from_batches(self.buffered)  # chunked: the row group is written without a copy
        self.buffered, self.buffered_bytes = [], 0
        offset = 0
        while offset < data.num_rows:
            rest = data.slice(offset)
            open_file = self._file or self._open(rest)
            remaining = self.target_size - open_file.stream.tell()
            bytes_per_row = max(rest.nbytes / max(rest.num_rows, 1), 1e-9)
            rows = rest.num_rows
            if rest.nbytes * self._compression_ratio > remaining:
                rows = max(1, int(remaining / (bytes_per_row * self._compression_ratio)))
            if rows * bytes_per_row > self._block_size:
                rows = max(1, int(self._block_size / bytes_per_row))
            chunk = rest.slice(0, rows)
            before = open_file.stream.tell()
            self._write_chunk(open_file, chunk)
            written = open_file.stream.tell() - before
            if chunk.nbytes:
                self._compression_ratio = max(written / chunk.nbytes, 1e-3)
            offset += rows
            if open_file.stream.tell() >= self.target_size:
                self._close_file()

    def _write_chunk(self, open_file: _OpenFile, chunk: pa.Table) -> None:
        file_schema = open_file.writer.schema
        if not chunk.schema.equals(file_schema, check_metadata=False):
            chunk = chunk.cast(file_schema)
        # Stats and encoding both run in Arrow's C++ with the GIL released: overlap them.
        stats_done = _STATS_POOL.submit(open_file.stats.update, chunk)
        try:
            open_file.writer.write_table(chunk, row_group_size=max(chunk.num_rows, 1))
            if open_file.key_value is not None:
                open_file.key_value.update(chunk)
        finally:
            stats_done.result()
        open_file.rows += chunk.num_rows

    def _open(self, sample: pa.Table) -> _OpenFile:
        table = self.table
        prefix = self.name_prefix or table.options.get_option(opts.DATA_FILE_PREFIX)
        name = f"{prefix}{self._file_uuid}-{self._file_counter}.parquet"
        self._file_counter += 1
        path = join_path(self.directory, name)
        try:
            stream = table.storage.open_output(path)
        except OSError as exc:
            # The store's own error (an OSError) under the StorageError that names the call.
            cause = (
                exc.__cause__ if isinstance(exc, StorageError) and isinstance(exc.__cause__, OSError) else exc
            )
            if isinstance(cause, PaimonError):
                raise
            # e.g. a partition value too long for a file name: say which file, without repeating the path
            reason = cause.strerror or (str(cause) if len(str(cause)) < 500 else type(cause).__name__)
            shown = path if len(path) <= 300 else f"{path[:150]}...{path[-100:]}"
            raise DataFileError(f"cannot create data file {shown}: {reason}", path) from exc
        file_schema = self.layout.file_schema if self.layout is not None else table.arrow_schema
        writer = pq.ParquetWriter(
            stream,
            storage_arrow_schema(file_schema),
            use_dictionary=_dictionary_columns(sample, table.options),
            write_statistics=True,
            **parquet_writer_options(table.options),
        )
        stats = StatsCollector(
            list(table.schema.fields),
            table.options.get_option(opts.STATS_MODE),
            _per_field_stats_modes(table.options),
            table.options.get_option(opts.STATS_DENSE_STORE),
        )
        key_value = self.layout.new_file_stats() if self.layout is not None else None
        self._file = _OpenFile(name, path, stream, writer, stats, self.next_seq, key_value)
        return self._file

    def _close_file(self) -> None:
        open_file, self._file = self._file, None
        if open_file is None:
            return
        open_file.writer.close()
        open_file.stream.close()
        if open_file.rows == 0:
            self.table.storage.delete(open_file.path)
            return
        value_stats, stats_cols = open_file.stats.result()
        min_key, max_key, key_stats = EMPTY_ROW, EMPTY_ROW, SimpleStats.EMPTY
        min_seq, max_seq, deletes = open_file.min_seq, open_file.min_seq + open_file.rows - 1, 0
        key_value = open_file.key_value
        if key_value is not None:
            assert key_value.first_key is not None and key_value.last_key is not None
            assert key_value.min_sequence is not None and key_value.max_sequence is not None
            min_key, max_key = key_value.first_key, key_value.last_key
            key_stats = key_value.key_stats.result()[0]
            min_seq, max_seq, deletes = key_value.min_sequence, key_value.max_sequence, key_value.delete_rows
        else:
            self.next_seq = open_file.min_seq + open_file.rows
        self.written.append(
            DataFileMeta(
                file_name=open_file.name,
                file_size=self.table.storage.size(open_file.path),
                row_count=open_file.rows,
                min_key=min_key,
                max_key=max_key,
                key_stats=key_stats,
                value_stats=value_stats,
                min_sequence_number=min_seq,
                max_sequence_number=max_seq,
                schema_id=self.table.schema.id,
                level=self.level,
                extra_files=(),
                creation_time=local_wall_clock_millis(),
                delete_row_count=deletes,
                embedded_index=None,
                file_source=self.file_source,
                value_stats_cols=stats_cols,
                external_path=None,
                first_row_id=None,
                write_cols=None,
            )
        )

    def close(self) -> list[DataFileMeta]:
        self.flush()
        self._close_file()
        files, self.written = self.written, []
        return files

    def abort(self) -> list[str]:
        """Close quietly and return the paths of every file this writer created."""
        paths = [join_path(self.directory, f.file_name) for f in self.written]
        if self._file is not None:
            try:
                self._file.writer.close()
                self._file.stream.close()
            except Exception:  # the file is deleted below either way
                logger.debug("closing %s during abort failed", self._file.path, exc_info=True)
            paths.append(self._file.path)
            self._file = None
        self.buffered, self.written = [], []
        return paths


def parquet_writer_options(options: opts.Options) -> dict[str, Any]:
    """``pyarrow.parquet.ParquetWriter`` arguments from a table's Parquet options (not the dictionary)."""
    compression = options.get_option(opts.PARQUET_COMPRESSION) or options.get_option(opts.FILE_COMPRESSION)
    level = None
    if compression == "zstd":
        level = options.get_option(opts.PARQUET_ZSTD_LEVEL)
        if level is None:
            level = options.get_option(opts.FILE_COMPRESSION_ZSTD_LEVEL)
    version = options.get_option(opts.PARQUET_WRITER_VERSION)
    arguments: dict[str, Any] = {
        "compression": "none" if compression in ("none", "uncompressed") else compression,
        "compression_level": level,
        "store_decimal_as_integer": True,
        "data_page_size": options.get_option(opts.PARQUET_PAGE_SIZE),
        "dictionary_pagesize_limit": options.get_option(opts.PARQUET_DICTIONARY_PAGE_SIZE),
        "data_page_version": "2.0" if version in ("v2", "parquet_2_0") else "1.0",
        # A page index (column and offset indexes), as parquet-java writes, for readers that skip pages by
        # it (pyarrow's cannot: docs/reads.md).
        "write_page_index": True,
    }
    if _LIMITS_PAGE_ROWS:
        arguments["max_rows_per_page"] = options.get_option(opts.PARQUET_PAGE_ROW_COUNT_LIMIT)
    return arguments


_DICTIONARY_SAMPLE_ROWS = 64 * 1024
_DICTIONARY_MIN_SAMPLE = 1024


def _dictionary_columns(sample: pa.Table, options: opts.Options) -> bool | list[str]:
    """The columns worth dictionary-encoding, judged on the first rows a file receives.

    Parquet writers give up on a column's dictionary once its page is full; for a nearly unique column
    (ids, hashes, measurements) trying costs CPU and saves nothing, so such columns are written plain.
    ``parquet.enable.dictionary#<column>`` decides for its column.
    """
    per_column = options.parquet_column_dictionary()
    enabled = options.get_option(opts.PARQUET_ENABLE_DICTIONARY)
    if not per_column and not enabled:
        return False
    nested = any(pa.types.is_nested(t) for t in sample.schema.types)
    if nested and not per_column:
        return enabled  # nested columns would need their leaf paths named
    small = sample.num_rows < _DICTIONARY_MIN_SAMPLE
    head = sample.slice(0, _DICTIONARY_SAMPLE_ROWS)
    chosen = []
    for name, column in zip(head.column_names, head.columns, strict=True):
        if name in per_column:
            wanted = per_column[name]
        elif not enabled or pa.types.is_nested(column.type):
            wanted = False
        elif small:
            wanted = True  # too little to judge
        else:
            values = len(column) - column.null_count
            wanted = bool(values) and pc.count_distinct(column).as_py() <= values // 2
        if wanted:
            chosen.append(name)
    return chosen


def _per_field_stats_modes(options: opts.Options) -> dict[str, str]:
    modes = {}
    for key, value in options.items():
        if key.startswith("fields.") and key.endswith(".stats-mode"):
            modes[key[len("fields.") : -len(".stats-mode")]] = value
    return modes


class TableWrite:
    """Writes data into new files of a table; nothing is visible until the messages are committed.

    Memory stays bounded by ``write-buffer-size``: when the buffers of all open writers exceed it, the
    largest is flushed to its file as a row group.
    """

    def __init__(self, table: Table) -> None:
        self.table = table
        self._writers: dict[tuple[bytes, int], DataFileWriter] = {}
        self._paths: dict[bytes, str] = {}
        self._arrow_schema = table.arrow_schema
        self._buffer_limit = table.options.get_option(opts.WRITE_BUFFER_SIZE)
        self._target_size = table.options.target_file_size(bool(table.schema.primary_keys))
        self._restored_seq: dict[tuple[bytes, int], int] | None = None
        self._closed = False
        # Inline compaction (docs/append-compaction.md): bucketed writers compact per bucket unless write-only.
        self._inline: BucketCompaction | None = None
        factory = table.hooks.bucket_compaction
        if (
            factory is not None
            and table.bucket > 0
            and not table.schema.primary_keys
            and not table.options.get_option(opts.WRITE_ONLY)
        ):
            self._inline = factory(table)

    def write(self, data: Any) -> None:
        """Write an Arrow table / batch / reader, an iterable of batches, or a pandas DataFrame.

        Raises:
            SchemaError: the data does not fit the table's schema.
        """
        if self._closed:
            raise RuntimeError("this TableWrite was already committed or aborted")
        for batch in iter_batches(data):
            if batch.num_rows == 0:
                continue
            batch = conform_batch(batch, self._arrow_schema)
            for key, part in self._split(batch):
                self._writer_for(*key).add(part)
            self._bound_memory()

    def _split(self, batch: pa.RecordBatch) -> Iterator[tuple[tuple[tuple[Any, ...], int], pa.RecordBatch]]:
        table = self.table
        keys = list(table.partition_keys)
        buckets = None
        if table.bucket > 0:
            buckets = assign_buckets(batch, table.bucket_keys, table.bucket_key_types, table.bucket)
        if not keys and buckets is None:
            yield ((), 0), batch
            return
        columns: dict[str, pa.Array] = {f"k{i}": batch.column(k) for i, k in enumerate(keys)}
        if buckets is not None:
            columns["bucket"] = buckets
        group_cols = list(columns)
        columns["row"] = pa.array(np.arange(batch.num_rows, dtype=np.int64))
        group_table = pa.table(columns)
        grouped = group_table.group_by(group_cols, use_threads=False).aggregate([("row", "list")])
        rows = grouped.column("row_list")
        partition_columns = [grouped.column(f"k{i}") for i in range(len(keys))]
        bucket_column = grouped.column("bucket") if buckets is not None else None
        for g in range(grouped.num_rows):
            values = tuple(col[g].as_py() for col in partition_columns)
            bucket = bucket_column[g].as_py() if bucket_column is not None else 0
            indices = rows[g].values
            part = batch if len(indices) == batch.num_rows else batch.take(indices)
            yield (values, bucket), part

    def _partition_bytes(self, partition_values: tuple[Any, ...]) -> bytes:
        if not partition_values:
            return EMPTY_ROW
        return serialize_row(list(partition_values), self.table.partition_types)

    def _writer_for(self, partition_values: tuple[Any, ...], bucket: int) -> DataFileWriter:
        table = self.table
        partition = self._partition_bytes(partition_values)
        key = (partition, bucket)
        writer = self._writers.get(key)
        if writer is None:
            directory = self._paths.get(partition)
            if directory is None:
                relative = partition_path(
                    table.partition_keys,
                    list(partition_values),
                    table.partition_types,
                    table.options.get_option(opts.PARTITION_DEFAULT_NAME),
                    table.options.get_option(opts.PARTITION_LEGACY_NAME),
                )
                directory = join_path(table.path, relative) if relative else table.path
                self._paths[partition] = directory
            writer = DataFileWriter(
                table=table,
                partition=partition,
                directory=join_path(directory, f"bucket-{bucket}"),
                bucket=bucket,
                next_seq=self._restore_sequence(partition, bucket),
                target_size=self._target_size,
            )
            self._writers[key] = writer
        return writer

    def _restore_sequence(self, partition: bytes, bucket: int) -> int:
        """Bucketed writers continue after the bucket's highest sequence number; unaware ones start at 0."""
        if self.table.bucket <= 0 or self.table.options.get_option(opts.WRITE_ONLY):
            return 0
        if self._restored_seq is None:
            self._restored_seq = {}
            restored: dict[tuple[bytes, int], list[DataFileMeta]] = {}
            for entry in self.table.live_entries():
                key = (entry.partition, entry.bucket)
                restored.setdefault(key, []).append(entry.file)
                seq = entry.file.max_sequence_number + 1
                if seq > self._restored_seq.get(key, 0):
                    self._restored_seq[key] = seq
            if self._inline is not None:
                self._inline.restore(restored)
        return self._restored_seq.get((partition, bucket), 0)

    def _bound_memory(self) -> None:
        total = sum(w.buffered_bytes for w in self._writers.values())
        while total > self._buffer_limit:
            largest = max(self._writers.values(), key=lambda w: w.buffered_bytes)
            if largest.buffered_bytes == 0:
                break
            total -= largest.buffered_bytes
            largest.flush()

    def prepare_commit(self) -> list[CommitMessage]:
        """Close every file and return the commit messages; the writer can keep writing afterwards.

        ``precommit-compact`` is not applied here: it merges the files of all the writers of a commit, so
        whoever gathers their messages applies it once (``paimon_core.compact.precommit_compact``), as
        :meth:`Table.append` does.
        """
        messages = []
        for (partition, bucket), writer in self._writers.items():
            files = writer.close()
            before: tuple[DataFileMeta, ...] = ()
            after: tuple[DataFileMeta, ...] = ()
            if self._inline is not None:
                before, after = self._inline.compact(partition, bucket, files)
            if files or before:
                messages.append(
                    CommitMessage(
                        partition,
                        bucket,
                        self.table.bucket,
                        new_files=tuple(files),
                        compact_before=before,
                        compact_after=after,
                    )
                )
        return messages

    def abort(self, messages: list[CommitMessage] | None = None) -> None:
        """Delete every file this writer (or the given uncommitted messages) created."""
        paths = [p for writer in self._writers.values() for p in writer.abort()]
        self.table.delete_new_files(messages or ())
        for path in paths:
            try:
                self.table.storage.delete(path)
            except OSError:
                logger.warning("could not delete %s while aborting a write", path, exc_info=True)
        self._writers.clear()
        self._closed = True

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> TableWrite:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.abort()
        self.close()
