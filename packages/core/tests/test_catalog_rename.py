"""Catalog.rename_table, and column comments given as Arrow field metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.errors import DatabaseNotFoundError, TableAlreadyExistsError, TableNotFoundError


def test_rename_moves_the_table_with_its_history(data: Any, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", data.schema, partition_keys=["dt"])
    table.append(data.events(0, 10, days=2))
    table.append(data.events(10, 5))
    catalog.create_database("other")
    renamed = catalog.rename_table("db.t", "other.t2")
    assert renamed.identifier == "other.t2"
    assert catalog.list_tables("db") == [] and catalog.list_tables("other") == ["t2"]
    assert not (Path(warehouse) / "db.db" / "t").exists()
    assert data.sorted_rows(renamed.to_arrow()) == data.sorted_rows(
        pa.concat_tables([data.events(0, 10, days=2), data.events(10, 5)])
    )
    assert [s.id for s in renamed.snapshots()] == [1, 2]
    assert renamed.to_arrow(snapshot_id=1).num_rows == 10  # older snapshots still read


def test_rename_refuses_what_is_missing_or_taken(data: Any, catalog: Catalog) -> None:
    catalog.create_table("db.a", data.schema)
    catalog.create_table("db.b", data.schema)
    with pytest.raises(TableNotFoundError):
        catalog.rename_table("db.nope", "db.c")
    with pytest.raises(TableAlreadyExistsError):
        catalog.rename_table("db.a", "db.b")
    with pytest.raises(DatabaseNotFoundError):
        catalog.rename_table("db.a", "nodb.a")
    assert catalog.list_tables("db") == ["a", "b"]


def test_a_comment_in_arrow_metadata_is_the_column_description(catalog: Catalog) -> None:
    schema = pa.schema(
        [pa.field("id", pa.int64(), metadata={"comment": "the key"}), pa.field("v", pa.string())]
    )
    table = catalog.create_table("db.t", schema)
    assert [f.description for f in table.schema.fields] == ["the key", None]
