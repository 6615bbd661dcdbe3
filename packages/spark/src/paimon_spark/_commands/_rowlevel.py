"""The row-level engine under ``merge_into``, ``update`` and ``delete_from`` (as Paimon's Spark
``MERGE INTO``, ``UPDATE`` and ``DELETE`` commands share one row-level base).

Every command is a merge: the target is read at one snapshot and joined with a source (``update`` and
``delete_from`` join the table with itself), each joined row gets its fate from the first action whose
condition holds, in Paimon's documented order: matched upsert, matched delete, not-matched-by-source
upsert, not-matched-by-source delete, not-matched insert. A target row that several source rows match and
that an action changes is an error, as in SQL's MERGE. Terms equating target partition columns with the
source's expressions (or constants) limit the read to those partitions (:mod:`paimon_spark._read._prune`).

How the changes are written depends on the table:

* **Primary-key tables** take row-kind writes, as Paimon's Flink ``merge_into`` action writes them: an
  updated row goes in whole as an upsert of its key (``+U``), a deleted one as a ``-D`` record of the row
  read, an inserted one as ``+I``; no file is rewritten and the commit is an APPEND
  (:mod:`paimon_spark._write._upsert`). As in Paimon, only the ``deduplicate`` and ``partial-update``
  engines take a merge (a partial-update table keeps a column's old value where the written row has null),
  and an update may not change a row's primary key.
* **Append tables** are merged copy-on-write (as Paimon's Spark ``MERGE INTO`` does for them): the target
  rows carry their file and position, and every file holding a changed row is written again without its
  deleted rows and with its updated ones. One OVERWRITE snapshot then deletes those files and adds the new
  ones (plus the inserted rows), with conflict checks: a concurrent compaction or overwrite of a rewritten
  file fails the command and leaves the table as it was. Concurrent appends are kept.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import LongType, StringType, StructField, StructType

from paimon_core import options as opts
from paimon_core.catalog import split_identifier
from paimon_core.compact import precommit_compact
from paimon_core.errors import ConfigError, PaimonError
from paimon_core.manifest import DataFileMeta
from paimon_core.redaction import get_logger
from paimon_core.table import CommitMessage, DataSplit, Table
from paimon_core.table.mergetree import DELETE, INSERT, UPDATE_AFTER
from paimon_spark._options import SourceConfig, parse_options
from paimon_spark._read import is_column, partition_filter, top_level_chars
from paimon_spark._tasks import default_parallelism
from paimon_spark._types import to_spark_schema
from paimon_spark._write import KIND_COLUMN, abort_uncommitted, check_row_level, write_in_place, write_records

__all__ = [
    "SOURCE_COLUMN",
    "Actions",
    "MergeCardinalityError",
    "MergeSummary",
    "argument_text",
    "merge_with_itself",
    "open_target",
    "output_columns",
    "parse_setting",
    "refuse_key_assignments",
    "run_row_level",
    "split_top_level",
]

logger = get_logger(__name__)

FILE_COLUMN = "__paimon_file"
ROW_COLUMN = "__paimon_row"
SOURCE_COLUMN = "__paimon_source"
ACTION_COLUMN = "__paimon_action"
_UPDATE, _DELETE, _UPDATE_UNMATCHED, _INSERT, _KEEP = "U", "D", "B", "I", "K"
_CHANGES = (_UPDATE, _DELETE, _UPDATE_UNMATCHED)


class MergeCardinalityError(PaimonError, ValueError):
    """Several source rows match one target row that the merge changes."""


@dataclass(frozen=True)
class MergeSummary:
    """What a merge, delete or update did. ``snapshot_id`` is None when nothing changed (no snapshot was
    made); on a primary-key table it is the APPEND snapshot (a compaction by the writers may follow it) and
    no file is rewritten."""

    table: str
    snapshot_id: int | None
    updated: int = 0
    deleted: int = 0
    inserted: int = 0
    rewritten_files: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.snapshot_id is None:
            return f"{self.table}: nothing to merge"
        return (
            f"{self.table}: snapshot {self.snapshot_id}, {self.updated} updated, {self.deleted} deleted, "
            f"{self.inserted} inserted, {len(self.rewritten_files)} files rewritten"
        )


@dataclass(frozen=True)
class Actions:
    """What a command does to each joined row: (condition, setting) upserts, delete conditions and the
    (condition, values) insert, each None when the command lacks it (Paimon's merge_into arguments)."""

    matched_upsert: tuple[str, dict[str, str]] | None
    matched_delete: str | None
    unmatched_upsert: tuple[str, dict[str, str]] | None
    unmatched_delete: str | None
    insert: tuple[str, list[str]] | None

    @property
    def deletes(self) -> bool:
        return self.matched_delete is not None or self.unmatched_delete is not None

    @property
    def reads_every_target_row(self) -> bool:
        """Whether rows no source row matches can change (then no target partition may be skipped)."""
        return self.unmatched_upsert is not None or self.unmatched_delete is not None


@dataclass(frozen=True)
class _Plan:
    """A merge ready to run: the joined rows (persisted) with their action, and the table's new columns."""

    table: Table
    config: SourceConfig
    base_id: int | None
    joined: DataFrame
    output: dict[str, Column]
    target_alias: str
    several_matches_possible: bool = True
    computed_keys: bool = False  # upserts may compute a primary key (checked to equal the row's own)


def open_target(
    warehouse: str,
    identifier: str,
    catalog_conf: Mapping[str, Any] | None,
    options: str | Mapping[str, Any] | None,
    operation: str,
    *,
    upserts: bool,
    deletes: bool,
) -> tuple[SourceConfig, Table]:
    """The target's config (what executors open) and table, after the checks of its kind."""
    config = SourceConfig(
        location=identifier,
        warehouse=warehouse,
        table_options=parse_options(options),
        storage_options={str(k): str(v) for k, v in (catalog_conf or {}).items()},
    )
    table = config.open_table()
    if table.has_primary_key:
        check_row_level(table, operation, upserts=upserts, deletes=deletes)
        return config, table
    # Copy-on-write: the writers must not compact the files they write, the commit replaces exact files.
    config = dataclasses.replace(config, table_options={**config.table_options, opts.WRITE_ONLY.key: "true"})
    return config, config.open_table()


def refuse_key_assignments(
    table: Table, setting: Mapping[str, str], alias: str | None, argument: str
) -> None:
    """A primary-key table's key columns (partition columns among them) may only be set to themselves."""
    if not table.has_primary_key:
        return
    keys = {k.lower(): k for k in table.schema.primary_keys}
    for column, expression in setting.items():
        key = keys.get(column.lower())
        if key is not None and not is_column(expression, alias, key):
            raise ConfigError(
                f"{argument}: {table.identifier} cannot update its primary-key column {key!r} "
                f"(delete the row and insert the new one instead)",
                argument,
            )


def _read_target(
    spark: SparkSession, table: Table, pruning: list[Any] | None
) -> tuple[int | None, DataFrame]:
    """The latest snapshot's id and its rows, of the partitions ``pruning`` keeps (all when None)."""
    base = table.latest_snapshot()
    if base is None or (pruning is not None and not pruning):
        splits: list[DataSplit] = []
    else:
        splits = table.scan(filter=pruning, snapshot_id=base.id).plan()
    logger.debug("%s: reading %d files of the target", table.identifier, sum(len(s.files) for s in splits))
    return (base.id if base else None), _target_frame(spark, table, splits)


def run_row_level(
    spark: SparkSession,
    table: Table,
    config: SourceConfig,
    actions: Actions,
    output: dict[str, Column],
    target_alias: str,
    pruning: list[Any] | None,
    join: Callable[[DataFrame], DataFrame],
    *,
    several_matches_possible: bool = True,
    computed_keys: bool = False,
) -> MergeSummary:
    """Run a row-level command: read the target (the partitions ``pruning`` keeps, all when None), join it
    with its source, give each joined row its action, then check, write and commit the changes once.

    Args:
        output: the table's columns of each row (:func:`output_columns`).
        join: the target's rows (aliased ``target_alias``) to the joined rows, the source's marked by a
            non-null :data:`SOURCE_COLUMN`.
        several_matches_possible: whether a target row may meet several source rows (checked then).
        computed_keys: whether upserts may compute a primary key (checked to equal the row's own).
    """
    base_id, target = _read_target(spark, table, pruning)
    joined = join(target.alias(target_alias)).withColumn(ACTION_COLUMN, _action_column(actions)).persist()
    try:
        return _execute(
            _Plan(
                table, config, base_id, joined, output, target_alias, several_matches_possible, computed_keys
            )
        )
    finally:
        joined.unpersist()


def merge_with_itself(
    spark: SparkSession,
    operation: str,
    warehouse: str,
    identifier: str,
    actions: Actions,
    catalog_conf: Mapping[str, Any] | None,
    options: str | Mapping[str, Any] | None,
) -> MergeSummary:
    """``delete_from`` and ``update``: the merge of the table with itself, every row matched once, by itself."""
    upsert = actions.matched_upsert
    config, table = open_target(
        warehouse,
        identifier,
        catalog_conf,
        options,
        operation,
        upserts=upsert is not None,
        deletes=actions.deletes,
    )
    alias = split_identifier(identifier)[1]
    if upsert is not None:
        refuse_key_assignments(table, upsert[1], alias, "set")
    output = output_columns(table, actions, alias, alias, setting="set")
    condition = upsert[0] if upsert is not None else actions.matched_delete
    assert condition is not None
    no_columns = spark.range(1).select()  # a constant is all a delete or update equates a partition to
    pruning = partition_filter(table, condition, alias, no_columns, qualified=False)
    return run_row_level(
        spark,
        table,
        config,
        actions,
        output,
        alias,
        pruning,
        lambda target: target.withColumn(SOURCE_COLUMN, F.lit(True)),
        several_matches_possible=False,
    )


def _execute(plan: _Plan) -> MergeSummary:
    """Check the planned merge, write its changes and commit them once."""
    table, joined = plan.table, plan.joined
    if plan.several_matches_possible:
        _check_cardinality(plan)
    if table.has_primary_key and plan.computed_keys:
        _check_keys_kept(plan)
    counts: dict[str, int] = {}
    touched: set[str] = set()
    for row in joined.groupBy(ACTION_COLUMN, FILE_COLUMN).count().collect():
        action, name, count = row[0], row[1], row[2]
        counts[action] = counts.get(action, 0) + count
        if action in _CHANGES:
            touched.add(name)
    inserted = counts.get(_INSERT, 0)
    if not touched and not inserted:
        return MergeSummary(table.identifier, None)
    if table.has_primary_key:
        written, deleted, touched = _write_row_kinds(plan), [], set()
    else:
        written, deleted = _rewrite_files(plan, touched), _deleted_messages(table, plan.base_id, touched)
    try:
        written = precommit_compact(table, written)  # once over all the tasks' files (precommit-compact)
        created = table.new_commit().commit([*written, *deleted])
    except BaseException:
        abort_uncommitted(
            plan.config, written
        )  # keeps the files if an unknown outcome turns out to be a commit
        raise
    summary = MergeSummary(
        table.identifier,
        created[0] if created else None,
        updated=counts.get(_UPDATE, 0) + counts.get(_UPDATE_UNMATCHED, 0),
        deleted=counts.get(_DELETE, 0),
        inserted=inserted,
        rewritten_files=tuple(sorted(touched)),
    )
    logger.info("merge into %s: %s", table.identifier, summary)
    return summary


def _check_cardinality(plan: _Plan) -> None:
    table = plan.table
    matched = F.col(FILE_COLUMN).isNotNull() & F.col(SOURCE_COLUMN).isNotNull()
    changed = F.col(ACTION_COLUMN).isin(*_CHANGES).cast("int")
    # A target row: its primary key, or its file and position in an append table.
    keys = table.schema.primary_keys
    ids = (
        [F.col(f"`{plan.target_alias}`.`{k}`") for k in keys]
        if keys
        else [F.col(FILE_COLUMN), F.col(ROW_COLUMN)]
    )
    repeated = (
        plan.joined.where(matched)
        .groupBy(*ids)
        .agg(F.count(F.lit(1)).alias("count"), F.max(changed).alias("changed"))
        .where("count > 1 AND changed = 1")
        .limit(1)
        .collect()
    )
    if repeated:
        row = repeated[0]
        where = (
            f"key {dict(zip(keys, row[: len(keys)], strict=True))}"
            if keys
            else f"file {row[0]}, row {row[1]}"
        )
        raise MergeCardinalityError(
            f"a row of {table.identifier} ({where}) is matched by {row['count']} source rows; make "
            "merge_condition match at most one source row per target row"
        )


def _check_keys_kept(plan: _Plan) -> None:
    """An upsert writes a row under the key it carries: one whose key changed would add a row, not update."""
    keys = plan.table.schema.primary_keys
    moved = functools.reduce(
        operator.or_,
        [~plan.output[k].eqNullSafe(F.col(f"`{plan.target_alias}`.`{k}`")) for k in keys],
    )
    updates = F.col(ACTION_COLUMN).isin(_UPDATE, _UPDATE_UNMATCHED)
    found = plan.joined.where(updates & moved).select(*[F.col(f"`{plan.target_alias}`.`{k}`") for k in keys])
    bad = found.limit(1).collect()
    if bad:
        raise ConfigError(
            f"the update of the row of {plan.table.identifier} with key {dict(zip(keys, bad[0], strict=True))} "
            "changes its primary key, which a primary-key table cannot update (delete the row and insert "
            "the new one instead)"
        )


def _write_row_kinds(plan: _Plan) -> list[CommitMessage]:
    """Primary-key tables: the changed rows as upserts and deletes, the inserted ones as inserts."""
    action = F.col(ACTION_COLUMN)
    kind = (
        F.when(action.isin(_UPDATE, _UPDATE_UNMATCHED), F.lit(UPDATE_AFTER))
        .when(action == _DELETE, F.lit(DELETE))
        .otherwise(F.lit(INSERT))
        .cast("tinyint")
    )
    records = plan.joined.where(action.isin(*_CHANGES, _INSERT)).select(
        *[column.alias(name) for name, column in plan.output.items()], kind.alias(KIND_COLUMN)
    )
    return write_records(plan.table, plan.config, records)


def _rewrite_files(plan: _Plan, touched: set[str]) -> list[CommitMessage]:
    """Append tables: every touched file again, without its deleted rows; the inserted rows."""
    joined = plan.joined
    output = [column.alias(name) for name, column in plan.output.items()]
    keep = F.col(ACTION_COLUMN).isin(_KEEP, _UPDATE, _UPDATE_UNMATCHED) & F.col(FILE_COLUMN).isin(
        sorted(touched)
    )
    # A kept row that several source rows matched (and none changed) appears once per match: once is enough.
    kept = joined.where(keep).dropDuplicates([FILE_COLUMN, ROW_COLUMN]).select(*output)
    result = kept.unionByName(joined.where(F.col(ACTION_COLUMN) == _INSERT).select(*output))
    return write_in_place(result, plan.config)


# --- the arguments -------------------------------------------------------------------------------------------


def argument_text(value: str | None) -> str | None:
    """The argument stripped, or None when it is missing or blank."""
    return value.strip() if value is not None and value.strip() else None


def parse_setting(setting: str, argument: str) -> dict[str, str]:
    """``a = S.a, b = S.b + 1`` into {column: expression}; ``*`` stays ``{"*": "*"}``."""
    if setting.strip() == "*":
        return {"*": "*"}
    assignments: dict[str, str] = {}
    for item in split_top_level(setting):
        column, sep, expression = item.partition("=")
        if not sep or not column.strip() or not expression.strip():
            raise ConfigError(f"{argument}: expected 'column = expression', got {item!r}", argument)
        assignments[column.strip().strip("`")] = expression.strip()
    return assignments


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split at ``separator`` outside parentheses, brackets and quotes (``'...'``, ``"..."``, ```...```)."""
    cuts = [-1, *(i for i, char in top_level_chars(text) if char == separator), len(text)]
    parts = (text[start + 1 : end].strip() for start, end in pairwise(cuts))
    return [p for p in parts if p]


# --- the plan --------------------------------------------------------------------------------------------------


def _action_column(actions: Actions) -> Column:
    """Each joined row's fate: the first action whose condition holds, else keep (target) or drop (source)."""
    matched = f"({FILE_COLUMN} IS NOT NULL AND {SOURCE_COLUMN} IS NOT NULL)"
    target_only = f"({FILE_COLUMN} IS NOT NULL AND {SOURCE_COLUMN} IS NULL)"
    clauses: list[tuple[str, str]] = []
    if actions.matched_upsert:
        clauses.append((f"{matched} AND ({actions.matched_upsert[0]})", _UPDATE))
    if actions.matched_delete:
        clauses.append((f"{matched} AND ({actions.matched_delete})", _DELETE))
    if actions.unmatched_upsert:
        clauses.append((f"{target_only} AND ({actions.unmatched_upsert[0]})", _UPDATE_UNMATCHED))
    if actions.unmatched_delete:
        clauses.append((f"{target_only} AND ({actions.unmatched_delete})", _DELETE))
    if actions.insert:
        clauses.append((f"{FILE_COLUMN} IS NULL AND ({actions.insert[0]})", _INSERT))
    clauses.append((f"{FILE_COLUMN} IS NOT NULL", _KEEP))
    cases = " ".join(f"WHEN {condition} THEN '{action}'" for condition, action in clauses)
    return F.expr(f"CASE {cases} END")


def output_columns(
    table: Table, actions: Actions, t_alias: str, s_alias: str, setting: str = "matched_upsert_setting"
) -> dict[str, Column]:
    """The table's columns of each kept, updated, deleted or inserted row, cast to the table's types.

    A deleted row keeps its values (a primary-key table writes them in its ``-D`` record, as Paimon does).
    ``setting`` names the matched upsert's setting in errors (``update`` calls it ``set``).
    """
    names = table.field_names
    lowered = {n.lower(): n for n in names}
    from_source = {n: f"`{s_alias}`.`{n}`" for n in names}  # what ``*`` stands for

    def assigned(upsert: tuple[str, dict[str, str]] | None, argument: str) -> dict[str, str]:
        if upsert is None:
            return {}
        setting = upsert[1]
        if "*" in setting:
            return from_source
        unknown = [c for c in setting if c.lower() not in lowered]
        if unknown:
            raise ConfigError(
                f"{argument}: {unknown} are not columns of {table.identifier} {names}", argument
            )
        return {lowered[c.lower()]: e for c, e in setting.items()}

    updates = assigned(actions.matched_upsert, setting)
    unmatched = assigned(actions.unmatched_upsert, "not_matched_by_source_upsert_setting")
    inserts: dict[str, str] = {}
    if actions.insert:
        values = actions.insert[1]
        if values == ["*"]:
            inserts = from_source
        elif len(values) != len(names):
            raise ConfigError(
                f"not_matched_insert_values has {len(values)} values, {table.identifier} has "
                f"{len(names)} columns {names}",
                "not_matched_insert_values",
            )
        else:
            inserts = dict(zip(names, values, strict=True))
    schema = to_spark_schema(table.schema.fields)
    action = F.col(ACTION_COLUMN)
    columns = {}
    for spark_field in schema.fields:
        name = spark_field.name
        current = F.col(f"`{t_alias}`.`{name}`")

        def value(expressions: dict[str, str], name: str = name, current: Column = current) -> Column:
            return F.expr(expressions[name]) if name in expressions else current

        column = (
            F.when(action == _UPDATE, value(updates))
            .when(action == _UPDATE_UNMATCHED, value(unmatched))
            .when(action == _INSERT, value(inserts))
            .otherwise(current)
        )
        columns[name] = column.cast(spark_field.dataType)
    return columns


# --- reading, writing, committing ----------------------------------------------------------------------------


def _target_frame(spark: SparkSession, table: Table, splits: Sequence[DataSplit]) -> DataFrame:
    """The target's rows at the base snapshot, each with its place: the file name and the position in the
    file (append tables), or its split and position among the split's merged rows (primary-key tables)."""
    schema = StructType(
        [
            *to_spark_schema(table.schema.fields).fields,
            StructField(FILE_COLUMN, StringType(), False),
            StructField(ROW_COLUMN, LongType(), False),
        ]
    )
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    work: list[tuple[DataSplit, DataFileMeta | None]] = (
        [(split, None) for split in splits]
        if table.has_primary_key
        else [(split, file) for split in splits for file in split.files]
    )

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        reader = table.new_read()
        for batch in batches:
            for index in batch.column(0).to_pylist():
                split, file = work[index]
                if file is None:
                    place, rows_read = f"split-{index}", reader.to_batches([split])
                else:
                    place, rows_read = file.file_name, reader.iter_file_batches(split, file)
                position = 0
                for data in rows_read:
                    rows = data.num_rows
                    names = pa.array([place] * rows, pa.string())
                    positions = pa.array(range(position, position + rows), pa.int64())
                    position += rows
                    out = pa.RecordBatch.from_arrays([*data.columns, names, positions], arrow_schema.names)
                    yield out if out.schema.equals(arrow_schema) else out.cast(arrow_schema, safe=False)

    slots = max(1, min(len(work), default_parallelism(spark) * 2))
    indexes = spark.range(0, len(work), 1, numPartitions=slots)  # each task reads a run of them
    return indexes.mapInArrow(read, schema)


def _deleted_messages(table: Table, base_id: int | None, names: set[str]) -> list[CommitMessage]:
    """One message per (partition, bucket) deleting the rewritten files, as the base snapshot lists them."""
    if not names or base_id is None:
        return []
    grouped: dict[tuple[bytes, int, int], list[Any]] = {}
    for entry in table.live_entries(base_id):
        if entry.file.file_name in names:
            grouped.setdefault((entry.partition, entry.bucket, entry.total_buckets), []).append(entry.file)
    return [
        CommitMessage(partition, bucket, total, deleted_files=tuple(files))
        for (partition, bucket, total), files in grouped.items()
    ]
