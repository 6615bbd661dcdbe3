"""``lock.type = jdbc``: a commit lock held as a row in a PostgreSQL table, shared by every machine.

The lock is a row of Java Paimon's JDBC lock table, ``paimon_distributed_locks (lock_id, acquired_at,
expire_time_seconds)`` (the table a jdbc catalog's lock uses too), so Java writers using the same database and
lock key would exclude ours too. Acquiring is one statement: insert the row, or take it over when its holder's
lease has expired (a writer that died)::

    INSERT INTO paimon_distributed_locks (lock_id, acquired_at, expire_time_seconds) VALUES (%s, now, %s)
    ON CONFLICT (lock_id) DO UPDATE
    SET acquired_at = EXCLUDED.acquired_at, expire_time_seconds = EXCLUDED.expire_time_seconds
    WHERE paimon_distributed_locks.acquired_at + expire_time_seconds seconds < EXCLUDED.acquired_at
    RETURNING acquired_at

A returned row means the lock is ours; none means it is held, and the caller polls with growing, jittered
sleeps up to ``lock-check-max-sleep`` until ``lock-acquire-timeout``. The lease lasts ``lock-acquire-timeout``
(as in Java): a holder must finish its critical section (publishing one snapshot file) well within it.
Releasing deletes the row only if it still carries our ``acquired_at`` (someone may have taken over an
expired lease). Times come from the database server's clock, in UTC, never from the writers' clocks.

Options: ``lock.jdbc.uri`` (``jdbc:postgresql://host:port/db``, a libpq URI or key=value string; the ``PG*``
environment variables otherwise), ``jdbc.user``, ``jdbc.password`` (prefer ``PGPASSWORD`` or ``~/.pgpass``:
table options are stored in the table's schema), ``lock-acquire-timeout``, ``lock-check-max-sleep``,
``lock-key-max-length``. Needs ``pip install 'paimon-storage[postgres]'`` (psycopg 3).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from paimon_core import options as opts
from paimon_core.errors import LockUnavailableError
from paimon_core.redaction import Redactor, get_logger
from paimon_core.storage import LockSpec, hookimpl, poll_for_lock
from paimon_storage._options import install_hint, require

__all__ = ["SPEC", "TABLE", "JdbcCommitLock", "paimon_commit_locks"]

logger = get_logger(__name__)

T = TypeVar("T")

TABLE = "paimon_distributed_locks"
_CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    lock_id VARCHAR(%(length)s) NOT NULL PRIMARY KEY,
    acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,
    expire_time_seconds BIGINT DEFAULT 0 NOT NULL
)
"""
_ACQUIRE = f"""
INSERT INTO {TABLE} AS held (lock_id, acquired_at, expire_time_seconds)
VALUES (%(key)s, clock_timestamp() AT TIME ZONE 'UTC', %(lease)s)
ON CONFLICT (lock_id) DO UPDATE SET acquired_at = EXCLUDED.acquired_at, expire_time_seconds = EXCLUDED.expire_time_seconds
WHERE held.acquired_at + held.expire_time_seconds * INTERVAL '1 second' < EXCLUDED.acquired_at
RETURNING acquired_at
"""
_RELEASE = f"DELETE FROM {TABLE} WHERE lock_id = %(key)s AND acquired_at = %(token)s"


def _conninfo(uri: str | None) -> str:
    if uri is None:
        return ""  # libpq's PG* environment variables and defaults
    return uri[len("jdbc:") :] if uri.lower().startswith("jdbc:") else uri


class JdbcCommitLock:
    """A commit lock in PostgreSQL (see the module docstring). Each use opens its own short connection.

    Args:
        options: the table's options (``lock.jdbc.uri``, ``jdbc.user``, ``jdbc.password``, timeouts).
    """

    def __init__(self, options: Mapping[str, str]) -> None:
        (self._psycopg,) = require("jdbc commit lock", "postgres", "psycopg")
        table_options = opts.Options.of(options)
        uri = table_options.get_option(opts.LOCK_JDBC_URI)
        self._conninfo = _conninfo(uri)
        self._redact = Redactor.of(options)  # jdbc.password's value too, wherever a message repeats it
        self._where = self._redact(self._conninfo) or "<PG* environment>"
        self._connect_kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": 30}
        user, password = (
            table_options.get_option(opts.JDBC_USER),
            table_options.get_option(opts.JDBC_PASSWORD),
        )
        if user:
            self._connect_kwargs["user"] = user
        if password:
            self._connect_kwargs["password"] = password
        self.acquire_timeout_ms = table_options.get_option(opts.LOCK_ACQUIRE_TIMEOUT)
        self.check_max_sleep_ms = table_options.get_option(opts.LOCK_CHECK_MAX_SLEEP)
        self.key_max_length = table_options.get_option(opts.LOCK_KEY_MAX_LENGTH)
        self._table_ready = False

    def __repr__(self) -> str:
        return f"JdbcCommitLock({self._where!r}, acquire_timeout_ms={self.acquire_timeout_ms})"

    def lock_id(self, key: str) -> str:
        """The row id for a key: the key itself, or a hash of it when longer than ``lock-key-max-length``."""
        if len(key) <= self.key_max_length:
            return key
        digest = hashlib.sha256(key.encode()).hexdigest()
        return (key[: max(0, self.key_max_length - len(digest) - 1)] + "#" + digest)[-self.key_max_length :]

    def _unavailable(self, key: str, doing: str, error: Exception) -> LockUnavailableError:
        """The error for a database failure before the lock was held; libpq's messages name host and user,
        never the password, but the URI may hold one: the text and the chained cause are masked."""
        unavailable = LockUnavailableError(
            f"jdbc commit lock {key!r}: cannot {doing} {self._where}: {self._redact(str(error))}; "
            "nothing was published",
            key,
        )
        unavailable.__cause__ = self._redact.cause(error)
        return unavailable

    def _ensure_table(self, conn: Any) -> None:
        if self._table_ready:
            return
        errors = self._psycopg.errors
        # Another writer may create it at the same moment: IF NOT EXISTS does not cover that race.
        with contextlib.suppress(errors.UniqueViolation, errors.DuplicateTable):
            conn.execute(_CREATE % {"length": int(self.key_max_length)})
        self._table_ready = True

    def _try_acquire(self, conn: Any, lock_id: str) -> Any | None:
        lease_s = max(1, -(-self.acquire_timeout_ms // 1000))
        row = conn.execute(_ACQUIRE, {"key": lock_id, "lease": lease_s}).fetchone()
        return None if row is None else row[0]

    def acquire(self, conn: Any, key: str) -> Any:
        """Acquire the lock for ``key`` on ``conn``; returns the token that releases it.

        Raises:
            LockAcquireTimeoutError: still held by another writer after ``lock-acquire-timeout``.
        """
        lock_id = self.lock_id(key)
        self._ensure_table(conn)
        return poll_for_lock(
            lambda: self._try_acquire(conn, lock_id),
            key=key,
            timeout_ms=self.acquire_timeout_ms,
            max_sleep_ms=self.check_max_sleep_ms,
            held=f"commit lock {lock_id!r} in {self._where}",
        )

    def release(self, conn: Any, key: str, token: Any) -> None:
        """Release the lock for ``key`` if ``token`` still holds it."""
        lock_id = self.lock_id(key)
        deleted = conn.execute(_RELEASE, {"key": lock_id, "token": token}).rowcount
        if deleted != 1:
            logger.warning(
                "jdbc commit lock %s expired while held (lease %s ms) and was taken over; "
                "raise lock-acquire-timeout",
                lock_id,
                self.acquire_timeout_ms,
            )

    def run_with_lock(self, key: str, action: Callable[[], T]) -> T:
        """Run ``action`` holding the lock for ``key`` (the table's path).

        Raises:
            LockAcquireTimeoutError: the lock was not acquired in time (``action`` did not run).
            LockUnavailableError: the database could not be reached, or failed before the lock was held
                (``action`` did not run; the database's error, masked, is the cause).
        """
        try:
            conn = self._psycopg.connect(self._conninfo, **self._connect_kwargs)
        except self._psycopg.Error as error:
            failure = error
        else:
            with conn:
                return self._run_connected(conn, key, action)
        # Raised outside the handler: the unmasked error must not stay reachable as __context__.
        raise self._unavailable(key, "connect to", failure)

    def _run_connected(self, conn: Any, key: str, action: Callable[[], T]) -> T:
        try:
            token = self.acquire(conn, key)
        except self._psycopg.Error as error:
            failure = error
        else:
            try:
                return action()
            finally:
                try:
                    self.release(conn, key, token)
                except self._psycopg.Error as error:
                    # The lease expires by itself; the action's outcome matters more than this error.
                    logger.warning("jdbc commit lock %s: release failed: %s", key, self._redact(str(error)))
        raise self._unavailable(key, "take the lock in", failure)


SPEC = LockSpec(name="jdbc", factory=JdbcCommitLock, install_hint=install_hint("postgres"))


@hookimpl
def paimon_commit_locks() -> list[LockSpec]:
    """The ``jdbc`` commit lock (entry point ``jdbc`` in group ``paimon.lock``)."""
    return [SPEC]
