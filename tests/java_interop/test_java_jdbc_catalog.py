"""One jdbc catalog database shared with Java Paimon 0.9's ``JdbcCatalog``: each lists the other's databases
and tables and reads what the other wrote, the same rows as Java reads.

The database is PostgreSQL (a real server on 127.0.0.1, paimon_storage.emulators): the Paimon jar carries no
SQLite JDBC driver (no ``org.sqlite.JDBC``) nor a PostgreSQL one, so the PostgreSQL driver jar is put next to
it on the JVM's classpath (``$PAIMON_PG_JDBC_JAR`` or the local Maven repository; conftest.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_storage.emulators import PostgresServer, ServerUnavailable

from .conftest import DATABASE, POSTGRES_DRIVER_ENV, JavaPaimon

pytestmark = pytest.mark.java_interop

COLUMNS = [("id", "BIGINT NOT NULL"), ("name", "STRING"), ("score", "DOUBLE")]


def _rows(start: int, count: int) -> list[tuple[Any, ...]]:
    return [(i, None if i % 5 == 0 else f"n{i}", i / 4) for i in range(start, start + count)]


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
    except ServerUnavailable as error:
        server.stop()
        pytest.fail(f"cannot start postgresql: {error}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def catalogs(spark: Any, postgres: PostgresServer, tmp_path: Path) -> Iterator[tuple[Catalog, JavaPaimon]]:
    """Our catalog and Java's over one warehouse and one catalog database (their own catalog-key)."""
    jvm = spark._jvm
    try:  # JDBC 4 drivers register when loaded; the jar came after DriverManager looked for them
        jvm.java.lang.Class.forName(
            "org.postgresql.Driver", True, jvm.Thread.currentThread().getContextClassLoader()
        )
    except Exception as error:
        pytest.fail(
            f"the PostgreSQL JDBC driver (org.postgresql.Driver) is not on the JVM's classpath: set "
            f"{POSTGRES_DRIVER_ENV} to its jar ({type(error).__name__})",
            pytrace=False,
        )
    options = {
        "metastore": "jdbc",
        "uri": f"jdbc:postgresql://127.0.0.1:{postgres.port}/{postgres.database}",
        "jdbc.user": postgres.user,
        "catalog-key": f"k{uuid.uuid4().hex[:12]}",
    }
    warehouse = str(tmp_path / "wh")
    ours = Catalog.load({"warehouse": warehouse, **options}, create=True)
    io_dir = tmp_path / "java-io"
    io_dir.mkdir()
    java = JavaPaimon(spark, warehouse, str(io_dir), options)
    try:
        yield ours, java
    finally:
        java.close()


def _ours(catalog: Catalog, name: str) -> list[tuple[Any, ...]]:
    rows = catalog.get_table(f"{DATABASE}.{name}").to_arrow().to_pylist()
    return sorted((tuple(row.values()) for row in rows), key=lambda row: row[0])


def test_each_reads_the_tables_the_other_created(catalogs: tuple[Catalog, JavaPaimon]) -> None:
    ours, java = catalogs
    assert ours.list_databases() == [DATABASE]  # Java created it
    java.create_table("by_java", COLUMNS, options={"bucket": "-1"})
    java.write("by_java", _rows(0, 40))
    java.write("by_java", _rows(40, 10))
    assert ours.list_tables(DATABASE) == ["by_java"]
    assert _ours(ours, "by_java") == sorted(java.read("by_java")) == _rows(0, 50)

    schema = pa.schema([("id", pa.int64(), False), ("name", pa.string()), ("score", pa.float64())])
    table = ours.create_table(f"{DATABASE}.by_us", schema)
    rows = _rows(100, 30)
    table.append(
        pa.Table.from_pylist(
            [dict(zip(("id", "name", "score"), r, strict=True)) for r in rows], schema=schema
        )
    )
    assert sorted(java.catalog.listTables(DATABASE)) == ["by_java", "by_us"]
    assert sorted(java.read("by_us")) == rows

    ours.rename_table(f"{DATABASE}.by_us", f"{DATABASE}.renamed")
    assert sorted(java.catalog.listTables(DATABASE)) == ["by_java", "renamed"]
    assert sorted(java.read("renamed")) == rows
    java.catalog.dropTable(java._identifier("by_java"), False)
    assert ours.list_tables(DATABASE) == ["renamed"]
