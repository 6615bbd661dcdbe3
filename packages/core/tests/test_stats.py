"""Value statistics of data files (docs/format.md#statistics), as Java derives them from Parquet footers."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.binary_row import deserialize_row, serialize_row
from paimon_core.errors import ConfigError
from paimon_core.manifest import EMPTY_ROW_BYTES, SimpleStats
from paimon_core.stats import StatsCollector, collect_stats, decode_stats, parse_stats_mode
from paimon_core.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    DataField,
    DateType,
    DecimalType,
    DoubleType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    TimestampType,
    VarBinaryType,
    string_type,
    to_arrow_schema,
)

FIELDS = [
    DataField(0, "i", IntType()),
    DataField(1, "s", string_type()),
    DataField(2, "d", DecimalType(10, 2)),
    DataField(3, "day", DateType()),
    DataField(4, "ts", TimestampType(6)),
    DataField(5, "b", VarBinaryType(100)),
    DataField(6, "arr", ArrayType(IntType())),
    DataField(7, "f", DoubleType()),
    DataField(8, "ok", BooleanType()),
    DataField(9, "ltz", LocalZonedTimestampType(3)),
    DataField(10, "ns", TimestampType(9)),
]

UTC = dt.timezone.utc


def sample() -> pa.Table:
    return pa.table(
        {
            "i": [5, None, -3, 12],
            "s": ["pear", "apple", None, "zebra-long-name-over-sixteen-chars"],
            "d": [Decimal("1.50"), Decimal("-2.25"), None, Decimal("10.00")],
            "day": [dt.date(2024, 1, 3), dt.date(2023, 12, 31), None, None],
            "ts": [
                dt.datetime(2024, 1, 1, 10),
                None,
                dt.datetime(2024, 1, 1, 9, 0, 0, 1),
                dt.datetime(2025, 1, 1),
            ],
            "b": [b"\x01", b"\xff", None, b""],
            "arr": [[1], None, [], [2, 3]],
            "f": [0.5, -1.5, None, 2.0],
            "ok": [True, None, False, True],
            "ltz": [dt.datetime(2024, 1, 1, tzinfo=UTC), None, None, dt.datetime(2020, 1, 1, tzinfo=UTC)],
            "ns": [dt.datetime(2024, 1, 1), None, None, None],
        },
        schema=to_arrow_schema(FIELDS),
    )


def decoded(stats: SimpleStats, cols: Any, fields: list[DataField] = FIELDS) -> dict[str, Any]:
    return decode_stats(stats, cols, fields)


def test_full_mode_matches_what_java_reads_from_parquet_footers() -> None:
    stats, cols = collect_stats(sample(), FIELDS, "full")
    assert cols == tuple(f.name for f in FIELDS if f.name != "arr")  # nested types have no stats at all
    result = decoded(stats, cols)
    assert result["i"] == (-3, 12, 1)
    assert result["s"] == ("apple", "zebra-long-name-over-sixteen-chars", 1)
    assert result["d"] == (Decimal("-2.25"), Decimal("10.00"), 1)
    assert result["day"] == (dt.date(2023, 12, 31), dt.date(2024, 1, 3), 2)
    assert result["ts"] == (dt.datetime(2024, 1, 1, 9, 0, 0, 1), dt.datetime(2025, 1, 1), 1)
    assert result["b"] == (None, None, 1)  # Java keeps no min/max for binary columns
    assert result["f"] == (-1.5, 2.0, 1)
    assert result["ok"] == (False, True, 1)
    assert result["ltz"] == (dt.datetime(2020, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, tzinfo=UTC), 2)
    assert result["ns"] == (None, None, 3)  # precision > 6: no min/max
    assert "arr" not in result


def test_stats_row_bytes_are_binary_rows_of_the_kept_columns() -> None:
    fields = [DataField(0, "a", IntType()), DataField(1, "s", string_type())]
    table = pa.table({"a": [3, 1, 2], "s": ["x", None, "y"]}, schema=to_arrow_schema(fields))
    stats, cols = collect_stats(table, fields, "full")
    assert cols is None  # every column kept
    types = [IntType(), string_type()]
    assert stats == SimpleStats(serialize_row([1, "x"], types), serialize_row([3, "y"], types), (0, 1))


def test_truncate_mode_cuts_strings_and_bumps_the_max() -> None:
    stats, cols = collect_stats(sample(), FIELDS, "truncate(4)")
    result = decoded(stats, cols)
    assert result["s"] == ("appl", "zebs", 1)
    assert result["i"] == (-3, 12, 1)  # other types are untouched


def test_truncate_gives_up_on_an_unbumpable_max() -> None:
    fields = [DataField(0, "s", string_type())]
    top = "\U0010ffff" * 3
    table = pa.table({"s": ["a", top + "x"]}, schema=to_arrow_schema(fields))
    stats, cols = collect_stats(table, fields, "truncate(3)")
    # Java drops min and max together, keeping the null count.
    assert decoded(stats, cols, fields) == {"s": (None, None, 0)}


@pytest.mark.parametrize(
    ("value", "length", "expected_max"),
    [
        ("abcdef", 3, "abd"),
        ("abc", 3, "abc"),
        ("ab", 3, "ab"),
        ("a\U0010ffffzz", 2, "b"),
        ("é€😀x", 3, "é€😁"),
        ("a\ud7ffzz", 2, "a\ue000"),  # the next code point after U+D7FF is a surrogate: skip to U+E000
    ],
)
def test_truncated_max_values(value: str, length: int, expected_max: str) -> None:
    fields = [DataField(0, "s", string_type())]
    table = pa.table({"s": [value]}, schema=to_arrow_schema(fields))
    stats, cols = collect_stats(table, fields, f"truncate({length})")
    low, high, _ = decoded(stats, cols, fields)["s"]
    assert low == value[:length]
    assert high == expected_max
    assert high >= value


def test_counts_and_none_modes_and_per_field_overrides() -> None:
    stats, cols = collect_stats(sample(), FIELDS, "counts", {"i": "full", "s": "none"})
    result = decoded(stats, cols)
    assert result["i"] == (-3, 12, 1)
    assert "s" not in result
    assert result["d"] == (None, None, 1)
    assert cols is not None and "s" not in cols and "arr" not in cols


def test_no_stats_at_all_gives_empty_stats_and_an_empty_column_list() -> None:
    stats, cols = collect_stats(sample(), FIELDS, "none")
    assert stats == SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())
    assert cols == ()
    assert decoded(stats, cols) == {}


def test_sparse_store_keeps_every_column() -> None:
    stats, cols = collect_stats(sample(), FIELDS, "full", dense_store=False)
    assert cols is None
    assert stats.null_counts is not None and len(stats.null_counts) == len(FIELDS)
    assert stats.null_counts[6] is None  # the array column: nothing known
    result = decoded(stats, None)
    assert result["i"] == (-3, 12, 1)
    assert "arr" not in result


def test_batches_accumulate_like_one_table() -> None:
    table = sample()
    collector = StatsCollector(FIELDS, "truncate(16)")
    for batch in table.to_batches(max_chunksize=1):
        collector.update(batch)
    assert collector.result() == collect_stats(table, FIELDS, "truncate(16)")
    assert collect_stats(table.to_batches(max_chunksize=3), FIELDS) == collect_stats(table, FIELDS)


def test_all_null_and_empty_columns() -> None:
    fields = [DataField(0, "a", BigIntType()), DataField(1, "s", string_type())]
    table = pa.table({"a": [None, None], "s": [None, None]}, schema=to_arrow_schema(fields))
    stats, cols = collect_stats(table, fields, "full")
    assert decoded(stats, cols, fields) == {"a": (None, None, 2), "s": (None, None, 2)}
    empty = table.slice(0, 0)
    stats, cols = collect_stats(empty, fields, "full")
    assert decoded(stats, cols, fields) == {"a": (None, None, 0), "s": (None, None, 0)}


def test_nan_hides_float_bounds() -> None:
    fields = [DataField(0, "f", DoubleType())]
    table = pa.table({"f": [1.0, float("nan"), None]}, schema=to_arrow_schema(fields))
    stats, cols = collect_stats(table, fields, "full")
    assert decoded(stats, cols, fields) == {"f": (None, None, 1)}


def test_decode_stats_falls_back_to_nothing_on_mismatch() -> None:
    fields = [DataField(0, "a", IntType()), DataField(1, "b", IntType())]
    stats = SimpleStats(serialize_row([1], [IntType()]), serialize_row([2], [IntType()]), (0,))
    assert decode_stats(stats, None, fields) == {}  # arity 1 but two columns
    assert decode_stats(stats, ["a"], fields) == {"a": (1, 2, 0)}
    assert decode_stats(stats, ["zz"], fields) == {}  # a column the schema lacks
    assert decode_stats(stats, None, fields, write_cols=["b"]) == {"b": (1, 2, 0)}
    assert decode_stats(SimpleStats.EMPTY, [], fields) == {}


def test_decode_nested_types_in_sparse_stats() -> None:
    fields = [DataField(0, "m", MapType(IntType(), IntType())), DataField(1, "a", IntType())]
    table = pa.table({"m": [[(1, 2)]], "a": [4]}, schema=to_arrow_schema(fields))
    stats, cols = collect_stats(table, fields, "full", dense_store=False)
    assert deserialize_row(stats.min_values, [BigIntType(), IntType()]) == [None, 4]
    assert decode_stats(stats, cols, fields) == {"a": (4, 4, 0)}


@pytest.mark.parametrize("mode", ["truncate(0)", "truncate", "all", "truncate(-1)"])
def test_bad_modes(mode: str) -> None:
    with pytest.raises(ConfigError):
        parse_stats_mode(mode)
    with pytest.raises(ConfigError):
        StatsCollector(FIELDS, "full", {"i": mode})


def test_modes_are_case_insensitive() -> None:
    assert parse_stats_mode("TRUNCATE(8)") == parse_stats_mode("truncate(8)")
    assert parse_stats_mode(" Full ") == parse_stats_mode("full")
