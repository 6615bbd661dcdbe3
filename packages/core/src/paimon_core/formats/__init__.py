"""Data files in the formats Paimon writes (Parquet, ORC, Avro): one reader interface (opened by a file's
suffix) and one writer protocol, each format following Java Paimon's conventions so either side reads the
other's files."""

from __future__ import annotations

from paimon_core.formats._avro import RECORD_NAME, AvroFileWriter, avro_codec, avro_schema
from paimon_core.formats._readers import (
    AvroDataFile,
    DataFile,
    OrcDataFile,
    ParquetDataFile,
    cast_column,
    open_data_file,
)
from paimon_core.formats._select import (
    ORC_STRIPE_BYTES,
    check_writable_formats,
    data_file_compression,
    data_file_format,
)
from paimon_core.formats._writers import (
    FILE_FORMATS,
    FormatWriter,
    OrcFileWriter,
    ParquetFileWriter,
    open_format_writer,
    orc_codec,
    unknown_format,
)

__all__ = [
    "FILE_FORMATS",
    "ORC_STRIPE_BYTES",
    "RECORD_NAME",
    "AvroDataFile",
    "AvroFileWriter",
    "DataFile",
    "FormatWriter",
    "OrcDataFile",
    "OrcFileWriter",
    "ParquetDataFile",
    "ParquetFileWriter",
    "avro_codec",
    "avro_schema",
    "cast_column",
    "check_writable_formats",
    "data_file_compression",
    "data_file_format",
    "open_data_file",
    "open_format_writer",
    "orc_codec",
    "unknown_format",
]
