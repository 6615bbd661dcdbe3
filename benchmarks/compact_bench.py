"""Compaction benchmark: small files compacted by paimon-core vs a raw ``pyarrow.dataset`` read + write of them.

Run it with ``./dev nox -s bench_compact`` (with Spark) or
``python benchmarks/compact_bench.py [--files 500] [--rounds 5] [--spark]``.

Two tables of ``--files`` small Parquet files (each one commit's 2,000-14,000 rows: string partition, int64
id, float64, 16-hex-digit string; zstd level 1), made fresh:

* ``bucket = -1``, 4 partitions: ``compact_table`` plans coordinator tasks (bins of ``target-file-size``);
* ``bucket = 4`` (bucket key ``id``), 4 partitions: a full compaction of each of the 16 buckets.

Ways, timed in interleaved rounds (the median counts; the machine is shared, so each way gets the same
conditions on average), each on the same input files:

* ``paimon-core``: ``paimon_core.compact.compact_table`` (local threads) on a fresh copy of the table: plan,
  read, rewrite with statistics, commit one COMPACT snapshot;
* ``paimon-spark`` (``--spark``, bucket = -1 only): ``paimon_spark.compact`` on ``local[2]``;
* ``pyarrow.dataset``: per (partition, bucket), ``pyarrow.dataset.dataset(<its files>)`` written by
  ``pyarrow.dataset.write_dataset`` into files of the same target size, zstd level 1, pyarrow's default
  encodings (every column tried as a dictionary); nothing else (no statistics kept, no commit);
* ``pyarrow.dataset, same encodings``: the same with dictionary encoding only for the columns paimon-core's
  output files dictionary-encode (the strongest raw baseline: the ratio against it is the one to read).

Throughput ratio = raw time / paimon time (>= 0.9 is the target of issue "Performance at scale"), by wall
clock and by the CPU time of this process (less sensitive to other processes on the machine). Results go to
``results-compact.md`` / ``results-compact.json`` in ``--output-dir``.

On a machine shared with other work, ``--priority -20`` (Linux, as root) runs the benchmark at that nice value
of its autogroup: the scheduler first divides the CPUs between autogroups (sessions), so a process's own nice
value does nothing against another session's load, while the autogroup's gives every way the CPUs almost as
on a quiet machine. The results record how the run was scheduled and the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from paimon_core import Catalog
from paimon_core.compact import compact_table

from harness import load_average, write_results

SCHEMA = pa.schema(
    [
        pa.field("part", pa.string()),
        pa.field("id", pa.int64()),
        pa.field("x", pa.float64()),
        pa.field("s", pa.string()),
    ]
)
PARTITIONS = 4
AUTOGROUP = Path("/proc/self/autogroup")  # "/autogroup-<n> nice <n>" (Linux with autogroup scheduling)
TARGET_MB = 128
TARGET_RATIO = 0.9
CASES = {
    "bucket = -1": {},
    "bucket = 4": {"bucket": "4", "bucket-key": "id"},
}
OPTIONS = {
    "write-only": "true",
    "target-file-size": f"{TARGET_MB} mb",
    "file.compression": "zstd",
    "file.compression.zstd-level": "1",
}


def make_table(warehouse: Path, files: int, extra: dict[str, str], seed: int = 7) -> Any:
    """An append table holding ``files`` small files: each commit writes 2,000-14,000 rows of one partition."""
    catalog = Catalog.open(str(warehouse), create=True)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["part"], options={**OPTIONS, **extra})
    rng = np.random.default_rng(seed)
    buckets = int(extra.get("bucket", "1"))
    next_id = 0
    commit = table.new_commit()
    messages: list[Any] = []
    for i in range(files // max(buckets, 1)):  # a write of a bucketed table makes a file per bucket
        rows = int(rng.integers(2000, 14000)) * max(buckets, 1)
        raw = rng.bytes(8 * rows)
        data = pa.table(
            {
                "part": [f"p{i % PARTITIONS}"] * rows,
                "id": np.arange(next_id, next_id + rows),
                "x": rng.random(rows),
                "s": [raw[j * 8 : j * 8 + 8].hex() for j in range(rows)],
            },
            schema=SCHEMA,
        )
        next_id += rows
        writer = table.new_write()
        writer.write(data)
        messages.extend(writer.prepare_commit())
        if len(messages) >= 100:
            commit.commit(messages)
            messages = []
    if messages:
        commit.commit(messages)
    return table


def file_groups(table: Any) -> list[list[str]]:
    """The paths of the live files per (partition, bucket), as a compaction sees them."""
    groups: dict[tuple[bytes, int], list[str]] = {}
    for entry in table.live_entries():
        directory = table.bucket_dir(entry.partition, entry.bucket)
        groups.setdefault((entry.partition, entry.bucket), []).append(
            os.path.join(directory, entry.file.file_name)
        )
    return list(groups.values())


def dictionary_columns(table: Any) -> list[str]:
    """The columns paimon-core's output files dictionary-encode (read from one of them)."""
    path = file_groups(table)[0][0]
    row_group = pq.ParquetFile(path).metadata.row_group(0)
    return [
        row_group.column(i).path_in_schema
        for i in range(row_group.num_columns)
        if any("DICTIONARY" in e for e in row_group.column(i).encodings)
    ]


def raw_rewrite(groups: list[list[str]], out: Path, use_dictionary: bool | list[str]) -> int:
    """pyarrow.dataset read + write of every group into files of about the target size; files written."""
    parquet = ds.ParquetFileFormat()
    options = parquet.make_write_options(
        compression="zstd", compression_level=1, use_dictionary=use_dictionary
    )
    written = 0
    for n, paths in enumerate(groups):
        # The schema of the files: without it, pyarrow would read the partition directory as a column too.
        dataset = ds.dataset(paths, format=parquet, schema=SCHEMA)
        rows = dataset.count_rows()
        bytes_per_row = sum(os.path.getsize(p) for p in paths) / max(rows, 1)
        rows_per_file = max(1, int((TARGET_MB << 20) / max(bytes_per_row, 1e-9)))
        target = out / str(n)
        ds.write_dataset(
            dataset,
            target,
            format=parquet,
            file_options=options,
            max_rows_per_file=rows_per_file,
            max_rows_per_group=min(rows_per_file, 1 << 20),
        )
        written += len(os.listdir(target))
    return written


@dataclass
class Way:
    name: str
    run: Callable[[Path], int]  # its scratch directory (a copy of the table when ``copies``) -> files after
    copies: bool = False
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    files_after: int = 0

    def time(self, scratch: Path) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.files_after = self.run(scratch)
        self.cpu.append(time.process_time() - cpu)
        self.wall.append(time.perf_counter() - wall)


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


def measure_case(
    args: argparse.Namespace, work: Path, name: str, extra: dict[str, str], spark: Any
) -> dict[str, Any]:
    base = work / f"base-{len(os.listdir(work))}"
    made = time.perf_counter()
    table = make_table(base, args.files, extra)
    made = time.perf_counter() - made
    entries = table.live_entries()
    sizes = [e.file.file_size for e in entries]
    rows = sum(e.file.row_count for e in entries)
    groups = file_groups(table)

    def fresh_copy(label: str) -> Path:
        copy = work / label
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(base, copy)
        return copy

    # A first compaction checks the result and tells which columns paimon-core's files dictionary-encode.
    checked = Catalog.open(str(fresh_copy("check"))).get_table("db.t")
    compact_table(checked, progress=False)
    assert sum(e.file.row_count for e in checked.live_entries()) == rows, "rows lost or duplicated"
    assert checked.to_arrow(columns=["id"]).num_rows == rows, "rows lost or duplicated"
    encodings = dictionary_columns(checked)
    shutil.rmtree(work / "check")

    def paimon(copy: Path) -> int:
        table = Catalog.open(str(copy)).get_table("db.t")
        compact_table(table, progress=False)
        return len(table.live_entries())

    def on_spark(copy: Path) -> int:
        import paimon_spark

        paimon_spark.compact(spark, warehouse=str(copy), table="db.t", progress=False)
        return len(Catalog.open(str(copy)).get_table("db.t").live_entries())

    def raw(use_dictionary: bool | list[str]) -> Callable[[Path], int]:
        def run(out: Path) -> int:
            return raw_rewrite(groups, out, use_dictionary)

        return run

    ways = [Way("paimon-core", paimon, copies=True)]
    if spark is not None and not extra:
        ways.append(Way("paimon-spark (local[2])", on_spark, copies=True))
    ways += [Way("pyarrow.dataset", raw(True)), Way("pyarrow.dataset, same encodings", raw(encodings))]
    for round_no in range(args.rounds):
        for way in ways if round_no % 2 == 0 else reversed(ways):
            # A compaction works on a fresh copy of the table, made before its clock starts.
            scratch = fresh_copy("copy") if way.copies else work / "raw-out"
            way.time(scratch)
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"compact: {name}, round {round_no + 1}: "
              + ", ".join(f"{w.name} {w.wall[-1]:.2f} s" for w in ways), flush=True)  # fmt: skip
    shutil.rmtree(base, ignore_errors=True)
    return {
        "case": name,
        "options": {**OPTIONS, **extra},
        "files": len(entries),
        "rows": rows,
        "input_bytes": sum(sizes),
        "min_file_bytes": min(sizes),
        "max_file_bytes": max(sizes),
        "groups": len(groups),
        "made_s": made,
        "paimon_dictionary_columns": encodings,
        "ways": {w.name: {"wall_s": w.wall, "cpu_s": w.cpu, "files_after": w.files_after} for w in ways},
    }


@contextlib.contextmanager
def scheduling(nice: int | None) -> Iterator[str]:
    """Run at autogroup nice ``nice`` (restored afterwards: the autogroup is the whole session's); yields how
    the run is scheduled."""
    if nice is None:
        yield "default priority"
        return
    if not AUTOGROUP.exists():
        raise SystemExit("--priority needs Linux autogroup scheduling (/proc/self/autogroup)")
    before = AUTOGROUP.read_text().split()[-1]
    AUTOGROUP.write_text(str(nice))
    try:
        yield f"autogroup nice {nice}"
    finally:
        AUTOGROUP.write_text(before)


def median(values: list[float]) -> float:
    return statistics.median(values)


def summarize(case: dict[str, Any]) -> dict[str, float]:
    ways = case["ways"]
    ours = ways["paimon-core"]
    out = {}
    for raw in ("pyarrow.dataset", "pyarrow.dataset, same encodings"):
        out[f"{raw}: wall"] = median(ways[raw]["wall_s"]) / median(ours["wall_s"])
        out[f"{raw}: cpu"] = median(ways[raw]["cpu_s"]) / median(ours["cpu_s"])
    return out


def render(args: argparse.Namespace, env: dict[str, str], cases: list[dict[str, Any]]) -> str:
    lines = [
        "# Compaction benchmark",
        "",
        f"{env['date']}: per table, {args.files} small files (one commit each: 2,000-14,000 rows of string "
        "partition, int64 id, float64, 16-hex-digit string; zstd level 1) in 4 partitions, compacted into "
        f"files of target-file-size {TARGET_MB} MB; {args.rounds} interleaved rounds, medians. "
        "Produced by `benchmarks/compact_bench.py`.",
        f"Python {env['python']}, pyarrow {env['pyarrow']}, {env['cpus']} CPUs, {env['platform']}.",
        "",
        "| table | way | wall | CPU (this process) | MiB/s (wall) | files after |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for case in cases:
        mib = case["input_bytes"] / (1 << 20)
        for name, way in case["ways"].items():
            wall = median(way["wall_s"])
            cpu = median(way["cpu_s"]) if not name.startswith("paimon-spark") else None
            lines.append(
                f"| {case['case']} | {name} | {wall:.2f} s | {'—' if cpu is None else f'{cpu:.2f} s'} "
                f"| {mib / wall:.1f} | {way['files_after']} |"
            )
    lines += [
        "",
        f"| table | input | throughput vs pyarrow.dataset (wall, CPU) | vs pyarrow.dataset, same encodings "
        f"(wall, CPU; target ≥ {TARGET_RATIO}x) |",
        "|---|---|---:|---:|",
    ]
    for case in cases:
        s = summarize(case)
        lines.append(
            f"| {case['case']} | {case['files']} files, {case['min_file_bytes'] / 1024:.0f}-"
            f"{case['max_file_bytes'] / 1024:.0f} KB, {case['input_bytes'] / (1 << 20):.1f} MiB, "
            f"{case['rows']:,} rows, {case['groups']} (partition, bucket) groups "
            f"| {s['pyarrow.dataset: wall']:.2f}x, {s['pyarrow.dataset: cpu']:.2f}x "
            f"| {s['pyarrow.dataset, same encodings: wall']:.2f}x, "
            f"{s['pyarrow.dataset, same encodings: cpu']:.2f}x |"
        )
    lines += [
        "",
        "Throughput ratio = the raw way's time / paimon-core's time (above 1: paimon-core is faster). "
        "paimon-core's output files dictionary-encode "
        + "; ".join(f"{c['case']}: {', '.join(c['paimon_dictionary_columns']) or 'no column'}" for c in cases)
        + ' (nearly unique columns are written plain); the "same encodings" raw way does the same, pyarrow\'s '
        "default tries a dictionary for every column. paimon-core also keeps per-file statistics and commits a "
        "snapshot; the raw ways do neither.",
        "",
        f"Load average at the end: {env['load']}; run at {env['scheduling']}"
        + (
            " (other sessions' processes got a small share of the CPUs meanwhile)."
            if env["scheduling"].startswith("autogroup")
            else " (on a shared machine the CPU ratio is the steadier figure)."
        ),
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=500, help="small files per table")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians count")
    parser.add_argument("--spark", action="store_true", help="also compact with paimon_spark on local[2]")
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent)
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument(
        "--priority",
        type=int,
        default=None,
        metavar="NICE",
        help="run at this autogroup nice value, -20..19 (Linux; below 0 needs root); see above",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cases = []
    with scheduling(args.priority) as scheduled:
        spark = spark_session() if args.spark else None  # its JVM and workers share the priority
        try:
            with tempfile.TemporaryDirectory(prefix="paimon-compact-bench-", dir=args.workdir) as tmp:
                for name, extra in CASES.items():
                    cases.append(measure_case(args, Path(tmp), name, extra, spark))
        finally:
            if spark is not None:
                spark.stop()
        load = ", ".join(f"{x:.1f}" for x in load_average())
    env = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "cpus": str(os.cpu_count()),
        "platform": platform.platform(terse=True),
        "load": load,
        "scheduling": scheduled,
    }
    markdown = render(args, env, cases)
    print(markdown)
    payload = {
        "environment": env,
        "parameters": {
            "files": args.files,
            "rounds": args.rounds,
            "target_mb": TARGET_MB,
            "priority": args.priority,
        },
        "cases": cases,
        "summary": {c["case"]: summarize(c) for c in cases},
    }
    write_results(args.output_dir, "results-compact", markdown, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
