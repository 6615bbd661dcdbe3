"""The merge engine a primary-key table's options configure, validated (docs/primary-key-tables.md, "Merge
engines"): Paimon's keys, and Java's rules for which columns may aggregate."""

from __future__ import annotations

from paimon_core import options as opts
from paimon_core.errors import ConfigError, SchemaError
from paimon_core.schema import TableSchema
from paimon_core.table.mergetree._aggregates import Aggregator, aggregator_for
from paimon_core.table.mergetree._merge import (
    Aggregation,
    Deduplicate,
    FirstRow,
    MergeEngine,
    PartialUpdate,
    SequenceGroup,
)
from paimon_core.types import DataType

__all__ = ["merge_engine"]


def _split(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def merge_engine(schema: TableSchema, options: opts.Options) -> MergeEngine:
    """The table's merge engine, validated.

    Raises:
        SchemaError: a ``sequence.field`` or sequence-group column is not a column of the table.
        ConfigError: options that contradict each other or the engine, an unknown aggregate function, or
            one that does not fit its column's type.
    """
    names = schema.field_names
    keys = list(schema.primary_keys)
    engine = options.get_option(opts.MERGE_ENGINE)
    ignore_delete = options.get_option(opts.IGNORE_DELETE)
    sequence_fields = _split(options.get_option(opts.SEQUENCE_FIELD))
    for name in sequence_fields:
        if name not in names:
            raise SchemaError(f"sequence.field {name!r} is not a column of the table ({names})")
    if len(set(sequence_fields)) != len(sequence_fields):
        raise ConfigError(f"sequence.field repeats a column: {sequence_fields}", opts.SEQUENCE_FIELD.key)
    if engine == "deduplicate":
        return Deduplicate(ignore_delete)
    if engine == "first-row":
        if sequence_fields:
            raise ConfigError(
                "the first-row merge engine does not take a sequence.field", opts.SEQUENCE_FIELD.key
            )
        return FirstRow(ignore_delete)
    if engine == "partial-update":
        return _partial_update(schema, options, keys, sequence_fields, ignore_delete)
    return _aggregation(schema, options, keys, sequence_fields)


def _partial_update(
    schema: TableSchema,
    options: opts.Options,
    keys: list[str],
    sequence_fields: list[str],
    ignore_delete: bool,
) -> PartialUpdate:
    names = schema.field_names
    remove_on_delete = options.get_option(opts.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)
    if ignore_delete and remove_on_delete:
        raise ConfigError(
            "'ignore-delete' and 'partial-update.remove-record-on-delete' cannot both be set",
            opts.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key,
        )
    groups = _sequence_groups(schema, options, keys)
    if groups and remove_on_delete:
        raise ConfigError(
            "'partial-update.remove-record-on-delete' cannot be combined with sequence groups",
            opts.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key,
        )
    aggregators = _partial_update_aggregators(schema, options, keys, groups)
    for group in groups:
        group.aggregators = {c: aggregators[c] for c in group.columns if c in aggregators}
    del sequence_fields
    removing = _removing_groups(options, groups, ignore_delete)
    return PartialUpdate(names, keys, ignore_delete, remove_on_delete, groups, removing)


def _removing_groups(
    options: opts.Options, groups: list[SequenceGroup], ignore_delete: bool
) -> list[SequenceGroup]:
    """The sequence groups named (by a sequence field) in ``partial-update.remove-record-on-sequence-group``:
    a -D that wins one of them removes the whole row."""
    option = opts.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP
    text = options.get_option(option)
    if text is None:
        return []
    if ignore_delete:
        raise ConfigError(f"'ignore-delete' and '{option.key}' cannot both be set", option.key)
    named = _split(text)
    group_of = {field: group for group in groups for field in group.sequence_fields}
    unknown = [field for field in named if field not in group_of]
    if unknown or not named:
        raise ConfigError(
            f"'{option.key}' names {unknown or 'no field'}, which must be sequence fields of sequence groups"
            f" ('fields.<sequence field>.sequence-group'; these are {sorted(group_of)})",
            option.key,
        )
    removing: list[SequenceGroup] = []
    for field in named:
        if group_of[field] not in removing:
            removing.append(group_of[field])
    return removing


def _sequence_groups(schema: TableSchema, options: opts.Options, keys: list[str]) -> list[SequenceGroup]:
    names = schema.field_names
    groups = []
    seen: set[str] = set()
    for fields, columns_text in options.per_field("sequence-group").items():
        group = SequenceGroup(_split(fields), _split(columns_text))
        for name in (*group.sequence_fields, *group.columns):
            if name not in names:
                raise SchemaError(f"sequence group column {name!r} is not a column of the table ({names})")
            if name in keys:
                raise ConfigError(
                    f"sequence group 'fields.{fields}.sequence-group' contains the primary-key column {name!r}:"
                    " primary-key columns cannot be in a sequence group",
                    f"fields.{fields}.sequence-group",
                )
        taken = seen & set(group.columns)
        if taken:
            raise ConfigError(f"columns {sorted(taken)} belong to more than one sequence group")
        seen |= set(group.columns)
        groups.append(group)
    return groups


def _partial_update_aggregators(
    schema: TableSchema, options: opts.Options, keys: list[str], groups: list[SequenceGroup]
) -> dict[str, Aggregator]:
    """The aggregate functions of a partial-update table's columns, as Java reads them: none for keys and
    sequence fields; elsewhere ``fields.<c>.aggregate-function`` or the default, which a column outside
    every sequence group may only have as ``last_non_null_value`` (what partial update does anyway)."""
    functions = options.per_field("aggregate-function")
    for name in functions:
        if name not in schema.field_names:
            raise SchemaError(f"fields.{name}.aggregate-function names no column of the table")
    default = options.get_option(opts.FIELDS_DEFAULT_AGGREGATE_FUNCTION)
    sequence_fields = {f for g in groups for f in g.sequence_fields}
    protected = {c for g in groups for c in g.columns}
    aggregators = {}
    for field in schema.fields:
        function = functions.get(field.name, default)
        if function is None or field.name in keys or field.name in sequence_fields:
            continue
        aggregator = _aggregator(options, field.name, function, field.type)
        if field.name in protected:
            aggregators[field.name] = aggregator
        elif aggregator.function != "last_non_null_value":
            raise ConfigError(
                f"aggregate function {function!r} of column {field.name!r} needs a sequence group: in a "
                "partial-update table only the columns of a 'fields.<sequence field>.sequence-group' may "
                "be aggregated (others take their last non-null value)",
                f"fields.{field.name}.aggregate-function",
            )
    return aggregators


def _aggregator(options: opts.Options, column: str, function: str, data_type: DataType) -> Aggregator:
    """``column``'s aggregator with its ``fields.<column>.*`` options."""
    flag = options.get(f"fields.{column}.ignore-retract")
    distinct = options.get(f"fields.{column}.distinct")
    return aggregator_for(
        column,
        function,
        data_type,
        ignore_retract=flag is not None and flag.strip().lower() == "true",
        delimiter=options.get(f"fields.{column}.list-agg-delimiter", ","),
        distinct=distinct is not None and distinct.strip().lower() == "true",
    )


def _aggregation(
    schema: TableSchema, options: opts.Options, keys: list[str], sequence_fields: list[str]
) -> Aggregation:
    functions = options.per_field("aggregate-function")
    for name in functions:
        if name not in schema.field_names:
            raise SchemaError(f"fields.{name}.aggregate-function names no column of the table")
    default = options.get_option(opts.FIELDS_DEFAULT_AGGREGATE_FUNCTION) or "last_non_null_value"
    remove_on_delete = options.get_option(opts.AGGREGATION_REMOVE_RECORD_ON_DELETE)
    aggregators: dict[str, Aggregator] = {}
    for field in schema.fields:
        if field.name in keys:
            continue
        function = "last_value" if field.name in sequence_fields else functions.get(field.name, default)
        aggregator = _aggregator(options, field.name, function, field.type)
        if remove_on_delete and aggregator.ignore_retract:
            raise ConfigError(
                "'aggregation.remove-record-on-delete' cannot be combined with 'ignore-retract'",
                opts.AGGREGATION_REMOVE_RECORD_ON_DELETE.key,
            )
        aggregators[field.name] = aggregator
    return Aggregation(keys, aggregators, remove_on_delete)
