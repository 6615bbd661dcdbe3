"""Writing Arrow data into rolling data files (Parquet, ORC or Avro) per (partition, bucket), bounded in
memory."""

from __future__ import annotations

import inspect
import itertools
import threading
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paimon_core import options as opts
from paimon_core.binary_row import EMPTY_ROW, serialize_row
from paimon_core.bucket import assign_buckets
from paimon_core.errors import DataFileError, PaimonError, StorageError
from paimon_core.fileindex import INDEX_FILE_SUFFIX, FileIndexBuilder, index_builder
from paimon_core.formats import (
    ORC_STRIPE_BYTES,
    FormatWriter,
    check_writable_formats,
    data_file_compression,
    data_file_format,
    open_format_writer,
)
from paimon_core.manifest import DataFileMeta, SimpleStats, local_wall_clock_millis
from paimon_core.redaction import get_logger
from paimon_core.stats import StatsCollector
from paimon_core.storage import join_path, parent_path, shown_path
from paimon_core.table._convert import conform_batch, iter_batches
from paimon_core.table._entries import live_entries
from paimon_core.table._external import ExternalPaths
from paimon_core.table._messages import CommitMessage
from paimon_core.table._split import group_rows, pieces
from paimon_core.table._store import BucketCompaction
from paimon_core.table._write_memory import MemoryPlan, SpillDirectory, SpilledBatches

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore
    from paimon_core.table.mergetree._layout import KeyValueFileStats, KeyValueLayout

logger = get_logger(__name__)

_CLOSE_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="paimon-write")
_FILE_SOURCE_APPEND = 0
# pyarrow 20 added the page row limit (parquet.page.row.count.limit); older versions cut pages by size only.
_LIMITS_PAGE_ROWS = "max_rows_per_page" in inspect.signature(pq.ParquetWriter.__init__).parameters
_SMALL_BATCH_ROWS = 4096  # buffered batches this small are merged ...
_SMALL_RUN_MERGED = 64  # ... once this many follow each other
_HELD_PER_BYTE = 0.5  # see DataFileWriter.held_bytes
_HELD_PER_COLUMN = 8 << 10
_SERIALIZED_CACHED = 10_000


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
    writer: FormatWriter
    stats: StatsCollector
    min_seq: int
    key_value: KeyValueFileStats | None = None
    index: FileIndexBuilder | None = None
    rows: int = 0
    external: bool = False  # under one of data-file.external-paths: the manifest records its full path


def check_writable_format(table: TableStore) -> None:
    """Refuse, before any file is written, a format that cannot take the table's columns or a codec
    (:func:`paimon_core.formats.check_writable_formats`).

    Raises:
        ConfigError: a codec the format of some level cannot use, naming the option.
        SchemaError: a column the format of some level cannot hold, naming it.
    """
    check_writable_formats(table.options, table.arrow_schema, keyed=bool(table.schema.primary_keys))


@dataclass(eq=False)  # a writer is itself, not its fields: hashed and compared by identity
class DataFileWriter:
    """Rolling data file writer for one (partition, bucket); rows are buffered into row groups.

    Files are in the format :func:`data_file_format` picks for the writer's level (and ``changelog``):
    Parquet, ORC or Avro, each through the writer of ``paimon_core.formats``.

    The table's Parquet options shape the files as parquet-java's do in Java Paimon: a row group is cut
    when the buffered rows reach ``parquet.block.size`` (``file.block-size``) bytes, pages at
    ``parquet.page.size`` bytes or ``parquet.page.row.count.limit`` rows, and ``parquet.compression``,
    ``parquet.enable.dictionary`` (also per column, ``parquet.enable.dictionary#<column>``),
    ``parquet.dictionary.page.size`` and ``parquet.writer.version`` are honoured.

    With a ``layout`` it writes the files of a primary-key table: its rows are key-value rows
    (:meth:`KeyValueLayout.to_file_rows`), sorted by key, and the metadata records keys, sequence
    numbers, deletes and ``level``.

    With ``spilled`` set, :meth:`spill` moves the buffered rows to local disk; they come back, ahead of
    the rows buffered since, when the writer writes row groups.
    """

    table: TableStore
    partition: bytes
    directory: str
    bucket: int
    next_seq: int
    target_size: int
    file_source: int = _FILE_SOURCE_APPEND
    layout: KeyValueLayout | None = None
    level: int = 0
    row_group_bytes: int | None = None  # the row group size (and buffered bytes that start a flush)
    name_prefix: str | None = None  # the file name prefix; ``data-file.prefix`` when None
    changelog: bool = False  # changelog files: ``changelog-file.format`` picks their format
    dictionary: DictionaryChoice | None = None  # shared by the writers of one table write
    spilled: SpilledBatches | None = None
    file_index: bool = True  # build the file indexes the table's options ask for (not for changelog files)
    buffered: list[pa.RecordBatch] = field(default_factory=list)
    buffered_bytes: int = 0
    written: list[DataFileMeta] = field(default_factory=list)
    _file: _OpenFile | None = None
    _file_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    _file_counter: int = 0
    _compression_ratio: float = 1.0
    _small_run: int = 0  # how many of the last buffered batches are small (merged once there are many)
    _held: int = 0
    _external: ExternalPaths | None = None

    def __post_init__(self) -> None:
        check_writable_format(self.table)
        self._external = self.table.external_paths(self.partition, self.bucket)
        self.file_format = data_file_format(
            self.table.options, self.level, self.changelog, keyed=self.layout is not None
        )
        block_size = self.table.options.parquet_block_size()
        self.row_group_bytes = min(self.row_group_bytes or block_size, block_size)
        if self.dictionary is None:
            self.dictionary = DictionaryChoice(self.table.options)
        if self.file_index:
            self._new_index()  # a bad file-index option fails the write before any file is written

    @property
    def group_bytes(self) -> int:
        assert self.row_group_bytes is not None
        return self.row_group_bytes

    @property
    def held_bytes(self) -> int:
        """About what the open file's Parquet writer keeps after a row group, until the next or the close:
        measured with pyarrow 19 at up to half the row group's in-memory size (encoded pages, level and
        dictionary scratch), and some kB per column however small the row group."""
        return self._held

    @property
    def memory_bytes(self) -> int:
        return self.buffered_bytes + self._held

    def add(self, batch: pa.RecordBatch, nbytes: int | None = None) -> None:
        """Buffer ``batch`` (``nbytes``: its size when the caller knows it; ``batch.nbytes`` is not free)."""
        self.buffered.append(batch)
        self.buffered_bytes += batch.nbytes if nbytes is None else nbytes
        if batch.num_rows < _SMALL_BATCH_ROWS:
            # Many small batches (one partition's share of each input batch) encode much slower than a
            # few large ones: merge them once there are enough (a copy of a few hundred kB).
            self._small_run += 1
            if self._small_run >= _SMALL_RUN_MERGED:
                self._merge_tail(self._small_run)
        else:
            self._small_run = 0
        if not self.spilled and self.buffered_bytes >= self.group_bytes:  # spilled rows wait for the flush
            self.write_row_groups(keep_tail=True)

    def own(self) -> None:
        """Copy the buffered rows into buffers of their own (they may be slices of a larger input)."""
        self._merge_tail(len(self.buffered), copy_one=True)

    def spill(self) -> None:
        """Move the buffered rows to local disk."""
        assert self.spilled is not None, "spilling needs a SpilledBatches"
        if self.buffered:
            self.spilled.spill(self.buffered)
            self.buffered, self.buffered_bytes, self._small_run = [], 0, 0

    def flush(self) -> None:
        """Write every pending row (spilled first): row groups of at most the row group size, files of
        about the target size."""
        self.write_row_groups(keep_tail=False)

    def write_row_groups(self, keep_tail: bool) -> None:
        """Write the pending rows as row groups; with ``keep_tail`` the rows short of a full row group stay
        buffered."""
        if not self.buffered and not self.spilled:
            return
        source: Iterable[pa.RecordBatch] = self.buffered
        if self.spilled:
            source = itertools.chain(self.spilled.drain(), self.buffered)
        self.buffered, self.buffered_bytes, self._small_run = [], 0, 0
        group: list[pa.RecordBatch] = []
        size = 0
        for batch in source:  # at most a row group (and a batch) in memory, however much was spilled
            group.append(batch)
            size += batch.nbytes
            if size >= self.group_bytes:
                group, size = self._write_rows(group, size, keep_tail=True)
        if group:
            group, size = self._write_rows(group, size, keep_tail)
            self.buffered, self.buffered_bytes = group, size

    def _merge_tail(self, count: int, copy_one: bool = False) -> None:
        """The last ``count`` buffered batches as one (a copy, even of a single batch with ``copy_one``)."""
        self._small_run = 0
        start = len(self.buffered) - count
        tail = self.buffered[start:]
        if len(tail) > 1 or (tail and copy_one):
            first = tail[0].schema
            if all(b.schema.equals(first) for b in tail):
                self.buffered[start:] = [pa.concat_batches(tail)]

    def _write_rows(
        self, batches: list[pa.RecordBatch], size: int, keep_tail: bool
    ) -> tuple[list[pa.RecordBatch], int]:
        """Write ``batches`` (``size`` bytes) as row groups, rolling files at the target size; returns the
        rows left unwritten (with ``keep_tail``, those short of a full row group)."""
        data = pa.Table.from_batches(batches)  # chunked: each row group is written without a copy
        bytes_per_row = max(size / max(data.num_rows, 1), 1e-9)
        group_rows = max(1, int(self.group_bytes / bytes_per_row))
        offset = 0
        while offset < data.num_rows:
            rows = data.num_rows - offset
            if keep_tail and rows < group_rows:
                rest = data.slice(offset)
                return rest.to_batches(), int(rows * bytes_per_row)
            open_file = self._file or self._open(data.slice(offset, _DICTIONARY_SAMPLE_ROWS))
            remaining = self.target_size - open_file.stream.tell()
            rows = min(rows, group_rows)
            if rows * bytes_per_row * self._compression_ratio > remaining:
                rows = max(1, int(remaining / (bytes_per_row * self._compression_ratio)))
            before = open_file.stream.tell()
            self._write_chunk(open_file, data.slice(offset, rows))
            self._held = max(int(rows * bytes_per_row * _HELD_PER_BYTE), _HELD_PER_COLUMN * data.num_columns)
            self._compression_ratio = max((open_file.stream.tell() - before) / (rows * bytes_per_row), 1e-3)
            offset += rows
            if open_file.stream.tell() >= self.target_size:
                self._close_file()
        return [], 0

    def _write_chunk(self, open_file: _OpenFile, chunk: pa.Table) -> None:
        file_schema = open_file.writer.schema
        if not chunk.schema.equals(file_schema, check_metadata=False):
            chunk = chunk.cast(file_schema)
        # Little work for Parquet: min/max come from the footer its writer fills (stats.py).
        open_file.stats.update(chunk)
        open_file.writer.write(chunk)
        if open_file.key_value is not None:
            open_file.key_value.update(chunk)
        if open_file.index is not None:
            open_file.index.update(chunk)
        open_file.rows += chunk.num_rows

    def _new_index(self) -> FileIndexBuilder | None:
        """The indexes of a new file, over the value columns (a primary-key file's too, as Java)."""
        if not self.file_index:
            return None
        return index_builder(self.table.options, self.table.schema.fields)

    def _open(self, sample: pa.Table) -> _OpenFile:
        table = self.table
        prefix = self.name_prefix or table.options.get_option(opts.DATA_FILE_PREFIX)
        name = f"{prefix}{self._file_uuid}-{self._file_counter}.{self.file_format}"
        self._file_counter += 1
        external = self._external is not None
        path = (
            self._external.next_path(name) if self._external is not None else join_path(self.directory, name)
        )
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
            raise DataFileError(f"cannot create data file {shown_path(path)}: {reason}", path) from exc
        file_schema = storage_arrow_schema(
            self.layout.file_schema if self.layout is not None else table.arrow_schema
        )
        try:
            writer = self._format_writer(stream, file_schema, sample)
        except BaseException:
            stream.close()
            table.storage.delete(path)
            raise
        # Parquet: min/max as its writer computed them into the footer (stats.py); others: from the data.
        footer_schema = file_schema if self.file_format == "parquet" else None
        stats = StatsCollector(
            list(table.schema.fields),
            table.options.get_option(opts.STATS_MODE),
            table.options.per_field("stats-mode"),
            table.options.get_option(opts.STATS_DENSE_STORE),
            footer_schema=footer_schema,
        )
        key_value = self.layout.new_file_stats(footer_schema) if self.layout is not None else None
        self._file = _OpenFile(
            name, path, stream, writer, stats, self.next_seq, key_value, self._new_index(), external=external
        )
        return self._file

    def _format_writer(self, stream: BinaryIO, file_schema: pa.Schema, sample: pa.Table) -> FormatWriter:
        options = self.table.options
        parquet = None
        if self.file_format == "parquet":
            assert self.dictionary is not None
            parquet = {
                "use_dictionary": self.dictionary.columns(sample),
                "write_statistics": True,
                **parquet_writer_options(options, self.level),
            }
        block_size = options.get_option(opts.FILE_BLOCK_SIZE)
        return open_format_writer(
            self.file_format,
            stream,
            file_schema,
            compression=data_file_compression(options, self.level),
            zstd_level=options.get_option(opts.FILE_COMPRESSION_ZSTD_LEVEL),
            block_size=block_size if block_size is not None else ORC_STRIPE_BYTES,
            parquet_arguments=parquet,
        )

    def roll(self) -> None:
        """Close the open file (what the writer writes next goes to a new one)."""
        self._close_file()

    def _close_file(self) -> None:
        open_file, self._file, self._held = self._file, None, 0
        if open_file is None:
            return
        open_file.writer.close()
        open_file.stream.close()
        if open_file.rows == 0:
            self.table.storage.delete(open_file.path)
            return
        footer = open_file.writer.footer
        value_stats, stats_cols = open_file.stats.result(footer)
        min_key, max_key, key_stats = EMPTY_ROW, EMPTY_ROW, SimpleStats.EMPTY
        min_seq, max_seq, deletes = open_file.min_seq, open_file.min_seq + open_file.rows - 1, 0
        key_value = open_file.key_value
        if key_value is not None:
            assert key_value.first_key is not None and key_value.last_key is not None
            assert key_value.min_sequence is not None and key_value.max_sequence is not None
            min_key, max_key = key_value.first_key, key_value.last_key
            key_stats = key_value.key_stats.result(footer)[0]
            min_seq, max_seq, deletes = key_value.min_sequence, key_value.max_sequence, key_value.delete_rows
        else:
            self.next_seq = open_file.min_seq + open_file.rows
        embedded, extra = self._write_index(open_file)
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
                extra_files=extra,
                creation_time=local_wall_clock_millis(),
                delete_row_count=deletes,
                embedded_index=embedded,
                file_source=self.file_source,
                value_stats_cols=stats_cols,
                external_path=open_file.path if open_file.external else None,
                first_row_id=None,
                write_cols=None,
            )
        )

    def _write_index(self, open_file: _OpenFile) -> tuple[bytes | None, tuple[str, ...]]:
        """The file's indexes: embedded in the manifest up to ``file-index.in-manifest-threshold`` bytes,
        else in ``<data file>.index`` beside it (an extra file of the entry)."""
        if open_file.index is None:
            return None, ()
        data = open_file.index.to_bytes()
        if len(data) <= self.table.options.get_option(opts.FILE_INDEX_IN_MANIFEST_THRESHOLD):
            return data, ()
        name = open_file.name + INDEX_FILE_SUFFIX
        path = join_path(parent_path(open_file.path), name)  # beside the data file, external or not
        try:
            self.table.storage.write_bytes(path, data)
        except BaseException:
            self.table.storage.delete(open_file.path)
            raise
        return None, (name,)

    def close(self) -> list[DataFileMeta]:
        self.flush()
        self._close_file()
        files, self.written = self.written, []
        return files

    def abort(self) -> list[str]:
        """Close quietly and return the paths of every file this writer created."""
        paths = [path for f in self.written for path in f.paths(self.directory)]
        if self._file is not None:
            try:
                self._file.writer.close()
                self._file.stream.close()
            except Exception:  # the file is deleted below either way
                logger.debug("closing %s during abort failed", self._file.path, exc_info=True)
            paths.append(self._file.path)
            self._file = None
        if self.spilled is not None:
            self.spilled.discard()
        self.buffered, self.buffered_bytes, self.written = [], 0, []
        return paths


def parquet_writer_options(options: opts.Options, lsm_level: int = 0) -> dict[str, Any]:
    """``pyarrow.parquet.ParquetWriter`` arguments from a table's Parquet options (not the dictionary) for a
    file of ``lsm_level`` (``file.compression.per.level`` picks its codec)."""
    compression = opts.per_level(options.get_option(opts.FILE_COMPRESSION_PER_LEVEL)).get(lsm_level)
    if compression is None:
        compression = options.get_option(opts.PARQUET_COMPRESSION) or options.get_option(
            opts.FILE_COMPRESSION
        )
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


class DictionaryChoice:
    """The dictionary-encoded columns of a write's files, judged once on a sample of enough rows.

    Whether a column is worth a dictionary is a property of the column (ids and measurements are not,
    categories are), not of the partition a file belongs to; judging it per file cost as much as
    encoding when many small files are written.
    """

    def __init__(self, options: opts.Options) -> None:
        self.options = options
        self._chosen: bool | list[str] | None = None
        # Parallel compaction tasks ask at once: the first judges, the others wait for its answer.
        self._lock = threading.Lock()

    def columns(self, sample: pa.Table) -> bool | list[str]:
        with self._lock:
            if self._chosen is not None:
                return self._chosen
            chosen = _dictionary_columns(sample, self.options)
            if sample.num_rows >= _DICTIONARY_MIN_SAMPLE:
                self._chosen = chosen
            return chosen


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


class TableWrite:
    """Writes data into new files of a table; nothing is visible until the messages are committed.

    ``write-buffer-size`` bounds what it holds (docs/writing.md#memory): input is split by partition and
    bucket a bounded piece at a time, and when the rows buffered for row groups outgrow their share the
    largest buffer is released: spilled to local disk when spilling is on (``write-buffer-spillable``, with
    ``write-buffer-for-append`` or more than ``write-max-writers-to-spill`` writers, as Java Paimon's
    append writers), otherwise written to its file as a row group.
    """

    def __init__(self, table: TableStore) -> None:
        self.table = table
        options = table.options
        self._writers: dict[tuple[bytes, int], DataFileWriter] = {}
        self._serialized: dict[tuple[Any, ...], bytes] = {}  # partition values -> BinaryRow bytes
        self._arrow_schema = table.arrow_schema
        self._memory = MemoryPlan(options.get_option(opts.WRITE_BUFFER_SIZE), options.parquet_block_size())
        self._target_size = options.target_file_size(bool(table.schema.primary_keys))
        self._dictionary = DictionaryChoice(options)
        self._spills = SpillDirectory()
        self._spillable = options.get_option(opts.WRITE_BUFFER_SPILLABLE)
        self._spill_always = options.get_option(opts.WRITE_BUFFER_FOR_APPEND)
        self._spill_writers = options.get_option(opts.WRITE_MAX_WRITERS_TO_SPILL)
        self._spill_disk = options.get_option(opts.WRITE_BUFFER_SPILL_MAX_DISK_SIZE)
        self._restored_seq: dict[tuple[bytes, int], int] | None = None
        self._closed = False
        # Inline compaction (docs/append-compaction.md): bucketed writers compact per bucket unless write-only.
        self._inline: BucketCompaction | None = None
        factory = table.hooks.bucket_compaction
        if (
            factory is not None
            and table.bucket > 0
            and not table.schema.primary_keys
            and not options.get_option(opts.WRITE_ONLY)
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
            borrowed: set[DataFileWriter] = set()
            for piece in pieces(batch, self._memory.piece_bytes):
                for key, part in self._split(piece):
                    writer = self._writer_for(*key)
                    if part is piece:
                        writer.add(part)
                        if piece.num_rows < batch.num_rows:
                            borrowed.add(writer)
                    else:  # a copy: its buffers are exactly what it holds
                        writer.add(part, part.get_total_buffer_size())
                self._bound_buffers(self._memory.buffered_bytes)
            for writer in borrowed:
                writer.own()  # a slice left buffered would keep all of the input batch alive

    def _split(self, batch: pa.RecordBatch) -> Iterator[tuple[tuple[tuple[Any, ...], int], pa.RecordBatch]]:
        """The rows of ``batch`` by ((partition values), bucket)."""
        table = self.table
        keys = [batch.column(k) for k in table.partition_keys]
        if table.bucket > 0:
            keys.append(assign_buckets(batch, table.bucket_keys, table.bucket_key_types, table.bucket))
        elif not keys:
            yield ((), 0), batch
            return
        for values, part in group_rows(batch, keys):
            if table.bucket > 0:
                yield (values[:-1], values[-1]), part
            else:
                yield (values, 0), part

    def _partition_bytes(self, partition_values: tuple[Any, ...]) -> bytes:
        if not partition_values:
            return EMPTY_ROW
        serialized = self._serialized.get(partition_values)
        if serialized is None:
            if len(self._serialized) >= _SERIALIZED_CACHED:
                self._serialized.clear()
            serialized = serialize_row(list(partition_values), self.table.partition_types)
            self._serialized[partition_values] = serialized
        return serialized

    def _writer_for(self, partition_values: tuple[Any, ...], bucket: int) -> DataFileWriter:
        table = self.table
        partition = self._partition_bytes(partition_values)
        key = (partition, bucket)
        writer = self._writers.get(key)
        if writer is None:
            writer = DataFileWriter(
                table=table,
                partition=partition,
                directory=table.bucket_dir(partition, bucket),
                bucket=bucket,
                next_seq=self._restore_sequence(partition, bucket),
                target_size=self._target_size,
                row_group_bytes=self._memory.row_group_bytes,
                dictionary=self._dictionary,
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
            for entry in live_entries(self.table, self.table.snapshot_manager.latest()):
                key = (entry.partition, entry.bucket)
                restored.setdefault(key, []).append(entry.file)
                seq = entry.file.max_sequence_number + 1
                if seq > self._restored_seq.get(key, 0):
                    self._restored_seq[key] = seq
            if self._inline is not None:
                self._inline.restore(restored)
        return self._restored_seq.get((partition, bucket), 0)

    def _spilling(self) -> bool:
        """Java Paimon's append writers buffer (and spill) with ``write-buffer-for-append``, or once more
        than ``write-max-writers-to-spill`` writers are open; ``write-buffer-spillable = false`` never spills."""
        return self._spillable and (self._spill_always or len(self._writers) > self._spill_writers)

    def _bound_buffers(self, limit: int, keep: DataFileWriter | None = None) -> None:
        """Release the largest holders of memory (not ``keep``) until the writers hold at most ``limit``
        bytes: a buffer is spilled or written, an open file whose Parquet writer holds more is closed."""
        writers = self._writers.values()
        total = sum(w.memory_bytes for w in writers)
        while total > limit:
            largest = max(writers, key=lambda w: 0 if w is keep else w.memory_bytes)
            before = largest.memory_bytes
            if largest is keep or before == 0:
                break
            if largest.buffered_bytes >= largest.held_bytes:
                self._release(largest)
            else:
                largest.roll()
            total -= before - largest.memory_bytes

    def _release(self, writer: DataFileWriter) -> None:
        disk_full = self._spill_disk is not None and self._spills.disk_bytes >= self._spill_disk
        if not self._spilling() or disk_full:
            writer.flush()  # its rows so far become a row group of its file
            return
        if writer.spilled is None:
            compression = self.table.options.get_option(opts.SPILL_COMPRESSION)
            writer.spilled = SpilledBatches(self._spills, compression)
        writer.spill()

    def prepare_commit(self) -> list[CommitMessage]:
        """Close every file and return the commit messages; the writer can keep writing afterwards.

        ``precommit-compact`` is not applied here: it merges the files of all the writers of a commit, so
        whoever gathers their messages applies it once (``paimon_core.compact.precommit_compact``), as
        :meth:`Table.append` does.
        """
        closed = self._close_writers()
        self._spills.close()
        messages = []
        for (partition, bucket), files in ((key, closed[key]) for key in self._writers):
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

    def _close_writers(self) -> dict[tuple[bytes, int], list[DataFileMeta]]:
        """Every writer's files, closed. Writers holding only memory close two at a time (encoding and
        compression release the GIL, as ``pyarrow.dataset``'s threads use both cores). Then spilled ones,
        one at a time: each reads a row group back at a time after making room for it, and closes its file
        before the next starts (Java Paimon's buffered writers likewise write at prepareCommit). If one
        fails, the files the others closed are deleted."""
        closed: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        try:
            spilled = [(key, w) for key, w in self._writers.items() if w.spilled]
            in_memory = [(key, w) for key, w in self._writers.items() if not w.spilled]
            futures = [(key, _CLOSE_POOL.submit(writer.close)) for key, writer in in_memory]
            failure: BaseException | None = None
            for key, future in futures:
                try:
                    closed[key] = future.result()
                except BaseException as exc:  # the others are still waited for, then deleted
                    failure = failure or exc
            if failure is not None:
                raise failure
            for key, writer in spilled:
                self._bound_buffers(self._memory.buffered_bytes - writer.group_bytes, keep=writer)
                closed[key] = writer.close()
        except BaseException:
            for key, files in closed.items():
                directory = self._writers[key].directory
                paths = [path for f in files for path in f.paths(directory)]
                self._delete(paths, "after a failed write")
            raise
        return closed

    def abort(self, messages: list[CommitMessage] | None = None) -> None:
        """Delete every file this writer (or the given uncommitted messages) created."""
        paths = [p for writer in self._writers.values() for p in writer.abort()]
        self.table.delete_new_files(messages or ())
        self._delete(paths, "while aborting a write")
        self._writers.clear()
        self._spills.close()
        self._closed = True

    def _delete(self, paths: Iterable[str], when: str) -> None:
        """Delete files of this write; one that cannot be deleted is logged (it is an orphan)."""
        for path in paths:
            try:
                self.table.storage.delete(path)
            except OSError:
                logger.warning("could not delete %s %s", path, when, exc_info=True)

    def close(self) -> None:
        self._spills.close()
        self._closed = True

    def __enter__(self) -> TableWrite:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.abort()
        self.close()
