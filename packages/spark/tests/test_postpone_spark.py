"""Postpone-bucket tables (``bucket = -2``) through Spark (local[2]): the batch and streaming sinks write
postponed rows (invisible until compacted), and the compaction procedure moves them into real buckets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.snapshot import CommitKind
from paimon_core.table import POSTPONE_BUCKET, Table
from paimon_spark._sql import state_of

from .conftest import stream_once

pytestmark = pytest.mark.slow

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("p", pa.string(), nullable=False),
        pa.field("v", pa.string()),
    ]
)
DDL = "k long, p string, v string"


def create(warehouse: str, name: str = "db.t", **options: str) -> Table:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    return catalog.create_table(
        name, SCHEMA, partition_keys=["p"], primary_keys=["k", "p"], options={"bucket": "-2", **options}
    )


def table(warehouse: str, name: str = "db.t") -> Table:
    return Catalog.open(warehouse).get_table(name)


def content(warehouse: str, name: str = "db.t") -> dict[tuple[int, str], str | None]:
    rows = table(warehouse, name).to_arrow().to_pylist()
    found = {(r["k"], r["p"]): r["v"] for r in rows}
    assert len(found) == len(rows), "a key read twice"
    return found


def buckets(warehouse: str, name: str = "db.t") -> set[int]:
    return {e.bucket for e in table(warehouse, name).live_entries()}


def frame(spark: Any, rows: list[tuple[Any, ...]], slices: int = 3) -> Any:
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, slices), DDL)


@pytest.mark.parametrize("writer", ["format", "helper"])
def test_batch_sinks_postpone_and_spark_compaction_merges(spark: Any, warehouse: str, writer: str) -> None:
    create(warehouse)
    first = [(k, "a" if k % 2 else "b", f"v{k}") for k in range(30)]
    second = [(k, "a" if k % 2 else "b", f"w{k}") for k in range(0, 30, 3)]
    for rows in (first, second):
        df = frame(spark, rows)
        if writer == "format":
            df.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t")
        else:
            paimon_spark.write(df, "db.t", warehouse=warehouse)
    assert buckets(warehouse) == {POSTPONE_BUCKET}
    # the driver compacts no bucket of a postpone table: its files stay as written (level 0, APPEND)
    assert {(e.file.level, e.file.file_source) for e in table(warehouse).live_entries()} == {(0, 0)}
    assert content(warehouse) == {}
    summary = paimon_spark.compact(
        spark, warehouse=warehouse, table="db.t", options="postpone.default-bucket-num=2", progress=False
    )
    assert summary.snapshots
    latest = table(warehouse).latest_snapshot()
    assert latest is not None and latest.commit_kind == CommitKind.COMPACT
    expected = {(k, p): v for k, p, v in first}
    expected.update({(k, p): v for k, p, v in second})
    assert content(warehouse) == expected
    assert buckets(warehouse) == {0, 1}


def test_streaming_sink_postpones_each_micro_batch(spark: Any, warehouse: str, tmp_path: Path) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    source = catalog.create_table("db.src", SCHEMA, partition_keys=["p"])
    create(warehouse, "db.dst")
    source.append(pa.table({"k": [1, 2, 1], "p": ["a", "a", "b"], "v": ["x", "y", "z"]}, schema=SCHEMA))
    checkpoint = str(tmp_path / "checkpoint")
    stream_once(spark, warehouse, checkpoint)
    assert buckets(warehouse, "db.dst") == {POSTPONE_BUCKET} and content(warehouse, "db.dst") == {}
    source.append(pa.table({"k": [2], "p": ["a"], "v": ["Y"]}, schema=SCHEMA))
    stream_once(spark, warehouse, checkpoint)
    paimon_spark.compact(spark, warehouse=warehouse, table="db.dst", progress=False)
    assert content(warehouse, "db.dst") == {(1, "a"): "x", (2, "a"): "Y", (1, "b"): "z"}


@pytest.fixture
def paimon_sql(spark: Any, warehouse: str) -> Iterator[Any]:
    spark.conf.set("spark.sql.catalog.paimon.warehouse", warehouse)
    state = state_of(spark)
    try:
        paimon_spark.sql(spark, "USE paimon.default")
        yield lambda text: paimon_spark.sql(spark, text)
    finally:
        state.catalog, state.database = None, "default"
        spark.conf.unset("spark.sql.catalog.paimon.warehouse")


def test_sql_insert_and_call_sys_compact(paimon_sql: Any, warehouse: str) -> None:
    paimon_sql("CREATE TABLE T (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '-2')")
    paimon_sql("INSERT INTO T VALUES (1, 'a'), (2, 'b')")
    paimon_sql("INSERT INTO T VALUES (1, 'A')")
    assert paimon_sql("SELECT * FROM T").collect() == []
    paimon_sql("CALL sys.compact(table => 'T')")
    rows = paimon_sql("SELECT id, v FROM T ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, "A"), (2, "b")]
    assert buckets(warehouse, "default.T") == {0}
