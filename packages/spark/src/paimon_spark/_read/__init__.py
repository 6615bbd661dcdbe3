"""Reading Paimon tables on Spark: the data source's batch and streaming readers, Spark's pushed filters
as Paimon predicates, and the partition pruning of row-level commands."""

from __future__ import annotations

from paimon_spark._read._batch import PaimonBatchReader, PaimonPushdownReader, spark_schema
from paimon_spark._read._prune import is_column, partition_filter, top_level_chars
from paimon_spark._read._stream import PaimonStreamReader

__all__ = [
    "PaimonBatchReader",
    "PaimonPushdownReader",
    "PaimonStreamReader",
    "is_column",
    "partition_filter",
    "spark_schema",
    "top_level_chars",
]
