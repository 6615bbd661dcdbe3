"""Replay recognition: whether a commit (or an attempt of one whose outcome was unknown) landed before.

A commit user commits its identifiers in increasing order, so an identifier not newer than the user's newest
one is a replay: told apart from a different commit by its files (the snapshot's delta names them, or, once
that snapshot expired, they are live, replaced by a retained snapshot, or gone with a compaction). The
user's newest commit comes from the commit progress record (:mod:`paimon_core.table._history`).
docs/commit-protocol.md, "Exactly once", has the argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from paimon_core.errors import (
    CommitError,
    CommitFilesError,
    CommitHistoryExpiredError,
    CommitIdentifierError,
    CommitStateUnknownError,
    CorruptMetadataError,
    SnapshotExpiredError,
)
from paimon_core.manifest import FileKind, ManifestEntry
from paimon_core.redaction import get_logger
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind
from paimon_core.storage import join_path
from paimon_core.table._compacted_changelog import real_changelog_path
from paimon_core.table._history import OwnCommits
from paimon_core.table._messages import CommitMessage
from paimon_core.table.commit._changes import Changes, entries
from paimon_core.table.commit._entries import delta_entries
from paimon_core.table.commit._outcome import AlreadyLive, LandedUnseen, Published

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

logger = get_logger(__name__)

_EXISTS_THREADS = 16


class ReplayCheck:
    """Tells whether this commit user's commits landed before.

    Args:
        table: the table.
        own: this user's commits seen so far (shared with the rest of the committer).
    """

    def __init__(self, table: TableStore, own: OwnCommits) -> None:
        self.table = table
        self.own = own
        self.commit_user = own.commit_user

    def is_committed(self, commit_identifier: int) -> bool:
        """Whether this user committed ``commit_identifier`` (or a later one); see TableCommit.is_committed."""
        if commit_identifier == BATCH_COMMIT_IDENTIFIER:
            return False
        self.catch_up()
        last = self.own.last_identifier
        return last is not None and commit_identifier <= last

    def catch_up(self) -> None:
        """Read this user's new snapshots. Failing to, a committer that has not searched the history since it
        started or since an unknown outcome cannot tell whether a replayed identifier landed before."""
        try:
            self.own.catch_up()
        except Exception as exc:
            if not self.own.uncertain or isinstance(exc, CommitError):
                raise
            raise CommitStateUnknownError(
                f"cannot tell whether an earlier commit of {self.commit_user} to {self.table.path} landed: "
                f"searching its history failed: {exc}"
            ) from exc

    def replayed(self, messages: Sequence[CommitMessage], identifier: int, deletes: bool) -> bool:
        """Whether ``identifier`` was committed already by this user, with these messages (``deletes``: the
        commit deletes files, as overwrites do).

        Raises:
            CommitIdentifierError: it was, or a newer one was, and these messages are not that commit.
        """
        if identifier == BATCH_COMMIT_IDENTIFIER:
            return False
        last = self.own.last_identifier
        if last is None or identifier > last:  # only then can newer commits of this user matter
            self.catch_up()
            last = self.own.last_identifier
        added = {f.file_name for m in messages for f in (*m.new_files, *m.compact_after)}
        if last is None or identifier > last:
            return self._new_identifier_replayed(messages, identifier, added, deletes)
        committed: AbstractSet[str] | None = None
        try:
            committed = self.own.files.get(identifier) or self._files_committed_as(identifier)
            # When that snapshot expired, a replay's files are live (maybe moved up a level since, which keeps
            # their names), replaced by a retained snapshot, or gone with a compaction that expired.
            if (committed is not None and added <= committed) or (
                committed is None
                and (
                    self.all_live(added)
                    or self._live_or_gone(messages)
                    or (bool(added) and self.compacted_away(identifier, added))
                )
            ):
                return True
        except (OSError, CorruptMetadataError) as exc:
            raise CommitStateUnknownError(
                f"identifier {identifier} of {self.commit_user} was committed to {self.table.path} before, "
                f"but whether with these messages cannot be told: {exc}"
            ) from exc
        raise CommitIdentifierError(
            f"commit user {self.commit_user!r} already committed identifier {last} to {self.table.path}; "
            f"identifier {identifier} is not newer"
            + (" and was committed with other files" if committed is not None else "")
            + " (each commit needs a new, increasing identifier; a replay must carry the same messages)",
            self.commit_user,
            identifier,
            last,
        )

    def _new_identifier_replayed(
        self, messages: Sequence[CommitMessage], identifier: int, added: set[str], deletes: bool
    ) -> bool:
        """Whether an identifier newer than any the history names for this user landed before all the same:
        only a history that expired without naming the user can hide it, and then only its files tell."""
        if deletes and not added and not self.own.complete:
            # Without new files a replay of an expired commit cannot be recognised, and repeating a
            # delete could remove rows that later commits added.
            raise CommitHistoryExpiredError(
                f"whether commit user {self.commit_user!r} already committed identifier {identifier} to "
                f"{self.table.path} cannot be told: its earlier snapshots expired, and this commit adds "
                "no files to recognise it by; if it was never committed, commit it without an identifier"
            )
        if not added or self.own.complete:
            return False
        if deletes and self.all_live({f.file_name for m in messages for f in m.new_files}):
            # New files are named once: live means committed (maybe moved up a level since, which keeps
            # the name). Publishing an overwrite again would delete what later commits added.
            logger.info("overwrite %s of %s landed before: its files are live", identifier, self.commit_user)
            return True
        return self.compacted_away(identifier, added)

    def all_live(self, names: set[str]) -> bool:
        """Whether these files are all live in the latest snapshot (False for none)."""
        latest = self.table.snapshot_manager.latest()
        if not names or latest is None:
            return False
        try:
            live = {e.file.file_name for e in self.table.live_files.at(latest).values()}
        except (OSError, CorruptMetadataError, SnapshotExpiredError) as exc:
            raise CommitStateUnknownError(
                f"whether a commit of {self.commit_user} to {self.table.path} landed before cannot be told: {exc}"
            ) from exc
        return names <= live

    def compacted_away(self, identifier: int, added: set[str]) -> bool:
        """Whether files to add were committed before and then replaced by a retained snapshot (a compaction or
        an overwrite): a replay whose own snapshot expired, recognised by what came after it.

        Raises:
            CommitStateUnknownError: some files were replaced, some not, or the history cannot be read.
        """
        try:
            replaced, pending = self._replaced(added)
        except (OSError, CorruptMetadataError, SnapshotExpiredError) as exc:
            raise CommitStateUnknownError(
                f"whether identifier {identifier} of {self.commit_user} was committed to {self.table.path} "
                f"before cannot be told: reading its history failed: {exc}"
            ) from exc
        if not replaced:
            return False
        if replaced != pending:
            raise CommitStateUnknownError(
                f"files of identifier {identifier} of {self.commit_user} were replaced by later snapshots of "
                f"{self.table.path}, others are not in the table: whether it was committed cannot be told"
            )
        logger.info("commit %s of %s landed before and was compacted since", identifier, self.commit_user)
        return True

    def _replaced(self, added: set[str]) -> tuple[set[str], set[str]]:
        """Of the files to add that are not live (the pending ones), those a listed snapshot deleted; and the
        pending ones. Nothing when the table is empty or every file is live."""
        sm = self.table.snapshot_manager
        latest = sm.latest()
        if latest is None:
            return set(), set()
        live = {f.file_name for f in (e.file for e in self.table.live_files.at(latest).values())}
        pending = added - live
        if not pending:
            return set(), pending  # all live: the attempt recognises the same commit
        replaced: set[str] = set()
        # Snapshot files below EARLIEST count too: expiration deletes data files before the snapshots
        # that deleted them, so a replaced file that is still there has its deleter still listed. Any
        # snapshot that deleted a file, even a stale publish, was built on a base where it was live.
        for snapshot_id in reversed([i for i in sm.list_ids() if i <= latest.id]):
            snapshot = sm.try_snapshot(snapshot_id)
            if snapshot is None or snapshot.commit_kind == CommitKind.APPEND:
                continue
            delta = delta_entries(self.table, snapshot)
            replaced |= {e.file.file_name for e in delta if e.kind == FileKind.DELETE} & pending
        return replaced, pending

    def _files_committed_as(self, identifier: int) -> set[str] | None:
        """Names of the files this user's snapshots of ``identifier`` added; None if none can be read."""
        snapshots = self.own.snapshots_of(identifier)
        if not snapshots:
            return None
        names: set[str] = set()
        try:
            for snapshot in snapshots:
                delta = delta_entries(self.table, snapshot)
                names.update(e.file.file_name for e in delta if e.kind == FileKind.ADD)
        except CorruptMetadataError:
            return None
        return names

    def _live_or_gone(self, messages: Sequence[CommitMessage]) -> bool:
        added = entries(messages, "new_files", FileKind.ADD) + entries(
            messages, "compact_after", FileKind.ADD
        )
        live = self.table.live_files.at(self.table.snapshot_manager.latest())
        fresh = [e for e in added if e.identifier() not in live]
        return not any(self.exist(fresh))

    def require_files(self, to_commit: Sequence[ManifestEntry], identifier: int) -> None:
        """The files to add must exist: a snapshot that lists a missing file can never be read.

        Raises:
            CommitFilesError: some files are gone (an abort or orphan removal deleted them).
            CommitStateUnknownError: they are gone, and this commit may have landed in a snapshot that
                expired since, with files that a compaction replaced and expiration deleted.
        """
        added = [e for e in to_commit if e.kind == FileKind.ADD]
        missing = [e.file.file_name for e, there in zip(added, self.exist(added), strict=True) if not there]
        if not missing:
            return
        if identifier != BATCH_COMMIT_IDENTIFIER and not self.own.complete:
            raise CommitHistoryExpiredError(
                f"{len(missing)} files of commit {identifier} of {self.commit_user!r} are gone from "
                f"{self.table.path}, and this user's earlier snapshots expired: it may have been committed "
                f"before and compacted away since (e.g. {missing[0]})"
            )
        raise CommitFilesError(
            f"files to commit to {self.table.path} no longer exist (deleted by an abort or by orphan file "
            "removal); nothing was committed",
            missing,
        )

    def exist(self, files: Sequence[ManifestEntry]) -> list[bool]:
        """Whether each entry's file is in storage (a changelog slice: its physical file)."""
        table = self.table

        def exists(entry: ManifestEntry) -> bool:
            file = entry.file
            path = file.external_path or join_path(
                table.bucket_dir(entry.partition, entry.bucket), file.file_name
            )
            return table.storage.exists(real_changelog_path(path))

        if len(files) <= 2:
            return [exists(e) for e in files]
        with ThreadPoolExecutor(max_workers=min(_EXISTS_THREADS, len(files))) as pool:
            return list(pool.map(exists, files))

    # --- attempts whose outcome was unknown --------------------------------------------------------------

    def expired_unknown(
        self, changes: Changes, identifier: int, unknown: Mapping[str, Published]
    ) -> AlreadyLive | LandedUnseen | None:
        """An attempt whose outcome was unknown may have landed, been compacted and expired unseen: before
        publishing the files again, tell it by the files, as a replay whose snapshot expired is told.

        Returns:
            :class:`LandedUnseen` when the progress record names it; :class:`AlreadyLive` when a snapshot
            replaced the files since (files still live are found by the conflict check); None when it did
            not land, or its snapshot id still tells.

        Raises:
            CommitHistoryExpiredError: some files are gone, or the attempt adds none to tell it by.
        """
        # Snapshot ids are dense: an id at or below the latest whose file is gone held a snapshot that was
        # deleted since (maybe ours). Another's snapshot there, or none yet, and the loop's search has told.
        # (Not EARLIEST: an older expiration may set it back for a moment.)
        sm = self.table.snapshot_manager
        latest_id = sm.latest_id() or 0
        if all(p.snapshot.id > latest_id or sm.try_snapshot(p.snapshot.id) for p in unknown.values()):
            return None
        if identifier != BATCH_COMMIT_IDENTIFIER and self.own.tracked:
            # The latest snapshot's progress record holds this user's newest commit, ours if it landed.
            return self.landed_unseen(identifier, unknown)
        added = [e for e in changes.entries if e.kind == FileKind.ADD]
        names = {e.file.file_name for e in added}
        # An overwrite's new files all live (maybe moved up a level since, keeping their names): it landed,
        # and publishing it again would delete what later commits added.
        if changes.kind == CommitKind.OVERWRITE and self.all_live(names):
            return AlreadyLive()
        if names and self.compacted_away(identifier, names):
            return AlreadyLive()
        if not names or not all(self.exist(added)):
            raise CommitHistoryExpiredError(
                f"a commit attempt of {self.commit_user} (identifier {identifier}) to {self.table.path} had an "
                "unknown outcome and its snapshot id has expired since; "
                + ("its files are gone" if names else "it adds no files")
                + ", so whether it landed cannot be told"
            )
        return None

    def landed_unseen(self, identifier: int, unknown: Mapping[str, Published]) -> LandedUnseen | None:
        """:class:`LandedUnseen` when the newest snapshot of this user that the progress records name is one of
        the attempts whose outcome was unknown (its file expired, so the loop's search missed it)."""
        own = self.own
        if own.last_identifier == identifier and own.last_snapshot_id in {
            p.snapshot.id for p in unknown.values()
        }:
            return LandedUnseen()
        return None
