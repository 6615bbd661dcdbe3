"""``merge_into`` on Spark: Paimon's merge procedure for append tables, done copy-on-write.

Paimon's Flink ``merge_into`` action writes upserts and deletes into a primary-key table. This project's
tables are append tables, so the merge rewrites data files instead (as Paimon's Spark ``MERGE INTO`` does
for append tables): the target is read at one snapshot with each row's file and position, joined with the
source by ``merge_condition``, and every file holding a changed row is written again without its deleted
rows and with its updated ones. One OVERWRITE snapshot then deletes those files and adds the new ones
(plus the inserted rows), with conflict checks: a concurrent compaction or overwrite of a rewritten file
fails the merge and leaves the table as it was. Concurrent appends are kept.

The actions and their arguments carry Paimon's names. The first action whose condition holds decides a row's
fate, in Paimon's documented order: matched upsert, matched delete, not-matched-by-source upsert,
not-matched-by-source delete, not-matched insert. A target row that several source rows match and that an
action changes is an error, as in SQL's MERGE.
"""

from __future__ import annotations

import dataclasses
import logging
import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
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
from paimon_core.table import CommitMessage, DataSplit, Table
from paimon_spark._compact import parse_options
from paimon_spark._options import SourceConfig
from paimon_spark._source import _abort, _write_task
from paimon_spark._types import to_spark_schema

__all__ = ["MergeCardinalityError", "MergeSummary", "merge_into"]

logger = logging.getLogger(__name__)

FILE_COLUMN = "__paimon_file"
ROW_COLUMN = "__paimon_row"
SOURCE_COLUMN = "__paimon_source"
ACTION_COLUMN = "__paimon_action"
_UPDATE, _DELETE, _UPDATE_UNMATCHED, _INSERT, _KEEP = "U", "D", "B", "I", "K"


class MergeCardinalityError(PaimonError, ValueError):
    """Several source rows match one target row that the merge changes."""


@dataclass(frozen=True)
class MergeSummary:
    """What a merge did. ``snapshot_id`` is None when nothing changed (no snapshot was made)."""

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
class _Actions:
    matched_upsert: tuple[str, dict[str, str]] | None
    matched_delete: str | None
    unmatched_upsert: tuple[str, dict[str, str]] | None
    unmatched_delete: str | None
    insert: tuple[str, list[str]] | None


def merge_into(
    spark: SparkSession,
    *,
    warehouse: str,
    target_table: str,
    merge_condition: str,
    source_table: str | DataFrame | None = None,
    source_sqls: str | Sequence[str] = (),
    target_alias: str | None = None,
    source_alias: str | None = None,
    matched_upsert_condition: str | None = None,
    matched_upsert_setting: str | None = None,
    matched_delete_condition: str | None = None,
    not_matched_by_source_upsert_condition: str | None = None,
    not_matched_by_source_upsert_setting: str | None = None,
    not_matched_by_source_delete_condition: str | None = None,
    not_matched_insert_condition: str | None = None,
    not_matched_insert_values: str | None = None,
    catalog_conf: Mapping[str, Any] | None = None,
    options: str | Mapping[str, Any] | None = None,
) -> MergeSummary:
    """Merge a source into an append table (Paimon's ``merge_into`` arguments).

    Args:
        target_table: ``db.t``; conditions and settings name its columns ``<target_alias>.<column>``
            (the alias defaults to the table name).
        source_table: a table or view name known to the session (qualifier: its last name part, or
            ``source_alias``), or a DataFrame (qualifier: ``source_alias``, default ``S``).
        source_sqls: statements run first, e.g. ``CREATE TEMPORARY VIEW S AS ...`` (a string splits at ``;``).
        merge_condition: the join condition, e.g. ``T.id = S.id``.
        matched_upsert_setting: ``col = expr, ...`` or ``*`` (every column from the source column of its name).
        not_matched_insert_values: ``expr, ...`` in the table's column order, or ``*``.
        matched_delete_condition / not_matched_by_source_delete_condition: ``TRUE`` deletes every such row.
        options: dynamic table options, ``'k=v,k2=v2'`` or a mapping.

    Raises:
        ConfigError: no action, an upsert condition without its setting, an unknown column, bad values.
        MergeCardinalityError: a changed target row matched several source rows.
        CommitConflictError: a rewritten file was removed concurrently (the merge wrote nothing visible).
    """
    actions = _parse_actions(
        matched_upsert_condition,
        matched_upsert_setting,
        matched_delete_condition,
        not_matched_by_source_upsert_condition,
        not_matched_by_source_upsert_setting,
        not_matched_by_source_delete_condition,
        not_matched_insert_condition,
        not_matched_insert_values,
    )
    statements = source_sqls.split(";") if isinstance(source_sqls, str) else list(source_sqls)
    for statement in statements:
        if statement.strip():
            spark.sql(statement)
    config = SourceConfig(
        location=target_table,
        warehouse=warehouse,
        table_options={**parse_options(options), opts.WRITE_ONLY.key: "true"},
        storage_options={str(k): str(v) for k, v in (catalog_conf or {}).items()},
    )
    table = config.open_table()
    base = table.latest_snapshot()
    t_alias = target_alias or split_identifier(target_table)[1]
    if isinstance(source_table, DataFrame):
        source, s_alias = source_table, source_alias or "S"
    elif source_table:
        source, s_alias = spark.table(source_table), source_alias or source_table.rsplit(".", 1)[-1]
    else:
        raise ConfigError("merge_into needs source_table (a table, a view or a DataFrame)", "source_table")
    output = _output_columns(table, actions, t_alias, s_alias)  # checks the settings before any work
    splits = table.scan(snapshot_id=base.id).plan() if base is not None else []
    target = _target_frame(spark, table, splits).alias(t_alias)
    how = "full_outer" if actions.insert else "left_outer"
    joined = target.join(
        source.withColumn(SOURCE_COLUMN, F.lit(True)).alias(s_alias), F.expr(merge_condition), how
    )
    joined = joined.withColumn(ACTION_COLUMN, _action_column(actions)).persist()
    try:
        return _merge(table, config, base.id if base else None, joined, output)
    finally:
        joined.unpersist()


def _merge(
    table: Table,
    config: SourceConfig,
    base_id: int | None,
    joined: DataFrame,
    output: list[Column],
) -> MergeSummary:
    changes = {_UPDATE, _DELETE, _UPDATE_UNMATCHED}
    matched = F.col(FILE_COLUMN).isNotNull() & F.col(SOURCE_COLUMN).isNotNull()
    changed = F.col(ACTION_COLUMN).isin(_UPDATE, _DELETE).cast("int")
    repeated = (
        joined.where(matched)
        .groupBy(FILE_COLUMN, ROW_COLUMN)
        .agg(F.count(F.lit(1)).alias("count"), F.max(changed).alias("changed"))
        .where("count > 1 AND changed = 1")
        .limit(1)
        .collect()
    )
    if repeated:
        raise MergeCardinalityError(
            f"a row of {table.identifier} (file {repeated[0][0]}, row {repeated[0][1]}) is matched by "
            f"{repeated[0][2]} source rows; make merge_condition match at most one source row per target row"
        )
    counts: dict[str, int] = {}
    touched: set[str] = set()
    for row in joined.groupBy(ACTION_COLUMN, FILE_COLUMN).count().collect():
        action, name, count = row[0], row[1], row[2]
        counts[action] = counts.get(action, 0) + count
        if action in changes:
            touched.add(name)
    inserted = counts.get(_INSERT, 0)
    if not touched and not inserted:
        return MergeSummary(table.identifier, None)
    keep = F.col(ACTION_COLUMN).isin(_KEEP, _UPDATE, _UPDATE_UNMATCHED) & F.col(FILE_COLUMN).isin(
        sorted(touched)
    )
    # A kept row that several source rows matched (and none changed) appears once per match: once is enough.
    kept = joined.where(keep).dropDuplicates([FILE_COLUMN, ROW_COLUMN]).select(*output)
    result = kept.unionByName(joined.where(F.col(ACTION_COLUMN) == _INSERT).select(*output))
    written = [
        message
        for row in result.mapInArrow(_writer(config), "message binary").collect()
        for message in pickle.loads(row[0])
    ]
    deleted = _deleted_messages(table, base_id, touched)
    try:
        written = precommit_compact(table, written)  # once over all the tasks' files (precommit-compact)
        created = table.new_commit().commit([*written, *deleted])
    except BaseException:
        _abort(config, written)  # keeps the files if an unknown outcome turns out to be a commit
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


# --- the arguments -------------------------------------------------------------------------------------------


def _parse_actions(
    matched_upsert_condition: str | None,
    matched_upsert_setting: str | None,
    matched_delete_condition: str | None,
    unmatched_upsert_condition: str | None,
    unmatched_upsert_setting: str | None,
    unmatched_delete_condition: str | None,
    insert_condition: str | None,
    insert_values: str | None,
) -> _Actions:
    def upsert(condition: str | None, setting: str | None, name: str) -> tuple[str, dict[str, str]] | None:
        text = _text(setting)
        if text is None:
            if _text(condition) is not None:
                raise ConfigError(f"{name}_condition needs {name}_setting", f"{name}_setting")
            return None
        return _text(condition) or "TRUE", _parse_setting(text, name)

    values = _text(insert_values)
    if values is None and _text(insert_condition) is not None:
        raise ConfigError(
            "not_matched_insert_condition needs not_matched_insert_values", "not_matched_insert_values"
        )
    actions = _Actions(
        matched_upsert=upsert(matched_upsert_condition, matched_upsert_setting, "matched_upsert"),
        matched_delete=_text(matched_delete_condition),
        unmatched_upsert=upsert(
            unmatched_upsert_condition, unmatched_upsert_setting, "not_matched_by_source_upsert"
        ),
        unmatched_delete=_text(unmatched_delete_condition),
        insert=None
        if values is None
        else (_text(insert_condition) or "TRUE", ["*"] if values == "*" else split_top_level(values)),
    )
    if actions.unmatched_upsert is not None and "*" in actions.unmatched_upsert[1]:
        raise ConfigError(
            "not_matched_by_source_upsert_setting cannot be '*': such rows have no source row",
            "not_matched_by_source_upsert_setting",
        )
    if all(action is None for action in dataclasses.astuple(actions)):
        raise ConfigError(
            "merge_into needs at least one action: matched_upsert_setting, matched_delete_condition, "
            "not_matched_by_source_upsert_setting, not_matched_by_source_delete_condition or "
            "not_matched_insert_values"
        )
    return actions


def _text(value: str | None) -> str | None:
    """The argument stripped, or None when it is missing or blank."""
    return value.strip() if value is not None and value.strip() else None


def _parse_setting(setting: str, name: str) -> dict[str, str]:
    """``a = S.a, b = S.b + 1`` into {column: expression}; ``*`` stays ``{"*": "*"}``."""
    if setting.strip() == "*":
        return {"*": "*"}
    assignments: dict[str, str] = {}
    for item in split_top_level(setting):
        column, sep, expression = item.partition("=")
        if not sep or not column.strip() or not expression.strip():
            raise ConfigError(
                f"{name}_setting: expected 'column = expression', got {item!r}", f"{name}_setting"
            )
        assignments[column.strip().strip("`")] = expression.strip()
    return assignments


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split at ``separator`` outside parentheses, brackets and quotes (``'...'``, ``"..."``, ```...```)."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


# --- the plan --------------------------------------------------------------------------------------------------


def _action_column(actions: _Actions) -> Column:
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


def _output_columns(table: Table, actions: _Actions, t_alias: str, s_alias: str) -> list[Column]:
    """The table's columns of each kept, updated or inserted row, cast to the table's types."""
    names = table.field_names
    lowered = {n.lower(): n for n in names}
    from_source = {n: f"`{s_alias}`.`{n}`" for n in names}  # what ``*`` stands for

    def assigned(setting: dict[str, str] | None, name: str) -> dict[str, str]:
        if setting is None:
            return {}
        if "*" in setting:
            return from_source
        unknown = [c for c in setting if c.lower() not in lowered]
        if unknown:
            raise ConfigError(f"{name}_setting: {unknown} are not columns of {table.identifier} {names}")
        return {lowered[c.lower()]: e for c, e in setting.items()}

    updates = assigned(actions.matched_upsert[1] if actions.matched_upsert else None, "matched_upsert")
    unmatched = assigned(
        actions.unmatched_upsert[1] if actions.unmatched_upsert else None, "not_matched_by_source_upsert"
    )
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
    columns = []
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
        columns.append(column.cast(spark_field.dataType).alias(name))
    return columns


# --- reading, writing, committing ----------------------------------------------------------------------------


def _target_frame(spark: SparkSession, table: Table, splits: Sequence[DataSplit]) -> DataFrame:
    """The target's rows at the base snapshot, each with its file name and position in the file."""
    schema = StructType(
        [
            *to_spark_schema(table.schema.fields).fields,
            StructField(FILE_COLUMN, StringType(), False),
            StructField(ROW_COLUMN, LongType(), False),
        ]
    )
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    work = [(split, file) for split in splits for file in split.files]

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        reader = table.new_read()
        for batch in batches:
            for index in batch.column(0).to_pylist():
                split, file = work[index]
                position = 0
                for data in reader.iter_file_batches(split, file):
                    rows = data.num_rows
                    names = pa.array([file.file_name] * rows, pa.string())
                    positions = pa.array(range(position, position + rows), pa.int64())
                    position += rows
                    out = pa.RecordBatch.from_arrays([*data.columns, names, positions], arrow_schema.names)
                    yield out if out.schema.equals(arrow_schema) else out.cast(arrow_schema, safe=False)

    slots = max(1, min(len(work), spark.sparkContext.defaultParallelism * 2))
    indexes = spark.createDataFrame([(i,) for i in range(len(work))], "i int").repartition(slots)
    return indexes.mapInArrow(read, schema)


def _writer(config: SourceConfig) -> Any:
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        messages = _write_task(config, batches)
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(messages)], pa.binary())], ["message"])

    return write


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
