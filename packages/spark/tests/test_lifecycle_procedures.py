"""The lifecycle procedures from every door: ``paimon_core.maintenance``, ``paimon-py`` and Spark's
``CALL sys.*`` run the same case on identical tables, and each leaves the table as the case says."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog, maintenance
from paimon_core.cli import main
from paimon_core.errors import PaimonError
from paimon_core.table import Table
from paimon_core.tag import TagManager
from paimon_spark._sql import state_of

CATALOG_CONF = "spark.sql.catalog.paimon.warehouse"
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
OLD, NEW = "20000101", "29990101"  # far from any clock: no fake one is needed


def _table(catalog: Catalog) -> Table:
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"])
    table.append(pa.table({"id": [1, 2], "dt": [OLD, NEW]}, schema=SCHEMA))
    table.append(pa.table({"id": [3], "dt": [NEW]}, schema=SCHEMA))
    maintenance.create_tag(table, "v", snapshot_id=1)
    maintenance.create_tag(table, "w", snapshot_id=2, time_retained="30 d")
    return table


def _tags(table: Table) -> dict[str, tuple[int, dt.timedelta | None]]:
    return {t.name: (t.snapshot.id, t.time_retained) for t in TagManager(table.storage, table.path).tags()}


def _dates(table: Table) -> list[str]:
    return sorted(set(table.to_arrow().column("dt").to_pylist()))


@dataclass(frozen=True)
class Case:
    """One procedure call in the three forms, what each returns (normalised), and the table after it."""

    python: Callable[[Table], Any]
    cli: list[str]
    call: str  # also run as the paimon_<procedure> table function, with the same named arguments
    result: Any
    check: Callable[[Table], None]


def _check(ok: bool, shown: Any) -> None:
    assert ok, shown


def _last_kind(table: Table) -> str:
    latest = table.latest_snapshot()
    assert latest is not None
    return latest.commit_kind.name


def _success(table: Table) -> None:
    body = json.loads(table.storage.read_bytes(f"{table.path}/dt={OLD}/_SUCCESS"))
    assert set(body) == {"creationTime", "modificationTime"}
    assert body["creationTime"] == body["modificationTime"] > 0


CASES = {
    "expire_partitions": Case(
        lambda t: [
            ", ".join(f"{k}={v}" for k, v in p.items())
            for p in maintenance.expire_partitions(t, expiration_time="1 d", timestamp_formatter="yyyyMMdd")
        ],
        ["expire-partitions", "--expiration-time", "1 d", "--timestamp-formatter", "yyyyMMdd"],
        "CALL sys.expire_partitions(table => 'db.t', expiration_time => '1 d', timestamp_formatter => 'yyyyMMdd')",
        [f"dt={OLD}"],
        lambda t: _check(
            _dates(t) == [NEW] and _last_kind(t) == "OVERWRITE", f"partitions left: {_dates(t)}"
        ),
    ),
    "expire_partitions_none": Case(
        lambda t: maintenance.expire_partitions(
            t, expiration_time="1 d", max_expires=5, expire_strategy="update-time"
        ),
        [
            "expire-partitions",
            "--expiration-time",
            "1 d",
            "--max-expires",
            "5",
            "--expire-strategy",
            "update-time",
        ],
        "CALL sys.expire_partitions('db.t', '1 d', NULL, NULL, 'update-time', 5)",
        [],
        lambda t: _check(_dates(t) == [OLD, NEW], f"partitions left: {_dates(t)}"),
    ),
    "expire_tags": Case(
        lambda t: sorted(maintenance.expire_tags(t, older_than="2999-01-01 00:00:00")),
        ["expire-tags", "--older-than", "2999-01-01 00:00:00"],
        "CALL sys.expire_tags(table => 'db.t', older_than => '2999-01-01 00:00:00')",
        ["v", "w"],
        lambda t: _check(_tags(t) == {}, f"tags left: {_tags(t)}"),
    ),
    "expire_tags_none": Case(
        lambda t: maintenance.expire_tags(t),
        ["expire-tags"],
        "CALL sys.expire_tags('db.t')",
        [],
        lambda t: _check(set(_tags(t)) == {"v", "w"}, f"tags: {_tags(t)}"),
    ),
    "replace_tag": Case(
        lambda t: maintenance.replace_tag(t, "v", 2, "1 d").snapshot.id,
        ["replace-tag", "v", "--snapshot", "2", "--time-retained", "1 d"],
        "CALL sys.replace_tag(table => 'db.t', tag => 'v', snapshot => 2, time_retained => '1 d')",
        None,
        lambda t: _check(_tags(t)["v"] == (2, dt.timedelta(days=1)), f"tags: {_tags(t)}"),
    ),
    "mark_partition_done": Case(
        lambda t: maintenance.mark_partition_done(t, f"dt={OLD}"),
        ["mark-partition-done", f"dt={OLD}"],
        f"CALL sys.mark_partition_done(table => 'db.t', partitions => 'dt={OLD}')",
        None,
        _success,
    ),
}

# what each door returns for a case's result: Python the values, CALL its rows, the CLI its exit status
_CALL_ROWS = {
    "expire_partitions": [(f"dt={OLD}",)],
    "expire_partitions_none": [("No expired partitions.",)],
    "expire_tags": [("v",), ("w",)],
    "expire_tags_none": [("No expired tags.",)],
    "replace_tag": [(True,)],
    "mark_partition_done": [(True,)],
}
_PYTHON = {"replace_tag": 2, "mark_partition_done": 1}
# the table functions yield the rows alone (no 'No expired ...' row) and Flink's snapshot_id
_UDTF_ROWS = {**_CALL_ROWS, "expire_partitions_none": [], "expire_tags_none": []}


def _udtf(call: str) -> str:
    """``CALL sys.x(...)`` as ``SELECT * FROM paimon_x(...)``: the same arguments, named or positional."""
    name, _, arguments = call.removeprefix("CALL sys.").partition("(")
    return f"SELECT * FROM paimon_{name}({arguments.replace('snapshot =>', 'snapshot_id =>')}"


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


@pytest.mark.parametrize("door", ["python", "cli", "call", "udtf"])
@pytest.mark.parametrize("name", list(CASES))
def test_each_door_runs_the_procedure(spark: Any, warehouse: str, name: str, door: str) -> None:
    case = CASES[name]
    table = _table(Catalog.open(warehouse))
    if door == "python":
        assert case.python(table) == _PYTHON.get(name, case.result)
    elif door == "cli":
        assert main([case.cli[0], table.path, *case.cli[1:]]) == 0
    elif door == "call":
        with _session(spark, warehouse) as sql:
            rows = [tuple(r) for r in sql(case.call).collect()]
        assert sorted(rows) == _CALL_ROWS[name]
    else:
        paimon_spark.register_procedures(spark, warehouse=warehouse)
        assert sorted(tuple(r) for r in spark.sql(_udtf(case.call)).collect()) == _UDTF_ROWS[name]
    case.check(Catalog.open(warehouse).get_table("db.t"))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("CALL sys.expire_partitions(table => 'db.t')", "expiration_time"),
        ("CALL sys.replace_tag(table => 'db.t', tag => 'missing')", "missing"),
        ("CALL sys.mark_partition_done(table => 'db.m', partitions => 'dt=1')", "done-partition.*metastore"),
    ],
)
def test_bad_calls_name_the_problem(spark: Any, warehouse: str, call: str, message: str) -> None:
    catalog = Catalog.open(warehouse)
    _table(catalog)
    catalog.create_table(
        "db.m", SCHEMA, partition_keys=["dt"], options={"partition.mark-done-action": "done-partition"}
    )
    with _session(spark, warehouse) as sql, pytest.raises(PaimonError, match=message):
        sql(call).collect()


def test_spark_writes_run_the_lifecycle_after_their_commits(spark: Any, warehouse: str) -> None:
    """A Spark batch write commits through the table's pipeline: its batch tag and partition expiration run
    after the commit, as after ``Table.append``."""
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    options = {
        "tag.automatic-creation": "batch",
        "tag.batch.customized-name": "nightly",
        "partition.expiration-time": "1 d",
        "partition.timestamp-formatter": "yyyyMMdd",
        "partition.expiration-check-interval": "0 s",
    }
    table = catalog.create_table("db.w", SCHEMA, partition_keys=["dt"], options=options)
    rows = spark.createDataFrame([(1, OLD), (2, NEW)], "id BIGINT, dt STRING")
    rows.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.w")
    table = catalog.get_table("db.w")
    assert _dates(table) == [NEW]  # the old partition expired after the write's commit
    assert set(_tags(table)) == {"nightly"}
    assert sorted(table.to_arrow(tag="nightly").column("dt").to_pylist()) == [OLD, NEW]  # tagged before
