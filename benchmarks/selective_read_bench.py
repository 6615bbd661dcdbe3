"""Selective read benchmark: filtered reads of an append table, paimon-core against raw pyarrow on the same files and pypaimon.

Run it with ``./dev nox -s bench_selective_read`` (a venv with paimon-core and pypaimon), or
``python benchmarks/selective_read_bench.py [--full]`` next to paimon-core (pypaimon's figures are then
left out when it is not installed).

paimon-core writes ``--rows`` rows (``--full``: 10,000,000; int64 id in order, a string of 100 values, a
uniform float64, a timestamp; zstd level 1) in ``--commits`` commits into an append table, twice: with
Paimon's default row groups (``parquet.block.size`` = 128 MB) and with ``parquet.block.size = 4 mb``.
Each table is then read with four filters, 0.1% and 10% of the rows each:

* ``id`` in a range: the rows are clustered by id, so statistics can rule row groups out;
* ``value`` below a bound: the matches are spread over every row group, so every one is decoded.

Readers, on the same table: paimon-core's ``table.to_arrow(filter=...)``; ``pyarrow.parquet.read_table``
of the table's data files with the same filter (it skips row groups by statistics and filters while it
reads); pypaimon's read builder with the predicate. Every reader's first read is checked against the
expected rows (a pypaimon read that fails or differs is reported, not timed); then ``--repeat``
interleaved rounds, the median counts. Peak memory is measured per read in a fresh process: the growth of
its peak RSS and the peak of Arrow's memory pool during that one read.

Target (issue "Performance at scale"): a 0.1% selective read within 2x pyarrow's time on the same files,
with memory proportional to what matches. Results go to ``results-selective-read.md`` / ``.json``
(``results-selective-read-full.*`` with ``--full``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from harness import load_average, write_results

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("ts", pa.timestamp("us")),
    ]
)
OPTIONS = {
    "file.format": "parquet",
    "file.compression": "zstd",
    "file.compression.zstd-level": "1",
    "write-only": "true",  # no compaction: the files stay as written, for every reader
}
LAYOUTS = {"default": {}, "small": {"parquet.block.size": "4 mb"}}
LAYOUT_LABELS = {"default": "parquet.block.size = 128 MB (default)", "small": "parquet.block.size = 4 mb"}
FRACTIONS = (0.001, 0.1)
TARGET_TIME_VS_PYARROW = 2.0

Filter = list[tuple[str, str, Any]]


def make_data(rows: int, seed: int = 42) -> pa.Table:
    rng = np.random.default_rng(seed)
    categories = np.array([f"category-{i:03d}" for i in range(100)], dtype=object)
    start = np.datetime64("2025-01-01T00:00:00", "us")
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "category": pa.array(categories[rng.integers(0, 100, rows)], type=pa.string()),
            "value": pa.array(rng.random(rows)),
            "ts": pa.array(start + rng.integers(0, 365 * 86_400_000_000, rows).astype("timedelta64[us]")),
        },
        schema=SCHEMA,
    )


def filters(rows: int) -> list[tuple[str, float, Filter]]:
    """(name, fraction of the rows, DNF filter): a clustered and a scattered filter for each fraction."""
    found: list[tuple[str, float, Filter]] = []
    for fraction in FRACTIONS:
        width = max(1, round(rows * fraction))
        lo = (rows - width) // 2
        found.append(
            (f"{lo:,} <= id < {lo + width:,}", fraction, [("id", ">=", lo), ("id", "<", lo + width)])
        )
        found.append((f"value < {fraction}", fraction, [("value", "<", fraction)]))
    return found


def expression(dnf: Filter) -> pc.Expression:
    result = pc.scalar(True)
    for column, op, value in dnf:
        field = pc.field(column)
        result = result & {">=": field >= value, "<": field < value}[op]
    return result


def build_tables(data: pa.Table, commits: int, warehouse: Path) -> dict[str, list[str]]:
    """One table per layout, the same rows in ``commits`` commits; its data files."""
    from paimon_core import Catalog

    catalog = Catalog.open(str(warehouse), create=True)
    catalog.create_database("bench", exist_ok=True)
    files: dict[str, list[str]] = {}
    step = -(-data.num_rows // commits)
    for layout, options in LAYOUTS.items():
        table = catalog.create_table(f"bench.{layout}", SCHEMA, options={**OPTIONS, **options})
        for start in range(0, data.num_rows, step):
            table.append(data.slice(start, step))
        files[layout] = sorted(
            os.path.join(table.bucket_dir(e.partition, e.bucket), e.file.file_name)
            for e in table.live_entries()
        )
    return files


def row_groups(paths: list[str], dnf: Filter | None) -> int:
    """How many row groups of ``paths`` pyarrow's statistics cannot rule out (all when ``dnf`` is None)."""
    count = 0
    for fragment in ds.dataset(paths, format="parquet").get_fragments():
        if dnf is None:
            count += fragment.num_row_groups
        else:
            count += len(fragment.split_by_row_group(expression(dnf)))
    return count


def reader(who: str, warehouse: str, layout: str, paths: list[str], dnf: Filter) -> Callable[[], pa.Table]:
    if who == "paimon-core":
        from paimon_core import Catalog

        table = Catalog.open(warehouse).get_table(f"bench.{layout}")
        return lambda: table.to_arrow(filter=dnf)
    if who == "pyarrow":
        return lambda: pq.read_table(paths, filters=dnf)
    from pypaimon import CatalogFactory

    pyp_table = CatalogFactory.create({"warehouse": warehouse}).get_table(f"bench.{layout}")

    def read() -> pa.Table:
        builder = pyp_table.new_read_builder()
        predicates = builder.new_predicate_builder()
        terms = [
            predicates.greater_or_equal(c, v) if op == ">=" else predicates.less_than(c, v)
            for c, op, v in dnf
        ]
        builder = builder.with_filter(terms[0] if len(terms) == 1 else predicates.and_predicates(terms))
        result: pa.Table = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        return result

    return read


def check(expected: pa.Table, got: pa.Table, who: str) -> None:
    if got.num_rows != expected.num_rows:
        raise AssertionError(f"{who}: {got.num_rows:,} rows read, {expected.num_rows:,} expected")
    if not got.select(SCHEMA.names).sort_by("id").equals(expected):
        raise AssertionError(f"{who}: the rows read differ from the expected rows")


def _rss_mb(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def child(spec: str) -> None:
    """In a fresh process: one read, then its memory figures as JSON on stdout."""
    who, warehouse, layout, paths, dnf = json.loads(spec)
    read = reader(who, warehouse, layout, paths, [tuple(t) for t in dnf])
    try:  # reset the peak RSS to the current RSS (Linux), so the peak after the read is this read's
        Path("/proc/self/clear_refs").write_text("5")
        before, peak_field = _rss_mb("VmRSS"), "VmHWM"
    except OSError:
        before, peak_field = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, ""
    pool_before = pa.total_allocated_bytes()
    result = read()
    peak = _rss_mb(peak_field) if peak_field else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "rss_growth_mb": peak - before,
                "arrow_peak_mb": (pa.default_memory_pool().max_memory() - pool_before) / 2**20,
                "result_mb": result.nbytes / 2**20,
            }
        )
    )


def memory(
    python: str, who: str, warehouse: str, layout: str, paths: list[str], dnf: Filter
) -> dict[str, float]:
    spec = json.dumps([who, warehouse, layout, paths, dnf])
    out = subprocess.run(
        [python, __file__, "--child", spec], check=True, capture_output=True, text=True, timeout=1800
    ).stdout
    figures: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return figures


def measure(args: argparse.Namespace, versions: dict[str, str]) -> dict[str, Any]:
    data = make_data(args.rows)
    workdir = Path(tempfile.mkdtemp(prefix="paimon-selective-bench-"))
    try:
        started = time.perf_counter()
        files = build_tables(data, args.commits, workdir / "warehouse")
        print(f"tables written in {time.perf_counter() - started:.0f} s")
        warehouse = str(workdir / "warehouse")
        who = ["paimon-core", "pyarrow", *(["pypaimon"] if "pypaimon" in versions else [])]
        cases: list[dict[str, Any]] = []
        for layout, paths in files.items():
            for name, fraction, dnf in filters(args.rows):
                expected = data.filter(expression(dnf))
                case: dict[str, Any] = {
                    "layout": layout,
                    "filter": name,
                    "fraction": fraction,
                    "rows": expected.num_rows,
                    "row_groups": row_groups(paths, None),
                    "row_groups_kept": row_groups(paths, dnf),
                    "first_s": {},
                    "median_s": {},
                    "memory": {},
                    "failed": {},
                }
                readers = {}
                for w in who:
                    try:
                        read = reader(w, warehouse, layout, paths, dnf)
                        start = time.perf_counter()
                        got = read()
                        case["first_s"][w] = time.perf_counter() - start
                        check(expected, got, w)
                    except Exception as error:  # a pypaimon failure is a finding, not a crash
                        if w != "pypaimon":
                            raise
                        case["failed"][w] = f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
                        continue
                    readers[w] = read
                times: dict[str, list[float]] = {w: [] for w in readers}
                for _ in range(args.repeat):
                    for w, read in readers.items():
                        start = time.perf_counter()
                        read()
                        times[w].append(time.perf_counter() - start)
                case["median_s"] = {w: statistics.median(t) for w, t in times.items()}
                for w in readers:
                    case["memory"][w] = memory(sys.executable, w, warehouse, layout, paths, dnf)
                print(json.dumps(case))
                cases.append(case)
        return {
            "cases": cases,
            "files": {layout: len(paths) for layout, paths in files.items()},
            "bytes": {layout: sum(os.path.getsize(p) for p in paths) for layout, paths in files.items()},
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:,.1f} ms"


def render(args: argparse.Namespace, figures: dict[str, Any]) -> str:
    env, versions = figures["env"], figures["versions"]
    lines = [
        "# Selective read benchmark",
        "",
        f"{env['date']}: {args.rows:,} rows (int64 id in order, a string of 100 values, a uniform float64, a "
        f"timestamp; zstd level 1 Parquet) written by paimon-core in {args.commits} commits into an append "
        "table, once per row-group layout. Each filtered read is checked, then timed as the median of "
        f"{args.repeat} interleaved rounds; memory is one read in a fresh process (growth of peak RSS, and "
        "the peak of Arrow's memory pool). `pyarrow` is `pyarrow.parquet.read_table(<the table's data files>, "
        "filters=...)`. Produced by `benchmarks/selective_read_bench.py`.",
        f"Python {env['python']}, {env['cpus']} CPUs, {env['platform']}; "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + ".",
        "",
        "| layout | filter | rows kept | row groups kept | paimon-core | pyarrow | pypaimon | paimon-core "
        "vs pyarrow (time) | paimon-core vs pypaimon (time) | peak RSS growth: paimon-core / pyarrow / pypaimon "
        "| Arrow pool peak: paimon-core / pyarrow / pypaimon |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    worst = 0.0
    for case in figures["cases"]:
        med, mem = case["median_s"], case["memory"]
        ours, raw, pyp = med.get("paimon-core"), med.get("pyarrow"), med.get("pypaimon")
        versus_raw = ours / raw if ours and raw else None
        if versus_raw is not None and case["fraction"] == FRACTIONS[0]:
            worst = max(worst, versus_raw)
        pyp_cell = _ms(pyp) if pyp is not None else ("failed" if "pypaimon" in case["failed"] else "—")

        def mb(key: str, mem: dict[str, Any] = mem) -> str:
            return " / ".join(
                f"{mem[w][key]:,.0f}" if w in mem else "—" for w in ("paimon-core", "pyarrow", "pypaimon")
            )

        lines.append(
            f"| {LAYOUT_LABELS[case['layout']]} | `{case['filter']}` | {case['rows']:,} | "
            f"{case['row_groups_kept']} of {case['row_groups']} | {_ms(ours)} | {_ms(raw)} | {pyp_cell} | "
            f"{versus_raw:.2f}x | {(f'{ours / pyp:.2f}x' if ours and pyp else '—')} | {mb('rss_growth_mb')} MB | "
            f"{mb('arrow_peak_mb')} MB |"
        )
    verdict = "met" if worst <= TARGET_TIME_VS_PYARROW else "NOT met"
    lines += [
        "",
        f"**0.1% selective reads: at most {worst:.2f}x pyarrow's time on the same files (target <= "
        f"{TARGET_TIME_VS_PYARROW:.0f}x: {verdict}).**",
        "",
        "Row groups kept: those pyarrow's statistics cannot rule out (paimon-core's pruning keeps the same). A "
        "clustered filter decodes only those; a scattered one (`value < x`) decodes every row group, the "
        "columns it needs, batch by batch, keeping only what matches.",
        "",
        "Files: "
        + "; ".join(
            f"{LAYOUT_LABELS[layout]}: {figures['files'][layout]} files, {figures['bytes'][layout] / 1e6:.1f} MB"
            for layout in LAYOUTS
        )
        + ".",
    ]
    failed = [(c["layout"], c["filter"], c["failed"]["pypaimon"]) for c in figures["cases"] if c["failed"]]
    if failed:
        lines += ["", "pypaimon reads that failed or returned wrong rows (not timed):", ""]
        lines += [f"- {layout}, `{name}`: {reason}" for layout, name, reason in failed]
    load = env["load_avg"]
    lines += [
        "",
        f"Load average at the end: {', '.join(f'{x:.1f}' for x in load)}"
        + (" (the machine was shared: absolute times are pessimistic)." if load[0] > env["cpus"] else "."),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows in each table")
    parser.add_argument("--full", action="store_true", help="10,000,000 rows (the issue's size)")
    parser.add_argument("--commits", type=int, default=4, help="commits (data files) per table")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved read rounds; the median counts")
    parser.add_argument("--no-pypaimon", action="store_true", help="leave pypaimon out even if installed")
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if args.full:
        args.rows = 10_000_000

    versions = {"pyarrow": pa.__version__, "paimon-core": importlib.metadata.version("paimon-core")}
    try:
        if not args.no_pypaimon:
            versions["pypaimon"] = importlib.metadata.version("pypaimon")
    except importlib.metadata.PackageNotFoundError:
        print("selective-read bench: pypaimon is not installed; its columns stay empty")
    figures = measure(args, versions)
    figures["versions"] = versions
    figures["env"] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "cpus": os.cpu_count() or 1,
        "platform": platform.platform(),
        "load_avg": list(load_average()),
    }
    figures["args"] = {
        k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "child"
    }
    text = render(args, figures)
    print(text)
    name = "results-selective-read-full" if args.full else "results-selective-read"
    write_results(args.output_dir, name, text, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
