"""Primary-key tables through Spark (local[2]), batch: upserts, overwrites and row kinds through the
``paimon`` data source and ``paimon_spark.write``, batch changelog reads, and bad input refused with
nothing written."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.errors import ConfigError, SchemaError
from paimon_core.manifest import FileKind
from paimon_core.snapshot import CommitKind
from paimon_core.table import Table, live_entries, manifest_metas, read_entries
from paimon_spark import SourceConfig

pytestmark = pytest.mark.slow

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("p", pa.string(), nullable=False),
        pa.field("v", pa.string()),
    ]
)
DDL = "k long, p string, v string"


def create(warehouse: str, name: str = "db.t", *, partitioned: bool = False, **options: str) -> Table:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    keys = ["p"] if partitioned else []
    return catalog.create_table(name, SCHEMA, partition_keys=keys, primary_keys=["k", *keys], options=options)


def table(warehouse: str, name: str = "db.t") -> Table:
    return Catalog.open(warehouse).get_table(name)


def content(warehouse: str, name: str = "db.t") -> dict[tuple[int, str], str | None]:
    return {(r["k"], r["p"]): r["v"] for r in table(warehouse, name).to_arrow().to_pylist()}


def frame(spark: Any, rows: list[tuple[Any, ...]], ddl: str = DDL, slices: int = 3) -> Any:
    """A DataFrame whose rows are spread over ``slices`` partitions in order (several tasks per bucket)."""
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, slices), ddl)


def raw_write(
    warehouse: str, name: str = "db.t", mode: str = "append", **options: str
) -> Callable[[Any], None]:
    def run(df: Any) -> None:
        df.write.format("paimon").option("warehouse", warehouse).options(**options).mode(mode).save(name)

    return run


def helper_write(
    warehouse: str, name: str = "db.t", mode: str = "append", **options: str
) -> Callable[[Any], None]:
    def run(df: Any) -> None:
        paimon_spark.write(df, name, warehouse=warehouse, mode=mode, options=options)

    return run


WRITERS = {"format": raw_write, "helper": helper_write}


def data_files(warehouse: str, name: str = "db.t") -> list[Path]:
    return sorted(Path(table(warehouse, name).path).rglob("*.parquet"))


# --- upserts, overwrites, row kinds --------------------------------------------------------------------------


@pytest.mark.parametrize("bucket", ["2", "-1"])
@pytest.mark.parametrize("path", sorted(WRITERS))
def test_upsert_overwrite_and_partition_overwrite(spark: Any, warehouse: str, bucket: str, path: str) -> None:
    create(warehouse, partitioned=True, bucket=bucket)
    first = [(k, "a" if k % 2 else "b", f"v{k}") for k in range(40)]
    WRITERS[path](warehouse)(frame(spark, first))
    expected = {(k, p): v for k, p, v in first}
    assert content(warehouse) == expected
    # upserts: half the keys change, new keys arrive
    second = [(k, "a" if k % 2 else "b", f"w{k}") for k in range(20, 60)]
    WRITERS[path](warehouse)(frame(spark, second))
    expected.update({(k, p): v for k, p, v in second})
    assert content(warehouse) == expected
    # a dynamic partition overwrite replaces partition 'a' only
    third = [(k, "a", f"x{k}") for k in (1, 3, 1001)]
    WRITERS[path](warehouse, mode="overwrite", partitionOverwriteMode="dynamic")(frame(spark, third))
    expected = {key: v for key, v in expected.items() if key[1] != "a"} | {(k, p): v for k, p, v in third}
    assert content(warehouse) == expected
    # a static overwrite replaces the whole table
    fourth = [(k, "c", f"y{k}") for k in range(5)]
    WRITERS[path](warehouse, mode="overwrite")(frame(spark, fourth))
    assert content(warehouse) == {(k, p): v for k, p, v in fourth}
    # a key written again after the overwrite updates it (sequence numbers restarted with the new data)
    WRITERS[path](warehouse)(frame(spark, [(2, "c", "z")]))
    assert content(warehouse)[(2, "c")] == "z"
    kinds = [s.commit_kind for s in table(warehouse).snapshots()]
    assert kinds.count(CommitKind.OVERWRITE) == 2


@pytest.mark.parametrize("path", sorted(WRITERS))
def test_rowkind_column_deletes_and_updates(spark: Any, warehouse: str, path: str) -> None:
    create(warehouse, bucket="2")
    WRITERS[path](warehouse)(frame(spark, [(k, "p", f"v{k}") for k in range(10)]))
    changes = [
        (1, "p", "v1", "-D"),
        (2, "p", "v2", "-U"),
        (2, "p", "new2", "+U"),
        (3, "p", None, "-d"),  # kinds are case-insensitive
        (10, "p", "v10", "+I"),
    ]
    WRITERS[path](warehouse)(frame(spark, changes, f"{DDL}, rowkind string", slices=1))
    expected = {(k, "p"): f"v{k}" for k in range(11) if k not in (1, 3)} | {(2, "p"): "new2"}
    assert content(warehouse) == expected
    assert "rowkind" not in table(warehouse).field_names  # the column carried kinds, it was not stored


def test_several_tasks_per_bucket_count_every_row_once(spark: Any, warehouse: str) -> None:
    """Four tasks write the one bucket of aggregation tables; compacting it in each task would carry the old
    sums into several compaction outputs, counted again on every read."""
    sums = {"fields.v.aggregate-function": "sum", "merge-engine": "aggregation"}
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    for name, bucket in (("db.fixed", "1"), ("db.dynamic", "-1")):
        options = {**sums, "bucket": bucket, "num-sorted-run.compaction-trigger": "2"}
        catalog.create_table(name, schema, primary_keys=["k"], options=options)
    written: Counter[int] = Counter()
    for _ in range(4):
        rows = [(i % 10, 1) for i in range(40)]
        written.update(k for k, _ in rows)
        for name in ("db.fixed", "db.dynamic"):
            frame(spark, rows, "k long, v long", slices=4).write.format("paimon").option(
                "warehouse", warehouse
            ).mode("append").save(name)
    for name in ("db.fixed", "db.dynamic"):
        got = {r["k"]: r["v"] for r in table(warehouse, name).to_arrow().to_pylist()}
        assert got == dict(written), name
    # the dynamic table's index holds each key once, in one file
    index = table(warehouse, "db.dynamic").index_entries()
    assert [e.file.row_count for e in index] == [10]


def _sequence_ranges_per_bucket(t: Table) -> list[dict[tuple[bytes, int], list[tuple[int, int]]]]:
    """For every APPEND snapshot: each bucket's new files' sequence number ranges."""
    result = []
    for snapshot in t.snapshots():
        if snapshot.commit_kind != CommitKind.APPEND:
            continue
        ranges: dict[tuple[bytes, int], list[tuple[int, int]]] = {}
        for entry in read_entries(t, manifest_metas(t, snapshot, delta_only=True)):
            if entry.kind == FileKind.ADD:
                ranges.setdefault((entry.partition, entry.bucket), []).append(
                    (entry.file.min_sequence_number, entry.file.max_sequence_number)
                )
        result.append(ranges)
    return result


def _one_writer(ranges: list[tuple[int, int]]) -> bool:
    """One writer numbers a bucket's records consecutively: its files' ranges never overlap."""
    ordered = sorted(ranges)
    return all(a[1] < b[0] for a, b in itertools.pairwise(ordered))


@pytest.mark.parametrize("bucket", ["4", "-1"])
def test_the_helper_gives_each_bucket_one_writer(spark: Any, warehouse: str, bucket: str) -> None:
    create(warehouse, "db.helper", partitioned=True, bucket=bucket)
    create(warehouse, "db.raw", partitioned=True, bucket=bucket)
    rows = [(k, "a" if k % 3 else "b", f"v{k}") for k in range(400)]
    for _ in range(2):
        helper_write(warehouse, "db.helper")(frame(spark, rows, slices=4))
        raw_write(warehouse, "db.raw")(frame(spark, rows, slices=4))
    helper = _sequence_ranges_per_bucket(table(warehouse, "db.helper"))
    assert len(helper) == 2 and all(_one_writer(r) for commit in helper for r in commit.values())
    # the data source's tasks write what Spark hands them: several writers per bucket
    raw = _sequence_ranges_per_bucket(table(warehouse, "db.raw"))
    assert not all(_one_writer(r) for commit in raw for r in commit.values())
    assert content(warehouse, "db.helper") == content(warehouse, "db.raw") == {(k, p): v for k, p, v in rows}


# --- changelog reads in batch --------------------------------------------------------------------------------


def test_audit_log_and_read_changelog_in_batch(spark: Any, warehouse: str) -> None:
    create(
        warehouse, partitioned=False, bucket="1", **{"write-only": "true"}
    )  # no compaction: the -D record stays
    raw_write(warehouse)(frame(spark, [(1, "p", "x"), (2, "p", "y"), (3, "p", "z")]))
    changes = [(1, "p", "x2", "+U"), (2, "p", "y", "-D")]
    raw_write(warehouse)(frame(spark, changes, f"{DDL}, rowkind string", slices=1))

    def reader(**options: str) -> Any:  # a DataFrameReader keeps its options: one per read
        return spark.read.format("paimon").option("warehouse", warehouse).options(**options)

    audit = reader().load("db.t$audit_log")
    assert audit.columns == ["rowkind", "k", "p", "v"]
    got = sorted(tuple(r) for r in audit.collect())
    assert got == [("+I", 3, "p", "z"), ("+U", 1, "p", "x2"), ("-D", 2, "p", "y")]
    assert sorted(tuple(r) for r in reader(**{"read.changelog": "true"}).load("db.t").collect()) == got
    # $binlog in batch: the audit log's rows with each value a one-element array
    binlog = reader().load("db.t$binlog")
    assert binlog.columns == ["rowkind", "k", "p", "v"]
    assert (
        sorted((r[0], *(c[0] for c in r[1:])) for r in binlog.collect() if all(len(c) == 1 for c in r[1:]))
        == got
    )
    assert binlog.count() == len(got)
    # time travel: the audit log of snapshot 1
    first = reader(**{"scan.snapshot-id": "1"}).load("db.t$audit_log").collect()
    assert sorted(tuple(r) for r in first) == [("+I", 1, "p", "x"), ("+I", 2, "p", "y"), ("+I", 3, "p", "z")]
    # the plain read merges: the deleted key is gone
    assert sorted(r.k for r in reader().load("db.t").collect()) == [1, 3]


# --- bad input -----------------------------------------------------------------------------------------------


def _nothing_written(warehouse: str, name: str = "db.t") -> None:
    t = table(warehouse, name)
    assert t.latest_snapshot() is None
    assert data_files(warehouse, name) == []
    index = Path(t.path, "index")
    assert not index.exists() or not list(index.iterdir())


@pytest.mark.parametrize("path", sorted(WRITERS))
def test_data_without_the_primary_key_is_refused_before_writing(
    spark: Any, warehouse: str, path: str
) -> None:
    create(warehouse, bucket="2")
    df = frame(spark, [("p", "v")], "p string, v string")
    with pytest.raises(Exception, match=r"lacks its primary-key columns \['k'\]"):
        WRITERS[path](warehouse)(df)
    _nothing_written(warehouse)


@pytest.mark.parametrize("path", sorted(WRITERS))
@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_an_unknown_row_kind_is_refused_and_nothing_stays(
    spark: Any, warehouse: str, path: str, bucket: str
) -> None:
    create(warehouse, bucket=bucket)
    rows = [(k, "p", "v", "+I") for k in range(50)] + [(99, "p", "v", "+X")]
    with pytest.raises(Exception, match=r"row kind '\+X' in column 'rowkind' is not one of"):
        WRITERS[path](warehouse)(frame(spark, rows, f"{DDL}, rowkind string"))
    _nothing_written(warehouse)


def test_a_rowkind_column_into_an_append_table_is_refused(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    catalog.create_table("db.log", SCHEMA)
    df = frame(spark, [(1, "p", "v", "-D")], f"{DDL}, rowkind string")
    for write in (raw_write(warehouse, "db.log"), helper_write(warehouse, "db.log")):
        with pytest.raises(Exception, match="only a primary-key table takes"):
            write(df)
    _nothing_written(warehouse, "db.log")


def test_a_key_split_over_buckets_by_two_tasks_is_refused(spark: Any, warehouse: str) -> None:
    """Dynamic buckets of one key each: two tasks meet keys 1 and 2 in opposite orders, so each puts its
    first key in bucket 0. The data source's driver refuses; the helper's one writer per partition does not
    meet the problem."""
    create(warehouse, partitioned=False, bucket="-1", **{"dynamic-bucket.target-row-num": "1"})
    rows = [(1, "p", "a"), (2, "p", "a"), (2, "p", "b"), (1, "p", "b")]
    with pytest.raises(Exception, match="two Spark tasks put new keys with the same hash"):
        raw_write(warehouse)(frame(spark, rows, slices=2))
    _nothing_written(warehouse)
    helper_write(warehouse)(frame(spark, rows, slices=2))
    assert sorted(content(warehouse)) == [(1, "p"), (2, "p")]
    buckets = {e.bucket for e in live_entries(table(warehouse), table(warehouse).latest_snapshot())}
    assert buckets == {0, 1}


def test_helper_arguments_are_checked(spark: Any, warehouse: str) -> None:
    create(warehouse)
    df = frame(spark, [(1, "p", "v")])
    with pytest.raises(ConfigError, match="mode must be one of"):
        paimon_spark.write(df, "db.t", warehouse=warehouse, mode="merge")
    with pytest.raises(SchemaError, match="primary-key columns"):
        paimon_spark.write(df.drop("k"), "db.t", warehouse=warehouse)
    _nothing_written(warehouse)


def test_a_write_creates_a_primary_key_table(spark: Any, warehouse: str) -> None:
    df = frame(spark, [(1, "p", "a"), (1, "p", "b")], slices=1)
    raw_write(warehouse, "db.created", **{"primary-key": "k", "bucket": "2"})(df)
    created = table(warehouse, "db.created")
    assert list(created.schema.primary_keys) == ["k"] and created.bucket == 2
    assert content(warehouse, "db.created") == {(1, "p"): "b"}


def test_own_options_parse() -> None:
    config = SourceConfig.parse(
        {"path": "db.t", "warehouse": "/wh", "primary-key": "a, b", "read.changelog": "true"}
    )
    assert config.primary_keys == ("a", "b") and config.read_changelog
    assert not SourceConfig.parse({"path": "db.t", "warehouse": "/wh"}).read_changelog
