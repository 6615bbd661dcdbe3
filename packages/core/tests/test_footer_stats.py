"""Value statistics taken from the Parquet footer equal the ones computed from the data (stats.py)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.options import Options
from paimon_core.stats import (
    FOOTER_MAX_STAT_BYTES,
    ColumnStats,
    StatsCollector,
    collect_stats,
    decode_stats,
)
from paimon_core.table._write import parquet_writer_options, storage_arrow_schema
from paimon_core.table.mergetree import KeyValueLayout
from paimon_core.types import (
    DataField,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    fields_from_arrow_schema,
    string_type,
    to_arrow_schema,
)
from paimon_testing.strategies import arrow_tables, arrow_types

MODES = ["truncate(16)", "full", "truncate(3)", "counts", "none"]


def footer_stats(chunks: Sequence[pa.Table], fields: list[DataField], mode: str) -> dict[str, ColumnStats]:
    """The decoded value stats of a Parquet file holding ``chunks`` (one write each), footer-based."""
    schema = storage_arrow_schema(to_arrow_schema(fields))
    sink = pa.BufferOutputStream()
    writer = pq.ParquetWriter(sink, schema, write_statistics=True, **parquet_writer_options(Options({})))
    collector = StatsCollector(fields, mode, footer_schema=schema)
    for chunk in chunks:
        chunk = chunk.cast(schema)
        collector.update(chunk)
        writer.write_table(chunk, row_group_size=max(chunk.num_rows, 1))
    writer.close()
    stats, cols = collector.result(writer.writer.metadata)
    return decode_stats(stats, cols, fields)


def data_stats(data: pa.Table, fields: list[DataField], mode: str) -> dict[str, ColumnStats]:
    stats, cols = collect_stats(data, fields, mode)
    return decode_stats(stats, cols, fields)


def same(footer: dict[str, ColumnStats], computed: dict[str, ColumnStats]) -> None:
    assert footer.keys() == computed.keys()
    for name, (low, high, nulls) in footer.items():
        want_low, want_high, want_nulls = computed[name]
        assert nulls == want_nulls, name
        for got, want in ((low, want_low), (high, want_high)):
            assert type(got) is type(want), name
            assert got == want, name
    # A zero bound of a float column: Parquet's minimum is -0.0 and its maximum +0.0, whatever the data held.
    for low, high, _ in footer.values():
        if isinstance(low, float) and low == 0:
            assert math.copysign(1, low) == -1
        if isinstance(high, float) and high == 0:
            assert math.copysign(1, high) == 1


@st.composite
def chunked_tables(draw: st.DrawFn) -> tuple[list[DataField], list[pa.Table]]:
    types = draw(st.lists(arrow_types(nested=True), min_size=1, max_size=5))
    schema = pa.schema([pa.field(f"c{i}", t) for i, t in enumerate(types)])
    fields, _ = fields_from_arrow_schema(schema)
    arrow_schema = to_arrow_schema(fields)
    chunks = draw(st.lists(arrow_tables(arrow_schema, max_rows=12), min_size=1, max_size=4))
    return fields, chunks


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunked_tables(), st.sampled_from(MODES))
def test_footer_stats_equal_the_data_stats(case: tuple[list[DataField], list[pa.Table]], mode: str) -> None:
    fields, chunks = case
    data = pa.concat_tables(chunks)
    same(footer_stats(chunks, fields, mode), data_stats(data, fields, mode))


def test_every_type_with_several_row_groups() -> None:
    fields, _ = fields_from_arrow_schema(
        pa.schema(
            [
                pa.field("b", pa.bool_()),
                pa.field("i8", pa.int8()),
                pa.field("i16", pa.int16()),
                pa.field("f", pa.float32()),
                pa.field("s", pa.string()),
                pa.field("d9", pa.decimal128(9, 2)),
                pa.field("d18", pa.decimal128(18, 0)),
                pa.field("d38", pa.decimal128(38, 10)),
                pa.field("day", pa.date32()),
                pa.field("t", pa.time32("ms")),
                pa.field("tus", pa.time64("us")),
                pa.field("ts", pa.timestamp("ms")),
                pa.field("ltz", pa.timestamp("us", tz="UTC")),
                pa.field("bin", pa.binary()),
                pa.field("arr", pa.list_(pa.int32())),
            ]
        )
    )
    schema = to_arrow_schema(fields)
    first = pa.table(
        {
            "b": [True, None],
            "i8": [-128, 5],
            "i16": [7, None],
            "f": [1.5, -0.0],
            "s": ["é", "\U0001f600z"],
            "d9": [Decimal("-1.50"), Decimal("0.00")],
            "d18": [Decimal("-999999999999999999"), None],
            "d38": [Decimal("1234567890123456789012345678.0123456789"), Decimal("-0.0000000001")],
            "day": [dt.date(1, 1, 1), dt.date(2024, 2, 29)],
            "t": [dt.time(23, 59, 59, 999000), None],
            "tus": [dt.time(0, 0, 0, 1), dt.time(12)],
            "ts": [dt.datetime(1969, 12, 31, 23, 59, 59, 999000), None],
            "ltz": [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), None],
            "bin": [b"\xff", None],
            "arr": [[1], None],
        },
        schema=schema,
    )
    second = pa.table(
        {
            "b": [False, False],
            "i8": [127, None],
            "i16": [-32768, 0],
            "f": [None, 3.25],
            "s": ["a" * 20, None],
            "d9": [Decimal("9999999.99"), None],
            "d18": [Decimal("999999999999999999"), Decimal("0")],
            "d38": [Decimal("-9999999999999999999999999999.9999999999"), None],
            "day": [dt.date(9999, 12, 31), None],
            "t": [dt.time(0), dt.time(1)],
            "tus": [None, dt.time(23, 59, 59, 999999)],
            "ts": [dt.datetime(9999, 12, 31), dt.datetime(1, 1, 1)],
            "ltz": [None, dt.datetime(1900, 1, 1, tzinfo=dt.timezone.utc)],
            "bin": [b"", b"a"],
            "arr": [[], [2]],
        },
        schema=schema,
    )
    for mode in MODES:
        footer = footer_stats([first, second], fields, mode)
        same(footer, data_stats(pa.concat_tables([first, second]), fields, mode))
    footer = footer_stats([first, second], fields, "full")
    assert footer["d38"] == (
        Decimal("-9999999999999999999999999999.9999999999"),
        Decimal("1234567890123456789012345678.0123456789"),
        1,
    )
    assert footer["f"] == (-0.0, 3.25, 1)
    assert "arr" not in footer
    assert footer["bin"] == (None, None, 1)


@pytest.mark.parametrize("mode", ["full", "truncate(16)"])
def test_strings_longer_than_the_footer_keeps_are_bounded_from_the_data(mode: str) -> None:
    fields = [DataField(0, "s", string_type()), DataField(1, "i", IntType())]
    schema = to_arrow_schema(fields)
    long_low = "a" * (FOOTER_MAX_STAT_BYTES + 1)
    long_high = "z" * FOOTER_MAX_STAT_BYTES + "é"
    chunks = [
        pa.table({"s": ["m", long_low], "i": [1, 2]}, schema=schema),
        pa.table({"s": ["n", None], "i": [3, None]}, schema=schema),
        pa.table({"s": [long_high, "b"], "i": [4, 5]}, schema=schema),
    ]
    footer = footer_stats(chunks, fields, mode)
    same(footer, data_stats(pa.concat_tables(chunks), fields, mode))
    if mode == "full":
        assert footer["s"] == (long_low, long_high, 1)
    else:
        assert footer["s"] == ("a" * 16, "z" * 15 + "{", 1)


def test_nan_in_any_chunk_leaves_the_float_bounds_out() -> None:
    fields = [DataField(0, "f", DoubleType()), DataField(1, "g", FloatType())]
    schema = to_arrow_schema(fields)
    chunks = [
        pa.table({"f": [1.0, 2.0], "g": [0.5, None]}, schema=schema),
        pa.table({"f": [float("nan"), None], "g": [float("nan"), float("nan")]}, schema=schema),
    ]
    footer = footer_stats(chunks, fields, "full")
    assert footer == {"f": (None, None, 1), "g": (None, None, 1)}


def test_a_footer_without_bounds_the_collector_did_not_compute_gives_none() -> None:
    """A footer that lacks bounds of values the collector left to it (here: a collector fed other data
    than the file holds) yields no bounds rather than partial ones."""
    fields = [DataField(0, "s", string_type())]
    schema = to_arrow_schema(fields)
    sink = pa.BufferOutputStream()
    writer = pq.ParquetWriter(sink, schema, write_statistics=True)
    writer.write_table(pa.table({"s": ["b"]}, schema=schema))
    writer.write_table(pa.table({"s": ["x" * (FOOTER_MAX_STAT_BYTES + 10)]}, schema=schema))
    writer.close()
    collector = StatsCollector(fields, "full", footer_schema=schema)
    collector.update(pa.table({"s": ["b", "short"]}, schema=schema))
    stats, cols = collector.result(writer.writer.metadata)
    assert decode_stats(stats, cols, fields) == {"s": (None, None, 0)}


def test_decimal_bounds_keep_their_scale() -> None:
    fields = [DataField(0, "d", DecimalType(20, 4))]
    schema = to_arrow_schema(fields)
    chunks = [pa.table({"d": [Decimal("-0.0001"), Decimal("12.3000")]}, schema=schema)]
    low, high, nulls = footer_stats(chunks, fields, "full")["d"]
    assert (str(low), str(high), nulls) == ("-0.0001", "12.3000", 0)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(chunked_tables(), st.sampled_from(MODES), st.booleans())
def test_written_files_carry_the_stats_of_their_data(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[list[DataField], list[pa.Table]],
    mode: str,
    primary_key: bool,
) -> None:
    """End to end: each data file of an append or primary-key table holds the value stats of its rows."""
    fields, chunks = case
    schema = to_arrow_schema(fields)
    keys = [f for f in fields if not pa.types.is_nested(schema.field(f.name).type)]
    primary_key = primary_key and bool(keys)
    key = keys[0] if keys else fields[0]
    catalog = Catalog.open(str(tmp_path_factory.mktemp("wh")), create=True)
    catalog.create_database("db")
    options = {"metadata.stats-mode": mode, "write-only": "true"}
    if primary_key:
        options["bucket"] = "1"
    table = catalog.create_table(
        "db.t", schema, primary_keys=[key.name] if primary_key else (), options=options
    )
    data = pa.concat_tables(chunks)
    if primary_key:  # one row per key: the file then holds exactly the written rows
        data = data.filter(pa.compute.is_valid(data.column(key.name)))
        seen: set[Any] = set()
        keep = []
        for value in data.column(key.name).to_pylist():
            keep.append(value not in seen)
            seen.add(value)
        data = data.filter(pa.array(keep, pa.bool_()))
    if data.num_rows == 0:
        return
    table.append(data)
    layout = KeyValueLayout(table.schema)
    key_fields = layout.physical_key_fields
    for entry in table.live_entries():
        file = entry.file
        written = pq.read_table(f"{table.bucket_dir(entry.partition, entry.bucket)}/{file.file_name}")
        stats = decode_stats(file.value_stats, file.value_stats_cols, table.schema.fields)
        same(stats, data_stats(written.select([f.name for f in fields]).cast(schema), fields, mode))
        if primary_key:  # key stats: every key column, truncate(128), as Java writes them
            keys = written.select([f.name for f in key_fields]).cast(to_arrow_schema(key_fields))
            computed = collect_stats(keys, key_fields, "truncate(128)", dense_store=False)
            same(
                decode_stats(file.key_stats, None, key_fields),
                decode_stats(computed[0], None, key_fields),
            )
