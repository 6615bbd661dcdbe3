"""Table features of Java Paimon 1.x that change what the files on disk mean and that paimon-core does not
implement: a table using one is refused when it is opened, naming the feature, instead of being read wrongly
or failing later with a "corrupt" or "missing file" error.

Only features that change meaning are refused. Global indexes and file indexes are accelerators a reader
may ignore (and global indexes exist only on row-tracking tables, refused here anyway).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from paimon_core.errors import UnsupportedTableFeatureError
from paimon_core.schema import TableSchema
from paimon_core.types import (
    ArrayType,
    BlobType,
    DataType,
    MapType,
    MultisetType,
    RowType,
    VariantType,
    VectorType,
)

__all__ = ["READABLE_FORMATS", "check_supported_features"]

READABLE_FORMATS = ("parquet", "orc", "avro")
_FORMAT_KEYS = ("file.format", "changelog-file.format")

# option -> the feature it turns on when "true" and why it changes what the files mean
_SWITCHES = {
    "row-tracking.enabled": ("row tracking", "row ids live in _FIRST_ROW_ID and a _ROW_ID column"),
    "data-evolution.enabled": (
        "data evolution",
        "a file may hold some columns of rows written before, merged by row id on read",
    ),
    "index-file-in-data-file-dir": (
        "index files in the data file directories",
        "deletion vectors and hash indexes sit beside the data files, not in index/",
    ),
    "chain-table.enabled": ("a chain table", "reads merge a snapshot branch and a delta branch"),
}
_BLOB_KEYS = ("blob-field", "blob-descriptor-field", "blob-view-field")
_UNSUPPORTED_TYPES = {BlobType: "BLOB", VariantType: "VARIANT", VectorType: "VECTOR"}


def check_supported_features(identifier: str, schema: TableSchema, options: Mapping[str, str]) -> None:
    """Refuse a table whose schema or options use a feature this implementation does not implement.

    ``options``: the table's stored options with the handle's dynamic ones.

    Raises:
        UnsupportedTableFeatureError: naming the feature and the option (or column) that uses it.
    """
    for key, (feature, why) in _SWITCHES.items():
        if options.get(key, "false").strip().lower() == "true":
            raise UnsupportedTableFeatureError(identifier, feature, key, f"{key} = true: {why}")
    _check_formats(identifier, options)
    table_type = options.get("type", "table").strip().lower()
    if table_type not in ("table", "materialized-table"):
        raise UnsupportedTableFeatureError(
            identifier, f"table type {table_type!r}", "type", f"type = {table_type}"
        )
    function = options.get("bucket-function.type", "default").strip().lower()
    if function != "default":
        raise UnsupportedTableFeatureError(
            identifier,
            f"the {function!r} bucket function",
            "bucket-function.type",
            f"bucket-function.type = {function}: rows would be put in, and looked for in, other buckets",
        )
    for key in _BLOB_KEYS:
        if options.get(key):
            raise UnsupportedTableFeatureError(identifier, "BLOB columns", key, f"{key} = {options[key]}")
    for field in schema.fields:
        for name in _unsupported_types(field.type):
            raise UnsupportedTableFeatureError(identifier, f"{name} columns", None, f"column {field.name!r}")


def _check_formats(identifier: str, options: Mapping[str, str]) -> None:
    formats = {key: options[key] for key in _FORMAT_KEYS if options.get(key)}
    for pair in options.get("file.format.per.level", "").split(","):
        level, _, value = pair.partition(":")
        if value.strip():
            formats[f"file.format.per.level (level {level.strip()})"] = value
    for key, value in formats.items():
        if value.strip().lower() not in READABLE_FORMATS:
            raise UnsupportedTableFeatureError(
                identifier,
                f"the {value.strip()!r} file format",
                key.split(" ")[0],
                f"{key} = {value.strip()}; readable formats: {', '.join(READABLE_FORMATS)}",
            )


def _unsupported_types(data_type: DataType) -> Iterator[str]:
    name = _UNSUPPORTED_TYPES.get(type(data_type))
    if name is not None:
        yield name
    elif isinstance(data_type, ArrayType | MultisetType):
        yield from _unsupported_types(data_type.element)
    elif isinstance(data_type, MapType):
        yield from _unsupported_types(data_type.key)
        yield from _unsupported_types(data_type.value)
    elif isinstance(data_type, RowType):
        for field in data_type.fields:
            yield from _unsupported_types(field.type)
