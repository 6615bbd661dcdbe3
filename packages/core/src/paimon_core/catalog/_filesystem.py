"""The filesystem catalog: databases are ``<warehouse>/<db>.db`` directories, tables hold ``schema/schema-N``.

:class:`Catalog` is also the base of the other metastores (:mod:`._jdbc`): they keep which databases and
tables exist elsewhere, while a table's files stay at ``<warehouse>/<db>.db/<table>`` for all of them.
:meth:`Catalog.open` and :meth:`Catalog.load` pick the metastore from the ``metastore`` option.
"""

from __future__ import annotations

import difflib
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, cast

import pyarrow as pa

from paimon_core import options as opts
from paimon_core._keywords import suggest_keywords
from paimon_core._standard_hooks import STANDARD_HOOKS
from paimon_core.branch import MAIN_BRANCH, BranchManager, branch_path, normalize_branch, split_branch
from paimon_core.catalog._global_tables import global_system_table, is_global_system_table
from paimon_core.errors import (
    BranchNotFoundError,
    CatalogError,
    ConfigError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    SchemaError,
    TableAlreadyExistsError,
    TableNotFoundError,
    WarehouseNotFoundError,
)
from paimon_core.options import Options
from paimon_core.redaction import get_logger, redact
from paimon_core.schema import SchemaManager, TableSchema
from paimon_core.schema_change import SchemaChange, apply_changes
from paimon_core.storage import (
    StorageBackend,
    default_registry,
    get_backend,
    join_path,
    parent_path,
    path_name,
)
from paimon_core.table import (
    DATA_VIEWS,
    DataView,
    SystemTable,
    Table,
    TableHooks,
    check_append_table,
    check_primary_key_table,
    check_table_features,
    data_view,
    split_system_name,
)
from paimon_core.types import DataField, DataType, fields_from_arrow_schema

logger = get_logger(__name__)

DB_SUFFIX = ".db"
DEFAULT_DATABASE = "default"


def _check_name(kind: str, name: str) -> str:
    if not name or name != name.strip() or any(c in name for c in "/\\.\x00") or name in (".", ".."):
        raise CatalogError(f"invalid {kind} name {name!r}: must be non-empty, without '/', '\\', '.' or NUL")
    return name


def _checked(schema: TableSchema) -> TableSchema:
    """An altered schema meets the rules a new table meets (Java validates both alike)."""
    if schema.primary_keys:
        check_primary_key_table(schema)
    else:
        check_append_table(schema)
    return schema


def check_new_table(identifier: str) -> None:
    """A new table's name must not read as a system table's (``t$snapshots``): Paimon splits names at '$'."""
    if "$" in identifier.rpartition(".")[2]:
        raise CatalogError(f"invalid table name {identifier!r}: '$' separates a table from its system tables")


def split_identifier(identifier: str) -> tuple[str, str]:
    """``"db.t"`` → ``("db", "t")``; a bare ``"t"`` lives in the ``default`` database."""
    database, _, table = identifier.rpartition(".")
    return _check_name("database", database or DEFAULT_DATABASE), _check_name("table", table)


MetastoreFactory = Callable[[str, StorageBackend, Mapping[str, str]], "Catalog"]
_METASTORES: dict[str, MetastoreFactory] = {}
_NOT_YET = {"rest": "the REST catalog", "hive": "the Hive metastore"}


def register_metastore(name: str, factory: MetastoreFactory) -> None:
    """Make ``metastore = name`` open catalogs with ``factory(warehouse, storage, options)``."""
    _METASTORES[name] = factory


def _metastore(options: Mapping[str, str]) -> MetastoreFactory:
    name = opts.Options.of(options).get_option(opts.METASTORE).strip().lower()
    factory = _METASTORES.get(name)
    if factory is not None:
        return factory
    known = ", ".join(sorted(_METASTORES))
    if name in _NOT_YET:
        raise ConfigError(
            f"metastore {name!r} ({_NOT_YET[name]}) is not supported by paimon-core yet; use one of {known}",
            "metastore",
        )
    raise ConfigError(f"unknown metastore {name!r}; use one of {known}", "metastore")


class Catalog:
    """A Paimon filesystem catalog over a warehouse URI (local path, ``file://``, ``memory://``, ...), and the
    base of the other metastores' catalogs.

    Attributes:
        hooks: what the tables it opens run around their commits (compaction, expiration).
    """

    hooks: ClassVar[TableHooks] = STANDARD_HOOKS
    metastore: ClassVar[str] = "filesystem"

    def __init__(self, warehouse: str, storage: StorageBackend, options: Mapping[str, str]) -> None:
        self.warehouse = warehouse.rstrip("/") or "/"
        self.storage = storage
        self.options = dict(options)

    @property
    def table_defaults(self) -> dict[str, str]:
        """Catalog options that are table options too (``lock.*``, ``commit.*``...): every table gets them as
        dynamic options, below the ones given to :meth:`get_table`."""
        return {k: v for k, v in self.options.items() if opts.known_option(k) is not None}

    @classmethod
    def load(cls, options: Mapping[str, str], *, create: bool = False) -> Catalog:
        """Open a catalog from Paimon's catalog options, as Java's ``CatalogFactory`` takes them:
        ``warehouse``, ``metastore`` (``filesystem`` or ``jdbc``), for jdbc ``uri``, ``catalog-key`` and
        ``jdbc.*`` (``jdbc.user``, ``jdbc.password``...), ``lock.enabled``, plus storage options and table
        options every table gets, as :meth:`open` takes them.

        Raises:
            ConfigError: no ``warehouse``; an unknown option or metastore (``rest`` is not supported yet).
            WarehouseNotFoundError: the warehouse does not exist and ``create`` is false.
            CatalogUnavailableError: the jdbc catalog's database cannot be reached.
        """
        given = {str(k): str(v) for k, v in options.items()}
        warehouse = given.pop(opts.WAREHOUSE.key, None)
        if not warehouse:
            raise ConfigError("Catalog.load needs the 'warehouse' option", opts.WAREHOUSE.key)
        return cls.open(warehouse, create=create, **given)

    @classmethod
    def open(cls, warehouse: str, /, **options: Any) -> Catalog:
        """Open the catalog of the warehouse (a URI or path); options are storage settings (``s3.endpoint``...),
        table options every table gets (``commit.*``, ``lock.*``...) and catalog options (``metastore``,
        ``uri``...: see :meth:`load`). Without ``metastore`` it is the filesystem catalog.

        A mistyped path must not become a new, empty warehouse: the warehouse has to exist unless
        ``create=True`` is given (then it is created with its parents, and an existing one is opened as it is).
        ``create`` is taken out of the options rather than declared, so that ``**options`` built as a
        ``dict[str, str]`` type-checks.

        Raises:
            WarehouseNotFoundError: the warehouse does not exist and ``create`` is not true.
            CatalogError: the warehouse is a file.
            ConfigError: a key is a near miss of a Paimon or storage option, or the storage backend refuses a
                key under its prefixes; ``create`` is not a bool; an unknown ``metastore``.
            CatalogUnavailableError: the jdbc catalog's database cannot be reached.
        """
        create = options.pop("create", False)
        if not isinstance(create, bool):
            raise ConfigError(f"create must be True or False, got {create!r}", "create")
        string_options = {k: str(v) for k, v in options.items()}
        for key in string_options:
            check_option_key(key, ("create",))
        factory = _metastore(string_options)
        storage = get_backend(warehouse, string_options)
        _open_warehouse(storage, warehouse, create)
        return factory(warehouse, storage, string_options)

    # --- databases -------------------------------------------------------------------------------------

    def database_path(self, name: str) -> str:
        return join_path(self.warehouse, _check_name("database", name) + DB_SUFFIX)

    def list_databases(self) -> list[str]:
        return sorted(
            info.name[: -len(DB_SUFFIX)]
            for info in self.storage.list_dir(self.warehouse)
            if info.is_dir and info.name.endswith(DB_SUFFIX)
        )

    def database_exists(self, name: str) -> bool:
        return name in self.list_databases()

    def create_database(
        self, name: str, exist_ok: bool = False, *, properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a database; ``properties`` are kept by metastores that keep them (jdbc).

        Raises:
            DatabaseAlreadyExistsError: it exists and ``exist_ok`` is False.
            CatalogError: an invalid name; properties given to the filesystem catalog, which cannot keep them.
        """
        _check_name("database", name)
        if properties:
            self._refuse_properties(name)
        if self.database_exists(name):
            if exist_ok:
                return
            raise DatabaseAlreadyExistsError(name)
        self.storage.mkdirs(self.database_path(name))

    def _refuse_properties(self, name: str) -> None:
        raise CatalogError(
            f"database {name!r}: the filesystem catalog keeps no database properties (Java discards them); "
            "use a catalog with metastore = jdbc to keep them"
        )

    def database_properties(self, name: str) -> dict[str, str]:
        """The properties of a database (none in the filesystem catalog).

        Raises:
            DatabaseNotFoundError: no such database.
        """
        if not self.database_exists(name):
            raise DatabaseNotFoundError(name, self.list_databases())
        return {}

    def alter_database(
        self, name: str, set_properties: Mapping[str, str] | None = None, remove: Sequence[str] = ()
    ) -> None:
        """Set and remove properties of a database.

        Raises:
            DatabaseNotFoundError: no such database.
            CatalogError: the filesystem catalog keeps no properties.
        """
        if not self.database_exists(name):
            raise DatabaseNotFoundError(name, self.list_databases())
        if set_properties or remove:
            self._refuse_properties(name)

    def drop_database(self, name: str, *, missing_ok: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if missing_ok:
                return
            raise DatabaseNotFoundError(name, self.list_databases())
        if self.list_tables(name) and not cascade:
            raise DatabaseNotEmptyError(name)
        self.storage.delete_dir(self.database_path(name))

    # --- tables ----------------------------------------------------------------------------------------

    def table_path(self, identifier: str) -> str:
        database, table = split_identifier(identifier)
        return join_path(self.database_path(database), table)

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotFoundError(database, self.list_databases())
        path = self.database_path(database)
        return sorted(
            info.name
            for info in self.storage.list_dir(path)
            if info.is_dir and SchemaManager(self.storage, info.path).latest_id() is not None
        )

    def _table_not_found(self, identifier: str) -> TableNotFoundError:
        """The error for a missing table, naming the nearest table or database there is."""
        database, _ = split_identifier(identifier)
        if not self.database_exists(database):
            return TableNotFoundError(identifier, self.list_databases(), missing_database=database)
        others = [f"{database}.{name}" for name in self.list_tables(database)]
        return TableNotFoundError(identifier, others)

    def _registered(self, identifier: str) -> bool:
        """Whether the metastore lists the table (the filesystem catalog lists what has a schema)."""
        return True

    def table_exists(self, identifier: str) -> bool:
        return SchemaManager(self.storage, self.table_path(identifier)).latest_id() is not None

    @suggest_keywords
    def create_table(
        self,
        identifier: str,
        schema: pa.Schema,
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, Any] | None = None,
        comment: str | None = None,
        exist_ok: bool = False,
    ) -> Table:
        """Create a table from a ``pyarrow.Schema``: an append table, or with ``primary_keys`` a
        primary-key table (docs/primary-key-tables.md; ``bucket`` defaults to -1, dynamic buckets).

        Raises:
            DatabaseNotFoundError: the database does not exist.
            TableAlreadyExistsError: the table exists and ``exist_ok`` is False.
            ConfigError: an option is unknown or invalid.
            SchemaError: partition or bucket keys do not fit the schema.
        """
        check_new_table(identifier)
        database, _ = split_identifier(identifier)
        if not self.database_exists(database):
            raise DatabaseNotFoundError(database, self.list_databases())
        if self.table_exists(identifier):
            if exist_ok:
                return self.get_table(identifier)
            raise TableAlreadyExistsError(identifier)
        table_options = Options.of(options)
        table_options.validate()
        opts.check_consistency(table_options)
        fields, highest = fields_from_arrow_schema(schema)
        names = [f.name for f in fields]
        _check_keys("partition key", partition_keys, names)
        if set(partition_keys) == set(names):
            raise SchemaError("a table needs at least one column that is not a partition key")
        if primary_keys:
            table_schema = TableSchema.new(fields, partition_keys, primary_keys, dict(table_options), comment)
            check_primary_key_table(table_schema)
        else:
            table_schema = self._append_schema(fields, highest, partition_keys, table_options, comment)
        path = self.table_path(identifier)
        check_table_features(
            identifier, path, table_schema, table_options.with_overrides(self.table_defaults)
        )
        try:
            self._write_new_table(identifier, table_schema)
        except TableAlreadyExistsError:
            if exist_ok:  # another writer created it meanwhile
                return self.get_table(identifier)
            raise TableAlreadyExistsError(identifier) from None
        logger.info("created table %s at %s", identifier, redact(path))
        return Table(path, self.storage, table_schema, identifier, self.table_defaults, self.hooks)

    def _write_new_table(self, identifier: str, schema: TableSchema) -> None:
        """Make the table exist: its first schema file (and, in other metastores, its row).

        Raises:
            TableAlreadyExistsError: someone else created it first.
        """
        path = self.table_path(identifier)
        self.storage.mkdirs(path)
        SchemaManager(self.storage, path).create(schema)

    @staticmethod
    def _append_schema(
        fields: list[DataField],
        highest: int,
        partition_keys: Sequence[str],
        table_options: Options,
        comment: str | None,
    ) -> TableSchema:
        names = [f.name for f in fields]
        bucket = table_options.get_option(opts.BUCKET)
        bucket_key = table_options.get_option(opts.BUCKET_KEY)
        if bucket > 0 and not bucket_key:
            raise ConfigError("a bucketed append table ('bucket' > 0) needs 'bucket-key'", "bucket-key")
        if bucket_key:
            if bucket <= 0:
                raise ConfigError("'bucket-key' needs a fixed number of buckets ('bucket' > 0)", "bucket-key")
            keys = [k.strip() for k in bucket_key.split(",")]
            _check_keys("bucket key", keys, names)
            if set(keys) & set(partition_keys):
                raise SchemaError("bucket keys must not be partition keys")
        table_schema = TableSchema(
            id=0,
            fields=tuple(fields),
            highest_field_id=highest,
            partition_keys=tuple(partition_keys),
            primary_keys=(),
            options=dict(table_options),
            comment=comment,
            time_millis=int(time.time() * 1000),
        )
        check_append_table(table_schema)
        return table_schema

    def get_table(self, identifier: str, **dynamic_options: Any) -> Table:
        """The table ``db.t``, with ``dynamic_options`` overriding its stored options for this handle.

        A system table name (``db.t$snapshots``, ``db.t$files``, ...) returns a read-only
        :class:`~paimon_core.table.SystemTable`; ``sys.all_table_options`` and ``sys.catalog_options`` the
        catalog-wide :class:`~paimon_core.table.GlobalSystemTable` (reads only; :meth:`get_system_table` gives it its precise
        type).

        Raises:
            TableNotFoundError: no such table.
            ConfigError: an unknown option or system table.
        """
        # sys.all_table_options, sys.catalog_options; other names are checked where they are opened, which
        # tells a hostile branch name ('db.t$branch_../..') as such
        database, _, name = identifier.partition(".")
        if is_global_system_table(database, name):
            return cast(Table, global_system_table(self, name))
        if split_system_name(identifier)[1] is not None:
            return cast(Table, self.get_system_table(identifier, **dynamic_options))
        return self._data_table(identifier, **dynamic_options)

    def get_system_table(self, identifier: str, **dynamic_options: Any) -> SystemTable | DataView:
        """The system table ``db.t$<name>`` (``snapshots``, ``schemas``, ``options``, ``files``,
        ``manifests``, ``partitions``, ``tags``, ``consumers``, ``branches``) of table ``db.t``; the dynamic
        options (``scan.snapshot-id``...) choose the snapshot ``$files``, ``$partitions`` and ``$manifests``
        describe.

        Raises:
            ConfigError: not a system table name, or an unknown one.
        """
        base, system = split_system_name(identifier)
        if system is None:
            raise ConfigError(f"{identifier!r} names no system table ('db.t$snapshots', ...)", "table")
        if system in DATA_VIEWS:
            return data_view(self._data_table(base, **dynamic_options), system)
        return SystemTable(self._data_table(base, **dynamic_options), system)

    def _data_table(self, identifier: str, **dynamic_options: Any) -> Table:
        """The table ``db.t``, or its branch: ``db.t$branch_b``, or a ``branch`` option."""
        base, suffix = split_branch(identifier)
        options = {**self.table_defaults, **dynamic_options}
        if suffix is not None:
            options[opts.BRANCH.key] = suffix
        path = self.table_path(base)
        branch = normalize_branch(str(options.get(opts.BRANCH.key, MAIN_BRANCH)))
        schema = (
            SchemaManager(self.storage, branch_path(path, branch)).latest()
            if self._registered(base)
            else None
        )
        if schema is None:
            if branch != MAIN_BRANCH and self.table_exists(base):
                raise BranchNotFoundError(branch, BranchManager(self.storage, path).names())
            raise self._table_not_found(identifier)
        return Table(path, self.storage, schema, identifier, options, self.hooks)

    def _schema_manager(self, identifier: str) -> SchemaManager:
        """The schema files of ``db.t`` or of its branch ``db.t$branch_b``."""
        base, branch = split_branch(split_system_name(identifier)[0])
        return SchemaManager(self.storage, branch_path(self.table_path(base), normalize_branch(branch)))

    def drop_table(self, identifier: str, *, missing_ok: bool = False) -> None:
        if not self.table_exists(identifier):
            if missing_ok:
                return
            raise self._table_not_found(identifier)
        self.storage.delete_dir(self.table_path(identifier))

    def rename_table(self, identifier: str, new_identifier: str) -> Table:
        """Rename a table, into another database too, by moving its directory (as Paimon's filesystem catalog
        does; no file names a table's path).

        Stores without a rename move by copying: the new table's schema files are written last and the old
        table is deleted after the copy, so the table is never missing, but it may be seen under both names
        for a moment, and a crash can leave both (as Paimon warns for object stores). Nobody should write to
        the table meanwhile.

        Raises:
            TableNotFoundError: no table ``identifier``.
            DatabaseNotFoundError: the new name's database does not exist.
            TableAlreadyExistsError: a table of the new name exists.
        """
        check_new_table(new_identifier)
        if not self.table_exists(identifier):
            raise self._table_not_found(identifier)
        database, _ = split_identifier(new_identifier)
        if not self.database_exists(database):
            raise DatabaseNotFoundError(database, self.list_databases())
        if self.table_exists(new_identifier):
            raise TableAlreadyExistsError(new_identifier)
        self._move_table_files(identifier, new_identifier)
        logger.info("renamed table %s to %s", identifier, new_identifier)
        return self.get_table(new_identifier)

    def _move_table_files(self, identifier: str, new_identifier: str) -> None:
        """Move a table's directory to the new name's (see :meth:`rename_table`)."""
        source, target = self.table_path(identifier), self.table_path(new_identifier)
        files = [info.path for info in self.storage.list_prefix(source)]
        schema_dir = join_path(source, "schema") + "/"
        # The schema files, which make a directory a table, are copied last.
        for path in sorted(files, key=lambda p: p.startswith(schema_dir)):
            relative = path[len(source) :].lstrip("/")
            _copy(self.storage, path, join_path(target, relative))
        self.storage.delete_dir(source)

    def alter_table(self, identifier: str, changes: SchemaChange | Sequence[SchemaChange]) -> Table:
        """Apply schema changes (``SchemaChange.add_column(...)``, ...) as one new schema version.

        Older data files keep their schema: reads map their columns by field id to the new schema (a
        renamed column keeps its values, a new one reads as null, a widened one is cast).

        Raises:
            TableNotFoundError: no such table.
            SchemaError: a change is refused (the message says why); nothing changes.
            ConfigError: an unknown, malformed or immutable option; options the table cannot have together (as
                at creation).
            UnsupportedTableFeatureError: the new schema uses a feature not implemented here (an external
                path on another storage...).
        """
        batch = [changes] if isinstance(changes, SchemaChange) else list(changes)
        base = split_branch(split_system_name(identifier)[0])[0]
        path = self.table_path(base)
        manager = self._schema_manager(identifier)
        if not self._registered(base) or manager.latest() is None:
            raise self._table_not_found(identifier)

        def checked(schema: TableSchema) -> TableSchema:
            altered = _checked(apply_changes(schema, batch))
            # refused before it is written: a table its handles cannot open would be locked
            options = Options.of(altered.options).with_overrides(self.table_defaults)
            check_table_features(identifier, path, altered, options)
            return altered

        manager.commit_change(checked)
        return self._data_table(identifier)

    def add_column(
        self, identifier: str, name: str, data_type: pa.DataType | DataType, description: str | None = None
    ) -> Table:
        """Add a nullable column at the end (older files read it as null); see :meth:`alter_table`."""
        return self.alter_table(identifier, SchemaChange.add_column(name, data_type, description))

    def alter_options(self, identifier: str, set_options: Mapping[str, Any]) -> Table:
        """Set table options in a new schema version (immutable options cannot change); see :meth:`alter_table`."""
        return self.alter_table(identifier, [SchemaChange.set_option(k, v) for k, v in set_options.items()])

    def __repr__(self) -> str:
        return f"Catalog({redact(self.warehouse)!r})"


def _open_warehouse(storage: StorageBackend, uri: str, create: bool) -> None:
    """Check that the warehouse is a directory; create it when missing and ``create`` is true."""
    try:
        info = storage.info(uri)
    except FileNotFoundError:
        if not create:
            raise WarehouseNotFoundError(uri, _nearest_sibling(storage, uri)) from None
        storage.mkdirs(uri)
        logger.info("created warehouse %s", redact(uri))
        return
    if not info.is_dir:
        raise CatalogError(f"warehouse {uri!r} is a file, not a directory")


def _nearest_sibling(storage: StorageBackend, uri: str) -> str | None:
    """The directory next to a missing warehouse whose name is nearest to its name, if one is near."""
    parent = parent_path(uri)
    if parent == uri:
        return None
    try:
        names = [info.name for info in storage.list_dir(parent) if info.is_dir]
    except OSError:
        return None  # the parent is missing or unreadable too: no suggestion
    close = difflib.get_close_matches(path_name(uri), names, n=1)
    return join_path(parent, close[0]) if close else None


def _copy(storage: StorageBackend, source: str, target: str) -> None:
    """Copy one file in chunks (data files can be large)."""
    with storage.open_input(source) as reader, storage.open_output(target) as writer:
        shutil.copyfileobj(reader, writer, 8 << 20)


def _check_keys(kind: str, keys: Sequence[str], names: Sequence[str]) -> None:
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise SchemaError(f"{kind}s not in the schema: {', '.join(unknown)}")
    if len(set(keys)) != len(keys):
        raise SchemaError(f"duplicate {kind}s: {list(keys)}")


# Option prefixes of storage backends that may not be installed here (their keys pass to the backend, which
# checks them when it is installed).
_STORAGE_PREFIXES = ("s3.", "s3a.", "fs.", "gcs.", "gs.", "azure.", "az.", "oss.", "hadoop.", "storage.")


def check_option_key(key: str, extra: Sequence[str] = ()) -> None:
    """Accept a Paimon option, a catalog option (``metastore``, ``uri``, ``jdbc.*``...), a storage option (under a
    backend's prefixes) or one of ``extra``.

    Raises:
        ConfigError: any other key, naming the close matches.
    """
    if key in extra or opts.known_option(key) is not None or key.startswith("fields."):
        return
    if opts.known_catalog_option(key) is not None or key.startswith(opts.JDBC_PREFIX):
        return
    prefixes, storage_keys = default_registry().storage_option_keys()
    if key.startswith((*prefixes, *_STORAGE_PREFIXES)):
        return  # the backend checks the keys under its own prefixes
    known = [
        *extra,
        *(o.key for o in opts.all_options()),
        *(o.key for o in opts.catalog_options()),
        *storage_keys,
    ]
    raise ConfigError(f"unknown option {key!r}{opts.close_matches(key, known)}", key)


register_metastore("filesystem", Catalog)
