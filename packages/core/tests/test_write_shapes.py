"""Every input shape a write takes, into every kind of table, reads back as written.

A write cuts its input into pieces of an eighth of ``write-buffer-size`` and buffers the rest of that size
(docs/writing.md#the-path-of-a-batch): the sizes around those bounds, single huge chunks, many tiny ones,
pandas frames, readers, Arrow streams and iterables of batches, one or several ``write`` calls and commits,
are checked against a model: an append table holds every row written, a primary-key table the last row of
each key in input order. A small ``write-buffer-size`` keeps sizes around it cheap; one case writes a batch bigger than
the default piece (32 MB).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.table import Table
from paimon_core.table._write_memory import MemoryPlan

SCHEMA = pa.schema([("p", pa.int32()), ("k", pa.int64()), ("s", pa.string()), ("v", pa.float64())])
BUFFER = 64 << 10  # the small write-buffer-size of the property test
KB = 1 << 10


@dataclass(frozen=True)
class Kind:
    """A kind of table: how it is created and whether it merges rows by key."""

    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)

    @property
    def merges(self) -> bool:
        return bool(self.primary_keys)

    def create(self, catalog: Catalog, options: dict[str, str]) -> Table:
        return catalog.create_table(
            "db.t",
            SCHEMA,
            partition_keys=list(self.partition_keys),
            primary_keys=list(self.primary_keys),
            options={**self.options, **options},
        )


KINDS = {
    "append": Kind(),
    "append-bucketed": Kind(options={"bucket": "3", "bucket-key": "k"}),
    "append-partitioned": Kind(partition_keys=("p",)),
    "pk-fixed-bucket": Kind(primary_keys=("k",), options={"bucket": "2"}),
    "pk-partitioned": Kind(partition_keys=("p",), primary_keys=("p", "k"), options={"bucket": "2"}),
    "pk-dynamic-bucket": Kind(
        primary_keys=("k",), options={"bucket": "-1", "dynamic-bucket.target-row-num": "300"}
    ),
}

BUFFERING = {
    "default": {},
    "spill-always": {"write-buffer-for-append": "true"},
    "no-spill": {"write-buffer-spillable": "false"},
}


def make_rows(rows: int, seed: int, *, keys: int | None, partitions: int, null_partitions: bool) -> pa.Table:
    """``rows`` rows in one chunk: keys from ``range(keys)`` (unique with None), ``partitions`` partitions,
    some null values."""
    rng = np.random.default_rng(seed)
    p = rng.integers(0, partitions, rows).astype(np.int32)
    p_nulls = rng.random(rows) < 0.1 if null_partitions else None
    k = rng.permutation(rows) if keys is None else rng.integers(0, keys, rows)
    return pa.table(
        {
            "p": pa.array(p, mask=p_nulls),
            "k": pa.array(k, pa.int64()),
            "s": pc.cast(pa.array(rng.integers(0, 10**9, rows)), pa.string()),
            "v": pa.array(rng.random(rows), mask=rng.random(rows) < 0.1),
        },
        schema=SCHEMA,
    )


def expected_rows(kind: Kind, data: pa.Table) -> pa.Table:
    """What the table holds after ``data`` was written in order: every row, or the last row per key."""
    if not kind.merges:
        return data
    keys = pa.table({k: data.column(k) for k in kind.primary_keys}).to_pandas()
    last = np.flatnonzero(~keys.duplicated(keep="last").to_numpy())
    return data.take(pa.array(last))


def sorted_rows(data: pa.Table) -> list[dict[str, Any]]:
    ordered = data.select(SCHEMA.names).sort_by([(name, "ascending") for name in SCHEMA.names])
    rows: list[dict[str, Any]] = ordered.to_pylist()
    return rows


def cut(data: pa.Table, chunk: int) -> list[pa.RecordBatch]:
    """``data`` as batches of ``chunk`` rows (the last one shorter)."""
    batches: list[pa.RecordBatch] = data.combine_chunks().to_batches(max_chunksize=chunk)
    return batches


def shaped(data: pa.Table, shape: str, chunk: int) -> Any:
    """``data`` as a user hands it to a write."""
    if shape == "table":
        return data.combine_chunks()  # one chunk per column, however large
    if shape == "batch":
        return data.combine_chunks().to_batches()[0]
    if shape == "chunked-table":
        return pa.Table.from_batches(cut(data, chunk), schema=SCHEMA)
    if shape == "pandas":  # nullable integers stay integers (a NumPy int column with nulls is float)
        dtypes = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype()}
        return data.to_pandas(types_mapper=dtypes.get)
    if shape == "reader":
        return pa.RecordBatchReader.from_batches(SCHEMA, cut(data, chunk))
    if shape == "arrow-stream":  # what polars and duckdb hand over
        return _ArrowStream(pa.Table.from_batches(cut(data, chunk), schema=SCHEMA))
    assert shape == "iterable"
    return (batch for each in cut(data, chunk) for batch in (each, each.slice(0, 0)))  # empty ones too


class _ArrowStream:
    """Only the Arrow PyCapsule stream interface, as dataframe libraries export it."""

    def __init__(self, data: pa.Table) -> None:
        self._data = data

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self._data.__arrow_c_stream__(requested_schema)


@dataclass(frozen=True)
class Case:
    rows: int
    seed: int
    keys: int
    partitions: int
    shape: str
    chunk: int
    writes: int  # write calls per commit
    commits: int
    buffering: str
    small_files: bool


def sizes(row_bytes: float) -> list[int]:
    """Row counts around the bounds of the small buffer: a piece, the writers' share, the whole buffer."""
    plan = MemoryPlan(BUFFER, 128 << 20)
    bounds = [plan.piece_bytes, plan.buffered_bytes, BUFFER]
    around = [max(1, int(b / row_bytes) + d) for b in bounds for d in (-1, 0, 1)]
    return sorted({1, 2, *around, 3 * int(BUFFER / row_bytes)})


ROW_BYTES = make_rows(10_000, 0, keys=10, partitions=3, null_partitions=True).nbytes / 10_000
SIZES = sizes(ROW_BYTES)
MAX_BATCHES = 300  # tiny chunks of a large input would make the example slow, not better


@st.composite
def cases(draw: st.DrawFn) -> Case:
    rows = draw(st.sampled_from(SIZES) | st.integers(1, SIZES[-1]))
    shape = draw(
        st.sampled_from(["table", "batch", "chunked-table", "pandas", "reader", "arrow-stream", "iterable"])
    )
    chunk = draw(st.sampled_from([1, 7, *SIZES]))
    return Case(
        rows=rows,
        seed=draw(st.integers(0, 2**16)),
        keys=draw(st.sampled_from([1, 5, max(1, rows // 3), 10 * rows])),
        partitions=draw(st.sampled_from([1, 3])),
        shape=shape,
        chunk=max(chunk, -(-rows // MAX_BATCHES)),
        writes=draw(st.integers(1, 3)),
        commits=draw(st.integers(1, 2)),
        buffering=draw(st.sampled_from(sorted(BUFFERING))),
        small_files=draw(st.booleans()),
    )


def split_evenly(data: pa.Table, parts: int) -> Iterator[pa.Table]:
    step = -(-data.num_rows // parts)
    for start in range(0, data.num_rows, step):
        yield data.slice(start, step)


def write_case(table: Table, kind: Kind, case: Case) -> pa.Table:
    """Write the case's rows as its shape says; returns every row written, in input order."""
    data = make_rows(
        case.rows, case.seed, keys=case.keys, partitions=case.partitions, null_partitions=not kind.merges
    )
    for commit_rows in split_evenly(data, case.commits):
        if case.writes == 1:
            table.append(shaped(commit_rows, case.shape, case.chunk))
            continue
        with table.new_write() as write:
            for part in split_evenly(commit_rows, case.writes):
                write.write(shaped(part, case.shape, case.chunk))
            table.new_commit().commit(write.prepare_commit())
    return data


@pytest.mark.parametrize("write_only", [False, True], ids=["compacting", "write-only"])
@pytest.mark.parametrize("kind_name", sorted(KINDS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_every_input_shape_reads_back_as_written(
    tmp_path: Path, kind_name: str, write_only: bool, case: Case
) -> None:
    kind = KINDS[kind_name]
    options = {"write-buffer-size": f"{BUFFER // KB} kb", "write-only": str(write_only).lower()}
    options.update(BUFFERING[case.buffering])
    if case.small_files:
        options["target-file-size"] = "32 kb"
    catalog = Catalog.open(tempfile.mkdtemp(dir=tmp_path))
    catalog.create_database("db")
    table = kind.create(catalog, options)
    data = write_case(table, kind, case)
    assert sorted_rows(table.to_arrow()) == sorted_rows(expected_rows(kind, data))


@pytest.mark.parametrize("kind_name", ["append", "pk-fixed-bucket"])
def test_one_batch_bigger_than_the_default_piece(catalog: Catalog, kind_name: str) -> None:
    """2M rows in one chunk per column (about 50 MB) is more than a piece of the default buffer (32 MB)."""
    kind = KINDS[kind_name]
    table = kind.create(catalog, {})
    data = make_rows(2_000_000, 1, keys=None, partitions=1, null_partitions=False)
    assert data.nbytes > MemoryPlan(256 << 20, 128 << 20).piece_bytes
    table.append(data)
    read = table.to_arrow()
    assert read.num_rows == data.num_rows
    assert by_key(read).equals(by_key(data).cast(read.schema))


def by_key(data: pa.Table) -> pa.Table:
    """The rows of ``data``, whose keys are ``range(num_rows)``, in key order (cheaper than sorting)."""
    order = np.empty(data.num_rows, np.int64)
    order[data.column("k").to_numpy()] = np.arange(data.num_rows)
    return data.select(SCHEMA.names).take(pa.array(order))
