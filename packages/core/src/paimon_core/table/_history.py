"""The snapshots one commit user made: what exactly-once commits and replay detection look up.

Recovery scans the history backwards from the latest snapshot, until the user's newest snapshot or the
newest snapshot that carries the commit progress of every user (:class:`CommitProgress`); afterwards only
snapshots newer than the last one looked at are read, so that a committer sees commits of other handles
with the same user (and its own commits whose outcome it never heard of).

Commit progress: every snapshot this project writes carries, in its ``properties`` under
:data:`PROGRESS_PROPERTY`, the newest identifier (and the snapshot holding it) of every commit user that
committed with an identifier, copied from the snapshot it was built on. Java Paimon keeps no such record:
its committers find a user's newest identifier in the user's newest retained snapshot
(``SnapshotManager.latestSnapshotOfUser``), so once they all expire a replay lands again. The record is
published with the snapshot by the same atomic create, so it follows the chain exactly: a rollback takes
it back with the snapshots, a branch starts from its tag's. Readers that do not know the key (Java,
pypaimon) ignore it; a snapshot they commit does not carry it, and the next commit here rebuilds it from
the snapshots in between and the newest record below them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paimon_core.redaction import get_logger
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot, SnapshotManager

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["PROGRESS_PROPERTY", "CommitProgress", "OwnCommits"]

logger = get_logger(__name__)

_REMEMBERED = 256  # (identifier, kind) pairs kept for lookups; older ones are searched on demand

#: The snapshot property holding :class:`CommitProgress` (compact JSON).
PROGRESS_PROPERTY = "paimon-core.commit-progress"
#: Commit users a record keeps at most; beyond, those whose newest commit is oldest are dropped.
MAX_TRACKED_USERS = 1000


@dataclass(frozen=True)
class CommitProgress:
    """The newest identifier of each commit user up to one snapshot, and the snapshot that holds it.

    Attributes:
        users: commit user -> (newest identifier, id of the user's newest snapshot). Batch commits (the
            maximal identifier) are not recorded: they are never deduplicated by identifier.
        partial: users may be missing (dropped past :data:`MAX_TRACKED_USERS`, or the record was rebuilt
            over a history that had expired): a user absent from ``users`` may have committed before.
    """

    users: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    partial: bool = False

    @classmethod
    def of(cls, snapshot: Snapshot) -> CommitProgress | None:
        """The record a snapshot carries; None when it carries none (or an unreadable one, logged)."""
        text = (snapshot.properties or {}).get(PROGRESS_PROPERTY)
        if text is None:
            return None
        try:
            data = json.loads(text)
            users = {str(user): (int(entry[0]), int(entry[1])) for user, entry in dict(data["users"]).items()}
            return cls(users, bool(data.get("partial", False)))
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            logger.warning(
                "snapshot %s has an unreadable %s property: %s", snapshot.id, PROGRESS_PROPERTY, exc
            )
            return None

    def with_commit(self, user: str, identifier: int, snapshot_id: int) -> CommitProgress:
        """This record plus a commit of ``user`` in snapshot ``snapshot_id``."""
        if identifier == BATCH_COMMIT_IDENTIFIER:
            return self
        users = dict(self.users)
        previous = users.get(user)
        if previous is None or identifier >= previous[0]:
            users[user] = (identifier, snapshot_id)
        partial = self.partial
        if len(users) > MAX_TRACKED_USERS:
            newest = sorted(users.items(), key=lambda item: item[1][1])[-MAX_TRACKED_USERS:]
            users, partial = dict(newest), True
        return CommitProgress(users, partial)

    def to_property(self) -> str:
        data: dict[str, object] = {"users": {user: list(entry) for user, entry in self.users.items()}}
        if self.partial:
            data["partial"] = True
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def rebuild_progress(sm: SnapshotManager, latest: Snapshot) -> CommitProgress:
    """The record of ``latest``, which carries none (written by Java, pypaimon or an older release): the
    newest record below it plus the commits of the snapshots in between."""
    newer: dict[str, tuple[int, int]] = {}  # each user's newest commit above the record found
    base: CommitProgress | None = None
    gap = False  # a snapshot expired while we looked: its commit is not known
    earliest = sm.earliest_id() or 1
    for snapshot_id in range(latest.id, earliest - 1, -1):
        snapshot = latest if snapshot_id == latest.id else sm.try_snapshot(snapshot_id)
        if snapshot is None:
            gap = True
            continue
        base = CommitProgress.of(snapshot)
        if base is not None:
            break
        if snapshot.commit_identifier != BATCH_COMMIT_IDENTIFIER:
            newer.setdefault(snapshot.commit_user, (snapshot.commit_identifier, snapshot.id))
    if base is None:
        base = CommitProgress(partial=earliest > 1)  # the history before `earliest` expired unrecorded
    users = dict(base.users)
    for user, entry in newer.items():
        if user not in users or users[user][0] <= entry[0]:
            users[user] = entry
    return CommitProgress(users, base.partial or gap)


class OwnCommits:
    """The newest identifier a commit user committed, and where its recent commits landed."""

    def __init__(self, table: TableStore, commit_user: str) -> None:
        self.table = table
        self.commit_user = commit_user
        self.last_identifier: int | None = None
        self.last_snapshot_id: int | None = None  # the newest snapshot of this user known
        self.complete = True  # False when expired snapshots may hide commits of this user
        # Whether the newest snapshot looked at carries a commit progress record: then a commit of this
        # user that landed and expired unseen is known all the same.
        self.tracked = False
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
                self.tracked = snapshot is not None and self._see(snapshot)
        self._scanned_to = latest
        self.uncertain = False

    def _recover(self, latest: int) -> None:
        sm = self.table.snapshot_manager
        earliest = sm.earliest_id() or 1
        self.complete = True
        self.tracked = False
        for snapshot_id in range(latest, earliest - 1, -1):
            snapshot = sm.try_snapshot(snapshot_id)
            if snapshot is None:
                continue
            progress = CommitProgress.of(snapshot)
            self.tracked = self.tracked or (snapshot_id == latest and progress is not None)
            if snapshot.commit_user == self.commit_user:
                self._see(snapshot)
                return
            if progress is not None:
                # Every commit of this user below this snapshot is summed up in its record.
                self._see_progress(progress)
                self.complete = self.commit_user in progress.users or not progress.partial
                if not self.complete:
                    self._warn_incomplete(earliest, latest)
                return
        if earliest > 1 and self.last_identifier is None:
            self.complete = False
            self._warn_incomplete(earliest, latest)

    def _warn_incomplete(self, earliest: int, latest: int) -> None:
        logger.warning(
            "no snapshot of commit user %s among snapshots %s..%s of %s and no record of its progress; older "
            "ones expired, so a replay of an expired commit is recognised only by its files",
            self.commit_user, earliest, latest, self.table.identifier,
        )  # fmt: skip

    def _see(self, snapshot: Snapshot) -> bool:
        """Note what a snapshot tells of this user; whether it carries a progress record."""
        if snapshot.commit_user == self.commit_user:
            self.record(snapshot.commit_identifier, snapshot.commit_kind, snapshot.id)
        progress = CommitProgress.of(snapshot)
        if progress is not None:
            self._see_progress(progress)
        return progress is not None

    def _see_progress(self, progress: CommitProgress) -> None:
        entry = progress.users.get(self.commit_user)
        if entry is not None:
            self._advance(*entry)

    def _advance(self, identifier: int, snapshot_id: int) -> None:
        if self.last_identifier is None or identifier > self.last_identifier:
            self.last_identifier = identifier
        if identifier == self.last_identifier:
            self.last_snapshot_id = max(self.last_snapshot_id or 0, snapshot_id)

    def record(
        self, identifier: int, kind: CommitKind, snapshot_id: int, files: frozenset[str] = frozenset()
    ) -> None:
        """Note a commit of this user (seen in the history, or just made by this committer with ``files``)."""
        if files:
            self.files[identifier] = self.files.get(identifier, frozenset()) | files
            while len(self.files) > _REMEMBERED:
                del self.files[next(iter(self.files))]
        self._advance(identifier, snapshot_id)
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
