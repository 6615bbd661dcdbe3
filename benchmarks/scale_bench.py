"""Scale benchmark: commit latency and scan planning on tables with many live files, paimon-core against pypaimon.

Run it with ``./dev nox -s bench_scale`` (a venv with paimon-core and pypaimon), or
``python benchmarks/scale_bench.py [--full]``; pypaimon runs in ``--pypaimon-python`` (this interpreter by
default) and is left out when that cannot import it.

For each size (``--sizes``; 1,000 and 20,000 live files by default, ``--full`` adds 100,000):

1. paimon-core builds an append table partitioned by ``dt`` (``--partitions`` values) holding that many live
   files, in commits of 1,000 files spread over random partitions; the files are empty placeholders (planning
   and committing never open them). The same table, copied, is where each implementation then works.
2. Each implementation appends ``--commits`` times (one commit of a few rows into one random partition, the same
   sequence for both) after one warm-up append, through its public API, ``--commit-repeat`` times on fresh
   copies of the table, the implementations taking turns round by round (so both meet the same load of a
   shared machine); the latency of each ``append`` (data file and commit), as the best of its runs, gives
   median and p99 (the best of the runs drops what other processes on the machine cost; a merge costs the same
   commit of every run). The first run's own median and p99 are reported too.
3. On the resulting tables: a full scan plan and a plan of one partition (``dt = <value>``), each in a fresh
   process (nothing cached), the implementations taking turns, best of ``--repeat`` for time; the peak of
   Python allocations (tracemalloc) in one more run.

Targets (issue "Performance at scale"): commit p99 ≤ 3x the median at every size; from 20,000 files up, a
single-partition plan ≤ 0.2x the full plan's time and ≤ 0.5x pypaimon's; a full plan ≤ 0.5x pypaimon's.
Results go to ``results-scale.md`` / ``results-scale.json`` in ``--output-dir``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from harness import environment, load_average, p99, write_results

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("category", pa.string()),
        ("value", pa.float64()),
        ("ts", pa.timestamp("us")),
    ]
)
TABLE = "bench.t"
BULK = 1000
TARGET_P99_OVER_MEDIAN = 3.0
TARGET_ONE_OVER_FULL = 0.2
TARGET_ONE_VS_PYPAIMON = 0.5
TARGET_FULL_VS_PYPAIMON = 0.5


def partition_values(count: int) -> list[str]:
    start = dt.date(2024, 1, 1)
    return [(start + dt.timedelta(days=i)).isoformat() for i in range(count)]


# --- building the table (paimon-core) ----------------------------------------------------------------------


def build_table(warehouse: Path, files: int, partitions: int, seed: int) -> None:
    """An append table with ``files`` live placeholder files, committed ``BULK`` files at a time."""
    from paimon_core import Catalog
    from paimon_core.binary_row import serialize_row
    from paimon_core.manifest import DataFileMeta, SimpleStats, local_wall_clock_millis
    from paimon_core.stats import build_value_stats
    from paimon_core.table import CommitMessage

    rng = random.Random(seed)
    catalog = Catalog.open(str(warehouse), create=True)
    catalog.create_database("bench", exist_ok=True)
    table = catalog.create_table(TABLE, SCHEMA, partition_keys=["dt"], options={"write-only": "true"})
    fields = list(table.schema.fields)
    values = partition_values(partitions)
    stored = [serialize_row([v], table.partition_types) for v in values]
    empty = SimpleStats.EMPTY.min_values
    commit = table.new_commit()
    made = 0
    while made < files:
        by_partition: dict[int, list[DataFileMeta]] = {}
        for i in range(made, min(made + BULK, files)):
            p = rng.randrange(partitions)
            low = rng.randrange(10**9)
            moment = dt.datetime(2024, 1, 1) + dt.timedelta(seconds=rng.randrange(10**7))
            column_stats = [
                (values[p], values[p], 0),
                (low, low + 999, 0),
                (f"category-{rng.randrange(100):03d}", "category-099", 0),
                (rng.random(), 1 + rng.random(), 0),
                (moment, moment + dt.timedelta(days=1), 0),
            ]
            stats, cols = build_value_stats(fields, column_stats)
            name = f"data-{rng.getrandbits(128):032x}-{i}.parquet"
            directory = Path(table.bucket_dir(stored[p], 0))
            directory.mkdir(parents=True, exist_ok=True)
            (directory / name).touch()
            file = DataFileMeta(
                name, 2000 + rng.randrange(100_000), 1000, empty, empty, SimpleStats.EMPTY, stats, 0, 999, 0, 0,
                creation_time=local_wall_clock_millis(), delete_row_count=0, file_source=0, value_stats_cols=cols,
            )  # fmt: skip
            by_partition.setdefault(p, []).append(file)
        commit.commit([CommitMessage(stored[p], 0, -1, new_files=tuple(f)) for p, f in by_partition.items()])
        made = min(made + BULK, files)


# --- workers (run in their own processes) ------------------------------------------------------------------


def small_batch(value: str, step: int) -> pa.Table:
    return pa.table(
        {
            "dt": [value] * 10,
            "id": list(range(step * 10, step * 10 + 10)),
            "category": [f"category-{step % 100:03d}"] * 10,
            "value": [float(step)] * 10,
            "ts": [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=step)] * 10,
        },
        schema=SCHEMA,
    )


def worker_commits(impl: str, warehouse: str, sequence: list[str]) -> dict[str, Any]:
    """Append once per value of ``sequence`` (the first one is a warm-up); the latency of each other append."""
    append = _appender(impl, warehouse)
    latencies = []
    for step, value in enumerate(sequence):
        batch = small_batch(value, step)
        start = time.perf_counter()
        append(batch)
        if step:
            latencies.append(time.perf_counter() - start)
    return {"latencies": latencies}


def _appender(impl: str, warehouse: str) -> Any:
    if impl == "paimon-core":
        from paimon_core import Catalog

        table = Catalog.open(warehouse).get_table(TABLE)
        return table.append
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": warehouse}).get_table(TABLE)

    def append(batch: pa.Table) -> None:
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(batch)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()

    return append


def worker_plan(impl: str, warehouse: str, value: str | None, trace: bool) -> dict[str, Any]:
    """Plan a full scan (``value`` None) or one partition, in this fresh process; seconds or peak bytes."""
    import tracemalloc

    plan = _planner(impl, warehouse, value)
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    files = plan()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] if trace else None
    return {"seconds": seconds, "peak_bytes": peak, "files": files}


def _planner(impl: str, warehouse: str, value: str | None) -> Any:
    if impl == "paimon-core":
        from paimon_core import Catalog

        table = Catalog.open(warehouse).get_table(TABLE)

        def plan() -> int:
            splits = table.scan(None if value is None else [("dt", "=", value)]).plan()
            return sum(len(s.files) for s in splits)

        return plan
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": warehouse}).get_table(TABLE)

    def plan_pypaimon() -> int:
        builder = table.new_read_builder()
        if value is not None:
            builder = builder.with_filter(builder.new_predicate_builder().equal("dt", value))
        return sum(len(s.files) for s in builder.new_scan().plan().splits())

    return plan_pypaimon


def run_worker(python: str, job: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "packages" / "core" / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [python, __file__, "--worker", json.dumps(job)], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"worker {job['kind']} {job['impl']} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- one size ------------------------------------------------------------------------------------------------


def measure_size(args: argparse.Namespace, work: Path, files: int, impls: dict[str, str]) -> dict[str, Any]:
    base = work / f"base-{files}"
    start = time.perf_counter()
    build_table(base, files, args.partitions, seed=files)
    built = time.perf_counter() - start
    print(f"scale: {files:,} files built in {built:.1f} s", flush=True)
    values = partition_values(args.partitions)
    rng = random.Random(files + 1)
    sequence = [values[rng.randrange(len(values))] for _ in range(args.commits + 1)]
    one = values[len(values) // 3]
    out: dict[str, Any] = {"files": files, "build_s": built, "impls": {}}
    # Every round runs each implementation once, one after the other, so that both meet the same load of a
    # shared machine; a round's commit runs work on fresh copies of the table (the last copy stays).
    runs: dict[str, list[list[float]]] = {impl: [] for impl in impls}
    for _ in range(args.commit_repeat):
        for impl, python in impls.items():
            warehouse = work / f"{impl}-{files}"
            shutil.rmtree(warehouse, ignore_errors=True)
            shutil.copytree(base, warehouse)
            job: dict[str, Any] = {
                "kind": "commits",
                "impl": impl,
                "warehouse": str(warehouse),
                "sequence": sequence,
            }
            runs[impl].append(run_worker(python, job)["latencies"])
    plans: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for trace in [False] * args.repeat + [True]:  # best of the untraced plans; the traced one for memory
        for impl, python in impls.items():
            for label, value in (("full", None), ("one", one)):
                plan_job = {
                    "kind": "plan",
                    "impl": impl,
                    "warehouse": str(work / f"{impl}-{files}"),
                    "value": value,
                    "trace": trace,
                }
                plans.setdefault((impl, label), []).append(run_worker(python, plan_job))
    for impl in impls:
        # Commit i's latency is its best over the runs: noise from other processes goes, while what a commit
        # itself costs (a merge) comes back at the same commit in every run.
        latencies = [min(values) for values in zip(*runs[impl], strict=True)]
        single = runs[impl][0]
        figures: dict[str, Any] = {
            "commit_median_s": statistics.median(latencies),
            "commit_p99_s": p99(latencies),
            "commit_max_s": max(latencies),
            "commit_mean_s": statistics.fmean(latencies),
            "single_run_median_s": statistics.median(single),
            "single_run_p99_s": p99(single),
            "commit_latencies_s": latencies,
        }
        for label in ("full", "one"):
            timed, traced = plans[(impl, label)][:-1], plans[(impl, label)][-1]
            figures[f"plan_{label}_s"] = min(r["seconds"] for r in timed)
            figures[f"plan_{label}_peak_bytes"] = traced["peak_bytes"]
            figures[f"plan_{label}_files"] = timed[0]["files"]
        out["impls"][impl] = figures
        shown = {k: v for k, v in figures.items() if k != "commit_latencies_s"}
        print(f"scale: {files:,} files, {impl}: {json.dumps(shown)}", flush=True)
        shutil.rmtree(work / f"{impl}-{files}", ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)
    return out


# --- report --------------------------------------------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.1f} ms"


def _mb(value: int | None) -> str:
    return "—" if value is None else f"{value / 1e6:.1f} MB"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def summarize(size: dict[str, Any]) -> dict[str, float | None]:
    ours = size["impls"].get("paimon-core", {})
    theirs = size["impls"].get("pypaimon", {})
    return {
        "p99_over_median": _ratio(ours.get("commit_p99_s"), ours.get("commit_median_s")),
        "one_over_full": _ratio(ours.get("plan_one_s"), ours.get("plan_full_s")),
        "one_vs_pypaimon": _ratio(ours.get("plan_one_s"), theirs.get("plan_one_s")),
        "full_vs_pypaimon": _ratio(ours.get("plan_full_s"), theirs.get("plan_full_s")),
        "one_memory_vs_pypaimon": _ratio(ours.get("plan_one_peak_bytes"), theirs.get("plan_one_peak_bytes")),
        "full_memory_vs_pypaimon": _ratio(
            ours.get("plan_full_peak_bytes"), theirs.get("plan_full_peak_bytes")
        ),
    }


def render(args: argparse.Namespace, env: dict[str, str], sizes: list[dict[str, Any]]) -> str:
    lines = [
        "# Scale benchmark",
        "",
        f"Append table partitioned by `dt` ({args.partitions} values), built by paimon-core in commits of {BULK:,} "
        "files over random partitions; then, on a copy each, "
        f"{args.commits} appends of 10 rows into a random partition (after one warm-up append; each commit's "
        f"latency the best of {args.commit_repeat} runs of the sequence on fresh copies), then scan plans "
        f"in fresh processes (best of {args.repeat}; peak = tracemalloc peak of the plan). Produced by "
        "`benchmarks/scale_bench.py`.",
        f"Python {env['python']}, pyarrow {env['pyarrow']}, {env['cpus']} CPUs, {env['platform']}; "
        f"{env['versions']}; {env['date']}.",
        "",
        "| live files | implementation | append median | p99 | max | mean | one run: median, p99 | full plan | peak "
        "| one partition | peak |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        for impl, f in size["impls"].items():
            lines.append(
                f"| {size['files']:,} | {impl} | {_ms(f['commit_median_s'])} | {_ms(f['commit_p99_s'])} "
                f"| {_ms(f['commit_max_s'])} | {_ms(f['commit_mean_s'])} "
                f"| {_ms(f['single_run_median_s'])}, {_ms(f['single_run_p99_s'])} | {_ms(f['plan_full_s'])} "
                f"| {_mb(f['plan_full_peak_bytes'])} | {_ms(f['plan_one_s'])} | {_mb(f['plan_one_peak_bytes'])} |"
            )
    lines += [
        "",
        f"| live files | p99 / median (≤ {TARGET_P99_OVER_MEDIAN}) | one partition / full plan "
        f"(≤ {TARGET_ONE_OVER_FULL}) | one partition vs pypaimon (≤ {TARGET_ONE_VS_PYPAIMON}) "
        f"| full plan vs pypaimon (≤ {TARGET_FULL_VS_PYPAIMON}) | memory, one partition vs pypaimon "
        "| memory, full plan vs pypaimon |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        s = summarize(size)
        lines.append(
            f"| {size['files']:,} | {_x(s['p99_over_median'])} | {_x(s['one_over_full'])} "
            f"| {_x(s['one_vs_pypaimon'])} | {_x(s['full_vs_pypaimon'])} | {_x(s['one_memory_vs_pypaimon'])} "
            f"| {_x(s['full_memory_vs_pypaimon'])} |"
        )
    lines += [
        "",
        "paimon-core fsyncs the snapshot each commit publishes (`storage.file.fsync = commit`, its default); "
        "pypaimon does not.",
        "",
        f"Load average at the end: {env['load']} (2 cores shared with other jobs: times are pessimistic).",
    ]
    return "\n".join(lines) + "\n"


def has_pypaimon(python: str) -> str | None:
    done = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('pypaimon'))"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip() if done.returncode == 0 else None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,20000", help="live files per table, comma separated")
    parser.add_argument("--full", action="store_true", help="the issue's sizes: 1,000, 20,000 and 100,000")
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument(
        "--commit-repeat",
        type=int,
        default=3,
        help="runs of the commit sequence; each commit counts its best",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="plan timings: best of this many fresh processes"
    )
    parser.add_argument(
        "--pypaimon-python", default=sys.executable, help="interpreter with pypaimon installed"
    )
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent)
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        job = json.loads(args.worker)
        if job["kind"] == "commits":
            result = worker_commits(job["impl"], job["warehouse"], job["sequence"])
        else:
            result = worker_plan(job["impl"], job["warehouse"], job["value"], job["trace"])
        print(json.dumps(result))
        return 0
    sizes = [1000, 20_000, 100_000] if args.full else [int(s) for s in args.sizes.split(",")]
    impls = {"paimon-core": sys.executable}
    pypaimon_version = has_pypaimon(args.pypaimon_python)
    if pypaimon_version:
        impls["pypaimon"] = args.pypaimon_python
    else:
        print(f"scale: no pypaimon in {args.pypaimon_python}; measuring paimon-core alone", flush=True)
    env = {
        **environment(),
        "versions": f"paimon-core {importlib.metadata.version('paimon-core')}"
        + (f", pypaimon {pypaimon_version}" if pypaimon_version else ""),
    }
    results = []
    with tempfile.TemporaryDirectory(prefix="paimon-scale-", dir=args.workdir) as tmp:
        for files in sizes:
            results.append(measure_size(args, Path(tmp), files, impls))
    env["load"] = ", ".join(f"{x:.1f}" for x in load_average())
    markdown = render(args, env, results)
    print()
    print(markdown)
    payload = {
        "environment": env,
        "parameters": {
            "sizes": sizes,
            "partitions": args.partitions,
            "commits": args.commits,
            "commit_repeat": args.commit_repeat,
            "repeat": args.repeat,
        },
        "results": results,
        "summary": {str(r["files"]): summarize(r) for r in results},
    }
    write_results(args.output_dir, "results-scale", markdown, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
