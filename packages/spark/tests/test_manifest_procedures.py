"""``compact_manifest`` and ``purge_files`` from every door (``paimon_core.maintenance``, ``paimon-py``, ``CALL sys.*`` and the
``paimon_<procedure>`` table functions), and the Paimon procedures that do not run here, each refused
with its reason."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog, maintenance
from paimon_core.cli import main
from paimon_core.manifest import read_manifest_list
from paimon_core.snapshot import CommitKind
from paimon_core.table import Table
from paimon_spark import ProcedureNotFoundError, ProcedureUnsupportedError
from paimon_spark._sql import state_of

CATALOG_CONF = "spark.sql.catalog.paimon.warehouse"
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])


def _table(catalog: Catalog, commits: int = 4) -> Table:
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table(
        "db.t", SCHEMA, partition_keys=["dt"], options={"manifest.merge-min-count": "1000"}
    )
    for i in range(commits):
        table.append(pa.table({"id": [i], "dt": [f"d{i % 2}"]}, schema=SCHEMA))
    return table


def _manifest_count(table: Table) -> int:
    latest = table.latest_snapshot()
    assert latest is not None
    ctx = table.manifest_context
    return len(read_manifest_list(table.storage, ctx.path(latest.base_manifest_list))) + len(
        read_manifest_list(table.storage, ctx.path(latest.delta_manifest_list))
    )


@contextlib.contextmanager
def _session(spark: Any, warehouse: str) -> Iterator[Callable[[str], Any]]:
    spark.conf.set(CATALOG_CONF, warehouse)
    state = state_of(spark)
    try:
        paimon_spark.sql(spark, "USE paimon.db")
        yield lambda text: paimon_spark.sql(spark, text)
    finally:
        state.catalog, state.database = None, "default"
        spark.conf.unset(CATALOG_CONF)


def _run(door: str, spark: Any, warehouse: str, table: Table, dry_run: bool) -> Any:
    if door == "python":
        return maintenance.compact_manifest(table, dry_run=dry_run)
    if door == "cli":
        return main(["compact-manifest", table.path, *(["--dry-run"] if dry_run else [])])
    arguments = "table => 'db.t'" + (", dry_run => true" if dry_run else "")
    if door == "call":
        with _session(spark, warehouse) as sql:
            return [tuple(r) for r in sql(f"CALL sys.compact_manifest({arguments})").collect()]
    paimon_spark.register_procedures(spark, warehouse=warehouse)
    return [tuple(r) for r in spark.sql(f"SELECT * FROM paimon_compact_manifest({arguments})").collect()]


_RESULT = {"python": 5, "cli": 0, "call": [(True,)], "udtf": [(True,)]}
_DRY_RESULT = {"python": None, "cli": 0, "call": [(True,)], "udtf": [(True,)]}


@pytest.mark.parametrize("door", ["python", "cli", "call", "udtf"])
def test_each_door_merges_the_manifests(spark: Any, warehouse: str, door: str) -> None:
    table = _table(Catalog.open(warehouse))
    rows = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert _manifest_count(table) == 4

    assert _run(door, spark, warehouse, table, dry_run=True) == _DRY_RESULT[door]
    table = Catalog.open(warehouse).get_table("db.t")
    assert table.snapshot_manager.latest_id() == 4 and _manifest_count(table) == 4

    assert _run(door, spark, warehouse, table, dry_run=False) == _RESULT[door]
    table = Catalog.open(warehouse).get_table("db.t")
    latest = table.latest_snapshot()
    assert latest is not None and latest.id == 5 and latest.commit_kind == CommitKind.COMPACT
    assert _manifest_count(table) == 1
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == rows


def test_manifest_sort_arguments_are_refused(spark: Any, warehouse: str) -> None:
    _table(Catalog.open(warehouse))
    with (
        _session(spark, warehouse) as sql,
        pytest.raises(paimon_spark.SqlError, match="manifest_sort_enabled: manifest sorting"),
    ):
        sql("CALL sys.compact_manifest(table => 'db.t', manifest_sort_enabled => true)").collect()


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("migrate_table", "Hive metastore"),
        ("repair", "Hive metastore"),
        ("create_function", "REST catalog"),
        ("alter_view_dialect", "stores views"),
        ("reassign_row_id", "row-tracking.enabled"),
        ("rewrite_file_index", "not implemented here yet"),
    ],
)
def test_paimon_procedures_that_do_not_run_here_say_why(
    spark: Any, warehouse: str, name: str, reason: str
) -> None:
    _table(Catalog.open(warehouse), commits=1)
    with _session(spark, warehouse) as sql, pytest.raises(ProcedureUnsupportedError, match=reason) as info:
        sql(f"CALL sys.{name}(table => 'db.t')").collect()
    assert info.value.name == name
    with _session(spark, warehouse) as sql, pytest.raises(ProcedureNotFoundError, match="no procedure"):
        sql("CALL sys.no_such_procedure(table => 'db.t')").collect()


@pytest.mark.parametrize("door", ["cli", "call", "udtf"])
def test_each_door_purges_the_table(spark: Any, warehouse: str, door: str) -> None:
    table = _table(Catalog.open(warehouse))
    maintenance.create_tag(table, "v1", snapshot_id=2)
    if door == "cli":
        assert main(["purge-files", table.path]) == 0
    elif door == "call":
        with _session(spark, warehouse) as sql:
            assert [tuple(r) for r in sql("CALL sys.purge_files(table => 'db.t')").collect()] == [
                ("Success",)
            ]
    else:
        paimon_spark.register_procedures(spark, warehouse=warehouse)
        rows = spark.sql("SELECT * FROM paimon_purge_files(table => 'db.t')").collect()
        assert [tuple(r) for r in rows] == [("Success",)]
    table = Catalog.open(warehouse).get_table("db.t")
    assert table.to_arrow().num_rows == 0
    assert [s.id for s in table.snapshots()] == [5]
    assert table.latest_snapshot().commit_kind == CommitKind.OVERWRITE  # type: ignore[union-attr]
    assert Catalog.open(warehouse).get_table("db.t$tags").to_arrow().num_rows == 0
