"""Arrow interchange through the PyCapsule interface, against the real polars and duckdb.

Data goes in from any object exporting ``__arrow_c_stream__``; tables and scans export it, so Arrow-native
tools read them without conversions. A missing optional library is a typed error naming what to install.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.errors import MissingDependencyError, SchemaError
from paimon_core.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    catalog = Catalog.open(str(tmp_path))
    catalog.create_database("db")
    return catalog


def _rows(table: Table) -> list[tuple[int, str | None]]:
    return sorted((r["id"], r["name"]) for r in table.to_arrow().to_pylist())


def test_polars_and_duckdb_data_goes_in(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pl.DataFrame({"id": [1, 2], "name": ["a", None]}))
    table.append(duckdb.sql("SELECT 3::BIGINT AS id, 'c' AS name UNION ALL SELECT 4, 'd'"))
    assert _rows(table) == [(1, "a"), (2, None), (3, "c"), (4, "d")]
    table.overwrite(pl.DataFrame({"id": [9], "name": ["z"]}))
    assert _rows(table) == [(9, "z")]


def test_a_primary_key_table_upserts_polars_rows(catalog: Catalog) -> None:
    table = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    table.append(pl.DataFrame({"id": [1, 2], "name": ["a", "b"]}))
    table.append(pl.DataFrame({"id": [2], "name": ["B"]}))
    assert _rows(table) == [(1, "a"), (2, "B")]


def test_a_single_array_capsule_goes_in(catalog: Catalog) -> None:
    class OneBatch:  # only the array protocol, as some libraries export a single batch
        def __init__(self, batch: pa.RecordBatch) -> None:
            self.batch = batch

        def __arrow_c_array__(self, requested_schema: object | None = None) -> object:
            return self.batch.__arrow_c_array__(requested_schema)

    table = catalog.create_table("db.t", SCHEMA)
    table.append(OneBatch(pa.record_batch({"id": pa.array([5], pa.int64()), "name": ["e"]})))
    assert _rows(table) == [(5, "e")]


def test_data_that_does_not_fit_is_refused_as_before(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    with pytest.raises(SchemaError, match="'id'"):
        table.append(pl.DataFrame({"id": ["not a number"], "name": ["a"]}))
    assert table.latest_snapshot() is None


def test_tables_and_scans_export_arrow(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["name"])
    table.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "b"]}, schema=SCHEMA))
    assert sorted(pl.DataFrame(table).rows()) == [(1, "a"), (2, "b"), (3, "b")]
    assert pa.table(table).sort_by("id") == table.to_arrow().sort_by("id")
    scan = table.scan(filter=[("name", "=", "b")])
    assert sorted(pa.table(scan).column("id").to_pylist()) == [2, 3]
    orders = table  # noqa: F841 (duckdb finds Arrow-exporting Python variables by name)
    relation = duckdb.sql("SELECT sum(id) FROM orders")
    assert relation is not None
    assert relation.fetchall() == [(6,)]
    assert sorted(table.to_polars(filter=[("id", ">", 1)]).get_column("id").to_list()) == [2, 3]
    connection = duckdb.connect()
    assert table.to_duckdb(connection=connection).aggregate("max(id)").fetchall() == [(3,)]


@pytest.mark.parametrize(
    ("module", "call", "extra"),
    [
        ("polars", lambda t: t.to_polars(), "polars"),
        ("duckdb", lambda t: t.to_duckdb(), "duckdb"),
        ("pandas", lambda t: t.to_pandas(), "pandas"),
    ],
)
def test_a_missing_library_names_its_install(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, module: str, call: object, extra: str
) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    with pytest.raises(MissingDependencyError) as raised:
        call(table)  # type: ignore[operator]
    assert str(raised.value) == (
        f"to_{module}() needs {module}, which is not installed: pip install 'paimon-core[{extra}]'"
    )
    assert isinstance(raised.value, ImportError)
