"""Paimon's system tables (``t$snapshots``, ``t$files``, ...): read-only views of a table's metadata.

``catalog.get_table("db.t$snapshots")`` returns a :class:`SystemTable`. Its columns are named and typed as
Java Paimon's (``SnapshotsTable``, ``FilesTable``, ... in ``org.apache.paimon.table.system``): timestamps are
local date-times with millisecond precision; partitions and statistics are rendered as Java renders them
(``{2024-01-01, 3}``, ``{id=0, name=2}``). ``$files``, ``$partitions`` and ``$manifests`` describe the
snapshot the data table's scan options choose (the latest by default). See ``docs/system-tables.md``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core.binary_row import deserialize_row
from paimon_core.branch import SYSTEM_BRANCH_PREFIX, BranchManager
from paimon_core.errors import ConfigError, ReadOnlyTableError, SchemaError
from paimon_core.manifest import FileSource, read_manifest_list
from paimon_core.predicate import FilterLike, parse_filter
from paimon_core.redaction import redacted_options
from paimon_core.schema import TableSchema
from paimon_core.stats import decode_stats
from paimon_core.table._readable import Readable, TimeTravel
from paimon_core.table._scan import TableScan
from paimon_core.types import DataField, from_arrow_type

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["SYSTEM_TABLES", "SystemTable", "split_system_name"]

SYSTEM_SPLITTER = "$"

_TS = pa.timestamp("ms")
_SCHEMAS: dict[str, pa.Schema] = {
    "snapshots": pa.schema(
        [
            pa.field("snapshot_id", pa.int64(), nullable=False),
            pa.field("schema_id", pa.int64(), nullable=False),
            pa.field("commit_user", pa.string(), nullable=False),
            pa.field("commit_identifier", pa.int64(), nullable=False),
            pa.field("commit_kind", pa.string(), nullable=False),
            pa.field("commit_time", _TS, nullable=False),
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
            pa.field("update_time", _TS, nullable=False),
        ]
    ),
    "options": pa.schema(
        [pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string(), nullable=False)]
    ),
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
            pa.field("creation_time", _TS),
            pa.field("deleteRowCount", pa.int64()),
            pa.field("file_source", pa.string()),
            pa.field("first_row_id", pa.int64()),
            pa.field("write_cols", pa.list_(pa.string())),
        ]
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
            pa.field("last_update_time", _TS),
            # kept by catalogs that track partitions (not a filesystem catalog): null / false here
            pa.field("created_at", _TS),
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
            pa.field("commit_time", _TS, nullable=False),
            pa.field("record_count", pa.int64()),
            pa.field("create_time", _TS),
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
        [pa.field("branch_name", pa.string(), nullable=False), pa.field("create_time", _TS, nullable=False)]
    ),
}
SYSTEM_TABLES = tuple(_SCHEMAS)
"""The system tables of a table's metadata (``$audit_log`` and ``$ro`` read its data: ``_views.py``)."""
DATA_VIEWS = ("audit_log", "ro")
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


def _local(millis: int | None) -> dt.datetime | None:
    """Epoch millis as the local date-time Java's TIMESTAMP(3) columns hold."""
    return None if millis is None else dt.datetime.fromtimestamp(millis / 1000)


def _java_str(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _row_text(values: Sequence[Any]) -> str:
    """A row as Java's row-to-string cast renders it: ``{a, b}``."""
    return "{" + ", ".join(_java_str(v) for v in values) + "}"


def _map_text(values: dict[str, Any]) -> str:
    """A map as Java's ``Map.toString``: ``{a=1, b=2}``."""
    return "{" + ", ".join(f"{k}={_java_str(v)}" for k, v in values.items()) + "}"


def _duration_text(value: dt.timedelta | None) -> str | None:
    """Java's ``Duration.toString`` (``PT1H30M``)."""
    if value is None:
        return None
    seconds = value.total_seconds()
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    fraction = seconds - int(seconds)
    text = "PT" + (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if secs or fraction or text == "PT":
        text += f"{secs + fraction:g}S"
    return text


class SystemTable(Readable):
    """A read-only system table of ``data``: ``to_arrow``, ``to_batches``, ``to_pandas``, ``to_polars``,
    ``to_duckdb``, the Arrow C stream and iteration read it, with ``columns`` and ``filter``.

    It describes the snapshot the data table's ``scan.*`` options choose: its readers take no time travel
    (``TypeError``). Writes raise :class:`~paimon_core.errors.ReadOnlyTableError`.
    """

    # Java's metadata tables describe what the data table's options choose; travel with those options.
    _time_travels = False

    def __init__(self, data: TableStore, name: str) -> None:
        if name not in _SCHEMAS:
            split_system_name(f"{data.identifier}${name}")
        self.data = data
        self.name = name
        self.identifier = f"{data.identifier}{SYSTEM_SPLITTER}{name}"
        self.arrow_schema = _SCHEMAS[name]
        self.schema = TableSchema(
            id=0,
            fields=tuple(
                DataField(i, f.name, from_arrow_type(f.type, f.nullable))
                for i, f in enumerate(self.arrow_schema)
            ),
            highest_field_id=len(self.arrow_schema) - 1,
        )

    @property
    def field_names(self) -> list[str]:
        return list(self.arrow_schema.names)

    # --- reading: the readers are Readable's, over these two ----------------------------------------------

    def _read_table(self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel) -> pa.Table:
        """The system table's rows (``_time_travels`` is False: ``travel`` is always :data:`NOW`).

        Raises:
            SchemaError: unknown columns.
        """
        rows = list(_ROWS[self.name](self.data))
        table = pa.Table.from_pylist(rows, schema=self.arrow_schema)
        if filter is not None:
            _, expression = parse_filter(filter, self.arrow_schema)
            if expression is not None:
                table = table.filter(expression)
        if columns is not None:
            unknown = [c for c in columns if c not in self.arrow_schema.names]
            if unknown:
                raise SchemaError(
                    f"unknown columns: {', '.join(unknown)}; {self.identifier} has {self.field_names}"
                )
            table = table.select(list(columns))
        return table

    def _read_batches(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> pa.RecordBatchReader:
        table = self._read_table(columns, filter, travel)
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())

    # --- writing is refused -------------------------------------------------------------------------------------

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ReadOnlyTableError(f"{self.identifier} is a system table: it cannot be written")

    append = overwrite = new_write = new_commit = _refuse

    def __repr__(self) -> str:
        return f"SystemTable({self.identifier!r})"


# --- the rows of each system table ------------------------------------------------------------------------


def _snapshots(table: TableStore) -> Iterator[dict[str, Any]]:
    for s in table.snapshot_manager.snapshots():
        yield {
            "snapshot_id": s.id,
            "schema_id": s.schema_id,
            "commit_user": s.commit_user,
            "commit_identifier": s.commit_identifier,
            "commit_kind": s.commit_kind.value,
            "commit_time": _local(s.time_millis),
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
            "update_time": _local(schema.time_millis),
        }


def _options(table: TableStore) -> Iterator[dict[str, Any]]:
    for key, value in sorted(redacted_options(table.schema.options).items()):
        yield {"key": key, "value": value}


def _partition_text(table: TableStore, partition: bytes) -> str:
    return _row_text(list(table.partition_values(partition).values()))


def _files(table: TableStore) -> Iterator[dict[str, Any]]:
    for entry in TableScan(table).files():
        file = entry.file
        fields = list(table.schema_manager.schema(file.schema_id).fields)
        stats = decode_stats(file.value_stats, file.value_stats_cols, fields)
        names = [f.name for f in fields if f.name in stats]
        source = None if file.file_source is None else FileSource(file.file_source).name
        yield {
            "partition": _partition_text(table, entry.partition),
            "bucket": entry.bucket,
            "file_path": file.external_path
            or f"{table.bucket_dir(entry.partition, entry.bucket)}/{file.file_name}",
            "file_format": file.file_name.rsplit(".", 1)[-1],
            "schema_id": file.schema_id,
            "level": file.level,
            "record_count": file.row_count,
            "file_size_in_bytes": file.file_size,
            "min_key": None,
            "max_key": None,
            "null_value_counts": _map_text({n: stats[n][2] for n in names}),
            "min_value_stats": _map_text({n: stats[n][0] for n in names}),
            "max_value_stats": _map_text({n: stats[n][1] for n in names}),
            "min_sequence_number": file.min_sequence_number,
            "max_sequence_number": file.max_sequence_number,
            "creation_time": _local(file.creation_time_epoch_millis()),
            "deleteRowCount": file.delete_row_count,
            "file_source": source,
            "first_row_id": file.first_row_id,
            "write_cols": list(file.write_cols) if file.write_cols is not None else None,
        }


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
                "min_partition_stats": _row_text(deserialize_row(stats.min_values, types)) if types else "{}",
                "max_partition_stats": _row_text(deserialize_row(stats.max_values, types)) if types else "{}",
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
            "partition": _partition_text(table, partition),
            "record_count": rows,
            "file_size_in_bytes": size,
            "file_count": count,
            "last_update_time": _local(updated or None),
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
            "commit_time": _local(snapshot.time_millis),
            "record_count": snapshot.total_record_count,
            "create_time": tag.create_time,
            "time_retained": _duration_text(tag.time_retained),
        }


def _consumers(table: TableStore) -> Iterator[dict[str, Any]]:
    for consumer_id, next_snapshot in sorted(table.consumer_manager.consumers().items()):
        yield {"consumer_id": consumer_id, "next_snapshot_id": next_snapshot}


def _branches(table: TableStore) -> Iterator[dict[str, Any]]:
    manager = BranchManager(table.storage, table.path)
    for name in manager.names():
        yield {"branch_name": name, "create_time": _local(manager.create_time_millis(name))}


_ROWS: dict[str, Callable[[TableStore], Iterator[dict[str, Any]]]] = {
    "snapshots": _snapshots,
    "schemas": _schemas,
    "options": _options,
    "files": _files,
    "manifests": _manifests,
    "partitions": _partitions,
    "tags": _tags,
    "consumers": _consumers,
    "branches": _branches,
}
