"""Compaction benchmark: 2,000 small files (1-100 KB) compacted into target-size files.

Measured in the same run, on the same files:

* ``paimon``: ``paimon_core.compact.compact_table`` (batch mode, local threads): plan from the snapshot,
  read, rewrite with statistics, commit one COMPACT snapshot;
* ``paimon on Spark`` (with ``--spark``, when ``paimon-spark`` is installed): ``paimon_spark.compact`` on a
  ``local[2]`` session: the same plan, tasks run by Spark executors, the commit on the driver;
* ``raw pyarrow``: read the same Parquet files with ``pyarrow.parquet`` and write them back per partition
  into files of the same target size, zstd level 1 (no metadata, no statistics, no commit).

The ratio is raw time / paimon time (≥ 0.8 is the goal). It also times planning a scan and a full read of
the table before and after compaction. Results go to stdout and ``benchmarks/results-compact.md``.

Run: ``./dev nox -s bench_compact`` (both, with Spark) or
``python benchmarks/compact_bench.py [--files 2000] [--partitions 4] [--target-mb 16] [--spark]``.

The table uses ``source.split.open-file-cost = 0``: with Paimon's default (4 MB per file) the coordinator
emits a bin every ``2 · target / 4 MB`` files, so tiny files converge to the target over several runs
instead of one.
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
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paimon_core import Catalog
from paimon_core.compact import compact_table

SCHEMA = pa.schema(
    [
        pa.field("part", pa.string()),
        pa.field("id", pa.int64()),
        pa.field("x", pa.float64()),
        pa.field("s", pa.string()),
    ]
)


def make_files(table: Any, files: int, partitions: int, seed: int = 7) -> None:
    """One file per message: every writer writes one batch of 10-4,500 rows (about 1-100 KB)."""
    rng = np.random.default_rng(seed)
    commit = table.new_commit()
    messages = []
    next_id = 0
    for i in range(files):
        rows = int(rng.integers(10, 4500))
        data = pa.table(
            {
                "part": [f"p{i % partitions}"] * rows,
                "id": np.arange(next_id, next_id + rows),
                "x": rng.random(rows),
                "s": _hex(rng, rows),
            },
            schema=SCHEMA,
        )
        next_id += rows
        writer = table.new_write()
        writer.write(data)
        messages.extend(writer.prepare_commit())
        if len(messages) >= 200:
            commit.commit(messages)
            messages = []
    if messages:
        commit.commit(messages)


def _hex(rng: np.random.Generator, rows: int) -> list[str]:
    raw = rng.bytes(8 * rows)
    return [raw[i * 8 : i * 8 + 8].hex() for i in range(rows)]


def raw_rewrite(table: Any, out_dir: Path, target: int) -> tuple[float, int]:
    """Read every live file and rewrite each partition with plain pyarrow; returns (seconds, files)."""
    by_partition: dict[bytes, list[str]] = {}
    for entry in table.live_entries():
        directory = table.bucket_dir(entry.partition, entry.bucket)
        by_partition.setdefault(entry.partition, []).append(os.path.join(directory, entry.file.file_name))
    start = time.perf_counter()
    written = 0
    for n, paths in enumerate(by_partition.values()):
        data = pa.concat_tables([pq.read_table(p) for p in paths])
        # Roll at the target size the way a rolling writer would, from the average encoded row size.
        bytes_per_row = max(sum(os.path.getsize(p) for p in paths) / max(data.num_rows, 1), 1e-9)
        rows_per_file = max(1, int(target / bytes_per_row))
        for offset in range(0, data.num_rows, rows_per_file):
            pq.write_table(
                data.slice(offset, rows_per_file),
                out_dir / f"raw-{n}-{offset}.parquet",
                compression="zstd",
                compression_level=1,
            )
            written += 1
    return time.perf_counter() - start, written


def spark_session() -> Any:
    """A ``local[2]`` session with the Python workers warmed up (imports happen once, not in the timing)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("paimon-compact-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.parallelize(range(4), 4).map(lambda _: __import__("paimon_core.compact")).count()
    return spark


def timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--target-mb", type=int, default=16)
    parser.add_argument("--parallelism", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--spark", action="store_true", help="also compact with paimon_spark on local[2]")
    parser.add_argument("--output", default=str(Path(__file__).with_name("results-compact.md")))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="paimon-compact-bench-"))
    try:
        catalog = Catalog.open(str(work / "warehouse"))
        catalog.create_database("db")
        target = args.target_mb << 20
        options = {
            "write-only": "true",
            "target-file-size": f"{args.target_mb} mb",
            "source.split.open-file-cost": "0 b",
            "file.compression.zstd-level": "1",
        }
        table = catalog.create_table("db.t", SCHEMA, partition_keys=["part"], options=options)
        make_time, _ = timed(lambda: make_files(table, args.files, args.partitions))
        before = table.live_entries()
        sizes = [e.file.file_size for e in before]
        rows = table.to_arrow(columns=["id"]).num_rows

        plan_before, _ = timed(lambda: table.scan().plan())
        read_before, _ = timed(lambda: table.to_arrow())

        spark = spark_session() if args.spark else None
        # Best of --repeat runs; every compaction run starts from a fresh copy of the small-file warehouse.
        raw_time = compact_time = spark_time = float("inf")
        raw_files = spark_files = 0
        summary: Any = None
        for rep in range(args.repeat):
            raw_dir = work / f"raw-{rep}"
            raw_dir.mkdir()
            seconds, raw_files = raw_rewrite(table, raw_dir, target)
            raw_time = min(raw_time, seconds)
            shutil.rmtree(raw_dir)
            copy = work / f"warehouse-{rep}"
            shutil.copytree(work / "warehouse", copy)
            run_table = Catalog.open(str(copy)).get_table("db.t")
            seconds, summary = timed(
                lambda t=run_table: compact_table(t, parallelism=args.parallelism, progress=False)
            )
            compact_time = min(compact_time, seconds)
            compacted = run_table
            if spark is not None:
                import paimon_spark

                copy = work / f"warehouse-spark-{rep}"
                shutil.copytree(work / "warehouse", copy)
                seconds, _ = timed(
                    lambda c=copy: paimon_spark.compact(spark, warehouse=str(c), table="db.t", progress=False)
                )
                spark_time = min(spark_time, seconds)
                spark_table = Catalog.open(str(copy)).get_table("db.t")
                spark_files = len(spark_table.live_entries())
                assert spark_table.to_arrow(columns=["id"]).num_rows == rows, (
                    "rows lost or duplicated on Spark"
                )
                shutil.rmtree(copy)
        if spark is not None:
            spark.stop()
        after = compacted.live_entries()
        assert compacted.to_arrow(columns=["id"]).num_rows == rows, "rows lost or duplicated"
        plan_after, _ = timed(lambda: compacted.scan().plan())
        read_after, _ = timed(lambda: compacted.to_arrow())

        ratio = raw_time / compact_time
        total_mb = sum(sizes) / (1 << 20)
        spark_rows = []
        if spark is not None:
            spark_rows = [
                f"| paimon_spark.compact (Spark local[2]) | {spark_time:.2f} | {spark_files} | "
                f"{total_mb / spark_time:.1f} |"
            ]
        lines = [
            "# Compaction benchmark",
            "",
            f"{dt.datetime.now().isoformat(timespec='seconds')}, Python {platform.python_version()}, "
            f"pyarrow {pa.__version__}, {os.cpu_count()} CPUs, {platform.platform()}",
            "",
            f"Input: {len(before)} files, {min(sizes) / 1024:.1f}-{max(sizes) / 1024:.1f} KB "
            f"(total {total_mb:.1f} MiB, {rows} rows) in {args.partitions} partitions; "
            f"target-file-size {args.target_mb} MiB; made in {make_time:.1f} s.",
            "",
            f"Best of {args.repeat} runs each.",
            "",
            "| step | seconds | files after | MiB/s |",
            "|---|---:|---:|---:|",
            f"| paimon compact_table (threads) | {compact_time:.2f} | {len(after)} | {total_mb / compact_time:.1f} |",
            *spark_rows,
            f"| raw pyarrow read + rewrite | {raw_time:.2f} | {raw_files} | {total_mb / raw_time:.1f} |",
            "",
            f"**paimon / raw throughput: {ratio:.2f}x** (goal ≥ 0.8x)"
            + (f"; **on Spark local[2]: {raw_time / spark_time:.2f}x**" if spark is not None else ""),
            "",
            "| scan | before (s) | after (s) |",
            "|---|---:|---:|",
            f"| plan splits | {plan_before:.3f} | {plan_after:.3f} |",
            f"| full read to Arrow | {read_before:.3f} | {read_after:.3f} |",
            "",
            f"Job summary: {summary}",
            "",
        ]
        text = "\n".join(lines)
        print(text)
        Path(args.output).write_text(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
