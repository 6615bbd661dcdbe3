"""Append and read benchmark: paimon-core against raw ``pyarrow.parquet`` and pypaimon on the same data.

Run it with ``./dev bench`` (a venv with paimon-core, pypaimon 2.1.0 and the pyarrow it pins), or directly
with any Python that has those installed: ``python benchmarks/run.py [--rows N ...]``.

Measured, each as the best of ``--repeat`` runs (``time.perf_counter``), all with zstd level 1 Parquet:

* one write of ``--rows`` rows (for the tables: one commit) and a full read of them;
* ``--commits`` commits of ``--commit-rows`` rows each, as the mean latency of one commit.

Results go to stdout and to ``results.md`` / ``results.json`` in ``--output-dir``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness import best_of, environment, stopwatch, write_results

ZSTD_LEVEL = 1
# The same file settings for every table: Paimon option keys (paimon-core and pypaimon read the same ones).
TABLE_OPTIONS = {
    "file.format": "parquet",
    "file.compression": "zstd",
    "file.compression.zstd-level": str(ZSTD_LEVEL),
}
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("category", pa.string()),
        ("value", pa.float64()),
        ("ts", pa.timestamp("us")),
    ]
)
# Issue targets: ours vs raw Parquet (speed ratios, higher is better) and per-commit latency vs pypaimon.
TARGET_WRITE_RATIO = 0.8
TARGET_READ_RATIO = 0.9
TARGET_COMMIT_RATIO = 1.0


def make_data(rows: int, seed: int = 42) -> pa.Table:
    """``rows`` rows: sequential ids, one of 100 categories, a uniform float and microsecond timestamps."""
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


@dataclass
class Result:
    """Best-of-N seconds for one implementation; ``None`` where not measured."""

    name: str
    version: str
    write_s: float | None = None
    read_s: float | None = None
    commits_s: float | None = None
    commit_count: int = 0
    status: str = "ok"
    notes: list[str] = field(default_factory=list)

    @property
    def per_commit_s(self) -> float | None:
        return (
            self.commits_s / self.commit_count if self.commits_s is not None and self.commit_count else None
        )


def check_read(expected: pa.Table, got: pa.Table | None, who: str) -> None:
    """Cheap check that a full read returned every row (order may differ)."""
    if got is None or got.num_rows != expected.num_rows:
        raise AssertionError(
            f"{who}: read {0 if got is None else got.num_rows} rows, wrote {expected.num_rows}"
        )
    if pc.sum(got["id"]).as_py() != pc.sum(expected["id"]).as_py():
        raise AssertionError(f"{who}: the ids read back differ from the ids written")


def bench_raw_parquet(data: pa.Table, repeat: int, workdir: Path) -> Result:
    result = Result("raw pyarrow.parquet", pa.__version__)

    def write(d: Path) -> float:
        with stopwatch() as t:
            pq.write_table(data, d / "data.parquet", compression="zstd", compression_level=ZSTD_LEVEL)
        return t[0]

    def read(d: Path) -> float:
        pq.write_table(data, d / "data.parquet", compression="zstd", compression_level=ZSTD_LEVEL)
        with stopwatch() as t:
            got = pq.read_table(d / "data.parquet")
        check_read(data, got, result.name)
        return t[0]

    result.write_s = best_of(repeat, write, workdir)
    result.read_s = best_of(repeat, read, workdir)
    return result


def bench_pypaimon(data: pa.Table, batches: list[pa.Table], repeat: int, workdir: Path) -> Result:
    from pypaimon import CatalogFactory, Schema

    result = Result("pypaimon", importlib.metadata.version("pypaimon"), commit_count=len(batches))

    def new_table(d: Path) -> Any:
        catalog = CatalogFactory.create({"warehouse": str(d / "warehouse")})
        catalog.create_database("bench", True)
        catalog.create_table(
            "bench.t", Schema.from_pyarrow_schema(SCHEMA, options=dict(TABLE_OPTIONS)), False
        )
        return catalog.get_table("bench.t")

    def append(table: Any, part: pa.Table) -> None:
        builder = table.new_batch_write_builder()
        writer = builder.new_write()
        committer = builder.new_commit()
        try:
            writer.write_arrow(part)
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()

    def read_all(table: Any) -> pa.Table:
        builder = table.new_read_builder()
        return builder.new_read().to_arrow(builder.new_scan().plan().splits())

    result.write_s, result.read_s, result.commits_s = measure_table(
        data, batches, repeat, workdir, new_table, append, read_all, result.name
    )
    return result


def bench_ours(data: pa.Table, batches: list[pa.Table], repeat: int, workdir: Path) -> Result:
    """paimon-core through its public table API (``Catalog.open`` … ``table.append`` / ``to_arrow``)."""
    result = Result("paimon-core", importlib.metadata.version("paimon-core"), commit_count=len(batches))
    import paimon_core

    # Until the table API lands the harness still measures the others. A paimon_core that fails to
    # import is an error, not "not available".
    Catalog = getattr(paimon_core, "Catalog", None)
    if Catalog is None:
        result.status = "not available"
        result.notes.append("paimon_core.Catalog does not exist yet")
        return result

    # pypaimon never compacts; paimon-core compacts inline by default (as Paimon does), so the like-for-like
    # measurement is a write-only table (Paimon's setup for many or frequent writers plus a compaction job).
    options = {**TABLE_OPTIONS, "write-only": "true"}
    result.notes.append("table option write-only=true (no inline compaction, like pypaimon)")

    def new_table(d: Path) -> Any:
        catalog = Catalog.open(str(d / "warehouse"), create=True)
        catalog.create_database("bench", exist_ok=True)
        return catalog.create_table("bench.t", SCHEMA, options=options)

    def append(table: Any, part: pa.Table) -> None:
        table.append(part)

    def read_all(table: Any) -> pa.Table:
        return table.to_arrow()

    result.write_s, result.read_s, result.commits_s = measure_table(
        data, batches, repeat, workdir, new_table, append, read_all, result.name
    )
    return result


def measure_table(
    data: pa.Table,
    batches: list[pa.Table],
    repeat: int,
    workdir: Path,
    new_table: Callable[[Path], Any],
    append: Callable[[Any, pa.Table], None],
    read_all: Callable[[Any], pa.Table],
    who: str,
) -> tuple[float, float, float]:
    """Best-of-``repeat`` seconds for: one append of ``data``, a full read of it, all ``batches`` commits."""

    def write(d: Path) -> float:
        table = new_table(d)
        with stopwatch() as t:
            append(table, data)
        return t[0]

    def read(d: Path) -> float:
        table = new_table(d)
        append(table, data)
        with stopwatch() as t:
            got = read_all(table)
        check_read(data, got, who)
        return t[0]

    def commits(d: Path) -> float:
        table = new_table(d)
        with stopwatch() as t:
            for part in batches:
                append(table, part)
        check_read(pa.concat_tables(batches), read_all(table), who)
        return t[0]

    return best_of(repeat, write, workdir), best_of(repeat, read, workdir), best_of(repeat, commits, workdir)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


def summarize(raw: Result, others: list[Result]) -> list[dict[str, Any]]:
    """Speed relative to raw Parquet (raw seconds / its seconds) and commit latency relative to pypaimon."""
    pypaimon = next((r for r in others if r.name == "pypaimon"), None)
    rows = []
    for r in others:
        rows.append(
            {
                "name": r.name,
                "write_speed_vs_raw_parquet": ratio(raw.write_s, r.write_s),
                "read_speed_vs_raw_parquet": ratio(raw.read_s, r.read_s),
                "commit_latency_vs_pypaimon": ratio(
                    r.per_commit_s, pypaimon.per_commit_s if pypaimon else None
                ),
            }
        )
    return rows


def _fmt(value: float | None, unit: str = "", digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{unit}"


def render_markdown(
    args: argparse.Namespace, env: dict[str, str], results: list[Result], ratios: list[dict[str, Any]]
) -> str:
    lines = [
        f"Benchmark ({env['date']}): {args.rows:,} rows (int64 id, string category of 100 values, float64 value,",
        f"timestamp[us] ts), zstd level {ZSTD_LEVEL} Parquet, local disk, best of {args.repeat}; "
        f"{args.commits} commits of {args.commit_rows:,} rows.",
        f"Python {env['python']}, pyarrow {env['pyarrow']}, {env['cpus']} CPUs, {env['platform']}.",
        "",
        f"| | write {args.rows:,} rows (1 commit) | full read | {args.commits} commits of {args.commit_rows:,} rows "
        "| per commit | status |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.name} {r.version} | {_fmt(r.write_s, ' s')} | {_fmt(r.read_s, ' s')} "
            f"| {_fmt(r.commits_s, ' s')} | {_fmt(None if r.per_commit_s is None else r.per_commit_s * 1000, ' ms', 1)} "
            f"| {r.status} |"
        )
    lines += [
        "",
        "| | write speed vs raw Parquet (target ≥ "
        f"{TARGET_WRITE_RATIO}) | read speed vs raw Parquet (target ≥ {TARGET_READ_RATIO}) "
        f"| commit latency vs pypaimon (target ≤ {TARGET_COMMIT_RATIO}) |",
        "|---|---:|---:|---:|",
    ]
    for row in ratios:
        lines.append(
            f"| {row['name']} | {_fmt(row['write_speed_vs_raw_parquet'], 'x', 2)} "
            f"| {_fmt(row['read_speed_vs_raw_parquet'], 'x', 2)} | {_fmt(row['commit_latency_vs_pypaimon'], 'x', 2)} |"
        )
    notes = [f"- {r.name}: {note}" for r in results for note in r.notes]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rows", type=int, default=1_000_000, help="rows in the single-commit write and the read"
    )
    parser.add_argument("--commits", type=int, default=100, help="number of small commits")
    parser.add_argument("--commit-rows", type=int, default=10_000, help="rows per small commit")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per measurement; the best counts")
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent, help="where results.* go")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a temp dir)")
    return parser.parse_args(argv)


def run_one(name: str, bench: Callable[[], Result]) -> Result:
    print(f"bench: {name} ...", flush=True)
    try:
        result = bench()
    except Exception as exc:
        traceback.print_exc()
        result = Result(name, "?", status="error", notes=[f"{type(exc).__name__}: {exc}"])
    print(f"bench: {name}: {result.status}", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data = make_data(args.rows)
    small = make_data(args.commits * args.commit_rows, seed=7)
    batches = [small.slice(i * args.commit_rows, args.commit_rows) for i in range(args.commits)]

    with tempfile.TemporaryDirectory(prefix="paimon-bench-", dir=args.workdir) as tmp:
        work = Path(tmp)
        raw = run_one("raw pyarrow.parquet", lambda: bench_raw_parquet(data, args.repeat, work))
        pypaimon = run_one("pypaimon", lambda: bench_pypaimon(data, batches, args.repeat, work))
        ours = run_one("paimon-core", lambda: bench_ours(data, batches, args.repeat, work))

    results = [raw, pypaimon, ours]
    ratios = summarize(raw, [pypaimon, ours])
    env = environment()
    markdown = render_markdown(args, env, results, ratios)
    print()
    print(markdown)

    payload = {
        "environment": env,
        "parameters": {
            "rows": args.rows,
            "commits": args.commits,
            "commit_rows": args.commit_rows,
            "repeat": args.repeat,
            "table_options": TABLE_OPTIONS,
        },
        "results": [{**asdict(r), "per_commit_s": r.per_commit_s} for r in results],
        "ratios": ratios,
        "targets": {
            "write_speed_vs_raw_parquet": TARGET_WRITE_RATIO,
            "read_speed_vs_raw_parquet": TARGET_READ_RATIO,
            "commit_latency_vs_pypaimon": TARGET_COMMIT_RATIO,
        },
    }
    md, js = write_results(args.output_dir, "results", markdown, payload)
    print(f"bench: wrote {md} and {js}")
    return 1 if any(r.status == "error" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
