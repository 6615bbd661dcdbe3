"""Interoperability with pypaimon 2.1.0, the official Python SDK, in both directions.

Every test writes with one implementation and reads with the other (or both), comparing whole tables
sorted by ``id``: the Arrow schema each reader returns and every value. The expected rows come from a
model kept by the test (appends add rows, overwrites replace partitions), never from either reader.

Known representation differences, checked explicitly rather than ignored (``Column.pypaimon_type`` and
``Column.ours_type``):

* pypaimon reads ``BINARY(n)`` as ``pa.binary()`` (its ``PyarrowFieldParser.from_paimon_type`` maps
  BINARY/VARBINARY/BYTES alike), so a ``fixed_size_binary(n)`` column comes back variable-width.
* pypaimon maps every Arrow time type to ``TIME(0)`` and reads every ``TIME(p)`` as ``time32("ms")``;
  it still stores milliseconds, which paimon_core reads back (TIME(p <= 3) is ``time32("ms")`` here).
* paimon_core reads ``TIMESTAMP(0)`` as ``timestamp("ms")`` (Parquet has no seconds unit); pypaimon
  returns ``timestamp("s")``. Both return ``TIMESTAMP_LTZ(p)`` with ``tz="UTC"``.

Partition directories: pypaimon 2.1.0 names them as Java does (``FileStorePathFactory._canonical_partition``:
DATE as the day number, Hive escaping; older releases used ``str()`` and no escaping, which
the 2.1.0 wheel no longer does). When reading, it recomputes each data file's path from the partition values of its
manifest entry (``canonical_data_file_path``, called from ``read/scanner/split_generator.py``) rather
than listing directories, so a table whose directory names differ from Java's is unreadable by pypaimon:
writing DATE partitions as ``p_date=2024-01-01`` makes its read fail with ``FileNotFoundError`` on
``p_date=19723/bucket-0/data-...parquet``. The byte checks at the
end compare directory names, partition bytes and buckets file by file.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.interop

TABLE = "db.t"


# --- the data ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A column of the all-types table.

    Attributes:
        name: column name.
        type: the Arrow type written.
        value: the value of row ``id`` when it is not null.
        pypaimon_type: the Arrow type pypaimon reads the column as, when it is not ``type``.
        ours_type: the Arrow type paimon_core reads the column as, when it is not ``type``.
    """

    name: str
    type: pa.DataType
    value: Callable[[int], Any]
    pypaimon_type: pa.DataType | None = None
    ours_type: pa.DataType | None = None


def _pick(*values: Any) -> Callable[[int], Any]:
    return lambda i: values[i % len(values)]


_EPOCH = dt.datetime(1970, 1, 1)


def _dec38(i: int) -> Decimal:
    """A DECIMAL(38, 10) value; every 5th one has all 38 digits. Built from text: no context rounding."""
    sign = "-" if i % 2 else ""
    if i % 5 == 0:
        return Decimal(f"{sign}{'9' * 28}.{'9' * 10}")
    return Decimal(f"{sign}{i * 123_456_789_012_345_678_901 % 10**28}.{i * 7919 % 10**10:010d}")


# Partition values: Hive-escaped characters, a pre-epoch date (day number -1) and nulls, which land in
# __DEFAULT_PARTITION__. Empty or blank strings would also land there and read back as null (Paimon's
# semantics in Java too), so they are not used as partition values.
P_STR = ("a/b", "x=y", None, "plain", "ü sp%ce", "10:30")
P_INT = (1, -7, None, 2147483647)
P_DATE = (dt.date(2024, 1, 1), dt.date(1969, 12, 31), None, dt.date(2024, 2, 29))

VALUE_COLUMNS: tuple[Column, ...] = (
    Column("c_bool", pa.bool_(), lambda i: i % 3 == 0),
    Column("c_tinyint", pa.int8(), _pick(-128, 127, 0, -1, 42)),
    Column("c_smallint", pa.int16(), _pick(-32768, 32767, 0, 1234)),
    Column(
        "c_int", pa.int32(), lambda i: (-(2**31), 2**31 - 1, 0)[i % 3] if i % 4 == 0 else i * 7919 - 50000
    ),
    Column("c_bigint", pa.int64(), lambda i: (-(2**63), 2**63 - 1)[i % 2] if i % 5 == 1 else i * 10**12 + 3),
    Column("c_float", pa.float32(), _pick(1.5, -0.25, 3.4028234663852886e38, -1.1754943508222875e-38, 0.0)),
    Column("c_double", pa.float64(), lambda i: (1.7976931348623157e308, -5e-324, i / 3.0, -i * 1e10)[i % 4]),
    Column(
        "c_dec10",
        pa.decimal128(10, 2),
        lambda i: Decimal(i * 1013 - 5000) / 100 if i % 6 else Decimal("-99999999.99"),
    ),
    Column("c_dec38", pa.decimal128(38, 10), lambda i: _dec38(i)),
    Column("c_string", pa.string(), _pick("", "short", "longer than seven bytes ü", "x" * 300, "日本語")),
    Column("c_bytes", pa.binary(), lambda i: (b"", b"\x00\xff", bytes(range(i % 40)))[i % 3]),
    Column("c_binary4", pa.binary(4), lambda i: (i * 2654435761 % 2**32).to_bytes(4, "big"), pa.binary()),
    Column(
        "c_date", pa.date32(), lambda i: dt.date(1970, 1, 1) + dt.timedelta(days=(i * 977) % 40000 - 20000)
    ),
    Column(
        "c_time",
        pa.time32("ms"),
        lambda i: dt.time(i % 24, (i * 7) % 60, (i * 13) % 60, (i * 37 % 1000) * 1000),
    ),
    # paimon_core reads TIMESTAMP(0) as milliseconds (Parquet has no seconds unit); pypaimon as seconds.
    Column(
        "c_ts0",
        pa.timestamp("s"),
        lambda i: _EPOCH + dt.timedelta(seconds=i * 86_399 - 3_000_000),
        ours_type=pa.timestamp("ms"),
    ),
    Column(
        "c_ts3", pa.timestamp("ms"), lambda i: _EPOCH + dt.timedelta(milliseconds=i * 123_456_789 - 10**10)
    ),
    Column(
        "c_ts6",
        pa.timestamp("us"),
        lambda i: _EPOCH + dt.timedelta(microseconds=i * 987_654_321_123 - 10**15),
    ),
    # Nanoseconds given as integers: a datetime would stop at microseconds.
    Column("c_ts9", pa.timestamp("ns"), lambda i: i * 3_141_592_653_589_793 + 7 - 10**18),
    Column(
        "c_ltz",
        pa.timestamp("us", tz="UTC"),
        lambda i: (
            dt.datetime(2024, 3, 31, 1, 30, tzinfo=dt.timezone.utc)
            + dt.timedelta(minutes=i * 61, microseconds=i)
        ),
    ),
    Column(
        "c_array_int", pa.list_(pa.int32()), lambda i: [None if j == 1 else i * 10 + j for j in range(i % 4)]
    ),
    Column("c_array_str", pa.list_(pa.string()), lambda i: ["", "a" * (i % 12), None][: i % 4]),
    Column(
        "c_map",
        pa.map_(pa.string(), pa.int64()),
        lambda i: [(f"k{j}", None if j == 2 else i * j) for j in range(i % 4)],
    ),
    Column(
        "c_row",
        pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.list_(pa.float64()))]),
        lambda i: {
            "a": None if i % 3 == 0 else i,
            "b": None if i % 4 == 1 else f"row {i}",
            "c": [i / 2.0] * (i % 3),
        },
    ),
    Column(
        "c_array_row",
        pa.list_(pa.struct([("x", pa.int64()), ("y", pa.string())])),
        lambda i: [{"x": i + j, "y": None if j else "first"} for j in range(i % 3)],
    ),
)

PARTITION_COLUMNS: tuple[Column, ...] = (
    Column("p_str", pa.string(), _pick(*P_STR)),
    Column("p_int", pa.int32(), lambda i: P_INT[(i // 2) % len(P_INT)]),
    Column("p_date", pa.date32(), lambda i: P_DATE[(i // 3) % len(P_DATE)]),
)
# Stand-ins for null partition values where pypaimon cannot write them (see PYPAIMON_NULL_PARTITION_BUG).
NOT_NULL_PARTITION = {"p_str": "was null", "p_int": 0, "p_date": dt.date(2000, 1, 1)}

# pypaimon 2.1.0 cannot append to a fixed-bucket table a row whose partition has a null value once the
# table has a snapshot: FileStoreWrite._load_seq_number_stats filters the existing files with
# ``predicate_builder.equal(key, None)``, and Equal.test_by_stats then compares ``min <= None`` against
# the manifest's partition stats -> TypeError. So fixed-bucket tables that pypaimon writes after their
# first commit use NOT_NULL_PARTITION instead; test_pypaimon_null_partition_bug pins the bug.
PYPAIMON_NULL_PARTITION_BUG = "pypaimon 2.1.0: fixed-bucket append into a null partition raises TypeError"

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False)]
    + [pa.field(c.name, c.type) for c in (*PARTITION_COLUMNS, *VALUE_COLUMNS)]
)

# What pypaimon returns for SCHEMA (see the module docstring).
PYPAIMON_SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False)]
    + [pa.field(c.name, c.pypaimon_type or c.type) for c in (*PARTITION_COLUMNS, *VALUE_COLUMNS)]
)
# What paimon_core returns for SCHEMA, whether it or pypaimon created the table.
OURS_SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False)]
    + [pa.field(c.name, c.ours_type or c.type) for c in (*PARTITION_COLUMNS, *VALUE_COLUMNS)]
)


def make_rows(ids: range, *, null_partitions: bool = True, **fixed: Any) -> pa.Table:
    """Rows with these ids; each nullable column is null on every 7th row (a different one per column;
    7 is coprime to the periods of the value cycles, so every value also appears non-null).

    ``fixed`` forces columns to one value (a static-overwrite partition). Without ``null_partitions``,
    null partition values are replaced by NOT_NULL_PARTITION.
    """
    columns: dict[str, list[Any]] = {"id": list(ids)}
    for k, column in enumerate((*PARTITION_COLUMNS, *VALUE_COLUMNS)):
        if column.name in fixed:
            columns[column.name] = [fixed[column.name]] * len(ids)
        elif column in PARTITION_COLUMNS:
            values = [column.value(i) for i in ids]
            if not null_partitions:
                values = [NOT_NULL_PARTITION[column.name] if v is None else v for v in values]
            columns[column.name] = values
        else:
            columns[column.name] = [None if (i + k) % 7 == 0 else column.value(i) for i in ids]
    return pa.table(columns, schema=SCHEMA)


def empty_rows() -> pa.Table:
    return SCHEMA.empty_table()


def pypaimon_view(rows: pa.Table) -> pa.Table:
    """``rows`` as pypaimon returns them."""
    return rows.cast(PYPAIMON_SCHEMA)


def ours_view(rows: pa.Table) -> pa.Table:
    """``rows`` as paimon_core returns them."""
    return rows.cast(OURS_SCHEMA)


# --- the model of a table ----------------------------------------------------------------------------


def _partition_of(row: Mapping[str, Any], keys: Sequence[str]) -> tuple[Any, ...]:
    return tuple(row[k] for k in keys)


def apply_overwrite(
    model: pa.Table, data: pa.Table, keys: Sequence[str], static: Mapping[str, Any] | None
) -> pa.Table:
    """Java's overwrite: dynamic replaces the partitions present in ``data``, static those matching the spec."""
    rows = model.select(list(keys)).to_pylist()
    if not keys:
        keep = [False] * model.num_rows
    elif static is None:
        replaced = {_partition_of(r, keys) for r in data.select(list(keys)).to_pylist()}
        keep = [_partition_of(r, keys) not in replaced for r in rows]
    else:
        keep = [not all(r[k] == v for k, v in static.items()) for r in rows]
    return pa.concat_tables([model.filter(pa.array(keep, pa.bool_())), data])


# --- comparing tables --------------------------------------------------------------------------------


def assert_same_table(actual: pa.Table, expected: pa.Table, what: str) -> None:
    """Equal schemas (ignoring field metadata) and equal rows, compared after sorting by ``id``."""
    assert actual.schema.equals(expected.schema, check_metadata=False), (
        f"{what}: schema differs\n--- actual\n{actual.schema}\n--- expected\n{expected.schema}"
    )
    actual_ids = actual.column("id").to_pylist()
    expected_ids = expected.column("id").to_pylist()
    assert sorted(actual_ids) == sorted(expected_ids), (
        f"{what}: ids differ; missing {sorted(set(expected_ids) - set(actual_ids))}, "
        f"unexpected {sorted(set(actual_ids) - set(expected_ids))}, {len(actual_ids)} vs {len(expected_ids)} rows"
    )
    actual = actual.sort_by("id")
    expected = expected.sort_by("id")
    for name in expected.column_names:
        got = actual.column(name).combine_chunks()
        want = expected.column(name).combine_chunks()
        if got.equals(want):
            continue
        got_values, want_values = got.to_pylist(), want.to_pylist()
        bad = next(i for i in range(len(want_values)) if got_values[i] != want_values[i])
        raise AssertionError(
            f"{what}: column {name!r} differs first at id={expected.column('id')[bad].as_py()}: "
            f"got {got_values[bad]!r}, expected {want_values[bad]!r}"
        )


# --- the table's files ------------------------------------------------------------------------------


def table_dir(warehouse: str, identifier: str = TABLE) -> Path:
    database, table = identifier.split(".")
    return Path(warehouse) / f"{database}.db" / table


def data_files_by_id(warehouse: str, identifier: str) -> dict[int, str]:
    """id → the directory (relative to the table) of the live data file holding it, found on the disk.

    Live = named by an ADD entry of the latest snapshot; files an overwrite removed stay on the disk.
    """
    root = table_dir(warehouse, identifier)
    latest = max(int(p.name.split("-")[1]) for p in (root / "snapshot").glob("snapshot-*"))
    live = {e["_FILE"]["_FILE_NAME"] for e in snapshot_entries(warehouse, identifier, latest)}
    where: dict[int, str] = {}
    found = set()
    for path in root.rglob("*.parquet"):
        if path.name not in live:
            continue
        found.add(path.name)
        directory = path.parent.relative_to(root).as_posix()
        for row_id in pq.ParquetFile(path).read(columns=["id"]).column("id").to_pylist():
            assert row_id not in where, f"id {row_id} is in two live files"
            where[row_id] = directory
    assert found == live, f"live files missing on the disk: {sorted(live - found)}"
    return where


def read_avro(path: Path) -> list[dict[str, Any]]:
    """The records of a manifest file or manifest list (Avro records, read as dicts)."""
    records = []
    with path.open("rb") as f:
        for record in fastavro.reader(f):
            assert isinstance(record, dict)
            records.append(record)
    return records


def snapshot_entries(warehouse: str, identifier: str, snapshot_id: int) -> list[dict[str, Any]]:
    """The manifest entries (base then delta) of a snapshot, merged: ADDs still live."""
    root = table_dir(warehouse, identifier)
    snapshot = json.loads((root / "snapshot" / f"snapshot-{snapshot_id}").read_text())
    live: dict[tuple[Any, ...], dict[str, Any]] = {}
    for list_name in (snapshot["baseManifestList"], snapshot["deltaManifestList"]):
        for manifest in read_avro(root / "manifest" / list_name):
            for entry in read_avro(root / "manifest" / manifest["_FILE_NAME"]):
                identity = (entry["_PARTITION"], entry["_BUCKET"], entry["_FILE"]["_FILE_NAME"])
                if entry["_KIND"] == 0:
                    assert identity not in live, f"ADD of a live file {identity}"
                    live[identity] = entry
                else:
                    live.pop(identity, None)
    return list(live.values())


# --- the scenario both directions run -----------------------------------------------------------------

LAYOUTS: dict[str, tuple[str, ...]] = {
    "unpartitioned": (),
    "by-string": ("p_str",),
    "by-int": ("p_int",),
    "by-date": ("p_date",),
    "by-string-int-date": ("p_str", "p_int", "p_date"),
}
BUCKETS: dict[str, dict[str, str]] = {
    "bucket-unaware": {"bucket": "-1"},
    "bucket-3": {"bucket": "3", "bucket-key": "id"},
}
# The static overwrite of each layout; for the composite key it names only the first key (a partial
# partition spec, which replaces every partition under it).
STATIC_PARTITION: dict[str, dict[str, Any]] = {
    "unpartitioned": {},
    "by-string": {"p_str": "a/b"},
    "by-int": {"p_int": -7},
    "by-date": {"p_date": dt.date(1969, 12, 31)},
    "by-string-int-date": {"p_str": "a/b"},
}


@dataclass(frozen=True)
class Step:
    kind: str  # "append" | "overwrite"
    rows: pa.Table
    static: dict[str, Any] | None = None  # overwrite: None = dynamic


def scenario(layout: str, null_partitions: bool = True) -> list[Step]:
    """Two appends, a dynamic overwrite, a static overwrite, another append: five snapshots."""
    static = STATIC_PARTITION[layout]
    nulls = null_partitions
    return [
        Step("append", make_rows(range(0, 30), null_partitions=nulls)),
        Step("append", make_rows(range(30, 60), null_partitions=nulls)),
        Step("overwrite", make_rows(range(60, 75), null_partitions=nulls)),
        Step("overwrite", make_rows(range(75, 90), null_partitions=nulls, **static), static),
        Step("append", make_rows(range(90, 120), null_partitions=nulls)),
    ]


def expected_history(layout: str, null_partitions: bool = True) -> dict[int, pa.Table]:
    """The table's rows after each step, by snapshot id (1..5)."""
    keys = LAYOUTS[layout]
    model = empty_rows()
    history = {}
    for snapshot_id, step in enumerate(scenario(layout, null_partitions), start=1):
        if step.kind == "append":
            model = pa.concat_tables([model, step.rows])
        else:
            model = apply_overwrite(model, step.rows, keys, step.static)
        history[snapshot_id] = model
    return history


def filter_value(layout: str) -> tuple[str, Any]:
    """A (column, value) to filter on: the first partition key, or a value column when unpartitioned."""
    keys = LAYOUTS[layout]
    if not keys:
        return "c_tinyint", 127
    return keys[0], {"p_str": "x=y", "p_int": 2147483647, "p_date": dt.date(2024, 1, 1)}[keys[0]]


def rows_where(rows: pa.Table, column: str, value: Any) -> pa.Table:
    return rows.filter(pc.equal(rows.column(column), pa.scalar(value, rows.schema.field(column).type)))


# --- 1. ours → pypaimon -------------------------------------------------------------------------------


@pytest.mark.parametrize("buckets", BUCKETS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_pypaimon_reads_what_we_write(ours: Any, pypaimon: Any, layout: str, buckets: str) -> None:
    table = ours.create_table(TABLE, SCHEMA, partition_keys=list(LAYOUTS[layout]), options=BUCKETS[buckets])
    for step in scenario(layout):
        if step.kind == "append":
            table.append(step.rows)
        else:
            table.overwrite(step.rows, partition=step.static)
    history = expected_history(layout)
    assert [s.id for s in table.snapshots()] == list(history)
    assert pypaimon.latest_snapshot_id(TABLE) == max(history)

    latest = history[max(history)]
    assert_same_table(pypaimon.read(TABLE), pypaimon_view(latest), "pypaimon, latest")
    for snapshot_id, rows in history.items():
        actual = pypaimon.read(TABLE, snapshot_id=snapshot_id)
        assert_same_table(actual, pypaimon_view(rows), f"pypaimon, time travel to snapshot {snapshot_id}")

    column, value = filter_value(layout)
    actual = pypaimon.read(TABLE, partition_equals={column: value})
    assert_same_table(
        actual, pypaimon_view(rows_where(latest, column, value)), f"pypaimon, {column} = {value!r}"
    )
    projected = ["id", "c_map", "c_dec38", *LAYOUTS[layout]]
    actual = pypaimon.read(TABLE, columns=projected)
    assert_same_table(actual, pypaimon_view(latest).select(projected), "pypaimon, projection")


# --- 2. pypaimon → ours -------------------------------------------------------------------------------


@pytest.mark.parametrize("buckets", BUCKETS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_we_read_what_pypaimon_writes(ours: Any, pypaimon: Any, layout: str, buckets: str) -> None:
    nulls = buckets == "bucket-unaware"  # PYPAIMON_NULL_PARTITION_BUG
    pypaimon.create_table(TABLE, SCHEMA, LAYOUTS[layout], BUCKETS[buckets])
    for step in scenario(layout, nulls):
        if step.kind == "append":
            pypaimon.append(TABLE, step.rows)
        else:
            pypaimon.overwrite(TABLE, step.rows, step.static)
    history = expected_history(layout, nulls)
    table = ours.get_table(TABLE)
    assert [s.id for s in table.snapshots()] == list(history)

    latest = history[max(history)]
    assert_same_table(table.to_arrow(), ours_view(latest), "ours, latest")
    for snapshot_id, rows in history.items():
        actual = table.to_arrow(snapshot_id=snapshot_id)
        assert_same_table(actual, ours_view(rows), f"ours, snapshot {snapshot_id}")

    column, value = filter_value(layout)
    actual = table.to_arrow(filter=[(column, "=", value)])
    assert_same_table(actual, ours_view(rows_where(latest, column, value)), f"ours, {column} = {value!r}")
    projected = ["id", "c_map", "c_dec38", *LAYOUTS[layout]]
    actual = table.to_arrow(columns=projected)
    assert_same_table(actual, ours_view(latest).select(projected), "ours, projection")
    if LAYOUTS[layout] and nulls:
        key = LAYOUTS[layout][0]
        actual = table.to_arrow(filter=[(key, "is null")], snapshot_id=2)
        expected = history[2].filter(pc.is_null(history[2].column(key)))
        assert expected.num_rows > 0
        assert_same_table(actual, ours_view(expected), f"ours, {key} is null at snapshot 2")


# --- 3. both writing one table ------------------------------------------------------------------------


@pytest.mark.parametrize("buckets", BUCKETS)
@pytest.mark.parametrize("creator", ["ours", "pypaimon"])
def test_alternating_writers_share_a_table(ours: Any, pypaimon: Any, creator: str, buckets: str) -> None:
    keys = LAYOUTS["by-string-int-date"]
    nulls = buckets == "bucket-unaware"  # PYPAIMON_NULL_PARTITION_BUG
    if creator == "ours":
        ours.create_table(TABLE, SCHEMA, partition_keys=list(keys), options=BUCKETS[buckets])
    else:
        pypaimon.create_table(TABLE, SCHEMA, keys, BUCKETS[buckets])

    model = empty_rows()
    history: dict[int, pa.Table] = {}
    writers = ["ours", "pypaimon", "ours", "pypaimon", "ours", "pypaimon"]
    for n, writer in enumerate(writers):
        rows = make_rows(range(n * 20, n * 20 + 20), null_partitions=nulls)
        if n < 4:
            model = pa.concat_tables([model, rows])
            if writer == "ours":
                ours.get_table(TABLE).append(rows)
            else:
                pypaimon.append(TABLE, rows)
        else:
            # Each overwrites partitions holding files of both writers: its DELETE entries must repeat the
            # identity of files the other implementation wrote.
            model = apply_overwrite(model, rows, keys, None)
            if writer == "ours":
                ours.get_table(TABLE).overwrite(rows)
            else:
                pypaimon.overwrite(TABLE, rows)
        history[n + 1] = model

    table = ours.get_table(TABLE)
    assert [s.id for s in table.snapshots()] == list(history)
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"] * 4 + ["OVERWRITE"] * 2
    for snapshot_id, rows in history.items():
        actual = table.to_arrow(snapshot_id=snapshot_id)
        assert_same_table(actual, ours_view(rows), f"ours, snapshot {snapshot_id}")
        actual = pypaimon.read(TABLE, snapshot_id=snapshot_id)
        assert_same_table(actual, pypaimon_view(rows), f"pypaimon, snapshot {snapshot_id}")


@pytest.mark.xfail(raises=TypeError, strict=True, reason=PYPAIMON_NULL_PARTITION_BUG)
def test_pypaimon_null_partition_bug(pypaimon: Any) -> None:
    """Pins the pypaimon bug the fixed-bucket scenarios work around; when it is fixed, this XPASSes."""
    pypaimon.create_table(TABLE, SCHEMA, ["p_str"], {"bucket": "2", "bucket-key": "id"})
    rows = make_rows(range(12))
    assert None in rows.column("p_str").to_pylist()
    pypaimon.append(TABLE, rows)
    pypaimon.append(TABLE, make_rows(range(12, 24)))


# --- 4. bytes: directories, partition rows, buckets ---------------------------------------------------

BUCKET_KEYS = ["id", "c_int", "c_string", "c_date", "c_dec10", "c_bool,c_string,c_bigint"]


@pytest.mark.parametrize("bucket_key", BUCKET_KEYS)
def test_rows_land_where_pypaimon_puts_them(
    ours: Any, pypaimon: Any, warehouse: str, bucket_key: str
) -> None:
    """Same rows, same table definition: both write every row to the same partition directory and bucket."""
    keys = ["p_str", "p_int", "p_date"]
    options = {"bucket": "4", "bucket-key": bucket_key}
    rows = make_rows(range(200))
    ours.create_table("db.ours", SCHEMA, partition_keys=keys, options=options).append(rows)
    pypaimon.create_table("db.theirs", SCHEMA, keys, options)
    pypaimon.append("db.theirs", rows)

    ours_dirs = data_files_by_id(warehouse, "db.ours")
    their_dirs = data_files_by_id(warehouse, "db.theirs")
    assert set(ours_dirs) == set(range(200))
    mismatched = {i: (ours_dirs[i], their_dirs[i]) for i in ours_dirs if ours_dirs[i] != their_dirs[i]}
    assert not mismatched, f"rows in other directories than pypaimon's (ours, pypaimon): {mismatched}"
    assert len(set(ours_dirs.values())) > 8, "the data should spread over many partitions and buckets"

    # The manifests agree too: same partition bytes, bucket and total buckets for every file location.
    def locations(identifier: str) -> set[tuple[bytes, int, int]]:
        return {
            (e["_PARTITION"], e["_BUCKET"], e["_TOTAL_BUCKETS"])
            for e in snapshot_entries(warehouse, identifier, 1)
        }

    assert locations("db.ours") == locations("db.theirs")

    # And pypaimon, reading our table, finds every row in the split of the bucket its manifest names.
    for partition, bucket, split_rows in pypaimon.read_splits("db.ours"):
        for row_id in split_rows.column("id").to_pylist():
            assert ours_dirs[row_id].endswith(f"/bucket-{bucket}"), (row_id, partition, bucket)


def test_unaware_bucket_tables_use_bucket_zero(ours: Any, pypaimon: Any, warehouse: str) -> None:
    ours.create_table(TABLE, SCHEMA, partition_keys=["p_date"], options={"bucket": "-1"}).append(
        make_rows(range(50))
    )
    entries = snapshot_entries(warehouse, TABLE, 1)
    assert {(e["_BUCKET"], e["_TOTAL_BUCKETS"]) for e in entries} == {(0, -1)}
    directories = set(data_files_by_id(warehouse, TABLE).values())
    # Java's legacy partition names: DATE as days since the epoch (2024-01-01 = 19723, 1969-12-31 = -1).
    assert directories == {
        "p_date=19723/bucket-0",
        "p_date=-1/bucket-0",
        "p_date=19782/bucket-0",
        "p_date=__DEFAULT_PARTITION__/bucket-0",
    }
    assert_same_table(pypaimon.read(TABLE), pypaimon_view(make_rows(range(50))), "pypaimon")


# --- system tables -------------------------------------------------------------------------------------------

# Columns pypaimon renders its own way, where we follow Java: partitions ('dt=v'; Java '{v}'), statistics
# (JSON; Java '{col=v}'), file_source (the number; Java 'APPEND'), schema JSON layout.
_RENDERED = {"partition", "null_value_counts", "min_value_stats", "max_value_stats", "min_partition_stats",
             "max_partition_stats", "write_cols", "fields", "options", "writer_version", "min_key", "max_key",
             "file_source"}  # fmt: skip
_KEYS = {"snapshots": "snapshot_id", "schemas": "schema_id", "options": "key", "files": "file_path",
         "manifests": "file_name", "partitions": "record_count", "tags": "tag_name", "consumers": "consumer_id",
         "branches": "branch_name"}  # fmt: skip


def test_system_tables_match_pypaimons(ours: Any, pypaimon: Any) -> None:
    from paimon_core.consumer import Consumer, ConsumerManager
    from paimon_core.maintenance import create_tag
    from paimon_core.table import SYSTEM_TABLES

    schema = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
    table = ours.create_table("db.sys", schema, partition_keys=["dt"], options={"write-only": "true"})
    table.append(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"]}, schema=schema))
    table.append(pa.table({"id": [4], "dt": ["b"]}, schema=schema))
    create_tag(table, "t1", 1, time_retained=dt.timedelta(hours=2))
    ConsumerManager(table.storage, table.path).reset_consumer("c1", Consumer(2))
    # pypaimon 2.1 lacks the newer ones ($buckets, $aggregation_fields, $statistics...): Java 0.9 judges them
    assert set(_KEYS) <= set(SYSTEM_TABLES)
    for name in (n for n in SYSTEM_TABLES if n in _KEYS):
        mine = ours.get_table(f"db.sys${name}").to_arrow()
        system = pypaimon.catalog.get_table(f"db.sys${name}")
        builder = system.new_read_builder()
        theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        shared = [c for c in theirs.schema.names if c not in _RENDERED]
        assert set(shared) <= set(mine.schema.names), (name, set(shared) - set(mine.schema.names))
        key = _KEYS[name]

        def rows(data: pa.Table, shared: list[str] = shared, key: str = key) -> list[dict[str, Any]]:
            out = data.select(shared).to_pylist()
            for row in out:
                if "file_path" in row:  # Java's file_path is the whole path; pypaimon gives the file name
                    row["file_path"] = row["file_path"].rsplit("/", 1)[-1]
                if row.get("creation_time") is not None:  # pypaimon drops the milliseconds
                    row["creation_time"] = row["creation_time"].replace(microsecond=0)
            return sorted(out, key=lambda r: str(r[key]))

        for row_mine, row_theirs in zip(rows(mine), rows(theirs), strict=True):
            assert row_mine == row_theirs, (
                name,
                {k: (v, row_theirs[k]) for k, v in row_mine.items() if v != row_theirs[k]},
            )


# --- 5. our ORC and Avro tables, read by pypaimon -------------------------------------------------------


@pytest.mark.parametrize("fmt", ["orc", "avro"])
@pytest.mark.parametrize("buckets", BUCKETS)
def test_pypaimon_reads_our_orc_and_avro_tables(ours: Any, pypaimon: Any, buckets: str, fmt: str) -> None:
    """Every column type but TIMESTAMP(9) in Avro (Avro holds no nanoseconds, Java refuses it too)."""
    keys = ("p_str", "p_int", "p_date")
    names = [n for n in SCHEMA.names if not (fmt == "avro" and n == "c_ts9")]
    options = {**BUCKETS[buckets], "file.format": fmt}
    schema = pa.schema([SCHEMA.field(n) for n in names])
    table = ours.create_table(TABLE, schema, partition_keys=list(keys), options=options)
    first, second = make_rows(range(0, 40)), make_rows(range(40, 70))
    table.append(first.select(names))
    table.append(second.select(names))
    suffixes = {e.file.file_name.rsplit(".", 1)[-1] for e in table.live_entries()}
    assert suffixes == {fmt}
    expected = pypaimon_view(pa.concat_tables([first, second])).select(names)
    assert_same_table(pypaimon.read(TABLE), expected, f"pypaimon, {fmt}")
    assert_same_table(
        ours.get_table(TABLE).to_arrow(),
        ours_view(pa.concat_tables([first, second])).select(names),
        f"ours, {fmt}",
    )
