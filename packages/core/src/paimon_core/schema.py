"""Table schemas (``schema/schema-<id>``): the JSON model and the schema manager (docs/format.md#schemas).

Schemas are immutable once written: each ALTER writes ``schema-(latest+1)`` with an atomic create, and old
schemas stay because data files record the schema id they were written with.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from paimon_core.errors import CorruptMetadataError, SchemaError, TableAlreadyExistsError
from paimon_core.redaction import get_logger, redacted_repr
from paimon_core.snapshot import JsonObjectReader, to_pretty_json
from paimon_core.types import (
    ArrayType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    RowType,
)

if TYPE_CHECKING:
    from paimon_core.storage import StorageBackend

logger = get_logger(__name__)

__all__ = ["SCHEMA_VERSION", "SchemaManager", "TableSchema", "highest_field_id"]

SCHEMA_VERSION = 3
_PAIMON_07_VERSION = 1
_PAIMON_08_VERSION = 2
SCHEMA_PREFIX = "schema-"
_MAX_COMMIT_ATTEMPTS = 100


def _nested_ids(data_type: DataType) -> Iterable[int]:
    if isinstance(data_type, RowType):
        for f in data_type.fields:
            yield f.id
            yield from _nested_ids(f.type)
    elif isinstance(data_type, (ArrayType, MultisetType)):
        yield from _nested_ids(data_type.element)
    elif isinstance(data_type, MapType):
        yield from _nested_ids(data_type.key)
        yield from _nested_ids(data_type.value)


def highest_field_id(fields: Iterable[DataField]) -> int:
    """The largest field id among ``fields`` and all their nested fields; -1 when there is none."""
    highest = -1
    for f in fields:
        highest = max(highest, f.id, *_nested_ids(f.type))
    return highest


class _IdCounter:
    def __init__(self, last: int) -> None:
        self.last = last

    def next(self) -> int:
        self.last += 1
        return self.last


def _reassign_ids(data_type: DataType, ids: _IdCounter) -> DataType:
    """Give every nested row field a fresh id, in the order of Java's ``ReassignFieldId``.

    A nested row field's own type is renumbered before the field itself takes its id.
    """
    if isinstance(data_type, RowType):
        new_fields = []
        for f in data_type.fields:
            nested = _reassign_ids(f.type, ids)
            new_fields.append(DataField(ids.next(), f.name, nested, f.description))
        return RowType(tuple(new_fields), nullable=data_type.nullable)
    if isinstance(data_type, ArrayType):
        return ArrayType(_reassign_ids(data_type.element, ids), nullable=data_type.nullable)
    if isinstance(data_type, MultisetType):
        return MultisetType(_reassign_ids(data_type.element, ids), nullable=data_type.nullable)
    if isinstance(data_type, MapType):
        key = _reassign_ids(data_type.key, ids)
        return MapType(key, _reassign_ids(data_type.value, ids), nullable=data_type.nullable)
    return data_type


def split_keys(text: str | None) -> list[str]:
    if text is None or not text.strip():
        return []
    return [k.strip() for k in text.split(",") if k.strip()]


@dataclass(frozen=True)
class TableSchema:
    """One version of a table's schema.

    Attributes:
        id: the schema id (= the number in ``schema-<id>``).
        fields: the top-level columns, with their (and their nested fields') ids.
        highest_field_id: the largest id ever assigned; new columns continue after it.
        partition_keys: partition column names, in partition order.
        primary_keys: primary-key column names (empty for append tables).
        options: table options as strings.
        comment: the table comment.
        time_millis: when this schema was created (epoch ms; 0 when unknown).
    """

    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0

    def __post_init__(self) -> None:
        for name in ("fields", "partition_keys", "primary_keys"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if not isinstance(self.options, dict):
            object.__setattr__(self, "options", dict(self.options))

    def __repr__(self) -> str:
        return redacted_repr(self, ("options",))

    # --- construction -------------------------------------------------------------------------------------

    @classmethod
    def new(
        cls,
        fields: Sequence[DataField],
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
        schema_id: int = 0,
    ) -> TableSchema:
        """A validated first schema: keys must name columns, and primary-key columns become NOT NULL.

        Raises:
            SchemaError: duplicate column names or field ids, unknown or duplicate key columns, a primary
                key made only of partition columns, or a nullable primary key without ``primary-key.nullable``.
        """
        opts = {str(k): str(v) for k, v in (options or {}).items()}
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise SchemaError(f"duplicate column names: {names}")
        all_ids = [i for f in fields for i in (f.id, *_nested_ids(f.type))]
        if len(set(all_ids)) != len(all_ids):
            raise SchemaError(f"duplicate field ids in {names}")
        for what, keys in (("partition", partition_keys), ("primary", primary_keys)):
            if len(set(keys)) != len(keys):
                raise SchemaError(f"duplicate {what} keys: {list(keys)}")
            unknown = [k for k in keys if k not in names]
            if unknown:
                raise SchemaError(f"{what} keys {unknown} are not columns of the table ({names})")
        pk_nullable = opts.get("primary-key.nullable", "false").strip().lower() == "true"
        normalized = list(fields)
        if primary_keys and not pk_nullable:
            # Java normalizes primary-key columns to NOT NULL unless primary-key.nullable is set.
            normalized = [
                f if f.name not in primary_keys else replace(f, type=f.type.copy(False)) for f in fields
            ]
        schema = cls(
            id=schema_id,
            fields=tuple(normalized),
            highest_field_id=highest_field_id(normalized),
            partition_keys=tuple(partition_keys),
            primary_keys=tuple(primary_keys),
            options=opts,
            comment=comment,
            time_millis=int(time.time() * 1000),
        )
        schema.trimmed_primary_keys()  # validates that the primary key is not just the partition
        schema.bucket_keys()  # validates the bucket-key option
        return schema

    # --- JSON ---------------------------------------------------------------------------------------------

    def to_json(self) -> str:
        """The schema file content (version 3), Jackson-style; ``comment`` only when set."""
        data: dict[str, Any] = {
            "version": SCHEMA_VERSION,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        # pypaimon writes "comment": null, which Java reads as the text "null"; leave the key out instead.
        if self.comment is not None:
            data["comment"] = self.comment
        data["timeMillis"] = self.time_millis
        return to_pretty_json(data)

    @classmethod
    def from_json(cls, text: str | bytes, path: str | None = None) -> TableSchema:
        """Parse a schema file of any version, applying the old-version defaults (docs/format.md#schemas).

        Raises:
            CorruptMetadataError: bad JSON, a missing required key, or an unparsable field.
        """
        where = f"schema file {path}" if path else "schema file"
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptMetadataError(f"{where} is not valid JSON: {exc}", path) from None
        if not isinstance(data, dict):
            raise CorruptMetadataError(f"{where} does not hold a JSON object", path)
        reader = JsonObjectReader(data, where, path)
        version = reader.opt_int("version") or _PAIMON_07_VERSION
        raw_fields = data.get("fields")
        if not isinstance(raw_fields, list):
            raise CorruptMetadataError(f"{where}: key 'fields' is missing or not a list", path)
        try:
            fields = tuple(DataField.from_json(f) for f in raw_fields)
        except SchemaError as exc:
            raise CorruptMetadataError(f"{where}: bad field: {exc}", path) from None
        options = reader.opt_str_map("options")
        partition_keys = reader.opt_str_list("partitionKeys")
        primary_keys = reader.opt_str_list("primaryKeys")
        if options is None or partition_keys is None or primary_keys is None:
            missing = [k for k in ("options", "partitionKeys", "primaryKeys") if data.get(k) is None]
            raise CorruptMetadataError(f"{where}: keys {missing} are missing", path)
        if version <= _PAIMON_07_VERSION and "bucket" not in options:
            options["bucket"] = "1"
        if version <= _PAIMON_08_VERSION and "file.format" not in options:
            options["file.format"] = "orc"
        return cls(
            id=reader.req_int("id"),
            fields=fields,
            highest_field_id=reader.req_int("highestFieldId"),
            partition_keys=tuple(partition_keys),
            primary_keys=tuple(primary_keys),
            options=options,
            comment=reader.opt_str("comment"),
            time_millis=reader.opt_int("timeMillis") or 0,
        )

    # --- accessors ----------------------------------------------------------------------------------------

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field_by_name(self, name: str) -> DataField:
        """The top-level column called ``name``.

        Raises:
            SchemaError: no such column.
        """
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"no column {name!r} in schema {self.id} (columns: {self.field_names})")

    def field_by_id(self, field_id: int) -> DataField | None:
        for f in self.fields:
            if f.id == field_id:
                return f
        return None

    def logical_row_type(self) -> RowType:
        return RowType(self.fields, nullable=False)

    def partition_fields(self) -> list[DataField]:
        return [self.field_by_name(k) for k in self.partition_keys]

    def primary_key_fields(self) -> list[DataField]:
        return [self.field_by_name(k) for k in self.primary_keys]

    def trimmed_primary_keys(self) -> list[str]:
        """The primary key without partition columns (the key stored in data files), as Java trims it.

        Raises:
            SchemaError: the primary key consists only of partition columns.
        """
        if not self.primary_keys:
            return []
        trimmed = [k for k in self.primary_keys if k not in self.partition_keys]
        if not trimmed:
            raise SchemaError(
                f"primary key {list(self.primary_keys)} must not equal the partition keys "
                f"{list(self.partition_keys)}: each partition would hold a single row"
            )
        return trimmed

    def trimmed_primary_key_fields(self) -> list[DataField]:
        return [self.field_by_name(k) for k in self.trimmed_primary_keys()]

    def bucket_keys(self) -> list[str]:
        """The ``bucket-key`` option's columns, or else the trimmed primary key.

        Raises:
            SchemaError: a bucket key is not a column, is a partition column, or (with a primary key) is
                not part of the primary key — the checks Java makes.
        """
        keys = split_keys(self.options.get("bucket-key"))
        if not keys:
            return self.trimmed_primary_keys()
        unknown = [k for k in keys if k not in self.field_names]
        if unknown:
            raise SchemaError(f"bucket-key {unknown} are not columns of the table ({self.field_names})")
        in_partition = [k for k in keys if k in self.partition_keys]
        if in_partition:
            raise SchemaError(f"bucket-key {in_partition} must not be partition keys")
        if self.primary_keys and not set(keys) <= set(self.primary_keys):
            raise SchemaError(f"bucket-key {keys} must be part of the primary key {list(self.primary_keys)}")
        return keys

    # --- evolution ----------------------------------------------------------------------------------------

    def add_columns(self, new_columns: Sequence[tuple[str, DataType, str | None]]) -> TableSchema:
        """This schema with nullable columns appended; ids continue after ``highest_field_id``.

        The result keeps this schema's id; :meth:`SchemaManager.commit_change` assigns the next one.

        Raises:
            SchemaError: a name is taken (or repeated), or a new column is NOT NULL.
        """
        taken = set(self.field_names)
        ids = _IdCounter(self.highest_field_id)
        added = []
        for name, data_type, description in new_columns:
            if name in taken:
                raise SchemaError(f"column {name!r} already exists in schema {self.id}")
            if not data_type.nullable:
                raise SchemaError(
                    f"new column {name!r} cannot be NOT NULL: existing rows have no value for it"
                )
            taken.add(name)
            # Java: the column takes its id first, then its nested fields (ReassignFieldId order).
            column_id = ids.next()
            added.append(DataField(column_id, name, _reassign_ids(data_type, ids), description))
        return replace(self, fields=self.fields + tuple(added), highest_field_id=ids.last)


class SchemaManager:
    """Reads and writes the schema files of one table (or branch) directory."""

    def __init__(self, storage: StorageBackend, table_path: str) -> None:
        from paimon_core.storage import join_path

        self.storage = storage
        self.table_path = table_path
        self.schema_dir = join_path(table_path, "schema")
        self._join = join_path
        self._cache: dict[int, TableSchema] = {}
        self._lock = threading.Lock()

    def schema_path(self, schema_id: int) -> str:
        return self._join(self.schema_dir, f"{SCHEMA_PREFIX}{schema_id}")

    def list_ids(self) -> list[int]:
        """Ids of all schema files, ascending."""
        ids = []
        for info in self.storage.list_dir(self.schema_dir):
            if info.is_dir or not info.name.startswith(SCHEMA_PREFIX):
                continue
            suffix = info.name[len(SCHEMA_PREFIX) :]
            if suffix.isdigit():
                ids.append(int(suffix))
        ids.sort()
        return ids

    def schema(self, schema_id: int) -> TableSchema:
        """Read one schema (cached: schema files never change).

        Raises:
            CorruptMetadataError: the file is missing (data refers to it) or cannot be parsed.
        """
        with self._lock:
            cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        path = self.schema_path(schema_id)
        try:
            data = self.storage.read_bytes(path)
        except FileNotFoundError:
            raise CorruptMetadataError(
                f"schema {schema_id} does not exist: {path} is missing", path
            ) from None
        schema = TableSchema.from_json(data, path)
        if schema.id != schema_id:
            raise CorruptMetadataError(f"schema file {path} holds schema id {schema.id}", path)
        with self._lock:
            self._cache[schema_id] = schema
        return schema

    def latest_id(self) -> int | None:
        """The newest schema id, or None when the table does not exist."""
        ids = self.list_ids()
        return ids[-1] if ids else None

    def latest(self) -> TableSchema | None:
        """The newest schema, or None when the table does not exist."""
        latest_id = self.latest_id()
        return None if latest_id is None else self.schema(latest_id)

    def create(self, schema: TableSchema) -> TableSchema:
        """Write the first schema (``schema-0``).

        Raises:
            TableAlreadyExistsError: a schema already exists.
        """
        if schema.id != 0:
            raise SchemaError(f"the first schema must have id 0, not {schema.id}")
        if self.list_ids():
            raise TableAlreadyExistsError(self.table_path)
        if not self.commit(schema):
            raise TableAlreadyExistsError(self.table_path)
        return schema

    def commit(self, schema: TableSchema) -> bool:
        """Atomically create ``schema-<schema.id>``; False when that id is already taken.

        Other exceptions (an unknown outcome) propagate.
        """
        data = schema.to_json().encode("utf-8")
        try:
            self.storage.write_if_absent(self.schema_path(schema.id), data)
        except FileExistsError:
            return False
        with self._lock:
            self._cache[schema.id] = schema
        return True

    def commit_change(self, change: Callable[[TableSchema], TableSchema]) -> TableSchema:
        """Apply ``change`` to the latest schema and write the result as the next schema id.

        ``change`` may be called several times: when another writer takes the next id first, the latest
        schema is re-read and the change re-applied to it (so it must be a pure function of its input, and
        should raise :class:`SchemaError` when the change no longer applies).

        Raises:
            SchemaError: the table has no schema, ``change`` rejected the change, or too many races were lost.
        """
        for _ in range(_MAX_COMMIT_ATTEMPTS):
            latest = self.latest()
            if latest is None:
                raise SchemaError(f"table {self.table_path} has no schema")
            changed = change(latest)
            new_schema = replace(changed, id=latest.id + 1, time_millis=int(time.time() * 1000))
            if self.commit(new_schema):
                return new_schema
            logger.info(
                "schema %s of %s was taken by another writer; retrying", new_schema.id, self.table_path
            )
        raise SchemaError(f"gave up committing a schema change to {self.table_path} after repeated races")
