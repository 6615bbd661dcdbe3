"""``CatalogBehaviourTests``: one behaviour suite every catalog (metastore) passes.

Subclass it in a test module and give it a ``catalog_options`` fixture: the options of
:meth:`paimon_core.Catalog.load` for a fresh, empty catalog (``warehouse`` included). Each test opens the
catalog twice through those options, so what one handle does, a second one (another process, in effect)
must see::

    class TestSqliteCatalog(CatalogBehaviourTests):
        @pytest.fixture
        def catalog_options(self, tmp_path):
            return {"warehouse": str(tmp_path / "wh"), "metastore": "jdbc",
                    "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}"}

The tests check databases, tables, renames, drops, properties and the typed errors of missing and
existing objects and of hostile names, with the data read back as the ground truth.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.errors import (
    CatalogError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

__all__ = ["HOSTILE_NAMES", "SYSTEM_LOOKALIKES", "CatalogBehaviourTests"]

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])

HOSTILE_NAMES = ("", " x", "x ", "../x", "a/b", "a\\b", "a.b", "a\x00b", ".", "..")
"""Names every catalog refuses: they would escape the warehouse, or name something else than they say."""
SYSTEM_LOOKALIKES = ("t$snapshots", "a$b")
"""Table names every catalog refuses: '$' separates a table from its system tables."""


def _rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "name": [f"n{i}" for i in range(start, start + n)]})


class CatalogBehaviourTests:
    """The behaviour of a catalog; subclasses provide the ``catalog_options`` fixture."""

    @pytest.fixture
    def catalog_options(self) -> Mapping[str, str]:
        raise NotImplementedError("a subclass provides catalog_options")

    def open(self, options: Mapping[str, str]) -> Catalog:
        return Catalog.load(options, create=True)

    def test_databases(self, catalog_options: Mapping[str, str]) -> None:
        catalog, other = self.open(catalog_options), self.open(catalog_options)
        assert catalog.list_databases() == []
        catalog.create_database("db1")
        catalog.create_database("db2")
        catalog.create_database("db1", exist_ok=True)
        assert other.list_databases() == ["db1", "db2"]
        assert other.database_exists("db1") and not other.database_exists("db3")
        with pytest.raises(DatabaseAlreadyExistsError) as exists:
            other.create_database("db1")
        assert exists.value.database == "db1"
        other.drop_database("db2")
        assert catalog.list_databases() == ["db1"]
        with pytest.raises(DatabaseNotFoundError) as missing:
            catalog.drop_database("db2")
        assert missing.value.database == "db2"
        catalog.drop_database("db2", missing_ok=True)

    def test_tables_round_trip(self, catalog_options: Mapping[str, str]) -> None:
        catalog, other = self.open(catalog_options), self.open(catalog_options)
        catalog.create_database("db")
        table = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1"})
        table.append(_rows(3))
        assert other.list_tables("db") == ["t"]
        assert other.table_exists("db.t") and not other.table_exists("db.u")
        assert other.get_table("db.t").to_arrow().sort_by("id").equals(_rows(3))
        with pytest.raises(TableAlreadyExistsError) as exists:
            other.create_table("db.t", SCHEMA)
        assert exists.value.identifier == "db.t"
        again = other.create_table("db.t", SCHEMA, exist_ok=True)
        assert again.to_arrow().num_rows == 3
        altered = other.add_column("db.t", "extra", pa.int32())
        assert altered.schema.field_names[-1] == "extra"
        assert catalog.get_table("db.t").to_arrow().column("extra").null_count == 3

    def test_missing_objects_are_typed_errors(self, catalog_options: Mapping[str, str]) -> None:
        catalog = self.open(catalog_options)
        catalog.create_database("db")
        catalog.create_table("db.t", SCHEMA)
        with pytest.raises(TableNotFoundError) as missing:
            catalog.get_table("db.u")
        assert missing.value.identifier == "db.u"
        with pytest.raises(TableNotFoundError, match="no database 'nodb'"):
            catalog.get_table("nodb.t")
        with pytest.raises(DatabaseNotFoundError):
            catalog.list_tables("nodb")
        with pytest.raises(DatabaseNotFoundError):
            catalog.create_table("nodb.t", SCHEMA)
        with pytest.raises(TableNotFoundError):
            catalog.drop_table("db.u")
        catalog.drop_table("db.u", missing_ok=True)
        with pytest.raises(TableNotFoundError):
            catalog.alter_options("db.u", {"snapshot.num-retained.min": "5"})
        with pytest.raises(DatabaseNotFoundError):
            catalog.database_properties("nodb")
        assert catalog.list_tables("db") == ["t"]

    def test_drop_table(self, catalog_options: Mapping[str, str]) -> None:
        catalog, other = self.open(catalog_options), self.open(catalog_options)
        catalog.create_database("db")
        catalog.create_table("db.t", SCHEMA).append(_rows(2))
        catalog.create_table("db.keep", SCHEMA).append(_rows(1))
        other.drop_table("db.t")
        assert catalog.list_tables("db") == ["keep"]
        with pytest.raises(TableNotFoundError):
            catalog.get_table("db.t")
        # A new table of the dropped name starts empty.
        assert catalog.create_table("db.t", SCHEMA).to_arrow().num_rows == 0
        assert catalog.get_table("db.keep").to_arrow().num_rows == 1

    def test_drop_database(self, catalog_options: Mapping[str, str]) -> None:
        catalog = self.open(catalog_options)
        catalog.create_database("db")
        catalog.create_database("other")
        catalog.create_table("db.t", SCHEMA).append(_rows(2))
        catalog.create_table("other.t", SCHEMA).append(_rows(1))
        with pytest.raises(DatabaseNotEmptyError):
            catalog.drop_database("db")
        assert catalog.get_table("db.t").to_arrow().num_rows == 2
        catalog.drop_database("db", cascade=True)
        assert catalog.list_databases() == ["other"]
        with pytest.raises(TableNotFoundError):
            catalog.get_table("db.t")
        catalog.create_database("db")
        assert catalog.list_tables("db") == []
        assert catalog.get_table("other.t").to_arrow().num_rows == 1

    def test_rename_table(self, catalog_options: Mapping[str, str]) -> None:
        catalog, other = self.open(catalog_options), self.open(catalog_options)
        catalog.create_database("db")
        catalog.create_database("db2")
        catalog.create_table("db.t", SCHEMA).append(_rows(3))
        catalog.create_table("db.taken", SCHEMA)
        renamed = other.rename_table("db.t", "db.u")
        assert renamed.to_arrow().sort_by("id").equals(_rows(3))
        assert catalog.list_tables("db") == ["taken", "u"]
        with pytest.raises(TableNotFoundError):
            catalog.get_table("db.t")
        moved = catalog.rename_table("db.u", "db2.v")
        moved.append(_rows(1, start=3))
        assert other.get_table("db2.v").to_arrow().sort_by("id").equals(_rows(4))
        assert other.list_tables("db") == ["taken"]
        with pytest.raises(TableAlreadyExistsError):
            catalog.rename_table("db2.v", "db.taken")
        with pytest.raises(TableNotFoundError):
            catalog.rename_table("db.missing", "db.other")
        with pytest.raises(DatabaseNotFoundError):
            catalog.rename_table("db2.v", "nodb.v")
        assert other.get_table("db2.v").to_arrow().num_rows == 4
        assert other.get_table("db.taken").to_arrow().num_rows == 0

    def test_hostile_names_are_refused(self, catalog_options: Mapping[str, str]) -> None:
        catalog = self.open(catalog_options)
        catalog.create_database("db")
        for name in HOSTILE_NAMES:
            with pytest.raises(CatalogError):
                catalog.create_database(name)
            with pytest.raises(CatalogError):
                catalog.create_table(f"db.{name}" if name else "db.", SCHEMA)
        catalog.create_table("db.t", SCHEMA)
        for name in SYSTEM_LOOKALIKES:
            with pytest.raises(CatalogError):
                catalog.create_table(f"db.{name}", SCHEMA)
            with pytest.raises(CatalogError):
                catalog.rename_table("db.t", f"db.{name}")
        assert catalog.list_databases() == ["db"]
        assert catalog.list_tables("db") == ["t"]

    def test_names_are_data_never_code(self, catalog_options: Mapping[str, str]) -> None:
        """A name that reads as SQL is a name like any other: it round-trips and harms nothing."""
        catalog = self.open(catalog_options)
        catalog.create_database("db")
        catalog.create_table("db.keep", SCHEMA).append(_rows(1))
        name = "x'; delete from paimon_tables; --"
        catalog.create_table(f"db.{name}", SCHEMA).append(_rows(2))
        assert sorted(catalog.list_tables("db")) == sorted(["keep", name])
        assert catalog.get_table(f"db.{name}").to_arrow().num_rows == 2
        catalog.drop_table(f"db.{name}")
        assert catalog.list_tables("db") == ["keep"]

    def test_database_properties(self, catalog_options: Mapping[str, str]) -> None:
        catalog, other = self.open(catalog_options), self.open(catalog_options)
        if catalog.metastore == "filesystem":
            # Java's filesystem catalog drops them with a warning; here that is refused, naming the way out.
            with pytest.raises(CatalogError, match="metastore = jdbc"):
                catalog.create_database("db", properties={"owner": "me"})
            assert catalog.list_databases() == []
            catalog.create_database("db")
            assert catalog.database_properties("db") == {}
            with pytest.raises(CatalogError, match="metastore = jdbc"):
                catalog.alter_database("db", {"owner": "me"})
            return
        catalog.create_database("db", properties={"owner": "me", "comment": "it's"})
        found = other.database_properties("db")
        assert {k: found[k] for k in ("owner", "comment")} == {"owner": "me", "comment": "it's"}
        assert found["location"].endswith("db.db")
        other.alter_database("db", {"owner": "you", "team": "t"}, remove=["comment"])
        found = catalog.database_properties("db")
        assert (found["owner"], found["team"], "comment" in found) == ("you", "t", False)
        with pytest.raises(CatalogError):
            catalog.create_database("db2", properties={"exists": "false"})
        assert catalog.list_databases() == ["db"]
