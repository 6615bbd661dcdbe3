"""Which format and codec each data file is written in, from a table's options, as Java Paimon's writer
factories pick them, and the check that a table's formats can be written at all."""

from __future__ import annotations

import pyarrow as pa

from paimon_core import options as opts
from paimon_core.formats._avro import avro_codec, avro_schema
from paimon_core.formats._writers import orc_codec

ORC_STRIPE_BYTES = 64 << 20  # ORC's default stripe size, which Java keeps unless file.block-size is set


def data_file_format(options: opts.Options, level: int, changelog: bool = False, keyed: bool = True) -> str:
    """The format of a data file written at LSM ``level`` (a changelog file with ``changelog``), as Java's
    writer factories pick it: ``changelog-file.format``, then (primary-key tables) ``file.format.per.level``,
    then ``file.format``."""
    if changelog:
        chosen = options.get_option(opts.CHANGELOG_FILE_FORMAT)
        if chosen is not None:
            return chosen
    if keyed:
        chosen = opts.per_level(options.get_option(opts.FILE_FORMAT_PER_LEVEL)).get(level)
        if chosen is not None:
            return chosen
    return options.get_option(opts.FILE_FORMAT)


def data_file_compression(options: opts.Options, level: int) -> str:
    """The codec of a non-Parquet data file at ``level``: ``file.compression.per.level``, else
    ``file.compression`` (Parquet files take ``parquet.compression`` too, :func:`parquet_writer_options`)."""
    chosen = opts.per_level(options.get_option(opts.FILE_COMPRESSION_PER_LEVEL)).get(level)
    return chosen if chosen is not None else options.get_option(opts.FILE_COMPRESSION)


def check_writable_formats(options: opts.Options, schema: pa.Schema, keyed: bool) -> None:
    """Refuse, before any file is written, a format that cannot take a table's columns (``schema``) or the
    codec a level would be written with (Avro: no TIME above millisecond or TIMESTAMP above microsecond
    precision; each format its own codecs), as Java's schema validation and writer factories do.
    ``keyed``: a primary-key table (whose levels may have formats of their own).

    Raises:
        ConfigError: a codec the format of some level cannot use, naming the option.
        SchemaError: a column the format of some level cannot hold, naming it.
    """
    levels = {-1}  # a level no per-level option names
    if keyed:
        levels |= set(opts.per_level(options.get_option(opts.FILE_FORMAT_PER_LEVEL)))
        levels |= set(opts.per_level(options.get_option(opts.FILE_COMPRESSION_PER_LEVEL)))
    checked: set[tuple[str, str]] = set()
    for level in levels:
        for changelog in (False, True):
            file_format = data_file_format(options, level, changelog, keyed)
            codec = data_file_compression(options, level)
            if (file_format, codec) in checked:
                continue
            checked.add((file_format, codec))
            option = opts.FILE_COMPRESSION_PER_LEVEL.key if level >= 0 else opts.FILE_COMPRESSION.key
            if file_format == "orc":
                orc_codec(codec, option)
            elif file_format == "avro":
                avro_codec(codec, option)
                avro_schema(schema)


__all__ = ["ORC_STRIPE_BYTES", "check_writable_formats", "data_file_compression", "data_file_format"]
