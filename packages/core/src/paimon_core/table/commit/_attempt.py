"""The attempt loop: publish one snapshot, retrying lost races with back-off until ``commit.timeout``.

Each attempt reads the latest snapshot, runs the stages (replay checks of attempts whose outcome was unknown,
conflict detection, the snapshot builder, the publish) and comes to an :mod:`outcome <._outcome>`, which this
loop alone matches on: landed, lost race (retry on the new latest), unknown (look for it before anything
else; never retry blindly), already live or landed unseen (nothing to publish). docs/commit-protocol.md,
"One attempt" and "Contention".
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.errors import (
    CommitConflictError,
    CommitError,
    CommitFilesError,
    CommitIdentifierError,
    CommitRetriesExhaustedError,
    CommitStateUnknownError,
    LockAcquisitionError,
    SchemaError,
    SnapshotExpiredError,
)
from paimon_core.manifest import FileKind
from paimon_core.redaction import get_logger
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind
from paimon_core.table._history import OwnCommits
from paimon_core.table.commit._changes import BuildChanges
from paimon_core.table.commit._conflicts import (
    check_bucket_numbers,
    check_files,
    check_writers_history,
    index_after,
)
from paimon_core.table.commit._outcome import (
    AlreadyLive,
    Final,
    Landed,
    LandedUnseen,
    LostRace,
    Outcome,
    Published,
    Unknown,
)
from paimon_core.table.commit._publish import Publisher
from paimon_core.table.commit._replay import ReplayCheck
from paimon_core.table.commit._snapshot_builder import (
    SnapshotBuilder,
    WrittenFiles,
    delete_files,
    delete_unused,
)

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

logger = get_logger(__name__)

_BACKOFF_DOUBLINGS = 6  # the back-off window stops growing after this many lost races (fairness)


@dataclass
class CommitCall:
    """What one ``commit``/``overwrite`` call learns across the snapshots it publishes."""

    attempts: dict[int, int] = field(default_factory=dict)  # per snapshot created: publish attempts it took
    landed_now: set[int] = field(default_factory=set)  # identifiers whose first snapshot this call landed


@dataclass
class _Loop:
    """The state of one snapshot's attempts."""

    start: float
    seen_latest: int  # the latest snapshot id seen: a lost race while it did not move counts as an error
    written: WrittenFiles = field(default_factory=WrittenFiles)
    unknown: dict[str, Published] = field(default_factory=dict)  # by uuid: publishes with an unknown outcome
    errors: int = 0  # unknown outcomes, and lost races while the table did not move on
    attempt_no: int = 0


class AttemptLoop:
    """Publishes one committer's snapshots, one :meth:`run` per snapshot.

    Args:
        table: the table.
        own: this user's commits seen so far.
        replay: replay recognition over ``own``.
        builder: writes the metadata files and builds each attempt's snapshot.
        publisher: creates the snapshot files and checks them against the chain.
    """

    def __init__(
        self,
        table: TableStore,
        own: OwnCommits,
        replay: ReplayCheck,
        builder: SnapshotBuilder,
        publisher: Publisher,
    ) -> None:
        self.table = table
        self._own = own
        self._replay = replay
        self._builder = builder
        self._publisher = publisher
        self._max_retries = table.options.get_option(opts.COMMIT_MAX_RETRIES)
        self._timeout_ms = table.options.get_option(opts.COMMIT_TIMEOUT)
        self._min_wait_ms = table.options.get_option(opts.COMMIT_MIN_RETRY_WAIT)
        self._max_wait_ms = table.options.get_option(opts.COMMIT_MAX_RETRY_WAIT)

    def run(self, call: CommitCall, kind: CommitKind, build: BuildChanges, identifier: int) -> list[int]:
        """Publish one snapshot of ``kind``; [] when its files turned out committed already."""
        loop = _Loop(start=time.monotonic(), seen_latest=self.table.snapshot_manager.latest_id() or 0)
        try:
            final, attempts = self._until_final(call, build, identifier, loop)
        except (CommitConflictError, SchemaError, CommitFilesError, CommitIdentifierError):
            delete_unused(self.table, loop.written)
            raise
        except LockAcquisitionError as exc:
            if loop.unknown:  # an earlier attempt of this call may have landed
                raise self._unknown_outcome(identifier, loop.attempt_no, exc) from exc
            delete_unused(self.table, loop.written)
            raise
        except CommitError:
            raise
        except Exception as exc:
            if not loop.unknown:
                delete_unused(self.table, loop.written)
                raise
            # Reading the table failed after an unknown outcome: the commit may well have landed.
            raise self._unknown_outcome(identifier, loop.attempt_no, exc) from exc
        return self._finish(call, kind, identifier, final, attempts, loop.written)

    def _until_final(
        self, call: CommitCall, build: BuildChanges, identifier: int, loop: _Loop
    ) -> tuple[Final, int]:
        """Attempt until an outcome ends the call; returns it and the number of attempts it took."""
        while True:
            if loop.unknown:  # did an attempt whose outcome we never heard of land after all?
                found = self._publisher.find_unknown(loop.unknown)
                if found is not None:
                    logger.info("commit of %s found as snapshot %s after an unknown outcome",
                                self._own.commit_user, found.snapshot.id)  # fmt: skip
                    return Landed(found), loop.attempt_no
            outcome = self._attempt(call, build, identifier, loop)
            match outcome:
                case Landed() | AlreadyLive() | LandedUnseen():
                    return outcome, loop.attempt_no + 1
                case Unknown(published=published):
                    loop.errors += 1
                    loop.unknown[published.snapshot.uuid or ""] = published
                    loop.written.uncertain = True
                case LostRace():
                    # A race lost to a commit that landed is progress; losing without the table moving on
                    # (a store that refuses every create) counts against commit.max-retries.
                    latest_id = self.table.snapshot_manager.latest_id() or 0
                    loop.errors += latest_id <= loop.seen_latest
                    loop.seen_latest = max(loop.seen_latest, latest_id)
            loop.attempt_no += 1
            landed = self._check_deadline(loop)
            if landed is not None:
                return landed, loop.attempt_no + 1
            self._sleep_before_retry(loop.attempt_no - 1)

    def _finish(
        self,
        call: CommitCall,
        kind: CommitKind,
        identifier: int,
        final: Final,
        attempts: int,
        written: WrittenFiles,
    ) -> list[int]:
        match final:
            case Landed(published=published):
                return self._landed(call, published, attempts, identifier)
            case AlreadyLive():
                logger.info("the files of this %s commit are live already; nothing to do", kind.value)
                delete_unused(self.table, written)
                return []
            case LandedUnseen():
                # Its snapshot expired: the id is not known, and the metadata files may have been its.
                logger.info(
                    "commit %s of %s landed unseen and expired since", identifier, self._own.commit_user
                )
                call.landed_now.add(identifier)
                return []

    def _landed(self, call: CommitCall, published: Published, attempts: int, identifier: int) -> list[int]:
        snapshot_id = published.snapshot.id
        call.landed_now.add(identifier)
        call.attempts[snapshot_id] = max(attempts, 1)
        added = frozenset(e.file.file_name for e in published.entries if e.kind == FileKind.ADD)
        self._own.record(identifier, published.snapshot.commit_kind, snapshot_id, added)
        self.table.snapshot_manager.advance_latest_hint(snapshot_id)
        return [snapshot_id]

    # --- one attempt -------------------------------------------------------------------------------------

    def _attempt(self, call: CommitCall, build: BuildChanges, identifier: int, loop: _Loop) -> Outcome:
        """One try: prepare the snapshot on the latest one, then publish it."""
        try:
            prepared = self._prepare(call, build, identifier, loop)
            if not isinstance(prepared, Published):
                return prepared
            return self._publish(prepared, loop.written)
        except SnapshotExpiredError as exc:  # the base expired while we built on it: a lost race
            logger.info("commit attempt %s lost its base snapshot: %s", loop.attempt_no, exc)
            return LostRace()

    def _prepare(
        self, call: CommitCall, build: BuildChanges, identifier: int, loop: _Loop
    ) -> Published | AlreadyLive | Landed | LandedUnseen:
        """The snapshot to publish on the latest one, its metadata files written; or an outcome that says
        there is nothing to publish."""
        latest = self.table.snapshot_manager.latest()
        changes = build(latest)
        if identifier != BATCH_COMMIT_IDENTIFIER:
            progressed = self._check_own_progress(call, identifier, loop.unknown)
            if progressed is not None:
                return progressed
        if loop.unknown:
            told = self._replay.expired_unknown(changes, identifier, loop.unknown)
            if told is not None:
                return told
        live = check_files(self.table, latest, changes, check_live=loop.attempt_no == 0 or bool(loop.unknown))
        if live is not None:
            return live
        check_bucket_numbers(self.table, latest, changes)
        check_writers_history(self.table, latest, changes)
        index = index_after(self.table, latest, changes)
        snapshot = self._builder.build(latest, changes, identifier, loop.written, index)
        logger.info(
            "commit attempt %s on %s: base snapshot %s -> %s (%s)",
            loop.attempt_no, self.table.path, latest.id if latest else 0, snapshot.id, changes.kind.value,
        )  # fmt: skip
        return Published(snapshot, latest, changes.entries)

    def _publish(self, published: Published, written: WrittenFiles) -> Outcome:
        """Publish a prepared snapshot: landed; a lost race when another commit took the id or the publish
        landed in an id freed by expiration; unknown when the store's answer is."""
        base, snapshot = published.base, published.snapshot
        earliest = self.table.snapshot_manager.earliest_hint()
        if base is not None and earliest is not None and base.id < earliest:
            # Expiration took our base meanwhile, and maybe the id we are about to take: start over.
            delete_files(self.table, written.attempt)
            return LostRace()
        try:
            created = self._publisher.publish(snapshot)
        except LockAcquisitionError:
            raise  # nothing was published: the outcome is known
        except Exception as exc:  # anything but "exists": the store may hold the snapshot or not
            logger.warning("publishing snapshot %s had an unknown outcome: %s", snapshot.id, exc)
            written.delta = None  # a snapshot may reference it: the next attempt writes its own
            return Unknown(published)
        if not created:
            delete_files(self.table, written.attempt)
            return LostRace()
        if self._publisher.verify(published):
            return Landed(published)
        # Withdrawn: while it stood, an expiration may have taken it for an expired snapshot and deleted
        # its files, the delta included. The next attempt writes everything anew.
        delete_files(self.table, [*written.attempt, *written.delta_paths(self.table)])
        written.delta = None
        return LostRace()

    def _check_own_progress(
        self, call: CommitCall, identifier: int, unknown: Mapping[str, Published]
    ) -> Landed | LandedUnseen | None:
        """Another handle with this commit user may have committed meanwhile: never publish out of order.

        Returns:
            An outcome when the newer commit is this call's own attempt whose outcome was unknown; None
            when no newer commit of this user landed.

        Raises:
            CommitIdentifierError: another handle with this user committed this or a newer identifier.
        """
        self._replay.catch_up()
        last = self._own.last_identifier
        if last is None or last < identifier or (last == identifier and identifier in call.landed_now):
            return None
        found = self._publisher.find_unknown(unknown)
        if found is not None:
            return Landed(found)
        unseen = self._replay.landed_unseen(identifier, unknown)
        if unseen is not None:
            return unseen
        raise CommitIdentifierError(
            f"commit user {self._own.commit_user!r} committed identifier {last} to {self.table.path} while "
            f"identifier {identifier} was being committed (two committers share this commit user)",
            self._own.commit_user,
            identifier,
            last,
        )

    # --- retries -----------------------------------------------------------------------------------------

    def _check_deadline(self, loop: _Loop) -> Landed | None:
        """Races lost to other commits retry until ``commit.timeout``; unknown outcomes and races lost without
        any other commit landing, at most ``commit.max-retries`` times.

        Returns:
            :class:`Landed` when, out of retries, an attempt whose outcome was unknown turns out landed.

        Raises:
            CommitStateUnknownError: out of retries with unknown outcomes.
            CommitRetriesExhaustedError: out of retries, every attempt lost the race.
        """
        elapsed_ms = (time.monotonic() - loop.start) * 1000
        timed_out = self._timeout_ms is not None and elapsed_ms > self._timeout_ms
        if not timed_out and loop.errors <= self._max_retries:
            return None
        if loop.unknown:
            found = self._publisher.find_unknown(loop.unknown)
            if found is not None:
                return Landed(found)
            raise CommitStateUnknownError(
                f"commit of {self._own.commit_user} to {self.table.path} has an unknown outcome after "
                f"{loop.attempt_no} attempts ({loop.errors} unknown publish outcomes)"
            )
        raise CommitRetriesExhaustedError(
            f"commit to {self.table.path} lost the race for a snapshot id {loop.attempt_no} times in "
            f"{elapsed_ms:.0f} ms (commit.timeout={self._timeout_ms} ms, commit.max-retries={self._max_retries} "
            f"for races lost while no other commit landed: {loop.errors})"
        )

    def _sleep_before_retry(self, retry: int) -> None:
        # Full jitter over a window that stops growing soon: a committer that lost many races does not
        # wait longer than one that just arrived, so no one starves under steady contention.
        window = min(self._min_wait_ms * (2 ** min(retry, _BACKOFF_DOUBLINGS)), self._max_wait_ms)
        time.sleep(random.uniform(0, max(1.0, window)) / 1000)

    def _unknown_outcome(
        self, identifier: int, attempts: int, cause: BaseException
    ) -> CommitStateUnknownError:
        # The commit may have landed unseen: the next is_committed must search the history again, or a
        # retry with this committer would publish the same files twice.
        self._own.forget()
        return CommitStateUnknownError(
            f"commit of {self._own.commit_user} (identifier {identifier}) to {self.table.path} has an "
            f"unknown outcome after {attempts} attempts: {cause}"
        )
