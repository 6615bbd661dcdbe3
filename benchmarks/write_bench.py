"""Write benchmark: rows into a partitioned append table, paimon-core against ``pyarrow.dataset.write_dataset``
and pypaimon, on the same data in the same run.

Run it with ``./dev nox -s bench_write`` (a venv with paimon-core and pypaimon 2.1.0), or directly with
``python benchmarks/write_bench.py [--rows N --partitions P --rounds R]``; pypaimon is left out when it
cannot be imported.

The data: ``--rows`` rows (2M by default: string ``dt`` with ``--partitions`` values, int64 id, string
category of 100 values, float64 value, timestamp[us]), written as zstd level 1 Parquet to local disk, in
three shapes:

* ``one batch``: every row in one record batch, in random partition order;
* ``batches, one partition each``: ``--partitions`` batches, each holding one partition's rows (input that
  arrives partition by partition);
* ``batches, all partitions in each``: ``--partitions`` batches in random partition order, so every batch
  touches every partition.

Time: each round writes every shape with every implementation once, in a shuffled order, into a fresh
directory; ``--rounds`` rounds, medians reported (wall seconds, and CPU seconds of the process). paimon-core
is a ``write-only`` table (no inline compaction, like the others). ``write_dataset`` gets the data as a table
or as a stream of batches, with hive partitioning on ``dt`` and its default threads.

Memory: each shape and implementation once more in a fresh interpreter, reading its input memory-mapped from
an Arrow file (the input's buffers are the file's pages, not Arrow's memory pool), so the Arrow pool's peak
during the write (``max_memory()`` minus the bytes allocated before it) is the writer's own peak. paimon-core
runs with the default ``write-buffer-size`` (256 MB) and with ``--small-buffer`` (32 MB), where the buffer
is too small for the data and has to spill.

Targets (issue "Performance at scale"): batched writes ≤ 1.1x ``write_dataset``'s time; writer peak memory ≤
``write-buffer-size`` + 100 MB whatever the input shape. Results go to ``results-write.md`` /
``results-write.json`` in ``--output-dir``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import importlib.metadata
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from harness import load_average, timed, write_results

# benchmarks/run.py, next to this script: the same value columns and file settings as the append benchmark
from run import SCHEMA as VALUES
from run import TABLE_OPTIONS, ZSTD_LEVEL
from run import make_data as make_values

SCHEMA = pa.schema([pa.field("dt", pa.string()), *VALUES])
SHAPES = ("one batch", "batches, one partition each", "batches, all partitions in each")
BATCHED = SHAPES[1:]
MB = 1 << 20
DEFAULT_BUFFER = 256 * MB
TARGET_BATCHED_VS_ARROW = 1.1
TARGET_MEMORY_OVER_BUFFER = 100 * MB


def make_data(rows: int, partitions: int, seed: int = 42) -> pa.Table:
    """``benchmarks/run.py``'s rows with a ``dt`` of ``partitions`` values, in random partition order."""
    rng = np.random.default_rng(seed)
    days = np.array([(dt.date(2025, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(partitions)])
    dt_column = pa.array(days[rng.integers(0, partitions, rows)].astype(object), pa.string())
    table = make_values(rows, seed).add_column(0, SCHEMA.field("dt"), dt_column)
    return pa.Table.from_batches([pa.concat_batches(table.to_batches())])


def shape_batches(data: pa.Table, shape: str, partitions: int) -> list[pa.RecordBatch]:
    """The input of ``shape`` as record batches (zero-copy slices where possible)."""
    if shape == "one batch":
        return list(data.to_batches())
    if shape == "batches, one partition each":
        ordered = data.sort_by("dt").combine_chunks()
        days = ordered.column("dt").to_numpy(zero_copy_only=False)
        starts = np.flatnonzero(np.r_[True, days[1:] != days[:-1]])
        ends = [*starts[1:], ordered.num_rows]
        return [
            pa.concat_batches(ordered.slice(s, e - s).to_batches()) for s, e in zip(starts, ends, strict=True)
        ]
    rows = -(-data.num_rows // partitions)
    return list(data.to_batches(max_chunksize=rows))


# --- the writers: each writes ``batches`` into a new table or dataset under ``directory`` ------------------


def write_ours(batches: list[pa.RecordBatch], directory: Path, options: dict[str, str]) -> None:
    from paimon_core import Catalog

    warehouse = directory / "warehouse"
    warehouse.mkdir(parents=True)
    catalog = Catalog.open(str(warehouse))
    catalog.create_database("bench")
    table = catalog.create_table(
        "bench.t", SCHEMA, partition_keys=["dt"], options={**TABLE_OPTIONS, "write-only": "true", **options}
    )
    table.append(iter(batches) if len(batches) > 1 else batches[0])


def write_arrow(batches: list[pa.RecordBatch], directory: Path, options: dict[str, str]) -> None:
    data: Any = pa.RecordBatchReader.from_batches(SCHEMA, iter(batches))
    if len(batches) == 1:
        data = pa.Table.from_batches(batches)
    file_options = ds.ParquetFileFormat().make_write_options(compression="zstd", compression_level=ZSTD_LEVEL)
    ds.write_dataset(
        data,
        str(directory / "dataset"),
        format="parquet",
        partitioning=["dt"],
        partitioning_flavor="hive",
        file_options=file_options,
        max_partitions=100_000,
    )


def write_pypaimon(batches: list[pa.RecordBatch], directory: Path, options: dict[str, str]) -> None:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(directory / "warehouse")})
    catalog.create_database("bench", True)
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], options=dict(TABLE_OPTIONS))
    catalog.create_table("bench.t", schema, False)
    table = catalog.get_table("bench.t")
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    try:
        for batch in batches:
            writer.write_arrow_batch(batch)
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()


WRITERS: dict[str, Callable[[list[pa.RecordBatch], Path, dict[str, str]], None]] = {
    "pyarrow.dataset": write_arrow,
    "pypaimon": write_pypaimon,
    "paimon-core": write_ours,
}


def rows_written(name: str, directory: Path) -> int:
    if name == "pyarrow.dataset":
        return int(ds.dataset(str(directory / "dataset"), format="parquet").count_rows())
    if name == "paimon-core":
        from paimon_core import Catalog

        table = Catalog.open(str(directory / "warehouse")).get_table("bench.t")
        return sum(entry.file.row_count for entry in table.live_entries())
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": str(directory / "warehouse")}).get_table("bench.t")
    builder = table.new_read_builder()
    return int(builder.new_read().to_arrow(builder.new_scan().plan().splits()).num_rows)


# --- time ----------------------------------------------------------------------------------------------------


def time_rounds(
    data: pa.Table, names: list[str], partitions: int, rounds: int, workdir: Path, seed: int
) -> dict[str, dict[str, dict[str, list[float]]]]:
    """``{shape: {name: {"wall": [...], "cpu": [...]}}}`` over interleaved rounds."""
    inputs = {shape: shape_batches(data, shape, partitions) for shape in SHAPES}
    times: dict[str, dict[str, dict[str, list[float]]]] = {
        s: {n: {"wall": [], "cpu": []} for n in names} for s in SHAPES
    }
    rng = random.Random(seed)
    for round_ in range(rounds):
        order = [(s, n) for s in SHAPES for n in names]
        rng.shuffle(order)
        for shape, name in order:
            directory = Path(tempfile.mkdtemp(dir=workdir))
            try:
                wall, cpu, _ = timed(functools.partial(WRITERS[name], inputs[shape], directory, {}))
                if round_ == 0 and (written := rows_written(name, directory)) != data.num_rows:
                    raise AssertionError(f"{name} wrote {written} rows of {data.num_rows} ({shape})")
            finally:
                shutil.rmtree(directory, ignore_errors=True)
            times[shape][name]["wall"].append(wall)
            times[shape][name]["cpu"].append(cpu)
            print(
                f"round {round_ + 1}: {shape:<32} {name:<16} {wall:6.3f} s wall {cpu:6.3f} s cpu", flush=True
            )
    return times


# --- memory --------------------------------------------------------------------------------------------------


def memory_probe(name: str, source: str, workdir: str, options: dict[str, str]) -> None:
    """(In a fresh interpreter.) Write the batches of the Arrow file ``source``; print the pool's peak."""
    reader = pa.ipc.open_file(pa.memory_map(source))
    batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    pool = pa.default_memory_pool()
    base = pool.bytes_allocated()
    WRITERS[name](batches, Path(workdir), options)
    print(json.dumps({"peak": pool.max_memory() - base}))


def measure_memory(
    data: pa.Table, names: list[str], partitions: int, small_buffer: int, workdir: Path
) -> list[dict[str, Any]]:
    runs: list[tuple[str, str, dict[str, str]]] = [(n, s, {}) for s in SHAPES for n in names]
    small = {"write-buffer-size": f"{small_buffer} b"}
    runs += [("paimon-core", s, small) for s in SHAPES]
    results = []
    for shape in SHAPES:
        source = workdir / "input.arrow"
        with pa.OSFile(str(source), "wb") as sink, pa.ipc.new_file(sink, SCHEMA) as writer:
            for batch in shape_batches(data, shape, partitions):
                writer.write_batch(batch)
        for name, run_shape, options in runs:
            if run_shape != shape:
                continue
            directory = Path(tempfile.mkdtemp(dir=workdir))
            try:
                out = subprocess.run(
                    [sys.executable, __file__, "--memory-probe", name, str(source), str(directory),
                     json.dumps(options)],
                    check=True, capture_output=True, text=True,
                ).stdout  # fmt: skip
            finally:
                shutil.rmtree(directory, ignore_errors=True)
            peak = json.loads(out.strip().splitlines()[-1])["peak"]
            buffer = small_buffer if options else DEFAULT_BUFFER
            results.append(
                {
                    "shape": shape,
                    "name": name,
                    "write_buffer_size": buffer if name == "paimon-core" else None,
                    "peak_bytes": peak,
                    "within_target": peak <= buffer + TARGET_MEMORY_OVER_BUFFER
                    if name == "paimon-core"
                    else None,
                }
            )
            print(f"memory: {shape:<32} {name:<16} {options or ''} peak {peak / MB:.1f} MB", flush=True)
        source.unlink()
    return results


# --- results -------------------------------------------------------------------------------------------------


def summarize(times: dict[str, dict[str, dict[str, list[float]]]]) -> dict[str, dict[str, Any]]:
    summary: dict[str, dict[str, Any]] = {}
    for shape, by_name in times.items():
        arrow = statistics.median(by_name["pyarrow.dataset"]["wall"])
        arrow_cpu = statistics.median(by_name["pyarrow.dataset"]["cpu"])
        summary[shape] = {}
        for name, measured in by_name.items():
            wall = statistics.median(measured["wall"])
            summary[shape][name] = {
                "wall_s": wall,
                "cpu_s": statistics.median(measured["cpu"]),
                "wall_range_s": [min(measured["wall"]), max(measured["wall"])],
                "time_vs_pyarrow_dataset": wall / arrow,
                "cpu_vs_pyarrow_dataset": statistics.median(measured["cpu"]) / arrow_cpu,
            }
    return summary


def _versions(names: Iterable[str]) -> dict[str, str]:
    dist = {"pyarrow.dataset": "pyarrow", "pypaimon": "pypaimon", "paimon-core": "paimon-core"}
    return {n: importlib.metadata.version(dist[n]) for n in names}


def report(
    output: Path,
    args: argparse.Namespace,
    names: list[str],
    summary: dict[str, Any],
    memory: list[dict[str, Any]],
    load: list[float],
) -> None:
    today = dt.date.today().isoformat()
    versions = _versions(names)
    header = (
        f"Write benchmark ({today}): {args.rows:,} rows (string dt of {args.partitions} values, int64 id, "
        f"string category of 100 values, float64 value, timestamp[us] ts) into {args.partitions} partitions, "
        f"zstd level {ZSTD_LEVEL} Parquet, local disk; medians of {args.rounds} interleaved rounds.\n"
        f"Python {platform.python_version()}, {', '.join(f'{n} {v}' for n, v in versions.items())}, "
        f"{os.cpu_count()} CPUs, {platform.platform()}; load average {load[0]:.1f} before the timed rounds, "
        f"{load[1]:.1f} after.\n"
    )
    lines = [
        header,
        "| input | " + " | ".join(names) + " | paimon-core vs write_dataset: time (CPU) |",
        "|---|",
    ]
    lines[-1] += "---:|" * (len(names) + 1)
    for shape in SHAPES:
        row = summary[shape]
        cells = [f"{row[n]['wall_s']:.3f} s ({row[n]['cpu_s']:.2f} s CPU)" for n in names]
        ratio = row["paimon-core"]["time_vs_pyarrow_dataset"]
        cpu_ratio = row["paimon-core"]["cpu_vs_pyarrow_dataset"]
        target = f" (target ≤ {TARGET_BATCHED_VS_ARROW})" if shape in BATCHED else ""
        lines.append(f"| {shape} | " + " | ".join(cells) + f" | {ratio:.2f}x ({cpu_ratio:.2f}x){target} |")
    lines += [
        "",
        "Peak Arrow memory of the write (fresh interpreter, input memory-mapped; target for paimon-core: "
        f"≤ write-buffer-size + {TARGET_MEMORY_OVER_BUFFER // MB} MB):",
        "",
        "| input | writer | write-buffer-size | peak | within target |",
        "|---|---|---:|---:|---|",
    ]
    for m in memory:
        buffer = f"{m['write_buffer_size'] // MB} MB" if m["write_buffer_size"] else ""
        within = "" if m["within_target"] is None else "yes" if m["within_target"] else "NO"
        lines.append(f"| {m['shape']} | {m['name']} | {buffer} | {m['peak_bytes'] / MB:.1f} MB | {within} |")
    lines += [
        "",
        "- paimon-core: table option write-only=true (no inline compaction, like the others).",
        "- write_dataset writes the rows it is given as they come (a row group per batch and partition, by "
        "default) and leaves dt out of the files (it is in the path); the Paimon writers keep every column.",
        "- Wall times on a shared 2-core machine move from run to run; each figure's min-max is in the JSON.",
    ]
    text = "\n".join(lines) + "\n"
    payload = {
        "date": today,
        "rows": args.rows,
        "partitions": args.partitions,
        "rounds": args.rounds,
        "versions": versions,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": {"before": load[0], "after": load[1]},
        "targets": {
            "batched_time_vs_pyarrow_dataset": TARGET_BATCHED_VS_ARROW,
            "memory_over_write_buffer_size_bytes": TARGET_MEMORY_OVER_BUFFER,
        },
        "time": summary,
        "memory": memory,
    }
    write_results(output, "results-write", text, payload)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--small-buffer", type=int, default=32 * MB, help="bytes; paimon-core's spilling run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent)
    parser.add_argument("--memory-probe", nargs=4, metavar=("NAME", "SOURCE", "DIR", "OPTIONS"))
    args = parser.parse_args()
    if args.memory_probe:
        name, source, directory, options = args.memory_probe
        memory_probe(name, source, directory, json.loads(options))
        return

    names = ["pyarrow.dataset", "paimon-core"]
    try:
        import pypaimon  # noqa: F401

        names.insert(1, "pypaimon")
    except ImportError:
        print("pypaimon is not installed: measuring pyarrow.dataset and paimon-core only")
    data = make_data(args.rows, args.partitions)
    load = [load_average()[0]]
    with tempfile.TemporaryDirectory(prefix="write-bench-") as work:
        times = time_rounds(data, names, args.partitions, args.rounds, Path(work), args.seed)
        load.append(load_average()[0])
        memory = measure_memory(data, names, args.partitions, args.small_buffer, Path(work))
    report(args.output_dir, args, names, summarize(times), memory, load)


if __name__ == "__main__":
    main()
