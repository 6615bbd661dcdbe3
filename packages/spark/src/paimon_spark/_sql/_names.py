"""Which names of a statement are Paimon's: catalogs from the session conf, the session's current namespace,
temporary views of Paimon tables, and the resolution of ``catalog.db.t`` / ``db.t`` / ``t`` against them.

A catalog is any ``spark.sql.catalog.<name>`` with a ``.warehouse`` whose class is unset or Paimon's
(``org.apache.paimon.spark.SparkCatalog``, ``SparkGenericCatalog``): Spark itself is never asked to load it.
Its other ``spark.sql.catalog.<name>.<key>`` settings are catalog (storage) options, except
``table-default.<key>``, which tables created through SQL get as options.

Names resolve as Spark resolves them, with the current namespace kept here (``USE paimon.db`` never reaches
Spark): a first part naming a catalog selects it; otherwise the current catalog, when it is a Paimon one,
takes ``db.t`` and ``t``. A one-part name is a CTE of the statement, a Paimon temporary view
(:func:`paimon_spark.create_temp_view`) or a Spark temporary view before it is a table of the current catalog.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from paimon_core import Catalog
from paimon_core.errors import ConfigError
from paimon_core.redaction import redacted_repr
from paimon_core.table import split_system_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CatalogConf",
    "PaimonName",
    "Resolver",
    "SqlState",
    "ViewDef",
    "session_catalogs",
    "state_of",
]

CATALOG_PREFIX = "spark.sql.catalog."
PAIMON_CATALOG_CLASSES = (
    "org.apache.paimon.spark.SparkCatalog",
    "org.apache.paimon.spark.SparkGenericCatalog",
)
DEFAULT_DATABASE = "default"
SERVED_METASTORES = ("filesystem", "jdbc")
"""The catalogs' ``metastore`` values served from Python (paimon_core.Catalog.load)."""
_TABLE_DEFAULT = "table-default."
# Settings of Paimon's Spark catalog that mean nothing to a filesystem warehouse opened from Python.
_IGNORED_KEYS = frozenset(
    {"cache-enabled", "cache.expiration-interval", "cache.partition.max-num", "defaultdatabase"}
)


@dataclass(frozen=True)
class CatalogConf:
    """A Paimon catalog configured in the session: its warehouse and options."""

    name: str
    warehouse: str
    options: dict[str, str] = field(default_factory=dict)
    table_defaults: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return redacted_repr(self, ("options", "table_defaults"))

    def open(self, *, create: bool = False) -> Catalog:
        """The catalog; ``create`` makes a missing warehouse (for DDL that adds to it)."""
        options: dict[str, Any] = dict(self.options)
        return Catalog.open(self.warehouse, create=create, **options)


def session_catalogs(conf: Mapping[str, str]) -> dict[str, CatalogConf]:
    """The Paimon catalogs configured in a session's conf, by name.

    Raises:
        ConfigError: a catalog's ``metastore`` is neither ``filesystem`` nor ``jdbc`` (``rest`` and ``hive`` are
            not served from Python).
    """
    settings: dict[str, dict[str, str]] = {}
    for key, value in conf.items():
        if not key.startswith(CATALOG_PREFIX):
            continue
        name, dot, rest = key[len(CATALOG_PREFIX) :].partition(".")
        if dot and rest:
            settings.setdefault(name, {})[rest] = value
    catalogs = {}
    for name, keys in settings.items():
        implementation = conf.get(CATALOG_PREFIX + name)
        if "warehouse" not in keys or (implementation and implementation not in PAIMON_CATALOG_CLASSES):
            continue
        metastore = keys.get("metastore", "filesystem").strip().lower()
        if metastore not in SERVED_METASTORES:
            raise ConfigError(
                f"catalog {name!r}: metastore {metastore!r} is not served from Python "
                f"(only {', '.join(SERVED_METASTORES)})",
                "metastore",
            )
        warehouse = keys.pop("warehouse")
        defaults = {k[len(_TABLE_DEFAULT) :]: v for k, v in keys.items() if k.startswith(_TABLE_DEFAULT)}
        options = {
            k: v
            for k, v in keys.items()
            if not k.startswith(_TABLE_DEFAULT) and k.lower() not in _IGNORED_KEYS
        }
        catalogs[name] = CatalogConf(name, warehouse, options, defaults)
    return catalogs


@dataclass(frozen=True)
class ViewDef:
    """A temporary view of a Paimon table made by :func:`paimon_spark.create_temp_view`."""

    table: str
    options: dict[str, str]


@dataclass
class SqlState:
    """What one session's statements change: the current namespace and the Paimon temporary views."""

    catalog: str | None = None  # a Paimon catalog, or None while Spark's own catalog is the current one
    database: str = DEFAULT_DATABASE
    views: dict[str, ViewDef] = field(default_factory=dict)
    registered: bool = False


_STATES: weakref.WeakKeyDictionary[SparkSession, SqlState] = weakref.WeakKeyDictionary()


def state_of(spark: SparkSession) -> SqlState:
    """The SQL state of ``spark`` (kept as long as the session object lives)."""
    state = _STATES.get(spark)
    if state is None:
        state = _STATES[spark] = SqlState()
    return state


@dataclass(frozen=True)
class PaimonName:
    """A table (or system table, ``t$snapshots``) of a Paimon catalog, or a Paimon temporary view's table."""

    catalog: CatalogConf | None
    database: str
    table: str
    view: ViewDef | None = None

    @property
    def identifier(self) -> str:
        """``db.t`` (``db.t$snapshots``), as the data source and the catalog take it (a view: its table)."""
        return self.view.table if self.view is not None else f"{self.database}.{self.table}"

    @property
    def display(self) -> str:
        if self.catalog is None:
            return self.table
        return f"{self.catalog.name}.{self.identifier}"

    @property
    def system(self) -> str | None:
        return split_system_name(self.table)[1]

    def source_options(self) -> dict[str, str]:
        """Options of ``spark.read.format("paimon")`` / ``df.write.format("paimon")`` for this table."""
        if self.view is not None:
            return {"table": self.view.table, **self.view.options}
        assert self.catalog is not None
        return {
            "table": self.identifier,
            "warehouse": self.catalog.warehouse,
            "catalog": self.catalog.name,
            **self.catalog.options,
        }

    def open_catalog(self, *, create: bool = False) -> Catalog:
        """The catalog holding the table.

        Raises:
            ConfigError: a view over a table directory (there is no catalog to change).
        """
        if self.catalog is not None:
            return self.catalog.open(create=create)
        assert self.view is not None
        warehouse = self.view.options.get("warehouse")
        if warehouse is None:
            raise ConfigError(f"view over {self.view.table!r} names a table directory, not a catalog table")
        storage: dict[str, Any] = {
            k: v for k, v in self.view.options.items() if k not in ("warehouse", "catalog")
        }
        return Catalog.open(warehouse, **storage)


class Resolver:
    """Resolves the names of one statement (see the module docstring)."""

    def __init__(
        self,
        state: SqlState,
        catalogs: Mapping[str, CatalogConf],
        *,
        ctes: Sequence[str] = (),
        spark_view: Callable[[str], bool] | None = None,
    ) -> None:
        self.state = state
        self.catalogs = catalogs
        self.ctes = {c.lower() for c in ctes}
        # Called with a one-part name: whether Spark has a temporary view of that name.
        self._spark_view = spark_view

    def with_ctes(self, ctes: Sequence[str]) -> Resolver:
        """This resolver for a statement whose common table expressions are ``ctes``."""
        return Resolver(self.state, self.catalogs, ctes=ctes, spark_view=self._spark_view)

    @property
    def current(self) -> CatalogConf | None:
        name = self.state.catalog
        return self.catalogs.get(name) if name is not None else None

    def default_catalog(self) -> CatalogConf | None:
        """The catalog of ``CALL sys.x``: the current one, else ``paimon``, else the only one configured."""
        if self.current is not None:
            return self.current
        if "paimon" in self.catalogs:
            return self.catalogs["paimon"]
        if len(self.catalogs) == 1:
            return next(iter(self.catalogs.values()))
        return None

    def database_in(self, catalog: CatalogConf) -> str:
        """The database a name without one means in ``catalog``."""
        return self.state.database if self.state.catalog == catalog.name else DEFAULT_DATABASE

    def table(self, parts: Sequence[str]) -> PaimonName | None:
        """The Paimon table a table name means, or None when it is Spark's."""
        if len(parts) == 3:
            catalog = self.catalogs.get(parts[0])
            return PaimonName(catalog, parts[1], parts[2]) if catalog is not None else None
        if len(parts) == 2:
            catalog = self.catalogs.get(parts[0])
            if catalog is not None:
                return PaimonName(catalog, self.database_in(catalog), parts[1])
            return PaimonName(self.current, parts[0], parts[1]) if self.current is not None else None
        if len(parts) != 1:
            return None
        name = parts[0]
        if name.lower() in self.ctes:
            return None
        view = self.state.views.get(name.lower())
        if view is not None:
            return PaimonName(None, "", name, view)
        if self.current is None or (self._spark_view is not None and self._spark_view(name)):
            return None
        return PaimonName(self.current, self.state.database, name)

    def database(self, parts: Sequence[str]) -> tuple[CatalogConf, str] | None:
        """The Paimon catalog and database a namespace name means, or None when it is Spark's."""
        if len(parts) == 2:
            catalog = self.catalogs.get(parts[0])
            return (catalog, parts[1]) if catalog is not None else None
        if len(parts) == 1 and self.current is not None:
            return self.current, parts[0]
        return None

    def catalog(self, parts: Sequence[str]) -> CatalogConf | None:
        """The Paimon catalog of ``SHOW DATABASES [IN c]``: ``c``, else the current one."""
        if not parts:
            return self.current
        return self.catalogs.get(parts[0]) if len(parts) == 1 else None
