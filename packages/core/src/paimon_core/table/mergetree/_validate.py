"""The rules a primary-key table's schema and options must meet, checked when it is created."""

from __future__ import annotations

from paimon_core import options as opts
from paimon_core.errors import ConfigError, SchemaError
from paimon_core.schema import TableSchema
from paimon_core.table.mergetree._merge_options import merge_engine
from paimon_core.types import ArrayType, CharType, MapType, MultisetType, RowType, VarCharType

__all__ = ["RESERVED_NAMES", "check_append_table", "check_primary_key_table"]

RESERVED_NAMES = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"})
"""Column names Paimon refuses because its files or system tables use them."""


def check_primary_key_table(schema: TableSchema) -> None:
    """Refuse what a primary-key table cannot be (here or in Paimon), naming the problem.

    Raises:
        SchemaError: a reserved column name, a non-primitive key column, a primary key without all
            partition columns (Paimon's cross-partition upsert, not supported here), a ``rowkind.field``
            that is not a string column, a ``sequence.field`` that is not a column.
        ConfigError: an unsupported ``bucket``, a ``changelog-producer`` the merge engine cannot have,
            or merge-engine options that do not fit the schema.
    """
    options = opts.Options.of(schema.options)
    for field in schema.fields:
        if field.name in RESERVED_NAMES or field.name.startswith("_KEY_"):
            raise SchemaError(f"column name {field.name!r} is reserved by Paimon's primary-key tables")
    for field in schema.primary_key_fields():
        if isinstance(field.type, (ArrayType, MapType, MultisetType, RowType)):
            raise SchemaError(
                f"primary-key column {field.name!r} must be of a primitive type, not {field.type}"
            )
    missing = [k for k in schema.partition_keys if k not in schema.primary_keys]
    if missing:
        raise SchemaError(
            f"the primary key {list(schema.primary_keys)} lacks the partition columns {missing}: Paimon's "
            "cross-partition upsert is not supported here; add the partition columns to the primary key"
        )
    bucket = options.get_option(opts.BUCKET)
    if bucket == -1 and schema.options.get(opts.BUCKET_KEY.key):
        raise ConfigError("'bucket-key' cannot be set on a dynamic-bucket table (bucket = -1)", "bucket-key")
    producer = options.get_option(opts.CHANGELOG_PRODUCER)
    engine = options.get_option(opts.MERGE_ENGINE)
    if engine == "first-row" and producer not in ("none", "lookup"):
        raise ConfigError(
            f"the first-row merge engine only supports changelog-producer none or lookup, not {producer}",
            opts.CHANGELOG_PRODUCER.key,
        )
    if options.get_option(opts.DELETION_VECTORS_ENABLED):
        if producer not in ("none", "input", "lookup"):  # Java's validateForDeletionVectors
            raise ConfigError(
                f"deletion vectors work with changelog-producer none, input or lookup, not {producer}",
                opts.CHANGELOG_PRODUCER.key,
            )
        if engine == "first-row":
            raise ConfigError(
                "the first-row merge engine never deletes old rows, so it takes no deletion vectors",
                opts.DELETION_VECTORS_ENABLED.key,
            )
    rowkind = options.get_option(opts.ROWKIND_FIELD)
    if rowkind is not None:
        if rowkind not in schema.field_names:
            raise SchemaError(
                f"rowkind.field {rowkind!r} is not a column of the table ({schema.field_names})"
            )
        if not isinstance(schema.field_by_name(rowkind).type, (CharType, VarCharType)):
            raise SchemaError(f"rowkind.field {rowkind!r} must be a string column")
    merge_engine(schema, options)  # validates sequence.field, sequence groups and aggregate functions


def check_append_table(schema: TableSchema) -> None:
    """Refuse primary-key-only options on an append table.

    Raises:
        ConfigError: ``bucket = -2`` or a changelog producer without a primary key.
    """
    options = opts.Options.of(schema.options)
    if options.get_option(opts.BUCKET) == -2:
        raise ConfigError("bucket = -2 (postpone) is only for primary-key tables", "bucket")
    if options.get_option(opts.CHANGELOG_PRODUCER) != "none":
        raise ConfigError("a changelog producer needs a primary key", opts.CHANGELOG_PRODUCER.key)
    if options.get_option(opts.DELETION_VECTORS_ENABLED):
        raise ConfigError(
            "deletion-vectors.enabled on an append table: not supported here (primary-key tables take them)",
            opts.DELETION_VECTORS_ENABLED.key,
        )
