"""compact_database (table selection, divided and combined modes) and the ``paimon-py compact`` CLI."""

from __future__ import annotations

import threading
import time
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.cli import main
from paimon_core.compact import compact_database, parse_partition_specs, select_tables
from paimon_core.errors import ConfigError
from paimon_core.snapshot import CommitKind

SCHEMA = pa.schema([pa.field("k", pa.string()), pa.field("v", pa.int64())])
OPTIONS = {
    "write-only": "true",
    "target-file-size": "1 mb",
    "source.split.open-file-cost": "1 b",
    "compaction.min.file-num": "3",
}


def make(catalog: Catalog, name: str, appends: int = 4) -> Any:
    database = name.split(".")[0]
    catalog.create_database(database, exist_ok=True)
    table = catalog.create_table(name, SCHEMA, partition_keys=["k"], options=OPTIONS)
    for i in range(appends):
        table.append(pa.table({"k": ["a", "b"], "v": [i, i]}))
    return table


def compacted(catalog: Catalog, name: str) -> bool:
    return CommitKind.COMPACT in [s.commit_kind for s in catalog.get_table(name).snapshots()]


def test_select_tables_by_regex(catalog: Catalog) -> None:
    for name in ("db.t1", "db.t2", "db.tmp_x", "db2.t3", "other.t4"):
        make(catalog, name, appends=0)
    assert select_tables(catalog) == ["db.t1", "db.t2", "db.tmp_x", "db2.t3", "other.t4"]
    assert select_tables(catalog, including_databases="db") == ["db.t1", "db.t2", "db.tmp_x"]
    assert select_tables(catalog, including_databases="db|db2", excluding_tables=r"db\.tmp_.*") == [
        "db.t1",
        "db.t2",
        "db2.t3",
    ]
    assert select_tables(catalog, including_tables=r"db2\.t3|db\.t1") == ["db.t1", "db2.t3"]
    assert select_tables(catalog, including_tables="t1") == []  # whole-name match
    with pytest.raises(ConfigError):
        select_tables(catalog, including_tables="(")


def test_divided_batch_compacts_only_selected_tables(catalog: Catalog) -> None:
    for name in ("db.t1", "db.t2", "db.skip"):
        make(catalog, name)
    summaries = compact_database(catalog, excluding_tables=r".*skip", progress=False)
    assert sorted(summaries) == ["db.t1", "db.t2"]
    assert compacted(catalog, "db.t1") and compacted(catalog, "db.t2")
    assert not compacted(catalog, "db.skip")
    assert all(s.files_after < s.files_before for s in summaries.values())
    assert catalog.get_table("db.t1").to_arrow().num_rows == 8


def test_combined_batch(catalog: Catalog) -> None:
    for name in ("db.t1", "db2.t2"):
        make(catalog, name)
    summaries = compact_database(catalog, mode="combined", progress=False)
    assert sorted(summaries) == ["db.t1", "db2.t2"]
    assert compacted(catalog, "db.t1") and compacted(catalog, "db2.t2")


def test_combined_streaming_picks_up_tables_created_later(catalog: Catalog) -> None:
    make(catalog, "db.t1", appends=0)
    stop = threading.Event()
    result: list[Any] = []
    job = threading.Thread(
        target=lambda: result.append(
            compact_database(
                catalog, mode="combined", streaming=True, stop=stop, poll_interval=0.02, progress=False
            )
        )
    )
    job.start()
    try:
        time.sleep(0.1)
        make(catalog, "db.late", appends=5)  # created while the job runs
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not compacted(catalog, "db.late"):
            time.sleep(0.05)
    finally:
        stop.set()
        job.join(30)
    assert compacted(catalog, "db.late")
    assert result and "db.late" in result[0]
    assert catalog.get_table("db.late").to_arrow().num_rows == 10


def test_divided_streaming_runs_a_job_per_table(catalog: Catalog) -> None:
    make(catalog, "db.t1", appends=0)
    make(catalog, "db.t2", appends=0)
    stop = threading.Event()
    job = threading.Thread(
        target=compact_database,
        args=(catalog,),
        kwargs={"streaming": True, "stop": stop, "poll_interval": 0.02, "progress": False},
    )
    job.start()
    try:
        for name in ("db.t1", "db.t2"):
            table = catalog.get_table(name)
            for i in range(4):
                table.append(pa.table({"k": ["a"], "v": [i]}))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            compacted(catalog, "db.t1") and compacted(catalog, "db.t2")
        ):
            time.sleep(0.05)
    finally:
        stop.set()
        job.join(30)
    assert compacted(catalog, "db.t1") and compacted(catalog, "db.t2")


def test_partition_spec_syntax() -> None:
    assert parse_partition_specs("dt=1,hh=2;dt=3") == [{"dt": "1", "hh": "2"}, {"dt": "3"}]
    assert parse_partition_specs(["dt=1", {"dt": "2"}]) == [{"dt": "1"}, {"dt": "2"}]
    assert parse_partition_specs(None) == []
    with pytest.raises(ConfigError):
        parse_partition_specs("dt")


# --- CLI -------------------------------------------------------------------------------------------------


def test_cli_compact_with_processes(
    catalog: Catalog, warehouse: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make(catalog, "db.t", appends=4)
    code = main(
        ["compact", warehouse, "--database", "db", "--table", "t", "--partition", "k=a", "--parallelism", "2"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "db.t" in out and "files" in out
    table = catalog.get_table("db.t")
    by_partition: dict[str, int] = {}
    for entry in table.live_entries():
        key = table.partition_values(entry.partition)["k"]
        by_partition[key] = by_partition.get(key, 0) + 1
    assert by_partition == {"a": 1, "b": 4}


def test_cli_sort_compact_and_database(
    catalog: Catalog, warehouse: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make(catalog, "db.t", appends=4)
    make(catalog, "db.u", appends=4)
    args = [
        "compact",
        warehouse,
        "--database",
        "db",
        "--table",
        "t",
        "--threads",
        "--order-strategy",
        "zorder",
    ]
    assert main([*args, "--order-by", "v"]) == 0
    assert compacted(catalog, "db.t")
    assert (
        main(
            ["compact-database", warehouse, "--including-tables", r"db\.u", "--threads", "--mode", "combined"]
        )
        == 0
    )
    assert compacted(catalog, "db.u")
    assert main(["compact", warehouse, "--database", "db", "--table", "missing"]) == 1
    assert "error" in capsys.readouterr().err


COMPACT_FORMS = {
    "warehouse first": ["{wh}", "--database", "db", "--table", "t"],
    "paimon flags": ["--warehouse", "{wh}", "--database", "db", "--table", "t"],
    "paimon flags, db.t": ["--warehouse", "{wh}", "--table", "db.t"],
    "warehouse first, db.t": ["{wh}", "--table", "db.t"],
    "the same warehouse twice": ["{wh}", "--warehouse", "{wh}", "--database", "db", "--table", "t"],
    "table directory": ["{wh}/db.db/t"],
    "paimon underscores": ["--warehouse", "{wh}", "--table", "db.t", "--table_conf", "write-only=true"],
    "table directory, dynamic option": ["{wh}/db.db/t", "--table-conf", "write-only=true"],
}


@pytest.mark.parametrize("form", sorted(COMPACT_FORMS))
def test_cli_compact_takes_paimons_flags_and_the_table_directory(
    catalog: Catalog, warehouse: str, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    make(catalog, "db.t", appends=4)
    make(catalog, "db.u", appends=4)
    arguments = [a.replace("{wh}", warehouse) for a in COMPACT_FORMS[form]]
    assert main(["compact", *arguments, "--threads", "--no-progress"]) == 0, capsys.readouterr().err
    assert compacted(catalog, "db.t") and not compacted(catalog, "db.u")


def test_cli_compact_database_takes_the_warehouse_flag(catalog: Catalog, warehouse: str) -> None:
    make(catalog, "db.u", appends=4)
    arguments = ["--warehouse", warehouse, "--including_tables", r"db\.u", "--threads", "--no-progress"]
    assert main(["compact-database", *arguments]) == 0
    assert compacted(catalog, "db.u")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--warehouse", "{wh}"], "which table?"),
        (["{wh}", "--database", "db"], "which table?"),
        (["--warehouse", "{wh}", "--table", "t"], "--table 't' needs --database"),
        (["--database", "db", "--table", "t"], "no warehouse given"),
        (["{wh}", "--warehouse", "{wh}-other", "--table", "db.t"], "two warehouses given"),
    ],
)
def test_cli_compact_says_what_is_missing(
    catalog: Catalog, warehouse: str, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    assert main(["compact", *(a.replace("{wh}", warehouse) for a in arguments)]) == 1
    assert message in capsys.readouterr().err
