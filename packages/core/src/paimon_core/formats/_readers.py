"""Opening a data file (Parquet, ORC or Avro, by its name's suffix): Arrow reads a local path itself, and any other
bytes from memory it owns.

Arrow is never handed a Python file object: over one, Arrow's pool threads release Python buffers, and a
thread that does so while the interpreter finalizes is ended by CPython inside Arrow's C++ frames, which
aborts the process after the program's work is done ("terminate called without an active exception", seen
from ``paimon-py read`` on S3). A file on another store is read into an Arrow buffer of the file's size,
sparsely: its footer when opened, then only the column chunks of the row groups and columns each read asks
for, each fetched once, on the calling thread. Unfetched parts are never read by Arrow's Parquet reader,
which reads a column chunk by the offsets and sizes the footer gives (``_chunk_range``). An ORC file on
another store is read whole (Arrow's ORC reader has no ranged reads to follow).

Every format offers one interface: ``read``, ``iter_batches`` and, where ``prunable`` (Parquet: row-group
statistics in the footer), ``read_row_groups`` and ``metadata``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import BinaryIO

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from paimon_core.errors import DataFileError
from paimon_core.formats._avro import arrow_column

_TAIL_BYTES = 64 * 1024
"""Read with the footer's length at once: most footers fit."""

_GAP_BYTES = 64 * 1024
"""Chunks closer than this are fetched in one read (a request costs more than the bytes in between)."""


def _arrow_owned(data: bytes) -> pa.Buffer:
    """A copy of ``data`` in memory Arrow allocated: releasing it never takes the GIL."""
    buffer = pa.allocate_buffer(len(data))
    memoryview(buffer).cast("B")[:] = data
    return buffer


def open_data_file(name: str, source: str | bytes | BinaryIO, buffer_size: int = 0) -> DataFile:
    """The data file ``name`` (its format told by its suffix, as Paimon names files) open over ``source``.

    Raises:
        DataFileError: a format this project does not read (Avro), naming it; ``source`` is closed.
    """
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    suffix = suffix.removeprefix("cc-")  # a compacted changelog file: cc-<format>
    if suffix == "orc":
        return OrcDataFile(source)
    if suffix == "avro":
        return AvroDataFile(source)
    if suffix in ("parquet", ""):
        return ParquetDataFile(source, buffer_size=buffer_size)
    if not isinstance(source, str | bytes):
        source.close()
    raise DataFileError(
        f"data file {name} is in the {suffix!r} format, which paimon-core does not read (it reads "
        "Parquet, ORC and Avro data files)",
        name,
    )


class ParquetDataFile:
    """An open Parquet file: a local path, whole bytes, or a sparse copy of a remote file (see the module).

    Args:
        source: a local path, the file's bytes, or a remote file open for reading (closed with this).
        buffer_size: > 0 streams column chunks through buffers of this size (``pyarrow.parquet``).

    Raises:
        pyarrow.ArrowException: the bytes are not Parquet (the reader names the file).
    """

    def __init__(self, source: str | bytes | BinaryIO, buffer_size: int = 0) -> None:
        self._remote: BinaryIO | None = None
        self._fetched: set[tuple[int, int]] = set()
        if isinstance(source, str):
            self.file = pq.ParquetFile(source, buffer_size=buffer_size)
            return
        if isinstance(source, bytes):
            self.file = pq.ParquetFile(pa.BufferReader(_arrow_owned(source)), buffer_size=buffer_size)
            return
        self._remote = source
        try:
            self._size = size = source.seek(0, 2)
            self._buffer = pa.allocate_buffer(size)
            self._view = memoryview(self._buffer).cast("B")
            tail = self._fetch(max(0, size - _TAIL_BYTES), size)
            footer = int.from_bytes(tail[-8:-4], "little") + 8 if bytes(tail[-4:]) == b"PAR1" else 0
            if footer > len(tail):
                self._fetch(max(0, size - footer), size - len(tail))
            self.file = pq.ParquetFile(pa.BufferReader(self._buffer), buffer_size=buffer_size)
        except BaseException:
            source.close()
            raise

    prunable = True  # row groups with statistics in the footer

    def close(self) -> None:
        self.file.close()
        if self._remote is not None:
            self._remote.close()

    @property
    def metadata(self) -> pq.FileMetaData:
        return self.file.metadata

    @property
    def schema_arrow(self) -> pa.Schema:
        return self.file.schema_arrow

    def read(self, columns: Sequence[str]) -> pa.Table:
        self._fetch_chunks(None, columns)
        return self.file.read(columns=list(columns), use_threads=True)

    def read_row_groups(self, groups: Sequence[int], columns: Sequence[str]) -> pa.Table:
        self._fetch_chunks(groups, columns)
        return self.file.read_row_groups(list(groups), columns=list(columns), use_threads=True)

    def iter_batches(
        self, batch_size: int, columns: Sequence[str], row_groups: Sequence[int] | None = None
    ) -> Iterator[pa.RecordBatch]:
        self._fetch_chunks(row_groups, columns)
        groups = list(row_groups) if row_groups is not None else None
        batches: Iterator[pa.RecordBatch] = self.file.iter_batches(
            batch_size=batch_size, row_groups=groups, columns=list(columns)
        )
        return batches

    def _fetch(self, start: int, end: int) -> memoryview:
        """Copy the remote bytes ``[start, end)`` into the buffer (once) and return them."""
        assert self._remote is not None
        if (start, end) not in self._fetched and end > start:
            self._remote.seek(start)
            data = self._remote.read(end - start)
            if len(data) < end - start:
                raise OSError(f"the file ends at {start + len(data)} bytes, before {end}")
            self._view[start:end] = data
            self._fetched.add((start, end))
        return self._view[start:end]

    def _fetch_chunks(self, groups: Sequence[int] | None, columns: Sequence[str]) -> None:
        if self._remote is None:
            return
        metadata = self.file.metadata
        leaves = _leaf_columns(self.file.schema_arrow, columns)
        ranges = sorted(
            _chunk_range(metadata.row_group(g).column(c), self._size)
            for g in (range(metadata.num_row_groups) if groups is None else groups)
            for c in leaves
        )
        merged: list[list[int]] = []
        for start, end in ranges:
            if merged and start - merged[-1][1] <= _GAP_BYTES:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        for start, end in merged:
            self._fetch(start, end)


class OrcDataFile:
    """An open ORC file (Paimon's default format before 0.9): a local path, whole bytes, or a remote file
    read whole into Arrow-owned memory. Batches are read stripe by stripe; no statistics prune stripes.

    Raises:
        pyarrow.ArrowException: the bytes are not ORC (the reader names the file).
    """

    prunable = False

    def __init__(self, source: str | bytes | BinaryIO) -> None:
        if isinstance(source, str):
            self.file = orc.ORCFile(source)
            return
        if isinstance(source, bytes):
            self.file = orc.ORCFile(pa.BufferReader(_arrow_owned(source)))
            return
        try:
            self.file = orc.ORCFile(pa.BufferReader(_arrow_owned(source.read())))
        finally:
            source.close()

    def close(self) -> None:
        pass  # the reader owns nothing to release: a path it opens per read, bytes it holds

    @property
    def schema_arrow(self) -> pa.Schema:
        return self.file.schema

    def read(self, columns: Sequence[str]) -> pa.Table:
        return self.file.read(columns=list(columns))

    def iter_batches(
        self, batch_size: int, columns: Sequence[str], row_groups: Sequence[int] | None = None
    ) -> Iterator[pa.RecordBatch]:
        if row_groups is not None:
            raise ValueError("ORC files have no row groups to select (prunable is False)")
        for stripe in range(self.file.nstripes):
            batch = self.file.read_stripe(stripe, columns=list(columns))
            for offset in range(0, batch.num_rows, batch_size):
                yield batch.slice(offset, batch_size)


class AvroDataFile:
    """An open Avro data file (Paimon's advice for level 0 of write-heavy tables): an object container file
    of one record per row, decoded with fastavro. Its columns come out in the Arrow types of their Avro
    schema (the reader casts them to the table's); nothing prunes its blocks.

    Raises:
        OSError: the bytes are not an Avro object container file (the reader names the file).
    """

    prunable = False

    def __init__(self, source: str | bytes | BinaryIO) -> None:
        if isinstance(source, str):
            with open(source, "rb") as local:
                self._bytes = local.read()
        elif isinstance(source, bytes):
            self._bytes = source
        else:
            try:
                self._bytes = source.read()
            finally:
                source.close()
        try:
            schema = fastavro.reader(io.BytesIO(self._bytes)).writer_schema
        except (ValueError, EOFError, KeyError) as exc:  # fastavro's errors for bytes that are not Avro
            raise OSError(f"not an Avro object container file: {exc}") from exc
        fields = _record_fields(schema)
        self._names = [str(f["name"]) for f in fields]
        self._types = {str(f["name"]): f.get("type") for f in fields}

    def close(self) -> None:
        pass

    def read(self, columns: Sequence[str]) -> pa.Table:
        missing = [c for c in columns if c not in self._names]
        if missing:
            raise KeyError(f"no columns {missing} in the file (it has {self._names})")
        values: dict[str, list[object]] = {name: [] for name in columns}
        try:
            for record in fastavro.reader(io.BytesIO(self._bytes)):
                assert isinstance(record, dict)
                for name in columns:
                    values[name].append(record[name])
        except (ValueError, EOFError) as exc:
            raise OSError(f"a corrupt Avro block: {exc}") from exc
        return pa.table({name: arrow_column(values[name], self._types[name]) for name in columns})

    def iter_batches(
        self, batch_size: int, columns: Sequence[str], row_groups: Sequence[int] | None = None
    ) -> Iterator[pa.RecordBatch]:
        if row_groups is not None:
            raise ValueError("Avro files have no row groups to select (prunable is False)")
        yield from self.read(columns).to_batches(max_chunksize=batch_size)


def _record_fields(schema: object) -> list[dict[str, object]]:
    """The fields of a data file's row record: the schema itself, or the record of a nullable union."""
    if isinstance(schema, list):
        for branch in schema:
            if isinstance(branch, dict) and branch.get("type") == "record":
                return _record_fields(branch)
        return []
    if isinstance(schema, dict):
        fields = schema.get("fields")
        return [f for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []
    return []


def _chunk_range(column: pq.ColumnChunkMetaData, file_size: int) -> tuple[int, int]:
    """The bytes Arrow reads for a column chunk: from its dictionary page (if any) or first data page, its
    compressed size, plus the padding Arrow adds for files of old parquet-mr writers."""
    start = column.data_page_offset
    dictionary = column.dictionary_page_offset
    if column.has_dictionary_page and dictionary is not None and 0 < dictionary < start:
        start = dictionary
    return start, min(file_size, start + column.total_compressed_size + 100)


def _leaf_columns(schema: pa.Schema, columns: Sequence[str]) -> list[int]:
    """The Parquet leaf column indices of the named top-level columns (a nested one has several)."""
    wanted = set(columns)
    leaves: list[int] = []
    index = 0
    for field in schema:
        count = _leaf_count(field.type)
        if field.name in wanted:
            leaves.extend(range(index, index + count))
        index += count
    return leaves


def _leaf_count(type_: pa.DataType) -> int:
    if pa.types.is_struct(type_):
        return sum(_leaf_count(type_.field(i).type) for i in range(type_.num_fields))
    if pa.types.is_map(type_):
        return _leaf_count(type_.key_type) + _leaf_count(type_.item_type)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return _leaf_count(type_.value_type)
    return 1


def cast_column(column: pa.ChunkedArray, arrow_type: pa.DataType) -> pa.ChunkedArray:
    """A column read from a data file as the table's ``arrow_type``. A nested column built from Python values
    (an Avro file's) holds empty values under its null structs, which a cast to a fixed-size binary
    rejects: it is rebuilt from its values instead."""
    if pa.types.is_integer(column.type) and pa.types.is_time64(arrow_type):
        # An ORC file's TIME is an INT of milliseconds (Java's and ours) whatever the precision.
        column = pc.multiply(column.cast(pa.int64()), 1_000 if arrow_type.unit == "us" else 1_000_000)
    try:
        return column.cast(arrow_type)
    except pa.ArrowInvalid:
        if not pa.types.is_nested(column.type):
            raise
        return pa.chunked_array([pa.array(column.to_pylist(), type=arrow_type)], type=arrow_type)


DataFile = ParquetDataFile | OrcDataFile | AvroDataFile
"""An open data file of either format."""
