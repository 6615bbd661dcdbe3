"""paimon-spark: Apache Paimon tables as a PySpark (4.2+) data source and sink, batch and streaming.

Quick tour::

    import paimon_spark
    paimon_spark.register(spark)
    df = spark.read.format("paimon").option("warehouse", "/tmp/wh").load("db.t")
    df.write.format("paimon").option("warehouse", "/tmp/wh").mode("append").save("db.t")
    paimon_spark.write(df, "db.t", warehouse="/tmp/wh")                     # one writer per bucket
    paimon_spark.write_stream(counts, "db.word_count", warehouse="/tmp/wh", output_mode="update") \
        .option("checkpointLocation", "/tmp/ckpt").start()
    paimon_spark.create_temp_view(spark, "t", "db.t", warehouse="/tmp/wh")
    spark.sql("INSERT INTO t SELECT ...")
    paimon_spark.compact(spark, warehouse="/tmp/wh", table="db.t")          # executors rewrite small files
    paimon_spark.merge_into(spark, warehouse="/tmp/wh", target_table="db.t", source_table="s",
                            merge_condition="t.id = s.id", matched_upsert_setting="v = s.v")
    paimon_spark.delete_from(spark, warehouse="/tmp/wh", table="db.t", where="v IS NULL")
    paimon_spark.update(spark, warehouse="/tmp/wh", table="db.t", set={"v": "upper(v)"}, where="id < 10")
    spark.sql("SELECT * FROM paimon_compact(table => 'db.t', options => 'warehouse=/tmp/wh')")

Paimon's Spark SQL, with ``spark.sql.catalog.paimon.warehouse`` set (docs/spark/spark-sql.md)::

    paimon_spark.sql(spark, "CREATE TABLE paimon.db.t (id BIGINT, v STRING) TBLPROPERTIES ('primary-key' = 'id')")
    paimon_spark.sql(spark, "INSERT INTO paimon.db.t VALUES (1, 'a')")
    paimon_spark.sql(spark, "CALL paimon.sys.create_tag(table => 'db.t', tag => 'v1')")
    paimon_spark.sql(spark, "SELECT * FROM paimon.db.t VERSION AS OF 'v1'")
    spark.sql("SELECT * FROM paimon.db.`t$snapshots`")   # register(spark) makes spark.sql do the same
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from paimon_spark._commands import MergeCardinalityError, MergeSummary, delete_from, merge_into, update
from paimon_spark._errors import RemotePaimonError, install_excepthook, paimon_error, paimon_errors
from paimon_spark._options import (
    SOURCE_NAME,
    SourceConfig,
    conf_dynamic_options,
)
from paimon_spark._procedures import SparkRunner, compact, compact_database, register_procedures
from paimon_spark._session import register_data_source
from paimon_spark._source import PaimonDataSource
from paimon_spark._sql import (
    ProcedureNotFoundError,
    ProcedureUnsupportedError,
    SqlError,
    create_view,
    install_sql,
    spark_sql,
    sql,
    state_of,
)
from paimon_spark._types import from_spark_schema, from_spark_type, to_spark_schema, to_spark_type
from paimon_spark._version import __version__
from paimon_spark._write import SplitKeyError, commit_user_for_query, write, write_stream

__all__ = [
    "SOURCE_NAME",
    "MergeCardinalityError",
    "MergeSummary",
    "PaimonDataSource",
    "ProcedureNotFoundError",
    "ProcedureUnsupportedError",
    "RemotePaimonError",
    "SourceConfig",
    "SparkRunner",
    "SplitKeyError",
    "SqlError",
    "__version__",
    "commit_user_for_query",
    "compact",
    "compact_database",
    "conf_dynamic_options",
    "create_temp_view",
    "delete_from",
    "from_spark_schema",
    "from_spark_type",
    "merge_into",
    "paimon_error",
    "paimon_errors",
    "register",
    "register_procedures",
    "sql",
    "to_spark_schema",
    "to_spark_type",
    "update",
    "write",
    "write_stream",
]


def register(spark: SparkSession, *, sql: bool = True) -> type[PaimonDataSource]:
    """Register the ``paimon`` data source and the compaction procedures (UDTFs) with ``spark``, and (unless
    ``sql`` is false) make ``spark.sql`` run Paimon's Spark SQL as :func:`paimon_spark.sql` does.

    Replacing the session's ``sql`` method is how ``CREATE TABLE ... USING paimon``, ``CALL sys.*`` and the
    names of Paimon catalogs reach Python at all: without a JVM component Spark would create a session catalog
    entry whose options it never passes back to a Python data source, and fail on the rest.

    The session's ``paimon.*`` / ``spark.paimon.*`` conf (dynamic options), its
    ``spark.sql.sources.partitionOverwriteMode`` and its ``spark.sql.python.filterPushdown.enabled`` flag
    are captured now, because the data source runs in Python workers that cannot read the session: call
    ``register`` again after changing them.

    Unless the session sets ``spark.sql.execution.arrow.maxBytesPerBatch`` itself, ``register`` sets it
    to 2147483647: Spark then stops measuring every Arrow batch row by row, which makes writes through
    any Python data source cheaper by a third or more (batches stay bounded by ``maxRecordsPerBatch``).
    Set it yourself, before ``register``, to keep a byte cap for other Arrow UDFs of very wide rows.
    """
    source = register_data_source(spark)
    install_excepthook()
    state_of(spark).registered = True
    if sql:
        install_sql(spark)
    return source


@paimon_errors()
def create_temp_view(spark: SparkSession, view: str, table: str, **options: Any) -> None:
    """``CREATE OR REPLACE TEMPORARY VIEW <view> USING paimon OPTIONS (table ..., ...)``.

    The view serves SELECT, INSERT INTO and INSERT OVERWRITE; ``options`` are data source options
    (``warehouse``, Paimon dynamic options, storage options).

    Spark 4.3 plans a Python data source's read once per view: statements run through
    :func:`paimon_spark.sql` (or ``spark.sql`` after :func:`register`) read the view's table anew, and
    create the view again after they write to its table, so it shows their rows.
    """
    create_view(spark, spark_sql(spark), view, table, {k: str(v) for k, v in options.items()})
