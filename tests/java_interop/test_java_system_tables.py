"""System tables against Java Apache Paimon 0.9 (marker ``java_interop``): on tables both wrote, our
``$files`` keys, ``$buckets`` and ``$aggregation_fields`` show what Java's own system tables show
(docs/system-tables.md). Columns holding times are left out: Java hands them over as its own objects; so are
``partition`` and ``file_path``, which Java 0.9 prints as ``[v]`` and a bare file name where newer Java (and
we) print ``{v}`` and the file's path."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog

pytestmark = pytest.mark.java_interop

COLUMNS = (("dt", "STRING NOT NULL"), ("id", "BIGINT NOT NULL"), ("name", "STRING"), ("price", "DOUBLE"))
ARROW_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("price", pa.float64()),
    ]
)
OPTIONS = {
    "bucket": "2",
    "merge-engine": "aggregation",
    "fields.price.aggregate-function": "sum",
    "fields.name.aggregate-function": "last_non_null_value",
    "fields.name.ignore-retract": "true",
    "write-only": "true",
}
FILE_COLUMNS = ("bucket", "file_format", "schema_id", "level", "record_count",
                "file_size_in_bytes", "min_key", "max_key", "min_sequence_number", "max_sequence_number")  # fmt: skip
BUCKET_COLUMNS = ("bucket", "record_count", "file_size_in_bytes", "file_count")


def _ours(catalog: Catalog, system: str, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    rows = catalog.get_table(f"db.t${system}").to_arrow().to_pylist()
    return sorted(tuple(row[c] for c in columns) for row in rows)


def _java(java: Any, system: str, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    return sorted(tuple(row[c] for c in columns) for row in java.system_table("t", system))


@pytest.fixture
def both_wrote(java: Any, warehouse: str) -> Catalog:
    """A partitioned aggregation table: two Java commits, then two of ours (one of them a compaction)."""
    java.create_table("t", COLUMNS, primary_keys=["dt", "id"], partition_keys=["dt"], options=OPTIONS)
    java.write("t", [("2024-01-01", i, f"n{i}", 1.0) for i in range(40)])
    java.write("t", [("2024-01-02", i, None, 2.5) for i in range(0, 60, 3)])
    catalog = Catalog.open(warehouse)
    table = catalog.get_table("db.t")
    ids = list(range(30, 90))
    table.append(
        pa.table(
            {
                "dt": ["2024-01-01"] * len(ids),
                "id": ids,
                "name": [f"m{i}" for i in ids],
                "price": [0.5] * len(ids),
            },
            schema=ARROW_SCHEMA,
        )
    )
    table.copy({"write-only": "false", "num-sorted-run.compaction-trigger": "2"}).append(
        pa.table({"dt": ["2024-01-02"], "id": [7], "name": ["x"], "price": [1.0]}, schema=ARROW_SCHEMA)
    )
    return catalog


def test_files_show_the_keys_java_shows(java: Any, both_wrote: Catalog) -> None:
    ours = _ours(both_wrote, "files", FILE_COLUMNS)
    assert len(ours) >= 4 and all(row[6] is not None and row[6].startswith("[") for row in ours)
    assert ours == _java(java, "files", FILE_COLUMNS)


def test_buckets_sum_java_s_files(java: Any, both_wrote: Catalog) -> None:
    """Java 0.9 does not serve ``$buckets`` (newer Java does): its ``$files`` summed per bucket judge ours."""
    totals: dict[tuple[str, int], list[int]] = {}
    for row in java.system_table("t", "files"):
        total = totals.setdefault((row["partition"].strip("[]"), row["bucket"]), [0, 0, 0])
        total[0] += row["record_count"]
        total[1] += row["file_size_in_bytes"]
        total[2] += 1
    expected = sorted((f"{{{p}}}", b, *t) for (p, b), t in totals.items())
    columns = ("partition", *BUCKET_COLUMNS)
    assert len(expected) == 4  # two partitions of two buckets
    assert _ours(both_wrote, "buckets", columns) == expected


def test_aggregation_fields_are_java_s(java: Any, both_wrote: Catalog) -> None:
    fields = ("field_name", "field_type", "function", "function_options", "comment")
    ours = both_wrote.get_table("db.t$aggregation_fields").to_arrow().to_pylist()
    theirs = java.system_table("t", "aggregation_fields")
    assert [tuple(r[c] for c in fields) for r in ours] == [tuple(r[c] for c in fields) for r in theirs]
    assert sorted(ours[3]["function_options"].strip("[]").split(", ")) == ["fields.price.aggregate-function"]


def test_an_append_table_s_files_have_no_keys(java: Any, warehouse: str) -> None:
    java.create_table("t", COLUMNS, options={"bucket": "-1"})
    java.write("t", [("2024-01-01", i, None, None) for i in range(5)])
    catalog = Catalog.open(warehouse)
    catalog.get_table("db.t").append(
        pa.table({"dt": ["a"], "id": [1], "name": [None], "price": [None]}, schema=ARROW_SCHEMA)
    )
    ours = _ours(catalog, "files", FILE_COLUMNS)
    assert [row[6:8] for row in ours] == [(None, None)] * 2
    assert ours == _java(java, "files", FILE_COLUMNS)


def _java_statistics(java: Any, name: str, columns: dict[str, dict[str, Any]]) -> None:
    """Commit statistics to Java's table as its ``ANALYZE`` does (a statistics file, then an ANALYZE
    snapshot naming it)."""
    table = java.table(name)
    snapshot = table.snapshotManager().latestSnapshot()
    stats = {
        "snapshotId": snapshot.id(),
        "schemaId": snapshot.schemaId(),
        "mergedRecordCount": 61,
        "mergedRecordSize": 4096,
        "colStats": columns,
    }
    statistics = java.paimon.stats.Statistics.fromJson(json.dumps(stats))
    commit = table.store().newCommit("analyze")
    try:
        commit.commitStatistics(statistics, 1)
    finally:
        commit.close()


STATISTICS_COLUMNS = ("snapshot_id", "schema_id", "mergedRecordCount", "mergedRecordSize", "colstat")


def test_statistics_show_what_java_shows(java: Any, both_wrote: Catalog) -> None:
    assert _ours(both_wrote, "statistics", STATISTICS_COLUMNS) == []  # no ANALYZE yet: no rows
    assert _java(java, "statistics", STATISTICS_COLUMNS) == []
    _java_statistics(
        java,
        "t",
        {
            "id": {"colId": 1, "distinctCount": 90, "min": "0", "max": "89", "nullCount": 0},
            "name": {"colId": 2, "distinctCount": 50, "nullCount": 20, "avgLen": 3, "maxLen": 3},
        },
    )
    ours = _ours(both_wrote, "statistics", STATISTICS_COLUMNS)
    assert len(ours) == 1 and ours[0][2:4] == (61, 4096)
    assert ours == _java(java, "statistics", STATISTICS_COLUMNS)
    # a later commit of ours keeps the statistics (same schema), as Java's commits do
    both_wrote.get_table("db.t").append(
        pa.table({"dt": ["2024-01-03"], "id": [1], "name": ["z"], "price": [1.0]}, schema=ARROW_SCHEMA)
    )
    assert (
        _ours(both_wrote, "statistics", STATISTICS_COLUMNS)
        == ours
        == _java(java, "statistics", STATISTICS_COLUMNS)
    )


def test_all_table_options_show_what_java_shows(java: Any, both_wrote: Catalog) -> None:
    both_wrote.create_database("other")
    both_wrote.create_table(
        "other.ours", ARROW_SCHEMA, primary_keys=["id"], options={"bucket": "3", "file.format": "orc"}
    )
    java.create_table("j", COLUMNS, options={"bucket": "-1", "snapshot.num-retained.max": "17"})
    ours = sorted(
        tuple(r.values()) for r in both_wrote.get_table("sys.all_table_options").to_arrow().to_pylist()
    )
    table = java.catalog.getTable(java.paimon.catalog.Identifier.create("sys", "all_table_options"))
    row_type = table.rowType()
    builder = java._call(java.paimon.table.Table, table, "newReadBuilder")
    rows = java._read_splits(row_type, builder.newRead(), builder.newScan().plan().splits())
    assert {r[0] for r in ours} == {"db", "other"} and len(ours) >= 8
    assert ours == sorted(tuple(values) for _, *values in rows)


RO_SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.int64())])
RO_KINDS = {
    "append": ([], {"bucket": "-1"}),
    "primary-key": (["k"], {"bucket": "1"}),
    "deletion-vectors": (["k"], {"bucket": "1", "deletion-vectors.enabled": "true"}),
    "first-row": (["k"], {"bucket": "1", "merge-engine": "first-row"}),
}


@pytest.mark.parametrize("kind", sorted(RO_KINDS))
def test_read_optimized_reads_what_java_reads(java: Any, warehouse: str, kind: str) -> None:
    """``$ro`` of every table kind: after a full compaction and later writes that leave changes below the
    top level (and, with deletion vectors, mark rows of the top level deleted), Java's ``ReadOptimizedTable``
    reads the rows we read."""
    from paimon_core.compact import compact_table

    primary_keys, options = RO_KINDS[kind]
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table("db.ro", RO_SCHEMA, primary_keys=primary_keys, options=options)
    table.append(pa.table({"k": [1, 2, 3, 4], "v": [1, 2, 3, 4]}, schema=RO_SCHEMA))
    compact_table(table)
    table = catalog.get_table("db.ro")
    table.append(pa.table({"k": [1, 5], "v": [10, 50]}, schema=RO_SCHEMA))
    if primary_keys and kind != "first-row":
        table.delete(pa.table({"k": [2]}))
    ours = sorted(tuple(r.values()) for r in catalog.get_table("db.ro$ro").to_arrow().to_pylist())
    java_rows = sorted(tuple(r.values()) for r in java.system_table("ro", "ro"))
    assert ours == java_rows
    merged = sorted(tuple(r.values()) for r in catalog.get_table("db.ro").to_arrow().to_pylist())
    assert (ours == merged) == (kind != "primary-key")  # there the top level lags behind
