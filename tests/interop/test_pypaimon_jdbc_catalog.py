"""One jdbc catalog database (SQLite) shared with pypaimon's JdbcCatalog: each sees the other's databases and
tables, and reads what the other wrote; renames and drops of one are the other's too."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import Catalog

from .conftest import DATABASE, PyPaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])


def _data(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": ids, "name": [f"n{i}" for i in ids], "dt": [f"2024-01-0{1 + i % 3}" for i in ids]},
        schema=SCHEMA,
    )


def _sorted(table: pa.Table) -> pa.Table:
    return table.select(SCHEMA.names).cast(SCHEMA).sort_by("id")


@pytest.fixture
def shared(tmp_path: Path) -> tuple[Catalog, PyPaimon]:
    options = {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", "catalog-key": "shared"}
    warehouse = str(tmp_path / "wh")
    ours = Catalog.load({"warehouse": warehouse, **options}, create=True)
    return ours, PyPaimon(warehouse, options)


def test_each_reads_the_tables_the_other_created_and_wrote(shared: tuple[Catalog, PyPaimon]) -> None:
    ours, theirs = shared
    assert ours.list_databases() == [DATABASE]  # pypaimon created it
    ours.create_database("ours_db")
    assert "ours_db" in theirs.catalog.list_databases()

    ours.create_table(f"{DATABASE}.by_us", SCHEMA, partition_keys=["dt"]).append(_data(0, 10))
    ours.get_table(f"{DATABASE}.by_us").append(_data(10, 5))
    theirs.create_table(f"{DATABASE}.by_them", SCHEMA, partition_keys=["dt"])
    theirs.append(f"{DATABASE}.by_them", _data(100, 7))
    theirs.append(f"{DATABASE}.by_them", _data(107, 3))

    assert ours.list_tables(DATABASE) == ["by_them", "by_us"]
    assert sorted(theirs.catalog.list_tables(DATABASE)) == ["by_them", "by_us"]
    assert _sorted(theirs.read(f"{DATABASE}.by_us")).equals(
        _sorted(ours.get_table(f"{DATABASE}.by_us").to_arrow())
    )
    assert _sorted(theirs.read(f"{DATABASE}.by_us")).equals(_data(0, 15))
    assert _sorted(ours.get_table(f"{DATABASE}.by_them").to_arrow()).equals(_data(100, 10))


def test_renames_and_drops_are_shared(shared: tuple[Catalog, PyPaimon]) -> None:
    ours, theirs = shared
    ours.create_table(f"{DATABASE}.t", SCHEMA).append(_data(0, 4))
    ours.rename_table(f"{DATABASE}.t", f"{DATABASE}.renamed")
    assert sorted(theirs.catalog.list_tables(DATABASE)) == ["renamed"]
    assert _sorted(theirs.read(f"{DATABASE}.renamed")).equals(_data(0, 4))
    theirs.create_table(f"{DATABASE}.gone", SCHEMA)
    theirs.catalog.drop_table(f"{DATABASE}.gone", False)
    assert ours.list_tables(DATABASE) == ["renamed"]
    assert not ours.table_exists(f"{DATABASE}.gone")
