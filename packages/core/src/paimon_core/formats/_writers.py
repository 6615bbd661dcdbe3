"""One writer protocol over the data file formats Paimon writes (Parquet, ORC, Avro).

A writer takes Arrow tables of the schema it was opened with and writes them to a stream it does not close.
Its ``footer`` is the written file's Parquet metadata, whose column statistics give value stats; formats
without one (ORC as pyarrow exposes it, Avro) leave it None, and the caller computes the statistics from
the Arrow data it writes.
"""

from __future__ import annotations

from typing import Any, BinaryIO, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from paimon_core.errors import ConfigError, SchemaError
from paimon_core.formats._avro import AvroFileWriter, avro_codec
from paimon_core.options import DATA_FILE_FORMATS

FILE_FORMATS = DATA_FILE_FORMATS
"""The data file formats written (and read) here, by their ``file.format`` name and file suffix."""

ORC_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "lz4": "lz4",
    "zlib": "zlib",
    "none": "uncompressed",
    "uncompressed": "uncompressed",
}
"""``file.compression`` values an ORC data file can be written with (Java takes ORC's CompressionKind of the
upper-cased name), and the pyarrow codec of each."""


class FormatWriter(Protocol):
    """Writes one data file."""

    schema: pa.Schema
    """The Arrow schema of the tables :meth:`write` takes."""

    def write(self, data: pa.Table) -> None: ...

    def close(self) -> None:
        """Finish the file (its stream stays open)."""

    @property
    def footer(self) -> pq.FileMetaData | None:
        """The Parquet footer after :meth:`close`; None for other formats."""


class ParquetFileWriter:
    """A Parquet data file (``pyarrow.parquet.ParquetWriter`` given ``arguments``)."""

    def __init__(self, stream: BinaryIO, schema: pa.Schema, **arguments: Any) -> None:
        self.schema = schema
        self._writer = pq.ParquetWriter(stream, schema, **arguments)

    def write(self, data: pa.Table) -> None:
        self._writer.write_table(data, row_group_size=max(data.num_rows, 1))

    def close(self) -> None:
        self._writer.close()

    @property
    def footer(self) -> pq.FileMetaData | None:
        metadata: pq.FileMetaData = self._writer.writer.metadata
        return metadata


def orc_codec(compression: str, option: str = "file.compression") -> str:
    """The pyarrow ORC codec of a ``file.compression`` value.

    Raises:
        ConfigError: a codec ORC files cannot have, naming it.
    """
    codec = ORC_CODECS.get(compression.lower())
    if codec is None:
        raise ConfigError(
            f"{option} = {compression} cannot compress ORC data files: ORC's codecs are "
            "zstd, snappy, lz4, zlib and none",
            option,
        )
    return codec


def _orc_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type written to ORC for ``t``: TIME as the INT of its milliseconds, as Java writes it."""
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        return pa.int32()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(_orc_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_orc_type(t.key_type)), t.item_field.with_type(_orc_type(t.item_type))
        )
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_orc_type(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _millis_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every TIME at millisecond precision (a step before the cast to INT)."""
    if pa.types.is_time64(t):
        return pa.time32("ms")
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(_millis_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_millis_type(t.key_type)), t.item_field.with_type(_millis_type(t.item_type))
        )
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_millis_type(t.field(i).type)) for i in range(t.num_fields)])
    return t


_NANOS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _has_timestamp(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_timestamp(t.value_type)
    if pa.types.is_map(t):
        return _has_timestamp(t.key_type) or _has_timestamp(t.item_type)
    if pa.types.is_struct(t):
        return any(_has_timestamp(t.field(i).type) for i in range(t.num_fields))
    return False


def _timestamp_arrays(array: pa.Array) -> list[pa.Array]:
    """The timestamp arrays in ``array``, nested ones included."""
    t = array.type
    if pa.types.is_timestamp(t):
        return [array]
    if pa.types.is_map(t):
        return _timestamp_arrays(array.keys) + _timestamp_arrays(array.items)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _timestamp_arrays(array.flatten())
    if pa.types.is_struct(t):
        return [a for i in range(t.num_fields) for a in _timestamp_arrays(array.field(i))]
    return []


def _check_nanosecond_range(data: pa.Table) -> None:
    """Refuse timestamps Arrow's ORC reader cannot read back: it reads every ORC timestamp in nanoseconds,
    so only 1677-09-21 to 2262-04-11 fit.

    Raises:
        SchemaError: a column holds a timestamp outside that range, naming it.
    """
    for arrow_field, column in zip(data.schema, data.columns, strict=True):
        if not _has_timestamp(arrow_field.type):
            continue
        for chunk in column.chunks:
            for array in _timestamp_arrays(chunk):
                factor = _NANOS_PER_UNIT[array.type.unit]
                bounds = pc.min_max(array.cast(pa.int64()))
                low, high = bounds["min"].as_py(), bounds["max"].as_py()
                if low is not None and (low < -(2**63) // factor + 1 or high > (2**63 - 1) // factor):
                    raise SchemaError(
                        f"column {arrow_field.name} holds timestamps outside 1677-09-21 .. 2262-04-11, which "
                        "ORC data files written here cannot hold (Arrow's ORC reader reads timestamps in "
                        "nanoseconds); write this table as parquet or avro"
                    )


class OrcFileWriter:
    """An ORC data file (``pyarrow.orc.ORCWriter``), with Java's ORC types: TIME as INT milliseconds.
    Timestamps outside the nanosecond range are refused (:func:`_check_nanosecond_range`).

    Args:
        stream: the file's output stream.
        schema: the Arrow schema of the tables written.
        compression: ``file.compression`` (see :func:`orc_codec`).
        stripe_size: the stripe size in bytes.

    Raises:
        ConfigError: a codec ORC cannot use.
        SchemaError: (from :meth:`write`) a timestamp outside the nanosecond range.
    """

    footer = None  # pyarrow exposes no ORC column statistics: the caller computes them from the data

    def __init__(self, stream: BinaryIO, schema: pa.Schema, compression: str, stripe_size: int) -> None:
        self.schema = schema
        self._millis = pa.schema(
            [f.with_type(_millis_type(f.type)) for f in schema], metadata=schema.metadata
        )
        self._stored = pa.schema([f.with_type(_orc_type(f.type)) for f in schema])
        self._timestamps = any(_has_timestamp(f.type) for f in schema)
        self._writer = orc.ORCWriter(stream, compression=orc_codec(compression), stripe_size=stripe_size)

    def write(self, data: pa.Table) -> None:
        if self._timestamps:
            _check_nanosecond_range(data)
        if not data.schema.equals(self._stored, check_metadata=False):
            if not self._millis.equals(self.schema, check_metadata=False):
                data = data.cast(self._millis, safe=False)  # TIME(6) keeps its milliseconds, as in Java
            data = data.cast(self._stored)
        self._writer.write(data)

    def close(self) -> None:
        self._writer.close()


def open_format_writer(
    file_format: str,
    stream: BinaryIO,
    schema: pa.Schema,
    *,
    compression: str,
    zstd_level: int,
    block_size: int,
    parquet_arguments: dict[str, Any] | None = None,
) -> FormatWriter:
    """A writer of one ``file_format`` data file of ``schema`` onto ``stream``.

    Args:
        file_format: ``parquet``, ``orc`` or ``avro``.
        stream: the file's output stream.
        schema: the Arrow schema of the tables written.
        compression: the codec (``file.compression`` or its per-level value); for Parquet it is in
            ``parquet_arguments`` instead.
        zstd_level: ``file.compression.zstd-level`` (Avro; pyarrow's ORC writer has no level to set).
        block_size: the ORC stripe size.
        parquet_arguments: ``pyarrow.parquet.ParquetWriter`` arguments.

    Raises:
        ConfigError: an unknown format, or a codec the format cannot use.
        SchemaError: a column the format cannot hold.
    """
    if file_format == "parquet":
        return ParquetFileWriter(stream, schema, **(parquet_arguments or {}))
    if file_format == "orc":
        return OrcFileWriter(stream, schema, compression, block_size)
    if file_format == "avro":
        return AvroFileWriter(stream, schema, compression, zstd_level)
    raise unknown_format(file_format)


def unknown_format(file_format: str, option: str = "file.format") -> ConfigError:
    return ConfigError(
        f"{option} = {file_format}: paimon-core writes data files as {', '.join(FILE_FORMATS)} only", option
    )


__all__ = [
    "FILE_FORMATS",
    "ORC_CODECS",
    "FormatWriter",
    "OrcFileWriter",
    "ParquetFileWriter",
    "avro_codec",
    "open_format_writer",
    "orc_codec",
    "unknown_format",
]
