"""Paimon's quick start, done on Spark: run ``python examples/spark_quickstart.py`` (needs Java 17).

1. A streaming job writes generated words into the Paimon table ``default.word_count`` (with a checkpoint).
2. A batch query reads the table.
3. A streaming query follows the table's changes.
4. The writing job is stopped and restarted from its checkpoint: nothing is written twice.

Everything runs on ``local[*]`` against a local warehouse (a temporary directory, or the first argument).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession

import paimon_spark
from paimon_core import Catalog

ROWS_PER_SECOND = 200


def start_writer(spark: SparkSession, warehouse: str, checkpoint: str):  # type: ignore[no-untyped-def]
    """Generated words: Spark's rate source numbers rows; each number picks a word."""
    words = spark.readStream.format("rate").option("rowsPerSecond", ROWS_PER_SECOND).load()
    words = words.selectExpr(
        "value AS id",
        "element_at(array('paimon', 'spark', 'stream', 'table', 'lake'), cast(value % 5 + 1 AS int)) AS word",
        "timestamp AS ts",
    )
    return (
        words.writeStream.format("paimon")
        .option("warehouse", warehouse)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start("default.word_count")
    )


def wait_for_rows(warehouse: str, at_least: int, timeout_s: float = 120) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        catalog = Catalog.open(warehouse)
        if catalog.table_exists("default.word_count"):
            snapshot = catalog.get_table("default.word_count").latest_snapshot()
            if snapshot is not None and snapshot.total_record_count >= at_least:
                return
        time.sleep(0.5)
    raise TimeoutError(f"the streaming job did not write {at_least} rows in {timeout_s} s")


def main(warehouse: str) -> None:
    spark = (
        SparkSession.builder.master("local[*]")
        .appName("paimon-spark-quickstart")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    paimon_spark.register(spark)
    checkpoint = os.path.join(warehouse, "_checkpoints", "word_count")

    print(f"1. streaming job writing generated words into default.word_count (warehouse {warehouse})")
    writer = start_writer(spark, warehouse, checkpoint)
    wait_for_rows(warehouse, 500)

    print("2. batch query:")
    paimon_spark.create_temp_view(spark, "word_count", "default.word_count", warehouse=warehouse)
    spark.sql("SELECT word, count(*) AS n FROM word_count GROUP BY word ORDER BY word").show()

    print("3. streaming query following the table's changes (new rows only):")
    follower = (
        spark.readStream.format("paimon")
        .option("warehouse", warehouse)
        .option("scan.mode", "latest")
        .load("default.word_count")
        .writeStream.format("memory")
        .queryName("followed")
        .trigger(processingTime="1 second")
        .start()
    )
    seen, deadline = 0, time.time() + 60
    while seen == 0 and time.time() < deadline:
        time.sleep(1)
        seen = spark.sql("SELECT count(*) FROM followed").first()[0]
    print(f"   the follower saw {seen} new rows so far")

    print("4. stop the writing job, then restart it from its checkpoint")
    writer.stop()
    writer = start_writer(spark, warehouse, checkpoint)
    latest = Catalog.open(warehouse).get_table("default.word_count").latest_snapshot()
    wait_for_rows(warehouse, (latest.total_record_count if latest else 0) + 300)
    writer.stop()
    follower.stop()

    paimon_spark.create_temp_view(spark, "word_count", "default.word_count", warehouse=warehouse)
    total, distinct = spark.sql("SELECT count(*), count(DISTINCT id) FROM word_count").first()
    print(f"   rows: {total}, distinct ids: {distinct}")
    if total != distinct:
        raise SystemExit("duplicates after the restart!")
    ids = spark.sql("SELECT min(id), max(id) FROM word_count").first()
    if ids[1] - ids[0] + 1 != total:
        raise SystemExit("rows were lost across the restart!")
    print("   no duplicates and no gaps across the restart")
    snapshots = Catalog.open(warehouse).get_table("default.word_count").snapshots()
    print(
        f"   {len(snapshots)} snapshots, committed by {len({s.commit_user for s in snapshots})} commit user(s)"
    )
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory(prefix="paimon-spark-quickstart-") as tmp:
            main(os.path.join(tmp, "warehouse"))
