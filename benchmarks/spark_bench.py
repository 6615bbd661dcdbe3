"""Spark benchmark: writing and reading rows through the ``paimon`` source against Spark's own Parquet.

One run, one ``local[2]`` SparkSession, the same generated DataFrame for every format (int64 id, string
category, float64 value, timestamp, string payload), zstd at level 3 everywhere (parquet-java's default level;
Paimon's ``file.compression.zstd-level`` is set to match). Three ways through Spark, measured in the same run:

* Spark's Parquet (JVM reader and writer): the target's baseline;
* ``paimon``: this project's source and sink (Python Data Source API, Arrow batches, one commit per job);
* ``raw pyarrow source``: the thinnest Python data source there is, one Parquet file per task written and read
  with plain ``pyarrow.parquet``: what the Python Data Source API itself costs, with no table format at all.

``paimon_spark.register`` lifts Spark's per-row Arrow batch byte check
(``spark.sql.execution.arrow.maxBytesPerBatch``), which the Python ways share; one more write, ``paimon``
with Spark's default of that setting, shows what the check costs.

Every measurement writes to a fresh location; reads are materialised with Spark's ``noop`` sink, which
consumes every column of every row. Each operation is warmed up once, then the ways are measured in
interleaved rounds (so a busy moment of the machine hits them alike), best of ``--repeat`` rounds.
Targets: paimon write >= 0.9x and read >= 0.75x of Parquet's throughput.

Run it with ``./dev nox -s bench_spark`` or ``python benchmarks/spark_bench.py`` next to ``paimon-spark``.
Results go to stdout and to ``results-spark.md`` / ``results-spark.json`` in ``--output-dir``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from harness import load_average, write_results

WRITE_TARGET = 0.9
READ_TARGET = 0.75
ZSTD_LEVEL = "3"
RAW_SOURCE = "raw_pyarrow_bench"
ARROW_BYTES_CONF = "spark.sql.execution.arrow.maxBytesPerBatch"
SPARK_DEFAULT_ARROW_BYTES = "64m"


def session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import paimon_spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("paimon-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.compression.codec", "zstd")
        .config("spark.hadoop.parquet.compression.codec.zstd.level", ZSTD_LEVEL)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    paimon_spark.register(spark)
    spark.dataSource.register(raw_pyarrow_source())
    return spark


def raw_pyarrow_source() -> type:
    """The baseline data source: each task writes its batches to one Parquet file; each file is one split."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        InputPartition,
        WriterCommitMessage,
    )
    from pyspark.sql.pandas.types import to_arrow_schema

    class FilePartition(InputPartition):
        def __init__(self, index: int, path: str) -> None:
            super().__init__(index)
            self.path = path

    class Writer(DataSourceArrowWriter):
        def __init__(self, path: str) -> None:
            self.path = path

        def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
            from pyspark import TaskContext

            context = TaskContext.get()
            name = f"part-{context.partitionId() if context else 0}.parquet"
            writer = None
            for batch in iterator:
                if writer is None:
                    writer = pq.ParquetWriter(
                        os.path.join(self.path, name),
                        batch.schema,
                        compression="zstd",
                        compression_level=int(ZSTD_LEVEL),
                    )
                writer.write_batch(batch, row_group_size=1 << 20)
            if writer is not None:
                writer.close()
            return WriterCommitMessage()

    class Reader(DataSourceReader):
        def __init__(self, path: str, schema: Any) -> None:
            self.path = path
            self.target = to_arrow_schema(schema, timezone="UTC")

        def partitions(self) -> list[InputPartition]:
            names = sorted(n for n in os.listdir(self.path) if n.endswith(".parquet"))
            return [FilePartition(i, os.path.join(self.path, n)) for i, n in enumerate(names)]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            assert isinstance(partition, FilePartition)
            for batch in pq.ParquetFile(partition.path).iter_batches(batch_size=64 * 1024):
                yield batch if batch.schema.equals(self.target) else batch.cast(self.target)

    class RawPyarrowSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return RAW_SOURCE

        def schema(self) -> str:
            return "id bigint, category string, value double, ts timestamp, payload string"

        def writer(self, schema: Any, overwrite: bool) -> Writer:
            os.makedirs(self.options["path"], exist_ok=True)
            return Writer(self.options["path"])

        def reader(self, schema: Any) -> Reader:
            return Reader(self.options["path"], schema)

    return RawPyarrowSource


def data(spark: Any, rows: int, partitions: int) -> Any:
    return spark.range(0, rows, numPartitions=partitions).selectExpr(
        "id",
        "concat('cat-', cast(id % 100 as string)) AS category",
        "cast(id as double) * 0.5 AS value",
        "timestamp_seconds(1700000000 + id) AS ts",
        "sha2(cast(id % 100000 as string), 256) AS payload",
    )


def interleaved_best(rounds: int, actions: dict[str, Callable[[int], None]]) -> dict[str, float]:
    """Warm every action up once, then run them in turn for ``rounds`` rounds; the best time of each."""
    for action in actions.values():
        action(-1)
    best = {name: float("inf") for name in actions}
    for attempt in range(rounds):
        for name, action in actions.items():
            started = time.perf_counter()
            action(attempt)
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def with_conf(spark: Any, key: str, value: str, action: Callable[[], None]) -> None:
    """Run ``action`` with one session setting changed, then put the old value back."""
    previous = spark.conf.get(key)
    spark.conf.set(key, value)
    try:
        action()
    finally:
        spark.conf.set(key, previous)


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and f.suffix == ".parquet")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--partitions", type=int, default=4, help="Spark partitions (= files written)")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds; the best of each is kept")
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent)
    args = parser.parse_args()

    spark = session()
    root = Path(tempfile.mkdtemp(prefix="paimon-spark-bench-"))
    try:
        frame = data(spark, args.rows, args.partitions)
        warehouse = str(root / "wh")
        options = {
            "warehouse": warehouse,
            "file.compression": "zstd",
            "file.compression.zstd-level": ZSTD_LEVEL,
        }

        def location(kind: str, attempt: int) -> str:
            return str(root / f"{kind}{attempt if attempt >= 0 else 'warm'}")

        writes = {
            "parquet": lambda i: frame.write.mode("overwrite").parquet(location("pq", i)),
            "raw": lambda i: frame.write.format(RAW_SOURCE).mode("append").save(location("raw", i)),
            "paimon": lambda i: (
                frame.write.format("paimon")
                .options(**options)
                .mode("append")
                .save(f"bench.t{i if i >= 0 else 'warm'}")
            ),
            "paimon_byte_check": lambda i: with_conf(
                spark,
                ARROW_BYTES_CONF,
                SPARK_DEFAULT_ARROW_BYTES,
                lambda: (
                    frame.write.format("paimon")
                    .options(**options)
                    .mode("append")
                    .save(f"bench.c{i if i >= 0 else 'warm'}")
                ),
            ),
        }
        reads: dict[str, Callable[[int], Any]] = {
            "parquet": lambda i: spark.read.parquet(location("pq", 0)),
            "raw": lambda i: spark.read.format(RAW_SOURCE).load(location("raw", 0)),
            "paimon": lambda i: spark.read.format("paimon").option("warehouse", warehouse).load("bench.t0"),
        }
        write_s = interleaved_best(args.repeat, writes)

        def noop_write(load: Callable[[int], Any]) -> Callable[[int], None]:
            return lambda i: load(i).write.format("noop").mode("overwrite").save()

        read_s = interleaved_best(args.repeat, {k: noop_write(load) for k, load in reads.items()})
        for name, load in reads.items():
            count = load(0).count()
            assert count == args.rows, f"{name} holds {count} rows, expected {args.rows}"
        sizes = {
            "parquet": size_of(Path(location("pq", 0))),
            "raw": size_of(Path(location("raw", 0))),
            "paimon": size_of(root / "wh" / "bench.db" / "t0"),
        }
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)

    # Ratios of throughput (x / Spark's Parquet): > 1 means faster than Spark's Parquet.
    write_ratio = {k: write_s["parquet"] / v for k, v in write_s.items()}
    read_ratio = {k: read_s["parquet"] / v for k, v in read_s.items()}
    load_avg = load_average()
    payload = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_at_end": [round(x, 2) for x in load_avg],
        },
        "rows": args.rows,
        "partitions": args.partitions,
        "repeat": args.repeat,
        "zstd_level": int(ZSTD_LEVEL),
        "write_s": {k: round(v, 3) for k, v in write_s.items()},
        "read_s": {k: round(v, 3) for k, v in read_s.items()},
        "bytes": sizes,
        "write_ratio": {k: round(v, 3) for k, v in write_ratio.items()},
        "read_ratio": {k: round(v, 3) for k, v in read_ratio.items()},
        "write_target": WRITE_TARGET,
        "read_target": READ_TARGET,
        "write_target_met": write_ratio["paimon"] >= WRITE_TARGET,
        "read_target_met": read_ratio["paimon"] >= READ_TARGET,
    }

    def mrows(seconds: float) -> str:
        return f"{args.rows / seconds / 1e6:.2f}"

    def verdict(ratio: float, target: float) -> str:
        return f">= {target}x {'met' if ratio >= target else 'MISSED'}"

    labels = {
        "parquet": "Spark's Parquet",
        "raw": "raw pyarrow source",
        "paimon": "paimon",
        "paimon_byte_check": f"paimon, Spark's default {ARROW_BYTES_CONF.rsplit('.', 1)[1]}",
    }
    rows_md = []
    for op, seconds, ratio, target in (
        ("write", write_s, write_ratio, WRITE_TARGET),
        ("read", read_s, read_ratio, READ_TARGET),
    ):
        for key, label in labels.items():
            if key not in seconds:
                continue
            rows_md.append(
                f"| {op} | {label} | {seconds[key]:.2f} | {mrows(seconds[key])} | {ratio[key]:.2f}x | "
                + (verdict(ratio[key], target) if key == "paimon" else "")
                + " |"
            )
    loaded = load_avg[0] > (os.cpu_count() or 1)
    lines = [
        "# paimon-spark benchmark: `paimon` source vs Spark's Parquet",
        "",
        f"{payload['date']}, {args.rows:,} rows in {args.partitions} Spark partitions, `local[2]`, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, zstd level {ZSTD_LEVEL} everywhere, "
        f"best of {args.repeat} interleaved rounds after a warm-up.",
        "",
        "| | way | seconds | Mrows/s | vs Spark's Parquet | target |",
        "|---|---|---|---|---|---|",
        *rows_md,
        "",
        "`raw pyarrow source` is the thinnest Python data source (plain `pyarrow.parquet`, no table format): "
        "the gap between it and Spark's Parquet is what the Python Data Source API costs by itself "
        "(rows converted to Arrow in the JVM and shipped to a Python worker, and back).",
        "",
        f"`paimon_spark.register` sets `{ARROW_BYTES_CONF}` to 2147483647 unless the session sets it: below "
        "that, Spark re-measures the Arrow batch it fills after every row it sends to a Python writer. "
        f"The `{labels['paimon_byte_check']}` row writes with Spark's default ({SPARK_DEFAULT_ARROW_BYTES}) "
        "to show that cost.",
        "",
        "Data on disk: " + ", ".join(f"{labels[k]} {v / 1e6:.1f} MB" for k, v in sizes.items()) + ".",
        f"Load average at the end: {', '.join(f'{x:.1f}' for x in load_avg)}"
        + (" (the machine was shared with other jobs: absolute times are pessimistic)." if loaded else "."),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    write_results(args.output_dir, "results-spark", text, payload)


if __name__ == "__main__":
    main()
