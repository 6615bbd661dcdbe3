"""Spark benchmark: writing and reading rows through the ``paimon`` source against Spark's own Parquet.

One run, one ``local[2]`` SparkSession, the same generated DataFrame for both formats (int64 id, string
category, float64 value, timestamp, string payload), zstd at level 3 on both sides (parquet-java's default
level; Paimon's ``file.compression.zstd-level`` is set to match). Every measurement writes to a fresh
location; reads are materialised with Spark's ``noop`` sink, which consumes every column of every row. Best
of ``--repeat`` runs. Targets: paimon write >= 0.9x and read >= 0.75x of Parquet's throughput.

Run it with ``./dev nox -s bench_spark`` or ``python benchmarks/spark_bench.py`` next to ``paimon-spark``.
Results go to stdout and to ``results-spark.md`` / ``results-spark.json`` in ``--output-dir``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WRITE_TARGET = 0.9
READ_TARGET = 0.75
ZSTD_LEVEL = "3"


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
    return spark


def data(spark: Any, rows: int, partitions: int) -> Any:
    return spark.range(0, rows, numPartitions=partitions).selectExpr(
        "id",
        "concat('cat-', cast(id % 100 as string)) AS category",
        "cast(id as double) * 0.5 AS value",
        "timestamp_seconds(1700000000 + id) AS ts",
        "sha2(cast(id % 100000 as string), 256) AS payload",
    )


def best(runs: int, action: Callable[[int], None]) -> float:
    times = []
    for attempt in range(runs):
        started = time.perf_counter()
        action(attempt)
        times.append(time.perf_counter() - started)
    return min(times)


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and f.suffix == ".parquet")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--partitions", type=int, default=4, help="Spark partitions (= files written)")
    parser.add_argument("--repeat", type=int, default=3)
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

        def write_parquet(i: int) -> None:
            frame.write.mode("overwrite").parquet(str(root / f"pq{i}"))

        def write_paimon(i: int) -> None:
            frame.write.format("paimon").options(**options).mode("append").save(f"bench.t{i}")

        def read_parquet(i: int) -> None:
            spark.read.parquet(str(root / "pq0")).write.format("noop").mode("overwrite").save()

        def read_paimon(i: int) -> None:
            reader = spark.read.format("paimon").option("warehouse", warehouse)
            reader.load("bench.t0").write.format("noop").mode("overwrite").save()

        write_parquet(99)  # warm-up: JVM, Python workers, code paths
        write_paimon(99)
        results = {
            "parquet_write_s": best(args.repeat, write_parquet),
            "paimon_write_s": best(args.repeat, write_paimon),
            "parquet_read_s": best(args.repeat, read_parquet),
            "paimon_read_s": best(args.repeat, read_paimon),
        }
        count = spark.read.format("paimon").option("warehouse", warehouse).load("bench.t0").count()
        assert count == args.rows, f"paimon table holds {count} rows, expected {args.rows}"
        sizes = {
            "parquet_bytes": size_of(root / "pq0"),
            "paimon_bytes": size_of(root / "wh" / "bench.db" / "t0"),
        }
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)

    # Ratios of throughput (paimon / parquet): > 1 means paimon is faster.
    write_ratio = results["parquet_write_s"] / results["paimon_write_s"]
    read_ratio = results["parquet_read_s"] / results["paimon_read_s"]
    load = os.getloadavg()
    payload = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_at_end": [round(x, 2) for x in load],
        },
        "rows": args.rows,
        "partitions": args.partitions,
        "repeat": args.repeat,
        "zstd_level": int(ZSTD_LEVEL),
        **{k: round(v, 3) for k, v in results.items()},
        **sizes,
        "write_ratio": round(write_ratio, 3),
        "read_ratio": round(read_ratio, 3),
        "write_target": WRITE_TARGET,
        "read_target": READ_TARGET,
        "write_target_met": write_ratio >= WRITE_TARGET,
        "read_target_met": read_ratio >= READ_TARGET,
    }

    def mrows(seconds: float) -> str:
        return f"{args.rows / seconds / 1e6:.2f}"

    loaded = load[0] > (os.cpu_count() or 1)
    lines = [
        "# paimon-spark benchmark: `paimon` source vs Spark's Parquet",
        "",
        f"{payload['date']}, {args.rows:,} rows in {args.partitions} Spark partitions, `local[2]`, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, zstd level {ZSTD_LEVEL} on both sides, "
        f"best of {args.repeat}.",
        "",
        "| | Parquet (s) | paimon (s) | Parquet Mrows/s | paimon Mrows/s | paimon / Parquet | target |",
        "|---|---|---|---|---|---|---|",
        f"| write | {results['parquet_write_s']:.2f} | {results['paimon_write_s']:.2f} | "
        f"{mrows(results['parquet_write_s'])} | {mrows(results['paimon_write_s'])} | {write_ratio:.2f}x | "
        f">= {WRITE_TARGET}x {'met' if payload['write_target_met'] else 'MISSED'} |",
        f"| read | {results['parquet_read_s']:.2f} | {results['paimon_read_s']:.2f} | "
        f"{mrows(results['parquet_read_s'])} | {mrows(results['paimon_read_s'])} | {read_ratio:.2f}x | "
        f">= {READ_TARGET}x {'met' if payload['read_target_met'] else 'MISSED'} |",
        "",
        f"Data on disk: Parquet {sizes['parquet_bytes'] / 1e6:.1f} MB, paimon {sizes['paimon_bytes'] / 1e6:.1f} MB.",
        f"Load average at the end: {', '.join(f'{x:.1f}' for x in load)}"
        + (" (the machine was shared with other jobs: absolute times are pessimistic)." if loaded else "."),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "results-spark.md").write_text(text, encoding="utf-8")
    (args.output_dir / "results-spark.json").write_text(
        json.dumps(payload, indent=2) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
