"""Driver programs for the standalone-cluster tests, run as separate processes (one SparkContext each).

python cluster_driver.py MASTER WAREHOUSE write ROWS PARTITIONS SLEEP_PER_ROW_MS
python cluster_driver.py MASTER WAREHOUSE read
python cluster_driver.py MASTER WAREHOUSE stream CHECKPOINT TRIGGER   (TRIGGER: once | continuous)
python cluster_driver.py MASTER WAREHOUSE pk-batch ROUNDS   (sums into primary-key tables, both ways)
python cluster_driver.py MASTER WAREHOUSE pk-stream CHECKPOINT   (word count in update mode, availableNow)

Several commands joined by ``then`` run one after another in one application (``write 4000 8 3 then read``):
each driver costs a driver JVM and an executor JVM per worker, so a test starts no more of them than it needs.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def session(master: str):  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    import paimon_spark

    spark = (
        SparkSession.builder.master(master)
        .appName("paimon-cluster-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.task.maxFailures", "4")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config("spark.sql.shuffle.partitions", "2")
        # Timeouts a loaded 2-core machine meets: Python workers' and Python sockets' connect and
        # authentication (15 s by default), RPCs and heartbeats (120 s); as packages/spark/tests/conftest.py.
        .config("spark.python.authenticate.socketTimeout", "300s")
        .config("spark.network.timeout", "600s")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    paimon_spark.register(spark)
    return spark


def write(spark, warehouse: str, rows: int, partitions: int, sleep_ms: float) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql.functions import udf

    def slow(x):  # type: ignore[no-untyped-def]
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        return x

    slow_udf = udf(slow, "long")
    df = spark.range(0, rows, numPartitions=partitions).select(slow_udf("id").alias("id"))
    df = df.selectExpr("id", "cast(id % 4 as int) as p", "concat('v', cast(id as string)) as v")
    df.write.format("paimon").option("warehouse", warehouse).option("partition-keys", "p").mode(
        "append"
    ).save("db.t")


def read(spark, warehouse: str) -> None:  # type: ignore[no-untyped-def]
    df = spark.read.format("paimon").option("warehouse", warehouse).load("db.t")
    row = df.selectExpr("count(*) AS n", "count(DISTINCT id) AS d", "sum(id) AS s").first()
    print(
        json.dumps({"count": row.n, "distinct": row.d, "sum": row.s, "partitions": df.rdd.getNumPartitions()})
    )


def stream(spark, warehouse: str, checkpoint: str, trigger: str) -> None:  # type: ignore[no-untyped-def]
    source = (
        spark.readStream.format("paimon")
        .option("warehouse", warehouse)
        .option("read.stream.maxFilesPerTrigger", "2")
        .load("db.src")
    )
    writer = (
        source.writeStream.format("paimon")
        .option("warehouse", warehouse)
        .option("checkpointLocation", checkpoint)
    )
    if trigger == "once":
        query = writer.trigger(availableNow=True).start("db.dst")
        query.awaitTermination()
    else:
        query = writer.trigger(processingTime="500 milliseconds").start("db.dst")
        print("started", flush=True)
        query.awaitTermination()


def pk_batch(spark, warehouse: str, rounds: int) -> None:  # type: ignore[no-untyped-def]
    """Aggregation tables (sum per key) written by 8 tasks over both executors, every bucket by several of
    them through the data source, by one through paimon_spark.write."""
    import paimon_spark

    for _ in range(rounds):
        df = spark.range(0, 4000, numPartitions=8).selectExpr("id % 50 AS k", "CAST(1 AS BIGINT) AS v")
        df.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.sums")
        paimon_spark.write(df, "db.sums_helper", warehouse=warehouse)


def pk_stream(spark, warehouse: str, checkpoint: str) -> None:  # type: ignore[no-untyped-def]
    import paimon_spark

    words = spark.readStream.format("paimon").option("warehouse", warehouse).load("db.words")
    counts = words.groupBy("word").count().withColumnRenamed("count", "n")
    writer = paimon_spark.write_stream(
        counts, "db.word_count", warehouse=warehouse, output_mode="update", options={"primary-key": "word"}
    )
    writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start().awaitTermination()


def run(spark, warehouse: str, command: str, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    if command == "write":
        write(spark, warehouse, int(args[0]), int(args[1]), float(args[2]))
    elif command == "read":
        read(spark, warehouse)
    elif command == "pk-batch":
        pk_batch(spark, warehouse, int(args[0]))
    elif command == "pk-stream":
        pk_stream(spark, warehouse, args[0])
    else:
        stream(spark, warehouse, args[0], args[1])


def commands(words: list[str]) -> list[tuple[str, list[str]]]:
    """``write 4000 8 3 then read`` -> ``[("write", ["4000", "8", "3"]), ("read", [])]``."""
    parts: list[list[str]] = [[]]
    for word in words:
        if word == "then":
            parts.append([])
        else:
            parts[-1].append(word)
    return [(part[0], part[1:]) for part in parts]


def main() -> None:
    master, warehouse, *rest = sys.argv[1:]
    spark = session(master)
    for command, args in commands(rest):
        run(spark, warehouse, command, args)
    spark.stop()


if __name__ == "__main__":
    main()
