"""The optimistic commit: build a snapshot on top of the latest one and publish it with an atomic create.

One attempt reads the latest snapshot, checks the commit's files against it (files to add must not be live
already; overwrites and compactions must find the files they delete still live), writes the base manifest
list (the previous state, merged) and publishes ``snapshot-<latest+1>`` with the storage backend's
``write_if_absent``. A publish that succeeded is then checked to continue the chain of snapshots
(:mod:`._chain`): snapshot expiration may have freed the id it took. Losing the race, or publishing into
such a hole, retries with back-off and jitter until ``commit.timeout``; the attempt's own manifests are
deleted first. An unknown outcome is resolved by looking for the attempt's snapshot in newer snapshots,
never by blind retry or clean-up. docs/commit-protocol.md has the whole argument.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from paimon_core import options as opts
from paimon_core.errors import (
    AtomicCommitUnsupportedError,
    CommitConflictError,
    CommitError,
    CommitFilesError,
    CommitHistoryExpiredError,
    CommitIdentifierError,
    CommitRetriesExhaustedError,
    CommitStateUnknownError,
    ConfigError,
    CorruptMetadataError,
    LockAcquisitionError,
    PaimonError,
    SchemaError,
    SnapshotExpiredError,
)
from paimon_core.manifest import (
    DELETION_VECTORS_INDEX,
    FileIdentifier,
    FileKind,
    IndexFileMeta,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    ManifestNamer,
    combine_index_entries,
    merge_manifests,
    read_manifest_list,
    write_index_manifest,
    write_manifest_list,
    write_manifests,
)
from paimon_core.redaction import Redactor, get_logger
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from paimon_core.storage import Capability, CommitLock, join_path, open_commit_lock
from paimon_core.table._chain import follows_chain
from paimon_core.table._compacted_changelog import real_changelog_path
from paimon_core.table._entries import explain_missing, manifest_metas, read_entries
from paimon_core.table._history import PROGRESS_PROPERTY, CommitProgress, OwnCommits, rebuild_progress
from paimon_core.table._messages import CommitMessage

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

logger = get_logger(__name__)

_CONFLICT_SEARCH_DEPTH = 200  # snapshots searched backwards to name the commit that won a conflict
_EXISTS_THREADS = 16
_BACKOFF_DOUBLINGS = 6  # the back-off window stops growing after this many lost races (fairness)

OverwriteScope = Callable[[bytes], bool]  # whether an overwrite replaces the partition (stored bytes)


@dataclass(frozen=True)
class _Attempt:
    kind: CommitKind
    entries: list[ManifestEntry]
    check_conflicts: bool
    watermark: int | None = None  # the writer's event-time watermark; snapshots keep the largest
    index_changes: tuple[IndexManifestEntry, ...] = ()
    index_scope: OverwriteScope | None = None  # an overwrite drops the index files of these partitions
    changelog: tuple[ManifestEntry, ...] = ()  # changelog files, listed in the snapshot's changelog list


@dataclass(frozen=True)
class _Published:
    """A snapshot one attempt tried to publish, with what it was built from."""

    snapshot: Snapshot
    base: Snapshot | None
    entries: list[ManifestEntry]


class _AlreadyLive(Exception):
    """Every file the attempt adds is live already: these messages were committed before."""


class _LandedUnseen(Exception):
    """An attempt whose outcome was unknown landed, and its snapshot expired before the committer looked
    again: the commit progress record of a later snapshot names it."""


@dataclass(frozen=True)
class _ManifestList:
    """A written manifest list and the manifests it names."""

    name: str
    size: int
    metas: list[ManifestFileMeta]

    def paths(self, table: TableStore) -> list[str]:
        return [table.manifest_path(self.name), *(table.manifest_path(m.file_name) for m in self.metas)]


@dataclass(frozen=True)
class _DeltaLists:
    """The delta (and changelog) manifest lists of an attempt's entries; reused by later attempts."""

    key: tuple[tuple[FileKind, FileIdentifier], ...]
    delta: _ManifestList
    changelog: _ManifestList | None


@dataclass
class _Written:
    """Metadata files one commit call wrote; deleted when they can be known to be unused."""

    attempt: list[str] = field(default_factory=list)  # base list and merged manifests of one attempt
    delta: _DeltaLists | None = None
    uncertain: bool = False  # some attempt's outcome is unknown: its files may be referenced

    def delta_paths(self, table: TableStore) -> list[str]:
        if self.delta is None:
            return []
        changelog = self.delta.changelog
        return [*self.delta.delta.paths(table), *(changelog.paths(table) if changelog else ())]


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
        # Identifiers whose first snapshot the current commit()/overwrite() call landed: its COMPACT
        # snapshot follows under the same identifier.
        self._landed_now: set[int] = set()
        self._new_name = ManifestNamer()
        self._rebuilt: tuple[int, CommitProgress] | None = None  # the record of a latest snapshot without one
        self._max_retries = table.options.get_option(opts.COMMIT_MAX_RETRIES)
        self._timeout_ms = table.options.get_option(opts.COMMIT_TIMEOUT)
        self._min_wait_ms = table.options.get_option(opts.COMMIT_MIN_RETRY_WAIT)
        self._max_wait_ms = table.options.get_option(opts.COMMIT_MAX_RETRY_WAIT)
        # A store that cannot create a file atomically publishes only under a commit lock (lock.enabled).
        self._lock: CommitLock | None = None
        if Capability.ATOMIC_CREATE not in table.storage.capabilities:
            if not table.options.get_option(opts.LOCK_ENABLED):
                raise AtomicCommitUnsupportedError(
                    f"storage of {table.path} ({table.storage!r}) cannot create files atomically; commits are "
                    "refused unless a commit lock is configured: set 'lock.enabled' = 'true' and 'lock.type' "
                    "(e.g. 'jdbc', from pip install 'paimon-storage[postgres]')"
                )
            self._lock = open_commit_lock(table.options)

    # --- public API ---------------------------------------------------------------------------------

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
        self.last_attempts = {}
        self._landed_now = set()
        deletes = any(m.deleted_files or m.compact_before for m in messages)
        if self._replayed(messages, commit_identifier, deletes):
            logger.info("commit %s of %s already landed; nothing to do", commit_identifier, self.commit_user)
            return []
        append_entries = self._entries(messages, "new_files", FileKind.ADD) + self._entries(
            messages, "deleted_files", FileKind.DELETE
        )
        compact_entries = self._compaction_entries(messages)
        append_changelog = self._entries(messages, "changelog_files", FileKind.ADD)
        compact_changelog = self._entries(messages, "compact_changelog_files", FileKind.ADD)
        self._require_files(
            append_entries + compact_entries + append_changelog + compact_changelog, commit_identifier
        )
        index_changes = _index_changes(messages, compaction=False)
        created = []
        has_deletes = any(e.kind == FileKind.DELETE for e in append_entries)
        if append_entries or append_changelog or index_changes or self._force_create_snapshot(messages):
            kind = CommitKind.OVERWRITE if has_deletes else CommitKind.APPEND
            attempt = _Attempt(
                kind,
                append_entries,
                has_deletes,
                watermark=watermark,
                index_changes=index_changes,
                changelog=tuple(append_changelog),
            )
            created += self._commit_with_retry(kind, lambda _latest: attempt, commit_identifier)
        created += self._commit_compaction(
            messages,
            compact_entries,
            compact_changelog,
            commit_identifier,
            watermark,
            data_landed=bool(append_entries),
        )
        self._expire_after(created)
        return created

    def _compaction_entries(self, messages: Sequence[CommitMessage]) -> list[ManifestEntry]:
        return self._entries(messages, "compact_before", FileKind.DELETE) + self._entries(
            messages, "compact_after", FileKind.ADD
        )

    def _commit_compaction(
        self,
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
        index_changes = _index_changes(messages, compaction=True)
        if not (compact_entries or compact_changelog or index_changes):
            return []
        attempt = _Attempt(
            CommitKind.COMPACT,
            compact_entries,
            check_conflicts=True,
            watermark=watermark,
            index_changes=index_changes,
            changelog=tuple(compact_changelog),
        )
        try:
            return self._commit_with_retry(CommitKind.COMPACT, lambda _latest: attempt, commit_identifier)
        except (CommitConflictError, CommitRetriesExhaustedError, LockAcquisitionError) as exc:
            if not data_landed:
                raise  # a compaction alone: its job re-plans
            logger.info("inline compaction of %s lost a race: %s", self.table.identifier, exc)
            self.table.delete_new_files(
                [
                    CommitMessage(
                        m.partition,
                        m.bucket,
                        m.total_buckets,
                        compact_before=m.compact_before,
                        compact_after=m.compact_after,
                        compact_changelog_files=m.compact_changelog_files,
                        new_index_files=tuple(f for f in m.new_index_files if _is_compaction_index(f)),
                    )
                    for m in messages
                ]
            )
            return []

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
        self.last_attempts = {}
        self._landed_now = set()
        table = self.table
        new_entries = self._entries(messages, "new_files", FileKind.ADD)
        compact_entries = self._compaction_entries(messages)
        if dynamic is None:
            dynamic = bool(table.partition_keys) and table.options.get_option(
                opts.DYNAMIC_PARTITION_OVERWRITE
            )
        deletes = partition is not None or not (dynamic and table.partition_keys) or bool(new_entries)
        if self._replayed(messages, commit_identifier, deletes):
            return []
        scope: OverwriteScope
        if partition is not None:
            scope = self._static_scope(partition)
            outside = [e.file.file_name for e in new_entries if not scope(e.partition)]
            if outside:
                raise SchemaError(f"overwrite of partition {dict(partition)} got rows of other partitions")
        elif dynamic and table.partition_keys:
            present = {e.partition for e in new_entries}
            if not present:
                return []  # Paimon: a dynamic overwrite with no data changes nothing
            scope = lambda partition: partition in present  # noqa: E731
        else:
            scope = lambda partition: True  # noqa: E731
        self._require_files(new_entries + compact_entries, commit_identifier)

        def build(latest: Snapshot | None) -> _Attempt:
            # The scope is re-read on every attempt: files added meanwhile in the scope are replaced too.
            # The deletes are live in `latest` by construction and the publish only lands on top of
            # `latest`, so re-checking them against `latest` would find nothing.
            live = table.live_files.at(latest)
            doomed = [replace(e, kind=FileKind.DELETE) for e in live.values() if scope(e.partition)]
            return _Attempt(
                CommitKind.OVERWRITE,
                doomed + new_entries,
                check_conflicts=False,
                watermark=watermark,
                index_changes=_index_changes(messages, compaction=False),
                index_scope=scope,
            )

        created = self._commit_with_retry(CommitKind.OVERWRITE, build, commit_identifier)
        # The writers' compactions of the new data follow, as in Java (an overwrite commits no changelog).
        created += self._commit_compaction(
            messages, compact_entries, [], commit_identifier, watermark, data_landed=bool(created)
        )
        self._expire_after(created)
        return created

    def _expire_after(self, created: Sequence[int]) -> None:
        """Consumer and snapshot expiration after a commit, as Java's committer does (the hook skips snapshot
        expiration for write-only tables).

        The commit has landed whatever happens here: a failure is logged, never raised.
        """
        hook = self.table.hooks.after_commit
        if not created or hook is None:
            return
        try:
            hook(self.table, created)
        except Exception:
            logger.warning(
                "consumer or snapshot expiration after a commit to %s failed",
                self.table.identifier,
                exc_info=True,
            )

    def is_committed(self, commit_identifier: int) -> bool:
        """Whether this commit user already committed ``commit_identifier`` (or a later one).

        The contract, as in Java Paimon: a commit user commits its identifiers in increasing order (a Spark
        streaming query's batch ids, a Flink checkpoint's id), so any identifier up to the newest one it
        committed counts as committed. The answer stays right after the user's snapshots expired: every
        snapshot records each user's newest identifier (docs/commit-protocol.md, exactly once). Batch commits
        (the maximal identifier) are never deduplicated this way. The snapshot history is searched once per
        committer (at recovery); afterwards only the snapshots that came since.
        """
        if commit_identifier == BATCH_COMMIT_IDENTIFIER:
            return False
        self._catch_up()
        last = self._own.last_identifier
        return last is not None and commit_identifier <= last

    def _catch_up(self) -> None:
        """Read this user's new snapshots. Failing to, a committer that has not searched the history since it
        started or since an unknown outcome cannot tell whether a replayed identifier landed before."""
        try:
            self._own.catch_up()
        except Exception as exc:
            if not self._own.uncertain or isinstance(exc, CommitError):
                raise
            raise CommitStateUnknownError(
                f"cannot tell whether an earlier commit of {self.commit_user} to {self.table.path} landed: "
                f"searching its history failed: {exc}"
            ) from exc

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the new files of uncommitted messages."""
        self.table.delete_new_files(messages)

    # --- what to commit ------------------------------------------------------------------------------

    def _entries(
        self, messages: Sequence[CommitMessage], attribute: str, kind: FileKind
    ) -> list[ManifestEntry]:
        entries = []
        for message in messages:
            for file in getattr(message, attribute):
                entries.append(
                    ManifestEntry(kind, message.partition, message.bucket, message.total_buckets, file)
                )
        return entries

    def _force_create_snapshot(self, messages: Sequence[CommitMessage]) -> bool:
        if self.table.options.get_option(opts.COMMIT_FORCE_CREATE_SNAPSHOT):
            return True
        ignore_empty = self.table.options.get_option(opts.SNAPSHOT_IGNORE_EMPTY_COMMIT)
        return ignore_empty is False and not any(not m.is_empty() for m in messages)

    def _static_scope(self, spec: Mapping[str, Any]) -> OverwriteScope:
        table = self.table
        unknown = [k for k in spec if k not in table.partition_keys]
        if unknown:
            raise SchemaError(f"overwrite spec names non-partition columns: {', '.join(unknown)}")
        cache: dict[bytes, bool] = {}

        def in_scope(partition: bytes) -> bool:
            hit = cache.get(partition)
            if hit is None:
                values = table.partition_values(partition)
                hit = all(_same_partition_value(values[k], v) for k, v in spec.items())
                cache[partition] = hit
            return hit

        return in_scope

    def _replayed(self, messages: Sequence[CommitMessage], identifier: int, deletes: bool) -> bool:
        """Whether ``identifier`` was committed already by this user, with these messages (``deletes``: the
        commit deletes files, as overwrites do).

        Raises:
            CommitIdentifierError: it was, or a newer one was, and these messages are not that commit.
        """
        if identifier == BATCH_COMMIT_IDENTIFIER:
            return False
        last = self._own.last_identifier
        if last is None or identifier > last:  # only then can newer commits of this user matter
            self._catch_up()
            last = self._own.last_identifier
        added = {f.file_name for m in messages for f in (*m.new_files, *m.compact_after)}
        if last is None or identifier > last:
            if deletes and not added and not self._own.complete:
                # Without new files a replay of an expired commit cannot be recognised, and repeating a
                # delete could remove rows that later commits added.
                raise CommitHistoryExpiredError(
                    f"whether commit user {self.commit_user!r} already committed identifier {identifier} to "
                    f"{self.table.path} cannot be told: its earlier snapshots expired, and this commit adds "
                    "no files to recognise it by; if it was never committed, commit it without an identifier"
                )
            if not added or self._own.complete:
                return False
            if deletes and self._all_live({f.file_name for m in messages for f in m.new_files}):
                # New files are named once: live means committed (maybe moved up a level since, which keeps
                # the name). Publishing an overwrite again would delete what later commits added.
                logger.info(
                    "overwrite %s of %s landed before: its files are live", identifier, self.commit_user
                )
                return True
            return self._compacted_away(identifier, added)
        try:
            committed = self._own.files.get(identifier) or self._files_committed_as(identifier)
            # When that snapshot expired, a replay's files are live (maybe moved up a level since, which keeps
            # their names), replaced by a retained snapshot, or gone with a compaction that expired.
            if (committed is not None and added <= committed) or (
                committed is None
                and (
                    self._all_live(added)
                    or self._live_or_gone(messages)
                    or (bool(added) and self._compacted_away(identifier, added))
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

    def _all_live(self, names: set[str]) -> bool:
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

    def _compacted_away(self, identifier: int, added: set[str]) -> bool:
        """Whether files to add were committed before and then replaced by a retained snapshot (a compaction or
        an overwrite): a replay whose own snapshot expired, recognised by what came after it.

        Raises:
            CommitStateUnknownError: some files were replaced, some not, or the history cannot be read.
        """
        sm = self.table.snapshot_manager
        try:
            latest = sm.latest()
            if latest is None:
                return False
            live = {f.file_name for f in (e.file for e in self.table.live_files.at(latest).values())}
            pending = added - live
            if not pending:
                return False  # all live: the attempt recognises the same commit
            replaced: set[str] = set()
            # Snapshot files below EARLIEST count too: expiration deletes data files before the snapshots
            # that deleted them, so a replaced file that is still there has its deleter still listed. Any
            # snapshot that deleted a file, even a stale publish, was built on a base where it was live.
            for snapshot_id in reversed([i for i in sm.list_ids() if i <= latest.id]):
                snapshot = sm.try_snapshot(snapshot_id)
                if snapshot is None or snapshot.commit_kind == CommitKind.APPEND:
                    continue
                delta = read_entries(self.table, manifest_metas(self.table, snapshot, delta_only=True))
                replaced |= {e.file.file_name for e in delta if e.kind == FileKind.DELETE} & pending
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

    def _files_committed_as(self, identifier: int) -> set[str] | None:
        """Names of the files this user's snapshots of ``identifier`` added; None if none can be read."""
        snapshots = self._own.snapshots_of(identifier)
        if not snapshots:
            return None
        names: set[str] = set()
        try:
            for snapshot in snapshots:
                delta = read_entries(self.table, manifest_metas(self.table, snapshot, delta_only=True))
                names.update(e.file.file_name for e in delta if e.kind == FileKind.ADD)
        except CorruptMetadataError:
            return None
        return names

    def _live_or_gone(self, messages: Sequence[CommitMessage]) -> bool:
        entries = self._entries(messages, "new_files", FileKind.ADD) + self._entries(
            messages, "compact_after", FileKind.ADD
        )
        live = self.table.live_files.at(self.table.snapshot_manager.latest())
        fresh = [e for e in entries if e.identifier() not in live]
        return not any(self._exist(fresh))

    def _require_files(self, entries: Sequence[ManifestEntry], identifier: int) -> None:
        """The files to add must exist: a snapshot that lists a missing file can never be read.

        Raises:
            CommitFilesError: some files are gone (an abort or orphan removal deleted them).
            CommitStateUnknownError: they are gone, and this commit may have landed in a snapshot that
                expired since, with files that a compaction replaced and expiration deleted.
        """
        added = [e for e in entries if e.kind == FileKind.ADD]
        missing = [e.file.file_name for e, there in zip(added, self._exist(added), strict=True) if not there]
        if not missing:
            return
        if identifier != BATCH_COMMIT_IDENTIFIER and not self._own.complete:
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

    def _exist(self, entries: Sequence[ManifestEntry]) -> list[bool]:
        table = self.table

        def exists(entry: ManifestEntry) -> bool:
            file = entry.file
            path = file.external_path or join_path(
                table.bucket_dir(entry.partition, entry.bucket), file.file_name
            )
            return table.storage.exists(real_changelog_path(path))  # a changelog slice: its physical file

        if len(entries) <= 2:
            return [exists(e) for e in entries]
        with ThreadPoolExecutor(max_workers=min(_EXISTS_THREADS, len(entries))) as pool:
            return list(pool.map(exists, entries))

    # --- the retry loop ----------------------------------------------------------------------------------

    def _commit_with_retry(
        self, kind: CommitKind, build: Callable[[Snapshot | None], _Attempt], identifier: int
    ) -> list[int]:
        """Publish one snapshot of ``kind``; [] when its files turned out committed already."""
        start = time.monotonic()
        written = _Written()
        unknown: dict[str, _Published] = {}  # by uuid: attempts whose publish had an unknown outcome
        errors = 0  # unknown outcomes, and lost races while the table did not move on
        seen_latest = self.table.snapshot_manager.latest_id() or 0
        attempt_no = 0
        try:
            while True:
                if unknown:  # did an attempt whose outcome we never heard of land after all?
                    found = self._find_unknown(unknown)
                    if found is not None:
                        logger.info("commit of %s found as snapshot %s after an unknown outcome",
                                    self.commit_user, found.snapshot.id)  # fmt: skip
                        return self._landed(found, attempt_no, identifier)
                try:
                    outcome = self._attempt(build, identifier, attempt_no, written, unknown)
                except SnapshotExpiredError as exc:  # the base expired while we built on it: a lost race
                    logger.info("commit attempt %s lost its base snapshot: %s", attempt_no, exc)
                    outcome = None
                if isinstance(outcome, _Landed):
                    return self._landed(outcome.published, attempt_no + 1, identifier)
                if outcome is not None:
                    errors += 1
                    unknown[outcome.snapshot.uuid or ""] = outcome
                    written.uncertain = True
                else:
                    # A race lost to a commit that landed is progress; losing without the table moving on
                    # (a store that refuses every create) counts against commit.max-retries.
                    latest_id = self.table.snapshot_manager.latest_id() or 0
                    errors += latest_id <= seen_latest
                    seen_latest = max(seen_latest, latest_id)
                attempt_no += 1
                self._check_deadline(start, attempt_no, errors, unknown)
                self._sleep_before_retry(attempt_no - 1)
        except _Landed as landed:
            return self._landed(landed.published, attempt_no + 1, identifier)
        except _AlreadyLive:
            logger.info("the files of this %s commit are live already; nothing to do", kind.value)
            self._delete_unused(written)
            return []
        except _LandedUnseen:
            # Its snapshot expired: the id is not known, and the metadata files may have been its.
            logger.info("commit %s of %s landed unseen and expired since", identifier, self.commit_user)
            self._landed_now.add(identifier)
            return []
        except (CommitConflictError, SchemaError, CommitFilesError, CommitIdentifierError):
            self._delete_unused(written)
            raise
        except LockAcquisitionError as exc:
            if unknown:  # an earlier attempt of this call may have landed
                raise self._unknown_outcome(identifier, attempt_no, exc) from exc
            self._delete_unused(written)
            raise
        except CommitError:
            raise
        except Exception as exc:
            if not unknown:
                self._delete_unused(written)
                raise
            # Reading the table failed after an unknown outcome: the commit may well have landed.
            raise self._unknown_outcome(identifier, attempt_no, exc) from exc

    def _landed(self, published: _Published, attempts: int, identifier: int) -> list[int]:
        snapshot_id = published.snapshot.id
        self._landed_now.add(identifier)
        self.last_attempts[snapshot_id] = max(attempts, 1)
        added = frozenset(e.file.file_name for e in published.entries if e.kind == FileKind.ADD)
        self._own.record(identifier, published.snapshot.commit_kind, snapshot_id, added)
        self.table.snapshot_manager.advance_latest_hint(snapshot_id)
        return [snapshot_id]

    def _check_deadline(
        self, start: float, attempt_no: int, errors: int, unknown: dict[str, _Published]
    ) -> None:
        """Races lost to other commits retry until ``commit.timeout``; unknown outcomes and races lost without
        any other commit landing, at most ``commit.max-retries`` times."""
        elapsed_ms = (time.monotonic() - start) * 1000
        timed_out = self._timeout_ms is not None and elapsed_ms > self._timeout_ms
        if not timed_out and errors <= self._max_retries:
            return
        if unknown:
            found = self._find_unknown(unknown)
            if found is not None:
                raise _Landed(found)
            raise CommitStateUnknownError(
                f"commit of {self.commit_user} to {self.table.path} has an unknown outcome after "
                f"{attempt_no} attempts ({errors} unknown publish outcomes)"
            )
        raise CommitRetriesExhaustedError(
            f"commit to {self.table.path} lost the race for a snapshot id {attempt_no} times in "
            f"{elapsed_ms:.0f} ms (commit.timeout={self._timeout_ms} ms, commit.max-retries={self._max_retries} "
            f"for races lost while no other commit landed: {errors})"
        )

    def _attempt(
        self,
        build: Callable[[Snapshot | None], _Attempt],
        identifier: int,
        attempt_no: int,
        written: _Written,
        unknown: Mapping[str, _Published],
    ) -> _Landed | _Published | None:
        """One try: the new snapshot id when it landed; None when another commit took the id or the publish
        landed in an id freed by expiration; the attempt itself when the store's answer is unknown."""
        sm = self.table.snapshot_manager
        latest = sm.latest()
        attempt = build(latest)
        if identifier != BATCH_COMMIT_IDENTIFIER:
            self._check_own_progress(identifier, unknown)
        if unknown:
            self._check_expired_unknown(attempt, identifier, unknown)
        self._check_files(latest, attempt, check_live=attempt_no == 0 or bool(unknown))
        self._check_bucket_numbers(latest, attempt)
        index = self._index_after(latest, attempt)
        snapshot = self._build_snapshot(latest, attempt, identifier, written, index)
        logger.info(
            "commit attempt %s on %s: base snapshot %s -> %s (%s)",
            attempt_no, self.table.path, latest.id if latest else 0, snapshot.id, attempt.kind.value,
        )  # fmt: skip
        published = _Published(snapshot, latest, attempt.entries)
        earliest = sm.earliest_hint()
        if latest is not None and earliest is not None and latest.id < earliest:
            # Expiration took our base meanwhile, and maybe the id we are about to take: start over.
            self._delete(written.attempt)
            return None
        try:
            created = self._publish(snapshot)
        except LockAcquisitionError:
            raise  # nothing was published: the outcome is known
        except Exception as exc:  # anything but "exists": the store may hold the snapshot or not
            logger.warning("publishing snapshot %s had an unknown outcome: %s", snapshot.id, exc)
            written.delta = None  # a snapshot may reference it: the next attempt writes its own
            return published
        if not created:
            self._delete(written.attempt)
            return None
        if self._verify(published):
            return _Landed(published)
        # Withdrawn: while it stood, an expiration may have taken it for an expired snapshot and deleted
        # its files, the delta included. The next attempt writes everything anew.
        self._delete([*written.attempt, *written.delta_paths(self.table)])
        written.delta = None
        return None

    def _check_expired_unknown(
        self, attempt: _Attempt, identifier: int, unknown: Mapping[str, _Published]
    ) -> None:
        """An attempt whose outcome was unknown may have landed, been compacted and expired unseen: before
        publishing the files again, tell it by the files, as a replay whose snapshot expired is told.

        Raises:
            _AlreadyLive: a snapshot replaced the files since (the attempt landed; files still live are
                found by ``_check_files``).
            CommitHistoryExpiredError: some files are gone, or the attempt adds none to tell it by.
        """
        # Snapshot ids are dense: an id at or below the latest whose file is gone held a snapshot that was
        # deleted since (maybe ours). Another's snapshot there, or none yet, and _find_unknown has told.
        # (Not EARLIEST: an older expiration may set it back for a moment.)
        sm = self.table.snapshot_manager
        latest_id = sm.latest_id() or 0
        if all(p.snapshot.id > latest_id or sm.try_snapshot(p.snapshot.id) for p in unknown.values()):
            return
        if identifier != BATCH_COMMIT_IDENTIFIER and self._own.tracked:
            # The latest snapshot's progress record holds this user's newest commit, ours if it landed.
            self._check_landed_unseen(identifier, unknown)
            return
        added = [e for e in attempt.entries if e.kind == FileKind.ADD]
        names = {e.file.file_name for e in added}
        # An overwrite's new files all live (maybe moved up a level since, keeping their names): it landed,
        # and publishing it again would delete what later commits added.
        if attempt.kind == CommitKind.OVERWRITE and self._all_live(names):
            raise _AlreadyLive()
        if names and self._compacted_away(identifier, names):
            raise _AlreadyLive()
        if not names or not all(self._exist(added)):
            raise CommitHistoryExpiredError(
                f"a commit attempt of {self.commit_user} (identifier {identifier}) to {self.table.path} had an "
                "unknown outcome and its snapshot id has expired since; "
                + ("its files are gone" if names else "it adds no files")
                + ", so whether it landed cannot be told"
            )

    def _check_landed_unseen(self, identifier: int, unknown: Mapping[str, _Published]) -> None:
        """Raise :class:`_LandedUnseen` when the newest snapshot of this user that the progress records
        name is one of the attempts whose outcome was unknown (its file expired, so _find_unknown missed it)."""
        own = self._own
        if own.last_identifier == identifier and own.last_snapshot_id in {
            p.snapshot.id for p in unknown.values()
        }:
            raise _LandedUnseen()

    def _verify(self, published: _Published) -> bool:
        """Whether a snapshot this committer created continues the history; a stale one is withdrawn.

        Raises:
            CommitStateUnknownError: it cannot be told (the table moved on too far meanwhile).
        """
        snapshot, base = published.snapshot, published.base
        verdict = follows_chain(self.table, snapshot, base, published.entries)
        if verdict is None:
            self._own.forget()
            raise CommitStateUnknownError(
                f"snapshot {snapshot.id} of {self.commit_user} was published to {self.table.path}, but the "
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

    def _check_own_progress(self, identifier: int, unknown: Mapping[str, _Published]) -> None:
        """Another handle with this commit user may have committed meanwhile: never publish out of order."""
        self._catch_up()
        last = self._own.last_identifier
        if last is None or last < identifier or (last == identifier and identifier in self._landed_now):
            return
        found = self._find_unknown(unknown)
        if found is not None:
            raise _Landed(found)
        self._check_landed_unseen(identifier, unknown)
        raise CommitIdentifierError(
            f"commit user {self.commit_user!r} committed identifier {last} to {self.table.path} while "
            f"identifier {identifier} was being committed (two committers share this commit user)",
            self.commit_user,
            identifier,
            last,
        )

    def _withdraw(self, snapshot: Snapshot) -> None:
        """Delete a snapshot file this committer published into an expired hole (no one builds on it)."""
        sm = self.table.snapshot_manager
        try:
            if sm.try_snapshot(snapshot.id) == snapshot:
                self.table.storage.delete(sm.snapshot_path(snapshot.id))
        except (OSError, CorruptMetadataError):
            logger.warning("could not withdraw stale snapshot %s of %s", snapshot.id, self.table.path,
                           exc_info=True)  # fmt: skip

    def _publish(self, snapshot: Snapshot) -> bool:
        publish = self.table.snapshot_manager.try_publish
        if self._lock is None:
            return publish(snapshot)
        started = False

        def publish_holding_lock() -> bool:
            nonlocal started
            started = True
            return publish(snapshot)

        try:
            return self._lock.run_with_lock(self.table.path, publish_holding_lock)
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

    def _unknown_outcome(
        self, identifier: int, attempts: int, cause: BaseException
    ) -> CommitStateUnknownError:
        # The commit may have landed unseen: the next is_committed must search the history again, or a
        # retry with this committer would publish the same files twice.
        self._own.forget()
        return CommitStateUnknownError(
            f"commit of {self.commit_user} (identifier {identifier}) to {self.table.path} has an "
            f"unknown outcome after {attempts} attempts: {cause}"
        )

    def _sleep_before_retry(self, retry: int) -> None:
        # Full jitter over a window that stops growing soon: a committer that lost many races does not
        # wait longer than one that just arrived, so no one starves under steady contention.
        window = min(self._min_wait_ms * (2 ** min(retry, _BACKOFF_DOUBLINGS)), self._max_wait_ms)
        time.sleep(random.uniform(0, max(1.0, window)) / 1000)

    def _find_unknown(self, unknown: Mapping[str, _Published]) -> _Published | None:
        """The id of an attempt of this call whose outcome was unknown, if it landed on the history."""
        sm = self.table.snapshot_manager
        for uuid_, published in list(unknown.items()):
            found = sm.try_snapshot(published.snapshot.id)
            if found is None or found.uuid != uuid_:
                continue
            if self._verify(published):
                return published
        return None

    # --- files -----------------------------------------------------------------------------------------

    def _check_files(self, latest: Snapshot | None, attempt: _Attempt, check_live: bool) -> None:
        """Files to add must not be live yet; an overwrite's or compaction's deletes must still be live."""
        if latest is None or not (check_live or attempt.check_conflicts):
            return
        live = self.table.live_files.at(latest)
        added = [e for e in attempt.entries if e.kind == FileKind.ADD]
        duplicated = [e.file.file_name for e in added if e.identifier() in live]
        if duplicated:
            if len(duplicated) == len(added):
                raise _AlreadyLive()
            raise CommitFilesError(
                f"some files to add are live in {self.table.path} already (were these messages partly "
                "committed before?); nothing was committed",
                duplicated,
            )
        if not attempt.check_conflicts:
            return
        deleted = [e for e in attempt.entries if e.kind == FileKind.DELETE]
        missing = [e.file.file_name for e in deleted if e.identifier() not in live]
        if missing:
            winner = self._find_deleter(latest, set(missing))
            raise CommitConflictError(
                f"File deletion conflicts detected in {self.table.path}; give up committing",
                winning_snapshot_id=winner.id if winner else None,
                winning_commit_user=winner.commit_user if winner else None,
                conflicting_files=missing,
            )

    def _check_bucket_numbers(self, latest: Snapshot | None, attempt: _Attempt) -> None:
        """A partition's files all have one number of buckets (``_TOTAL_BUCKETS``): files written for another
        number land only where an overwrite replaces all of them (a rescale), as Java's commit checks."""
        written = {e.partition: e.total_buckets for e in attempt.entries if e.kind == FileKind.ADD}
        written = {p: n for p, n in written.items() if n > 0}
        if latest is None or not written:
            return
        replaced = {e.identifier() for e in attempt.entries if e.kind == FileKind.DELETE}
        for identifier, entry in self.table.live_files.at(latest).items():
            wanted = written.get(entry.partition)
            if wanted is None or entry.total_buckets in (wanted, -1) or identifier in replaced:
                continue
            where = self.table.identifier
            if self.table.partition_keys:
                where = f"partition {self.table.partition_values(entry.partition)} of {where}"
            raise ConfigError(
                f"cannot write {where} with {wanted} buckets: its files have "
                f"{entry.total_buckets} (was 'bucket' changed without a rescale?); {opts.RESCALE_HINT}",
                opts.BUCKET.key,
            )

    def _index_after(self, latest: Snapshot | None, attempt: _Attempt) -> list[IndexManifestEntry] | None:
        """The live index files once the attempt lands; None when it changes none.

        Raises:
            CommitConflictError: another commit replaced an index file this one replaces (or created one
                where this one creates the first): two writers assigned dynamic buckets in one partition.
        """
        has_index = latest is not None and bool(latest.index_manifest)
        if not attempt.index_changes and (attempt.index_scope is None or not has_index):
            return None
        live: list[IndexManifestEntry] = []
        if latest is not None and has_index:
            try:
                live = self.table.index_entries(latest)
            except CorruptMetadataError as exc:  # expiration took the base meanwhile: a lost race
                raise explain_missing(self.table, latest.id, exc) from exc
        scope = attempt.index_scope
        if scope is not None:
            return combine_index_entries([e for e in live if not scope(e.partition)], attempt.index_changes)
        by_slot = {e.slot: e.file.file_name for e in live}
        replaced = {c.slot: c.file.file_name for c in attempt.index_changes if c.kind == FileKind.DELETE}
        stale = [
            c.file
            for c in attempt.index_changes
            if c.kind == FileKind.ADD and by_slot.get(c.slot) != replaced.get(c.slot)
        ]
        if stale:
            if _is_compaction_index(stale[0]):
                reason = (
                    f"the deletion vectors of a bucket of {self.table.path} changed since this compaction read "
                    "them: another compaction of the bucket won"
                )
            else:
                reason = (
                    f"the dynamic-bucket hash index of {self.table.path} changed since this writer read it: "
                    "another writer assigned buckets in the same partition (one writer per partition of a "
                    "bucket = -1 table)"
                )
            raise CommitConflictError(
                f"{reason}; nothing was committed", conflicting_files=[f.file_name for f in stale]
            )
        return combine_index_entries(live, attempt.index_changes)

    def _find_deleter(self, latest: Snapshot, names: set[str]) -> Snapshot | None:
        sm = self.table.snapshot_manager
        earliest = sm.earliest_id() or 1
        for snapshot_id in range(latest.id, max(earliest, latest.id - _CONFLICT_SEARCH_DEPTH) - 1, -1):
            snapshot = sm.try_snapshot(snapshot_id)
            if snapshot is None or snapshot.commit_kind == CommitKind.APPEND:
                continue
            try:
                entries = read_entries(self.table, manifest_metas(self.table, snapshot, delta_only=True))
            except CorruptMetadataError:
                return None  # expired while we looked: the winner stays unnamed
            if any(e.kind == FileKind.DELETE and e.file.file_name in names for e in entries):
                return snapshot
        return None

    def _delete(self, paths: Sequence[str]) -> None:
        for path in paths:
            try:
                self.table.storage.delete(path)
            except FileNotFoundError:
                pass
            except OSError:
                logger.debug("could not delete unused metadata file %s", path, exc_info=True)

    def _delete_unused(self, written: _Written) -> None:
        """After a commit call that published nothing: its metadata files are garbage (unless an attempt's
        outcome stayed unknown, in which case a snapshot may reference them)."""
        if not written.uncertain:
            self._delete([*written.attempt, *written.delta_paths(self.table)])

    # --- the snapshot ----------------------------------------------------------------------------------

    def _build_snapshot(
        self,
        latest: Snapshot | None,
        attempt: _Attempt,
        identifier: int,
        written: _Written,
        index: list[IndexManifestEntry] | None,
    ) -> Snapshot:
        table = self.table
        ctx, storage = table.manifest_context, table.storage
        written.attempt = []
        base_metas: list[ManifestFileMeta] = []
        if latest is not None:
            try:
                read = read_manifest_list(storage, ctx.path(latest.base_manifest_list))
                read += read_manifest_list(storage, ctx.path(latest.delta_manifest_list))
                base_metas = merge_manifests(ctx, read, self._new_name)
            except CorruptMetadataError as exc:
                raise explain_missing(table, latest.id, exc) from exc
            known = {m.file_name for m in read}
            written.attempt += [ctx.path(m.file_name) for m in base_metas if m.file_name not in known]
        base_list = self._new_name("manifest-list")
        written.attempt.append(ctx.path(base_list))
        base_size = write_manifest_list(storage, ctx.path(base_list), base_metas, ctx.codec, ctx.level)
        lists = self._delta(attempt, written)
        changelog = lists.changelog
        index_manifest = latest.index_manifest if latest else None
        if index is not None:
            index_manifest = self._new_name("index-manifest")
            written.attempt.append(ctx.path(index_manifest))
            write_index_manifest(storage, ctx.path(index_manifest), index, ctx.codec, ctx.level)
        delta_rows = sum(
            e.file.row_count if e.kind == FileKind.ADD else -e.file.row_count for e in attempt.entries
        )
        schema_id = table.schema_manager.latest_id() or 0
        same_schema = latest is not None and latest.schema_id == schema_id
        return Snapshot(
            id=(latest.id + 1) if latest else 1,
            schema_id=schema_id,
            base_manifest_list=base_list,
            base_manifest_list_size=base_size,
            delta_manifest_list=lists.delta.name,
            delta_manifest_list_size=lists.delta.size,
            changelog_manifest_list=changelog.name if changelog else None,
            changelog_manifest_list_size=changelog.size if changelog else None,
            index_manifest=index_manifest,
            commit_user=self.commit_user,
            commit_identifier=identifier,
            commit_kind=attempt.kind,
            time_millis=int(time.time() * 1000),
            total_record_count=(latest.total_record_count if latest else 0) + delta_rows,
            delta_record_count=delta_rows,
            changelog_record_count=sum(e.file.row_count for e in attempt.changelog),
            watermark=_max_watermark(latest.watermark if latest else None, attempt.watermark),
            statistics=latest.statistics if latest and same_schema else None,
            next_row_id=latest.next_row_id if latest else None,
            properties={PROGRESS_PROPERTY: self._progress(latest, identifier).to_property()},
        )

    def _progress(self, latest: Snapshot | None, identifier: int) -> CommitProgress:
        """The commit progress record of the snapshot built on ``latest``: its record plus this commit."""
        new_id = (latest.id + 1) if latest else 1
        if latest is None:
            base = CommitProgress()
        else:
            found = CommitProgress.of(latest)
            if found is None:  # written by another engine or an older release: rebuilt once per base
                if self._rebuilt is None or self._rebuilt[0] != latest.id:
                    self._rebuilt = (latest.id, rebuild_progress(self.table.snapshot_manager, latest))
                found = self._rebuilt[1]
            base = found
        return base.with_commit(self.commit_user, identifier, new_id)

    def _delta(self, attempt: _Attempt, written: _Written) -> _DeltaLists:
        """The delta (and changelog) manifests and lists of these entries, written once and reused by later
        attempts."""
        key = tuple((e.kind, e.identifier()) for e in (*attempt.entries, *attempt.changelog))
        if written.delta is not None and written.delta.key == key:
            return written.delta
        if written.delta is not None and not written.uncertain:
            self._delete(written.delta_paths(self.table))  # an overwrite's scope changed
        delta = self._write_list(attempt.entries)
        changelog = self._write_list(list(attempt.changelog)) if attempt.changelog else None
        written.delta = _DeltaLists(key, delta, changelog)
        return written.delta

    def _write_list(self, entries: list[ManifestEntry]) -> _ManifestList:
        ctx = self.table.manifest_context
        metas = write_manifests(ctx, entries, self._new_name)
        name = self._new_name("manifest-list")
        size = write_manifest_list(self.table.storage, ctx.path(name), metas, ctx.codec, ctx.level)
        return _ManifestList(name, size, metas)


class _Landed(Exception):
    """This commit landed: the attempt just made, or an earlier one whose outcome was unknown."""

    def __init__(self, published: _Published) -> None:
        super().__init__(published.snapshot.id)
        self.published = published


def _index_changes(messages: Sequence[CommitMessage], *, compaction: bool) -> tuple[IndexManifestEntry, ...]:
    """The messages' index files of the data commit (hash indexes) or of the compaction (deletion vectors,
    which compactions write, as Java 0.9 routes them): what they replace (DELETE), then what they add."""
    changes = [
        IndexManifestEntry(kind, m.partition, m.bucket, file)
        for kind, attribute in ((FileKind.DELETE, "deleted_index_files"), (FileKind.ADD, "new_index_files"))
        for m in messages
        for file in getattr(m, attribute)
        if _is_compaction_index(file) == compaction
    ]
    return tuple(changes)


def _is_compaction_index(file: IndexFileMeta) -> bool:
    return file.index_type == DELETION_VECTORS_INDEX


def _same_partition_value(stored: Any, given: Any) -> bool:
    if stored is None or given is None:
        return stored is given
    if isinstance(stored, str) or isinstance(given, str):
        return str(stored) == str(given)
    return bool(stored == given)


def _max_watermark(previous: int | None, new: int | None) -> int | None:
    if previous is None or new is None:
        return new if previous is None else previous
    return max(previous, new)
