"""The system tables of a snapshot's files: ``$files``, ``$file_key_ranges``, ``$buckets`` and
``$table_indexes``, named, typed and rendered as Java Paimon's (``FilesTable``, ``FileKeyRangesTable``,
``BucketsTable``, ``TableIndexesTable``). Each describes the snapshot the data table's scan options choose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core.binary_row import deserialize_row
from paimon_core.manifest import FileSource, ManifestEntry
from paimon_core.stats import decode_stats
from paimon_core.table._java_text import array_text, local_time, map_text, partition_text
from paimon_core.table._scan import TableScan

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["FILE_TABLE_ROWS", "FILE_TABLE_SCHEMAS", "TS"]

TS = pa.timestamp("ms")

FILE_TABLE_SCHEMAS: dict[str, pa.Schema] = {
    "files": pa.schema(
        [
            pa.field("partition", pa.string()),
            pa.field("bucket", pa.int32(), nullable=False),
            pa.field("file_path", pa.string(), nullable=False),
            pa.field("file_format", pa.string(), nullable=False),
            pa.field("schema_id", pa.int64(), nullable=False),
            pa.field("level", pa.int32(), nullable=False),
            pa.field("record_count", pa.int64(), nullable=False),
            pa.field("file_size_in_bytes", pa.int64(), nullable=False),
            pa.field("min_key", pa.string()),
            pa.field("max_key", pa.string()),
            pa.field("null_value_counts", pa.string(), nullable=False),
            pa.field("min_value_stats", pa.string(), nullable=False),
            pa.field("max_value_stats", pa.string(), nullable=False),
            pa.field("min_sequence_number", pa.int64()),
            pa.field("max_sequence_number", pa.int64()),
            pa.field("creation_time", TS),
            pa.field("deleteRowCount", pa.int64()),
            pa.field("file_source", pa.string()),
            pa.field("first_row_id", pa.int64()),
            pa.field("write_cols", pa.list_(pa.string())),
        ]
    ),
    "buckets": pa.schema(
        [
            pa.field("partition", pa.string()),
            pa.field("bucket", pa.int32(), nullable=False),
            pa.field("record_count", pa.int64(), nullable=False),
            pa.field("file_size_in_bytes", pa.int64(), nullable=False),
            pa.field("file_count", pa.int64(), nullable=False),
            pa.field("last_update_time", TS),
        ]
    ),
    "table_indexes": pa.schema(
        [
            pa.field("partition", pa.string()),
            pa.field("bucket", pa.int32(), nullable=False),
            pa.field("index_type", pa.string(), nullable=False),
            pa.field("file_name", pa.string(), nullable=False),
            pa.field("file_size", pa.int64(), nullable=False),
            pa.field("row_count", pa.int64(), nullable=False),
            pa.field(
                "dv_ranges",
                pa.list_(
                    pa.struct(
                        [
                            pa.field("f0", pa.string(), nullable=False),
                            pa.field("f1", pa.int32(), nullable=False),
                            pa.field("f2", pa.int32(), nullable=False),
                            pa.field("_CARDINALITY", pa.int64()),
                        ]
                    )
                ),
            ),
            pa.field("row_range_start", pa.int64()),
            pa.field("row_range_end", pa.int64()),
            pa.field("index_field_id", pa.int32()),
            pa.field("index_field_name", pa.string()),
        ]
    ),
}

# Java's FileKeyRangesTable: the columns of $files that place a file and its key range
_KEY_RANGE_COLUMNS = (
    "partition", "bucket", "file_path", "file_format", "schema_id", "level", "record_count",
    "file_size_in_bytes", "min_key", "max_key", "first_row_id",
)  # fmt: skip
FILE_TABLE_SCHEMAS["file_key_ranges"] = pa.schema(
    [FILE_TABLE_SCHEMAS["files"].field(name) for name in _KEY_RANGE_COLUMNS]
)


class _KeyText:
    """A file's min or max key as Java prints it: ``Arrays.toString`` of the key's values, read with the
    trimmed primary key of the file's schema; None for a file without keys (an append table's)."""

    def __init__(self, table: TableStore) -> None:
        self.table = table
        self.types: dict[int, list[Any]] = {}

    def text(self, schema_id: int, key: bytes) -> str | None:
        types = self.types.get(schema_id)
        if types is None:
            schema = self.table.schema_manager.schema(schema_id)
            fields = schema.trimmed_primary_key_fields() if schema.primary_keys else []
            types = self.types[schema_id] = [f.type for f in fields]
        if not types or len(key) <= 4:  # no key fields, or an empty row
            return None
        return array_text(deserialize_row(key, types))


def _file_path(table: TableStore, entry: ManifestEntry) -> str:
    return (
        entry.file.external_path
        or f"{table.bucket_dir(entry.partition, entry.bucket)}/{entry.file.file_name}"
    )


def _files(table: TableStore) -> Iterator[dict[str, Any]]:
    keys = _KeyText(table)
    for entry in TableScan(table).files():
        file = entry.file
        fields = list(table.schema_manager.schema(file.schema_id).fields)
        stats = decode_stats(file.value_stats, file.value_stats_cols, fields)
        names = [f.name for f in fields if f.name in stats]
        source = None if file.file_source is None else FileSource(file.file_source).name
        yield {
            "partition": partition_text(table, entry.partition),
            "bucket": entry.bucket,
            "file_path": _file_path(table, entry),
            "file_format": file.file_name.rsplit(".", 1)[-1],
            "schema_id": file.schema_id,
            "level": file.level,
            "record_count": file.row_count,
            "file_size_in_bytes": file.file_size,
            "min_key": keys.text(file.schema_id, file.min_key),
            "max_key": keys.text(file.schema_id, file.max_key),
            "null_value_counts": map_text({n: stats[n][2] for n in names}),
            "min_value_stats": map_text({n: stats[n][0] for n in names}),
            "max_value_stats": map_text({n: stats[n][1] for n in names}),
            "min_sequence_number": file.min_sequence_number,
            "max_sequence_number": file.max_sequence_number,
            "creation_time": local_time(file.creation_time_epoch_millis()),
            "deleteRowCount": file.delete_row_count,
            "file_source": source,
            "first_row_id": file.first_row_id,
            "write_cols": list(file.write_cols) if file.write_cols is not None else None,
        }


def _file_key_ranges(table: TableStore) -> Iterator[dict[str, Any]]:
    for row in _files(table):
        yield {name: row[name] for name in _KEY_RANGE_COLUMNS}


def _buckets(table: TableStore) -> Iterator[dict[str, Any]]:
    """Each (partition, bucket) of the snapshot with its live files' records, bytes, count and newest file."""
    totals: dict[tuple[bytes, int], list[int]] = {}
    for entry in TableScan(table).files():
        file = entry.file
        total = totals.setdefault((entry.partition, entry.bucket), [0, 0, 0, 0])
        total[0] += file.row_count
        total[1] += file.file_size
        total[2] += 1
        total[3] = max(total[3], file.creation_time_epoch_millis() or 0)
    for (partition, bucket), (rows, size, count, updated) in sorted(totals.items()):
        yield {
            "partition": partition_text(table, partition),
            "bucket": bucket,
            "record_count": rows,
            "file_size_in_bytes": size,
            "file_count": count,
            "last_update_time": local_time(updated or None),
        }


def _table_indexes(table: TableStore) -> Iterator[dict[str, Any]]:
    """The snapshot's live index files: hash indexes of dynamic buckets, deletion-vector files."""
    snapshot = TableScan(table).snapshot
    if snapshot is None:
        return
    for entry in sorted(
        table.index_entries(snapshot), key=lambda e: (e.partition, e.bucket, e.file.file_name)
    ):
        index = entry.file
        ranges = None
        if index.dv_ranges is not None:
            ranges = [
                {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
                for r in index.dv_ranges
            ]
        yield {
            "partition": partition_text(table, entry.partition),
            "bucket": entry.bucket,
            "index_type": index.index_type,
            "file_name": index.file_name,
            "file_size": index.file_size,
            "row_count": index.row_count,
            "dv_ranges": ranges,
            "row_range_start": None,
            "row_range_end": None,
            "index_field_id": None,
            "index_field_name": None,
        }


FILE_TABLE_ROWS: dict[str, Callable[[TableStore], Iterator[dict[str, Any]]]] = {
    "files": _files,
    "file_key_ranges": _file_key_ranges,
    "buckets": _buckets,
    "table_indexes": _table_indexes,
}
