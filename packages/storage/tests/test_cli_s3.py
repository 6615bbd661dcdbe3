"""The ``paimon-py`` command on moto's S3: endpoint and credentials come only from ``--option K=V``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.tag import TagManager

from .conftest import Store

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


def _cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    # No AWS_* variables: whatever reaches the store must come from the command line.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "paimon_core.cli", *arguments],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )


def _option_flags(store: Store) -> list[str]:
    return [f"--option={key}={value}" for key, value in store.options.items()]


def _catalog(store: Store) -> tuple[str, Catalog]:
    warehouse = store.root()
    catalog = Catalog.open(warehouse, create=True, **store.options)
    catalog.create_database("db")
    return warehouse, catalog


def test_table_commands_take_storage_options(s3_store: Store) -> None:
    _, catalog = _catalog(s3_store)
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["day"])
    table.append(pa.table({"id": [1, 2], "day": ["d1", "d2"]}, schema=SCHEMA))
    table.append(pa.table({"id": [3], "day": ["d1"]}, schema=SCHEMA))
    flags = _option_flags(s3_store)

    info = _cli("info", "--json", table.path, *flags)
    assert info.returncode == 0, info.stderr
    assert [s["id"] for s in json.loads(info.stdout)["snapshots"]] == [1, 2]

    # Storage and table options mix: scan.snapshot-id becomes a dynamic option of the table.
    read = _cli("read", table.path, *flags, "--option", "scan.snapshot-id=1")
    assert read.returncode == 0, read.stderr
    assert sorted(json.loads(line)["id"] for line in read.stdout.splitlines()) == [1, 2]

    tagged = _cli("create-tag", table.path, "first", "--snapshot", "1", *flags)
    assert tagged.returncode == 0, tagged.stderr
    assert TagManager(table.storage, table.path).tag("first").snapshot.id == 1


def test_compact_takes_option_and_catalog_conf(s3_store: Store) -> None:
    warehouse, catalog = _catalog(s3_store)
    table = catalog.create_table("db.t", SCHEMA)
    for i in range(5):  # compaction.min.file-num
        table.append(pa.table({"id": [i], "day": ["d"]}, schema=SCHEMA))
    # --catalog-conf is the same flag under the Spark action's name.
    items = list(s3_store.options.items())
    flags = [f"--catalog-conf={k}={v}" for k, v in items[:2]] + [f"--option={k}={v}" for k, v in items[2:]]
    result = _cli(
        "compact", warehouse, "--database", "db", "--table", "t", "--threads", "--no-progress", *flags
    )
    assert result.returncode == 0, result.stderr
    latest = table.latest_snapshot()
    assert latest is not None and latest.commit_kind.value == "COMPACT"
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3, 4]


def test_a_misspelled_storage_option_is_one_line_naming_the_key(s3_store: Store) -> None:
    options = dict(s3_store.options)
    options["s3.endpiont"] = options.pop("s3.endpoint")
    result = _cli(
        "info", f"s3://{s3_store.bucket}/nowhere/db.db/t", *(f"--option={k}={v}" for k, v in options.items())
    )
    assert result.returncode == 1
    assert result.stderr.startswith("paimon-py: error: unknown s3 storage option 's3.endpiont'")
    assert "did you mean 's3.endpoint'" in result.stderr and len(result.stderr.splitlines()) == 1
