"""``DELETE`` of Paimon tables from PySpark: :func:`delete_from`.

It is a merge of the table with itself (:func:`._rowlevel.merge_with_itself`): every row is "matched",
and ``where`` is the condition of a matched delete. So it writes as :func:`paimon_spark.merge_into` does:
row kinds on primary-key tables (``-D`` records of the deleted rows; an APPEND snapshot), copy-on-write
on append tables (the files holding changed rows rewritten; an OVERWRITE snapshot). Terms
``<partition column> = <constant>`` of ``where`` limit the read to those partitions.

The argument names follow Paimon's Flink ``delete`` action (``--where``) and its SQL statement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from paimon_core.errors import ConfigError
from paimon_spark._commands._rowlevel import Actions, MergeSummary, argument_text, merge_with_itself
from paimon_spark._errors import paimon_errors

__all__ = ["delete_from"]


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
    condition = argument_text(where)
    if condition is None:
        raise ConfigError(
            "delete_from needs where, a Spark SQL condition ('TRUE' deletes every row)", "where"
        )
    actions = Actions(None, condition, None, None, None)
    return merge_with_itself(spark, "delete_from", warehouse, table, actions, catalog_conf, options)
