"""Paimon's system tables (``t$snapshots``, ``t$files``, ...): read-only views of a table's metadata.

``catalog.get_table("db.t$snapshots")`` returns a :class:`SystemTable`. Its columns are named and typed as
Java Paimon's (``SnapshotsTable``, ``FilesTable``, ... in ``org.apache.paimon.table.system``): timestamps are
local date-times with millisecond precision; partitions and statistics are rendered as Java renders them
(``{2024-01-01, 3}``, ``{id=0, name=2}``). ``$files``, ``$partitions`` and ``$manifests`` describe the
snapshot the data table's scan options choose (the latest by default). See ``docs/system-tables.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core.binary_row import deserialize_row
from paimon_core.branch import SYSTEM_BRANCH_PREFIX, BranchManager
from paimon_core.errors import ConfigError, ReadOnlyTableError, SchemaError
from paimon_core.manifest import read_manifest_list
from paimon_core.predicate import FilterLike, parse_filter
from paimon_core.redaction import redacted_options
from paimon_core.schema import TableSchema
from paimon_core.snapshot import to_pretty_json
from paimon_core.table._java_text import duration_text, local_time, partition_text, row_text
from paimon_core.table._readable import Readable, TimeTravel
from paimon_core.table._scan import TableScan
from paimon_core.table._system_files import FILE_TABLE_ROWS, FILE_TABLE_SCHEMAS, TS
from paimon_core.types import DataField, from_arrow_type

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["SYSTEM_TABLES", "SystemTable", "select_rows", "split_system_name"]

SYSTEM_SPLITTER = "$"

_SCHEMAS: dict[str, pa.Schema] = {
    "snapshots": pa.schema(
        [
            pa.field("snapshot_id", pa.int64(), nullable=False),
            pa.field("schema_id", pa.int64(), nullable=False),
            pa.field("commit_user", pa.string(), nullable=False),
            pa.field("commit_identifier", pa.int64(), nullable=False),
            pa.field("commit_kind", pa.string(), nullable=False),
            pa.field("commit_time", TS, nullable=False),
            pa.field("base_manifest_list", pa.string(), nullable=False),
            pa.field("delta_manifest_list", pa.string(), nullable=False),
            pa.field("changelog_manifest_list", pa.string()),
            pa.field("total_record_count", pa.int64()),
            pa.field("delta_record_count", pa.int64()),
            pa.field("changelog_record_count", pa.int64()),
            pa.field("watermark", pa.int64()),
            pa.field("next_row_id", pa.int64()),
            pa.field("writer_version", pa.string()),
        ]
    ),
    "schemas": pa.schema(
        [
            pa.field("schema_id", pa.int64(), nullable=False),
            pa.field("fields", pa.string(), nullable=False),
            pa.field("partition_keys", pa.string(), nullable=False),
            pa.field("primary_keys", pa.string(), nullable=False),
            pa.field("options", pa.string(), nullable=False),
            pa.field("comment", pa.string()),
            pa.field("update_time", TS, nullable=False),
        ]
    ),
    "options": pa.schema(
        [pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string(), nullable=False)]
    ),
    "manifests": pa.schema(
        [
            pa.field("file_name", pa.string(), nullable=False),
            pa.field("file_size", pa.int64(), nullable=False),
            pa.field("num_added_files", pa.int64(), nullable=False),
            pa.field("num_deleted_files", pa.int64(), nullable=False),
            pa.field("schema_id", pa.int64(), nullable=False),
            pa.field("min_partition_stats", pa.string()),
            pa.field("max_partition_stats", pa.string()),
            pa.field("min_row_id", pa.int64()),
            pa.field("max_row_id", pa.int64()),
        ]
    ),
    "partitions": pa.schema(
        [
            pa.field("partition", pa.string()),
            pa.field("record_count", pa.int64(), nullable=False),
            pa.field("file_size_in_bytes", pa.int64(), nullable=False),
            pa.field("file_count", pa.int64(), nullable=False),
            pa.field("last_update_time", TS),
            # kept by catalogs that track partitions (not a filesystem catalog): null / false here
            pa.field("created_at", TS),
            pa.field("created_by", pa.string()),
            pa.field("updated_by", pa.string()),
            pa.field("options", pa.string()),
            pa.field("total_buckets", pa.int32(), nullable=False),
            pa.field("done", pa.bool_(), nullable=False),
            pa.field("deleted_record_count", pa.int64()),
        ]
    ),
    "tags": pa.schema(
        [
            pa.field("tag_name", pa.string(), nullable=False),
            pa.field("snapshot_id", pa.int64(), nullable=False),
            pa.field("schema_id", pa.int64(), nullable=False),
            pa.field("commit_time", TS, nullable=False),
            pa.field("record_count", pa.int64()),
            pa.field("create_time", TS),
            pa.field("time_retained", pa.string()),
        ]
    ),
    "consumers": pa.schema(
        [
            pa.field("consumer_id", pa.string(), nullable=False),
            pa.field("next_snapshot_id", pa.int64(), nullable=False),
        ]
    ),
    "branches": pa.schema(
        [pa.field("branch_name", pa.string(), nullable=False), pa.field("create_time", TS, nullable=False)]
    ),
    "statistics": pa.schema(
        [
            pa.field("snapshot_id", pa.int64(), nullable=False),
            pa.field("schema_id", pa.int64(), nullable=False),
            pa.field("mergedRecordCount", pa.int64()),
            pa.field("mergedRecordSize", pa.int64()),
            pa.field("colstat", pa.string()),
        ]
    ),
    "aggregation_fields": pa.schema(
        [
            pa.field("field_name", pa.string(), nullable=False),
            pa.field("field_type", pa.string(), nullable=False),
            pa.field("function", pa.string()),
            pa.field("function_options", pa.string()),
            pa.field("comment", pa.string()),
        ]
    ),
}
_SCHEMAS.update(FILE_TABLE_SCHEMAS)
SYSTEM_TABLES = tuple(_SCHEMAS)
"""The system tables of a table's metadata (``$audit_log``, ``$binlog`` and ``$ro`` read its data: ``_views.py``)."""
DATA_VIEWS = ("audit_log", "binlog", "ro")
"""The system tables that read a table's data."""


def split_system_name(name: str) -> tuple[str, str | None]:
    """``"t$files"`` → ``("t", "files")``; ``"t"`` → ``("t", None)``. A branch suffix stays with the
    table: ``"t$branch_b$files"`` → ``("t$branch_b", "files")``, ``"t$branch_b"`` → ``("t$branch_b", None)``.

    Raises:
        ConfigError: an unknown system table.
    """
    base, splitter, system = name.partition(SYSTEM_SPLITTER)
    if splitter and system.lower().startswith(SYSTEM_BRANCH_PREFIX):
        branch, splitter, system = system.partition(SYSTEM_SPLITTER)
        base = f"{base}{SYSTEM_SPLITTER}{branch}"
    if not splitter:
        return base, None
    system = system.lower()
    if system not in _SCHEMAS and system not in DATA_VIEWS:
        known = ", ".join((*SYSTEM_TABLES, *DATA_VIEWS))
        raise ConfigError(f"unknown system table {system!r} of {base!r}; there are {known}", "table")
    return base, system


class RowsTable(Readable):
    """A read-only table of metadata rows (a table's system tables, the catalog-wide ones): the readers are
    Readable's, with ``columns`` and ``filter``; no time travel (``TypeError``: ``_time_travels`` is False);
    writes raise :class:`~paimon_core.errors.ReadOnlyTableError`. Subclasses name ``identifier``,
    ``arrow_schema`` (through :meth:`_typed`) and the rows."""

    _time_travels = False
    identifier: str
    arrow_schema: pa.Schema

    def _typed(self, arrow_schema: pa.Schema) -> None:
        self.arrow_schema = arrow_schema
        self.schema = TableSchema(
            id=0,
            fields=tuple(
                DataField(i, f.name, from_arrow_type(f.type, f.nullable)) for i, f in enumerate(arrow_schema)
            ),
            highest_field_id=len(arrow_schema) - 1,
        )

    @property
    def field_names(self) -> list[str]:
        return list(self.arrow_schema.names)

    def _rows(self) -> Iterable[dict[str, Any]]:
        raise NotImplementedError

    def _read_table(self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel) -> pa.Table:
        """The rows, filtered, with only ``columns``.

        Raises:
            SchemaError: unknown columns.
        """
        return select_rows(list(self._rows()), self.arrow_schema, columns, filter, self.identifier)

    def _read_batches(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> pa.RecordBatchReader:
        table = self._read_table(columns, filter, travel)
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ReadOnlyTableError(f"{self.identifier} is a system table: it cannot be written")

    append = overwrite = new_write = new_commit = _refuse

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identifier!r})"


class SystemTable(RowsTable):
    """A read-only system table of ``data``: ``to_arrow``, ``to_batches``, ``to_pandas``, ``to_polars``,
    ``to_duckdb``, the Arrow C stream and iteration read it, with ``columns`` and ``filter``.

    It describes the snapshot the data table's ``scan.*`` options choose: its readers take no time travel
    (``TypeError``). Writes raise :class:`~paimon_core.errors.ReadOnlyTableError`.
    """

    def __init__(self, data: TableStore, name: str) -> None:
        if name not in _SCHEMAS:
            split_system_name(f"{data.identifier}${name}")
        self.data = data
        self.name = name
        self.identifier = f"{data.identifier}{SYSTEM_SPLITTER}{name}"
        self._typed(_SCHEMAS[name])

    def _rows(self) -> Iterable[dict[str, Any]]:
        return _ROWS[self.name](self.data)


def select_rows(
    rows: list[dict[str, Any]],
    schema: pa.Schema,
    columns: Sequence[str] | None,
    filter: FilterLike,
    identifier: str,
) -> pa.Table:
    """A system table's ``rows`` as ``schema``, filtered, with only ``columns``.

    Raises:
        SchemaError: unknown columns.
    """
    table = pa.Table.from_pylist(rows, schema=schema)
    if filter is not None:
        _, expression = parse_filter(filter, schema)
        if expression is not None:
            table = table.filter(expression)
    if columns is not None:
        unknown = [c for c in columns if c not in schema.names]
        if unknown:
            raise SchemaError(f"unknown columns: {', '.join(unknown)}; {identifier} has {schema.names}")
        table = table.select(list(columns))
    return table


# --- the rows of each system table ------------------------------------------------------------------------


def _snapshots(table: TableStore) -> Iterator[dict[str, Any]]:
    for s in table.snapshot_manager.snapshots():
        yield {
            "snapshot_id": s.id,
            "schema_id": s.schema_id,
            "commit_user": s.commit_user,
            "commit_identifier": s.commit_identifier,
            "commit_kind": s.commit_kind.value,
            "commit_time": local_time(s.time_millis),
            "base_manifest_list": s.base_manifest_list,
            "delta_manifest_list": s.delta_manifest_list,
            "changelog_manifest_list": s.changelog_manifest_list,
            "total_record_count": s.total_record_count,
            "delta_record_count": s.delta_record_count,
            "changelog_record_count": s.changelog_record_count,
            "watermark": s.watermark,
            "next_row_id": s.next_row_id,
            "writer_version": s.writer_version,
        }


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _schemas(table: TableStore) -> Iterator[dict[str, Any]]:
    manager = table.schema_manager
    for schema_id in manager.list_ids():
        schema = manager.schema(schema_id)
        yield {
            "schema_id": schema.id,
            "fields": _compact_json([f.to_json() for f in schema.fields]),
            "partition_keys": _compact_json(list(schema.partition_keys)),
            "primary_keys": _compact_json(list(schema.primary_keys)),
            "options": _compact_json(redacted_options(schema.options)),
            "comment": schema.comment,
            "update_time": local_time(schema.time_millis),
        }


def _options(table: TableStore) -> Iterator[dict[str, Any]]:
    for key, value in sorted(redacted_options(table.schema.options).items()):
        yield {"key": key, "value": value}


def _manifests(table: TableStore) -> Iterator[dict[str, Any]]:
    snapshot = TableScan(table).snapshot
    if snapshot is None:
        return
    types = table.partition_types
    for list_name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
        for meta in read_manifest_list(table.storage, table.manifest_path(list_name)):
            stats = meta.partition_stats
            yield {
                "file_name": meta.file_name,
                "file_size": meta.file_size,
                "num_added_files": meta.num_added_files,
                "num_deleted_files": meta.num_deleted_files,
                "schema_id": meta.schema_id,
                "min_partition_stats": row_text(deserialize_row(stats.min_values, types)) if types else "{}",
                "max_partition_stats": row_text(deserialize_row(stats.max_values, types)) if types else "{}",
                "min_row_id": meta.min_row_id,
                "max_row_id": meta.max_row_id,
            }


def _partitions(table: TableStore) -> Iterator[dict[str, Any]]:
    totals: dict[bytes, list[int]] = {}
    buckets: dict[bytes, set[int]] = {}
    deleted: dict[bytes, int] = {}
    for entry in TableScan(table).files():
        file = entry.file
        created = file.creation_time_epoch_millis() or 0
        total = totals.setdefault(entry.partition, [0, 0, 0, 0])
        total[0] += file.row_count
        total[1] += file.file_size
        total[2] += 1
        total[3] = max(total[3], created)
        buckets.setdefault(entry.partition, set()).add(entry.bucket)
        deleted[entry.partition] = deleted.get(entry.partition, 0) + (file.delete_row_count or 0)
    for partition, (rows, size, count, updated) in sorted(totals.items()):
        yield {
            "partition": partition_text(table, partition),
            "record_count": rows,
            "file_size_in_bytes": size,
            "file_count": count,
            "last_update_time": local_time(updated or None),
            "created_at": None,
            "created_by": None,
            "updated_by": None,
            "options": None,
            "total_buckets": len(buckets[partition]),
            "done": False,
            "deleted_record_count": deleted[partition],
        }


def _tags(table: TableStore) -> Iterator[dict[str, Any]]:
    for tag in table.tag_manager.tags():
        snapshot = tag.snapshot
        yield {
            "tag_name": tag.name,
            "snapshot_id": snapshot.id,
            "schema_id": snapshot.schema_id,
            "commit_time": local_time(snapshot.time_millis),
            "record_count": snapshot.total_record_count,
            "create_time": tag.create_time,
            "time_retained": duration_text(tag.time_retained),
        }


def _consumers(table: TableStore) -> Iterator[dict[str, Any]]:
    for consumer_id, next_snapshot in sorted(table.consumer_manager.consumers().items()):
        yield {"consumer_id": consumer_id, "next_snapshot_id": next_snapshot}


def _branches(table: TableStore) -> Iterator[dict[str, Any]]:
    manager = BranchManager(table.storage, table.path)
    for name in manager.names():
        yield {"branch_name": name, "create_time": local_time(manager.create_time_millis(name))}


def _aggregation_fields(table: TableStore) -> Iterator[dict[str, Any]]:
    """Each column with the values and the keys of its ``fields.<column>.*`` options, as Java lists them."""
    by_field: dict[str, list[tuple[str, str]]] = {}
    for key, value in redacted_options(table.schema.options).items():
        parts = key.split(".")
        if len(parts) > 2 and parts[0] == "fields":
            by_field.setdefault(parts[1], []).append((key, value))
    for field in table.schema.fields:
        options = by_field.get(field.name, [])
        yield {
            "field_name": field.name,
            "field_type": str(field.type),
            "function": "[" + ", ".join(v for _, v in options) + "]",
            "function_options": "[" + ", ".join(k for k, _ in options) + "]",
            "comment": field.description,
        }


# Java's ColStats writes its fields in this order, leaving out the absent ones.
_COL_STATS_FIELDS = ("colId", "distinctCount", "min", "max", "nullCount", "avgLen", "maxLen")


def _statistics(table: TableStore) -> Iterator[dict[str, Any]]:
    """The statistics file of the snapshot the scan options choose (written by an ``ANALYZE``), if any."""
    snapshot = TableScan(table).snapshot
    if snapshot is None or snapshot.statistics is None:
        return
    path = f"{table.path}/statistics/{snapshot.statistics}"  # the table's, on a branch too (Java's root)
    stats = json.loads(table.storage.read_bytes(path))
    columns = {
        name: {k: col[k] for k in _COL_STATS_FIELDS if col.get(k) is not None}
        for name, col in (stats.get("colStats") or {}).items()
    }
    yield {
        "snapshot_id": stats["snapshotId"],
        "schema_id": stats["schemaId"],
        "mergedRecordCount": stats.get("mergedRecordCount"),
        "mergedRecordSize": stats.get("mergedRecordSize"),
        "colstat": to_pretty_json(columns),
    }


_ROWS: dict[str, Callable[[TableStore], Iterator[dict[str, Any]]]] = {
    "snapshots": _snapshots,
    "schemas": _schemas,
    "options": _options,
    "manifests": _manifests,
    "partitions": _partitions,
    "tags": _tags,
    "consumers": _consumers,
    "branches": _branches,
    "aggregation_fields": _aggregation_fields,
    "statistics": _statistics,
    **FILE_TABLE_ROWS,
}
