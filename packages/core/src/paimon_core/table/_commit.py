"""The optimistic commit: build a snapshot on top of the latest one and publish it with an atomic create.

One attempt reads the latest snapshot, checks conflicts (overwrite and compaction only: plain appends never
conflict), writes the base manifest list (the previous state, merged), the delta manifests and list, and
publishes ``snapshot-<latest+1>`` with the storage backend's ``write_if_absent``. Losing the race retries
with back-off and jitter; an unknown outcome is resolved by looking for this commit's
(commit user, commit identifier, kind) in newer snapshots, never by blind retry or clean-up.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from paimon_core import options as opts
from paimon_core.errors import (
    AtomicCommitUnsupportedError,
    CommitConflictError,
    CommitRetriesExhaustedError,
    CommitStateUnknownError,
    SchemaError,
)
from paimon_core.manifest import (
    FileKind,
    ManifestEntry,
    ManifestNamer,
    merge_manifests,
    read_manifest_list,
    write_manifest_list,
    write_manifests,
)
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from paimon_core.storage import Capability, CommitLock, LockAcquireTimeoutError, open_commit_lock
from paimon_core.table._messages import CommitMessage
from paimon_core.table._scan import live_entries, manifest_metas, read_entries

if TYPE_CHECKING:
    from paimon_core.table._table import Table

logger = logging.getLogger(__name__)

_CONFLICT_SEARCH_DEPTH = 200  # snapshots searched backwards to name the commit that won a conflict

OverwriteScope = Callable[[ManifestEntry], bool]


@dataclass(frozen=True)
class _Attempt:
    kind: CommitKind
    entries: list[ManifestEntry]
    check_conflicts: bool


class TableCommit:
    """Commits writers' messages to a table, one snapshot per change kind.

    Args:
        table: the table.
        commit_user: identity of the committing job; keep it stable across restarts of a streaming job so
            that a replayed commit identifier is recognised. A fresh UUID when None.
    """

    def __init__(self, table: Table, commit_user: str | None = None) -> None:
        self.table = table
        prefix = table.options.get_option(opts.COMMIT_USER_PREFIX)
        self.commit_user = commit_user or (f"{prefix}_{uuid.uuid4()}" if prefix else str(uuid.uuid4()))
        self._last_committed: int | None = None
        self._recovered = False
        self._new_name = ManifestNamer()
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
        self, messages: Sequence[CommitMessage], commit_identifier: int = BATCH_COMMIT_IDENTIFIER
    ) -> list[int]:
        """Commit messages: an APPEND (or OVERWRITE, when files are deleted) then a COMPACT snapshot.

        Returns:
            The ids of the snapshots created; empty when there was nothing to commit or the identifier was
            already committed by this commit user.

        Raises:
            CommitConflictError: files this commit deletes are gone (another overwrite or compaction won).
            CommitRetriesExhaustedError: every attempt lost the race for the next snapshot id.
            CommitStateUnknownError: the store may or may not hold the snapshot.
        """
        if self.is_committed(commit_identifier):
            logger.info("commit %s of %s already landed; nothing to do", commit_identifier, self.commit_user)
            return []
        created = []
        append_entries = self._entries(messages, "new_files", FileKind.ADD) + self._entries(
            messages, "deleted_files", FileKind.DELETE
        )
        has_deletes = any(e.kind == FileKind.DELETE for e in append_entries)
        if append_entries or self._force_create_snapshot(messages):
            kind = CommitKind.OVERWRITE if has_deletes else CommitKind.APPEND
            attempt = _Attempt(kind, append_entries, check_conflicts=has_deletes)
            created.append(self._commit_with_retry(kind, lambda _latest: attempt, commit_identifier))
        compact_entries = self._entries(messages, "compact_before", FileKind.DELETE) + self._entries(
            messages, "compact_after", FileKind.ADD
        )
        if compact_entries:
            attempt_c = _Attempt(CommitKind.COMPACT, compact_entries, check_conflicts=True)
            created.append(
                self._commit_with_retry(CommitKind.COMPACT, lambda _latest: attempt_c, commit_identifier)
            )
        self._last_committed = commit_identifier
        self._expire_after(created)
        return created

    def overwrite(
        self,
        messages: Sequence[CommitMessage],
        partition: Mapping[str, Any] | None = None,
        *,
        dynamic: bool | None = None,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
    ) -> list[int]:
        """Replace live data with the messages' files in one OVERWRITE snapshot.

        Args:
            messages: the new files.
            partition: a static partition spec (``{"dt": "2024-01-01"}``); ``{}`` means the whole table.
            dynamic: with no spec, overwrite only the partitions present in the new files. Defaults to the
                ``dynamic-partition-overwrite`` option for partitioned tables.

        Raises:
            SchemaError: the spec names unknown columns, or new files lie outside the static spec.
        """
        if self.is_committed(commit_identifier):
            return []
        table = self.table
        new_entries = self._entries(messages, "new_files", FileKind.ADD)
        if dynamic is None:
            dynamic = bool(table.partition_keys) and table.options.get_option(
                opts.DYNAMIC_PARTITION_OVERWRITE
            )
        scope: OverwriteScope
        if partition is not None:
            scope = self._static_scope(partition)
            outside = [e.file.file_name for e in new_entries if not scope(e)]
            if outside:
                raise SchemaError(f"overwrite of partition {dict(partition)} got rows of other partitions")
        elif dynamic and table.partition_keys:
            present = {e.partition for e in new_entries}
            if not present:
                return []  # Paimon: a dynamic overwrite with no data changes nothing
            scope = lambda entry: entry.partition in present  # noqa: E731
        else:
            scope = lambda entry: True  # noqa: E731

        def build(latest: Snapshot | None) -> _Attempt:
            # The scope is re-read on every attempt: files added meanwhile in the scope are replaced too.
            # The deletes are live in `latest` by construction and the publish only lands on top of
            # `latest`, so re-checking them against `latest` would find nothing.
            doomed = [replace(e, kind=FileKind.DELETE) for e in live_entries(table, latest) if scope(e)]
            return _Attempt(CommitKind.OVERWRITE, doomed + new_entries, check_conflicts=False)

        created = [self._commit_with_retry(CommitKind.OVERWRITE, build, commit_identifier)]
        self._last_committed = commit_identifier
        self._expire_after(created)
        return created

    def _expire_after(self, created: Sequence[int]) -> None:
        """Snapshot expiration after a commit, as Java's committer does (never for write-only tables).

        The commit has landed whatever happens here: a failure is logged, never raised.
        """
        if not created or self.table.options.get_option(opts.WRITE_ONLY):
            return
        try:
            # imported here: the maintenance package imports this one
            from paimon_core.maintenance._expire import expire_snapshots, might_expire

            if might_expire(self.table, max(created)):
                expire_snapshots(self.table)
        except Exception:
            logger.warning(
                "snapshot expiration after a commit to %s failed", self.table.identifier, exc_info=True
            )

    def is_committed(self, commit_identifier: int) -> bool:
        """Whether this commit user already committed ``commit_identifier`` (or a later one).

        Batch commits (the maximal identifier) are never deduplicated this way. The snapshot history is
        searched once per committer (at recovery); afterwards the committer remembers its own progress.
        """
        if commit_identifier == BATCH_COMMIT_IDENTIFIER:
            return False
        if not self._recovered:
            latest = self._latest_of_user()  # may fail (storage errors): then search again next time
            if latest is not None:
                self._last_committed = latest.commit_identifier
            self._recovered = True
        return self._last_committed is not None and commit_identifier <= self._last_committed

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the new files of uncommitted messages."""
        self.table.delete_new_files(messages)

    # --- building entries ------------------------------------------------------------------------------

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

        def in_scope(entry: ManifestEntry) -> bool:
            hit = cache.get(entry.partition)
            if hit is None:
                values = table.partition_values(entry.partition)
                hit = all(_same_partition_value(values[k], v) for k, v in spec.items())
                cache[entry.partition] = hit
            return hit

        return in_scope

    # --- the retry loop ----------------------------------------------------------------------------------

    def _commit_with_retry(
        self, kind: CommitKind, build: Callable[[Snapshot | None], _Attempt], identifier: int
    ) -> int:
        start = time.monotonic()
        first_latest = self.table.snapshot_manager.latest_id() or 0
        uncertain: BaseException | None = None
        attempt_no = 0
        while True:
            try:
                if uncertain is not None:
                    # Before anything else: did the attempt whose outcome we never heard of land?
                    landed = self._find_own_snapshot(first_latest + 1, identifier, kind)
                    if landed is not None:
                        logger.info(
                            "commit of %s found as snapshot %s after an unknown outcome",
                            self.commit_user,
                            landed,
                        )
                        return landed
                snapshot_id, error = self._attempt(build, identifier, attempt_no)
            except (CommitConflictError, SchemaError):
                raise
            except Exception as exc:
                if uncertain is None:
                    raise
                # Reading the table failed after an unknown outcome: the commit may well have landed.
                raise self._unknown_outcome(identifier, attempt_no, uncertain) from exc
            if snapshot_id is not None:
                return snapshot_id
            uncertain = error or uncertain
            attempt_no += 1
            elapsed_ms = (time.monotonic() - start) * 1000
            if attempt_no > self._max_retries or (
                self._timeout_ms is not None and elapsed_ms > self._timeout_ms
            ):
                if uncertain is not None:
                    landed = self._find_own_snapshot(first_latest + 1, identifier, kind)
                    if landed is not None:
                        return landed
                    raise self._unknown_outcome(identifier, attempt_no, uncertain) from uncertain
                raise CommitRetriesExhaustedError(
                    f"commit to {self.table.path} lost the race for a snapshot id {attempt_no} times "
                    f"in {elapsed_ms:.0f} ms (commit.max-retries={self._max_retries})"
                )
            self._sleep_before_retry(attempt_no - 1)

    def _attempt(
        self, build: Callable[[Snapshot | None], _Attempt], identifier: int, attempt_no: int
    ) -> tuple[int | None, BaseException | None]:
        """One try: (new snapshot id, None) on success, (None, None) when another commit took the id, and
        (None, error) when the store's answer is unknown."""
        latest = self.table.snapshot_manager.latest()
        attempt = build(latest)
        if attempt.check_conflicts and latest is not None:
            self._check_conflicts(latest, attempt.entries)
        snapshot = self._build_snapshot(latest, attempt, identifier)
        logger.info(
            "commit attempt %s on %s: base snapshot %s -> %s (%s)",
            attempt_no, self.table.path, latest.id if latest else 0, snapshot.id, attempt.kind.value,
        )  # fmt: skip
        try:
            published = self._publish(snapshot)
        except LockAcquireTimeoutError:
            raise  # nothing was published: the outcome is known
        except Exception as exc:  # anything but "exists": the store may hold the snapshot or not
            logger.warning("publishing snapshot %s had an unknown outcome: %s", snapshot.id, exc)
            return None, exc
        return (snapshot.id if published else None), None

    def _publish(self, snapshot: Snapshot) -> bool:
        publish = self.table.snapshot_manager.try_publish
        if self._lock is None:
            return publish(snapshot)
        return self._lock.run_with_lock(self.table.path, lambda: publish(snapshot))

    def _unknown_outcome(
        self, identifier: int, attempts: int, cause: BaseException
    ) -> CommitStateUnknownError:
        # The commit may have landed unseen: the next is_committed must search the history again, or a
        # retry with this committer would publish the same files twice.
        self._recovered = False
        return CommitStateUnknownError(
            f"commit of {self.commit_user} (identifier {identifier}) to {self.table.path} has an "
            f"unknown outcome after {attempts} attempts: {cause}"
        )

    def _sleep_before_retry(self, retry: int) -> None:
        wait = min(self._min_wait_ms * (2**retry), self._max_wait_ms)
        jitter = random.uniform(0, max(1.0, 0.2 * wait))
        time.sleep((wait + jitter) / 1000)

    def _find_own_snapshot(self, first: int, identifier: int, kind: CommitKind) -> int | None:
        """The id of this committer's snapshot for ``identifier`` among snapshots ``first``.. latest."""
        sm = self.table.snapshot_manager
        last = sm.latest_id() or 0
        for snapshot_id in range(max(first, 1), last + 1):
            snapshot = sm.snapshot(snapshot_id)
            if (
                snapshot.commit_user == self.commit_user
                and snapshot.commit_identifier == identifier
                and snapshot.commit_kind == kind
            ):
                return snapshot_id
        return None

    def _latest_of_user(self) -> Snapshot | None:
        sm = self.table.snapshot_manager
        latest = sm.latest_id()
        earliest = sm.earliest_id()
        if latest is None or earliest is None:
            return None
        for snapshot_id in range(latest, earliest - 1, -1):
            try:
                snapshot = sm.snapshot(snapshot_id)
            except LookupError:  # expired meanwhile
                break
            if snapshot.commit_user == self.commit_user:
                return snapshot
        return None

    # --- conflicts -------------------------------------------------------------------------------------

    def _check_conflicts(self, latest: Snapshot, entries: list[ManifestEntry]) -> None:
        deleted = {e.identifier(): e for e in entries if e.kind == FileKind.DELETE}
        added = {e.identifier(): e for e in entries if e.kind == FileKind.ADD}
        if not deleted and not added:
            return
        live = {e.identifier() for e in live_entries(self.table, latest)}
        missing = [e.file.file_name for key, e in deleted.items() if key not in live]
        duplicated = [e.file.file_name for key, e in added.items() if key in live]
        if missing or duplicated:
            names = missing or duplicated
            winner = self._find_deleter(latest, set(names)) if missing else None
            reason = "File deletion conflicts detected" if missing else "files to add are already live"
            raise CommitConflictError(
                f"{reason} in {self.table.path}; give up committing",
                winning_snapshot_id=winner.id if winner else None,
                winning_commit_user=winner.commit_user if winner else None,
                conflicting_files=names,
            )

    def _find_deleter(self, latest: Snapshot, names: set[str]) -> Snapshot | None:
        sm = self.table.snapshot_manager
        earliest = sm.earliest_id() or 1
        for snapshot_id in range(latest.id, max(earliest, latest.id - _CONFLICT_SEARCH_DEPTH) - 1, -1):
            snapshot = sm.snapshot(snapshot_id)
            if snapshot.commit_kind == CommitKind.APPEND:
                continue
            entries = read_entries(self.table, manifest_metas(self.table, snapshot, delta_only=True))
            if any(e.kind == FileKind.DELETE and e.file.file_name in names for e in entries):
                return snapshot
        return None

    # --- the snapshot ----------------------------------------------------------------------------------

    def _build_snapshot(self, latest: Snapshot | None, attempt: _Attempt, identifier: int) -> Snapshot:
        table = self.table
        ctx, storage = table.manifest_context, table.storage
        base_metas = []
        if latest is not None:
            base_metas = read_manifest_list(storage, ctx.path(latest.base_manifest_list))
            base_metas += read_manifest_list(storage, ctx.path(latest.delta_manifest_list))
            base_metas = merge_manifests(ctx, base_metas, self._new_name)
        base_list = self._new_name("manifest-list")
        base_size = write_manifest_list(storage, ctx.path(base_list), base_metas, ctx.codec, ctx.level)
        delta_metas = write_manifests(ctx, attempt.entries, self._new_name)
        delta_list = self._new_name("manifest-list")
        delta_size = write_manifest_list(storage, ctx.path(delta_list), delta_metas, ctx.codec, ctx.level)
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
            delta_manifest_list=delta_list,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=None,
            changelog_manifest_list_size=None,
            index_manifest=latest.index_manifest if latest else None,
            commit_user=self.commit_user,
            commit_identifier=identifier,
            commit_kind=attempt.kind,
            time_millis=int(time.time() * 1000),
            total_record_count=(latest.total_record_count if latest else 0) + delta_rows,
            delta_record_count=delta_rows,
            changelog_record_count=0,
            watermark=latest.watermark if latest else None,
            statistics=latest.statistics if latest and same_schema else None,
            next_row_id=latest.next_row_id if latest else None,
        )


def _same_partition_value(stored: Any, given: Any) -> bool:
    if stored is None or given is None:
        return stored is given
    if isinstance(stored, str) or isinstance(given, str):
        return str(stored) == str(given)
    return bool(stored == given)
