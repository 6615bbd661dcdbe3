"""Paimon errors raised inside Spark's Python workers reach the caller as Paimon errors, message first."""

from __future__ import annotations

import glob
import os
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.errors import ConfigError, DataFileError, PaimonError, SchemaError, TableNotFoundError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def table_warehouse(warehouse: str) -> str:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA)
    for i in range(3):
        table.append(pa.table({"id": [i], "v": [f"v{i}"]}, schema=SCHEMA))
    return warehouse


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0]


def test_a_missing_table(spark: Any, table_warehouse: str) -> None:
    with pytest.raises(TableNotFoundError) as raised, paimon_spark.paimon_errors():
        spark.read.format("paimon").option("warehouse", table_warehouse).load("db.tt").collect()
    assert _first_line(raised.value) == "table 'db.tt' does not exist; did you mean 'db.t'?"
    assert isinstance(raised.value, paimon_spark.RemotePaimonError)
    assert raised.value.error_type == "paimon_core.errors.TableNotFoundError"
    assert type(raised.value.__cause__).__name__ == "AnalysisException"  # Spark's own, for the details


def test_a_misspelled_option(spark: Any, table_warehouse: str) -> None:
    reader = spark.read.format("paimon").option("warehouse", table_warehouse).option("scan.snapshot-idd", "1")
    with pytest.raises(ConfigError) as raised, paimon_spark.paimon_errors():
        reader.load("db.t").collect()
    assert (
        _first_line(raised.value) == "unknown option 'scan.snapshot-idd' (did you mean 'scan.snapshot-id'?)"
    )


def test_a_write_of_the_wrong_schema(spark: Any, table_warehouse: str) -> None:
    frame = spark.createDataFrame([(1, 2.5)], "id long, x double")
    writer = frame.write.format("paimon").option("warehouse", table_warehouse).mode("append")
    with pytest.raises(SchemaError) as raised, paimon_spark.paimon_errors():
        writer.save("db.t")
    assert _first_line(raised.value) == (
        "cannot write to db.t: data does not fit the table schema; missing columns: v; unknown columns: x"
    )


def test_a_task_failure_in_a_paimon_spark_function(spark: Any, table_warehouse: str) -> None:
    # The data files are read by compaction tasks on executors: the error crosses a Spark job, and
    # paimon_spark.compact translates it without being asked.
    table_dir = os.path.join(table_warehouse, "db.db", "t")
    missing = sorted(glob.glob(os.path.join(table_dir, "bucket-0", "*.parquet")))[0]
    os.remove(missing)
    with pytest.raises(DataFileError) as raised:
        paimon_spark.compact(
            spark, warehouse=table_warehouse, table="db.t", options={"compaction.min.file-num": "2"}
        )
    first = _first_line(raised.value)
    assert first.startswith("data file ") and os.path.basename(missing) in first and "missing" in first
    assert isinstance(raised.value, paimon_spark.RemotePaimonError)


def test_other_spark_errors_pass_unchanged(spark: Any) -> None:
    with pytest.raises(Exception) as raised, paimon_spark.paimon_errors():
        spark.range(1).selectExpr("no_such_column").collect()
    assert not isinstance(raised.value, PaimonError)
    assert "no_such_column" in str(raised.value)
