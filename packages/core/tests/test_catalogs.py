"""The catalog behaviour suite over the filesystem and the jdbc (SQLite) catalogs; what only the jdbc catalog
does: Java's tables and rows, atomic creation, concurrent writers, its commit lock. PostgreSQL runs the same
suite in packages/storage/tests/test_catalog_postgres.py."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog, ConfigError
from paimon_core.catalog import JdbcCatalog
from paimon_core.cli import main
from paimon_core.errors import (
    CatalogError,
    CatalogUnavailableError,
    LockAcquireTimeoutError,
    TableAlreadyExistsError,
)
from paimon_core.schema import SchemaManager, TableSchema
from paimon_core.snapshot import CommitKind
from paimon_core.storage import Capability, MemoryBackend
from paimon_core.types import fields_from_arrow_schema
from paimon_testing.catalogs import SCHEMA, CatalogBehaviourTests


def sqlite_options(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "warehouse": str(tmp_path / "wh"),
        "metastore": "jdbc",
        "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}",
        **extra,
    }


class TestFilesystemCatalog(CatalogBehaviourTests):
    @pytest.fixture
    def catalog_options(self, tmp_path: Path) -> Mapping[str, str]:
        return {"warehouse": str(tmp_path / "wh")}


class TestSqliteCatalog(CatalogBehaviourTests):
    @pytest.fixture
    def catalog_options(self, tmp_path: Path) -> Mapping[str, str]:
        return sqlite_options(tmp_path)


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute(sql).fetchall())


def test_rows_are_javas(tmp_path: Path) -> None:
    """The rows Java's JdbcCatalog reads: paimon_tables and paimon_database_properties, keyed by catalog-key;
    two catalogs of other keys share the database without seeing each other."""
    one = Catalog.load(sqlite_options(tmp_path, **{"catalog-key": "one"}), create=True)
    two = Catalog.load(sqlite_options(tmp_path, **{"catalog-key": "two"}))
    one.create_database("db")
    one.create_table("db.t", SCHEMA)
    two.create_database("other")
    db = tmp_path / "catalog.db"
    assert _rows(db, "SELECT catalog_key, database_name, table_name FROM paimon_tables") == [
        ("one", "db", "t")
    ]
    assert _rows(
        db, "SELECT catalog_key, database_name, property_key, property_value FROM paimon_database_properties"
    ) == [
        ("one", "db", "exists", "true"),
        ("one", "db", "location", str(tmp_path / "wh" / "db.db")),
        ("two", "other", "exists", "true"),
        ("two", "other", "location", str(tmp_path / "wh" / "other.db")),
    ]
    assert (one.list_databases(), two.list_databases()) == (["db"], ["other"])
    # A table's files live where Java's catalog puts them.
    assert SchemaManager(one.storage, str(tmp_path / "wh" / "db.db" / "t")).latest() is not None


def test_a_failed_creation_leaves_no_row(tmp_path: Path) -> None:
    """The row and the first schema file come together: when the schema cannot be written (here a
    leftover directory already holds one), the row is rolled back."""
    catalog = Catalog.load(sqlite_options(tmp_path), create=True)
    catalog.create_database("db")
    leftover = str(tmp_path / "wh" / "db.db" / "t")
    fields, _ = fields_from_arrow_schema(pa.schema([("x", pa.string())]))
    catalog.storage.mkdirs(leftover)
    SchemaManager(catalog.storage, leftover).create(TableSchema.new(fields, (), (), {}, None))
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.t", SCHEMA)
    assert catalog.list_tables("db") == []
    assert _rows(tmp_path / "catalog.db", "SELECT table_name FROM paimon_tables") == []


def test_jdbc_names_are_lower_case(tmp_path: Path) -> None:
    catalog = Catalog.load(sqlite_options(tmp_path), create=True)
    with pytest.raises(CatalogError, match="lower-case"):
        catalog.create_database("Db")
    catalog.create_database("db")
    with pytest.raises(CatalogError, match="lower-case"):
        catalog.create_table("db.T", SCHEMA)


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'uri'"):
        Catalog.load({"warehouse": str(tmp_path), "metastore": "jdbc"})
    with pytest.raises(ConfigError, match="jdbc:sqlite: and jdbc:postgresql:"):
        Catalog.load({"warehouse": str(tmp_path), "metastore": "jdbc", "uri": "jdbc:oracle:thin:@x"})
    with pytest.raises(ConfigError, match=r"'rest'.*not supported"):
        Catalog.load({"warehouse": str(tmp_path), "metastore": "rest", "uri": "http://x"})
    with pytest.raises(ConfigError, match="unknown metastore 'jbdc'"):
        Catalog.load({"warehouse": str(tmp_path), "metastore": "jbdc"})
    with pytest.raises(ConfigError, match="'warehouse'"):
        Catalog.load({"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'c.db'}"})
    with pytest.raises(ConfigError, match="did you mean 'metastore'"):
        Catalog.load({"warehouse": str(tmp_path), "metastor": "jdbc"})
    # Catalog.open takes the same options next to the warehouse.
    opened = Catalog.open(str(tmp_path), metastore="jdbc", uri=f"jdbc:sqlite:{tmp_path / 'c.db'}")
    assert isinstance(opened, JdbcCatalog)


def test_an_unreachable_database_is_a_typed_error(tmp_path: Path) -> None:
    options = sqlite_options(tmp_path, uri=f"jdbc:sqlite:{tmp_path / 'no' / 'such' / 'dir' / 'c.db'}")
    with pytest.raises(CatalogUnavailableError, match="unable to open database") as failed:
        Catalog.load(options, create=True)
    assert failed.value.uri.endswith("c.db")


def test_concurrent_writers_through_one_catalog_database(tmp_path: Path) -> None:
    """Threads, each with its own catalog handle, create the same table (once) and append to it."""
    Catalog.load(sqlite_options(tmp_path), create=True).create_database("db")
    writers, appends = 4, 3
    errors: list[BaseException] = []
    start = threading.Barrier(writers)

    def write(worker: int) -> None:
        try:
            catalog = Catalog.load(sqlite_options(tmp_path))
            start.wait()
            table = catalog.create_table("db.t", SCHEMA, exist_ok=True)
            for i in range(appends):
                n = worker * 100 + i
                table.append(pa.table({"id": [n], "name": [f"w{worker}"]}))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    table = Catalog.load(sqlite_options(tmp_path)).get_table("db.t")
    assert sorted(table.to_arrow().column("id").to_pylist()) == sorted(
        w * 100 + i for w in range(writers) for i in range(appends)
    )
    appended = [s.id for s in table.snapshots() if s.commit_kind == CommitKind.APPEND]
    assert len(appended) == writers * appends


class _NoAtomicCreate(MemoryBackend):
    """A store that cannot create a file atomically: commits need the commit lock."""

    capabilities = frozenset({Capability.LIST})

    def __init__(self) -> None:
        self.root = f"memory://locked-{uuid.uuid4().hex}/wh"


def _locked_catalog(tmp_path: Path, storage: _NoAtomicCreate, **extra: str) -> Catalog:
    options = {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", "lock.enabled": "true"}
    return JdbcCatalog(storage.root, storage, {**options, **extra})


@pytest.fixture
def no_atomic_store() -> _NoAtomicCreate:
    return _NoAtomicCreate()


def test_the_commit_lock_serialises_writers_of_a_store_without_atomic_create(
    tmp_path: Path, no_atomic_store: _NoAtomicCreate
) -> None:
    catalog = _locked_catalog(tmp_path, no_atomic_store)
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA)
    writers, appends = 4, 3
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            table = _locked_catalog(tmp_path, no_atomic_store).get_table("db.t")
            for i in range(appends):
                table.append(pa.table({"id": [worker * 100 + i], "name": ["x"]}))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    table = catalog.get_table("db.t")
    ids = [s.id for s in table.snapshots()]
    assert ids == list(range(1, len(ids) + 1))
    assert len([s for s in table.snapshots() if s.commit_kind == CommitKind.APPEND]) == writers * appends
    assert table.to_arrow().num_rows == writers * appends
    assert _rows(tmp_path / "catalog.db", "SELECT lock_id FROM paimon_distributed_locks") == []


def test_the_commit_lock_is_javas_row(tmp_path: Path, no_atomic_store: _NoAtomicCreate) -> None:
    """A row '<catalog-key>.<db>.<table>' in paimon_distributed_locks, held (say, by a Java writer), keeps our
    commit waiting, then failing with nothing published."""
    catalog = _locked_catalog(tmp_path, no_atomic_store, **{"catalog-key": "cat"})
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA).append(pa.table({"id": [1], "name": ["a"]}))
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        conn.execute(
            "INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES ('cat.db.t', 3600)"
        )
    table = catalog.get_table("db.t", **{"lock-acquire-timeout": "300 ms", "lock-check-max-sleep": "50 ms"})
    with pytest.raises(LockAcquireTimeoutError, match=r"cat\.db\.t"):
        table.append(pa.table({"id": [2], "name": ["b"]}))
    assert [s.id for s in table.snapshots()] == [1]
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        conn.execute("DELETE FROM paimon_distributed_locks")
    table.append(pa.table({"id": [2], "name": ["b"]}))
    assert [s.id for s in table.snapshots()] == [1, 2]


def test_an_expired_lock_of_a_dead_writer_is_taken_over(
    tmp_path: Path, no_atomic_store: _NoAtomicCreate
) -> None:
    catalog = _locked_catalog(tmp_path, no_atomic_store)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA)
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        conn.execute(
            "INSERT INTO paimon_distributed_locks (lock_id, acquired_at, expire_time_seconds) "
            "VALUES ('jdbc.db.t', datetime('now', '-1 hour'), 60)"
        )
    table.append(pa.table({"id": [1], "name": ["a"]}))
    assert [s.id for s in table.snapshots()] == [1]


def test_the_cli_opens_a_jdbc_catalog_from_catalog_conf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = sqlite_options(tmp_path)
    catalog = Catalog.load(options, create=True)
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA).append(pa.table({"id": [1, 2], "name": ["a", "b"]}))
    # A directory with a schema but no row is no table of the jdbc catalog.
    Catalog.open(options["warehouse"]).create_table("db.stray", SCHEMA)
    conf = ["--catalog-conf", "metastore=jdbc", "--catalog-conf", f"uri={options['uri']}"]
    capsys.readouterr()
    assert main(["read", options["warehouse"], "--table", "db.t", *conf]) == 0
    assert sorted(json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()) == [1, 2]
    assert main(["read", options["warehouse"], "--table", "db.stray", *conf]) == 1
    assert "db.stray" in capsys.readouterr().err


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=0, max_size=40))
def test_any_name_is_refused_or_round_trips(tmp_path: Path, name: str) -> None:
    """Whatever a table's name, the jdbc catalog refuses it with a CatalogError or keeps it exactly, and the
    other tables stay as they were."""
    options = {
        "warehouse": f"memory://names-{uuid.uuid4().hex}/wh",
        "metastore": "jdbc",
        "uri": f"jdbc:sqlite:{tmp_path / f'{uuid.uuid4().hex}.db'}",
    }
    catalog = Catalog.load(options, create=True)
    catalog.create_database("db")
    catalog.create_table("db.keep", SCHEMA)
    try:
        catalog.create_table(f"db.{name}", SCHEMA)
    except CatalogError:
        assert catalog.list_tables("db") == ["keep"]
        return
    assert sorted(Catalog.load(options).list_tables("db")) == sorted({"keep", name})
    assert catalog.get_table(f"db.{name}").to_arrow().num_rows == 0


def test_a_rename_onto_leftover_files_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    catalog = Catalog.load(sqlite_options(tmp_path), create=True)
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA).append(pa.table({"id": [1], "name": ["a"]}))
    leftover = tmp_path / "wh" / "db.db" / "u" / "bucket-0"
    leftover.mkdir(parents=True)
    (leftover / "data-stale.parquet").write_bytes(b"stale")
    with pytest.raises(CatalogError, match="holds files"):
        catalog.rename_table("db.t", "db.u")
    assert catalog.list_tables("db") == ["t"]
    assert catalog.get_table("db.t").to_arrow().num_rows == 1
