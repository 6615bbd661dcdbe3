"""The jdbc catalog on a real PostgreSQL server: the catalog behaviour suite, concurrent writers under the
catalog's commit lock, and credentials kept out of errors. Each test has its own ``catalog-key``: catalogs
of other keys share the database without seeing each other."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.catalog import JdbcCatalog
from paimon_core.errors import CatalogUnavailableError
from paimon_core.snapshot import CommitKind
from paimon_core.storage import Capability, MemoryBackend
from paimon_storage.emulators import PostgresServer
from paimon_testing.catalogs import SCHEMA, CatalogBehaviourTests

pytestmark = pytest.mark.integration


def pg_options(server: PostgresServer, warehouse: str, **extra: str) -> dict[str, str]:
    return {
        "warehouse": warehouse,
        "metastore": "jdbc",
        "uri": f"jdbc:{server.dsn}",
        "catalog-key": f"k{uuid.uuid4().hex}",
        **extra,
    }


class TestPostgresCatalog(CatalogBehaviourTests):
    @pytest.fixture
    def catalog_options(self, postgres: PostgresServer, tmp_path: Path) -> Mapping[str, str]:
        return pg_options(postgres, str(tmp_path / "wh"))


def test_rows_are_in_javas_tables(postgres: PostgresServer, tmp_path: Path) -> None:
    options = pg_options(postgres, str(tmp_path / "wh"))
    catalog = Catalog.load(options, create=True)
    catalog.create_database("db", properties={"owner": "me"})
    catalog.create_table("db.t", SCHEMA)
    key = options["catalog-key"]
    with psycopg.connect(postgres.dsn) as conn:
        tables = conn.execute(
            "SELECT database_name, table_name FROM paimon_tables WHERE catalog_key = %s", (key,)
        ).fetchall()
        properties = conn.execute(
            "SELECT property_key, property_value FROM paimon_database_properties WHERE catalog_key = %s",
            (key,),
        ).fetchall()
    assert tables == [("db", "t")]
    assert dict(properties) == {"exists": "true", "owner": "me", "location": str(tmp_path / "wh" / "db.db")}


class _NoAtomicCreate(MemoryBackend):
    capabilities = frozenset({Capability.LIST})


def test_writers_of_a_store_without_atomic_create_share_the_catalog_lock(postgres: PostgresServer) -> None:
    storage, warehouse = _NoAtomicCreate(), f"memory://pg-locked-{uuid.uuid4().hex}/wh"
    options = {k: v for k, v in pg_options(postgres, warehouse, **{"lock.enabled": "true"}).items()}
    options.pop("warehouse")
    catalog = JdbcCatalog(warehouse, storage, options)
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA)
    writers, appends = 4, 3
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            table = JdbcCatalog(warehouse, storage, options).get_table("db.t")
            for i in range(appends):
                table.append(pa.table({"id": [worker * 100 + i], "name": ["x"]}))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    table = catalog.get_table("db.t")
    assert len([s for s in table.snapshots() if s.commit_kind == CommitKind.APPEND]) == writers * appends
    assert sorted(table.to_arrow().column("id").to_pylist()) == sorted(
        w * 100 + i for w in range(writers) for i in range(appends)
    )
    with psycopg.connect(postgres.dsn) as conn:
        held = conn.execute(
            "SELECT lock_id FROM paimon_distributed_locks WHERE lock_id = %s",
            (f"{options['catalog-key']}.db.t",),
        ).fetchall()
    assert held == []


def test_passwords_stay_out_of_errors(tmp_path: Path) -> None:
    options = {
        "warehouse": str(tmp_path),
        "metastore": "jdbc",
        "uri": "jdbc:postgresql://127.0.0.1:9/nowhere",
        "jdbc.user": "u",
        "jdbc.password": "s3cret-pw",
    }
    with pytest.raises(CatalogUnavailableError) as failed:
        Catalog.load(options)
    assert "s3cret-pw" not in str(failed.value)
    assert "s3cret-pw" not in repr(failed.value.__cause__)
