"""``lock.type = jdbc-catalog``: the commit lock of a jdbc catalog, a row of Java's lock table in the catalog's
own database (SQLite or PostgreSQL).

A jdbc catalog with ``lock.enabled = true`` hands this lock to its tables (:attr:`JdbcCatalog.table_defaults
<paimon_core.catalog.JdbcCatalog.table_defaults>`); core publishes snapshots under it on stores that cannot
create a file atomically. The row is Java's ``JdbcCatalogLock``'s: ``paimon_distributed_locks (lock_id,
acquired_at, expire_time_seconds)`` with ``lock_id = '<catalog-key>.<database>.<table>'``, so Java writers
of the same catalog exclude ours and the reverse. Acquiring, as Java does, deletes the row if its lease
(``expire_time_seconds`` = ``lock-acquire-timeout``) has run out, then inserts it; the insert breaking the
primary key means another writer holds it, and the caller polls with growing, jittered sleeps up to
``lock-check-max-sleep`` until ``lock-acquire-timeout``. Releasing deletes the row only if it still carries
our ``acquired_at``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from paimon_core import options as opts
from paimon_core.catalog._jdbc import LOCK_TYPE, create_lock_table
from paimon_core.catalog._sql import Database, UniqueViolation, connect_database
from paimon_core.errors import (
    CatalogUnavailableError,
    ConfigError,
    LockUnavailableError,
)
from paimon_core.redaction import get_logger
from paimon_core.storage import LockSpec, hookimpl, parent_path, path_name, poll_for_lock

__all__ = ["SPEC", "JdbcCatalogLock", "paimon_commit_locks"]

logger = get_logger(__name__)

T = TypeVar("T")

_EXPIRED = {
    "sqlite": "strftime('%s', 'now') - strftime('%s', acquired_at) > expire_time_seconds",
    "postgresql": "EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) > expire_time_seconds",
}
_INSERT = (
    "INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES (?, ?) RETURNING acquired_at"
)
_RELEASE = "DELETE FROM paimon_distributed_locks WHERE lock_id = ? AND acquired_at = ?"


class JdbcCatalogLock:
    """The commit lock of a jdbc catalog (see the module docstring).

    Args:
        options: the table's options, with the catalog's ``lock.jdbc.uri``, ``catalog-key`` and ``jdbc.*``.
    """

    def __init__(self, options: Mapping[str, str]) -> None:
        given = opts.Options.of(options)
        uri = given.get_option(opts.LOCK_JDBC_URI)
        if not uri:
            raise ConfigError(
                f"lock.type = {LOCK_TYPE} needs 'lock.jdbc.uri' (the catalog's database)", "uri"
            )
        jdbc = {k: v for k, v in options.items() if k.startswith(opts.JDBC_PREFIX)}
        self.database: Database = connect_database({opts.URI.key: uri, **jdbc})
        self.catalog_key = given.get_option(opts.CATALOG_KEY)
        self.acquire_timeout_ms = given.get_option(opts.LOCK_ACQUIRE_TIMEOUT)
        self.check_max_sleep_ms = given.get_option(opts.LOCK_CHECK_MAX_SLEEP)
        self.key_max_length = given.get_option(opts.LOCK_KEY_MAX_LENGTH)
        self._table_ready = False

    def __repr__(self) -> str:
        return f"JdbcCatalogLock({self.database.shown!r}, catalog_key={self.catalog_key!r})"

    def lock_id(self, table_path: str) -> str:
        """Java's lock name of the table at ``<warehouse>/<db>.db/<table>``; hashed when it is longer than
        ``lock-key-max-length``."""
        database = path_name(parent_path(table_path)).removesuffix(".db")
        key = f"{self.catalog_key}.{database}.{path_name(table_path)}"
        if len(key) <= self.key_max_length:
            return key
        digest = hashlib.sha256(key.encode()).hexdigest()
        return (key[: max(0, self.key_max_length - len(digest) - 1)] + "#" + digest)[-self.key_max_length :]

    def _try_acquire(self, lock_id: str) -> Any | None:
        if not self._table_ready:
            create_lock_table(self.database, self.key_max_length)
            self._table_ready = True
        lease_s = max(1, self.acquire_timeout_ms // 1000)
        expired = _EXPIRED[self.database.protocol]
        try:
            with self.database.transaction() as tx:
                tx.execute(
                    f"DELETE FROM paimon_distributed_locks WHERE {expired} AND lock_id = ?", (lock_id,)
                )
                tx.execute(_INSERT, (lock_id, lease_s))
                rows = tx.rows(
                    "SELECT acquired_at FROM paimon_distributed_locks WHERE lock_id = ?", (lock_id,)
                )
        except UniqueViolation:
            return None
        return rows[0][0]

    def _acquire(self, key: str, lock_id: str) -> Any:
        return poll_for_lock(
            lambda: self._try_acquire(lock_id),
            key=key,
            timeout_ms=self.acquire_timeout_ms,
            max_sleep_ms=self.check_max_sleep_ms,
            held=f"jdbc catalog lock {lock_id!r} in {self.database.shown}",
        )

    def run_with_lock(self, key: str, action: Callable[[], T]) -> T:
        """Run ``action`` holding the lock of the table at ``key`` (its path).

        Raises:
            LockAcquireTimeoutError: the lock was not acquired in time (``action`` did not run).
            LockUnavailableError: the catalog's database failed before the lock was held.
        """
        lock_id = self.lock_id(key)
        try:
            token = self._acquire(key, lock_id)
        except CatalogUnavailableError as error:
            failure = error
        else:
            try:
                return action()
            finally:
                self._release(lock_id, token)
        unavailable = LockUnavailableError(f"{failure}; nothing was published", key)
        unavailable.__cause__ = failure.__cause__
        raise unavailable

    def _release(self, lock_id: str, token: Any) -> None:
        try:
            with self.database.transaction() as tx:
                released = tx.execute(_RELEASE, (lock_id, token)) == 1
        except CatalogUnavailableError:
            # The lease expires by itself; the action's outcome matters more than this failure.
            logger.warning("jdbc catalog lock %s: release failed", lock_id, exc_info=True)
            return
        if not released:
            logger.warning(
                "jdbc catalog lock %s expired while held (lease %s ms) and was taken over; "
                "raise lock-acquire-timeout",
                lock_id,
                self.acquire_timeout_ms,
            )


SPEC = LockSpec(
    name=LOCK_TYPE,
    factory=JdbcCatalogLock,
    install_hint="pip install 'paimon-core[postgres]'",
    implicit=False,  # a jdbc catalog names it for its tables; never the default of other tables
)


@hookimpl
def paimon_commit_locks() -> list[LockSpec]:
    """The jdbc catalog's commit lock (entry point ``jdbc-catalog`` in group ``paimon.lock``)."""
    return [SPEC]
