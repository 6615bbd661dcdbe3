"""The snapshots one commit user made: what exactly-once commits and replay detection look up.

Recovery scans the history backwards from the latest snapshot once, until the user's newest snapshot;
afterwards only snapshots newer than the last one looked at are read, so that a committer sees commits
of other handles with the same user (and its own commits whose outcome it never heard of).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from paimon_core.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from paimon_core.table._table import Table

__all__ = ["OwnCommits"]

logger = logging.getLogger(__name__)

_REMEMBERED = 256  # (identifier, kind) pairs kept for lookups; older ones are searched on demand


class OwnCommits:
    """The newest identifier a commit user committed, and where its recent commits landed."""

    def __init__(self, table: Table, commit_user: str) -> None:
        self.table = table
        self.commit_user = commit_user
        self.last_identifier: int | None = None
        self.complete = True  # False when expired snapshots may hide commits of this user
        # Until the history was searched (and after an unknown outcome), earlier commits of this user may
        # have landed unseen.
        self.uncertain = True
        self._scanned_to: int | None = None
        self._landed: dict[tuple[int, CommitKind], int] = {}
        self.files: dict[int, frozenset[str]] = {}  # names of the files this committer's commits added

    def forget(self) -> None:
        """Search the history again next time (after an outcome this committer could not tell)."""
        self._scanned_to = None
        self.uncertain = True

    def catch_up(self) -> None:
        """Look at every snapshot not seen yet (recovering from the whole history the first time).

        Raises:
            CorruptMetadataError: a snapshot file cannot be parsed.
            OSError: the store failed (the next call searches the same range again).
        """
        sm = self.table.snapshot_manager
        latest = sm.latest_id()
        if latest is None:
            return
        if self._scanned_to is None:
            self._recover(latest)
        else:
            for snapshot_id in range(self._scanned_to + 1, latest + 1):
                snapshot = sm.try_snapshot(snapshot_id)  # None: expired before we looked
                if snapshot is not None:
                    self._see(snapshot)
        self._scanned_to = latest
        self.uncertain = False

    def _recover(self, latest: int) -> None:
        sm = self.table.snapshot_manager
        earliest = sm.earliest_id() or 1
        for snapshot_id in range(latest, earliest - 1, -1):
            snapshot = sm.try_snapshot(snapshot_id)
            if snapshot is not None and snapshot.commit_user == self.commit_user:
                self._see(snapshot)
                return
        if earliest > 1 and self.last_identifier is None:
            self.complete = False
            logger.warning(
                "no snapshot of commit user %s among snapshots %s..%s of %s; older ones expired, so a "
                "replay of an expired commit is recognised only by its files",
                self.commit_user, earliest, latest, self.table.identifier,
            )  # fmt: skip

    def _see(self, snapshot: Snapshot) -> None:
        if snapshot.commit_user == self.commit_user:
            self.record(snapshot.commit_identifier, snapshot.commit_kind, snapshot.id)

    def record(
        self, identifier: int, kind: CommitKind, snapshot_id: int, files: frozenset[str] = frozenset()
    ) -> None:
        """Note a commit of this user (seen in the history, or just made by this committer with ``files``)."""
        if files:
            self.files[identifier] = self.files.get(identifier, frozenset()) | files
            while len(self.files) > _REMEMBERED:
                del self.files[next(iter(self.files))]
        if self.last_identifier is None or identifier > self.last_identifier:
            self.last_identifier = identifier
        self._landed[(identifier, kind)] = snapshot_id
        while len(self._landed) > _REMEMBERED:
            del self._landed[next(iter(self._landed))]

    def landed(self, identifier: int, kind: CommitKind) -> int | None:
        """The snapshot where this user's (identifier, kind) landed, among the snapshots seen so far."""
        return self._landed.get((identifier, kind))

    def snapshots_of(self, identifier: int) -> list[Snapshot]:
        """Every retained snapshot of this user with ``identifier`` (a full backwards search)."""
        sm = self.table.snapshot_manager
        latest, earliest = sm.latest_id(), sm.earliest_id()
        if latest is None or earliest is None:
            return []
        found = []
        for snapshot_id in range(latest, earliest - 1, -1):
            snapshot = sm.try_snapshot(snapshot_id)
            if snapshot is None or snapshot.commit_user != self.commit_user:
                continue
            if snapshot.commit_identifier == identifier:
                found.append(snapshot)
            elif snapshot.commit_identifier < identifier:
                break  # identifiers grow along the history
        return found
