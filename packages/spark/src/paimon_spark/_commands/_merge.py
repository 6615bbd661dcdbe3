"""``merge_into`` on Spark: Paimon's merge procedure, for primary-key and append tables.

The target is joined with the source by ``merge_condition`` (a full outer join when rows may be inserted);
the row-level engine (:mod:`._rowlevel`) gives each joined row its action and writes the changes. When the
merge condition equates target partition columns with source expressions (and no not-matched-by-source
action needs the rest), only the partitions the source produces are read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from paimon_core.catalog import split_identifier
from paimon_core.errors import ConfigError
from paimon_spark._commands._rowlevel import (
    SOURCE_COLUMN,
    Actions,
    MergeSummary,
    argument_text,
    open_target,
    output_columns,
    parse_setting,
    refuse_key_assignments,
    run_row_level,
    split_top_level,
)
from paimon_spark._errors import paimon_errors
from paimon_spark._read import partition_filter

__all__ = ["merge_into"]


@paimon_errors()
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
    """Merge a source into a table (Paimon's ``merge_into`` arguments).

    Args:
        target_table: ``db.t``; conditions and settings name its columns ``<target_alias>.<column>``
            (the alias defaults to the table name).
        source_table: a table or view name known to the session (qualifier: its last name part, or
            ``source_alias``), or a DataFrame (qualifier: ``source_alias``, default ``S``).
        source_sqls: statements run first, e.g. ``CREATE TEMPORARY VIEW S AS ...`` (a string splits at ``;``).
        merge_condition: the join condition, e.g. ``T.id = S.id``.
        matched_upsert_setting: ``col = expr, ...`` or ``*`` (every column from the source column of its name).
        not_matched_insert_values: ``expr, ...`` in the table's column order, or ``*``.
        matched_delete_condition: which matched rows to delete; ``TRUE`` deletes every one.
        not_matched_by_source_delete_condition: which target rows without a source row to delete; ``TRUE``
            deletes every one.
        options: dynamic table options, ``'k=v,k2=v2'`` or a mapping.

    Raises:
        ConfigError: no action, an upsert condition without its setting, an unknown column, bad values; on a
            primary-key table, a merge engine that cannot take the merge or an update of the primary key.
        MergeCardinalityError: a changed target row matched several source rows.
        CommitConflictError: a rewritten file was removed concurrently (the merge wrote nothing visible).
    """
    actions = parse_actions(
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
    config, table = open_target(
        warehouse, target_table, catalog_conf, options, "merge_into", upserts=True, deletes=actions.deletes
    )
    t_alias = target_alias or split_identifier(target_table)[1]
    if actions.unmatched_upsert is not None:  # such rows have no source row to carry their key: as in Paimon
        refuse_key_assignments(
            table, actions.unmatched_upsert[1], t_alias, "not_matched_by_source_upsert_setting"
        )
    if isinstance(source_table, DataFrame):
        source, s_alias = source_table, source_alias or "S"
    elif source_table:
        source, s_alias = spark.table(source_table), source_alias or source_table.rsplit(".", 1)[-1]
    else:
        raise ConfigError("merge_into needs source_table (a table, a view or a DataFrame)", "source_table")
    output = output_columns(table, actions, t_alias, s_alias)  # checks the settings before any work
    pruning = None
    if not actions.reads_every_target_row:
        pruning = partition_filter(table, merge_condition, t_alias, source.alias(s_alias), qualified=True)
    how = "full_outer" if actions.insert else "left_outer"
    marked = source.withColumn(SOURCE_COLUMN, F.lit(True)).alias(s_alias)
    return run_row_level(
        spark,
        table,
        config,
        actions,
        output,
        t_alias,
        pruning,
        lambda target: target.join(marked, F.expr(merge_condition), how),
        # The other upserts' settings were refused above if they assign a key column.
        computed_keys=actions.matched_upsert is not None,
    )


def parse_actions(
    matched_upsert_condition: str | None,
    matched_upsert_setting: str | None,
    matched_delete_condition: str | None,
    unmatched_upsert_condition: str | None,
    unmatched_upsert_setting: str | None,
    unmatched_delete_condition: str | None,
    insert_condition: str | None,
    insert_values: str | None,
) -> Actions:
    def upsert(condition: str | None, setting: str | None, name: str) -> tuple[str, dict[str, str]] | None:
        text = argument_text(setting)
        if text is None:
            if argument_text(condition) is not None:
                raise ConfigError(f"{name}_condition needs {name}_setting", f"{name}_setting")
            return None
        return argument_text(condition) or "TRUE", parse_setting(text, f"{name}_setting")

    values = argument_text(insert_values)
    if values is None and argument_text(insert_condition) is not None:
        raise ConfigError(
            "not_matched_insert_condition needs not_matched_insert_values", "not_matched_insert_values"
        )
    actions = Actions(
        matched_upsert=upsert(matched_upsert_condition, matched_upsert_setting, "matched_upsert"),
        matched_delete=argument_text(matched_delete_condition),
        unmatched_upsert=upsert(
            unmatched_upsert_condition, unmatched_upsert_setting, "not_matched_by_source_upsert"
        ),
        unmatched_delete=argument_text(unmatched_delete_condition),
        insert=None
        if values is None
        else (argument_text(insert_condition) or "TRUE", ["*"] if values == "*" else split_top_level(values)),
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
