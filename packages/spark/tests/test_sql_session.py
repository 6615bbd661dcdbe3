"""Paimon's SQL through a plain ``spark.sql`` (after ``register``): USING paimon, temporary views that see
new rows, Spark's time travel options, and the typed errors of bad statements."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.errors import (
    ConfigError,
    DatabaseNotFoundError,
    SnapshotNotFoundError,
    TableNotFoundError,
    TagNotFoundError,
)
from paimon_core.maintenance import create_tag
from paimon_spark import ProcedureNotFoundError, SqlError
from paimon_spark._sql import spark_sql, state_of

pytestmark = pytest.mark.slow

CATALOG_CONF = "spark.sql.catalog.paimon.warehouse"


@pytest.fixture
def session(spark: Any) -> Iterator[Any]:
    """The shared session, its SQL state (current namespace, Paimon views) reset afterwards."""
    yield spark
    state = state_of(spark)
    for view in list(state.views):
        spark.sql(f"DROP VIEW IF EXISTS `{view}`")
    state.catalog, state.database, state.views = None, "default", {}
    spark.conf.unset(CATALOG_CONF)


@pytest.fixture
def with_catalog(session: Any, warehouse: str) -> Any:
    session.conf.set(CATALOG_CONF, warehouse)
    return session


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.collect())


def test_register_makes_spark_sql_run_paimon_statements(with_catalog: Any) -> None:
    spark = with_catalog
    assert spark_sql(spark) is not spark.sql  # Spark's own method is kept underneath
    spark.sql("CREATE TABLE paimon.default.t (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id')")
    spark.sql("INSERT INTO paimon.default.t VALUES (1, 'a'), (2, 'b')")
    assert _rows(spark.sql("SELECT * FROM paimon.default.t")) == [(1, "a"), (2, "b")]
    # Spark's own statements and its formatting with keyword arguments are untouched.
    assert spark.sql("SELECT {n} + 1 AS x", n=1).first()["x"] == 2
    assert spark.sql("SELECT 1 AS paimon").first()["paimon"] == 1


def test_create_table_using_paimon_makes_a_paimon_table_and_a_view(with_catalog: Any, warehouse: str) -> None:
    spark = with_catalog
    spark.sql("CREATE TABLE ct (id BIGINT, v STRING) USING paimon TBLPROPERTIES ('primary-key' = 'id')")
    assert Catalog.open(warehouse).get_table("default.ct").schema.primary_keys == ("id",)
    spark.sql("INSERT INTO ct VALUES (1, 'a')")
    spark.sql("INSERT INTO ct VALUES (1, 'b'), (2, 'c')")
    assert _rows(spark.sql("SELECT * FROM ct")) == [(1, "b"), (2, "c")]
    assert _rows(spark.table("ct")) == [(1, "b"), (2, "c")]  # the view, made anew after each insert


def test_create_table_using_paimon_with_its_own_warehouse(session: Any, tmp_path: Any) -> None:
    warehouse = str(tmp_path / "elsewhere")
    session.sql(
        f"CREATE TABLE cw (id INT) USING paimon OPTIONS ('warehouse' = '{warehouse}', 'table' = 'db1.cw')"
    )
    session.sql("INSERT INTO cw VALUES (7)")
    assert Catalog.open(warehouse).get_table("db1.cw").to_arrow().column("id").to_pylist() == [7]


def test_create_table_using_paimon_without_a_warehouse_fails_at_once(session: Any) -> None:
    with pytest.raises(SqlError, match=r"spark\.sql\.catalog\.paimon\.warehouse"):
        session.sql("CREATE TABLE nowhere (id INT) USING paimon")
    assert not session.catalog.tableExists("nowhere")


def test_a_temp_view_sees_rows_inserted_through_it(session: Any, warehouse: str) -> None:
    spark = session
    spark.range(3).write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t")
    paimon_spark.create_temp_view(spark, "v", "db.t", warehouse=warehouse)
    assert spark.sql("SELECT count(*) FROM v").first()[0] == 3
    spark.sql("INSERT INTO v SELECT 10")
    assert spark.sql("SELECT count(*) FROM v").first()[0] == 4
    assert spark.table("v").count() == 4
    # A write that did not go through the view: statements still read the table anew.
    spark.range(20, 22).write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t")
    assert spark.sql("SELECT count(*) FROM v WHERE id >= 0").first()[0] == 6


def test_a_view_made_with_sql_is_kept_current_too(session: Any, warehouse: str) -> None:
    spark = session
    spark.range(2).write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t")
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW w USING paimon OPTIONS (table 'db.t', warehouse '{warehouse}')"
    )
    assert spark.sql("SELECT count(*) FROM w").first()[0] == 2
    spark.sql("INSERT INTO w VALUES (5)")
    assert _rows(spark.sql("SELECT id FROM w")) == [(0,), (1,), (5,)]
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW w AS SELECT 1 AS one")  # no longer a view of the table
    assert _rows(spark.sql("SELECT * FROM w")) == [(1,)]


def test_spark_time_travel_options(session: Any, warehouse: str) -> None:
    spark = session

    def append(first: int, last: int) -> None:
        frame = spark.range(first, last).selectExpr("cast(id as int) as id")
        frame.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.t")

    def read(**options: Any) -> list[int]:
        reader = spark.read.format("paimon").option("warehouse", warehouse).options(**options)
        return sorted(r["id"] for r in reader.load("db.t").collect())

    append(0, 1)
    table = Catalog.open(warehouse).get_table("db.t")
    first = table.latest_snapshot()
    assert first is not None
    time.sleep(0.05)
    append(1, 3)
    create_tag(table, "first", first.id)

    assert read(versionAsOf=1) == [0]
    assert read(versionAsOf="first") == [0]
    at = dt.datetime.fromtimestamp(first.time_millis / 1000, tz=dt.timezone.utc)
    assert read(timestampAsOf=at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]) == [0]  # the session is UTC
    assert read(timestampAsOf="4102444800") == [0, 1, 2]  # Unix seconds, 2100
    assert read() == [0, 1, 2]
    with pytest.raises(Exception, match="unknown option 'versionasoff'"):
        read(versionAsOff=1)


# The statements of each error: (test id, statement, message). None changes the table they share.
ERRORS: dict[type[Exception], list[tuple[str, str, str]]] = {
    TableNotFoundError: [
        ("unknown-table", "SELECT * FROM paimon.default.nope", "'default.nope' does not exist"),
        ("unknown-table-near", "SELECT * FROM paimon.default.tt", "did you mean 'default.t'"),
    ],
    DatabaseNotFoundError: [("unknown-database", "USE paimon.nodb", "'nodb' does not exist")],
    ProcedureNotFoundError: [
        (
            "unknown-procedure",
            "CALL sys.expire_snapshot(table => 't')",
            r"no procedure sys\.expire_snapshot \(did you mean sys\.expire_snapshots\?\)",
        )
    ],
    ConfigError: [
        (
            "unknown-table-option",
            "CREATE TABLE paimon.default.x (id INT) TBLPROPERTIES ('bukcet' = '2')",
            "unknown option 'bukcet'",
        )
    ],
    SnapshotNotFoundError: [("missing-snapshot", "SELECT * FROM paimon.default.t VERSION AS OF 99", "99")],
    TagNotFoundError: [("missing-tag", "SELECT * FROM paimon.default.t VERSION AS OF 'nope'", "'nope'")],
    SqlError: [
        (
            "unknown-argument",
            "CALL sys.create_tag(table => 't', tagg => 'x')",
            r"has no argument 'tagg' \(did you mean 'tag'\?\)",
        ),
        ("missing-argument", "CALL sys.create_tag(table => 't')", r"sys\.create_tag needs tag"),
        (
            "argument-type",
            "CALL sys.create_tag(table => 't', tag => 'x', snapshot => 'one')",
            "argument 'snapshot' takes a number, not 'one'",
        ),
        (
            "positional-after-named",
            "CALL sys.delete_tag(table => 't', 'x')",
            "positional arguments must come before named ones",
        ),
        ("too-many-arguments", "CALL sys.delete_tag('t', 'x', 'y')", "takes at most 2 arguments"),
        ("not-sys", "CALL paimon.other.compact('t')", r"CALL takes \[catalog\.\]sys\.<procedure>"),
        ("unknown-catalog", "CALL nope.sys.compact('t')", "'nope' is not a Paimon catalog"),
        ("malformed-call", "CALL sys.compact(table => )", "cannot read the call"),
        (
            "unknown-type",
            "ALTER TABLE paimon.default.t ALTER COLUMN v TYPE INTEGRAL",
            "unknown type 'INTEGRAL'",
        ),
        ("no-columns", "CREATE TABLE paimon.default.x", "needs its columns"),
        ("replace-table", "CREATE OR REPLACE TABLE paimon.default.x (id INT)", "not supported"),
        ("insert-arity", "INSERT INTO paimon.default.t VALUES (1)", "gives 1 columns, the insert takes 2"),
        ("insert-unknown-column", "INSERT INTO paimon.default.t (id, w) VALUES (1, 'x')", r"\['w'\]"),
        (
            "partition-spec",
            "INSERT OVERWRITE paimon.default.t PARTITION (v = 'x') VALUES (1)",
            "'v' is not a partition key",
        ),
        ("system-table-write", "INSERT INTO paimon.default.`t$snapshots` VALUES (1)", "system table"),
        ("bad-show", "SHOW PARTITIONS paimon.default.t", "not partitioned"),
        ("bad-alter", "ALTER TABLE paimon.default.t ALTER COLUMN v WIDEN", "expected TYPE, FIRST"),
    ],
}


@pytest.fixture(scope="module")
def one_row_warehouse(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A warehouse whose ``paimon.default.t (id INT, v STRING)`` holds one row, made once for the module."""
    warehouse = str(tmp_path_factory.mktemp("one-row"))
    spark.conf.set(CATALOG_CONF, warehouse)
    try:
        spark.sql("CREATE TABLE paimon.default.t (id INT, v STRING)")
        spark.sql("INSERT INTO paimon.default.t VALUES (1, 'a')")
    finally:
        spark.conf.unset(CATALOG_CONF)
    return warehouse


@pytest.mark.parametrize(
    ("statement", "error", "message"),
    [pytest.param(s, error, m, id=i) for error, cases in ERRORS.items() for i, s, m in cases],
)
def test_bad_statements_fail_typed(
    session: Any, one_row_warehouse: str, statement: str, error: type[Exception], message: str
) -> None:
    session.conf.set(CATALOG_CONF, one_row_warehouse)
    with pytest.raises(error, match=message):
        paimon_spark.sql(session, statement)
    catalog = Catalog.open(one_row_warehouse)  # the shared table as it was, and no other
    assert catalog.list_tables("default") == ["t"]
    assert [s.id for s in catalog.get_table("default.t").snapshots()] == [1]


def test_call_needs_a_catalog(session: Any) -> None:
    with pytest.raises(SqlError, match="no Paimon catalog to call it in"):
        paimon_spark.sql(session, "CALL sys.compact(table => 'db.t')")


def test_bad_sql_goes_to_spark(with_catalog: Any) -> None:
    from pyspark.errors import ParseException

    with pytest.raises(ParseException):
        with_catalog.sql("SELEC * FROM paimon.default.t")
    with pytest.raises(ParseException, match="INTEGRAL"):  # sqlglot cannot read it either: Spark says why
        with_catalog.sql("CREATE TABLE paimon.default.x (id INTEGRAL)")


def test_statement_kinds_return_spark_like_frames(with_catalog: Any) -> None:
    run: Callable[[str], Any] = with_catalog.sql
    assert run("CREATE DATABASE paimon.db").columns == []
    assert run("SHOW DATABASES IN paimon").columns == ["namespace"]
    run("USE paimon.db")
    run("CREATE TABLE t (id INT)")
    assert _rows(run("SHOW TABLES")) == [("db", "t", False)]
    run("USE spark_catalog.default")  # Spark's catalog again: t is Spark's name now
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        run("SELECT * FROM t").collect()


def test_the_sql_surface_over_classic_and_connect(any_spark: Any, warehouse: str) -> None:
    spark = any_spark
    spark.conf.set(CATALOG_CONF, warehouse)
    try:
        spark.sql("CREATE TABLE paimon.default.t (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id')")
        spark.sql("INSERT INTO paimon.default.t VALUES (1, 'a'), (2, 'b')")
        spark.sql("CALL paimon.sys.create_tag(table => 'default.t', tag => 'one')")
        spark.sql("UPDATE paimon.default.t SET v = 'B' WHERE id = 2")
        spark.sql("DELETE FROM paimon.default.t WHERE id = 1")
        assert _rows(spark.sql("SELECT * FROM paimon.default.t")) == [(2, "B")]
        assert _rows(spark.sql("SELECT * FROM paimon.default.t VERSION AS OF 'one'")) == [(1, "a"), (2, "b")]
        kinds = spark.sql(
            "SELECT commit_kind FROM paimon.default.`t$snapshots` ORDER BY snapshot_id"
        ).collect()
        assert [r[0] for r in kinds][:1] == ["APPEND"]
        assert _rows(spark.sql("SHOW TABLES IN paimon.default")) == [("default", "t", False)]
    finally:
        spark.conf.unset(CATALOG_CONF)
        state = state_of(spark)
        state.catalog, state.database = None, "default"
