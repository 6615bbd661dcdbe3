"""Tables written through Spark read identically with pypaimon, and pypaimon-written tables read in Spark.

Marked ``interop``: the ``spark_interop`` nox session runs them in a venv holding pyspark, pypaimon 2.1.0 and
the pyarrow it pins. pypaimon is imported inside the tests, so collecting this module without it works.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

pytestmark = [pytest.mark.interop, pytest.mark.slow]

DATABASE = "db"

# Several Paimon types both sides map the same way; ``p`` is the partition key, ``id`` the bucket key.
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("p", pa.string()),
        pa.field("i", pa.int32()),
        pa.field("f", pa.float64()),
        pa.field("b", pa.bool_()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("dec", pa.decimal128(10, 2)),
        pa.field("bin", pa.binary()),
    ]
)


def make_rows(start: int, count: int) -> list[dict[str, Any]]:
    base = dt.datetime(2024, 3, 1, 12, 0, 0)
    return [
        {
            "id": n,
            "p": f"p{n % 3}",
            "i": None if n % 7 == 0 else n * 3,
            "f": n / 4,
            "b": n % 2 == 0,
            "s": None if n % 5 == 0 else f"s-{n}-é",
            "d": dt.date(2024, 1, 1) + dt.timedelta(days=n % 40),
            "ts": base + dt.timedelta(seconds=n, microseconds=n % 1000),
            "dec": decimal.Decimal(n).scaleb(-2) + decimal.Decimal("1.25"),
            "bin": bytes([n % 256, 7]),
        }
        for n in range(start, start + count)
    ]


def arrow(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def by_id(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.select(SCHEMA.names).to_pylist(), key=lambda r: r["id"])


def pypaimon_catalog(warehouse: str) -> Any:
    from pypaimon import CatalogFactory

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database(DATABASE, True)
    return catalog


def pypaimon_read(catalog: Any, identifier: str, options: dict[str, str] | None = None) -> pa.Table:
    table = catalog.get_table(identifier)
    if options:
        table = table.copy(options)
    builder = table.new_read_builder()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert result is not None
    return result


def pypaimon_write(catalog: Any, identifier: str, data: pa.Table) -> None:
    builder = catalog.get_table(identifier).new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def spark_schema(spark: Any, data: pa.Table) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(data.schema)


def spark_read(spark: Any, warehouse: str, identifier: str, **options: str) -> pa.Table:
    df = spark.read.format("paimon").option("warehouse", warehouse).options(**options).load(identifier)
    return df.toArrow()


@pytest.mark.parametrize(
    "options",
    [{"bucket": "3", "bucket-key": "id"}, {"bucket": "-1"}],
    ids=["fixed-buckets", "unaware"],
)
def test_pypaimon_reads_what_spark_writes(spark: Any, warehouse: str, options: dict[str, str]) -> None:
    first, second = make_rows(0, 300), make_rows(300, 200)
    write = spark.createDataFrame(arrow(first).to_pandas(), schema=spark_schema(spark, arrow(first)))
    write.write.format("paimon").option("warehouse", warehouse).option("partition-keys", "p").options(
        **options
    ).mode("append").save("db.t")
    again = spark.createDataFrame(arrow(second).to_pandas(), schema=spark_schema(spark, arrow(second)))
    again.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t")

    catalog = pypaimon_catalog(warehouse)
    theirs = pypaimon_read(catalog, "db.t")
    assert by_id(theirs) == first + second
    assert by_id(theirs) == by_id(spark_read(spark, warehouse, "db.t"))
    # Time travel to the first commit agrees too.
    assert by_id(pypaimon_read(catalog, "db.t", {"scan.snapshot-id": "1"})) == first

    # A dynamic partition overwrite through Spark replaces only p0; pypaimon sees the same result.
    replacement = [dict(r, s="new") for r in make_rows(1000, 30) if r["p"] == "p0"]
    frame = spark.createDataFrame(arrow(replacement).to_pandas(), schema=spark_schema(spark, arrow(first)))
    frame.write.format("paimon").option("warehouse", warehouse).option(
        "partitionOverwriteMode", "dynamic"
    ).mode("overwrite").save("db.t")
    expected = sorted([r for r in first + second if r["p"] != "p0"] + replacement, key=lambda r: r["id"])
    assert by_id(pypaimon_read(catalog, "db.t")) == expected

    # merge_into rewrites the files holding changed rows (an OVERWRITE snapshot); pypaimon agrees.
    merged = merge_some(spark, warehouse, expected)
    assert by_id(pypaimon_read(catalog, "db.t")) == merged


def merge_some(spark: Any, warehouse: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge: ids divisible by 10 get s='merged', by 15 are deleted, 5000-5009 are inserted; the new rows."""
    import paimon_spark

    changes = [dict(r, s="merged") for r in rows if r["id"] % 10 == 0] + make_rows(5000, 10)
    frame = spark.createDataFrame(arrow(changes).to_pandas(), schema=spark_schema(spark, arrow(changes)))
    paimon_spark.merge_into(
        spark,
        warehouse=warehouse,
        target_table="db.t",
        source_table=frame,
        merge_condition="t.id = S.id",
        matched_upsert_condition="t.id % 15 <> 0",
        matched_upsert_setting="s = S.s",
        matched_delete_condition="TRUE",
        not_matched_insert_values="*",
    )
    merged = [dict(r, s="merged") if r["id"] % 10 == 0 else r for r in rows if r["id"] % 30 != 0]
    return sorted(merged + make_rows(5000, 10), key=lambda r: r["id"])


def test_spark_reads_what_pypaimon_writes(spark: Any, warehouse: str) -> None:
    from pypaimon import Schema

    catalog = pypaimon_catalog(warehouse)
    catalog.create_table(
        "db.t",
        Schema.from_pyarrow_schema(SCHEMA, partition_keys=["p"], options={"bucket": "2", "bucket-key": "id"}),
        False,
    )
    first, second = make_rows(0, 250), make_rows(250, 250)
    pypaimon_write(catalog, "db.t", arrow(first))
    pypaimon_write(catalog, "db.t", arrow(second))

    ours = spark_read(spark, warehouse, "db.t")
    assert by_id(ours) == first + second
    assert by_id(ours) == by_id(pypaimon_read(catalog, "db.t"))
    assert by_id(spark_read(spark, warehouse, "db.t", **{"scan.snapshot-id": "1"})) == first

    # By table path, with a partition filter and a projection.
    path = f"{warehouse}/db.db/t"
    df = spark.read.format("paimon").load(path).where("p = 'p1'").select("id", "dec", "ts")
    got = sorted((r.id, r.dec, r.ts) for r in df.collect())
    assert got == [(r["id"], r["dec"], r["ts"]) for r in first + second if r["p"] == "p1"]

    # Spark appends to the pypaimon table; pypaimon reads all three commits.
    third = make_rows(500, 100)
    frame = spark.createDataFrame(arrow(third).to_pandas(), schema=spark_schema(spark, arrow(third)))
    frame.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t")
    assert by_id(pypaimon_read(catalog, "db.t")) == first + second + third

    # A merge into the pypaimon table: pypaimon reads the result.
    merged = merge_some(spark, warehouse, first + second + third)
    assert by_id(pypaimon_read(catalog, "db.t")) == merged == by_id(spark_read(spark, warehouse, "db.t"))
