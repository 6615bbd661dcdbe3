"""A Spark catalog with ``metastore = jdbc`` (``spark.sql.catalog.paimon.metastore``, ``.uri``): Spark SQL
creates, writes and reads its tables; the catalog's SQLite database and paimon-core see the same."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_spark._sql import state_of

pytestmark = pytest.mark.slow

PREFIX = "spark.sql.catalog.paimon."


@pytest.fixture
def jdbc_catalog(spark: Any, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The session's ``paimon`` catalog is a jdbc catalog over a SQLite database (reset afterwards)."""
    conf = {
        "warehouse": str(tmp_path / "wh"),
        "metastore": "jdbc",
        "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}",
        "catalog-key": "spark",
    }
    for key, value in conf.items():
        spark.conf.set(PREFIX + key, value)
    yield conf
    for key in conf:
        spark.conf.unset(PREFIX + key)
    state = state_of(spark)
    state.catalog, state.database = None, "default"


def test_spark_sql_writes_and_reads_a_jdbc_catalog_table(spark: Any, jdbc_catalog: dict[str, str]) -> None:
    sql = paimon_spark.sql
    sql(spark, "CREATE DATABASE paimon.db")
    sql(spark, "CREATE TABLE paimon.db.t (id INT, v STRING)")
    sql(spark, "INSERT INTO paimon.db.t VALUES (1, 'a'), (2, 'b')")
    sql(spark, "INSERT INTO paimon.db.t VALUES (3, 'c')")
    rows = sorted(tuple(r) for r in sql(spark, "SELECT * FROM paimon.db.t").collect())
    assert rows == [(1, "a"), (2, "b"), (3, "c")]
    assert sorted(tuple(r) for r in sql(spark, "SHOW TABLES IN paimon.db").collect()) == [("db", "t", False)]

    database = jdbc_catalog["uri"][len("jdbc:sqlite:") :]
    with sqlite3.connect(database) as conn:
        registered = conn.execute(
            "SELECT catalog_key, database_name, table_name FROM paimon_tables"
        ).fetchall()
    assert registered == [("spark", "db", "t")]
    core = Catalog.load(jdbc_catalog)
    assert sorted(core.get_table("db.t").to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"},
        {"id": 2, "v": "b"},
        {"id": 3, "v": "c"},
    ]
    sql(spark, "ALTER TABLE paimon.db.t RENAME TO db.u")
    assert core.list_tables("db") == ["u"]
    assert len(sql(spark, "SELECT * FROM paimon.db.u").collect()) == 3
