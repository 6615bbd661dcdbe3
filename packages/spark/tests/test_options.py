"""Data source options and session-conf dynamic options (no Spark session needed)."""

from __future__ import annotations

import re

import pytest

from paimon_core.errors import ConfigError
from paimon_spark import SourceConfig, conf_dynamic_options


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
