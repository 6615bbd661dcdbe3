"""``DELETE`` and ``UPDATE`` of Paimon tables from PySpark: :func:`delete_from` and :func:`update`.

Both are merges of the table with itself: every row is "matched", and the ``where`` condition is the
condition of a matched delete or a matched upsert. So they write as :func:`paimon_spark.merge_into` does:
row kinds on primary-key tables (``-D`` records of the deleted rows, the updated rows whole as upserts,
an APPEND snapshot), copy-on-write on append tables (the files holding changed rows rewritten, an
OVERWRITE snapshot). Terms ``<partition column> = <constant>`` of ``where`` limit the read to those
partitions.

The argument names follow Paimon's Flink ``delete`` action (``--where``) and its SQL statements.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from paimon_core.catalog import split_identifier
from paimon_core.errors import ConfigError
from paimon_spark._errors import paimon_errors
from paimon_spark._merge import (
    ACTION_COLUMN,
    SOURCE_COLUMN,
    MergeSummary,
    _action_column,
    _Actions,
    _output_columns,
    _parse_setting,
    _Plan,
    _text,
    execute,
    open_target,
    read_target,
    refuse_key_assignments,
)
from paimon_spark._prune import partition_filter

__all__ = ["delete_from", "update"]


@paimon_errors()
def delete_from(
    spark: SparkSession,
    *,
    warehouse: str,
    table: str,
    where: str,
    catalog_conf: Mapping[str, Any] | None = None,
    options: str | Mapping[str, Any] | None = None,
) -> MergeSummary:
    """``DELETE FROM <table> WHERE <where>``.

    Args:
        table: ``db.t``; ``where`` names its columns bare or as ``t.<column>``.
        where: a Spark SQL condition over the table's columns; ``TRUE`` deletes every row.
        catalog_conf: storage options of the warehouse.
        options: dynamic table options, ``'k=v,k2=v2'`` or a mapping.

    Returns:
        The summary: ``deleted`` rows, the new snapshot (None when no row matched).

    Raises:
        ConfigError: no condition; a primary-key table whose merge engine refuses deletes (``first-row``,
            ``partial-update`` / ``aggregation`` without their remove-record options, ``ignore-delete``).
        CommitConflictError: an append table's rewritten file was removed concurrently.
    """
    condition = _text(where)
    if condition is None:
        raise ConfigError(
            "delete_from needs where, a Spark SQL condition ('TRUE' deletes every row)", "where"
        )
    actions = _Actions(None, condition, None, None, None)
    return _run(spark, "delete_from", warehouse, table, actions, catalog_conf, options)


@paimon_errors()
def update(
    spark: SparkSession,
    *,
    warehouse: str,
    table: str,
    set: str | Mapping[str, str],
    where: str | None = None,
    catalog_conf: Mapping[str, Any] | None = None,
    options: str | Mapping[str, Any] | None = None,
) -> MergeSummary:
    """``UPDATE <table> SET <set> [WHERE <where>]``.

    Args:
        table: ``db.t``; expressions name its columns bare or as ``t.<column>``.
        set: ``{column: expression}`` or ``"col = expr, ..."`` (Spark SQL expressions over the row).
        where: a Spark SQL condition; every row when None.
        catalog_conf: as for :func:`delete_from`.
        options: as for :func:`delete_from`.

    Returns:
        The summary: ``updated`` rows, the new snapshot (None when no row matched).

    Raises:
        ConfigError: an empty or malformed ``set``, an unknown column; on a primary-key table an assignment
            to a primary-key (or partition) column, or a merge engine other than ``deduplicate`` and
            ``partial-update`` (a partial-update table keeps a column's value where the new one is null).
        CommitConflictError: an append table's rewritten file was removed concurrently.
    """
    if isinstance(set, Mapping):
        assignments = {str(k).strip().strip("`"): str(v).strip() for k, v in set.items()}
    else:
        assignments = _parse_setting(set, "set") if _text(set) else {}
    if not assignments or "*" in assignments or not all(assignments.values()):
        raise ConfigError(f"update needs set: column = expression, ... (got {set!r})", "set")
    actions = _Actions((_text(where) or "TRUE", assignments), None, None, None, None)
    return _run(spark, "update", warehouse, table, actions, catalog_conf, options)


def _run(
    spark: SparkSession,
    operation: str,
    warehouse: str,
    identifier: str,
    actions: _Actions,
    catalog_conf: Mapping[str, Any] | None,
    options: str | Mapping[str, Any] | None,
) -> MergeSummary:
    """The merge of the table with itself: every row is matched once, by itself."""
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
    output = _output_columns(table, actions, alias, alias, setting="set")
    condition = upsert[0] if upsert is not None else actions.matched_delete
    assert condition is not None
    no_columns = spark.range(1).select()  # a constant is all a delete or update equates a partition to
    pruning = partition_filter(table, condition, alias, no_columns, qualified=False)
    base_id, target = read_target(spark, table, pruning)
    joined = target.alias(alias).withColumn(SOURCE_COLUMN, F.lit(True))
    joined = joined.withColumn(ACTION_COLUMN, _action_column(actions)).persist()
    try:
        return execute(_Plan(table, config, base_id, joined, output, alias, several_matches_possible=False))
    finally:
        joined.unpersist()
