"""Publishing a snapshot: the atomic create of ``snapshot-<id>`` (under the commit lock on a store that cannot
create a file atomically), then the check that it continues the chain of snapshots (:mod:`.._chain`), and the
withdrawal of a stale one. docs/commit-protocol.md, "The hole expiration leaves".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.errors import (
    AtomicCommitUnsupportedError,
    CommitStateUnknownError,
    CorruptMetadataError,
    LockAcquisitionError,
    PaimonError,
)
from paimon_core.redaction import Redactor, get_logger
from paimon_core.snapshot import Snapshot
from paimon_core.storage import Capability, CommitLock, open_commit_lock
from paimon_core.table._chain import follows_chain
from paimon_core.table._history import OwnCommits
from paimon_core.table.commit._outcome import Published

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

logger = get_logger(__name__)


def open_lock(table: TableStore) -> CommitLock | None:
    """The commit lock a store that cannot create a file atomically publishes under; None for other stores.

    Raises:
        AtomicCommitUnsupportedError: the store cannot create files atomically and no lock is configured.
    """
    if Capability.ATOMIC_CREATE in table.storage.capabilities:
        return None
    if not table.options.get_option(opts.LOCK_ENABLED):
        raise AtomicCommitUnsupportedError(
            f"storage of {table.path} ({table.storage!r}) cannot create files atomically; commits are "
            "refused unless a commit lock is configured: set 'lock.enabled' = 'true' and 'lock.type' "
            "(e.g. 'jdbc', from pip install 'paimon-storage[postgres]')"
        )
    return open_commit_lock(table.options)


class Publisher:
    """Publishes one committer's snapshots and tells whether they continue the history.

    Args:
        table: the table.
        own: this user's commits seen so far; forgotten when an outcome cannot be told.
        lock: the commit lock to publish under, if the store needs one.
    """

    def __init__(self, table: TableStore, own: OwnCommits, lock: CommitLock | None) -> None:
        self.table = table
        self.own = own
        self.lock = lock

    def publish(self, snapshot: Snapshot) -> bool:
        """Create the snapshot's file; False when another commit took the id.

        Raises:
            LockAcquisitionError: the lock was not acquired; nothing was published.
            Exception: any other failure of the create: its outcome is unknown.
        """
        publish = self.table.snapshot_manager.try_publish
        if self.lock is None:
            return publish(snapshot)
        started = False

        def publish_holding_lock() -> bool:
            nonlocal started
            started = True
            return publish(snapshot)

        try:
            return self.lock.run_with_lock(self.table.path, publish_holding_lock)
        except Exception as exc:
            if started and isinstance(exc, LockAcquisitionError):  # a plugin's mistake: the publish ran
                raise PaimonError(f"the commit lock failed after the publish ran: {exc}") from exc
            if started or isinstance(exc, LockAcquisitionError):
                raise  # the publish itself failed (an unknown outcome), or the lock was never held
            failure = exc
        # Any other failure of a lock plugin before the publish started: nothing was published either.
        raise self._lock_failed(failure)

    def _lock_failed(self, cause: Exception) -> LockAcquisitionError:
        redact = Redactor.of(self.table.options)
        error = LockAcquisitionError(
            f"commit lock of {self.table.path} not acquired: {redact(f'{type(cause).__name__}: {cause}')}; "
            "nothing was published",
            self.table.path,
        )
        error.__cause__ = redact.cause(cause)
        return error

    def verify(self, published: Published) -> bool:
        """Whether a snapshot this committer created continues the history; a stale one is withdrawn.

        Raises:
            CommitStateUnknownError: it cannot be told (the table moved on too far meanwhile).
        """
        snapshot, base = published.snapshot, published.base
        verdict = follows_chain(self.table, snapshot, base, published.entries)
        if verdict is None:
            self.own.forget()
            raise CommitStateUnknownError(
                f"snapshot {snapshot.id} of {self.own.commit_user} was published to {self.table.path}, but the "
                "table moved on and expired snapshots so fast that it cannot be told whether the snapshot "
                "continues the history or landed in an id that expiration had freed"
            )
        if not verdict:
            logger.warning(
                "snapshot %s of %s landed in an id freed by snapshot expiration or a rollback (its base "
                "%s is gone); withdrawing it and retrying on the latest snapshot",
                snapshot.id, self.table.path, base.id if base else None,
            )  # fmt: skip
            self._withdraw(snapshot)
        return verdict

    def _withdraw(self, snapshot: Snapshot) -> None:
        """Delete a snapshot file this committer published into an expired hole (no one builds on it)."""
        sm = self.table.snapshot_manager
        try:
            if sm.try_snapshot(snapshot.id) == snapshot:
                self.table.storage.delete(sm.snapshot_path(snapshot.id))
        except (OSError, CorruptMetadataError):
            logger.warning("could not withdraw stale snapshot %s of %s", snapshot.id, self.table.path,
                           exc_info=True)  # fmt: skip

    def find_unknown(self, unknown: Mapping[str, Published]) -> Published | None:
        """An attempt of this call whose outcome was unknown (by uuid), if it landed on the history."""
        sm = self.table.snapshot_manager
        for uuid_, published in list(unknown.items()):
            found = sm.try_snapshot(published.snapshot.id)
            if found is None or found.uuid != uuid_:
                continue
            if self.verify(published):
                return published
        return None
