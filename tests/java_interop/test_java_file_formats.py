"""ORC and Avro tables written by Java Apache Paimon 0.9 (ORC: Paimon's default file format before 0.9;
Avro: its advice for level 0 of write-heavy tables), read here, and ours read by Java (marker
``java_interop``): append and primary-key tables, with filters, compared with the other side's reads."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog

pytestmark = pytest.mark.java_interop

COLUMNS = [("id", "BIGINT NOT NULL"), ("name", "STRING"), ("score", "DOUBLE"), ("ok", "BOOLEAN")]


def _rows(start: int, count: int, version: int = 0) -> list[tuple[Any, ...]]:
    return [
        (i, None if i % 7 == 0 else f"n{i}-{version}", i / 4 + version, i % 2 == 0)
        for i in range(start, start + count)
    ]


def _ours(catalog: Catalog, name: str, **read: Any) -> list[tuple[Any, ...]]:
    rows = catalog.get_table(name).to_arrow(**read).to_pylist()
    return sorted((tuple(row.values()) for row in rows), key=lambda row: row[0])


FORMATS = pytest.mark.parametrize("fmt", ["orc", "avro"])


@FORMATS
def test_an_append_table_written_by_java_reads_as_java_reads_it(ours: Catalog, java: Any, fmt: str) -> None:
    java.create_table("logs", COLUMNS, options={"file.format": fmt, "bucket": "-1"})
    java.write("logs", _rows(0, 500))
    java.write("logs", _rows(500, 300))
    table = ours.get_table("db.logs")
    assert {e.file.file_name.rsplit(".", 1)[-1] for e in table.live_entries()} == {fmt}
    assert _ours(ours, "db.logs") == java.read("logs") == sorted(_rows(0, 800))
    where = ("score", ">=", 100.0)
    expected = java.read("logs", where)
    assert _ours(ours, "db.logs", filter=[where]) == expected and len(expected) == 400
    batches = list(table.to_batches(columns=["id"]))
    assert sum(b.num_rows for b in batches) == 800


@FORMATS
@pytest.mark.parametrize("bucket", ["2", "-1"], ids=["fixed-bucket", "dynamic-bucket"])
def test_a_primary_key_table_written_by_java_merges_as_java_merges_it(
    ours: Catalog, java: Any, bucket: str, fmt: str
) -> None:
    java.create_table(
        "kv",
        COLUMNS,
        primary_keys=["id"],
        options={"file.format": fmt, "bucket": bucket, "num-sorted-run.compaction-trigger": "10"},
    )
    java.write("kv", _rows(0, 400, 0))
    java.write("kv", _rows(200, 400, 1))
    java.write("kv", [_rows(10, 1)[0], _rows(450, 1)[0]], kinds="-D")
    expected = java.read("kv")
    assert len(expected) == 598
    assert _ours(ours, "db.kv") == expected
    assert _ours(ours, "db.kv", filter=[("id", ">=", 300)]) == [r for r in expected if r[0] >= 300]
    java.full_compact("kv")
    assert _ours(ours, "db.kv") == java.read("kv") == expected


def test_a_table_with_a_format_per_level_reads_every_level(ours: Catalog, java: Any) -> None:
    """``file.format.per.level = 0:avro``: Java writes level 0 in Avro, whatever it compacts into."""
    options = {"file.format.per.level": "0:avro", "bucket": "1", "num-sorted-run.compaction-trigger": "10"}
    java.create_table("mixed", COLUMNS, primary_keys=["id"], options=options)
    java.write("mixed", _rows(0, 300, 0))
    java.full_compact("mixed")
    java.write("mixed", _rows(100, 100, 1))
    table = ours.get_table("db.mixed")
    levels = {e.file.level: e.file.file_name.rsplit(".", 1)[-1] for e in table.live_entries()}
    assert levels[0] == "avro" and max(levels) > 0  # level 0 in Avro, the compacted run below it
    assert _ours(ours, "db.mixed") == java.read("mixed")


# --- our ORC and Avro files, read by Java -------------------------------------------------------------------

TYPED = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("score", pa.float64()),
        pa.field("ok", pa.bool_()),
        pa.field("big", pa.int64()),
        pa.field("tiny", pa.int8()),
        pa.field("small", pa.int16()),
        pa.field("f", pa.float32()),
        pa.field("day", pa.date32()),
        pa.field("at_ms", pa.timestamp("ms")),
        pa.field("at_us", pa.timestamp("us")),
        pa.field("instant", pa.timestamp("us", tz="UTC")),
        pa.field("amount", pa.decimal128(12, 3)),
        pa.field("raw", pa.binary()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("attrs", pa.map_(pa.string(), pa.int64())),
        pa.field("by_id", pa.map_(pa.int32(), pa.string())),
        pa.field("point", pa.struct([("x", pa.float64()), ("label", pa.string())])),
    ]
)


def _typed_rows(start: int, count: int, version: int = 0) -> pa.Table:
    ids = range(start, start + count)

    def some(values: list[Any]) -> list[Any]:
        return [None if i % 5 == version % 5 else v for i, v in zip(ids, values, strict=True)]

    epoch = dt.datetime(1970, 1, 1)
    columns: dict[str, list[Any]] = {
        "id": list(ids),
        "name": some([f"n{i}-{version}" for i in ids]),
        "score": some([i / 4 + version for i in ids]),
        "ok": some([i % 2 == 0 for i in ids]),
        "big": some([i * 10**12 - version for i in ids]),
        "tiny": some([i % 120 - 60 for i in ids]),
        "small": some([i * 7 % 30000 for i in ids]),
        "f": some([i / 8 for i in ids]),
        "day": some([dt.date(1960, 1, 1) + dt.timedelta(days=i * 37) for i in ids]),
        "at_ms": some([epoch + dt.timedelta(milliseconds=i * 86_400_123 - 10**9) for i in ids]),
        "at_us": some([epoch + dt.timedelta(microseconds=i * 86_400_123_457) for i in ids]),
        "instant": some(
            [dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i) for i in ids]
        ),
        "amount": some([decimal.Decimal(f"{i * 1001 - 5000}.{i % 1000:03d}") for i in ids]),
        "raw": some([bytes([i % 256, version]) * (i % 3) for i in ids]),
        "tags": some([[f"t{i}", None][: i % 3] for i in ids]),
        "attrs": some([[("a", i), ("b", None)][: i % 3] for i in ids]),
        "by_id": some([[(i, f"v{i}"), (-i - 1, None)][: i % 3] for i in ids]),
        "point": some([{"x": i / 2, "label": None if i % 4 else f"p{i}"} for i in ids]),
    }
    return pa.table(columns, schema=TYPED)


def _as_java_gives(table: pa.Table) -> list[tuple[Any, ...]]:
    """Our rows in the shapes the Java helper returns them (see ``JavaPaimon._python``), sorted by id."""
    data = table.select(TYPED.names).cast(TYPED)

    def value(arrow_type: pa.DataType, v: Any) -> Any:
        if v is None:
            return None
        if pa.types.is_timestamp(arrow_type):
            scalar = pa.scalar(v, arrow_type).cast(pa.timestamp("ns", tz=arrow_type.tz))
            nanos = scalar.value
            return (nanos // 1_000_000, nanos % 1_000_000)
        if pa.types.is_date32(arrow_type):
            return (v - dt.date(1970, 1, 1)).days
        if pa.types.is_decimal(arrow_type):
            return format(v, "f")
        if pa.types.is_list(arrow_type):
            return [value(arrow_type.value_type, x) for x in v]
        if pa.types.is_map(arrow_type):
            pairs = [(value(arrow_type.key_type, k), value(arrow_type.item_type, x)) for k, x in v]
            return sorted(pairs, key=lambda p: tuple((x is not None, x) for x in p))
        if pa.types.is_struct(arrow_type):
            return tuple(
                value(arrow_type.field(i).type, v[arrow_type.field(i).name])
                for i in range(arrow_type.num_fields)
            )
        if pa.types.is_float32(arrow_type):
            return float(pa.scalar(v, pa.float32()).as_py())
        return v

    rows = [tuple(value(f.type, row[f.name]) for f in TYPED) for row in data.to_pylist()]
    return sorted(rows, key=lambda r: r[0])


@FORMATS
@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_java_reads_our_tables_as_we_read_them(ours: Catalog, java: Any, fmt: str, primary_key: bool) -> None:
    options = {"file.format": fmt, **({"bucket": "2"} if primary_key else {})}
    table = ours.create_table("db.t", TYPED, primary_keys=["id"] if primary_key else (), options=options)
    table.append(_typed_rows(0, 300))
    table.append(_typed_rows(200 if primary_key else 300, 200, version=1))
    table = ours.get_table("db.t")
    assert {e.file.file_name.rsplit(".", 1)[-1] for e in table.live_entries()} == {fmt}
    expected = _as_java_gives(table.to_arrow())
    assert len(expected) == (400 if primary_key else 500)
    assert java.read("t") == expected
    assert java.read("t", ("id", ">=", 250)) == [r for r in expected if r[0] >= 250]
    assert java.read("t", ("score", "<", 20.0)) == [r for r in expected if r[2] is not None and r[2] < 20.0]


def test_java_reads_our_table_whose_levels_have_their_own_formats(ours: Catalog, java: Any) -> None:
    """Level 0 in Avro, the levels below in ORC, changelog files in Parquet: Java merges them as we do, and
    reads the changelog we produced."""
    options = {
        "bucket": "1",
        "file.format": "orc",
        "file.format.per.level": "0:avro",
        "changelog-file.format": "parquet",
        "changelog-producer": "lookup",
        "num-sorted-run.compaction-trigger": "10",
    }
    ours.create_table("db.m", TYPED, primary_keys=["id"], options=options)
    table = ours.get_table("db.m")
    table.append(_typed_rows(0, 200))
    table.append(_typed_rows(100, 200, version=1))
    table = ours.get_table("db.m")
    formats = {(e.file.level, e.file.file_name.rsplit(".", 1)[-1]) for e in table.live_entries()}
    assert {f for _, f in formats} >= {"orc"} and all(f == "avro" for level, f in formats if level == 0)
    expected = _as_java_gives(table.to_arrow())
    assert java.read("m") == expected
    changes = java.read_changes("m")
    last = {}
    for kind, *values in changes:
        if kind in ("+I", "+U"):
            last[values[0]] = tuple(values)
        elif kind == "-D":
            last.pop(values[0], None)
    assert sorted(last.values(), key=lambda r: r[0]) == expected
