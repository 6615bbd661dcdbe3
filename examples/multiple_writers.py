"""Paimon's "Multiple Writers" topology on Spark: ``python examples/multiple_writers.py [--master URL] [warehouse]``.

Paimon's dedicated-compaction page (https://paimon.apache.org/docs/master/maintenance/dedicated-compaction/)
describes several jobs writing one table at once. Writers that also compacted would rewrite the same
buckets and their compaction commits would conflict, so they are ``write-only = true`` (they only add
level-0 files, and appends never conflict) while one dedicated job does all the compaction. With the
``partial-update`` merge engine each writer fills its own columns of a row, and a null leaves a column as
it was; a reader (or a compaction) merges the halves into whole rows. Here:

* ``default.users (id BIGINT PRIMARY KEY, name, country, clicks, last_page)``, ``partial-update``,
  ``write-only = true``, 2 buckets;
* a streaming query writing ``id, name, country`` (the profile) and another writing ``id, clicks,
  last_page`` (the activity), each with its own checkpoint and commit user; both visit every id of
  ``0 .. USERS - 1`` once, in different orders, from Spark's ``rate-micro-batch`` source;
* a continuous compaction job (``paimon_spark.compact(mode="streaming")``) running alongside them;
* then both queries and the compaction job stop, a last (full) compaction runs, and the script checks that
  every row is whole, nothing is lost, the writers never compacted and no query failed.

All of it runs in one Spark application (``local[2]`` by default; the Spark cluster test passes a
standalone master): each query is its own Spark job stream, as each would be its own application in
production. The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import paimon_spark
from paimon_core import Catalog
from paimon_core.compact import CompactSummary

TABLE = "default.users"
USERS = 3000
ROWS_PER_BATCH = 150  # ids per micro-batch of each writer: 20 micro-batches each
STRIDE = 7  # the activity writer visits id (n * STRIDE) % USERS for its n-th row: every id once (7 and 3000 coprime)
COUNTRIES = ["nl", "de", "cn", "br"]

# Spark's logging at ERROR from the JVM's start (the explicit org.apache.spark level stops Spark from
# announcing the level it picks for a Python session).
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


def start_spark(master: str, scratch: str) -> SparkSession:
    conf_dir = os.path.join(scratch, "conf")  # on the JVM's classpath, where log4j looks for its settings
    os.makedirs(conf_dir, exist_ok=True)
    with open(os.path.join(conf_dir, "log4j2.properties"), "w") as f:
        f.write(LOG4J)
    os.environ["SPARK_CONF_DIR"] = conf_dir
    spark = (
        SparkSession.builder.master(master)
        .appName("paimon-multiple-writers")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "512m")
        .config("spark.cores.max", "2")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config("spark.sql.shuffle.partitions", "2")
        # Generous timeouts for Python workers' sockets and RPCs: the example also runs on loaded machines.
        .config("spark.python.authenticate.socketTimeout", "300s")
        .config("spark.network.timeout", "600s")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    paimon_spark.register(spark)
    return spark


def create_table(warehouse: str) -> None:
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("default", exist_ok=True)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("name", pa.string()),
            pa.field("country", pa.string()),
            pa.field("clicks", pa.int64()),
            pa.field("last_page", pa.string()),
        ]
    )
    options = {"merge-engine": "partial-update", "write-only": "true", "bucket": "2"}
    catalog.create_table(TABLE, schema, primary_keys=["id"], options=options)


def ids(spark: SparkSession, stride: int) -> DataFrame:
    """``USERS`` ids, ``ROWS_PER_BATCH`` per micro-batch, then nothing (later micro-batches are empty)."""
    numbers = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH).load()
    return numbers.where(F.col("value") < USERS).select(((F.col("value") * stride) % USERS).alias("id"))


def profiles(spark: SparkSession) -> DataFrame:
    # The sink takes whole rows: the other writer's columns are written as nulls, which partial-update skips.
    return ids(spark, 1).select(
        "id",
        F.concat(F.lit("user-"), F.col("id").cast("string")).alias("name"),
        F.element_at(F.array(*map(F.lit, COUNTRIES)), (F.col("id") % len(COUNTRIES) + 1).cast("int")).alias(
            "country"
        ),
        F.lit(None).cast("bigint").alias("clicks"),
        F.lit(None).cast("string").alias("last_page"),
    )


def activity(spark: SparkSession) -> DataFrame:
    return ids(spark, STRIDE).select(
        "id",
        F.lit(None).cast("string").alias("name"),
        F.lit(None).cast("string").alias("country"),
        (F.col("id") * 3).alias("clicks"),
        F.concat(F.lit("/page/"), (F.col("id") % 10).cast("string")).alias("last_page"),
    )


def start_writer(rows: DataFrame, warehouse: str, checkpoint: str) -> Any:
    return (
        rows.writeStream.format("paimon")
        .option("warehouse", warehouse)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start(TABLE)
    )


def wait_until_done(query: Any, timeout_s: float = 600) -> None:
    """Until the query has committed its last micro-batch with rows (later ones filter everything out)."""
    last_batch = USERS // ROWS_PER_BATCH - 1
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if not query.isActive:
            raise SystemExit(f"a writer failed: {query.exception()}")
        progress = query.lastProgress
        if progress is not None and progress["batchId"] >= last_batch:
            return
        time.sleep(0.5)
    raise TimeoutError(f"a writer did not finish in {timeout_s} s")


def stop_between_batches(query: Any, timeout_s: float = 120) -> None:
    """Stop ``query`` while it waits for its next trigger, so Spark has no micro-batch to cancel (a
    cancelled one is harmless, it would run again at a restart, but Spark logs the cancellation loudly)."""
    deadline = time.time() + timeout_s
    was_active = False
    while time.time() < deadline:
        status = query.status
        if not status["isTriggerActive"] and (was_active or not status["isDataAvailable"]):
            break
        was_active = status["isTriggerActive"]
        time.sleep(0.02)
    query.stop()


def check(warehouse: str, writers: dict[str, str], compactors: dict[str, str]) -> dict[str, Any]:
    """Whole rows, every id once; the writers only appended; the dedicated job compacted."""
    table = Catalog.open(warehouse).get_table(TABLE)
    rows = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    expected = [
        {
            "id": i,
            "name": f"user-{i}",
            "country": COUNTRIES[i % len(COUNTRIES)],
            "clicks": i * 3,
            "last_page": f"/page/{i % 10}",
        }
        for i in range(USERS)
    ]
    if rows != expected:
        wrong = [r for r, e in zip(rows, expected, strict=False) if r != e][:3]
        raise SystemExit(f"{len(rows)} rows (want {USERS}); first wrong ones: {wrong}")
    snapshots = table.snapshots()
    kinds: dict[str, set[str]] = {}
    for s in snapshots:
        kinds.setdefault(s.commit_user, set()).add(s.commit_kind.value)
    for name, user in writers.items():
        if kinds.get(user) != {"APPEND"}:
            raise SystemExit(
                f"the {name} writer made {kinds.get(user)} snapshots; write-only writers only append"
            )
    compacted = {
        name: [s.id for s in snapshots if s.commit_user == user] for name, user in compactors.items()
    }
    if not compacted["streaming"]:
        raise SystemExit("the streaming compaction job committed nothing")
    appends = [s.id for s in snapshots if s.commit_user in writers.values()]
    live = table.live_entries()
    return {
        "rows": len(rows),
        "append_snapshots": len(appends),
        "streaming_compactions": compacted["streaming"],
        "compactions_between_appends": sum(1 for i in compacted["streaming"] if i < max(appends)),
        "final_compactions": compacted["final"],
        "live_files": len(live),
        "levels": sorted({e.file.level for e in live}),
    }


def main(master: str, warehouse: str, scratch: str) -> dict[str, Any]:
    spark = start_spark(master, scratch)
    create_table(warehouse)
    print(f"{TABLE}: partial-update, write-only, 2 buckets, in {warehouse}")

    stop = threading.Event()
    summaries: dict[str, CompactSummary] = {}
    failures: list[BaseException] = []

    def compact_continuously() -> None:
        try:
            summaries["streaming"] = paimon_spark.compact(
                spark, warehouse=warehouse, table=TABLE, mode="streaming", stop=stop, poll_interval=1.0,
                progress=False,
            )  # fmt: skip
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    compactor = threading.Thread(target=compact_continuously, name="dedicated-compaction")
    compactor.start()
    checkpoints = os.path.join(scratch, "checkpoints")
    queries = {
        "profile": start_writer(profiles(spark), warehouse, os.path.join(checkpoints, "profile")),
        "activity": start_writer(activity(spark), warehouse, os.path.join(checkpoints, "activity")),
    }
    print(f"two streaming writers ({USERS} ids each) and a streaming compaction job started")
    for query in queries.values():
        wait_until_done(query)
    for name, query in queries.items():
        stop_between_batches(query)
        if query.exception() is not None:
            raise SystemExit(f"the {name} writer failed: {query.exception()}")
    # Give the dedicated job a round on the last appends, as it would keep running in production.
    table = Catalog.open(warehouse).get_table(TABLE)
    deadline = time.time() + 120
    while not summaries and not failures and time.time() < deadline:
        if any(s.commit_kind.value == "COMPACT" for s in table.snapshots()):
            break
        time.sleep(0.5)
    stop.set()
    compactor.join(300)
    if failures:
        raise SystemExit(f"the compaction job failed: {failures[0]!r}")
    print(
        f"writers stopped; the streaming compaction job ran {summaries['streaming'].rounds} rounds and "
        f"committed {len(summaries['streaming'].snapshots)} snapshots"
    )
    summaries["final"] = paimon_spark.compact(spark, warehouse=warehouse, table=TABLE, progress=False)
    print(f"final compaction: snapshots {summaries['final'].snapshots}")

    commit_users = {name: paimon_spark.commit_user_for_query(str(q.id)) for name, q in queries.items()}
    by_id = {s.id: s for s in Catalog.open(warehouse).get_table(TABLE).snapshots()}
    compactors = {}
    for name, summary in summaries.items():
        users = {by_id[i].commit_user for i in summary.snapshots}
        compactors[name] = users.pop() if users else ""
    result = check(warehouse, commit_users, compactors)
    spark.stop()
    print(
        f"{result['rows']} whole rows from {result['append_snapshots']} appends; the dedicated job compacted "
        f"{len(result['streaming_compactions'])} times ({result['compactions_between_appends']} while the writers "
        "ran), "
        f"no commit conflict; {result['live_files']} live files after the final compaction"
    )
    print("multiple writers OK")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("warehouse", nargs="?")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="paimon-multiple-writers-") as tmp:
        main(args.master, args.warehouse or os.path.join(tmp, "warehouse"), tmp)
