"""The jdbc catalog's database: a JDBC URI opened with a Python DB-API driver, one transaction per operation.

``jdbc:sqlite:<path>`` (or ``jdbc:sqlite:file:...?mode=...``) uses the standard library's ``sqlite3``;
``jdbc:postgresql://host:port/db?k=v`` uses psycopg 3 (``pip install 'paimon-core[postgres]'``). Catalog
options under ``jdbc.`` are the connection's properties, as Java hands them to its driver: ``jdbc.user``,
``jdbc.password`` and, for PostgreSQL, any libpq parameter (``jdbc.sslmode``...).

Statements are written once with ``?`` placeholders (none of them holds a literal ``?``) and rewritten to
``%s`` for psycopg. A write transaction on SQLite starts with ``BEGIN IMMEDIATE``: it takes the database's
write lock before it reads, so two writers never both pass a check and then both write (SQLite would fail
the later one with "database is locked" instead of waiting); PostgreSQL relies on the primary keys.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from paimon_core import options as opts
from paimon_core._optional import import_optional
from paimon_core.errors import CatalogUnavailableError, ConfigError
from paimon_core.redaction import Redactor

__all__ = ["Database", "Transaction", "UniqueViolation", "connect_database"]

_BUSY_TIMEOUT_S = 60.0


class UniqueViolation(Exception):
    """A statement broke a primary key: the row exists (another writer put it there first)."""


class Transaction:
    """One open transaction: statements run in it and are committed together, or not at all."""

    def __init__(self, cursor: Any, placeholder: str, integrity_errors: tuple[type[Exception], ...]) -> None:
        self._cursor = cursor
        self._placeholder = placeholder
        self._integrity_errors = integrity_errors

    def _sql(self, sql: str) -> str:
        return sql if self._placeholder == "?" else sql.replace("?", self._placeholder)

    def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed.

        Raises:
            UniqueViolation: it broke a primary key.
        """
        try:
            self._cursor.execute(self._sql(sql), tuple(args))
        except self._integrity_errors as error:
            raise UniqueViolation(str(error)) from None
        return int(self._cursor.rowcount)

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of a query."""
        self._cursor.execute(self._sql(sql), tuple(args))
        return [tuple(row) for row in self._cursor.fetchall()]

    def exists(self, sql: str, args: Sequence[Any] = ()) -> bool:
        return bool(self.rows(sql, args))


@dataclass(frozen=True)
class Database:
    """The catalog's database; every :meth:`transaction` opens a short connection of its own (no connection
    is shared between threads or kept across forks).

    Attributes:
        uri: the JDBC URI as given.
        protocol: ``sqlite`` or ``postgresql``.
    """

    uri: str
    protocol: str
    target: str
    properties: tuple[tuple[str, str], ...]
    redact: Redactor

    @property
    def shown(self) -> str:
        """The URI with credentials masked."""
        return self.redact(self.uri)

    def _unavailable(self, doing: str, error: Exception) -> CatalogUnavailableError:
        failure = CatalogUnavailableError(
            f"jdbc catalog database {self.shown}: {doing} failed: {self.redact(str(error))}", self.shown
        )
        failure.__cause__ = self.redact.cause(error)
        return failure

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[Transaction]:
        """A transaction, committed when the block ends and rolled back when it raises.

        Raises:
            CatalogUnavailableError: the database could not be reached or failed (rolled back).
        """
        manager = self._sqlite(write) if self.protocol == "sqlite" else self._postgres()
        failure: Exception | None = None
        try:
            with manager as transaction:
                yield transaction
        except sqlite3.Error as error:
            failure = error
        except Exception as error:
            if not _is_driver_error(error):
                raise
            failure = error
        if failure is not None:
            # Raised outside the handler: the unmasked error must not stay reachable as __context__.
            raise self._unavailable("a catalog operation", failure)

    @contextlib.contextmanager
    def _sqlite(self, write: bool) -> Iterator[Transaction]:
        uri = self.target.startswith("file:")
        conn = sqlite3.connect(self.target, timeout=_BUSY_TIMEOUT_S, isolation_level=None, uri=uri)
        try:
            cursor = conn.cursor()
            cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield Transaction(cursor, "?", (sqlite3.IntegrityError,))
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
        finally:
            conn.close()

    @contextlib.contextmanager
    def _postgres(self) -> Iterator[Transaction]:
        psycopg = import_optional("psycopg", "the jdbc catalog on PostgreSQL", "postgres")
        kwargs: dict[str, Any] = {"connect_timeout": 30, **dict(self.properties)}
        # The connection commits when the block ends and rolls back when it raises.
        with psycopg.connect(self.target, **kwargs) as conn, conn.cursor() as cursor:
            yield Transaction(cursor, "%s", (psycopg.IntegrityError,))


def _is_driver_error(error: Exception) -> bool:
    """A DB-API error of psycopg (imported only when PostgreSQL is used)."""
    module = type(error).__module__
    return module.startswith("psycopg") and not isinstance(error, UniqueViolation)


def _jdbc_properties(options: Mapping[str, str]) -> dict[str, str]:
    return {k[len(opts.JDBC_PREFIX) :]: v for k, v in options.items() if k.startswith(opts.JDBC_PREFIX)}


def connect_database(options: Mapping[str, str]) -> Database:
    """The database a jdbc catalog's options name (``uri``, ``jdbc.*``); nothing is opened yet.

    Raises:
        ConfigError: no ``uri``, or one that is neither ``jdbc:sqlite:`` nor ``jdbc:postgresql:``.
    """
    uri = opts.Options.of(options).get_option(opts.URI) if opts.URI.key in options else None
    if not uri:
        raise ConfigError(
            "metastore = jdbc needs 'uri' (jdbc:sqlite:<path> or jdbc:postgresql://host:port/db)", "uri"
        )
    redact = Redactor.of(options)
    properties = _jdbc_properties(options)
    lowered = uri.lower()
    if lowered.startswith("jdbc:sqlite:"):
        target = uri[len("jdbc:sqlite:") :]
        if not target:
            raise ConfigError(f"uri {redact(uri)!r} names no SQLite database file", "uri")
        return Database(uri, "sqlite", target, (), redact)
    if lowered.startswith("jdbc:postgresql:"):
        return Database(uri, "postgresql", *_postgres_target(uri, properties), redact)
    raise ConfigError(
        f"jdbc catalog uri {redact(uri)!r}: only jdbc:sqlite: and jdbc:postgresql: databases are supported",
        "uri",
    )


def _postgres_target(uri: str, properties: Mapping[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A libpq URI and connection keywords from a JDBC PostgreSQL URI (whose query may hold ``user`` and
    ``password`` too, as the JDBC driver takes them) and the ``jdbc.*`` properties."""
    parts = urlsplit(uri[len("jdbc:") :])
    query = dict(parse_qsl(parts.query))
    merged = {**query, **properties}
    for java_only in ("username",):
        if java_only in merged:
            merged.setdefault("user", merged.pop(java_only))
    target = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return target, tuple(sorted(merged.items()))
