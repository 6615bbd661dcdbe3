"""Filters pushed into Parquet, and the Parquet options that shape the files.

A filtered read skips the row groups whose statistics rule out every row and filters each decoded batch:
the tests count the row groups (and bytes) a selective read touches, and check random predicates against
filtering a full read, over nulls, NaN, strings, dates, decimals, files written under older schemas,
deletion vectors and merged primary-key reads. The writer tests read the files' Parquet metadata and page
headers.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import math
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog, SchemaChange
from paimon_core.errors import ConfigError
from paimon_core.predicate import Leaf, Predicate
from paimon_core.storage import join_path
from paimon_core.storage._memory import MemoryBackend, clear_memory_store
from paimon_core.table import Table

# --- helpers ----------------------------------------------------------------------------------------------

Groups = list[list[int]]


@pytest.fixture
def row_groups_read(monkeypatch: pytest.MonkeyPatch) -> Groups:
    """The row groups each Parquet read decoded, in order (every one for a whole-file read)."""
    seen: Groups = []
    iter_batches, read_row_groups, read = (
        pq.ParquetFile.iter_batches,
        pq.ParquetFile.read_row_groups,
        pq.ParquetFile.read,
    )

    def recording_iter_batches(self: pq.ParquetFile, *args: Any, **kwargs: Any) -> Any:
        groups = kwargs.get("row_groups")
        seen.append(list(groups) if groups is not None else list(range(self.num_row_groups)))
        return iter_batches(self, *args, **kwargs)

    def recording_read_row_groups(self: pq.ParquetFile, row_groups: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(list(row_groups))
        return read_row_groups(self, row_groups, *args, **kwargs)

    def recording_read(self: pq.ParquetFile, *args: Any, **kwargs: Any) -> Any:
        seen.append(list(range(self.num_row_groups)))
        return read(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", recording_iter_batches)
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", recording_read_row_groups)
    monkeypatch.setattr(pq.ParquetFile, "read", recording_read)
    return seen


def data_files(table: Table) -> list[str]:
    return [
        join_path(table.bucket_dir(e.partition, e.bucket), e.file.file_name) for e in table.live_entries()
    ]


def metadata(path: str) -> pq.FileMetaData:
    return pq.ParquetFile(path).metadata


def groups_overlapping(path: str, column: str, lo: Any, hi: Any) -> list[int]:
    """The row groups whose [min, max] of ``column`` meets [lo, hi]."""
    meta = metadata(path)
    index = meta.schema.names.index(column)
    found = []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if stats.max >= lo and stats.min <= hi:
            found.append(g)
    return found


def rows(table: pa.Table, key: str = "id") -> list[tuple[Any, ...]]:
    """Rows sorted by ``key``, NaN made comparable."""
    out = []
    for row in table.to_pylist():
        out.append(tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row.values()))
    index = table.column_names.index(key)
    return sorted(out, key=lambda r: (r[index] is None, r[index]))


def expected(full: pa.Table, predicate: Predicate) -> pa.Table:
    return full.filter(predicate.to_expression(full.schema))


def check_filtered_reads(table: Table, full: pa.Table, predicate: Predicate) -> None:
    """``to_arrow``, ``to_batches`` and a projection without the filter's columns agree with the full read."""
    want = rows(expected(full, predicate))
    assert rows(table.to_arrow(filter=predicate)) == want
    assert rows(table.to_batches(filter=predicate).read_all()) == want
    assert sorted(table.to_arrow(columns=["id"], filter=predicate).column("id").to_pylist()) == sorted(
        r[0] for r in want
    )


OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null")


def predicates(values: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Predicate]:
    """DNF predicates over the columns of ``values``, with literals drawn from each column's strategy."""

    @st.composite
    def leaf(draw: st.DrawFn) -> Leaf:
        column = draw(st.sampled_from(sorted(values)))
        op = draw(st.sampled_from(OPS))
        if op in ("is null", "is not null"):
            return Leaf(column, op)
        if op in ("in", "not in"):
            return Leaf(column, op, tuple(draw(st.lists(values[column], min_size=1, max_size=3))))
        return Leaf(column, op, draw(values[column]))

    clause = st.lists(leaf(), min_size=1, max_size=3).map(tuple)
    return st.lists(clause, min_size=1, max_size=2).map(lambda cs: Predicate(tuple(cs)))


# --- row groups a selective read touches ----------------------------------------------------------------

SEQUENTIAL = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), pa.field("v", pa.float64())]
)


def sequential(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {"id": ids, "name": [f"name-{i:06d}" for i in ids], "v": [i * 0.25 for i in ids]}, schema=SEQUENTIAL
    )


def test_a_selective_read_decodes_only_the_matching_row_groups(
    catalog: Catalog, row_groups_read: Groups
) -> None:
    options = {"parquet.block.size": "16 kb", "write-only": "true"}
    table = catalog.create_table("db.t", SEQUENTIAL, options=options)
    table.append(sequential(0, 50_000))
    (path,) = data_files(table)
    assert metadata(path).num_row_groups >= 40

    row_groups_read.clear()
    got = table.to_arrow(filter=[("id", ">=", 20_000), ("id", "<", 20_050)])
    assert got.column("id").to_pylist() == list(range(20_000, 20_050))
    assert row_groups_read == [groups_overlapping(path, "id", 20_000, 20_049)]
    assert len(row_groups_read[0]) <= 2

    row_groups_read.clear()  # the streaming reader too, and an OR of two ranges
    filter = [[("id", "<", 10)], [("name", "=", "name-049999")]]
    got = table.to_batches(columns=["id"], filter=filter).read_all()
    assert got.column("id").to_pylist() == [*range(10), 49_999]
    assert row_groups_read == [[0, metadata(path).num_row_groups - 1]]

    row_groups_read.clear()  # nothing matches: nothing is decoded
    assert table.to_arrow(filter=[("id", ">", 10**9)]).num_rows == 0
    assert table.to_arrow(filter=[("v", "<", 0.0)]).num_rows == 0
    assert row_groups_read == []


class CountingInput(io.BytesIO):
    """A memory Parquet file that counts the bytes read from its row groups: not the reads of its tail,
    where readers look for the footer."""

    data_bytes_read = 0

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.size = len(data)
        self.data_end = len(data) - 8 - int.from_bytes(data[-8:-4], "little")

    def _count(self, start: int, count: int) -> None:
        if start + count < self.size:
            CountingInput.data_bytes_read += max(0, min(start + count, self.data_end) - start)

    def read(self, size: int | None = -1) -> bytes:
        start = self.tell()
        data = super().read(size)
        self._count(start, len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        start = self.tell()
        count = super().readinto(buffer)
        self._count(start, count)
        return count


@pytest.fixture
def memory_catalog(monkeypatch: pytest.MonkeyPatch) -> Iterator[Catalog]:
    root = f"memory://pushdown-{uuid.uuid4().hex}"
    original = MemoryBackend.open_input

    def counting_input(self: MemoryBackend, path: str) -> CountingInput:
        opened = original(self, path)
        assert isinstance(opened, io.BytesIO)
        return CountingInput(opened.getvalue())

    monkeypatch.setattr(MemoryBackend, "open_input", counting_input)
    catalog = Catalog.open(root, create=True)
    catalog.create_database("db")
    yield catalog
    clear_memory_store(root)


def test_a_selective_read_reads_a_small_part_of_the_bytes(memory_catalog: Catalog) -> None:
    options = {"parquet.block.size": "32 kb", "write-only": "true"}
    table = memory_catalog.create_table("db.t", SEQUENTIAL, options=options)
    table.append(sequential(0, 100_000))

    data_bytes = CountingInput(table.storage.read_bytes(data_files(table)[0])).data_end - 4
    CountingInput.data_bytes_read = 0
    assert table.to_arrow(filter=[("id", ">=", 70_000), ("id", "<", 70_100)]).num_rows == 100
    selective = CountingInput.data_bytes_read
    CountingInput.data_bytes_read = 0
    assert table.to_arrow(filter=[("id", ">=", 0)]).num_rows == 100_000
    assert CountingInput.data_bytes_read >= 0.9 * data_bytes  # (nearly) every row group
    assert 0 < selective < 0.05 * data_bytes, (selective, data_bytes)


# --- random predicates against a full read --------------------------------------------------------------

WIDE = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("n", pa.int32()),
        pa.field("f", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("dec", pa.decimal128(10, 2)),
        pa.field("b", pa.bool_()),
    ]
)
DAY0 = dt.date(2024, 1, 1)
TS0 = dt.datetime(2024, 1, 1)


def wide(start: int, count: int) -> pa.Table:
    """Clustered values (so statistics can rule row groups out), with nulls and NaN in runs and spots."""
    ids = list(range(start, start + count))

    def maybe(i: int, value: Any, every: int) -> Any:
        return None if i % every == 0 or 300 <= i % 1000 < 340 else value

    return pa.table(
        {
            "id": ids,
            "n": [maybe(i, i // 7 - 50, 11) for i in ids],
            "f": [math.nan if i % 13 == 0 else maybe(i, (i % 500) / 10, 17) for i in ids],
            "s": [maybe(i, f"s{i // 40:03d}", 19) for i in ids],
            "d": [maybe(i, DAY0 + dt.timedelta(days=i // 90), 23) for i in ids],
            "ts": [maybe(i, TS0 + dt.timedelta(minutes=i), 29) for i in ids],
            "dec": [maybe(i, decimal.Decimal(i) / 4, 31) for i in ids],
            "b": [maybe(i, i % 400 < 200, 37) for i in ids],
        },
        schema=WIDE,
    )


WIDE_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "id": st.integers(-10, 2_500),
    "n": st.integers(-60, 320),
    "f": st.sampled_from([0.0, 1.5, 25.0, 49.9, 60.0, -1.0, math.nan]),
    "s": st.integers(0, 60).map(lambda k: f"s{k:03d}") | st.sampled_from(["", "s", "t", "s0015x"]),
    "d": st.integers(-3, 30).map(lambda k: DAY0 + dt.timedelta(days=k)),
    "ts": st.integers(-10, 2_500).map(lambda k: TS0 + dt.timedelta(minutes=k)),
    "dec": st.integers(-4, 10_000).map(lambda k: decimal.Decimal(k) / 4),
    "b": st.booleans(),
}


@pytest.fixture(scope="module")
def wide_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table, pa.Table]:
    catalog = Catalog.open(str(tmp_path_factory.mktemp("wide")))
    catalog.create_database("db")
    options = {"parquet.block.size": "4 kb", "write-only": "true"}
    table = catalog.create_table("db.wide", WIDE, options=options)
    for start in (0, 800, 1_600):
        table.append(wide(start, 800))
    assert all(metadata(p).num_row_groups >= 8 for p in data_files(table))
    return table, table.to_arrow()


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(predicate=predicates(WIDE_VALUES))
def test_random_predicates_read_what_filtering_a_full_read_keeps(
    wide_table: tuple[Table, pa.Table], predicate: Predicate
) -> None:
    table, full = wide_table
    check_filtered_reads(table, full, predicate)


def test_nan_and_not_equal_never_lose_rows(wide_table: tuple[Table, pa.Table]) -> None:
    # Parquet's min/max leave NaN out: a row group of 1.5s and NaNs still holds rows where f != 1.5.
    table, full = wide_table
    for predicate in (
        Predicate(((Leaf("f", "!=", 1.5),),)),
        Predicate(((Leaf("f", "not in", (0.0, 1.5)),),)),
        Predicate(((Leaf("f", "is null"),),)),
        Predicate(((Leaf("n", "is null"), Leaf("s", "is not null")),)),
    ):
        check_filtered_reads(table, full, predicate)


# --- files written under older schemas ------------------------------------------------------------------

OLD = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("x", pa.float32()),
        pa.field("gone", pa.int64()),
    ]
)


def old_rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": ids,
            "name": [None if i % 9 == 0 else f"n{i // 25:03d}" for i in ids],
            "x": [None if i % 10 == 0 else float(i % 300) for i in ids],
            "gone": [i * 3 for i in ids],
        },
        schema=OLD,
    )


def new_rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": ids,
            "label": [None if i % 9 == 0 else f"n{i // 25:03d}" for i in ids],
            "x": [None if i % 10 == 0 else float(i % 300) + 0.5 for i in ids],
            "extra": [None if i % 4 == 0 else i // 10 for i in ids],
        },
        schema=pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                pa.field("label", pa.string()),
                pa.field("x", pa.float64()),
                pa.field("extra", pa.int64()),
            ]
        ),
    )


EVOLVED_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "id": st.integers(-5, 1_300),
    "label": st.integers(0, 55).map(lambda k: f"n{k:03d}"),
    "x": st.sampled_from([0.0, 0.5, 150.0, 150.5, 299.0, 299.5, 400.0]),
    "extra": st.integers(-1, 130),
}


@pytest.fixture(scope="module")
def evolved_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table, pa.Table]:
    """Files under three schemas: the first, after widening id and x and renaming name → label, and after
    dropping ``gone`` and adding ``extra``."""
    catalog = Catalog.open(str(tmp_path_factory.mktemp("evolved")))
    catalog.create_database("db")
    table = catalog.create_table("db.e", OLD, options={"parquet.block.size": "2 kb", "write-only": "true"})
    table.append(old_rows(0, 400))
    catalog.alter_table(
        "db.e",
        [
            SchemaChange.update_column_type("id", pa.int64(), keep_nullability=True),
            SchemaChange.update_column_type("x", pa.float64()),
            SchemaChange.rename_column("name", "label"),
        ],
    )
    table = catalog.get_table("db.e")
    table.append(old_rows(400, 400).rename_columns(["id", "label", "x", "gone"]).cast(table.arrow_schema))
    catalog.alter_table(
        "db.e", [SchemaChange.drop_column("gone"), SchemaChange.add_column("extra", pa.int64())]
    )
    table = catalog.get_table("db.e")
    table.append(new_rows(800, 400))
    assert len({e.file.schema_id for e in table.live_entries()}) == 3
    return table, table.to_arrow()


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(predicate=predicates(EVOLVED_VALUES))
def test_random_predicates_over_files_of_older_schemas(
    evolved_table: tuple[Table, pa.Table], predicate: Predicate
) -> None:
    table, full = evolved_table
    check_filtered_reads(table, full, predicate)


def test_a_column_a_file_predates_reads_as_null_when_pruning(
    evolved_table: tuple[Table, pa.Table], row_groups_read: Groups
) -> None:
    table, full = evolved_table
    # extra > 5 rules out every row group of the files written before extra existed: only the newest
    # file is read; extra is null keeps them all.
    assert rows(table.to_arrow(filter=[("extra", ">", 5)])) == rows(full.filter(pc.field("extra") > 5))
    newest = max(table.live_entries(), key=lambda e: e.file.schema_id).file.file_name
    new_groups = metadata(next(p for p in data_files(table) if p.endswith(newest))).num_row_groups
    assert sum(len(g) for g in row_groups_read) <= new_groups
    assert table.to_arrow(filter=[("extra", "is null")]).num_rows == 800 + 100
    # a renamed column prunes by its old name's statistics; a widened one by its cast statistics
    row_groups_read.clear()
    assert table.to_arrow(filter=[("label", "=", "n003")]).column("id").to_pylist() == [
        i for i in range(75, 100) if i % 9
    ]
    assert sum(len(g) for g in row_groups_read) <= 3
    row_groups_read.clear()
    assert sorted(table.to_arrow(filter=[("id", "in", [3, 1_000])]).column("id").to_pylist()) == [3, 1_000]
    assert sum(len(g) for g in row_groups_read) == 2


# --- deletion vectors: positions stay the file's --------------------------------------------------------

DV_SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("a", pa.int64()), pa.field("s", pa.string())]
)


@pytest.fixture(scope="module")
def dv_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table, pa.Table]:
    """A deletion-vector table whose top-level files hold many row groups and deleted rows among them."""
    catalog = Catalog.open(str(tmp_path_factory.mktemp("dv")))
    catalog.create_database("db")
    options = {"bucket": "1", "deletion-vectors.enabled": "true", "parquet.block.size": "2 kb"}
    table = catalog.create_table("db.dv", DV_SCHEMA, primary_keys=["id"], options=options)
    ids = list(range(2_000))
    table.append(pa.table({"id": ids, "a": ids, "s": [f"v{i // 50:02d}" for i in ids]}, schema=DV_SCHEMA))
    for step in range(3):  # update every 7th (then 11th, 13th) key: lookup compaction deletes the old rows
        every = (7, 11, 13)[step]
        keys = [i for i in ids if i % every == step]
        table.append(
            pa.table({"id": keys, "a": [-k for k in keys], "s": [f"u{step}" for _ in keys]}, schema=DV_SCHEMA)
        )
    indexes = [e for e in table.index_entries() if e.file.index_type == "DELETION_VECTORS"]
    assert indexes, "the updates left deletion vectors"
    assert any(
        e.file.level > 0 and metadata(p).num_row_groups > 5
        for e, p in zip(table.live_entries(), data_files(table), strict=True)
    )
    full = table.to_arrow()
    assert full.num_rows == 2_000
    return table, full


DV_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "id": st.integers(-5, 2_005),
    "a": st.integers(-2_005, 2_005),
    "s": st.sampled_from(["u0", "u1", "u2", "v00", "v07", "v20", "v39", "w"]),
}


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(predicate=predicates(DV_VALUES))
def test_random_predicates_over_deletion_vectors(
    dv_table: tuple[Table, pa.Table], predicate: Predicate
) -> None:
    table, full = dv_table
    check_filtered_reads(table, full, predicate)


def test_deletion_vectors_with_skipped_row_groups(
    dv_table: tuple[Table, pa.Table], row_groups_read: Groups
) -> None:
    table, full = dv_table
    got = table.to_arrow(filter=[("id", ">=", 1_500), ("id", "<", 1_540)])
    assert rows(got) == rows(full.filter((pc.field("id") >= 1_500) & (pc.field("id") < 1_540)))
    assert all(row["a"] == (-row["id"] if row["s"].startswith("u") else row["id"]) for row in got.to_pylist())
    assert all(0 not in groups or len(groups) == 1 for groups in row_groups_read)  # row groups were skipped


# --- merged primary-key reads ---------------------------------------------------------------------------

PK_SCHEMA = pa.schema(
    [pa.field("k", pa.int64(), nullable=False), pa.field("a", pa.int64()), pa.field("b", pa.int64())]
)


def test_merged_reads_filter_values_after_the_merge(catalog: Catalog) -> None:
    # Key 1's a arrives in one file and its b in another: b = 5 holds for the merged row only.
    options = {
        "bucket": "1",
        "merge-engine": "partial-update",
        "write-only": "true",
        "parquet.block.size": "1 kb",
    }
    table = catalog.create_table("db.pu", PK_SCHEMA, primary_keys=["k"], options=options)
    keys = list(range(300))
    table.append(pa.table({"k": keys, "a": [10 * k for k in keys], "b": [None] * 300}, schema=PK_SCHEMA))
    table.append(pa.table({"k": keys, "a": [None] * 300, "b": [k % 7 for k in keys]}, schema=PK_SCHEMA))
    got = table.to_arrow(filter=[("b", "=", 5), ("a", ">", 100)])
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == [
        {"k": k, "a": 10 * k, "b": 5} for k in keys if k % 7 == 5 and 10 * k > 100
    ]


def test_merged_reads_skip_row_groups_by_key(catalog: Catalog, row_groups_read: Groups) -> None:
    options = {"bucket": "1", "write-only": "true", "parquet.block.size": "2 kb"}
    table = catalog.create_table("db.pk", PK_SCHEMA, primary_keys=["k"], options=options)
    keys = list(range(3_000))
    table.append(pa.table({"k": keys, "a": keys, "b": keys}, schema=PK_SCHEMA))
    table.append(pa.table({"k": keys[::3], "a": [-k for k in keys[::3]], "b": keys[::3]}, schema=PK_SCHEMA))
    assert len(table.live_entries()) == 2  # two level-0 files: their keys are merged
    groups = sum(metadata(p).num_row_groups for p in data_files(table))
    row_groups_read.clear()
    got = table.to_arrow(filter=[("k", ">=", 1_200), ("k", "<", 1_230), ("a", "<", 0)])
    assert got.column("k").to_pylist() == [k for k in range(1_200, 1_230) if k % 3 == 0]
    assert got.column("a").to_pylist() == [-k for k in range(1_200, 1_230) if k % 3 == 0]
    assert 2 <= sum(len(g) for g in row_groups_read) <= 6 < groups


# --- the writer's Parquet options -----------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _skip(data: bytes, pos: int, kind: int) -> int:
    """Skip one Thrift compact-protocol value of type ``kind``."""
    if kind in (1, 2):
        return pos
    if kind == 3:
        return pos + 1
    if kind in (4, 5, 6):
        return _varint(data, pos)[1]
    if kind == 7:
        return pos + 8
    if kind == 8:
        length, pos = _varint(data, pos)
        return pos + length
    if kind in (9, 10):
        header = data[pos]
        pos += 1
        size, element = header >> 4, header & 0x0F
        if size == 15:
            size, pos = _varint(data, pos)
        for _ in range(size):
            pos = _skip(data, pos, element)
        return pos
    if kind == 12:
        return _struct(data, pos)[1]
    raise AssertionError(f"unexpected Thrift type {kind}")


def _struct(data: bytes, pos: int) -> tuple[dict[int, int], int]:
    """A Thrift compact struct: its integer fields (others skipped) and the position after it."""
    fields: dict[int, int] = {}
    field_id = 0
    while True:
        header = data[pos]
        pos += 1
        if header == 0:
            return fields, pos
        delta, kind = header >> 4, header & 0x0F
        if delta:
            field_id += delta
        else:
            raw, pos = _varint(data, pos)
            field_id = (raw >> 1) ^ -(raw & 1)
        if kind in (4, 5, 6):
            raw, pos = _varint(data, pos)
            fields[field_id] = (raw >> 1) ^ -(raw & 1)
        else:
            pos = _skip(data, pos, kind)


def page_types(path: str, column: str, row_group: int = 0) -> list[int]:
    """The page types of a column chunk (0 data page, 2 dictionary, 3 data page v2), from its headers."""
    meta = metadata(path)
    chunk = meta.row_group(row_group).column(meta.schema.names.index(column))
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    data = Path(path).read_bytes()[start : start + chunk.total_compressed_size]
    pos, types = 0, []
    while pos < len(data):
        header, pos = _struct(data, pos)
        types.append(header[1])
        pos += header[3]  # compressed_page_size
    return types


def _written(catalog: Catalog, rows_count: int, **options: str) -> str:
    table = catalog.create_table(
        f"db.w{uuid.uuid4().hex[:8]}", SEQUENTIAL, options={"write-only": "true", **options}
    )
    table.append(sequential(0, rows_count))
    (path,) = data_files(table)
    return path


def test_row_groups_follow_parquet_block_size(catalog: Catalog) -> None:
    assert catalog.create_table("db.d", SEQUENTIAL).options.parquet_block_size() == 128 << 20
    data = sequential(0, 40_000)
    per_row = data.nbytes / data.num_rows
    assert metadata(_written(catalog, 40_000)).num_row_groups == 1
    for options, block in (
        ({"parquet.block.size": "64 kb"}, 64 << 10),
        ({"parquet.block.size": str(256 << 10)}, 256 << 10),
        (
            {"parquet.block.size": "64 kb", "file.block-size": "128 kb"},
            128 << 10,
        ),  # Java: file.block-size wins
    ):
        meta = metadata(_written(catalog, 40_000, **options))
        sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        assert sum(sizes) == 40_000
        assert max(sizes) <= block / per_row + 1
        assert meta.num_row_groups >= 40_000 * per_row / block


def test_pages_follow_the_page_options(catalog: Catalog) -> None:
    plain = {"parquet.enable.dictionary": "false"}
    assert page_types(_written(catalog, 15_000, **plain), "id") == [0]  # 120 kB of ids: one 1 MB page
    small_pages = page_types(_written(catalog, 15_000, **plain, **{"parquet.page.size": "8 kb"}), "id")
    assert len(small_pages) >= 14 and set(small_pages) == {0}
    v2 = page_types(_written(catalog, 15_000, **plain, **{"parquet.writer.version": "v2"}), "id")
    assert set(v2) == {3}
    dictionary = page_types(_written(catalog, 15_000, **{"parquet.enable.dictionary#id": "true"}), "id")
    assert dictionary[0] == 2


@pytest.mark.skipif(
    "max_rows_per_page" not in pq.ParquetWriter.__init__.__code__.co_varnames, reason="pyarrow < 20"
)
def test_pages_follow_the_page_row_count_limit(catalog: Catalog) -> None:
    plain = {"parquet.enable.dictionary": "false"}
    limited = page_types(_written(catalog, 15_000, **plain, **{"parquet.page.row.count.limit": "1000"}), "id")
    assert len(limited) == 15


def test_codec_and_dictionary_options(catalog: Catalog) -> None:
    meta = metadata(_written(catalog, 5_000, **{"parquet.compression": "snappy"}))
    assert {meta.row_group(0).column(i).compression for i in range(3)} == {"SNAPPY"}
    meta = metadata(_written(catalog, 5_000))
    assert {meta.row_group(0).column(i).compression for i in range(3)} == {"ZSTD"}
    options = {"parquet.enable.dictionary#id": "true", "parquet.enable.dictionary#name": "false"}
    meta = metadata(_written(catalog, 5_000, **options))
    encodings = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).encodings for i in range(3)
    }
    assert "RLE_DICTIONARY" in encodings["id"]  # unique, yet asked for
    assert "RLE_DICTIONARY" not in encodings["name"]
    with pytest.raises(ConfigError, match=r"parquet\.enable\.dictionary#id"):
        catalog.create_table("db.bad", SEQUENTIAL, options={"parquet.enable.dictionary#id": "yes"})
    with pytest.raises(ConfigError, match=r"parquet\.block\.size"):
        catalog.create_table("db.bad", SEQUENTIAL, options={"parquet.block.size": "0"})


def test_data_files_carry_a_page_index(catalog: Catalog) -> None:
    # parquet-java writes a column index and an offset index for every column chunk; so do we, for readers
    # that skip pages by them (pyarrow's cannot: docs/reads.md).
    small_pages = {"parquet.page.size": "4 kb", "parquet.block.size": "64 kb"}
    for table in (
        catalog.create_table("db.append_pi", SEQUENTIAL, options={"write-only": "true", **small_pages}),
        catalog.create_table(
            "db.pk_pi", SEQUENTIAL, primary_keys=["id"], options={"bucket": "1", **small_pages}
        ),
    ):
        table.append(sequential(0, 30_000))
        for path in data_files(table):
            meta = metadata(path)
            chunks = [
                meta.row_group(g).column(c)
                for g in range(meta.num_row_groups)
                for c in range(meta.num_columns)
            ]
            assert meta.num_row_groups > 1
            assert all(chunk.has_column_index and chunk.has_offset_index for chunk in chunks), path


def test_page_index_truncation_is_refused(catalog: Catalog) -> None:
    # pyarrow writes the page index's min/max values whole: a truncation length cannot be honoured.
    with pytest.raises(ConfigError, match=r"parquet\.columnindex\.truncate\.length.*truncate"):
        catalog.create_table("db.bad", SEQUENTIAL, options={"parquet.columnindex.truncate.length": "64"})
