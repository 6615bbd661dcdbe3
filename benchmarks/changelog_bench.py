"""Changelog production cost: upsert commits into a primary-key table under each ``changelog-producer``.

Run it with ``./dev nox -s bench_changelog`` or ``python benchmarks/changelog_bench.py``.

Measured in one run, on the same data (``--commits`` commits of ``--commit-rows`` upserts into a
``bucket = 4`` deduplicate table whose keys repeat across commits, zstd level 1 Parquet), for each producer:

* the mean latency of one commit (the writer's flush, its compaction and the changelog it produces, and the
  commit), as a ratio against ``changelog-producer = none`` with the same compaction (Paimon's default
  universal compaction; ``full-compaction`` with ``full-compaction.delta-commits = 1``, its cost set against
  ``none`` doing the same full compaction) and against ``pyarrow.parquet`` writing the commit's rows once;
* the changelog rows produced per commit, and a check that replaying them gives the table's content.

Figures go to ``results-changelog.md`` / ``results-changelog.json``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness import stopwatch, write_results

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("value", pa.float64()),
    ]
)
OPTIONS = {"bucket": "4", "file.compression": "zstd", "file.compression.zstd-level": "1"}
PRODUCERS = ("none", "input", "lookup", "full-compaction")


def make_batches(commits: int, rows: int, key_space: int, seed: int = 11) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(commits):
        ids = rng.choice(key_space, size=rows, replace=False).astype(np.int64)
        batches.append(
            pa.table(
                {"id": ids, "category": pa.array([f"c{v % 50}" for v in ids]), "value": rng.random(rows)},
                schema=SCHEMA,
            )
        )
    return batches


def bench_producer(batches: list[pa.Table], workdir: Path, producer: str, full: bool) -> dict[str, Any]:
    from paimon_core import Catalog

    catalog = Catalog.open(str(workdir / f"warehouse-{producer}-{full}"), create=True)
    catalog.create_database("bench", exist_ok=True)
    options = {**OPTIONS, "changelog-producer": producer}
    if full:
        options["full-compaction.delta-commits"] = "1"
    table = catalog.create_table("bench.t", SCHEMA, primary_keys=["id"], options=options)
    times = []
    for batch in batches:
        with stopwatch() as t:
            table.append(batch)
        times.append(t[0])
    changelog_rows = sum(s.changelog_record_count or 0 for s in table.snapshots())
    if producer != "none":
        reading = table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
        state: dict[int, tuple[Any, ...]] = {}
        for change in reading.stream(follow=False):
            for row in change.to_pylist():
                if row["rowkind"] in ("+I", "+U"):
                    state[row["id"]] = (row["category"], row["value"])
                elif row["rowkind"] == "-D":
                    state.pop(row["id"], None)
        content = {r["id"]: (r["category"], r["value"]) for r in table.to_arrow().to_pylist()}
        if state != content:
            raise AssertionError(f"{producer}: replaying the changelog does not give the table's content")
    return {"commit_s": float(np.mean(times)), "changelog_rows_per_commit": changelog_rows / len(batches)}


def bench_raw(batches: list[pa.Table], workdir: Path) -> float:
    times = []
    for index, batch in enumerate(batches):
        with stopwatch() as t:
            pq.write_table(batch, workdir / f"raw-{index}.parquet", compression="zstd", compression_level=1)
        times.append(t[0])
    return float(np.mean(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=30)
    parser.add_argument("--commit-rows", type=int, default=20_000)
    parser.add_argument("--key-space", type=int, default=100_000)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-changelog")))
    args = parser.parse_args()
    batches = make_batches(args.commits, args.commit_rows, args.key_space)
    workdir = Path(tempfile.mkdtemp(prefix="changelog-bench-"))
    try:
        raw_s = bench_raw(batches, workdir)
        results: dict[str, Any] = {"raw_parquet_commit_s": raw_s}
        for full in (False, True):
            for producer in PRODUCERS:
                if full and producer not in ("none", "full-compaction"):
                    continue
                if not full and producer == "full-compaction":
                    continue
                name = f"{producer}{' (full compaction every commit)' if full else ''}"
                results[name] = bench_producer(batches, workdir, producer, full)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    base = results["none"]["commit_s"]
    base_full = results["none (full compaction every commit)"]["commit_s"]
    lines = [
        "# Changelog production cost per commit",
        "",
        f"{args.commits} commits of {args.commit_rows:,} upserts (key space {args.key_space:,}) into a "
        "`bucket = 4` deduplicate table; mean latency of one commit.",
        "",
        "| producer | commit | vs `none` (same compaction) | vs raw Parquet write | changelog rows / commit |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, figures in results.items():
        if name == "raw_parquet_commit_s":
            continue
        against = base_full if "full" in name else base
        lines.append(
            f"| {name} | {figures['commit_s'] * 1000:.0f} ms | {figures['commit_s'] / against:.2f}x | "
            f"{figures['commit_s'] / raw_s:.1f}x | {figures['changelog_rows_per_commit']:,.0f} |"
        )
    lines += ["", f"Raw `pyarrow.parquet` write of one commit's rows: {raw_s * 1000:.0f} ms."]
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    write_results(out.parent, out.name, text, results)
    print(text)


if __name__ == "__main__":
    main()
