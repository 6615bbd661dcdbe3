"""Branches from Spark: ``CALL sys.create_branch / delete_branch / fast_forward`` with Paimon's argument names,
SQL and the data source on ``t$branch_b``, and the procedure UDTFs; every result judged by paimon-core's own
reads of the branch and of main."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.errors import BranchNotFoundError
from paimon_core.maintenance import create_branch, list_branches
from paimon_spark._sql import state_of

CATALOG_CONF = "spark.sql.catalog.paimon.warehouse"


@contextlib.contextmanager
def _session(spark: Any, warehouse: str) -> Iterator[Callable[[str], Any]]:
    for view in spark.catalog.listTables():
        if view.isTemporary:
            spark.catalog.dropTempView(view.name)
    spark.conf.set(CATALOG_CONF, warehouse)
    state = state_of(spark)
    try:
        paimon_spark.sql(spark, "USE paimon.default")
        yield lambda text: paimon_spark.sql(spark, text)
    finally:
        state.catalog, state.database = None, "default"
        spark.conf.unset(CATALOG_CONF)


@pytest.fixture
def sql(spark: Any, warehouse: str) -> Iterator[Callable[[str], Any]]:
    with _session(spark, warehouse) as run:
        for statement in (
            "CREATE TABLE T (id INT, v STRING)",
            "INSERT INTO T VALUES (1, 'a')",
            "INSERT INTO T VALUES (2, 'b')",
            "CALL sys.create_tag(table => 'default.T', tag => 'two')",
            "INSERT INTO T VALUES (3, 'c')",
        ):
            run(statement)
        yield run


def _core(warehouse: str, name: str = "default.T") -> list[tuple[Any, ...]]:
    data = Catalog.open(warehouse).get_table(name).to_arrow()
    return sorted(zip(data["id"].to_pylist(), data["v"].to_pylist(), strict=True))


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.collect())


CALLS = [
    # (statements, the branches after them, the rows of branch b1 as core reads it, or None)
    (
        ("CALL sys.create_branch(table => 'default.T', branch => 'b1', tag => 'two')",),
        ["b1"],
        [(1, "a"), (2, "b")],
    ),
    (("CALL sys.create_branch('default.T', 'b1', 'two')",), ["b1"], [(1, "a"), (2, "b")]),
    (("CALL sys.create_branch(table => 'default.T', branch => 'b1')",), ["b1"], []),
    (
        (
            "CALL sys.create_branch(table => 'default.T', branch => 'b1')",
            "CALL sys.create_branch(table => 'default.T', branch => 'b1', ignoreIfExists => 'true')",
        ),
        ["b1"],
        [],
    ),
    (
        (
            "CALL sys.create_branch(table => 'default.T', branch => 'b1')",
            "CALL sys.create_branch(table => 'default.T', branch => 'b2')",
            "CALL sys.delete_branch(table => 'default.T', branch => 'b1,b2')",
        ),
        [],
        None,
    ),
]


@pytest.mark.parametrize(("statements", "branches", "rows"), CALLS)
def test_branch_procedures(
    sql: Callable[[str], Any],
    warehouse: str,
    statements: tuple[str, ...],
    branches: list[str],
    rows: list[tuple[Any, ...]] | None,
) -> None:
    for statement in statements:
        assert _rows(sql(statement)) == [(True,)]
    catalog = Catalog.open(warehouse)
    assert list_branches(catalog.get_table("default.T")) == branches
    if rows is not None:
        assert _core(warehouse, "default.T$branch_b1") == rows
    else:
        with pytest.raises(BranchNotFoundError):
            catalog.get_table("default.T$branch_b1")
    assert _core(warehouse) == [(1, "a"), (2, "b"), (3, "c")]  # main never moves


def test_sql_on_a_branch_stays_on_it_and_fast_forward_brings_it_to_main(
    sql: Callable[[str], Any], warehouse: str
) -> None:
    sql("CALL sys.create_branch(table => 'default.T', branch => 'b1', tag => 'two')")
    sql("INSERT INTO `T$branch_b1` VALUES (10, 'x')")
    sql("INSERT INTO T VALUES (4, 'd')")
    assert _rows(sql("SELECT * FROM `T$branch_b1`")) == [(1, "a"), (2, "b"), (10, "x")]
    assert _core(warehouse, "default.T$branch_b1") == [(1, "a"), (2, "b"), (10, "x")]
    assert _core(warehouse) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert _rows(sql("SELECT branch_name FROM `T$branches`")) == [("b1",)]
    assert _rows(sql("SELECT snapshot_id FROM `T$branch_b1$snapshots`")) == [(2,), (3,)]

    assert _rows(sql("CALL sys.fast_forward(table => 'default.T', branch => 'b1')")) == [(True,)]
    assert _core(warehouse) == [(1, "a"), (2, "b"), (10, "x")]
    assert _rows(sql("SELECT * FROM T")) == [(1, "a"), (2, "b"), (10, "x")]


def test_the_data_source_reads_and_writes_a_branch(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    table.append(pa.table({"id": [1], "v": ["a"]}))
    paimon_spark.register_procedures(spark, warehouse=warehouse)
    (row,) = spark.sql("SELECT * FROM paimon_create_branch(table => 'db.t', branch => 'b1')").collect()
    assert row["result"] is True
    frame = spark.createDataFrame([(7, "z")], "id long, v string")
    frame.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t$branch_b1")
    by_option = spark.read.format("paimon").option("warehouse", warehouse).option("branch", "b1").load("db.t")
    assert _rows(by_option) == [(7, "z")]
    by_name = spark.read.format("paimon").option("warehouse", warehouse).load("db.t$branch_b1")
    assert _rows(by_name) == [(7, "z")]
    assert _rows(spark.read.format("paimon").option("warehouse", warehouse).load("db.t")) == [(1, "a")]
    (row,) = spark.sql("SELECT * FROM paimon_fast_forward(table => 'db.t', branch => 'b1')").collect()
    assert _rows(spark.read.format("paimon").option("warehouse", warehouse).load("db.t")) == [(7, "z")]
    (row,) = spark.sql("SELECT * FROM paimon_delete_branch(table => 'db.t', branch => 'b1')").collect()
    assert list_branches(catalog.get_table("db.t")) == []


def test_the_data_source_reads_a_fallback_branch_for_missing_partitions(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    table = catalog.create_table("db.p", schema, partition_keys=["dt"])
    table.append(pa.table({"dt": ["d2"], "id": [2]}, schema=schema))
    create_branch(table, "fb")
    catalog.get_table("db.p$branch_fb").append(pa.table({"dt": ["d1", "d2"], "id": [1, 20]}, schema=schema))
    reader = spark.read.format("paimon").option("warehouse", warehouse)
    assert _rows(reader.load("db.p")) == [("d2", 2)]
    with_fallback = reader.option("scan.fallback-branch", "fb").load("db.p")
    expected = sorted(
        tuple(r.values())
        for r in catalog.get_table("db.p", **{"scan.fallback-branch": "fb"}).to_arrow().to_pylist()
    )
    assert _rows(with_fallback) == expected == [("d1", 1), ("d2", 2)]


def test_a_stream_of_a_branch_reads_the_branch_commits_only(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table("db.s", schema)
    table.append(pa.table({"id": [1]}, schema=schema))
    create_branch(table, "b1")
    branch = catalog.get_table("db.s$branch_b1")
    branch.append(pa.table({"id": [10]}, schema=schema))
    branch.append(pa.table({"id": [11]}, schema=schema))
    table.append(pa.table({"id": [2]}, schema=schema))
    frame = spark.readStream.format("paimon").option("warehouse", warehouse).load("db.s$branch_b1")
    query = frame.writeStream.format("memory").queryName("branch_stream").trigger(availableNow=True).start()
    query.awaitTermination(300)
    got = sorted(r.id for r in spark.sql("SELECT id FROM branch_stream").collect())
    expected = sorted(pa.Table.from_batches(list(branch.stream(follow=False))).column("id").to_pylist())
    assert got == expected == [10, 11]
