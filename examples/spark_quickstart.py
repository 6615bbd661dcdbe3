"""Paimon's quick start, done on Spark: run ``./dev quickstart`` or ``python examples/spark_quickstart.py``.

Paimon's quick start (https://paimon.apache.org/docs/master/flink/quick-start/) counts random words into a
primary-key table and watches the table from two sides. The same here, with Spark and Java 17:

1. ``default.word_count (word STRING PRIMARY KEY, cnt BIGINT)`` is created with ``changelog-producer =
   lookup``; a streaming job upserts ``SELECT word, count(*) ... GROUP BY word`` into it (update mode,
   with a checkpoint).
2. A batch query reads the table twice: the counts grow between the runs.
3. A streaming query follows the table's changelog (``-U``/``+U`` pairs under a ``rowkind`` column) and
   keeps Paimon's statistic up to date: how many words have a count in each interval of ``INTERVAL``.
4. The word count is stopped and restarted from its checkpoint. At the end the table holds every
   generated word exactly once (nothing lost, nothing counted twice) and the followed statistic equals the
   one a batch query computes.

Everything runs on ``local[2]`` against a local warehouse (a temporary directory, or the first argument).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import paimon_spark
from paimon_core import Catalog
from paimon_core.table import Table

TABLE = "default.word_count"
ROWS_PER_BATCH = 400  # generated words per micro-batch of the word count
INTERVAL = 100  # Paimon's statistic: words per interval of counts (Paimon's quick start uses 10000)

# Spark's logging at ERROR from the JVM's start, so startup warnings do not drown the tour. The explicit
# org.apache.spark level stops Spark from announcing the level it picks for a Python session.
LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
logger.spark.name = org.apache.spark
logger.spark.level = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""
# The JDK's own notice, printed by every Spark 4 JVM (its launcher adds jdk.incubator.vector); no option
# turns it off, so the JVM's stderr is passed through a filter that drops this one line.
JDK_NOTICE = b"WARNING: Using incubator modules:"


def filter_jvm_stderr() -> int:
    """Point stderr at a pipe whose lines a thread copies to the real stderr, except :data:`JDK_NOTICE`.

    Returns the real stderr's descriptor: give it back to Python with ``os.dup2(real, 2)`` once the JVM (which
    keeps the pipe) has started."""
    read_end, write_end = os.pipe()
    real = os.dup(2)

    def copy() -> None:
        with os.fdopen(read_end, "rb") as pipe:
            for line in pipe:
                if not line.startswith(JDK_NOTICE):
                    os.write(real, line)

    threading.Thread(target=copy, name="jvm-stderr", daemon=True).start()
    os.dup2(write_end, 2)
    os.close(write_end)
    return real


def start_spark(scratch: str) -> SparkSession:
    conf_dir = os.path.join(scratch, "conf")  # on the JVM's classpath, where log4j looks for its settings
    os.makedirs(conf_dir, exist_ok=True)
    with open(os.path.join(conf_dir, "log4j2.properties"), "w") as f:
        f.write(LOG4J)
    os.environ["SPARK_CONF_DIR"] = conf_dir
    real_stderr = filter_jvm_stderr()
    try:
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("paimon-spark-quickstart")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            # Generous timeouts for Python workers' sockets and RPCs: the tour also runs on loaded machines.
            .config("spark.python.authenticate.socketTimeout", "300s")
            .config("spark.network.timeout", "600s")
            .getOrCreate()
        )
    finally:
        os.dup2(real_stderr, 2)  # Python's own errors go straight to the terminal again
    spark.sparkContext.setLogLevel("ERROR")
    paimon_spark.register(spark)
    return spark


def create_table(warehouse: str) -> Table:
    """Paimon's ``CREATE TABLE word_count (word STRING PRIMARY KEY NOT ENFORCED, cnt BIGINT)``.

    ``changelog-producer = lookup``: each commit also writes the table's changelog, an update as the old
    row (``-U``) and the new one (``+U``). A follower needs the old count to take the word out of its old
    interval; with the default producer (``none``) an update would arrive as a bare ``+I``.
    """
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("default", exist_ok=True)
    schema = pa.schema([pa.field("word", pa.string(), nullable=False), pa.field("cnt", pa.int64())])
    return catalog.create_table(
        TABLE, schema, primary_keys=["word"], options={"bucket": "2", "changelog-producer": "lookup"}
    )


def start_word_count(spark: SparkSession, warehouse: str, checkpoint: str) -> Any:
    """Random one-letter words, like the quick start's datagen table (``fields.word.length = 1``), counted.

    Spark's ``rate-micro-batch`` source numbers its rows: micro-batch ``b`` holds the rows
    ``b * ROWS_PER_BATCH`` to ``(b + 1) * ROWS_PER_BATCH - 1``. The word is the first hex digit of the
    number's SHA-1. ``paimon_spark.write_stream`` writes in ``update`` mode (Spark refuses it for Python
    data sources), one writer per bucket, and commits micro-batch ``b`` with commit identifier ``b``.
    """
    numbers = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH).load()
    words = numbers.select(F.substring(F.sha1(F.col("value").cast("string")), 1, 1).alias("word"))
    counts = words.groupBy("word").agg(F.count("*").alias("cnt"))
    writer = paimon_spark.write_stream(counts, TABLE, warehouse=warehouse, output_mode="update")
    return writer.option("checkpointLocation", checkpoint).trigger(processingTime="2 seconds").start()


def read_table(spark: SparkSession, warehouse: str) -> DataFrame:
    # A new DataFrame each time: Spark plans a read of a Python data source once.
    return spark.read.format("paimon").option("warehouse", warehouse).load(TABLE)


def show_counts(spark: SparkSession, warehouse: str) -> int:
    rows = read_table(spark, warehouse).orderBy("word").collect()
    total = sum(r.cnt for r in rows)
    print(f"   {len(rows)} words, {total} counted: " + " ".join(f"{r.word}={r.cnt}" for r in rows))
    return total


def histogram(spark: SparkSession, warehouse: str) -> dict[int, int]:
    """The statistic in batch: ``SELECT cnt / INTERVAL, count(*) FROM word_count GROUP BY 1``."""
    rows = read_table(spark, warehouse).groupBy(F.floor(F.col("cnt") / INTERVAL).alias("i")).count()
    return {r["i"]: r["count"] for r in rows.collect()}


class IntervalTally:
    """Paimon's streaming ``SELECT cnt / INTERVAL AS interval, count(*) ... GROUP BY interval``, on Spark.

    Each change of the table moves a word between intervals: ``+I``/``+U`` add it to the interval of its
    new count, ``-U``/``-D`` take it out of the interval of its old count. ``foreachBatch`` runs on the
    driver, so the tally lives here; a micro-batch Spark runs again after a restart is not counted twice.
    """

    def __init__(self) -> None:
        self.words: Counter[int] = Counter()
        self.batches: set[int] = set()

    def __call__(self, changes: DataFrame, batch_id: int) -> None:
        if batch_id in self.batches:
            return
        sign = F.when(F.col("rowkind").isin("+I", "+U"), 1).otherwise(-1)
        moves = changes.groupBy(F.floor(F.col("cnt") / INTERVAL).alias("i")).agg(F.sum(sign).alias("n"))
        for row in moves.collect():
            self.words[row["i"]] += row["n"]
        self.words = Counter({i: n for i, n in self.words.items() if n})
        self.batches.add(batch_id)

    def describe(self) -> str:
        return ", ".join(
            f"[{i * INTERVAL}, {(i + 1) * INTERVAL}): {n}" for i, n in sorted(self.words.items())
        )


def start_follower(
    spark: SparkSession, warehouse: str, checkpoint: str, tally: IntervalTally, **trigger: Any
) -> Any:
    changes = (
        spark.readStream.format("paimon")
        .option("warehouse", warehouse)
        .option("read.changelog", "true")  # or load("default.word_count$audit_log")
        .load(TABLE)
    )
    return (
        changes.writeStream.foreachBatch(tally)
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .start()
    )


def latest_snapshot_id(warehouse: str) -> int:
    latest = Catalog.open(warehouse).get_table(TABLE).latest_snapshot()
    return latest.id if latest is not None else 0


def wait_for_appends(writer: Any, warehouse: str, after: int, count: int = 1, timeout_s: float = 180) -> None:
    """Wait until the word count has committed ``count`` micro-batches after snapshot ``after``.

    Appends are counted, not snapshots: with the lookup changelog producer a micro-batch's commit may be
    followed by a compaction's snapshot.
    """
    table = Catalog.open(warehouse).get_table(TABLE)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if not writer.isActive:
            raise SystemExit(f"the word count stopped: {writer.exception()}")
        appends = [s for s in table.snapshots() if s.id > after and s.commit_kind.value == "APPEND"]
        if len(appends) >= count:
            return
        time.sleep(0.5)
    raise TimeoutError(f"fewer than {count} new commits to {TABLE} in {timeout_s} s")


def stop_between_batches(query: Any, timeout_s: float = 120) -> None:
    """Stop ``query`` while it waits for its next trigger: right after a micro-batch, or when idle.

    Stopped in the middle of a ``foreachBatch`` call, the query stops as well and nothing is lost (the batch
    runs again at the restart and is recognised as committed), but Spark 4.3 prints a long Java trace: its
    check of the interrupted Python call's error message overflows the query thread's stack.
    """
    deadline = time.time() + timeout_s
    was_active = False
    while time.time() < deadline:
        status = query.status
        if not status["isTriggerActive"] and (was_active or not status["isDataAvailable"]):
            break
        was_active = status["isTriggerActive"]
        time.sleep(0.02)
    query.stop()


def rows_generated(warehouse: str) -> int:
    """The rows the word count consumed, from the table alone: its last committed micro-batch ``b`` means
    rows ``0 .. (b + 1) * ROWS_PER_BATCH - 1`` are in (the data and the identifier commit together)."""
    snapshots = Catalog.open(warehouse).get_table(TABLE).snapshots()
    last = max(s.commit_identifier for s in snapshots if s.commit_kind.value == "APPEND")
    return (last + 1) * ROWS_PER_BATCH


def main(warehouse: str, scratch: str) -> None:
    spark = start_spark(scratch)
    checkpoints = os.path.join(scratch, "checkpoints")

    print(f"1. {TABLE} (word STRING PRIMARY KEY, cnt BIGINT, changelog-producer = lookup) in {warehouse}")
    create_table(warehouse)
    print("   streaming: rate-micro-batch -> one-letter words -> GROUP BY word -> update mode into the table")
    writer = start_word_count(spark, warehouse, os.path.join(checkpoints, "word_count"))
    wait_for_appends(writer, warehouse, after=0, count=2)

    print("2. batch query, twice:")
    first = show_counts(spark, warehouse)
    # Counted after the read, a snapshot is one the read may have seen: the next append is one it did not.
    wait_for_appends(writer, warehouse, after=latest_snapshot_id(warehouse))
    second = show_counts(spark, warehouse)
    print(f"   the counts grew by {second - first} between the two runs")
    if second <= first:
        raise SystemExit(
            f"the second batch query did not see the word count's new commit: {first} -> {second}"
        )

    print(f"3. streaming query over the changelog: words per interval of {INTERVAL} counts")
    tally = IntervalTally()
    follower_checkpoint = os.path.join(checkpoints, "interval_tally")
    follower = start_follower(spark, warehouse, follower_checkpoint, tally, processingTime="1 second")
    deadline = time.time() + 180
    for _ in range(3):
        applied = len(tally.batches)
        while len(tally.batches) == applied and follower.isActive and time.time() < deadline:
            time.sleep(0.2)
        if not follower.isActive:
            # On a loaded machine a query can fail to start (Spark gives its Python source worker a fixed
            # 10 s to connect back); the restart from its checkpoint in step 4 catches up with everything.
            reason = str(follower.exception()).splitlines()[0]
            print(f"   the follower stopped ({reason}); step 4 restarts it from its checkpoint")
            break
        print(f"   after {len(tally.batches)} micro-batches: {tally.describe()}")

    print("4. stop the word count, then restart it from its checkpoint")
    stop_between_batches(writer)
    stopped_at = rows_generated(warehouse)
    print(f"   stopped after {stopped_at} words")
    writer = start_word_count(spark, warehouse, os.path.join(checkpoints, "word_count"))
    wait_for_appends(writer, warehouse, after=latest_snapshot_id(warehouse), count=2)
    stop_between_batches(writer)
    stop_between_batches(follower)
    # The follower catches up from its checkpoint with whatever the table got after it stopped.
    start_follower(spark, warehouse, follower_checkpoint, tally, availableNow=True).awaitTermination()

    generated = rows_generated(warehouse)
    total = show_counts(spark, warehouse)
    print(f"   {generated} words generated ({generated - stopped_at} after the restart), {total} counted")
    if total != generated:
        raise SystemExit(f"words lost or counted twice: {total} counted, {generated} generated")
    batch = histogram(spark, warehouse)
    print(f"   followed statistic: {tally.describe()}")
    if dict(tally.words) != batch:
        raise SystemExit(f"the followed statistic {dict(tally.words)} differs from the table's {batch}")
    print("   equal to the batch query's: no word lost or counted twice across the restart")
    snapshots = Catalog.open(warehouse).get_table(TABLE).snapshots()
    users = {s.commit_user for s in snapshots}
    print(f"   {len(snapshots)} snapshots by {len(users)} commit user (one query across the restart)")
    spark.stop()
    print("spark quickstart OK")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="paimon-spark-quickstart-") as tmp:
        main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tmp, "warehouse"), tmp)
