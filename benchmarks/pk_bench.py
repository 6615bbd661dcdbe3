"""Primary-key table benchmark: upsert commits and merged reads, paimon-core against pypaimon and raw Parquet.

Run it with ``./dev nox -s bench_pk`` (a venv with paimon-core and pypaimon), or ``python benchmarks/pk_bench.py
[--commits N --commit-rows R --rounds K]``; pypaimon is left out when it cannot be imported.

The work (issue "Primary-key tables in paimon-core"): ``--commits`` commits of ``--commit-rows`` upserts into a
``bucket = 4`` deduplicate table whose keys repeat across commits (zstd level 1 Parquet, local disk), then a full
read before and after a full compaction. Three writers do it, one commit each in turn (so a change of machine
load hits them alike):

* paimon-core with Paimon's default options: inline compaction (universal, ``num-sorted-run.compaction-trigger``
  5) keeps each bucket's sorted runs bounded, so this is the table a user reads;
* paimon-core with ``write-only = true``: it never compacts, like pypaimon, so its commit is the one compared
  with pypaimon's, and its read merges every commit's run (reported as extra rows);
* pypaimon, whose table is read once at the end.

Reads are timed in ``--rounds`` interleaved rounds (a shuffled order each round; medians, wall and CPU): the
defaults table after the commits and a copy of it after a full compaction, each read as a new process would
(a fresh table handle, the manifest cache empty) and again warm; the write-only table; and the baselines,
``pyarrow.parquet`` reading the same rows (the merged result) from one file and reading the data files of
the defaults and write-only tables unmerged. Peak RSS of a fresh process doing each paimon-core writer's
commits is reported.

Figures are ratios against the baselines of the same run; they go to ``results-pk.md`` / ``results-pk.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import importlib.metadata
import multiprocessing as mp
import os
import platform
import random
import resource
import shutil
import statistics
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness import load_average, timed, write_results

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("ts", pa.timestamp("us")),
    ]
)
OPTIONS = {
    "bucket": "4",
    "file.format": "parquet",
    "file.compression": "zstd",
    "file.compression.zstd-level": "1",
}
WRITE_ONLY = {**OPTIONS, "write-only": "true"}
# Issue targets: upsert commit at least 3x faster than pypaimon's; merged read within 2x of raw Parquet.
TARGET_COMMIT_SPEEDUP = 3.0
TARGET_READ_SLOWDOWN = 2.0
MB = 1 << 20


def make_batches(commits: int, rows: int, key_space: int, seed: int = 7) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    batches = []
    for step in range(commits):
        ids = rng.choice(key_space, size=rows, replace=False).astype(np.int64)
        batches.append(
            pa.table(
                {
                    "id": ids,
                    "category": pa.array([f"c{v % 50}" for v in ids]),
                    "value": rng.random(rows),
                    "ts": pa.array(np.full(rows, step * 1_000_000, dtype="datetime64[us]")),
                },
                schema=SCHEMA,
            )
        )
    return batches


def expected_rows(batches: list[pa.Table]) -> pa.Table:
    """The merged result: the last version of every key."""
    latest: dict[int, int] = {}
    everything = pa.concat_tables(batches)
    for index, key in enumerate(everything.column("id").to_pylist()):
        latest[key] = index
    return everything.take(sorted(latest.values())).sort_by("id")


def check(expected: pa.Table, got: pa.Table, who: str) -> None:
    if not got.sort_by("id").equals(expected.select(got.column_names).sort_by("id")):
        raise AssertionError(f"{who}: the read differs from the expected rows")


# --- writers ---------------------------------------------------------------------------------------------


class OursWriter:
    """A paimon-core primary-key table; one ``append`` per commit."""

    def __init__(self, directory: Path, options: dict[str, str]) -> None:
        from paimon_core import Catalog

        self.warehouse = directory
        catalog = Catalog.open(str(directory), create=True)
        catalog.create_database("bench", exist_ok=True)
        self.table = catalog.create_table("bench.t", SCHEMA, primary_keys=["id"], options=options)

    def commit(self, batch: pa.Table) -> None:
        self.table.append(batch)


class PypaimonWriter:
    """pypaimon's batch write and commit of the same table."""

    def __init__(self, directory: Path) -> None:
        from pypaimon import CatalogFactory, Schema

        catalog = CatalogFactory.create({"warehouse": str(directory)})
        catalog.create_database("bench", True)
        schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options=dict(OPTIONS))
        catalog.create_table("bench.t", schema, False)
        self.table = catalog.get_table("bench.t")

    def commit(self, batch: pa.Table) -> None:
        builder = self.table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        try:
            writer.write_arrow(batch)
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()

    def read(self) -> pa.Table:
        builder = self.table.new_read_builder()
        data: pa.Table = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        return data


def run_commits(
    batches: list[pa.Table], writers: dict[str, Any], seed: int
) -> dict[str, dict[str, list[float]]]:
    """Each batch committed by every writer, in a shuffled order per batch; wall and CPU seconds of each."""
    times: dict[str, dict[str, list[float]]] = {n: {"wall": [], "cpu": []} for n in writers}
    rng = random.Random(seed)
    for batch in batches:
        names = list(writers)
        rng.shuffle(names)
        for name in names:
            wall, cpu, _ = timed(functools.partial(writers[name].commit, batch))
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
    return times


def _writer_peak(batches: list[pa.Table], directory: str, options: dict[str, str]) -> int:
    """Peak resident memory (bytes) of a fresh process doing the upserts (its input included)."""
    writer = OursWriter(Path(directory), options)
    for batch in batches:
        writer.commit(batch)
    return peak_rss()


def peak_rss() -> int:
    """This process's peak resident memory in bytes. Linux's ``VmHWM``: ``ru_maxrss`` would include the
    parent's resident memory when the process was forked (it survives the exec of a spawned interpreter)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def writer_peak(batches: list[pa.Table], directory: Path, options: dict[str, str]) -> int:
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(_writer_peak, batches, str(directory), options).result()


# --- reads -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    """A timed read, and what has to happen untimed right before it."""

    run: Callable[[], pa.Table]
    prepare: Callable[[], Any] | None = None


def first_read(warehouse: Path) -> Read:
    """A read as a new process makes it: a fresh table handle and an empty manifest cache."""
    from paimon_core import Catalog
    from paimon_core.manifest._cache import manifest_cache

    return Read(lambda: Catalog.open(str(warehouse)).get_table("bench.t").to_arrow(), manifest_cache.clear)


def warm_read(warehouse: Path) -> Read:
    """A read through a handle that has read before, its manifests cached (planned again untimed: a first
    read of another table may have emptied the cache since)."""
    from paimon_core import Catalog

    table = Catalog.open(str(warehouse)).get_table("bench.t")
    return Read(table.to_arrow, lambda: table.scan().plan())


def read_files(paths: list[str]) -> Read:
    """``pyarrow.parquet`` reading data files one after another, unmerged (what a merged read decodes)."""
    return Read(lambda: pa.concat_tables(pq.read_table(p) for p in paths))


def table_layout(warehouse: Path) -> dict[str, Any]:
    """Data files, the rows they hold and the sorted runs per bucket of the table in ``warehouse``."""
    from paimon_core import Catalog

    table = Catalog.open(str(warehouse)).get_table("bench.t")
    entries = table.live_entries()
    runs: dict[int, int] = {}
    for bucket in {e.bucket for e in entries}:
        files = [e.file for e in entries if e.bucket == bucket]
        runs[bucket] = sum(f.level == 0 for f in files) + len({f.level for f in files if f.level > 0})
    return {
        "files": len(entries),
        "rows_in_files": sum(e.file.row_count for e in entries),
        "sorted_runs_per_bucket": [runs[b] for b in sorted(runs)],
        "paths": [f"{table.bucket_dir(e.partition, e.bucket)}/{e.file.file_name}" for e in entries],
    }


def read_rounds(
    reads: dict[str, Read], expected: dict[str, pa.Table | None], rounds: int, seed: int
) -> dict[str, dict[str, list[float]]]:
    """Every read once per round, in a shuffled order; the first round checks what each returns."""
    times: dict[str, dict[str, list[float]]] = {n: {"wall": [], "cpu": []} for n in reads}
    rng = random.Random(seed)
    for round_ in range(rounds):
        names = list(reads)
        rng.shuffle(names)
        for name in names:
            read = reads[name]
            if read.prepare is not None:
                read.prepare()
            wall, cpu, got = timed(read.run)
            want = expected[name]
            if round_ == 0 and want is not None:
                check(want, got, name)
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
        print(f"read round {round_ + 1}/{rounds} done", flush=True)
    return times


def summarize(times: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            "wall_s": statistics.median(t["wall"]),
            "cpu_s": statistics.median(t["cpu"]),
            "mean_wall_s": statistics.fmean(t["wall"]),
            "min_wall_s": min(t["wall"]),
            "max_wall_s": max(t["wall"]),
        }
        for name, t in times.items()
    }


# --- report ----------------------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def render(args: argparse.Namespace, figures: dict[str, Any]) -> str:
    commits, reads = figures["commits"], figures["reads"]
    layout, load = figures["layout"], figures["load_average"]
    raw = reads["raw Parquet, merged rows"]
    versions = ", ".join(f"{k} {v}" for k, v in figures["versions"].items())
    lines = [
        "# Primary-key table benchmark",
        "",
        f"{args.commits} upsert commits of {args.commit_rows} rows (keys drawn from {args.key_space}) into a "
        "`bucket = 4` deduplicate table, then full reads. Produced by `benchmarks/pk_bench.py` on "
        f"{figures['date']}: the three writers commit in turn; reads are medians of {args.rounds} interleaved "
        "rounds (wall time; CPU time of the process in brackets). Python "
        f"{platform.python_version()}, {versions}, {os.cpu_count()} CPUs; load average {load['before']:.1f} "
        f"before, {load['after']:.1f} after.",
        "",
        "| measure | paimon-core | baseline | ratio | target |",
        "|---|---:|---:|---:|---|",
    ]
    inline, write_only = commits["paimon-core"], commits["paimon-core write-only"]
    lines.append(
        f"| upsert commit, Paimon's default options (inline compaction) | {_ms(inline['mean_wall_s'])} "
        f"(median {_ms(inline['wall_s'])}) | — | — | — |"
    )
    pyp = commits.get("pypaimon")
    if pyp is not None:
        speedup = pyp["mean_wall_s"] / write_only["mean_wall_s"]
        lines.append(
            f"| upsert commit, `write-only` (never compacts, like pypaimon) | {_ms(write_only['mean_wall_s'])} "
            f"(median {_ms(write_only['wall_s'])}) | pypaimon {_ms(pyp['mean_wall_s'])} (median "
            f"{_ms(pyp['wall_s'])}) | {speedup:.1f}x faster | >= {TARGET_COMMIT_SPEEDUP}x |"
        )
    before, compacted, wo = layout["defaults"], layout["defaults, full compaction"], layout["write-only"]

    def vs_raw(label: str, key: str, target: str) -> str:
        ours = reads[key]
        return (
            f"| {label} | {_ms(ours['wall_s'])} ({_ms(ours['cpu_s'])}) | raw Parquet {_ms(raw['wall_s'])} "
            f"({_ms(raw['cpu_s'])}) | {ours['wall_s'] / raw['wall_s']:.2f}x raw's time | {target} |"
        )

    def vs_input(label: str, key: str, files: int) -> str:
        ours, unmerged = reads[f"{key}, warm"], reads[f"raw Parquet, {key} files unmerged"]
        return (
            f"| {label} | {_ms(ours['wall_s'])} ({_ms(ours['cpu_s'])}) | raw Parquet reading those {files} "
            f"files unmerged {_ms(unmerged['wall_s'])} ({_ms(unmerged['cpu_s'])}) | "
            f"{ours['wall_s'] / unmerged['wall_s']:.2f}x raw's time | — |"
        )

    target = f"<= {TARGET_READ_SLOWDOWN}x"
    lines += [
        vs_raw(
            f"full read after the commits, defaults ({before['files']} files, {before['rows_in_files']:,} rows "
            f"in them, sorted runs per bucket {before['sorted_runs_per_bucket']}): first read",
            "defaults, first read",
            target,
        ),
        vs_raw("  the same, warm", "defaults, warm", target),
        vs_input("  the same, warm, against its input", "defaults", before["files"]),
        vs_raw(
            f"full read after a full compaction ({compacted['files']} files): first read",
            "full compaction, first read",
            target,
        ),
        vs_raw("  the same, warm", "full compaction, warm", target),
        vs_raw(
            f"extra: full read of the `write-only` table ({wo['files']} files, {wo['rows_in_files']:,} rows), "
            "warm",
            "write-only, warm",
            "—",
        ),
        vs_input("  the same, against its input", "write-only", wo["files"]),
    ]
    ours = reads["write-only, warm"]
    if "pypaimon" in figures:
        pyp_read = figures["pypaimon"]["read_wall_s"]
        lines.append(
            f"| full read of pypaimon's table (its {args.commits} runs per bucket), by pypaimon | — | "
            f"{_ms(pyp_read)} | our `write-only` read at {ours['wall_s'] / pyp_read:.3f}x its time | — |"
        )
    for name, peak in figures["writer_peak_rss_bytes"].items():
        input_mb = figures["input_bytes"] / MB
        lines.append(
            f"| peak RSS of a process doing the commits, {name} | {peak / MB:.0f} MB (input {input_mb:.0f} MB) "
            "| — | — | — |"
        )
    lines += [
        "",
        "- Raw Parquet: `pyarrow.parquet.read_table` of the merged rows written as one zstd level 1 file (one "
        "row group, as the compacted files have per bucket); and of a table's data files one after another, "
        "unmerged: the records a merged read decodes.",
        "- A first read opens the catalog and table afresh with the manifest cache emptied, as a new process "
        "would; a warm read repeats `to_arrow` on a handle that has read before.",
        "- Wall times on a shared 2-core machine move from run to run; min, max and mean are in the JSON.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--commit-rows", type=int, default=10_000)
    parser.add_argument("--key-space", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent)
    args = parser.parse_args(argv)
    batches = make_batches(args.commits, args.commit_rows, args.key_space)
    expected = expected_rows(batches)
    figures: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "versions": {"pyarrow": pa.__version__, "paimon-core": importlib.metadata.version("paimon-core")},
        "input_bytes": sum(b.nbytes for b in batches),
    }
    workdir = Path(tempfile.mkdtemp(prefix="paimon-pk-bench-"))
    try:
        measured = measure(args, batches, expected, workdir)
        figures["versions"].update(measured.pop("versions", {}))
        figures.update(measured)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    markdown = render(args, figures)
    print(markdown)
    write_results(args.output_dir, "results-pk", markdown, figures)
    return 0


def measure(
    args: argparse.Namespace, batches: list[pa.Table], expected: pa.Table, workdir: Path
) -> dict[str, Any]:
    from paimon_core.compact import compact_table

    load_before = load_average()[0]
    writers: dict[str, Any] = {
        "paimon-core": OursWriter(workdir / "defaults", OPTIONS),
        "paimon-core write-only": OursWriter(workdir / "write-only", WRITE_ONLY),
    }
    figures: dict[str, Any] = {}
    try:
        figures["versions"] = {"pypaimon": importlib.metadata.version("pypaimon")}
        writers["pypaimon"] = PypaimonWriter(workdir / "pypaimon")
    except (ImportError, importlib.metadata.PackageNotFoundError):
        print("pk bench: pypaimon is not installed; its figures stay empty")
    commit_times = run_commits(batches, writers, args.seed)
    print("commits done", flush=True)

    compacted = workdir / "defaults-compacted"
    shutil.copytree(workdir / "defaults", compacted)
    from paimon_core import Catalog

    wall, _, _ = timed(lambda: compact_table(Catalog.open(str(compacted)).get_table("bench.t")))
    figures["full_compaction_s"] = wall
    layouts = {
        "defaults": table_layout(workdir / "defaults"),
        "defaults, full compaction": table_layout(compacted),
        "write-only": table_layout(workdir / "write-only"),
    }
    raw_file = workdir / "merged.parquet"
    pq.write_table(expected, raw_file, compression="zstd", compression_level=1, row_group_size=1 << 30)
    reads: dict[str, Read] = {
        "raw Parquet, merged rows": Read(lambda: pq.read_table(raw_file)),
        "raw Parquet, defaults files unmerged": read_files(layouts["defaults"]["paths"]),
        "raw Parquet, write-only files unmerged": read_files(layouts["write-only"]["paths"]),
        "defaults, first read": first_read(workdir / "defaults"),
        "defaults, warm": warm_read(workdir / "defaults"),
        "full compaction, first read": first_read(compacted),
        "full compaction, warm": warm_read(compacted),
        "write-only, warm": warm_read(workdir / "write-only"),
    }
    checked: dict[str, pa.Table | None] = {n: expected for n in reads}
    checked["raw Parquet, defaults files unmerged"] = None
    checked["raw Parquet, write-only files unmerged"] = None
    read_times = read_rounds(reads, checked, args.rounds, args.seed)
    load_after = load_average()[0]
    if "pypaimon" in writers:
        wall, _, got = timed(writers["pypaimon"].read)
        check(expected, got, "pypaimon")
        figures["pypaimon"] = {"read_wall_s": wall}
    figures["writer_peak_rss_bytes"] = {
        "Paimon's defaults": writer_peak(batches, workdir / "peak-defaults", OPTIONS),
        "write-only": writer_peak(batches, workdir / "peak-write-only", WRITE_ONLY),
    }
    for layout in layouts.values():
        layout.pop("paths")
    figures.update(
        {
            "load_average": {"before": load_before, "after": load_after},
            "rounds": args.rounds,
            "commits": summarize(commit_times),
            "reads": summarize(read_times),
            "layout": layouts,
            "targets": {"commit_speedup": TARGET_COMMIT_SPEEDUP, "read_vs_raw": TARGET_READ_SLOWDOWN},
        }
    )
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
