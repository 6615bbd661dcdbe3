"""Data file formats benchmark: an append table written and read in Parquet, ORC and Avro, against the raw
libraries writing and reading the same rows.

Run it with ``./dev nox -s bench_formats`` or ``python benchmarks/formats_bench.py`` next to paimon-core
(``--rows 1000000`` by default; ``--rows 20000`` is a smoke run).

The rows are those of the peers table in ENVIRONMENT.md: int64 id, string category, float64 value,
timestamp. For each format, in ``--repeat`` interleaved rounds (a busy moment of the shared machine hits
every way alike), each in a fresh directory:

* paimon-core: ``Table.append`` of the rows into a ``file.format = <format>`` table (zstd level 1), then a
  full ``Table.to_arrow``;
* raw: ``pyarrow.parquet`` / ``pyarrow.orc`` ``write_table`` and ``read_table`` of one file (zstd), and for
  Avro fastavro writing the rows' records with Paimon's Avro schema (zstandard level 1) and reading them
  back into an Arrow table.

Every read is checked against the rows written before it is timed, so a wrong read cannot produce a fast
number. The median of the rounds counts. Results go to stdout and ``results-formats.md`` / ``.json``.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq

from harness import environment, load_average, median, write_results

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("ts", pa.timestamp("us")),
    ]
)
FORMATS = ("parquet", "orc", "avro")


def make_rows(count: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    categories = np.array([f"category-{i:03d}" for i in range(100)], dtype=object)
    start = int(np.datetime64("2025-01-01T00:00:00", "us").astype(np.int64))
    return pa.table(
        {
            "id": pa.array(np.arange(count, dtype=np.int64)),
            "category": pa.array(categories[rng.integers(0, 100, count)], pa.string()),
            "value": pa.array(rng.random(count)),
            "ts": pa.array((start + rng.integers(0, 10**12, count)).astype("datetime64[us]")),
        },
        schema=SCHEMA,
    )


def paimon_round(fmt: str, rows: pa.Table, directory: Path) -> tuple[float, float]:
    """Seconds of a paimon-core append and of a full read of a ``fmt`` table holding ``rows``."""
    from paimon_core import Catalog

    catalog = Catalog.open(str(directory), create=True)
    catalog.create_database("bench", exist_ok=True)
    options = {"file.format": fmt, "file.compression": "zstd", "file.compression.zstd-level": "1"}
    table = catalog.create_table("bench.t", SCHEMA, options=options)
    start = time.perf_counter()
    table.append(rows)
    written = time.perf_counter() - start
    start = time.perf_counter()
    read = catalog.get_table("bench.t").to_arrow()
    elapsed = time.perf_counter() - start
    _check(read, rows, f"paimon-core {fmt}")
    return written, elapsed


def raw_round(fmt: str, rows: pa.Table, directory: Path) -> tuple[float, float]:
    """Seconds of the raw library writing ``rows`` to one ``fmt`` file and reading it back."""
    path = directory / f"rows.{fmt}"
    write, read = RAW[fmt]
    start = time.perf_counter()
    write(rows, path)
    written = time.perf_counter() - start
    start = time.perf_counter()
    back = read(path)
    elapsed = time.perf_counter() - start
    _check(back, rows, f"raw {fmt}")
    return written, elapsed


def _avro_write(rows: pa.Table, path: Path) -> None:
    from paimon_core.formats import avro_schema

    schema = fastavro.parse_schema(avro_schema(rows.schema))
    records = rows.cast(pa.schema([f.with_type(pa.int64()) if f.name == "ts" else f for f in rows.schema]))
    with path.open("wb") as out:
        fastavro.writer(out, schema, records.to_pylist(), codec="zstandard", codec_compression_level=1)


def _avro_read(path: Path) -> pa.Table:
    records = list(fastavro.reader(io.BytesIO(path.read_bytes())))
    return pa.Table.from_pylist(records).cast(SCHEMA, safe=False)


RAW: dict[str, tuple[Callable[[pa.Table, Path], None], Callable[[Path], pa.Table]]] = {
    "parquet": (
        lambda rows, path: pq.write_table(rows, path, compression="zstd", compression_level=1),
        lambda path: pq.read_table(path),
    ),
    "orc": (
        lambda rows, path: orc.write_table(rows, path, compression="zstd"),
        lambda path: orc.read_table(path).cast(SCHEMA),
    ),
    "avro": (_avro_write, _avro_read),
}


def _check(read: pa.Table, rows: pa.Table, what: str) -> None:
    ordered = read.select(SCHEMA.names).sort_by("id").cast(SCHEMA)
    if not ordered.equals(rows):
        raise AssertionError(f"{what} read back other rows than were written")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent)
    args = parser.parse_args(argv)
    rows = make_rows(args.rows)
    times: dict[str, dict[str, list[float]]] = {
        f"{way} {fmt}": {"write": [], "read": []} for fmt in FORMATS for way in ("paimon-core", "raw")
    }
    for _ in range(args.repeat):
        for fmt in FORMATS:
            for way, run in (("paimon-core", paimon_round), ("raw", raw_round)):
                with tempfile.TemporaryDirectory() as directory:
                    written, read = run(fmt, rows, Path(directory))
                times[f"{way} {fmt}"]["write"].append(written)
                times[f"{way} {fmt}"]["read"].append(read)
    result: dict[str, Any] = {
        "rows": args.rows,
        "repeat": args.repeat,
        "environment": environment(),
        "load_average": load_average(),
        "median_s": {way: {k: median(v) for k, v in t.items()} for way, t in times.items()},
    }
    lines = [
        f"# Data file formats: {args.rows:,} rows, median of {args.repeat}",
        "",
        "| way | write s | read s |",
        "|---|---|---|",
    ]
    for way, figures in result["median_s"].items():
        lines.append(f"| {way} | {figures['write']:.3f} | {figures['read']:.3f} |")
    markdown = "\n".join(lines) + "\n"
    print(markdown)
    write_results(args.output_dir, "results-formats", markdown, result)


if __name__ == "__main__":
    main()
