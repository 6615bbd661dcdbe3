"""Java Apache Paimon 0.9 reads what paimon-spark's sinks commit, their own compaction included (marker
``java_interop``).

The sinks commit through the table's pipeline: a ``bucket = -1`` append table runs its compaction
coordinator after each append (COMPACT snapshots of the small files), and a primary-key table's task files
are consolidated into one commit with each written bucket compacted. Java's batch read of the result must
be the rows written, as ours is; Java then appends, and both read that too.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.snapshot import CommitKind

pytestmark = pytest.mark.java_interop

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string()), pa.field("v", pa.int64())]
)
JAVA_COLUMNS = [("id", "BIGINT NOT NULL"), ("p", "STRING"), ("v", "BIGINT")]


def _frame(spark: Any, start: int, count: int, version: int) -> Any:
    ids = list(range(start, start + count))
    rows = pa.table(
        {"id": ids, "p": [f"p{i % 2}" for i in ids], "v": [i * 10 + version for i in ids]}, schema=SCHEMA
    )
    return spark.createDataFrame(rows.to_pandas()).repartition(4)


def _ours(catalog: Catalog, name: str) -> list[tuple[Any, ...]]:
    rows = catalog.get_table(name).to_arrow().to_pylist()
    return sorted(tuple(row.values()) for row in rows)


@pytest.fixture()
def paimon_spark(spark: Any) -> Any:
    import paimon_spark

    paimon_spark.register(spark)
    return spark


def test_java_reads_an_unaware_bucket_table_that_spark_appends_compacted(
    ours: Catalog, java: Any, paimon_spark: Any, warehouse: str
) -> None:
    ours.create_table("db.events", SCHEMA, partition_keys=["p"], options={"compaction.min.file-num": "2"})
    for start in range(0, 400, 100):
        _frame(paimon_spark, start, 100, 0).write.format("paimon").option("warehouse", warehouse).mode(
            "append"
        ).save("db.events")
    kinds = [s.commit_kind for s in ours.get_table("db.events").snapshots()]
    assert CommitKind.COMPACT in kinds
    expected = [(i, f"p{i % 2}", i * 10) for i in range(400)]
    assert _ours(ours, "db.events") == expected
    assert java.read("events") == expected
    java.write("events", [(1000, "p0", 7), (1001, "p1", 8)])
    assert java.read("events") == _ours(ours, "db.events") == [*expected, (1000, "p0", 7), (1001, "p1", 8)]


@pytest.mark.parametrize("bucket", ["2", "-1"], ids=["fixed-bucket", "dynamic-bucket"])
def test_java_reads_a_primary_key_table_that_spark_upserts(
    ours: Catalog, java: Any, paimon_spark: Any, warehouse: str, bucket: str
) -> None:
    ours.create_table(
        "db.kv", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"], options={"bucket": bucket}
    )
    for version, (start, count) in enumerate([(0, 300), (100, 300), (250, 100)]):
        _frame(paimon_spark, start, count, version).write.format("paimon").option(
            "warehouse", warehouse
        ).mode("append").save("db.kv")
    newest = {}
    for version, (start, count) in enumerate([(0, 300), (100, 300), (250, 100)]):
        for i in range(start, start + count):
            newest[i] = i * 10 + version
    expected = sorted((i, f"p{i % 2}", v) for i, v in newest.items())
    assert _ours(ours, "db.kv") == expected
    assert java.read("kv") == expected
    java.write("kv", [(5, "p1", -5), (2000, "p0", 1)])
    after = sorted([*(r for r in expected if r[0] != 5), (5, "p1", -5), (2000, "p0", 1)])
    assert java.read("kv") == _ours(ours, "db.kv") == after
