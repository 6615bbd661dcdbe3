"""Data source options and session-conf dynamic options; options that shape a table's data at every Spark
door (reader and writer options, session conf, SQL, procedures) and the rescale that changes ``bucket``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.errors import ConfigError, MergeError
from paimon_spark import SourceConfig, conf_dynamic_options
from paimon_spark._sql import state_of


def test_conf_matching_with_wildcards_and_precedence() -> None:
    conf = {
        "spark.paimon.scan.snapshot-id": "1",
        "paimon.*.*.*.scan.snapshot-id": "2",
        "paimon.paimon.db.*.scan.snapshot-id": "3",
        "paimon.paimon.db.t.scan.snapshot-id": "4",
        "paimon.paimon.db.other.consumer-id": "x",
        "paimon.cat2.db.t.consumer-id": "y",
        "spark.sql.shuffle.partitions": "2",
        "paimon.paimon.db.t.not-an-option": "z",
    }
    assert conf_dynamic_options(conf, "paimon", "db", "t") == {"scan.snapshot-id": "4"}
    assert conf_dynamic_options(conf, "paimon", "db", "u") == {"scan.snapshot-id": "3"}
    assert conf_dynamic_options(conf, "paimon", "db2", "u") == {"scan.snapshot-id": "2"}
    assert conf_dynamic_options(conf, "cat2", "db", "t") == {"scan.snapshot-id": "2", "consumer-id": "y"}
    assert conf_dynamic_options({"spark.paimon.scan.snapshot-id": "1"}, "c", "d", "t") == {
        "scan.snapshot-id": "1"
    }


def test_parse_splits_paimon_storage_and_own_options() -> None:
    config = SourceConfig.parse(
        {
            "path": "db.t",
            "warehouse": "/wh",
            "scan.snapshot-id": "3",
            "s3.endpoint": "http://x",
            "read.stream.maxFilesPerTrigger": "5",
            "partitionOverwriteMode": "dynamic",
            "partition-keys": "dt, hr",
        },
        {"paimon.paimon.db.t.scan.snapshot-id": "1", "paimon.paimon.db.t.consumer-id": "c"},
    )
    assert config.location == "db.t" and config.warehouse == "/wh"
    assert config.table_options == {"scan.snapshot-id": "3", "consumer-id": "c"}  # options beat conf
    assert config.storage_options == {"s3.endpoint": "http://x"}
    assert config.max_files_per_trigger == 5 and config.max_rows_per_trigger is None
    assert config.dynamic_overwrite is True
    assert config.partition_keys == ("dt", "hr")


def test_overwrite_mode_defaults_to_the_session_setting() -> None:
    dynamic = {"spark.sql.sources.partitionOverwriteMode": "DYNAMIC"}
    table = {"path": "db.t", "warehouse": "/wh"}
    assert SourceConfig.parse(table).dynamic_overwrite is False
    assert SourceConfig.parse(table, dynamic).dynamic_overwrite is True
    assert (
        SourceConfig.parse({**table, "partitionOverwriteMode": "static"}, dynamic).dynamic_overwrite is False
    )
    assert SourceConfig.parse(table, dynamic).storage_options == {}  # not taken for a storage option


def test_table_path_names_database_and_table_for_conf() -> None:
    config = SourceConfig.parse({"path": "/wh/db.db/t"}, {"paimon.paimon.db.t.scan.snapshot-id": "7"})
    assert config.is_path and config.table_options == {"scan.snapshot-id": "7"}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"path": "db.t"},
        {"path": "db.t", "warehouse": "/wh", "read.stream.maxRowsPerTrigger": "0"},
        {"path": "db.t", "warehouse": "/wh", "partitionOverwriteMode": "sometimes"},
    ],
    ids=["no-table", "no-warehouse", "bad-limit", "bad-mode"],
)
def test_bad_options(options: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        SourceConfig.parse(options)


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("scan.snapshot-idd", "scan.snapshot-id"),
        ("bucket-keys", "bucket-key"),
        ("consumerid", "consumer-id"),
    ],
)
def test_a_misspelled_option_is_refused_with_the_close_match(key: str, suggestion: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"did you mean '{suggestion}'")):
        SourceConfig.parse({"path": "db.t", "warehouse": "/wh", key: "1"})


def test_an_unknown_option_is_refused_even_without_a_close_match() -> None:
    with pytest.raises(ConfigError, match="unknown option 'completely-unknown'"):
        SourceConfig.parse({"path": "db.t", "warehouse": "/wh", "completely-unknown": "1"})


# --- options that shape the data -------------------------------------------------------------------------

KV_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
CATALOG_CONF = "spark.sql.catalog.paimon.warehouse"


@pytest.fixture
def kv_warehouse(warehouse: str) -> str:
    """``db.kv``: a primary-key table with 2 buckets holding keys 0..5."""
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.kv", KV_SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    table.append(pa.table({"k": list(range(6)), "v": [f"v{k}" for k in range(6)]}, schema=KV_SCHEMA))
    return warehouse


def _keys(warehouse: str) -> list[int]:
    return sorted(Catalog.open(warehouse).get_table("db.kv").to_arrow()["k"].to_pylist())


def _bucket_refusal(error: BaseException) -> None:
    message = str(error).splitlines()[0]
    assert "'bucket' cannot change from '2' to '7' as a dynamic option" in message
    assert "rescale: ALTER TABLE SET ('bucket' = 'N'), then INSERT OVERWRITE" in message


def test_reader_and_writer_options_cannot_change_the_bucket_number(spark: Any, kv_warehouse: str) -> None:
    reader = spark.read.format("paimon").option("warehouse", kv_warehouse).option("bucket", "7")
    with pytest.raises(ConfigError) as raised, paimon_spark.paimon_errors():
        reader.load("db.kv").collect()
    _bucket_refusal(raised.value)
    frame = spark.createDataFrame([(k, "x") for k in range(6)], "k long, v string")
    writer = frame.write.format("paimon").option("warehouse", kv_warehouse).option("bucket", "7")
    with pytest.raises(ConfigError) as raised, paimon_spark.paimon_errors():
        writer.mode("append").save("db.kv")
    _bucket_refusal(raised.value)
    merge = frame.write.format("paimon").option("warehouse", kv_warehouse).option("merge-engine", "first-row")
    with pytest.raises(ConfigError, match="'merge-engine' cannot change"), paimon_spark.paimon_errors():
        merge.mode("append").save("db.kv")
    assert _keys(kv_warehouse) == list(range(6))  # 12 rows for 6 keys before the refusal


def test_the_session_conf_cannot_change_the_bucket_number(spark: Any, kv_warehouse: str) -> None:
    spark.conf.set("spark.paimon.bucket", "7")
    paimon_spark.register(spark)  # the data source captures the conf when registered
    try:
        reader = spark.read.format("paimon").option("warehouse", kv_warehouse)
        with pytest.raises(ConfigError) as raised, paimon_spark.paimon_errors():
            reader.load("db.kv").collect()
        _bucket_refusal(raised.value)
    finally:
        spark.conf.unset("spark.paimon.bucket")
        paimon_spark.register(spark)


@pytest.fixture
def kv_sql(spark: Any, kv_warehouse: str) -> Iterator[Callable[[str], Any]]:
    """Statements on the catalog ``paimon`` over ``kv_warehouse``."""
    spark.conf.set(CATALOG_CONF, kv_warehouse)
    state = state_of(spark)
    try:
        yield lambda text: paimon_spark.sql(spark, text)
    finally:
        state.catalog, state.database = None, "default"
        spark.conf.unset(CATALOG_CONF)


def test_sql_rescales_the_buckets_and_refuses_other_ways(
    kv_sql: Callable[[str], Any], kv_warehouse: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        kv_sql("CALL sys.compact(table => 'db.kv', options => 'bucket=7')")
    _bucket_refusal(raised.value)
    kv_sql("ALTER TABLE paimon.db.kv SET TBLPROPERTIES ('bucket' = '7')")
    # the files still have 2 buckets: a plain write would put keys in buckets of the new layout beside them
    with pytest.raises(ConfigError, match="with 7 buckets: its files have 2") as raised:
        kv_sql("INSERT INTO paimon.db.kv VALUES (1, 'new')")
    assert "INSERT OVERWRITE" in str(raised.value)
    # the rescale
    kv_sql("INSERT OVERWRITE paimon.db.kv SELECT * FROM paimon.db.kv")
    table = Catalog.open(kv_warehouse).get_table("db.kv")
    assert {e.total_buckets for e in table.live_entries()} == {7}
    kv_sql("INSERT INTO paimon.db.kv VALUES (1, 'new'), (6, 'six')")
    rows = sorted(tuple(r) for r in kv_sql("SELECT k, v FROM paimon.db.kv").collect())
    assert rows == sorted([(k, f"v{k}") for k in range(6) if k != 1] + [(1, "new"), (6, "six")])
    with pytest.raises(ConfigError, match="cannot become bucket = -1"):
        kv_sql("ALTER TABLE paimon.db.kv SET TBLPROPERTIES ('bucket' = '-1')")


def test_a_first_row_table_refuses_deletes_from_spark_writes(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    catalog.create_table(
        "db.fr", KV_SCHEMA, primary_keys=["k"], options={"bucket": "1", "merge-engine": "first-row"}
    ).append(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=KV_SCHEMA))
    # a -D of a key the table does not hold: no merge meets it in this write, so only the writer can refuse it
    frame = spark.createDataFrame([(9, "x", "-D"), (3, "c", "+I")], "k long, v string, rowkind string")
    writer = frame.write.format("paimon").option("warehouse", warehouse).mode("append")
    with pytest.raises(MergeError, match="ignore-delete"), paimon_spark.paimon_errors():
        writer.save("db.fr")
    assert sorted(catalog.get_table("db.fr").to_arrow()["k"].to_pylist()) == [1, 2]
    writer.option("ignore-delete", "true").save("db.fr")  # the -D dropped, as asked
    assert sorted(catalog.get_table("db.fr").to_arrow()["k"].to_pylist()) == [1, 2, 3]
