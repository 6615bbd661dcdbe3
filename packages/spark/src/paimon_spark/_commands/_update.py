"""``UPDATE`` of Paimon tables from PySpark: :func:`update`.

It is a merge of the table with itself (:func:`._rowlevel.merge_with_itself`): every row is "matched",
and ``where`` is the condition of a matched upsert. So it writes as :func:`paimon_spark.merge_into` does:
row kinds on primary-key tables (the updated rows whole, as upserts; an APPEND snapshot), copy-on-write
on append tables (the files holding changed rows rewritten; an OVERWRITE snapshot). Terms
``<partition column> = <constant>`` of ``where`` limit the read to those partitions.

The argument names follow Paimon's SQL statement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from paimon_core.errors import ConfigError
from paimon_spark._commands._rowlevel import (
    Actions,
    MergeSummary,
    argument_text,
    merge_with_itself,
    parse_setting,
)
from paimon_spark._errors import paimon_errors

__all__ = ["update"]


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
        assignments = parse_setting(set, "set") if argument_text(set) else {}
    if not assignments or "*" in assignments or not all(assignments.values()):
        raise ConfigError(f"update needs set: column = expression, ... (got {set!r})", "set")
    actions = Actions((argument_text(where) or "TRUE", assignments), None, None, None, None)
    return merge_with_itself(spark, "update", warehouse, table, actions, catalog_conf, options)
