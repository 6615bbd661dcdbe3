"""The jdbc catalog (``metastore = jdbc``): which databases and tables exist is kept in a SQLite or PostgreSQL
database, in Java Paimon's ``JdbcCatalog`` tables, so Java Paimon, pypaimon and this project share one catalog.

Tables of the catalog database (Java's ``JdbcUtils``; every row carries the ``catalog_key``, so several
catalogs can share one database):

- ``paimon_tables (catalog_key, database_name, table_name)``: one row per table;
- ``paimon_database_properties (catalog_key, database_name, property_key, property_value)``: a database's
  properties, with ``exists = true`` (a database without tables exists by that row) and ``location``;
- ``paimon_distributed_locks (lock_id, acquired_at, expire_time_seconds)``: the commit lock
  (:mod:`._jdbc_lock`), created when ``lock.enabled`` is true.

A table's files stay at ``<warehouse>/<db>.db/<table>`` (schema, snapshots, data), as in Java. Every catalog
operation is one transaction of the database: a table's row is inserted in the same transaction that writes
its first schema file (a failed write leaves no row), a rename moves the files before the transaction that
changes the row commits. Names are lower case, as Java's jdbc catalog requires.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence

from paimon_core import options as opts
from paimon_core.catalog._filesystem import Catalog, check_new_table, register_metastore, split_identifier
from paimon_core.catalog._sql import Database, Transaction, UniqueViolation, connect_database
from paimon_core.errors import (
    CatalogError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from paimon_core.redaction import get_logger
from paimon_core.schema import SchemaManager, TableSchema
from paimon_core.storage import StorageBackend
from paimon_core.table import Table

__all__ = ["LOCK_TYPE", "JdbcCatalog", "create_lock_table"]

logger = get_logger(__name__)

LOCK_TYPE = "jdbc-catalog"
"""The ``lock.type`` of the commit lock a jdbc catalog hands its tables when ``lock.enabled`` is true."""

_TABLES = "paimon_tables"
_PROPERTIES = "paimon_database_properties"
_LOCKS = "paimon_distributed_locks"
_EXISTS = "exists"
_LOCATION = "location"
_MAX_NAME = 255
_MAX_VALUE = 1000

# Java's DDL (JdbcUtils and the dialects' lock table), made idempotent.
_CREATE_TABLES = f"""CREATE TABLE IF NOT EXISTS {_TABLES} (
catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,
PRIMARY KEY (catalog_key, database_name, table_name))"""
_CREATE_PROPERTIES = f"""CREATE TABLE IF NOT EXISTS {_PROPERTIES} (
catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, property_key VARCHAR(255),
property_value VARCHAR(1000), PRIMARY KEY (catalog_key, database_name, property_key))"""
_CREATE_LOCKS = f"""CREATE TABLE IF NOT EXISTS {_LOCKS} (
lock_id VARCHAR(%d) NOT NULL, acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,
expire_time_seconds BIGINT DEFAULT 0 NOT NULL, PRIMARY KEY (lock_id))"""

_TABLE_ROW = f"SELECT 1 FROM {_TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
_DB_IN_TABLES = f"SELECT 1 FROM {_TABLES} WHERE catalog_key = ? AND database_name = ? LIMIT 1"
_DB_IN_PROPERTIES = f"SELECT 1 FROM {_PROPERTIES} WHERE catalog_key = ? AND database_name = ? LIMIT 1"
_LIST_DATABASES = (
    f"SELECT database_name FROM {_TABLES} WHERE catalog_key = ? "
    f"UNION SELECT database_name FROM {_PROPERTIES} WHERE catalog_key = ?"
)
_LIST_TABLES = f"SELECT table_name FROM {_TABLES} WHERE catalog_key = ? AND database_name = ?"
_INSERT_TABLE = f"INSERT INTO {_TABLES} (catalog_key, database_name, table_name) VALUES (?, ?, ?)"
_DROP_TABLE = f"DELETE FROM {_TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
_RENAME_TABLE = (
    f"UPDATE {_TABLES} SET database_name = ?, table_name = ? "
    "WHERE catalog_key = ? AND database_name = ? AND table_name = ?"
)
_DROP_TABLES_OF = f"DELETE FROM {_TABLES} WHERE catalog_key = ? AND database_name = ?"
_PROPERTIES_OF = (
    f"SELECT property_key, property_value FROM {_PROPERTIES} WHERE catalog_key = ? AND database_name = ?"
)
_INSERT_PROPERTY = f"INSERT INTO {_PROPERTIES} (catalog_key, database_name, property_key, property_value) VALUES (?, ?, ?, ?)"
_UPDATE_PROPERTY = (
    f"UPDATE {_PROPERTIES} SET property_value = ? "
    "WHERE catalog_key = ? AND database_name = ? AND property_key = ?"
)
_DELETE_PROPERTY = (
    f"DELETE FROM {_PROPERTIES} WHERE catalog_key = ? AND database_name = ? AND property_key = ?"
)
_DROP_PROPERTIES_OF = f"DELETE FROM {_PROPERTIES} WHERE catalog_key = ? AND database_name = ?"


def _check_jdbc_name(kind: str, name: str) -> str:
    if name != name.lower():
        raise CatalogError(
            f"invalid {kind} name {name!r}: the jdbc catalog takes lower-case names only (as Java)"
        )
    if len(name) > _MAX_NAME:
        raise CatalogError(f"invalid {kind} name {name[:40]!r}...: longer than {_MAX_NAME} characters")
    return name


def create_lock_table(database: Database, key_max_length: int) -> None:
    """Create Java's lock table if it is missing (a concurrent creator may win the race: that is fine)."""
    with contextlib.suppress(UniqueViolation), database.transaction() as tx:
        tx.execute(_CREATE_LOCKS % int(key_max_length))


class JdbcCatalog(Catalog):
    """A catalog whose databases and tables are rows of a SQLite or PostgreSQL database (see the module
    docstring); open it with :meth:`Catalog.load` or :meth:`Catalog.open` and ``metastore = jdbc``.

    Raises:
        ConfigError: no ``uri``, or an unsupported one.
        CatalogUnavailableError: the database cannot be reached.
    """

    metastore = "jdbc"

    def __init__(self, warehouse: str, storage: StorageBackend, options: Mapping[str, str]) -> None:
        super().__init__(warehouse, storage, options)
        given = opts.Options.of(self.options)
        self.catalog_key = given.get_option(opts.CATALOG_KEY)
        self.database = connect_database(self.options)
        self.lock_enabled = given.get_option(opts.LOCK_ENABLED)
        for ddl in (_CREATE_TABLES, _CREATE_PROPERTIES):
            with contextlib.suppress(UniqueViolation), self.database.transaction() as tx:
                tx.execute(ddl)
        if self.lock_enabled:
            create_lock_table(self.database, given.get_option(opts.LOCK_KEY_MAX_LENGTH))

    @property
    def table_defaults(self) -> dict[str, str]:
        """As the filesystem catalog's; with ``lock.enabled``, the catalog's own commit lock too (its database
        and catalog key), unless ``lock.type`` chooses another."""
        defaults = super().table_defaults
        if self.lock_enabled and opts.LOCK_TYPE.key not in self.options:
            defaults[opts.LOCK_TYPE.key] = LOCK_TYPE
            defaults[opts.LOCK_JDBC_URI.key] = self.database.uri
            defaults[opts.CATALOG_KEY.key] = self.catalog_key
        return defaults

    def __repr__(self) -> str:
        return f"JdbcCatalog({self.database.redact(self.warehouse)!r}, {self.database.shown!r})"

    def _names(self, identifier: str) -> tuple[str, str]:
        database, table = split_identifier(identifier)
        return _check_jdbc_name("database", database), _check_jdbc_name("table", table)

    # --- databases -------------------------------------------------------------------------------------

    def _exists(self, tx: Transaction, name: str) -> bool:
        args = (self.catalog_key, name)
        return tx.exists(_DB_IN_TABLES, args) or tx.exists(_DB_IN_PROPERTIES, args)

    def list_databases(self) -> list[str]:
        with self.database.transaction(write=False) as tx:
            rows = tx.rows(_LIST_DATABASES, (self.catalog_key, self.catalog_key))
        return sorted({str(row[0]) for row in rows})

    def database_exists(self, name: str) -> bool:
        _check_jdbc_name("database", name)
        with self.database.transaction(write=False) as tx:
            return self._exists(tx, name)

    def create_database(
        self, name: str, exist_ok: bool = False, *, properties: Mapping[str, str] | None = None
    ) -> None:
        self.database_path(_check_jdbc_name("database", name))
        given = {str(k): str(v) for k, v in (properties or {}).items()}
        _check_properties(name, given)
        rows = {_EXISTS: "true", _LOCATION: self.database_path(name), **given}
        try:
            with self.database.transaction() as tx:
                if self._exists(tx, name):
                    raise DatabaseAlreadyExistsError(name)
                for key, value in rows.items():
                    tx.execute(_INSERT_PROPERTY, (self.catalog_key, name, key, value))
        except (DatabaseAlreadyExistsError, UniqueViolation):
            if exist_ok:
                return
            raise DatabaseAlreadyExistsError(name) from None

    def database_properties(self, name: str) -> dict[str, str]:
        _check_jdbc_name("database", name)
        with self.database.transaction(write=False) as tx:
            if not self._exists(tx, name):
                raise DatabaseNotFoundError(name, self.list_databases())
            found = {str(k): str(v) for k, v in tx.rows(_PROPERTIES_OF, (self.catalog_key, name))}
        found.pop(_EXISTS, None)
        found.setdefault(_LOCATION, self.database_path(name))
        return found

    def alter_database(
        self, name: str, set_properties: Mapping[str, str] | None = None, remove: Sequence[str] = ()
    ) -> None:
        _check_jdbc_name("database", name)
        given = {str(k): str(v) for k, v in (set_properties or {}).items()}
        _check_properties(name, {**given, **dict.fromkeys(remove, "")})
        with self.database.transaction() as tx:
            if not self._exists(tx, name):
                raise DatabaseNotFoundError(name)
            for key, value in given.items():
                if not tx.execute(_UPDATE_PROPERTY, (value, self.catalog_key, name, key)):
                    tx.execute(_INSERT_PROPERTY, (self.catalog_key, name, key, value))
            for key in remove:
                tx.execute(_DELETE_PROPERTY, (self.catalog_key, name, key))

    def drop_database(self, name: str, *, missing_ok: bool = False, cascade: bool = False) -> None:
        _check_jdbc_name("database", name)
        with self.database.transaction() as tx:
            exists = self._exists(tx, name)
            tables = [str(r[0]) for r in tx.rows(_LIST_TABLES, (self.catalog_key, name))] if exists else []
            if exists and tables and not cascade:
                raise DatabaseNotEmptyError(name)
            if exists:
                tx.execute(_DROP_TABLES_OF, (self.catalog_key, name))
                tx.execute(_DROP_PROPERTIES_OF, (self.catalog_key, name))
        if not exists:
            if missing_ok:
                return
            raise DatabaseNotFoundError(name, self.list_databases())
        # Only the tables' directories, as Java: another catalog key may keep tables in the same directory.
        for table in tables:
            self._delete_files(f"{name}.{table}")

    # --- tables ----------------------------------------------------------------------------------------

    def list_tables(self, database: str) -> list[str]:
        _check_jdbc_name("database", database)
        with self.database.transaction(write=False) as tx:
            exists = self._exists(tx, database)
            rows = tx.rows(_LIST_TABLES, (self.catalog_key, database)) if exists else []
        if not exists:  # asked outside the transaction: the error lists the databases there are
            raise DatabaseNotFoundError(database, self.list_databases())
        return sorted(str(row[0]) for row in rows)

    def _registered(self, identifier: str) -> bool:
        database, table = self._names(identifier)
        with self.database.transaction(write=False) as tx:
            return tx.exists(_TABLE_ROW, (self.catalog_key, database, table))

    def table_exists(self, identifier: str) -> bool:
        return self._registered(identifier)

    def _write_new_table(self, identifier: str, schema: TableSchema) -> None:
        database, table = self._names(identifier)
        path = self.table_path(identifier)
        try:
            with self.database.transaction() as tx:
                if not self._exists(tx, database):
                    raise DatabaseNotFoundError(database)
                tx.execute(_INSERT_TABLE, (self.catalog_key, database, table))
                # The schema file is written while the row is not committed yet: the row appears only
                # with it, and a failed write rolls the row back.
                self.storage.mkdirs(path)
                SchemaManager(self.storage, path).create(schema)
        except UniqueViolation:
            raise TableAlreadyExistsError(identifier) from None

    def drop_table(self, identifier: str, *, missing_ok: bool = False) -> None:
        database, table = self._names(identifier)
        with self.database.transaction() as tx:
            dropped = tx.execute(_DROP_TABLE, (self.catalog_key, database, table))
        if not dropped:
            if missing_ok:
                return
            raise self._table_not_found(identifier)
        self._delete_files(identifier)

    def _delete_files(self, identifier: str) -> None:
        self._delete_quietly(self.table_path(identifier))

    def _delete_quietly(self, path: str) -> None:
        # The rows are gone: a directory left behind is garbage, not a table (Java logs it likewise).
        try:
            self.storage.delete_dir(path)
        except FileNotFoundError:
            pass
        except OSError:
            logger.warning("could not delete %s after dropping it from the catalog", path, exc_info=True)

    def rename_table(self, identifier: str, new_identifier: str) -> Table:
        """Rename a table, into another database too: its row changes and its directory moves in one
        transaction (the directory moves first; a failed move rolls the row back).

        Raises:
            TableNotFoundError: no table ``identifier``.
            DatabaseNotFoundError: the new name's database does not exist.
            TableAlreadyExistsError: a table of the new name exists.
        """
        check_new_table(new_identifier)
        source, target = self._names(identifier), self._names(new_identifier)
        try:
            with self.database.transaction() as tx:
                if not tx.exists(_TABLE_ROW, (self.catalog_key, *source)):
                    raise self._missing(identifier)
                if not self._exists(tx, target[0]):
                    raise DatabaseNotFoundError(target[0])
                tx.execute(_RENAME_TABLE, (*target, self.catalog_key, *source))
                if source != target:
                    self._check_free(new_identifier)
                    self._move_table_files(identifier, new_identifier)
        except UniqueViolation:
            raise TableAlreadyExistsError(new_identifier) from None
        logger.info("renamed table %s to %s", identifier, new_identifier)
        return self.get_table(new_identifier)

    def _check_free(self, identifier: str) -> None:
        """Refuse to move a table onto files left at the new name's directory (a table of another catalog
        key, or what a failed drop left): they would mix with the table's."""
        path = self.table_path(identifier)
        if next(iter(self.storage.list_prefix(path + "/")), None) is not None:
            raise CatalogError(
                f"cannot rename a table to {identifier!r}: its directory {path} holds files of no table of this "
                "catalog; remove them first"
            )

    def _missing(self, identifier: str) -> TableNotFoundError:
        # Raised inside a transaction: the error is built without asking the database again.
        return TableNotFoundError(identifier)


def _check_properties(database: str, properties: Mapping[str, str]) -> None:
    for key, value in properties.items():
        if key == _EXISTS:
            raise CatalogError(f"database {database!r}: property {_EXISTS!r} is the catalog's own")
        if not key or len(key) > _MAX_NAME or len(value) > _MAX_VALUE:
            raise CatalogError(
                f"database {database!r}: property {key[:40]!r} needs a key of 1 to {_MAX_NAME} characters "
                f"and a value of at most {_MAX_VALUE}"
            )


register_metastore("jdbc", JdbcCatalog)
