"""alter_table: each change as Paimon applies it, and the refused ones with their reasons."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConfigError, Move, SchemaChange, SchemaError
from paimon_core.types import IntType

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string()),
        pa.field("id", pa.int32(), nullable=False),
        pa.field("price", pa.decimal128(10, 2)),
        pa.field("name", pa.string()),
    ]
)


@pytest.fixture()
def catalog_with_table(catalog: Catalog) -> Catalog:
    table = catalog.create_table(
        "db.t", SCHEMA, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "id"}
    )
    table.append(
        pa.table({"dt": ["d"], "id": [1], "price": [pa.scalar(1, pa.decimal128(10, 2)).as_py()], "name": ["a"]},
                 schema=SCHEMA)
    )  # fmt: skip
    return catalog


def test_changes_apply_and_old_files_read_under_the_new_schema(catalog_with_table: Catalog) -> None:
    catalog = catalog_with_table
    table = catalog.alter_table(
        "db.t",
        [
            SchemaChange.add_column("note", pa.string(), "a comment", Move.after("note", "dt")),
            SchemaChange.rename_column("name", "label"),
            SchemaChange.update_column_type("id", pa.int64(), keep_nullability=True),
            SchemaChange.update_column_type("price", pa.decimal128(12, 3)),
            SchemaChange.update_column_comment("label", "what it is"),
            SchemaChange.update_column_nullability("id", True),
            SchemaChange.set_option("snapshot.num-retained.max", "19"),
            SchemaChange.update_comment("the table"),
        ],
    )
    assert table.arrow_schema.names == ["dt", "note", "id", "price", "label"]
    assert table.schema.field_by_name("label").description == "what it is"
    assert table.schema.field_by_name("label").id == 3  # a rename keeps the field id
    assert table.schema.comment == "the table" and table.options["snapshot.num-retained.max"] == "19"
    assert table.schema.options["bucket-key"] == "id"
    row = table.to_arrow().to_pylist()[0]
    assert row["note"] is None and row["label"] == "a" and row["id"] == 1
    assert table.arrow_schema.field("id").type == pa.int64() and str(row["price"]) == "1.000"
    table = catalog.alter_table(
        "db.t", [SchemaChange.drop_column("note"), SchemaChange.remove_option("snapshot.num-retained.max")]
    )
    assert table.arrow_schema.names == ["dt", "id", "price", "label"]
    assert "snapshot.num-retained.max" not in table.options


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (SchemaChange.drop_column("dt"), "cannot drop partition column 'dt'"),
        (SchemaChange.rename_column("dt", "day"), "cannot rename partition column"),
        (SchemaChange.update_column_type("dt", pa.int32()), "partition column"),
        (SchemaChange.update_column_type("id", pa.int16()), "narrower integer"),
        (SchemaChange.update_column_type("price", pa.decimal128(5, 2)), "cannot hold"),
        (SchemaChange.update_column_type("name", pa.int64()), "only widening"),
        (SchemaChange.update_column_nullability("name", False), "cannot become NOT NULL"),
        (SchemaChange.add_column("name", pa.int32()), "already exists"),
        (SchemaChange.add_column("x", IntType(nullable=False)), "cannot be NOT NULL"),
        (SchemaChange.rename_column("price", "name"), "that column exists"),
        (SchemaChange.drop_column("missing"), "does not exist"),
        (SchemaChange.drop_column("id"), "bucket-key"),
    ],
)
def test_refused_changes_say_why_and_change_nothing(
    catalog_with_table: Catalog, change: SchemaChange, reason: str
) -> None:
    catalog = catalog_with_table
    before = catalog.get_table("db.t").schema
    with pytest.raises(SchemaError, match=reason):
        catalog.alter_table("db.t", change)
    assert catalog.get_table("db.t").schema == before


def test_option_changes_are_validated(catalog_with_table: Catalog) -> None:
    with pytest.raises(ConfigError, match="did you mean"):
        catalog_with_table.alter_table("db.t", SchemaChange.set_option("snapshot.num-retained.maxx", "3"))
    with pytest.raises(ConfigError, match="cannot become bucket = -1"):
        catalog_with_table.alter_table("db.t", SchemaChange.set_option("bucket", "-1"))
    with pytest.raises(ConfigError, match="fixed when the table is created"):
        catalog_with_table.alter_table("db.t", SchemaChange.set_option("bucket-key", "name"))
