"""TableCommit: the public commit API. It translates writers' messages into the changes of each snapshot
(:mod:`._changes`), asks :mod:`._replay` whether they were committed before, and hands each snapshot to the
attempt loop (:mod:`._attempt`). docs/commit-protocol.md describes the stages.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from paimon_core import options as opts
from paimon_core.errors import CommitConflictError, CommitRetriesExhaustedError, LockAcquisitionError
from paimon_core.manifest import FileKind, ManifestEntry, merge_manifests, read_manifest_list
from paimon_core.redaction import get_logger
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind
from paimon_core.table._history import OwnCommits
from paimon_core.table._messages import CommitMessage
from paimon_core.table.commit._attempt import AttemptLoop, CommitCall
from paimon_core.table.commit._changes import (
    Changes,
    compaction_entries,
    compaction_messages,
    entries,
    force_create_snapshot,
    index_changes,
    overwrite_changes,
    overwrite_scope,
    restored_from,
)
from paimon_core.table.commit._publish import Publisher, open_lock
from paimon_core.table.commit._replay import ReplayCheck
from paimon_core.table.commit._snapshot_builder import SnapshotBuilder, delete_files, full_merge_context

if TYPE_CHECKING:
    from paimon_core.snapshot import Snapshot
    from paimon_core.table._store import TableStore

logger = get_logger(__name__)


class TableCommit:
    """Commits writers' messages to a table, one snapshot per change kind.

    Args:
        table: the table.
        commit_user: identity of the committing job; keep it stable across restarts of a streaming job so
            that a replayed commit identifier is recognised. A fresh UUID when None.

    Attributes:
        last_attempts: for each snapshot the last ``commit``/``overwrite`` call created, how many publish
            attempts it took (1 = no lost race).
    """

    def __init__(self, table: TableStore, commit_user: str | None = None) -> None:
        self.table = table
        prefix = table.options.get_option(opts.COMMIT_USER_PREFIX)
        self.commit_user = commit_user or (f"{prefix}_{uuid.uuid4()}" if prefix else str(uuid.uuid4()))
        self.last_attempts: dict[int, int] = {}
        self._own = OwnCommits(table, self.commit_user)
        self._replay = ReplayCheck(table, self._own)
        # A store that cannot create a file atomically publishes only under a commit lock (lock.enabled).
        publisher = Publisher(table, self._own, open_lock(table))
        builder = SnapshotBuilder(table, self.commit_user)
        self._loop = AttemptLoop(table, self._own, self._replay, builder, publisher)

    def commit(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        *,
        watermark: int | None = None,
    ) -> list[int]:
        """Commit messages: an APPEND (or OVERWRITE, when files are deleted) then a COMPACT snapshot.

        ``watermark`` (epoch millis of event time, as a streaming writer tracks it) is recorded in the
        snapshot; a snapshot keeps the largest watermark seen so far (``scan.bounded.watermark`` reads it).

        Returns:
            The ids of the snapshots created; empty when there was nothing to commit, or when these
            messages were committed already (the same identifier replayed by this commit user, or the same
            files committed twice).

        Raises:
            CommitConflictError: files this commit deletes are gone (another overwrite or compaction won).
            CommitIdentifierError: this commit user already committed ``commit_identifier`` or a newer
                identifier, with other files.
            CommitFilesError: some of the files are live already, or gone from storage.
            CommitRetriesExhaustedError: ``commit.timeout`` passed while other commits kept winning.
            CommitStateUnknownError: the store may or may not hold the snapshot.
        """
        call = self._new_call()
        deletes = any(m.deleted_files or m.compact_before for m in messages)
        if self._replay.replayed(messages, commit_identifier, deletes):
            logger.info("commit %s of %s already landed; nothing to do", commit_identifier, self.commit_user)
            return []
        append_entries = entries(messages, "new_files", FileKind.ADD) + entries(
            messages, "deleted_files", FileKind.DELETE
        )
        compact_entries = compaction_entries(messages)
        append_changelog = entries(messages, "changelog_files", FileKind.ADD)
        compact_changelog = entries(messages, "compact_changelog_files", FileKind.ADD)
        self._replay.require_files(
            append_entries + compact_entries + append_changelog + compact_changelog, commit_identifier
        )
        data_index = index_changes(messages, compaction=False)
        created = []
        has_deletes = any(e.kind == FileKind.DELETE for e in append_entries)
        if append_entries or append_changelog or data_index or force_create_snapshot(self.table, messages):
            kind = CommitKind.OVERWRITE if has_deletes else CommitKind.APPEND
            changes = Changes(
                kind,
                append_entries,
                has_deletes,
                watermark=watermark,
                index_changes=data_index,
                changelog=tuple(append_changelog),
                restored_from=restored_from(messages),
            )
            created += self._loop.run(call, kind, lambda _latest: changes, commit_identifier)
        created += self._commit_compaction(
            call,
            messages,
            compact_entries,
            compact_changelog,
            commit_identifier,
            watermark,
            data_landed=bool(append_entries),
        )
        self._expire_after(created)
        return created

    def overwrite(
        self,
        messages: Sequence[CommitMessage],
        partition: Mapping[str, Any] | None = None,
        *,
        dynamic: bool | None = None,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        watermark: int | None = None,
    ) -> list[int]:
        """Replace live data with the messages' files in one OVERWRITE snapshot.

        Args:
            messages: the new files.
            partition: a static partition spec (``{"dt": "2024-01-01"}``); ``{}`` means the whole table.
            dynamic: with no spec, overwrite only the partitions present in the new files. Defaults to the
                ``dynamic-partition-overwrite`` option for partitioned tables.

        Raises:
            SchemaError: the spec names unknown columns, or new files lie outside the static spec.
            CommitIdentifierError, CommitFilesError, CommitStateUnknownError: as for :meth:`commit`.
        """
        call = self._new_call()
        table = self.table
        new_entries = entries(messages, "new_files", FileKind.ADD)
        compact_entries = compaction_entries(messages)
        if dynamic is None:
            dynamic = bool(table.partition_keys) and table.options.get_option(
                opts.DYNAMIC_PARTITION_OVERWRITE
            )
        deletes = partition is not None or not (dynamic and table.partition_keys) or bool(new_entries)
        if self._replay.replayed(messages, commit_identifier, deletes):
            return []
        scope = overwrite_scope(table, partition, dynamic, new_entries)
        if scope is None:
            return []
        self._replay.require_files(new_entries + compact_entries, commit_identifier)
        build = overwrite_changes(table, messages, scope, new_entries, watermark)
        created = self._loop.run(call, CommitKind.OVERWRITE, build, commit_identifier)
        # The writers' compactions of the new data follow, as in Java (an overwrite commits no changelog).
        created += self._commit_compaction(
            call, messages, compact_entries, [], commit_identifier, watermark, data_landed=bool(created)
        )
        self._expire_after(created)
        return created

    def is_committed(self, commit_identifier: int) -> bool:
        """Whether this commit user already committed ``commit_identifier`` (or a later one).

        The contract, as in Java Paimon: a commit user commits its identifiers in increasing order (a Spark
        streaming query's batch ids, a Flink checkpoint's id), so any identifier up to the newest one it
        committed counts as committed. The answer stays right after the user's snapshots expired: every
        snapshot records each user's newest identifier (docs/commit-protocol.md, exactly once). Batch commits
        (the maximal identifier) are never deduplicated this way. The snapshot history is searched once per
        committer (at recovery); afterwards only the snapshots that came since.
        """
        return self._replay.is_committed(commit_identifier)

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the new files of uncommitted messages."""
        self.table.delete_new_files(messages)

    def _new_call(self) -> CommitCall:
        call = CommitCall()
        self.last_attempts = call.attempts
        return call

    def drop_partitions(
        self, files: Sequence[ManifestEntry], commit_identifier: int = BATCH_COMMIT_IDENTIFIER
    ) -> list[int]:
        """Drop partitions: one OVERWRITE snapshot deleting ``files`` (the live files of the partitions, read
        from one snapshot) and the index files of their partitions, as Java's ``dropPartitions``.

        The deletes are checked against the latest snapshot, so two drops of one partition never both land:
        the second fails with CommitConflictError and drops nothing. No after-commit work runs (as Java's).

        Returns:
            The id of the snapshot created (empty when ``files`` is).

        Raises:
            CommitConflictError: some of the files are gone (another drop, an overwrite or a compaction won).
            CommitRetriesExhaustedError, CommitStateUnknownError: as for :meth:`commit`.
        """
        if not files:
            return []
        partitions = {e.partition for e in files}
        changes = Changes(
            CommitKind.OVERWRITE,
            [dataclasses.replace(e, kind=FileKind.DELETE) for e in files],
            check_conflicts=True,
            index_scope=lambda partition: partition in partitions,
        )
        return self._loop.run(
            self._new_call(), CommitKind.OVERWRITE, lambda _latest: changes, commit_identifier
        )

    def compact_manifests(self) -> list[int]:
        """Rewrite the latest snapshot's data manifests into merged ones, as Java's ``compactManifest``: one
        COMPACT snapshot with the same live files, its base list the merged manifests and an empty delta.

        Every manifest is merged, whatever ``manifest.merge-min-count`` and
        ``manifest.full-compaction-threshold-size`` say; DELETE entries cancel their ADDs. The old manifests
        stay until snapshot expiration removes them. Nothing is committed when the table is empty or the
        merge would change nothing (a single manifest, as Java's).

        Returns:
            The id of the snapshot created, or [] when nothing was due.

        Raises:
            CommitRetriesExhaustedError, CommitStateUnknownError: as for :meth:`commit`.
        """
        table = self.table
        latest = table.snapshot_manager.latest()
        if latest is None or not _manifests_to_merge(table, latest):
            return []
        changes = Changes(CommitKind.COMPACT, [], check_conflicts=False, full_manifest_merge=True)
        return self._loop.run(
            self._new_call(), CommitKind.COMPACT, lambda _latest: changes, BATCH_COMMIT_IDENTIFIER
        )

    def _commit_compaction(
        self,
        call: CommitCall,
        messages: Sequence[CommitMessage],
        compact_entries: list[ManifestEntry],
        compact_changelog: list[ManifestEntry],
        commit_identifier: int,
        watermark: int | None,
        *,
        data_landed: bool,
    ) -> list[int]:
        """The COMPACT snapshot of the messages' compactions (files rewritten, their changelog, deletion
        vectors), if any.

        When the data of the same commit landed (``data_landed``), a compaction that lost a race to another
        compaction or an overwrite is dropped, not raised: only the rewrite is lost (every engine's writers
        get this, not just Table.append).
        """
        compaction_index = index_changes(messages, compaction=True)
        if not (compact_entries or compact_changelog or compaction_index):
            return []
        changes = Changes(
            CommitKind.COMPACT,
            compact_entries,
            check_conflicts=True,
            watermark=watermark,
            index_changes=compaction_index,
            changelog=tuple(compact_changelog),
        )
        try:
            return self._loop.run(call, CommitKind.COMPACT, lambda _latest: changes, commit_identifier)
        except (CommitConflictError, CommitRetriesExhaustedError, LockAcquisitionError) as exc:
            if not data_landed:
                raise  # a compaction alone: its job re-plans
            logger.info("inline compaction of %s lost a race: %s", self.table.identifier, exc)
            self.table.delete_new_files(compaction_messages(messages))
            return []

    def _expire_after(self, created: Sequence[int]) -> None:
        """The after-commit hook, as Java's committer maintains a table: automatic tags, then tag, partition,
        consumer and snapshot expiration (the hook decides what write-only tables skip).

        The commit has landed whatever happens here: a failure is logged, never raised.
        """
        hook = self.table.hooks.after_commit
        if not created or hook is None:
            return
        try:
            hook(self.table, created)
        except Exception:
            logger.warning(
                "the work after a commit to %s (automatic tags; tag, partition, consumer or snapshot "
                "expiration) failed",
                self.table.identifier,
                exc_info=True,
            )


def _manifests_to_merge(table: TableStore, latest: Snapshot) -> bool:
    """Whether a full merge of ``latest``'s data manifests changes them (Java commits nothing otherwise;
    nor for a single manifest, which its full compaction leaves as it is).

    The trial merge's new manifests are deleted: the commit's own attempt writes its own, on whatever
    snapshot is latest by then.
    """
    ctx = full_merge_context(table.manifest_context)
    before = read_manifest_list(table.storage, ctx.path(latest.base_manifest_list))
    before += read_manifest_list(table.storage, ctx.path(latest.delta_manifest_list))
    if len(before) <= 1:
        return False
    after = merge_manifests(ctx, before)
    known = {m.file_name for m in before}
    delete_files(table, [ctx.path(m.file_name) for m in after if m.file_name not in known])
    return {m.file_name for m in after} != known
