"""Append-table writes within ``write-buffer-size``: Arrow memory, spilling to local disk, the rows written.

The memory probes run in a fresh interpreter reading its input from a memory-mapped Arrow file, so that the
Arrow pool's peak is the writer's alone (the input's buffers are the file's pages, not the pool's).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core import Catalog
from paimon_core.errors import ConfigError, DataFileError
from paimon_core.table import Table
from paimon_core.table._split import group_rows, pieces

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64()), ("value", pa.float64()), ("name", pa.string())])
MB = 1 << 20


def _data(rows: int, partitions: int, seed: int = 0) -> pa.Table:
    """Rows in random partition order: every input batch touches every partition."""
    rng = np.random.default_rng(seed)
    names = np.char.add("name-", (np.arange(rows) % 5000).astype(str)).astype(object)
    return pa.table(
        {
            "p": pa.array(rng.integers(0, partitions, rows).astype(np.int32)),
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "value": pa.array(rng.random(rows)),
            "name": pa.array(names, pa.string()),
        },
        schema=SCHEMA,
    )


def _table(catalog: Catalog, name: str, **options: str) -> Table:
    return catalog.create_table(f"db.{name}", SCHEMA, partition_keys=["p"], options=options)


def _rows(table: Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.to_arrow().to_pylist())


def _data_files(table: Table) -> list[Path]:
    return sorted(Path(table.path).rglob("*.parquet"))


def _row_groups(table: Table) -> int:
    return sum(pq.ParquetFile(f).metadata.num_row_groups for f in _data_files(table))


@pytest.fixture
def spill_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Where spill directories go (``tempfile``'s directory, pointed at an empty folder)."""
    root = tmp_path / "local-tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    yield root


def _spill_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


# --- memory --------------------------------------------------------------------------------------------------

_MEMORY_PROBE = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa
    from paimon_core import Catalog

    source, warehouse, shape, options = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    batch = pa.ipc.open_file(pa.memory_map(source)).get_batch(0)
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    keys = {"primary_keys": ["id", "p"]} if "bucket" in options else {}
    table = catalog.create_table("db.t", batch.schema, partition_keys=["p"], options=options, **keys)
    data = batch if shape == "one" else iter(pa.Table.from_batches([batch]).to_batches(max_chunksize=20_000))
    pool = pa.default_memory_pool()
    base = pool.bytes_allocated()
    table.append(data)
    print(json.dumps({"peak": pool.max_memory() - base, "rows": table.to_arrow().num_rows}))
    """
)


@pytest.fixture(scope="module")
def big_input(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    """2M rows (62 MB in memory) over 200 partitions, as one record batch in an Arrow file."""
    data = _data(2_000_000, 200)
    path = tmp_path_factory.mktemp("input") / "input.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, SCHEMA) as writer:
        writer.write_batch(pa.concat_batches(data.to_batches()))
    return path, data


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["one", "batches"])
@pytest.mark.parametrize(
    "options",
    [
        {},  # 200 writers > write-max-writers-to-spill: spilled
        {"write-buffer-spillable": "false"},  # full buffers become row groups, files close under pressure
        {"bucket": "2", "write-only": "true"},  # a primary-key table: its own spilling merge buffer
    ],
    ids=["spilling", "not-spillable", "primary-key"],
)
def test_writer_memory_stays_within_the_buffer_size(
    tmp_path: Path, big_input: tuple[Path, pa.Table], shape: str, options: dict[str, str]
) -> None:
    source, data = big_input
    limit = 8 * MB
    options = {"write-buffer-size": "8 mb", **options}
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, str(source), str(tmp_path), shape, json.dumps(options)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result = json.loads(out)
    assert result["rows"] == data.num_rows
    # Beyond the buffer: a row group being encoded, the one-off choice of dictionary columns, Parquet
    # writers' per-file state. Splitting the batch whole (copies per partition) peaked above 90 MB.
    assert result["peak"] <= limit + 16 * MB, f"Arrow peak {result['peak'] / MB:.1f} MB for an 8 MB buffer"


# --- spilling ------------------------------------------------------------------------------------------------

SMALL = {"write-buffer-size": "1 mb"}


def test_spilled_rows_come_back_whole_and_in_bigger_row_groups(catalog: Catalog, spill_root: Path) -> None:
    data = _data(200_000, 20, seed=1)  # 6 MB through a 1 MB buffer, 20 writers
    spilled = _table(catalog, "spilled", **SMALL)
    unspilled = _table(catalog, "unspilled", **SMALL, **{"write-buffer-spillable": "false"})

    write = spilled.new_write()
    write.write(data.to_batches(max_chunksize=10_000))
    during = _spill_files(spill_root)
    assert during and all(f.suffix == ".arrow" for f in during)
    spilled.new_commit().commit(write.prepare_commit())
    write.close()
    assert _spill_files(spill_root) == []

    unspilled.append(data.to_batches(max_chunksize=10_000))
    assert _spill_files(spill_root) == []

    expected = sorted(tuple(r.values()) for r in data.to_pylist())
    assert _rows(spilled) == expected
    assert _rows(unspilled) == expected
    # Spilled rows are written when the write commits, a partition at a time: one file each, and row
    # groups as large as the buffer allows; without spilling, every full buffer became a small row group.
    assert len(_data_files(spilled)) == 20
    assert _row_groups(spilled) < _row_groups(unspilled) / 4


def test_rows_keep_their_arrival_order_within_a_partition(catalog: Catalog, spill_root: Path) -> None:
    data = _data(100_000, 5, seed=2)
    table = _table(catalog, "ordered", **SMALL, **{"write-buffer-for-append": "true"})
    table.append(data.to_batches(max_chunksize=7_000))
    assert _spill_files(spill_root) == []
    for p in range(5):
        ids = table.to_arrow(filter=[("p", "=", p)]).column("id").to_numpy()
        assert len(ids) and (np.diff(ids) > 0).all()  # ids were written in increasing order


def test_abort_deletes_spill_files_and_data_files(catalog: Catalog, spill_root: Path) -> None:
    table = _table(catalog, "aborted", **SMALL, **{"write-buffer-for-append": "true"})
    write = table.new_write()
    write.write(_data(100_000, 3))
    assert _spill_files(spill_root)
    write.abort()
    assert _spill_files(spill_root) == []
    assert _data_files(table) == []


def test_closing_an_uncommitted_write_deletes_its_spill_files(catalog: Catalog, spill_root: Path) -> None:
    table = _table(catalog, "closed", **SMALL, **{"write-buffer-for-append": "true"})
    with table.new_write() as write:
        write.write(_data(100_000, 3))
        assert _spill_files(spill_root)
    assert _spill_files(spill_root) == []


@pytest.mark.parametrize(
    ("partitions", "options", "spills"),
    [
        (3, {}, False),  # few writers: full buffers become row groups (Java's direct append writers)
        (3, {"write-buffer-for-append": "true"}, True),
        (3, {"write-max-writers-to-spill": "2"}, True),
        (20, {}, True),  # more than write-max-writers-to-spill (10) writers
        (20, {"write-buffer-spillable": "false"}, False),
        (3, {"write-buffer-for-append": "true", "write-buffer-spillable": "false"}, False),
    ],
)
def test_which_writes_spill(
    catalog: Catalog, spill_root: Path, partitions: int, options: dict[str, str], spills: bool
) -> None:
    data = _data(100_000, partitions)
    table = _table(catalog, "t", **SMALL, **options)
    with table.new_write() as write:
        write.write(data)
        assert bool(_spill_files(spill_root)) == spills
        table.new_commit().commit(write.prepare_commit())
    assert _rows(table) == sorted(tuple(r.values()) for r in data.to_pylist())


def test_spilling_stops_at_the_disk_limit(catalog: Catalog, spill_root: Path) -> None:
    data = _data(200_000, 20, seed=3)
    table = _table(catalog, "limited", **SMALL, **{"write-buffer-spill.max-disk-size": "1 mb"})
    largest = 0
    write = table.new_write()
    for batch in data.to_batches(max_chunksize=10_000):
        write.write(batch)
        largest = max(largest, sum(f.stat().st_size for f in _spill_files(spill_root)))
    table.new_commit().commit(write.prepare_commit())
    write.close()
    # one more spill may start below the limit and end above it
    assert 0 < largest <= 2 * MB
    assert _rows(table) == sorted(tuple(r.values()) for r in data.to_pylist())


def test_spill_compression_is_honoured(catalog: Catalog, spill_root: Path) -> None:
    data = _data(50_000, 20)
    sizes = {}
    for compression in ("none", "lz4", "zstd"):
        table = _table(catalog, compression, **SMALL, **{"spill-compression": compression})
        with table.new_write() as write:
            write.write(data)
            sizes[compression] = sum(f.stat().st_size for f in _spill_files(spill_root))
            table.new_commit().commit(write.prepare_commit())
        assert _rows(table) == sorted(tuple(r.values()) for r in data.to_pylist())
    assert sizes["zstd"] < 0.7 * sizes["none"]
    assert sizes["lz4"] < 0.9 * sizes["none"]


def test_write_max_writers_to_spill_is_checked() -> None:
    from paimon_core import options as opts

    with pytest.raises(ConfigError, match="write-max-writers-to-spill"):
        opts.WRITE_MAX_WRITERS_TO_SPILL.parse_value("-1")
    assert opts.WRITE_MAX_WRITERS_TO_SPILL.default == 10


# --- splitting -------------------------------------------------------------------------------------------------


def test_pieces_cover_a_batch_in_bounded_slices() -> None:
    batch = pa.concat_batches(_data(10_000, 4).to_batches())
    parts = list(pieces(batch, batch.nbytes // 7))
    assert len(parts) >= 7
    assert pa.Table.from_batches(parts).equals(pa.Table.from_batches([batch]))
    assert all(p.nbytes <= batch.nbytes / 7 * 1.01 for p in parts)
    assert list(pieces(batch, batch.nbytes)) == [batch]


def _buffer_ranges(batch: pa.RecordBatch) -> list[tuple[int, int]]:
    return [(b.address, b.address + b.size) for col in batch.columns for b in col.buffers() if b is not None]


def test_groups_keep_order_and_own_their_buffers() -> None:
    batch = pa.concat_batches(_data(5_000, 7).to_batches())
    groups = dict(group_rows(batch, [batch.column("p")]))
    assert sorted(groups) == [(p,) for p in range(7)]
    source = _buffer_ranges(batch)
    for (p,), part in groups.items():
        expected = batch.filter(pa.compute.equal(batch.column("p"), p))
        assert part.equals(expected)
        for start, _ in _buffer_ranges(part):
            assert not any(s <= start < e for s, e in source)  # a copy, not a view into the input


def test_a_batch_of_one_group_is_passed_as_it_is() -> None:
    batch = pa.record_batch({"p": pa.array([3, 3, 3]), "x": ["a", "b", "c"]})
    assert list(group_rows(batch, [batch.column("p")])) == [((3,), batch)]
    nulls = pa.record_batch({"p": pa.array([None, None], pa.int64())})
    assert list(group_rows(nulls, [nulls.column("p")])) == [((None,), nulls)]


def test_float_keys_with_nan_are_grouped_apart() -> None:
    batch = pa.record_batch({"k": pa.array([1.0, math.nan, 1.0, None])})
    groups = {k: part.num_rows for k, part in group_rows(batch, [batch.column("k")])}
    assert groups[(1.0,)] == 2 and groups[(None,)] == 1
    assert [n for k, n in groups.items() if k[0] is not None and math.isnan(k[0])] == [1]


def test_a_failed_commit_leaves_no_data_files(catalog: Catalog) -> None:
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    table = catalog.create_table("db.failing", schema, partition_keys=["dt"])
    write = table.new_write()
    # files are written at prepare_commit, several writers at once; the second partition's directory
    # name is too long for the file system
    write.write(pa.table({"dt": ["ok"] * 3 + ["x" * 300] * 3, "id": range(6)}, schema=schema))
    with pytest.raises(DataFileError):
        write.prepare_commit()
    write.abort()
    assert _data_files(table) == []
