"""Deletion-vector read benchmark: a primary-key table after upsert commits, with deletion vectors and without.

Run it with ``./dev nox -s bench_deletion_vectors`` (a venv with paimon-core and pypaimon), or
``python benchmarks/deletion_vectors_bench.py`` next to paimon-core (pypaimon's figures are then left out).

Two ``bucket = 4`` deduplicate tables with the same schema (int64 id, two strings, float64, timestamp; zstd
level 1 Parquet), one with ``deletion-vectors.enabled = true``, get the same history: one commit of
``--base-rows`` rows, then ``--commits`` upsert commits, each of a random ``--min-fraction`` to
``--max-fraction`` of the keys. Both writers compact inline (Paimon's default): with deletion vectors every
commit's lookup compaction takes level 0 up and marks the replaced rows deleted in their files' vectors,
so a batch read is plain Parquet minus marked rows; without them a read merges the sorted runs by key.

Measured in one run, on the tables' final snapshot:

* a full ``table.to_arrow()`` of each table, against ``pyarrow.parquet`` reading the same final rows from
  one file (written once from the merged result), and against pypaimon reading the same table;
* the same with a key-range filter (``--filter-fraction`` of the keys), each way pushing it down as it can;
* the mean upsert commit latency of each table, as context.

Every read is checked first (both tables, the Parquet file and pypaimon must give the expected rows), so a
wrong read cannot produce a fast number; a pypaimon read that fails or differs is reported as not
supported. Reads are timed in ``--repeat`` interleaved rounds (a busy moment of the shared machine hits
every way alike) after each way's first read, which is reported apart (a table's first read decodes its
manifests); the median of the rounds counts. Results go to stdout and to ``results-deletion-vectors.md`` / ``.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness import load_average, write_results

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("name", pa.string()),
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
TABLES = {"dv": "bench.with_dv", "merge": "bench.without_dv"}
LABELS = {"dv": "deletion vectors", "merge": "no deletion vectors"}
CATEGORIES = np.array([f"category-{i:03d}" for i in range(100)], dtype=object)
NAMES = np.array([f"customer-{i:06d}-{i * 7919 % 100_003:05d}" for i in range(50_000)], dtype=object)


@dataclass
class History:
    base: pa.Table
    upserts: list[pa.Table]
    expected: pa.Table  # the final rows, sorted by id


def _rows(ids: np.ndarray, columns: dict[str, np.ndarray]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "category": pa.array(CATEGORIES[columns["category"]], pa.string()),
            "name": pa.array(NAMES[columns["name"]], pa.string()),
            "value": pa.array(columns["value"]),
            "ts": pa.array(columns["ts"].astype("datetime64[us]")),
        },
        schema=SCHEMA,
    )


def make_history(args: argparse.Namespace) -> History:
    """The base rows, the upsert commits and the merged result (the last version of every key)."""
    rng = np.random.default_rng(args.seed)
    n = args.base_rows
    start = int(np.datetime64("2025-01-01T00:00:00", "us").astype(np.int64))

    def draw(size: int, step: int) -> dict[str, np.ndarray]:
        return {
            "category": rng.integers(0, len(CATEGORIES), size),
            "name": rng.integers(0, len(NAMES), size),
            "value": rng.random(size),
            "ts": np.full(size, start + step * 60_000_000, dtype=np.int64),
        }

    state = draw(n, 0)
    base = _rows(np.arange(n, dtype=np.int64), state)
    upserts = []
    for step in range(1, args.commits + 1):
        size = max(1, round(n * rng.uniform(args.min_fraction, args.max_fraction)))
        ids = np.sort(rng.choice(n, size=size, replace=False))
        rng.shuffle(ids)  # arrival order is not key order
        columns = draw(size, step)
        for name, values in columns.items():
            state[name][ids] = values
        upserts.append(_rows(ids.astype(np.int64), columns))
    return History(base, upserts, _rows(np.arange(n, dtype=np.int64), state))


def build_tables(history: History, warehouse: Path) -> dict[str, dict[str, Any]]:
    """Both tables with the same history, committed alternately; the mean upsert commit latency of each."""
    from paimon_core import Catalog

    catalog = Catalog.open(str(warehouse), create=True)
    catalog.create_database("bench", exist_ok=True)
    tables = {
        kind: catalog.create_table(
            name,
            SCHEMA,
            primary_keys=["id"],
            options={**OPTIONS, "deletion-vectors.enabled": "true" if kind == "dv" else "false"},
        )
        for kind, name in TABLES.items()
    }
    times: dict[str, list[float]] = {kind: [] for kind in tables}
    for table in tables.values():
        table.append(history.base)
    for batch in history.upserts:
        for kind, table in tables.items():
            start = time.perf_counter()
            table.append(batch)
            times[kind].append(time.perf_counter() - start)
    return {
        kind: {"commit_s": float(np.mean(times[kind])), **layout(catalog.get_table(TABLES[kind]))}
        for kind in tables
    }


def layout(table: Any) -> dict[str, Any]:
    """What a read of the final snapshot faces: data files per level, and rows deleted by vector."""
    levels: dict[int, int] = {}
    rows = level0_rows = 0
    for entry in table.live_entries():
        levels[entry.file.level] = levels.get(entry.file.level, 0) + 1
        rows += entry.file.row_count
        level0_rows += entry.file.row_count if entry.file.level == 0 else 0
    vectors = deleted = 0
    for entry in table.index_entries():
        for r in entry.file.dv_ranges or ():
            vectors += 1
            deleted += r.cardinality or 0
    return {
        "files_per_level": dict(sorted(levels.items())),
        "rows_in_files": rows,
        "rows_on_level0": level0_rows,
        "files_with_vectors": vectors,
        "rows_deleted_by_vector": deleted,
        "snapshots": len(list(table.snapshots())),
    }


def check(expected: pa.Table, got: pa.Table, who: str) -> None:
    """Raise unless ``got`` holds exactly the expected rows (in any order)."""
    if got.num_rows != expected.num_rows:
        raise AssertionError(f"{who}: {got.num_rows:,} rows read, {expected.num_rows:,} expected")
    if not got.select(expected.column_names).sort_by("id").equals(expected):
        raise AssertionError(f"{who}: the rows read differ from the expected rows")


def key_range(args: argparse.Namespace) -> tuple[int, int]:
    """``[lo, hi)``: ``--filter-fraction`` of the keys, in the middle of the key space."""
    width = max(1, round(args.base_rows * args.filter_fraction))
    lo = (args.base_rows - width) // 2
    return lo, lo + width


def paimon_core_readers(warehouse: Path, lo: int, hi: int) -> dict[str, Callable[[], pa.Table]]:
    from paimon_core import Catalog

    catalog = Catalog.open(str(warehouse))
    readers: dict[str, Callable[[], pa.Table]] = {}
    for kind, name in TABLES.items():
        table = catalog.get_table(name)
        readers[f"paimon-core {kind} full"] = table.to_arrow
        readers[f"paimon-core {kind} range"] = partial(
            table.to_arrow, filter=[("id", ">=", lo), ("id", "<", hi)]
        )
    return readers


def raw_readers(path: Path, lo: int, hi: int) -> dict[str, Callable[[], pa.Table]]:
    return {
        "raw full": lambda: pq.read_table(path),
        "raw range": lambda: pq.read_table(path, filters=[("id", ">=", lo), ("id", "<", hi)]),
    }


def pypaimon_readers(warehouse: Path, lo: int, hi: int) -> dict[str, Callable[[], pa.Table]]:
    """pypaimon's batch read of each table, whole and with the key range pushed into its read builder."""
    from pypaimon import CatalogFactory

    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    readers: dict[str, Callable[[], pa.Table]] = {}
    for kind, name in TABLES.items():
        table = catalog.get_table(name)

        def read(table: Any = table, ranged: bool = False) -> pa.Table:
            builder = table.new_read_builder()
            if ranged:
                builder = builder.with_filter(builder.new_predicate_builder().between("id", lo, hi - 1))
            data: pa.Table = builder.new_read().to_arrow(builder.new_scan().plan().splits())
            return data

        readers[f"pypaimon {kind} full"] = read
        readers[f"pypaimon {kind} range"] = partial(read, ranged=True)
    return readers


def verified(
    readers: dict[str, Callable[[], pa.Table]], full: pa.Table, ranged: pa.Table
) -> tuple[dict[str, Callable[[], pa.Table]], dict[str, float], dict[str, str]]:
    """Each reader's first read, checked: the readers that gave the right rows with that read's seconds,
    and for the others why not (pypaimon only; a wrong read of ours or of the Parquet file raises)."""
    good: dict[str, Callable[[], pa.Table]] = {}
    first: dict[str, float] = {}
    failed: dict[str, str] = {}
    for name, read in readers.items():
        start = time.perf_counter()
        try:
            got = read()
            first[name] = time.perf_counter() - start
            check(ranged if name.endswith("range") else full, got, name)
        except Exception as error:  # any pypaimon failure is a finding, not a crash
            if not name.startswith("pypaimon"):
                raise
            failed[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
            first.pop(name, None)
            continue
        good[name] = read
    return good, first, failed


def interleaved_medians(rounds: int, readers: dict[str, Callable[[], pa.Table]]) -> dict[str, float]:
    """Run the readers in turn for ``rounds`` rounds; the median seconds of each."""
    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(rounds):
        for name, read in readers.items():
            start = time.perf_counter()
            read()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:,.1f} ms"


def _cell(name: str, figures: dict[str, Any]) -> str:
    if name in figures["median_s"]:
        return _ms(figures["median_s"][name])
    if name in figures["failed"]:
        return f"not supported by pypaimon {figures['versions'].get('pypaimon')}"
    return "not measured"


def render(args: argparse.Namespace, figures: dict[str, Any]) -> str:
    med, first, env, tables = figures["median_s"], figures["first_s"], figures["env"], figures["tables"]
    pyp_version = figures["versions"].get("pypaimon")
    lo, hi = figures["key_range"]
    lines = [
        "# Deletion-vector read benchmark",
        "",
        f"{env['date']}: two `bucket = 4` deduplicate tables (int64 id, two strings, float64, timestamp; zstd "
        f"level 1 Parquet), one with `deletion-vectors.enabled = true`, each with the same {args.base_rows:,}-row "
        f"base commit and {args.commits} upsert commits of {args.min_fraction:.0%}-{args.max_fraction:.0%} "
        f"of the keys ({figures['upsert_rows']:,} upserted rows in all), inline compaction (Paimon's default). "
        f"Reads of the final snapshot, median of {args.repeat} interleaved rounds after a first read; range "
        f"reads filter `{lo:,} <= id < {hi:,}` ({args.filter_fraction:.0%} of the keys). "
        "Produced by `benchmarks/deletion_vectors_bench.py`.",
        f"Python {env['python']}, {env['cpus']} CPUs, {env['platform']}; "
        + ", ".join(f"{k} {v}" for k, v in figures["versions"].items())
        + ".",
        "",
        "| read | way | median | first read | vs raw Parquet (its time) | vs pypaimon, same table (speed) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for scope, label in (("full", "full read"), ("range", "key-range read")):
        raw = med[f"raw {scope}"]
        lines.append(f"| {label} | raw `pyarrow.parquet`, one file of the final rows | {_ms(raw)} | "
                     f"{_ms(first.get(f'raw {scope}'))} | 1.00x | — |")  # fmt: skip
        for kind in TABLES:
            ours = med[f"paimon-core {kind} full" if scope == "full" else f"paimon-core {kind} range"]
            pyp = f"pypaimon {kind} {scope}"
            versus_pyp = f"{med[pyp] / ours:.1f}x faster" if pyp in med else _cell(pyp, figures)
            lines.append(
                f"| {label} | paimon-core, {LABELS[kind]} | {_ms(ours)} | "
                f"{_ms(first.get(f'paimon-core {kind} {scope}'))} | {ours / raw:.2f}x | {versus_pyp} |"
            )
        for kind in TABLES:
            pyp = f"pypaimon {kind} {scope}"
            if pyp in med:
                lines.append(
                    f"| {label} | pypaimon {pyp_version}, {LABELS[kind]} | {_ms(med[pyp])} | "
                    f"{_ms(first.get(pyp))} | {med[pyp] / raw:.2f}x | — |"
                )
            elif pyp_version is not None:
                lines.append(
                    f"| {label} | pypaimon {pyp_version}, {LABELS[kind]} | {_cell(pyp, figures)} | — | — | — |"
                )
    dv, merge = med["paimon-core dv full"], med["paimon-core merge full"]
    headline = (
        f"**Full read with deletion vectors: {dv / med['raw full']:.2f}x raw Parquet's time, "
        f"{merge / dv:.2f}x the speed of the same read without them"
    )
    if "pypaimon dv full" in med:
        headline += f", {med['pypaimon dv full'] / dv:.1f}x pypaimon's speed on the same table"
    lines += [
        "",
        headline + ".**",
        "",
        "A range read skips nothing here: the Parquet file is one row group, and every table file holds keys "
        "from the whole range (keys are hashed to buckets), so each way reads everything and filters rows.",
    ]
    if figures["failed"]:
        lines += ["", "pypaimon reads that failed or returned wrong rows (not timed):", ""]
        lines += [f"- `{name}`: {reason}" for name, reason in figures["failed"].items()]
    lines += [
        "",
        "| table | upsert commit (mean) | data files per level | rows in them | files with a vector "
        "| rows deleted by vector |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for kind in TABLES:
        t = tables[kind]
        levels = ", ".join(f"L{level}: {count}" for level, count in t["files_per_level"].items())
        lines.append(
            f"| {LABELS[kind]} | {_ms(t['commit_s'])} | {levels} | {t['rows_in_files']:,} | "
            f"{t['files_with_vectors']} | "
            f"{t['rows_deleted_by_vector']:,} |"
        )
    dv_t, merge_t = tables["dv"], tables["merge"]
    dv_rows = dv_t["rows_in_files"] - dv_t["rows_on_level0"]  # level 0 is invisible to its batch reads
    lines += [
        "",
        f"With deletion vectors a read decodes the {dv_rows:,} rows of the files above level 0 "
        f"({dv_rows / figures['rows']:.2f}x the final rows) and drops the "
        f"{dv_t['rows_deleted_by_vector']:,} its vectors mark, with no merge; without them it merges "
        f"{merge_t['rows_in_files']:,} rows across the sorted runs of each bucket, keeping each key's newest.",
    ]
    load = figures["env"]["load_avg"]
    lines += [
        "",
        f"Final rows: {figures['rows']:,} ({figures['parquet_bytes'] / 1e6:.1f} MB as one zstd Parquet file). "
        f"Load average at the end: {', '.join(f'{x:.1f}' for x in load)}"
        + (
            " (the machine was shared: absolute times are pessimistic, ratios hold)."
            if load[0] > env["cpus"]
            else "."
        ),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-rows", type=int, default=500_000, help="rows (keys) of the base commit")
    parser.add_argument("--commits", type=int, default=100, help="upsert commits after the base")
    parser.add_argument(
        "--min-fraction", type=float, default=0.01, help="least share of keys one commit upserts"
    )
    parser.add_argument(
        "--max-fraction", type=float, default=0.05, help="largest share of keys one commit upserts"
    )
    parser.add_argument(
        "--filter-fraction", type=float, default=0.1, help="share of keys the range read keeps"
    )
    parser.add_argument("--repeat", type=int, default=5, help="interleaved read rounds; the median counts")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--no-pypaimon", action="store_true", help="leave pypaimon out even if installed")
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent)
    args = parser.parse_args(argv)

    versions = {"pyarrow": pa.__version__, "paimon-core": importlib.metadata.version("paimon-core")}
    try:
        if not args.no_pypaimon:
            versions["pypaimon"] = importlib.metadata.version("pypaimon")
    except importlib.metadata.PackageNotFoundError:
        print("deletion-vectors bench: pypaimon is not installed; its rows stay out")
    started = time.perf_counter()
    history = make_history(args)
    lo, hi = key_range(args)
    expected = history.expected
    ranged = expected.slice(lo, hi - lo)  # sorted by id, and id == row index
    workdir = Path(tempfile.mkdtemp(prefix="paimon-dv-bench-"))
    try:
        tables = build_tables(history, workdir / "warehouse")
        print(f"tables written in {time.perf_counter() - started:.0f} s: {json.dumps(tables)}")
        parquet = workdir / "final.parquet"
        pq.write_table(expected, parquet, compression="zstd", compression_level=1)
        readers = {**raw_readers(parquet, lo, hi), **paimon_core_readers(workdir / "warehouse", lo, hi)}
        if "pypaimon" in versions:
            readers.update(pypaimon_readers(workdir / "warehouse", lo, hi))
        readers, first, failed = verified(readers, expected, ranged)
        medians = interleaved_medians(args.repeat, readers)
        figures: dict[str, Any] = {
            "env": {
                "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "python": platform.python_version(),
                "cpus": os.cpu_count() or 1,
                "platform": platform.platform(),
                "load_avg": list(load_average()),
            },
            "versions": versions,
            "rows": expected.num_rows,
            "upsert_rows": sum(b.num_rows for b in history.upserts),
            "parquet_bytes": parquet.stat().st_size,
            "key_range": [lo, hi],
            "tables": tables,
            "median_s": medians,
            "first_s": first,
            "failed": failed,
            "wall_s": time.perf_counter() - started,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    markdown = render(args, figures)
    print(markdown)
    payload = {"args": {k: v for k, v in vars(args).items() if k != "output_dir"}, **figures}
    write_results(args.output_dir, "results-deletion-vectors", markdown, payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
