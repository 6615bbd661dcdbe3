"""Compaction on Spark: executors rewrite, the driver commits; the action CLI; the SQL procedures."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.errors import ConfigError
from paimon_core.snapshot import CommitKind

SCHEMA = pa.schema([pa.field("k", pa.string()), pa.field("id", pa.int64()), pa.field("payload", pa.string())])
SMALL = {
    "write-only": "true",
    "target-file-size": "128 kb",
    "compaction.min.file-num": "3",
    "source.split.open-file-cost": "1 b",
}


def rows(start: int, count: int) -> pa.Table:
    ids = np.arange(start, start + count)
    rng = np.random.default_rng(start)
    return pa.table(
        {
            "k": [("a", "b", "c")[i % 3] for i in ids],
            "id": ids,
            "payload": [rng.bytes(30).hex() for _ in ids],
        },
        schema=SCHEMA,
    )


def make_table(warehouse: str, appends: int = 10, **options: str) -> Any:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["k"], options={**SMALL, **options})
    for i in range(appends):
        table.append(rows(i * 300, 300))
    return table


def files_per_partition(table: Any) -> Counter[str]:
    return Counter(table.partition_values(e.partition)["k"] for e in table.live_entries())


def content(table: Any) -> list[tuple[str, int, str]]:
    data = table.to_arrow()
    return sorted(zip(*(data.column(n).to_pylist() for n in ("k", "id", "payload")), strict=True))


def reopen(warehouse: str) -> Any:
    return Catalog.open(warehouse).get_table("db.t")


def test_batch_compaction_on_executors_reads_back_identically_with_fewer_files(
    spark: Any, warehouse: str
) -> None:
    table = make_table(warehouse)
    before = content(table)
    files_before = len(table.live_entries())
    summary = paimon_spark.compact(spark, warehouse=warehouse, database="db", table="t", progress=False)
    after = reopen(warehouse)
    assert content(after) == before
    assert files_per_partition(after) == {"a": 1, "b": 1, "c": 1}
    assert summary.files_before == files_before == 30
    assert summary.files_after == 3 and summary.tasks == 3
    assert [s.commit_kind for s in after.snapshots()][-1] == CommitKind.COMPACT
    assert len(after.snapshots()) == 11  # one COMPACT snapshot for all tasks


def test_partition_filter_and_where_choose_partitions(spark: Any, warehouse: str) -> None:
    table = make_table(warehouse, appends=6)
    before = content(table)
    paimon_spark.compact(spark, warehouse=warehouse, table="db.t", partitions="k=a", progress=False)
    assert files_per_partition(reopen(warehouse)) == {"a": 1, "b": 6, "c": 6}
    paimon_spark.compact(spark, warehouse=warehouse, table="db.t", where="k > 'b'", progress=False)
    assert files_per_partition(reopen(warehouse)) == {"a": 1, "b": 6, "c": 1}
    paimon_spark.compact(spark, warehouse=warehouse, table="db.t", partitions="k=x;k=b", progress=False)
    assert files_per_partition(reopen(warehouse)) == {"a": 1, "b": 1, "c": 1}
    assert content(reopen(warehouse)) == before
    with pytest.raises(ConfigError):
        paimon_spark.compact(spark, warehouse=warehouse, table="db.t", partitions="k=a", where="k = 'a'")


def test_sort_compaction_on_spark(spark: Any, warehouse: str) -> None:
    table = make_table(warehouse, appends=4, **{"target-file-size": "16 kb"})
    # Appends with ids descending in each file, so a sorted rewrite must reorder them.
    for i in range(4):
        table.append(rows(10_000 + i * 300, 300).take(pa.array(range(299, -1, -1))))
    before = content(table)
    paimon_spark.compact(
        spark, warehouse=warehouse, table="db.t", partitions="k=a", order_strategy="order", order_by="id",
        progress=False,
    )  # fmt: skip
    after = reopen(warehouse)
    assert content(after) == before
    entries = [e for e in after.live_entries() if after.partition_values(e.partition)["k"] == "a"]
    assert len(entries) > 1
    per_file = []
    for entry in entries:
        path = f"{after.bucket_dir(entry.partition, entry.bucket)}/{entry.file.file_name}"
        ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
        assert ids == sorted(ids)
        per_file.append((ids[0], ids[-1]))
    # Files of partition a cover disjoint id ranges: one global sort, not per-file sorts.
    per_file.sort()
    assert all(prev[1] < nxt[0] for prev, nxt in itertools.pairwise(per_file))


def test_streaming_compaction_picks_up_new_appends(spark: Any, warehouse: str) -> None:
    table = make_table(warehouse, appends=3)
    stop = threading.Event()
    result: dict[str, Any] = {}

    def run() -> None:
        result["summary"] = paimon_spark.compact(
            spark, warehouse=warehouse, table="db.t", mode="streaming", stop=stop, poll_interval=0.2,
            progress=False,
        )  # fmt: skip

    job = threading.Thread(target=run)
    job.start()
    try:
        for i in range(3, 12):
            table.append(rows(i * 300, 300))
            time.sleep(0.1)
        expected = sorted(rows(0, 12 * 300).column("id").to_pylist())
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            current = reopen(warehouse)
            counts = files_per_partition(current)
            if max(counts.values()) <= 2 and sum(e.file.row_count for e in current.live_entries()) == 3600:
                break
            time.sleep(0.5)
    finally:
        stop.set()
        job.join(timeout=120)
    final = reopen(warehouse)
    assert sorted(final.to_arrow(columns=["id"]).column("id").to_pylist()) == expected
    assert max(files_per_partition(final).values()) <= 2
    assert len(result["summary"].snapshots) >= 2
    assert CommitKind.COMPACT in {s.commit_kind for s in final.snapshots()}


def test_compact_database_on_spark(spark: Any, warehouse: str) -> None:
    make_table(warehouse, appends=4)
    catalog = Catalog.open(warehouse)
    other = catalog.create_table("db.skip_me", SCHEMA, options=SMALL)
    for i in range(4):
        other.append(rows(i * 10, 10))
    summaries = paimon_spark.compact_database(
        spark, warehouse=warehouse, including_databases="db", excluding_tables=r"db\.skip_.*", progress=False
    )
    assert list(summaries) == ["db.t"]
    assert files_per_partition(reopen(warehouse)) == {"a": 1, "b": 1, "c": 1}
    assert len(catalog.get_table("db.skip_me").live_entries()) == 4


def test_sql_procedure_compacts_with_paimon_argument_names(spark: Any, warehouse: str) -> None:
    table = make_table(warehouse, appends=5)
    before = content(table)
    paimon_spark.register_procedures(spark)
    result = spark.sql(
        "SELECT * FROM paimon_compact(table => 'db.t', partitions => 'k=a;k=c', "
        f"options => 'warehouse={warehouse},target-file-size=1 mb')"
    ).collect()
    assert len(result) == 1
    row = result[0]
    assert row["result"] is True and row["table"] == "db.t"
    assert (row["files_before"], row["files_after"], row["snapshots"]) == (10, 2, 1)
    assert files_per_partition(reopen(warehouse)) == {"a": 1, "b": 5, "c": 1}
    paimon_spark.register_procedures(spark, warehouse=warehouse)
    rows_db = spark.sql("SELECT * FROM paimon_compact_database(including_databases => 'db')").collect()
    assert [r["table"] for r in rows_db] == ["db.t"]
    assert files_per_partition(reopen(warehouse)) == {"a": 1, "b": 1, "c": 1}
    assert content(reopen(warehouse)) == before
    with pytest.raises(Exception, match="cannot evaluate 'where'"):
        spark.sql("SELECT * FROM paimon_compact(table => 'db.t', `where` => \"k = 'a'\")").collect()


def test_cli_compacts_with_plain_python(warehouse: str) -> None:
    table = make_table(warehouse, appends=4)
    before = content(table)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    completed = subprocess.run(
        [
            sys.executable, "-m", "paimon_spark.cli", "compact", "--master", "local[1]",
            "--warehouse", warehouse, "--database", "db", "--table", "t", "--partition", "k=a",
            "--partition", "k=b", "--table_conf", "target-file-size=1 mb",
        ],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "db.t: 8 files" in completed.stdout and "-> 2 files" in completed.stdout
    assert files_per_partition(reopen(warehouse)) == {"a": 1, "b": 1, "c": 4}
    assert content(reopen(warehouse)) == before


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_primary_key_buckets_compact_on_executors(spark: Any, warehouse: str, bucket: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    options = {"bucket": bucket, "write-only": "true", "dynamic-bucket.target-row-num": "200"}
    table = catalog.create_table(
        "db.pk", SCHEMA, partition_keys=["k"], primary_keys=["k", "id"], options=options
    )
    for i in range(4):
        table.append(rows(i * 100, 300))  # overlapping keys: later writes replace earlier ones
    expected = content(table)
    assert len(expected) == 600  # every (k, id) once, in its latest version
    paimon_spark.compact(spark, warehouse=warehouse, table="db.pk", progress=False)
    after = Catalog.open(warehouse).get_table("db.pk")
    assert content(after) == expected
    top = after.options.merge_tree_levels() - 1
    assert {e.file.level for e in after.live_entries()} == {top}
    buckets = {(e.partition, e.bucket) for e in after.live_entries()}
    assert len(after.live_entries()) == len(buckets)  # one file per bucket
    latest = after.latest_snapshot()
    assert latest is not None and latest.commit_kind == CommitKind.COMPACT


def test_database_compaction_and_the_procedure_take_primary_key_tables(spark: Any, warehouse: str) -> None:
    """compact_database and paimon_compact compact a primary-key table's buckets next to an append table's
    partitions: the merged content is unchanged and each bucket ends as one top-level file."""
    make_table(warehouse, appends=4)
    catalog = Catalog.open(warehouse)
    pk = catalog.create_table(
        "db.pk",
        SCHEMA,
        partition_keys=["k"],
        primary_keys=["k", "id"],
        options={"bucket": "2", "write-only": "true"},
    )
    for i in range(4):
        pk.append(rows(i * 100, 300))
    expected = content(pk)
    summaries = paimon_spark.compact_database(
        spark, warehouse=warehouse, including_databases="db", progress=False
    )
    assert sorted(summaries) == ["db.pk", "db.t"]
    after = catalog.get_table("db.pk")
    assert content(after) == expected
    top = after.options.merge_tree_levels() - 1
    assert {e.file.level for e in after.live_entries()} == {top}
    assert len(after.live_entries()) == len({(e.partition, e.bucket) for e in after.live_entries()})
    compacted = after.latest_snapshot()
    assert compacted is not None and compacted.commit_kind == CommitKind.COMPACT

    after.append(rows(0, 30))  # new level-0 files in some buckets, then the SQL procedure
    expected = content(after)
    paimon_spark.register_procedures(spark, warehouse=warehouse)
    [row] = spark.sql("SELECT * FROM paimon_compact(table => 'db.pk')").collect()
    assert row["result"] is True and row["files_after"] < row["files_before"]
    final = catalog.get_table("db.pk")
    assert content(final) == expected
    assert {e.file.level for e in final.live_entries()} == {top}


def test_cli_errors_never_repeat_a_given_credential(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from types import SimpleNamespace

    from paimon_core.errors import PaimonError
    from paimon_spark import cli

    secret = "Zq9-cli-s3cr3t"

    class NoSpark:  # the action fails before any Spark work: no session needed
        sparkContext = SimpleNamespace(setLogLevel=lambda _level: None)

        def stop(self) -> None:
            pass

    def fail(*_args: Any, **_kwargs: Any) -> None:
        raise PaimonError(f"the store refused key {secret}")

    monkeypatch.setattr(cli, "_session", lambda *_args: NoSpark())
    monkeypatch.setattr(paimon_spark, "compact", fail)
    arguments = [
        "compact",
        "--warehouse",
        "/wh",
        "--table",
        "db.t",
        "--catalog_conf",
        f"s3.secret-key={secret}",
    ]
    assert cli.main(arguments) == 1
    err = capsys.readouterr().err
    assert "the store refused key ***" in err and secret not in err
