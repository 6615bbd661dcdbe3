"""Spark primary-key benchmark: upserts into a ``bucket = 8`` table and merged reads, vs Spark's Parquet.

One ``local[2]`` SparkSession (as ``spark_bench.py`` sets it up: zstd level 3 everywhere), two generated
DataFrames (int64 key ``id``, string category, float64 value, timestamp, string payload):

* the base: ``--rows`` rows with distinct keys ``0 .. rows-1`` in a scrambled order;
* the update: ``--update-fraction`` of that many rows, half of them new versions of existing keys (every
  column but the key changes; the keys are spread over the whole key space) and half new keys.

Three ways take both batches, each into fresh tables/directories every round:

* ``paimon_spark.write``: shuffles by Paimon's bucket, one writer per bucket, compaction on the executors;
* ``df.write.format("paimon")``: the data source's tasks write level-0 files as the rows lie, the driver
  commits once and compacts each written bucket when its sorted runs reach the trigger;
* Spark's Parquet: the base written plainly (what the table format costs on top of Parquet); the update
  appended as it is (the same rows, nothing merged), and copy-on-write (the base anti-joined with the update
  and rewritten): what one does to get the merged rows with Parquet alone.

Then the merged tables are read (``count()``, and an aggregate over every column: the checksum) against
Spark's Parquet holding the same merged rows (the copy-on-write output). Before anything is timed, each way's
result is checked against the expected rows computed with pyarrow (every row, every column); the checksum of
every timed round's result is checked after. Each operation runs once to warm up, then the ways run in
interleaved rounds (a busy moment of the machine hits them alike); the median of ``--repeat`` rounds counts.

Run it with ``./dev nox -s bench_spark_pk`` or ``python benchmarks/spark_pk_bench.py`` next to
``paimon-spark``.
Results go to stdout and to ``results-spark-pk.md`` / ``results-spark-pk.json`` in ``--output-dir``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness import load_average, write_results

ZSTD_LEVEL = "3"
BUCKETS = 8
BASE_SECONDS = 1_700_000_000
PAYLOADS = 100_000
CATEGORIES = 100

WAYS = {
    "parquet": "Spark's Parquet",
    "helper": "paimon_spark.write",
    "source": 'format("paimon")',
}
UPDATE_WAYS = {
    "parquet_append": "Spark's Parquet, rows appended (unmerged)",
    "parquet_cow": "Spark's Parquet, copy-on-write (anti-join + rewrite)",
    "helper": "paimon_spark.write",
    "source": 'format("paimon")',
}
READ_WAYS = {
    "parquet": "Spark's Parquet (the merged rows)",
    "helper": "paimon, written by paimon_spark.write",
    "source": 'paimon, written by format("paimon")',
}


def session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import paimon_spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("paimon-spark-pk-bench")
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


def coprime_step(n: int, start: int = 1_000_003) -> int:
    """A multiplier that permutes ``0 .. n-1`` (``i * step % n``): arrival order is not key order."""
    step = start % n or 1
    while math.gcd(step, n) != 1:
        step += 1
    return step


def update_layout(rows: int, update_rows: int) -> tuple[int, int, int]:
    """(existing keys updated, their stride over the key space, new keys) of the update batch."""
    existing = (update_rows + 1) // 2
    return existing, max(1, rows // max(existing, 1)), update_rows - existing


def columns(version: int) -> list[str]:
    """The value columns of key ``id`` at ``version`` (0 = base, 1 = update): every one changes."""
    return [
        "id",
        f"concat('cat-', cast((id + {version}) % {CATEGORIES} as string)) AS category",
        f"cast(id as double) * 0.5 + {version} AS value",
        f"timestamp_seconds({BASE_SECONDS} + id + {version * 86_400}) AS ts",
        f"sha2(cast((id + {version}) % {PAYLOADS} as string), 256) AS payload",
    ]


def frames(spark: Any, rows: int, update_rows: int, partitions: int) -> tuple[Any, Any]:
    base = spark.range(0, rows, numPartitions=partitions).selectExpr(
        f"id * {coprime_step(rows)} % {rows} AS id"
    )
    existing, stride, _ = update_layout(rows, update_rows)
    # j scrambled, then even j -> an existing key (spread by the stride), odd j -> a new key above rows.
    update = (
        spark.range(0, update_rows, numPartitions=partitions)
        .selectExpr(f"id * {coprime_step(update_rows)} % {update_rows} AS j")
        .selectExpr(f"CASE WHEN j % 2 = 0 THEN (j DIV 2) * {stride} ELSE {rows} + (j DIV 2) END AS id")
    )
    assert (existing - 1) * stride < rows
    return base.selectExpr(*columns(0)), update.selectExpr(*columns(1))


def expected_rows(rows: int, update_rows: int) -> pa.Table:
    """The merged result in key order, computed with numpy/pyarrow: the latest version of every key."""
    existing, stride, new = update_layout(rows, update_rows)
    ids = np.concatenate([np.arange(rows, dtype=np.int64), rows + np.arange(new, dtype=np.int64)])
    version = np.zeros(len(ids), dtype=np.int64)
    version[np.arange(existing, dtype=np.int64) * stride] = 1
    version[rows:] = 1
    payloads = np.array([hashlib.sha256(str(i).encode()).hexdigest() for i in range(PAYLOADS)], dtype=object)
    categories = np.array([f"cat-{i}" for i in range(CATEGORIES)], dtype=object)
    seconds = BASE_SECONDS + ids + version * 86_400
    return pa.table(
        {
            "id": ids,
            "category": pa.array(categories[(ids + version) % CATEGORIES], pa.string()),
            "value": ids.astype(np.float64) * 0.5 + version,
            "ts": pa.array(seconds * 1_000_000, pa.timestamp("us", tz="UTC")),
            "payload": pa.array(payloads[(ids + version) % PAYLOADS], pa.string()),
        }
    )


CHECKSUM_SQL = [  # unix seconds from BASE_SECONDS: a sum of micros would overflow a bigint
    "count(*) AS rows",
    "sum(id) AS id",
    "sum(value) AS value",
    f"sum(unix_seconds(ts) - {BASE_SECONDS}) AS ts",
    "sum(crc32(category)) AS category",
    "sum(crc32(payload)) AS payload",
]


def spark_checksum(df: Any) -> dict[str, Any]:
    """An aggregate over every column of every row (also the timed "sum over columns" read)."""
    row = df.selectExpr(*CHECKSUM_SQL).first()
    return {k: (float(v) if k == "value" else int(v)) for k, v in row.asDict().items()}


def arrow_checksum(table: pa.Table) -> dict[str, Any]:
    """The same aggregate computed with pyarrow (crc32 per distinct string, then summed by count)."""

    def crc_sum(column: pa.ChunkedArray) -> int:
        counts = pc.value_counts(column)
        return sum(
            zlib.crc32(v.encode()) * n
            for v, n in zip(
                counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True
            )
        )

    return {
        "rows": table.num_rows,
        "id": int(pc.sum(table["id"]).as_py()),
        "value": float(pc.sum(table["value"]).as_py()),
        "ts": int(
            pc.sum(pc.subtract(pc.divide(table["ts"].cast(pa.int64()), 1_000_000), BASE_SECONDS)).as_py()
        ),
        "category": crc_sum(table["category"]),
        "payload": crc_sum(table["payload"]),
    }


def check_rows(df: Any, expected: pa.Table, who: str) -> None:
    """Every row and column of ``df`` equals ``expected`` (ordered by key)."""
    got = df.toArrow().sort_by("id")
    assert got.num_rows == expected.num_rows, f"{who}: {got.num_rows} rows, expected {expected.num_rows}"
    for name in expected.column_names:
        column = got[name].cast(expected.schema.field(name).type)
        assert column.equals(expected[name]), f"{who}: column {name} differs from the expected rows"


def interleaved_rounds(rounds: int, actions: dict[str, Callable[[int], Any]]) -> dict[str, list[float]]:
    """Warm every action up once (round -1), then run them in turn for ``rounds`` rounds; their seconds."""
    for action in actions.values():
        action(-1)
    times: dict[str, list[float]] = {name: [] for name in actions}
    for attempt in range(rounds):
        for name, action in actions.items():
            started = time.perf_counter()
            action(attempt)
            times[name].append(time.perf_counter() - started)
    return times


def layout(warehouse: str, name: str) -> dict[str, Any]:
    """What a read of the table's latest snapshot faces: data files per level, rows and bytes in them."""
    from paimon_core import Catalog

    table = Catalog.open(warehouse).get_table(name)
    levels: dict[int, int] = {}
    rows = size = 0
    for entry in table.live_entries():
        levels[entry.file.level] = levels.get(entry.file.level, 0) + 1
        rows += entry.file.row_count
        size += entry.file.file_size
    return {
        "files_per_level": dict(sorted(levels.items())),
        "rows_in_files": rows,
        "bytes": size,
        "snapshots": [s.commit_kind.value for s in table.snapshots()],
    }


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*.parquet") if f.is_file())


def measure(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    import paimon_spark

    spark = session()
    try:
        update_rows = round(args.rows * args.update_fraction)
        base, update = frames(spark, args.rows, update_rows, args.partitions)
        expected = expected_rows(args.rows, update_rows)
        expected_sum = arrow_checksum(expected)
        warehouse = str(root / "wh")
        codec = {"file.compression": "zstd", "file.compression.zstd-level": ZSTD_LEVEL}
        create = {**codec, "primary-key": "id", "bucket": str(BUCKETS)}

        def tag(i: int) -> str:
            return str(i) if i >= 0 else "warm"

        def loc(kind: str, i: int) -> str:
            return str(root / f"{kind}{tag(i)}")

        def cow(i: int) -> None:
            old = spark.read.parquet(loc("pq", i))
            merged = old.join(update.select("id"), "id", "left_anti").unionByName(update)
            merged.write.mode("overwrite").parquet(loc("pqm", i))

        def source(frame: Any, name: str, options: dict[str, str]) -> None:
            frame.write.format("paimon").option("warehouse", warehouse).options(**options).mode(
                "append"
            ).save(name)

        writes: dict[str, Callable[[int], Any]] = {
            "base parquet": lambda i: base.write.mode("overwrite").parquet(loc("pq", i)),
            "base helper": lambda i: paimon_spark.write(
                base, f"bench.h{tag(i)}", warehouse=warehouse, options=create
            ),
            "base source": lambda i: source(base, f"bench.s{tag(i)}", create),
            "update parquet_append": lambda i: update.write.mode("overwrite").parquet(loc("pqu", i)),
            "update parquet_cow": cow,
            "update helper": lambda i: paimon_spark.write(
                update, f"bench.h{tag(i)}", warehouse=warehouse, options=codec
            ),
            "update source": lambda i: source(update, f"bench.s{tag(i)}", codec),
        }

        def readers(i: int) -> dict[str, Callable[[], Any]]:
            return {
                "parquet": lambda: spark.read.parquet(loc("pqm", i)),
                "helper": lambda: (
                    spark.read.format("paimon").option("warehouse", warehouse).load(f"bench.h{tag(i)}")
                ),
                "source": lambda: (
                    spark.read.format("paimon").option("warehouse", warehouse).load(f"bench.s{tag(i)}")
                ),
            }

        # Correctness first: one round of every write (the warm-up), each result checked row by row.
        for action in writes.values():
            action(-1)
        for name, load in readers(-1).items():
            check_rows(load(), expected, name)
            got = spark_checksum(load())
            assert got == expected_sum, f"{name}: checksum {got}, expected {expected_sum}"
        print(f"checked: {expected.num_rows:,} merged rows, every column, in all three ways", flush=True)

        write_rounds = interleaved_rounds(args.repeat, dict(writes))
        for i in range(args.repeat):
            for name, load in readers(i).items():
                got = spark_checksum(load())
                assert got == expected_sum, f"{name} round {i}: checksum {got}, expected {expected_sum}"

        warm = readers(-1)

        def count_of(load: Callable[[], Any]) -> Callable[[int], Any]:
            return lambda i: load().count()

        def checksum_of(load: Callable[[], Any]) -> Callable[[int], Any]:
            return lambda i: spark_checksum(load())

        reads: dict[str, Callable[[int], Any]] = {}
        for name, load in warm.items():
            reads[f"count {name}"] = count_of(load)
        for name, load in warm.items():
            reads[f"sum {name}"] = checksum_of(load)
        read_rounds = interleaved_rounds(args.repeat, reads)
        return {
            "update_rows": update_rows,
            "merged_rows": expected.num_rows,
            "write_rounds_s": write_rounds,
            "read_rounds_s": read_rounds,
            "layout": {k: layout(warehouse, f"bench.{k[0]}0") for k in ("helper", "source")},
            "parquet_bytes": {
                "base": size_of(Path(loc("pq", 0))),
                "update": size_of(Path(loc("pqu", 0))),
                "merged": size_of(Path(loc("pqm", 0))),
            },
        }
    finally:
        spark.stop()


def report(args: argparse.Namespace, figures: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    times = {**figures["write_rounds_s"], **figures["read_rounds_s"]}
    write_s = {k: statistics.median(v) for k, v in figures["write_rounds_s"].items()}
    read_s = {k: statistics.median(v) for k, v in figures["read_rounds_s"].items()}
    # Ratios of throughput (Spark's Parquet time / this way's time): > 1 means faster than Parquet.
    base_ratio = {k: write_s["base parquet"] / write_s[f"base {k}"] for k in WAYS}
    update_ratio = {k: write_s["update parquet_append"] / write_s[f"update {k}"] for k in UPDATE_WAYS}
    cow_ratio = {k: write_s["update parquet_cow"] / write_s[f"update {k}"] for k in UPDATE_WAYS}
    read_ratio = {
        op: {k: read_s[f"{op} parquet"] / read_s[f"{op} {k}"] for k in READ_WAYS} for op in ("count", "sum")
    }
    load_avg = load_average()
    payload = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_at_start": figures["loadavg_at_start"],
            "loadavg_at_end": [round(x, 2) for x in load_avg],
        },
        "rows": args.rows,
        "update_rows": figures["update_rows"],
        "merged_rows": figures["merged_rows"],
        "buckets": BUCKETS,
        "partitions": args.partitions,
        "repeat": args.repeat,
        "zstd_level": int(ZSTD_LEVEL),
        "write_median_s": {k: round(v, 3) for k, v in write_s.items()},
        "read_median_s": {k: round(v, 3) for k, v in read_s.items()},
        "rounds_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "base_write_ratio": {k: round(v, 3) for k, v in base_ratio.items()},
        "update_ratio_vs_append": {k: round(v, 3) for k, v in update_ratio.items()},
        "update_ratio_vs_copy_on_write": {k: round(v, 3) for k, v in cow_ratio.items()},
        "read_ratio": {op: {k: round(v, 3) for k, v in r.items()} for op, r in read_ratio.items()},
        "paimon_layout": figures["layout"],
        "parquet_bytes": figures["parquet_bytes"],
    }

    def cells(label: str, key: str, count: int) -> str:
        """way | median | rounds (min-max) | Mrows/s, the median's throughput."""
        runs = times[key]
        median = statistics.median(runs)
        return f"{label} | {median:.2f} | {min(runs):.2f}-{max(runs):.2f} | {count / median / 1e6:.2f}"

    rows, upd, merged = args.rows, figures["update_rows"], figures["merged_rows"]
    table = [
        "| | way | median s | rounds, s | Mrows/s | vs Spark's Parquet (speed) |",
        "|---|---|---|---|---|---|",
    ]
    for k, label in WAYS.items():
        table.append(
            f"| upsert {rows:,} rows (base) | {cells(label, f'base {k}', rows)} | {base_ratio[k]:.2f}x |"
        )
    for k, label in UPDATE_WAYS.items():
        table.append(
            f"| upsert {upd:,} rows (update) | {cells(label, f'update {k}', upd)} | "
            f"{update_ratio[k]:.2f}x of appending, {cow_ratio[k]:.2f}x of copy-on-write |"
        )
    for op, what in (("count", "`count()`"), ("sum", "sum over every column")):
        for k, label in READ_WAYS.items():
            table.append(
                f"| read {merged:,} merged rows, {what} | {cells(label, f'{op} {k}', merged)} | "
                f"{read_ratio[op][k]:.2f}x |"
            )
    lay = figures["layout"]

    def describe(k: str) -> str:
        f = lay[k]
        levels = ", ".join(f"{n} on level {lv}" for lv, n in f["files_per_level"].items())
        return (
            f"{READ_WAYS[k].split(', ', 1)[1]}: {levels} ({f['rows_in_files']:,} rows, "
            f"{f['bytes'] / 1e6:.1f} MB; snapshots {' + '.join(f['snapshots'])})"
        )

    loaded = max(load_avg[0], *figures["loadavg_at_start"][:1]) > (os.cpu_count() or 1)
    pq_bytes = figures["parquet_bytes"]
    lines = [
        "# paimon-spark primary-key benchmark: upserts and merged reads vs Spark's Parquet",
        "",
        f"{payload['date']}, a `bucket = {BUCKETS}` primary-key table (key `id`, deduplicate): a base of "
        f"{rows:,} rows with distinct keys, then an update of {upd:,} rows (half of them new versions of "
        f"existing keys, half new keys), {args.partitions} Spark partitions each, `local[2]`, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, zstd level {ZSTD_LEVEL} everywhere; "
        f"median of {args.repeat} interleaved rounds after a warm-up round, each round into fresh tables.",
        "",
        *table,
        "",
        "Ratios are speeds (Spark's Parquet seconds / this way's seconds): below 1 is slower than Parquet. "
        "The update is compared with appending the same rows to Parquet (nothing merged) and with "
        "copy-on-write Parquet (the base anti-joined with the update and rewritten: how Parquet alone gets "
        "the merged rows, and the files the reads compare with).",
        "",
        f"Correctness, checked before timing: each way's result after the update equals the expected "
        f"{merged:,} rows computed with pyarrow, every column; every timed round's result has the expected "
        "row count and checksum (sums of `id`, `value`, `ts` and of the CRC32 of both strings).",
        "",
        "The merged tables the reads face: " + "; ".join(describe(k) for k in ("helper", "source")) + ". "
        f"Spark's Parquet: base {pq_bytes['base'] / 1e6:.1f} MB, update {pq_bytes['update'] / 1e6:.1f} MB, "
        f"merged {pq_bytes['merged'] / 1e6:.1f} MB.",
        "",
        "`paimon_spark.write` shuffles the rows by Paimon's bucket so that each bucket has one writer, which "
        'sorts and compacts on the executor; `format("paimon")` writes level-0 files in the tasks that hold '
        "the rows and the driver compacts each written bucket in its own process when the bucket's sorted "
        "runs reach `num-sorted-run.compaction-trigger` (see packages/spark/README.md, "
        '"Primary-key tables"). '
        "Spark's Parquet `count()` reads row counts from the footers; a primary-key table's count merges the "
        "keys of every sorted run.",
        "",
        f"Load average at the start: {', '.join(f'{x:.1f}' for x in figures['loadavg_at_start'])}; "
        f"at the end: {', '.join(f'{x:.1f}' for x in load_avg)}"
        + (
            " (the machine was shared with other jobs, a CI run among them: absolute times are pessimistic "
            "and noisy; the ratios of interleaved rounds are the figures to read)."
            if loaded
            else "."
        ),
        "",
    ]
    return "\n".join(lines), payload


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the base batch")
    parser.add_argument(
        "--update-fraction", type=float, default=0.25, help="update batch size, as a fraction of --rows"
    )
    parser.add_argument("--partitions", type=int, default=4, help="Spark partitions of each batch")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds; the median counts")
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent)
    args = parser.parse_args()
    if not 0 < args.update_fraction <= 1:
        parser.error("--update-fraction must be in (0, 1]")

    start_load = [round(x, 2) for x in load_average()]
    root = Path(tempfile.mkdtemp(prefix="paimon-spark-pk-bench-"))
    try:
        figures = measure(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    figures["loadavg_at_start"] = start_load
    text, payload = report(args, figures)
    print(text)
    write_results(args.output_dir, "results-spark-pk", text, payload)


if __name__ == "__main__":
    main()
