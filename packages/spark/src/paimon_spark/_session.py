"""Registering the data source and the procedure UDTFs with a session, the session's conf captured."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from paimon_spark._options import SESSION_TIME_ZONE_CONF, SPARK_OVERWRITE_MODE_CONF
from paimon_spark._procedures import register_procedures
from paimon_spark._source import PaimonDataSource

__all__ = ["register_data_source"]

_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
# Below INT_MAX, Spark re-measures the Arrow batch it is filling after every row it sends to a Python worker;
# for a write (the rows travel as one struct column) that walk over the struct's children costs more JVM
# time than converting the rows (JFR on 5M rows: 3.4-6.3 CPU-s with the check, 1.8 without). INT_MAX turns
# the check off; batches stay capped at spark.sql.execution.arrow.maxRecordsPerBatch rows.
_ARROW_BATCH_BYTES_CONF = "spark.sql.execution.arrow.maxBytesPerBatch"
_NO_BYTE_CHECK = str(2**31 - 1)


def _local_workers_run_this_python(spark: SparkSession, conf: dict[str, str]) -> None:
    """Make a local session's Python workers run this interpreter when nothing chose one.

    PySpark starts workers with ``$PYSPARK_PYTHON``, else the first ``python3`` on ``PATH``: outside an
    activated virtualenv that is the system's, which has no paimon_spark (``ModuleNotFoundError`` inside a
    task). A local session's workers run on this machine, so this interpreter, which has the packages, is the
    one to use. The data source and the procedure UDTFs are registered after this, and take it with them.
    A cluster's workers run elsewhere: there ``PYSPARK_PYTHON`` (or ``spark.pyspark.python``) is the user's.
    """
    context = getattr(spark, "_sc", None)  # a Spark Connect client has none: its server starts the workers
    if context is None or os.environ.get("PYSPARK_PYTHON") or conf.get("spark.pyspark.python"):
        return
    if str(context.master).startswith("local") and context.pythonExec == "python3":
        context.pythonExec = sys.executable


def register_data_source(spark: SparkSession) -> type[PaimonDataSource]:
    """Register the ``paimon`` data source (a subclass carrying the session's conf) and the procedure UDTFs
    with ``spark``: what :func:`paimon_spark.register` does before it installs the SQL (see its docs)."""
    conf: dict[str, str] = {str(k): str(v) for k, v in spark.conf.getAll.items()}
    _local_workers_run_this_python(spark, conf)
    if _ARROW_BATCH_BYTES_CONF not in conf:
        spark.conf.set(_ARROW_BATCH_BYTES_CONF, _NO_BYTE_CHECK)
    captured = {
        k: v
        for k, v in conf.items()
        if k.startswith(("paimon.", "spark.paimon."))
        or k in (SPARK_OVERWRITE_MODE_CONF, SESSION_TIME_ZONE_CONF)
    }
    pushdown = conf.get(_PUSHDOWN_CONF, "false").strip().lower() == "true"
    # A class built here is pickled by value (it is not importable), so the captured values travel along.
    source = type(
        "PaimonDataSource",
        (PaimonDataSource,),
        {
            "session_conf": captured,
            "filter_pushdown": pushdown,
            "__module__": "paimon_spark",
            "__qualname__": "register.<locals>.PaimonDataSource",
        },
    )
    spark.dataSource.register(source)
    register_procedures(spark)
    return source
