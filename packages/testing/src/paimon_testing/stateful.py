"""Several writers on one table, interleaved step by step by Hypothesis and checked against a model.

:class:`ConcurrentCommits` is a ``RuleBasedStateMachine``. Its actors (``a0``...``a3``) share one table and
each runs jobs one at a time: append rows, overwrite one partition, overwrite the whole table, or compact.
A job goes ``begin`` → ``write`` → ``prepare`` → ``commit``; Hypothesis interleaves the steps of different
actors, retries commits with the same identifier (with the same committer, or a restarted one), crashes
actors between steps, aborts failed jobs, commits one actor *inside* another's publish
(``commit_racing``: the rival's snapshot takes the id the first one was about to create), pauses one actor
inside its publish while the others commit and expiration keeps a single snapshot (``commit_paused``: the id
it is about to take was published and deleted meanwhile), runs maintenance (``maintain``: snapshot expiration
with tiny retention, creating and deleting tags, a rollback to a retained snapshot or to a tag, orphan file
removal, also with a minimum age of zero that deletes the files of uncommitted jobs), and arms storage faults (:mod:`paimon_testing.faults`) that
fire on the next matching call: errors before or after a write reached the store, ambiguous timeouts, crashes
between the data files and the snapshot.

After every step the table is checked against :class:`TableModel`, through an undisturbed view of the
storage:

- the retained snapshot ids are dense, and every snapshot is a commit some actor made (user, identifier,
  kind), once;
- every commit reported as landed is in the table (unless rolled back), and every new snapshot is readable
  (or says it expired);
- what each snapshot reads equals the model's content at that snapshot (nothing lost, nothing duplicated),
  and its ``totalRecordCount`` agrees;
- a commit retried with the same identifier lands once (a retry of a landed commit creates nothing);
- a failed commit leaves only orphan files: every data file a retained snapshot or a tag references still
  exists;
- the table's tags are the model's, and each reads the content it tagged; after a rollback (later commits
  continue from the target's content) or an orphan removal, every retained snapshot and tag is read again.

:class:`paimon_testing.stateful_pk.PrimaryKeyCommits` runs the same machine on a primary-key table.

Running it::

    from paimon_testing.stateful import ConcurrentCommits, FAST

    TestConcurrentCommits = ConcurrentCommits.TestCase
    TestConcurrentCommits.settings = FAST

A failure prints the shortest sequence of steps Hypothesis found (``state.begin(...)``, ``state.commit(...)``,
with the drawn actors as ``Draw n (actor): 'a1'`` lines and each step's outcome as notes) and, with
``print_blob=True`` (set in :data:`FAST` and :data:`THOROUGH`), a ``@reproduce_failure(...)`` decorator to
replay exactly that run. To replay a whole run, pass the seed Hypothesis printed: ``pytest
--hypothesis-seed=<seed> ...``, or decorate the test with ``@hypothesis.seed(<seed>)``.

Extending it: subclass and override :meth:`ConcurrentCommits.make_warehouse` for another storage backend
(:class:`LocalConcurrentCommits` uses a local temporary directory), :meth:`ConcurrentCommits.make_compactor`
to drive another compactor (the default is the real one, :class:`JobCompactor`; :class:`RewriteCompactor`
rewrites with the public API only), and :meth:`ConcurrentCommits.make_expirer`
to expire another way (None disables expiration).
"""

from __future__ import annotations

import datetime
import shutil
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa
from hypothesis import HealthCheck, event, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from paimon_core import Catalog
from paimon_core.errors import CommitError, CommitStateUnknownError, PaimonError, SnapshotExpiredError
from paimon_core.manifest import ManifestEntry
from paimon_core.snapshot import CommitKind, Snapshot
from paimon_core.storage import clear_memory_store
from paimon_core.table import (
    CommitMessage,
    DataSplit,
    Table,
    TableCommit,
    TableRead,
    TableWrite,
    live_entries,
)
from paimon_core.tag import TagManager
from paimon_testing.faults import (
    DATA,
    MANIFEST,
    READ_OPS,
    SNAPSHOT,
    WRITE_OPS,
    Fault,
    FaultPlan,
    FaultyStorage,
    SimulatedCrash,
)
from paimon_testing.strategies import partition_values

__all__ = [
    "FAST",
    "SCHEMA",
    "THOROUGH",
    "Change",
    "Compactor",
    "ConcurrentCommits",
    "Expirer",
    "JobCompactor",
    "LocalConcurrentCommits",
    "RewriteCompactor",
    "TableModel",
]

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])
"""The machine's table: a unique row id, and the partition key ``p``."""

FAST = settings(
    max_examples=200,
    stateful_step_count=50,
    deadline=None,
    print_blob=True,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
"""CI: 200 interleavings of up to 50 steps, about half a minute on the memory backend."""

THOROUGH = settings(FAST, max_examples=5000, stateful_step_count=60)
"""Nightly: thousands of longer interleavings."""

Row = tuple[int, "str | None"]

# Weighted by repetition: appends feed the other jobs (a compaction needs several files in a partition).
_WRITE_JOBS = ("append", "append", "overwrite-partition", "overwrite-table")
_FAULTS = (Fault.FAIL_BEFORE, Fault.FAIL_AFTER, Fault.TIMEOUT_AFTER, Fault.CRASH, Fault.LATENCY)
# Where an armed fault fires: (storage methods, path fragment).
_TARGETS: dict[str, tuple[frozenset[str], str | None]] = {
    "snapshot-write": (frozenset({"write_if_absent"}), SNAPSHOT),
    # The LATEST hint is written right after the snapshot: a crash here dies after the commit landed.
    "hint-write": (frozenset({"write_bytes"}), "/snapshot/LATEST"),
    "manifest-write": (WRITE_OPS, MANIFEST),
    "data-write": (frozenset({"open_output"}), DATA),
    "snapshot-read": (READ_OPS, "/snapshot"),  # the directory listing too
    "manifest-read": (READ_OPS, MANIFEST),
    "data-delete": (frozenset({"delete"}), DATA),
}
_MAX_ARMED = 2
# Weighted by repetition: expiration is the maintenance that races commits most.
_MAINTENANCE = (
    "expire-1",
    "expire-2",
    "expire-1",
    "rollback",
    "orphans",
    "orphans-now",
    "tag",
    "tag",
    "untag",
    "rollback-tag",
)
_MAX_TAGS = 3
_FAR_FUTURE = datetime.datetime(2999, 1, 1)


# --- the model ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One logical commit, as the model sees it.

    Attributes:
        kind: APPEND, OVERWRITE or COMPACT.
        commit_user: the committing actor's user.
        identifier: the commit identifier.
        rows: the rows added, as (id, partition); records of a primary-key table (partition second) when
            ``ordered``.
        scope: for OVERWRITE, the partition values replaced; ``None`` means the whole table.
        ordered: the content is a history of records in commit order (a primary-key table merges it), not
            a set of rows.
    """

    kind: CommitKind
    commit_user: str
    identifier: int
    rows: tuple[Any, ...] = ()
    scope: tuple[str | None, ...] | None = None
    ordered: bool = False

    @property
    def key(self) -> tuple[str, int, CommitKind]:
        return (self.commit_user, self.identifier, self.kind)

    def apply(self, content: tuple[Any, ...]) -> tuple[Any, ...]:
        """The table content after this change."""
        if self.kind == CommitKind.COMPACT:
            return content
        if self.kind == CommitKind.OVERWRITE:
            scope = self.scope
            content = () if scope is None else tuple(r for r in content if r[1] not in scope)
        if self.ordered:
            return content + self.rows
        return tuple(sorted(content + self.rows, key=_row_key))

    def describe(self) -> str:
        what = f"{len(self.rows)} {'records' if self.ordered else 'rows'}"
        if self.kind == CommitKind.OVERWRITE:
            what += " over " + ("the table" if self.scope is None else f"p={list(self.scope)!r}")
        return f"{self.kind.value} {self.commit_user}/{self.identifier} ({what})"


def _row_key(row: Row) -> tuple[int, str]:
    return (row[0], "" if row[1] is None else row[1])


class TableModel:
    """What the table must hold: the change behind every snapshot, and the content each snapshot reads.

    Commits whose outcome is unknown (a timeout, a crash) wait in :attr:`pending` until a snapshot with their
    (user, identifier, kind) shows up; one that never shows up never landed. :attr:`tags` holds each tag's
    snapshot id and the content it was created with (a tag outlives a rollback of its id when the rollback
    died before deleting it).
    """

    def __init__(self) -> None:
        self.changes: dict[int, Change] = {}
        self.where: dict[tuple[str, int, CommitKind], int] = {}
        self.pending: dict[tuple[str, int, CommitKind], Change] = {}
        self.contents: dict[int, tuple[Any, ...]] = {0: ()}
        self.verified = 0
        self.tags: dict[str, tuple[int, tuple[Any, ...]]] = {}  # name -> (snapshot id, its content)

    def landed(self, snapshot_id: int, change: Change) -> None:
        """A commit call returned ``snapshot_id`` for ``change``."""
        placed = self.where.get(change.key)
        assert placed is None or placed == snapshot_id, (
            f"{change.describe()} landed twice: snapshots {placed} and {snapshot_id}"
        )
        known = self.changes.get(snapshot_id)
        assert known is None or known.key == change.key, (
            f"snapshot {snapshot_id} claimed by {known.describe() if known else ''} and {change.describe()}"
        )
        self.pending.pop(change.key, None)
        self.changes[snapshot_id] = change
        self.where[change.key] = snapshot_id

    def unknown(self, change: Change) -> None:
        """A commit call ended without telling whether it landed."""
        if change.key not in self.where:
            self.pending[change.key] = change

    def is_placed(self, change: Change) -> bool:
        return change.key in self.where

    def resolve(self, snapshot: Snapshot) -> Change:
        """The change behind a snapshot seen for the first time."""
        key = (snapshot.commit_user, snapshot.commit_identifier, snapshot.commit_kind)
        change = self.changes.get(snapshot.id)
        if change is not None:
            assert change.key == key, (
                f"snapshot {snapshot.id} is {key}, but the commit that reported it was {change.describe()}"
            )
            return change
        placed = self.where.get(key)
        assert placed is None, f"commit {key} landed twice: snapshots {placed} and {snapshot.id}"
        change_or_none = self.pending.pop(key, None)
        assert change_or_none is not None, (
            f"snapshot {snapshot.id} ({key}) matches no commit whose outcome was unknown: "
            "a commit reported as failed landed anyway"
        )
        self.changes[snapshot.id] = change_or_none
        self.where[key] = snapshot.id
        return change_or_none


# --- pluggable actors -------------------------------------------------------------------------------------------


class Compactor(Protocol):
    """What the compacting job drives: plan against the latest snapshot, then rewrite.

    :class:`JobCompactor` (the default) is the real compactor; :class:`RewriteCompactor` emulates one with the
    public API. Choose through :meth:`ConcurrentCommits.make_compactor`.
    """

    def plan(self) -> object | None:
        """Choose files to compact from the latest snapshot; None when there is nothing to do."""
        ...

    def rewrite(self, plan: object) -> list[CommitMessage]:
        """Write the compacted files; messages carry ``compact_before`` / ``compact_after``."""
        ...


class Expirer(Protocol):
    """Expires snapshots; the machine then checks only the retained ones (see ``make_expirer``)."""

    def expire(self, retain: int | None = None) -> None: ...


@dataclass(frozen=True)
class _RewritePlan:
    snapshot_id: int
    partition: bytes
    bucket: int
    total_buckets: int
    files: tuple[Any, ...]


class RewriteCompactor:
    """Rewrites the files of the (partition, bucket) with the most files into one: a COMPACT commit
    through the same commit path a real compactor uses (``compact_before`` / ``compact_after``)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def plan(self) -> _RewritePlan | None:
        latest = self.table.latest_snapshot()
        if latest is None:
            return None
        groups: dict[tuple[bytes, int], list[Any]] = {}
        totals: dict[tuple[bytes, int], int] = {}
        for entry in self.table.live_entries(latest.id):
            groups.setdefault((entry.partition, entry.bucket), []).append(entry.file)
            totals[(entry.partition, entry.bucket)] = entry.total_buckets
        candidates = [key for key, files in groups.items() if len(files) >= 2]
        if not candidates:
            return None
        key = max(candidates, key=lambda k: len(groups[k]))
        return _RewritePlan(latest.id, key[0], key[1], totals[key], tuple(groups[key]))

    def rewrite(self, plan: object) -> list[CommitMessage]:
        assert isinstance(plan, _RewritePlan)
        table = self.table
        split = DataSplit(
            plan.snapshot_id,
            plan.partition,
            plan.bucket,
            table.bucket_dir(plan.partition, plan.bucket),
            plan.files,
        )
        data = TableRead(table, None, None).to_arrow([split])
        writer = table.new_write()
        try:
            writer.write(data)
            written = writer.prepare_commit()
        except BaseException:
            writer.abort()
            raise
        assert [m.partition for m in written] == [plan.partition], "a compaction wrote outside its partition"
        after = tuple(f for m in written for f in m.new_files)
        return [
            CommitMessage(
                plan.partition,
                plan.bucket,
                plan.total_buckets,
                compact_before=plan.files,
                compact_after=after,
            )
        ]


class RetentionExpirer:
    """Expires with tiny retention (keep 1 or 2 snapshots, any age) through the table's storage."""

    def __init__(self, table: Table, retain: int = 2) -> None:
        self.table = table
        self.retain = retain

    def expire(self, retain: int | None = None) -> None:
        from paimon_core.maintenance import expire_snapshots

        keep = retain or self.retain
        expire_snapshots(self.table, retain_max=keep, retain_min=1, older_than=_FAR_FUTURE)


class JobCompactor:
    """The real compactor of ``paimon_core.compact``: the job's planner (the unaware-bucket coordinator, or
    per-bucket planning) and its rewrite tasks. Two small files are enough to compact here, so that short runs
    exercise it often."""

    def __init__(self, table: Table) -> None:
        self.table = table.copy({"compaction.min.file-num": "2"})

    def plan(self) -> object | None:
        from paimon_core.compact import CompactJob

        tasks = CompactJob(self.table).plan()
        return tasks or None

    def rewrite(self, plan: object) -> list[CommitMessage]:
        assert isinstance(plan, list)
        return [task.run(self.table) for task in plan]


# --- the actors -------------------------------------------------------------------------------------------------


@dataclass
class _Job:
    kind: str
    identifier: int
    scope: tuple[str | None, ...] | None = None
    writer: TableWrite | None = None
    plan: object | None = None
    rows: list[Any] = field(default_factory=list)
    messages: list[CommitMessage] | None = None
    phase: str = "writing"  # writing, prepared, landed, unknown, failed, aborted, rolled-back
    crashed: bool = False
    ordered: bool = False  # rows are records of a primary-key table, in write order

    def change(self, user: str) -> Change:
        if self.kind == "compact":
            return Change(CommitKind.COMPACT, user, self.identifier, ordered=self.ordered)
        rows = tuple(self.rows) if self.ordered else tuple(sorted(self.rows, key=_row_key))
        if self.kind == "append":
            return Change(CommitKind.APPEND, user, self.identifier, rows, ordered=self.ordered)
        return Change(CommitKind.OVERWRITE, user, self.identifier, rows, self.scope, self.ordered)


@dataclass
class Actor:
    name: str
    user: str
    committer: TableCommit | None = None
    next_identifier: int = 1
    job: _Job | None = None


class ConcurrentCommits(RuleBasedStateMachine):
    """Actors interleaving writes and commits on one table; invariants checked after every step."""

    actor_count = 3
    table_options: dict[str, str] = {
        "commit.max-retries": "2",
        "commit.min-retry-wait": "1 ms",
        "commit.max-retry-wait": "2 ms",
        "manifest.merge-min-count": "3",
    }

    def __init__(self) -> None:
        super().__init__()
        self.plan = FaultPlan()
        self.model = TableModel()
        self.actors = [Actor(f"a{i}", f"user-a{i}-{uuid.uuid4().hex[:6]}") for i in range(self.actor_count)]
        self.partitions: list[str | None] = []
        self.next_row = 0
        self.warehouse = self.make_warehouse()
        self.catalog = Catalog.open(self.warehouse, create=True)
        self.catalog.create_database("db", exist_ok=True)
        self.next_tag = 1
        self._open_table("db.t", SCHEMA, (), self.table_options)

    def _open_table(
        self, name: str, schema: pa.Schema, primary_keys: Sequence[str], options: dict[str, str]
    ) -> None:
        """Create the table the actors share (through faulty storage) and its undisturbed twin."""
        clean = self.catalog.create_table(
            name, schema, partition_keys=["p"], primary_keys=primary_keys, options=options
        )
        self.checker = clean  # reads through the undisturbed backend
        self.table = clean.with_storage(FaultyStorage(clean.storage, self.plan))
        self.compactor = self.make_compactor(self.table)
        self.expirer = self.make_expirer(self.table)
        self.compactable = False  # the latest snapshot has a (partition, bucket) with several files

    # --- extension points ------------------------------------------------------------------------------------

    def make_warehouse(self) -> str:
        """A fresh, empty warehouse URI for one run (memory by default); cleaned up by :meth:`drop_warehouse`."""
        return f"memory://paimon-stateful-{uuid.uuid4().hex}"

    def drop_warehouse(self) -> None:
        clear_memory_store(self.warehouse)

    def make_compactor(self, table: Table) -> Compactor:
        return JobCompactor(table)

    def make_expirer(self, table: Table) -> Expirer | None:
        """The actor that expires snapshots (with tiny retention by default); None disables the ``expire``
        and ``commit_paused`` rules. Snapshots that expire before the checks read them are checked through
        the acknowledged commits behind them."""
        return RetentionExpirer(table)

    def teardown(self) -> None:
        self.plan.disarm()
        self.drop_warehouse()

    # --- helpers ---------------------------------------------------------------------------------------------

    def _in_phase(self, *phases: str) -> list[str]:
        return [a.name for a in self.actors if a.job is not None and a.job.phase in phases]

    def _idle(self) -> list[str]:
        return [
            a.name
            for a in self.actors
            if a.job is None or a.job.phase in ("landed", "unknown", "failed", "aborted", "rolled-back")
        ]

    def _pick(self, data: st.DataObject, names: Sequence[str]) -> Actor:
        name = data.draw(st.sampled_from(sorted(names)), label="actor")
        return next(a for a in self.actors if a.name == name)

    def _committer(self, actor: Actor) -> TableCommit:
        if actor.committer is None:  # a (re)started actor: same commit user, fresh state
            actor.committer = self.table.new_commit(actor.user)
        return actor.committer

    def _crash(self, actor: Actor, why: str) -> None:
        note(f"{actor.name} crashed ({why})")
        actor.committer = None
        job = actor.job
        if job is None:
            return
        job.writer = None
        if job.phase == "writing":
            actor.job = None  # its files are orphans now

    def _fail_job(self, actor: Actor, error: BaseException) -> None:
        note(f"{actor.name}: {type(error).__name__}: {error}; the job is dropped")
        job = actor.job
        if job is not None and job.writer is not None:
            job.writer.abort()
        actor.job = None

    # --- rules -----------------------------------------------------------------------------------------------

    @initialize(partitions=st.lists(partition_values(), min_size=1, max_size=3, unique=True))
    def choose_partitions(self, partitions: list[str | None]) -> None:
        self.partitions = partitions

    @precondition(lambda self: self._idle())
    @rule(
        data=st.data(),
        job=st.sampled_from(_WRITE_JOBS),
        rows=st.lists(st.integers(0, 2), max_size=4),
    )
    def begin(self, data: st.DataObject, job: str, rows: list[int]) -> None:
        """Start a job with a new commit identifier and write its first rows (each index picks a partition;
        an overwrite of one partition takes the first index as its partition and writes only there)."""
        self._begin(self._pick(data, self._idle()), job, rows)

    def _begin(self, actor: Actor, job: str, rows: list[int]) -> None:
        identifier = actor.next_identifier
        actor.next_identifier += 1
        actor.job = None
        scope = None
        if job == "overwrite-partition":
            scope = (self.partitions[(rows[0] if rows else 0) % len(self.partitions)],)
        actor.job = _Job(job, identifier, scope=scope, writer=self.table.new_write())
        note(f"{actor.name} begins {job} #{identifier}" + (f" of p={scope[0]!r}" if scope else ""))
        self._write_rows(actor, rows)

    @precondition(lambda self: self._idle() and self.compactable)
    @rule(data=st.data())
    def begin_compaction(self, data: st.DataObject) -> None:
        """Plan a compaction against the latest snapshot (rewritten at ``prepare``)."""
        actor = self._pick(data, self._idle())
        identifier = actor.next_identifier
        actor.next_identifier += 1
        actor.job = None
        try:
            plan = self.compactor.plan()
        except SimulatedCrash as crash:
            self._crash(actor, str(crash))
            return
        except OSError as error:
            note(f"{actor.name}: planning a compaction failed: {error}")
            return
        if plan is None:
            note(f"{actor.name}: nothing to compact")
            return
        actor.job = _Job("compact", identifier, plan=plan)
        note(f"{actor.name} begins compact #{identifier}")

    def _writing(self) -> list[str]:
        return [a.name for a in self.actors if a.job and a.job.phase == "writing" and a.job.kind != "compact"]

    @precondition(lambda self: self._writing())
    @rule(data=st.data(), rows=st.lists(st.integers(0, 2), min_size=1, max_size=4))
    def write(self, data: st.DataObject, rows: list[int]) -> None:
        """Write more rows (indices pick partitions, as in ``begin``)."""
        self._write_rows(self._pick(data, self._writing()), rows)

    def _write_rows(self, actor: Actor, rows: list[int]) -> None:
        job = actor.job
        assert job is not None and job.writer is not None
        if not rows:
            return
        new: list[Row] = []
        for index in rows:
            value = job.scope[0] if job.scope is not None else self.partitions[index % len(self.partitions)]
            new.append((self.next_row, value))
            self.next_row += 1
        try:
            job.writer.write(pa.table({"id": [r[0] for r in new], "p": [r[1] for r in new]}, schema=SCHEMA))
            job.rows.extend(new)
        except SimulatedCrash as crash:
            self._crash(actor, str(crash))
        except OSError as error:
            self._fail_job(actor, error)

    def _preparable(self) -> list[str]:
        # An append with no rows commits nothing: not worth a step. Empty overwrites delete, so they count.
        return [
            a.name
            for a in self.actors
            if a.job and a.job.phase == "writing" and (a.job.rows or a.job.kind != "append")
        ]

    @precondition(lambda self: self._preparable())
    @rule(data=st.data())
    def prepare(self, data: st.DataObject) -> None:
        self._prepare(self._pick(data, self._preparable()))

    def _prepare(self, actor: Actor) -> None:
        job = actor.job
        assert job is not None
        try:
            if job.kind == "compact":
                if job.messages is None:
                    job.messages = self.compactor.rewrite(job.plan)
            else:
                assert job.writer is not None
                job.messages = job.writer.prepare_commit()
                job.writer.close()
                job.writer = None
            job.phase = "prepared"
        except SimulatedCrash as crash:
            self._crash(actor, str(crash))
        except (OSError, SnapshotExpiredError) as error:  # a compaction's inputs may have expired
            self._fail_job(actor, error)

    def _commit(self, actor: Actor) -> None:
        """Commit the actor's prepared job and record the outcome in the model."""
        job = actor.job
        assert job is not None and job.messages is not None
        change = job.change(actor.user)
        try:
            committer = self._committer(actor)
            if job.kind in ("append", "compact"):
                created = committer.commit(job.messages, job.identifier)
            else:
                spec = {} if job.scope is None else {"p": job.scope[0]}
                created = committer.overwrite(job.messages, spec, commit_identifier=job.identifier)
        except SimulatedCrash as crash:
            event("commit: crashed")
            self.model.unknown(change)
            job.phase = "unknown"
            self._crash(actor, str(crash))
            return
        except CommitStateUnknownError as error:
            event("commit: outcome unknown")
            note(f"{actor.name}: outcome of {change.describe()} unknown: {error}")
            self.model.unknown(change)
            job.phase = "unknown"
            return
        except (CommitError, OSError) as error:
            # Anything but an unknown outcome means "did not land": the invariants hold the committer to it.
            event(f"commit: failed with {type(error).__name__}")
            note(f"{actor.name}: {change.describe()} failed: {type(error).__name__}: {error}")
            job.phase = "failed"
            return
        nothing_to_do = change.kind == CommitKind.APPEND and not change.rows
        if created:
            assert not nothing_to_do, f"an empty append created snapshots {created}"
            assert len(created) == 1, f"{change.describe()} created several snapshots: {created}"
            event(f"commit: {change.kind.value} landed")
            note(f"{actor.name}: {change.describe()} -> snapshot {created[0]}")
            self.model.landed(created[0], change)
            job.phase = "landed"
        elif nothing_to_do:
            note(f"{actor.name}: empty append, nothing committed")
            job.phase = "landed"
        elif change.kind == CommitKind.COMPACT and not self.model.is_placed(change):
            # A primary-key file moved up a level keeps its name: when another compaction made the same move
            # (the file is live) or compacted the file since, the committer takes the names for its own
            # commit, landed before, and commits nothing. Harmless for a compaction; otherwise a failure.
            live = {e.file.file_name for e in self.checker.live_entries()}
            added = {f.file_name for m in job.messages for f in m.compact_after}
            moved = added & {f.file_name for m in job.messages for f in m.compact_before}
            assert added <= live or moved, (
                f"{change.describe()} created nothing, yet it never landed and its files are not all live"
            )
            event("commit: compaction already made by another")
            note(f"{actor.name}: {change.describe()} was made by another compaction; nothing to do")
            job.phase = "landed"
        else:
            assert self.model.is_placed(change), (
                f"{change.describe()} created nothing, yet it is not in the table (a retry that was "
                "deduplicated although the first attempt never landed)"
            )
            event("commit: retry deduplicated")
            note(f"{actor.name}: {change.describe()} was already committed; nothing to do")
            job.phase = "landed"

    def _commit_publishing(self, actor: Actor, meanwhile: Callable[[], None]) -> None:
        """Commit ``actor``'s job; ``meanwhile`` runs once, right before its snapshot is published."""
        armed = self.plan.arm(
            Fault.CALLBACK, ops={"write_if_absent"}, path_contains=SNAPSHOT, callback=meanwhile
        )
        try:
            self._commit(actor)
        finally:
            self.plan.disarm(armed)

    @precondition(lambda self: self._in_phase("prepared"))
    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        self._commit(self._pick(data, self._in_phase("prepared")))

    @precondition(lambda self: len(self._in_phase("prepared")) >= 2)
    @rule(data=st.data())
    def commit_racing(self, data: st.DataObject) -> None:
        """Commit an actor while a rival's commit lands just before its snapshot is published."""
        prepared = self._in_phase("prepared")
        actor = self._pick(data, prepared)
        rival = self._pick(data, [n for n in prepared if n != actor.name])

        def rival_commits() -> None:
            if rival.job is not None and rival.job.phase == "prepared":
                event("racing commit")
                note(f"{rival.name} commits inside {actor.name}'s publish")
                self._commit(rival)

        self._commit_publishing(actor, rival_commits)

    @precondition(lambda self: self._in_phase("landed", "unknown", "failed"))
    @rule(data=st.data(), restart=st.booleans())
    def retry(self, data: st.DataObject, restart: bool) -> None:
        """Commit the same messages with the same identifier again (after a restart: a new committer).

        Whether the first attempt landed or not (a streaming job replays its last commit after a failover
        without knowing), the identifier must end up in exactly one snapshot."""
        actor = self._pick(data, self._in_phase("landed", "unknown", "failed"))
        if restart:
            actor.committer = None
        note(
            f"{actor.name} retries #{actor.job.identifier if actor.job else '?'}"
            + (" after a restart" if restart else "")
        )
        self._commit(actor)

    @precondition(lambda self: self._in_phase("prepared", "failed"))
    @rule(data=st.data())
    def abort(self, data: st.DataObject) -> None:
        """Give up a job that did not land: its new files are deleted."""
        actor = self._pick(data, self._in_phase("prepared", "failed"))
        job = actor.job
        assert job is not None and job.messages is not None
        try:
            self._committer(actor).abort(job.messages)
            job.phase = "aborted"
        except SimulatedCrash as crash:
            self._crash(actor, str(crash))
            job.phase = "aborted"  # some files may be gone: never commit these messages again

    def _crashable(self) -> list[str]:
        return [a.name for a in self.actors if a.job and a.job.phase == "prepared" and not a.job.crashed]

    @precondition(lambda self: self._crashable())
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        """A prepared actor's process dies: its committer is lost; the messages survive (a streaming job
        checkpoints them) and are committed by a fresh committer after the restart. (Injected crashes hit
        other moments; ``retry(restart=True)`` restarts an actor whose commit has ended.)"""
        actor = self._pick(data, self._crashable())
        assert actor.job is not None
        actor.job.crashed = True
        self._crash(actor, "by rule")

    @precondition(lambda self: len(self.plan.armed) < _MAX_ARMED)
    @rule(fault=st.sampled_from(_FAULTS), where=st.sampled_from(sorted(_TARGETS)))
    def arm_fault(self, fault: Fault, where: str) -> None:
        """The next storage call matching ``where`` gets ``fault``."""
        ops, path = _TARGETS[where]
        self.plan.arm(fault, ops=ops, path_contains=path, latency_ms=1.0)

    @precondition(lambda self: len(self.plan.armed) < _MAX_ARMED)
    @rule(reads=st.integers(1, 3))
    def arm_blind_timeout(self, reads: int) -> None:
        """The next snapshot write lands but times out, and the next ``reads`` reads of the snapshot
        directory fail: the committer cannot tell whether its commit landed."""

        def blind() -> None:
            for _ in range(reads):
                self.plan.arm(Fault.FAIL_BEFORE, ops=READ_OPS, path_contains="/snapshot")

        self.plan.arm(Fault.TIMEOUT_AFTER, ops={"write_if_absent"}, path_contains=SNAPSHOT, callback=blind)

    @rule(data=st.data(), action=st.sampled_from(_MAINTENANCE))
    def maintain(self, data: st.DataObject, action: str) -> None:
        """One maintenance action (one rule for all, so that they do not crowd out the writers): expire
        snapshots, create or delete a tag, roll back to a snapshot or to a tag, or remove orphan files
        (``orphans-now``: with a minimum age of zero, which also deletes files of jobs that have not
        committed yet). After a rollback or an orphan removal every retained snapshot and every tag is read
        again: what they read must not have changed."""
        if action.startswith("expire"):
            if self.expirer is not None:
                self._expire(int(action[-1]))
        elif action == "tag":
            self._create_tag(data)
        elif action == "untag":
            self._delete_tag(data)
        elif action == "rollback":
            self._rollback(data)
            self._recheck_all()
        elif action == "rollback-tag":
            self._rollback_to_tag(data)
            self._recheck_all()
        else:
            self._remove_orphans(now=action == "orphans-now")
            self._recheck_all()

    def _expire(self, retain: int) -> None:
        """Expire all but the newest ``retain`` snapshots (a failed run leaves the table as it was)."""
        expirer = self.expirer
        assert expirer is not None
        _attempt("expiration", lambda: expirer.expire(retain))

    @precondition(lambda self: self.expirer is not None and self._in_phase("prepared"))
    @rule(data=st.data(), rounds=st.integers(1, 3))
    def commit_paused(self, data: st.DataObject, rounds: int) -> None:
        """An actor stalls inside its publish while the others commit (idle ones append a row) and expiration
        keeps one snapshot: the id it is about to take was published and deleted meanwhile (the stale-publish
        race)."""
        actor = self._pick(data, self._in_phase("prepared"))
        rivals = [a for a in self.actors if a is not actor]

        def others_commit_and_expire() -> None:
            event("paused commit")
            for round_ in range(rounds):
                for rival in rivals:
                    if rival.name in self._idle():
                        self._begin(rival, "append", [round_])
                        if rival.job is not None and rival.job.phase == "writing":
                            self._prepare(rival)
                    if rival.job is not None and rival.job.phase == "prepared":
                        note(f"{rival.name} commits while {actor.name} is paused")
                        self._commit(rival)
            self._verify_snapshots()  # before they expire: every one is checked against the model
            self._expire(1)

        self._commit_publishing(actor, others_commit_and_expire)

    def _rollback(self, data: st.DataObject) -> None:
        """Roll the table back to a retained snapshot: the commits above it are undone (their actors move on
        to new jobs), and the ids above it are taken again by later commits."""
        from paimon_core.maintenance import rollback_to

        self._verify_snapshots()
        retained = self._retained_ids()
        if len(retained) < 2:
            return
        target = data.draw(st.sampled_from(retained[:-1]), label="rollback target")
        note(f"rollback to snapshot {target}")
        _attempt("rollback", lambda: rollback_to(self.table, target))
        self._after_rollback()

    def _after_rollback(self) -> None:
        """Forget what the rollback undid: the commits above the latest retained snapshot, and the tags of
        those snapshots that it deleted (a rollback that died midway may leave some)."""
        retained = self._retained_ids()
        last = retained[-1] if retained else 0
        self._undo_above(last)
        present = set(self._tag_manager().names())
        for name, (snapshot_id, _) in list(self.model.tags.items()):
            if snapshot_id > last and name not in present:
                note(f"the rollback deleted tag {name} (snapshot {snapshot_id})")
                del self.model.tags[name]

    def _undo_above(self, last: int) -> None:
        """Forget the commits of snapshots above ``last`` (rolled back)."""
        model = self.model
        undone = {model.changes.pop(i).key for i in sorted(model.changes) if i > last}
        for key in undone:
            model.where.pop(key, None)
        for snapshot_id in [i for i in model.contents if i > last]:
            del model.contents[snapshot_id]
        model.verified = min(model.verified, last)
        for actor in self.actors:
            job = actor.job
            if job is not None and job.change(actor.user).key in undone:
                note(f"{actor.name}: {job.kind} #{job.identifier} was rolled back")
                job.phase = "rolled-back"
        if undone:
            event("rollback undid commits")

    def _tag_manager(self) -> TagManager:
        return TagManager(self.checker.storage, self.checker.path)

    def _create_tag(self, data: st.DataObject) -> None:
        """Tag a retained snapshot (at most ``_MAX_TAGS`` tags): the model keeps the content it tags."""
        from paimon_core.maintenance import create_tag

        self._verify_snapshots()
        retained = self._retained_ids()
        if not retained or len(self.model.tags) >= _MAX_TAGS:
            return
        target = data.draw(st.sampled_from(retained), label="tag target")
        name = f"t{self.next_tag}"
        self.next_tag += 1
        note(f"create tag {name} of snapshot {target}")
        # The snapshot may have expired meanwhile.
        _attempt("tag creation", lambda: create_tag(self.table, name, target))
        tags = self._tag_manager()
        if not tags.exists(name):
            return
        tagged = tags.tag(name).snapshot.id
        assert tagged == target, f"tag {name} was created of snapshot {tagged}, not {target}"
        self.model.tags[name] = (target, self.model.contents[target])
        event("tag created")
        self._check_tag(name)

    def _delete_tag(self, data: st.DataObject) -> None:
        """Delete a tag; when it was the last to hold an expired snapshot, that snapshot's files go too."""
        from paimon_core.maintenance import delete_tag

        if not self.model.tags:
            return
        name = data.draw(st.sampled_from(sorted(self.model.tags)), label="tag to delete")
        note(f"delete tag {name}")
        _attempt("tag deletion", lambda: delete_tag(self.table, name))
        if not self._tag_manager().exists(name):
            del self.model.tags[name]
            event("tag deleted")

    def _rollback_to_tag(self, data: st.DataObject) -> None:
        """Roll back to a tag: its snapshot becomes the latest again (brought back when it expired), the
        commits above it are undone and the tags above it deleted; later commits continue from its content."""
        from paimon_core.maintenance import rollback_to

        self._verify_snapshots()
        if not self.model.tags:
            return
        name = data.draw(st.sampled_from(sorted(self.model.tags)), label="rollback tag")
        target, content = self.model.tags[name]
        note(f"rollback to tag {name} (snapshot {target})")
        _attempt("rollback to a tag", lambda: rollback_to(self.table, tag=name))
        retained = self._retained_ids()
        if retained and retained[-1] == target:
            event("rolled back to a tag")
            # The snapshot may have been written back from the tag after it expired: it holds the tag's content.
            self.model.contents[target] = content
        self._after_rollback()

    def _remove_orphans(self, now: bool) -> None:
        """Orphan removal; with ``now`` it also deletes files that jobs wrote and have not committed yet: their
        commits must then fail, never publish a snapshot that cannot be read."""
        from paimon_core.maintenance import remove_orphan_files

        future = int(_FAR_FUTURE.timestamp() * 1000)

        def remove() -> None:
            if now:
                remove_orphan_files(self.table, older_than=future, now_millis=future)
            else:
                remove_orphan_files(self.table)

        _attempt("orphan removal", remove)

    def _recheck_all(self) -> None:
        """Read every retained snapshot and every tag again: maintenance must not change what they read."""
        self._verify_snapshots()
        for snapshot_id in self._retained_ids():
            if snapshot_id in self.model.contents:
                self._check_read(snapshot_id, None, self.model.contents[snapshot_id])
        for name in sorted(self.model.tags):
            self._check_tag(name)

    def _check_tag(self, name: str) -> None:
        _, content = self.model.tags[name]
        self._check_read(None, name, content)

    def _check_read(self, snapshot_id: int | None, tag: str | None, content: tuple[Any, ...]) -> None:
        """What a snapshot (or tag) reads equals the model's content (a snapshot that expired meanwhile says so)."""
        expected = self.expected_rows(content)
        try:
            actual = self.read_rows(snapshot_id=snapshot_id, tag=tag)
        except SnapshotExpiredError:
            if tag is not None:
                raise
            return
        what = f"tag {tag}" if tag is not None else f"snapshot {snapshot_id}"
        self.check_rows(what, actual, expected, snapshot_id=snapshot_id, tag=tag)

    # --- how the table is read and compared (overridden by the primary-key machine) ----------------------------

    def read_rows(self, snapshot_id: int | None = None, tag: str | None = None) -> list[Any]:
        """What the table reads (the latest snapshot, or one snapshot or tag), sorted."""
        return _rows(self.checker.to_arrow(["id", "p"], snapshot_id=snapshot_id, tag=tag))

    def expected_rows(self, content: tuple[Any, ...]) -> list[Any]:
        """The sorted rows a read of ``content`` must return."""
        return list(content)

    def check_rows(
        self,
        what: str,
        actual: list[Any],
        expected: list[Any],
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
    ) -> None:
        """Compare a read with the model; ``snapshot_id`` / ``tag`` say what was read (None: the latest)."""
        if actual != expected:
            lost = Counter(expected) - Counter(actual)
            extra = Counter(actual) - Counter(expected)
            raise AssertionError(
                f"{what} reads wrong rows: lost {sorted(lost, key=str)}, unexpected or duplicated "
                f"{sorted(extra, key=str)}"
            )

    def check_record_count(self, snapshot: Snapshot, expected: list[Any]) -> None:
        """The snapshot's ``totalRecordCount`` agrees with what it holds."""
        assert snapshot.total_record_count == len(expected), (
            f"snapshot {snapshot.id} says totalRecordCount={snapshot.total_record_count}, holds {len(expected)} rows"
        )

    def is_compactable(self, entries: Sequence[ManifestEntry]) -> bool:
        """Whether a compaction of these live files has something to do."""
        groups: Counter[tuple[bytes, int]] = Counter((e.partition, e.bucket) for e in entries)
        return any(count >= 2 for count in groups.values())

    # --- invariants ------------------------------------------------------------------------------------------

    @invariant()
    def table_matches_model(self) -> None:
        self._verify_snapshots()
        roots: list[Snapshot] = []
        sm = self.checker.snapshot_manager
        for snapshot_id in self._retained_ids():
            snapshot = sm.try_snapshot(snapshot_id)
            if snapshot is not None:
                roots.append(snapshot)
        roots += [t.snapshot for t in self._tag_manager().tags()]
        used = set()  # every file the retained snapshots and the tags use is still there
        for snapshot in roots:
            try:
                entries = live_entries(self.checker, snapshot)
            except SnapshotExpiredError:
                continue
            used |= {f"{self.checker.bucket_dir(e.partition, e.bucket)}/{e.file.file_name}" for e in entries}
        gone = sorted(path for path in used if not self.checker.storage.exists(path))
        assert not gone, f"data files referenced by snapshots or tags were deleted: {gone[:5]}"

    @invariant()
    def tags_match_model(self) -> None:
        actual = {t.name: t.snapshot.id for t in self._tag_manager().tags()}
        expected = {name: snapshot_id for name, (snapshot_id, _) in self.model.tags.items()}
        assert actual == expected, f"the table's tags {actual} are not the model's {expected}"

    def _retained_ids(self) -> list[int]:
        sm = self.checker.snapshot_manager
        earliest = sm.earliest_id()
        # Files below EARLIEST are expiring, or publishes that lost to expiration and await orphan removal.
        return [i for i in sm.list_ids() if earliest is None or i >= earliest]

    def _verify_snapshots(self) -> None:
        """Check every snapshot that appeared since the last check against the model."""
        ids = self._retained_ids()
        assert ids == list(range(ids[0], ids[-1] + 1)) if ids else True, f"snapshot ids have holes: {ids}"
        if ids and self.expirer is None:
            assert ids[0] == 1, f"snapshots {ids} do not start at 1, yet nothing expires them"
        last = ids[-1] if ids else 0
        missing = sorted(k for k in self.model.changes if k > last)
        assert not missing, f"commits reported as landed are not in the table: snapshots {missing}"
        new = range(self.model.verified + 1, last + 1)
        for snapshot_id in new:
            self._check_new_snapshot(snapshot_id)
        self.model.verified = max(self.model.verified, last)
        if new:  # the plain read of the latest snapshot goes through the LATEST hint
            expected = self.expected_rows(self.model.contents[last])
            actual = self.read_rows()
            self.check_rows(
                "the latest read (an acknowledged commit missing, or a row duplicated?)", actual, expected
            )

    def _check_new_snapshot(self, snapshot_id: int) -> None:
        snapshot = self.checker.snapshot_manager.try_snapshot(snapshot_id)
        earliest = self.checker.snapshot_manager.earliest_id()
        if snapshot is None or (earliest is not None and snapshot_id < earliest):
            # Expired before this check: only an acknowledged commit can explain it.
            change = self.model.changes.get(snapshot_id)
            assert change is not None, f"snapshot {snapshot_id} expired before any commit claimed it"
            self.model.contents[snapshot_id] = change.apply(self.model.contents[snapshot_id - 1])
            return
        change = self.model.resolve(snapshot)
        content = change.apply(self.model.contents[snapshot_id - 1])
        self.model.contents[snapshot_id] = content
        expected = self.expected_rows(content)
        try:
            actual = self.read_rows(snapshot_id=snapshot_id)
        except SnapshotExpiredError:
            return  # expired while we read it: readers are told so, never given partial data
        self.check_rows(
            f"snapshot {snapshot_id} ({change.describe()})", actual, expected, snapshot_id=snapshot_id
        )
        self.check_record_count(snapshot, expected)
        self.compactable = self.is_compactable(self.checker.live_entries(snapshot_id))


def _attempt(what: str, action: Callable[[], object]) -> None:
    """Run a maintenance ``action`` that an injected fault may crash or fail; only note how it ended (the
    table is checked against the model afterwards)."""
    try:
        action()
    except SimulatedCrash as crash:
        note(f"{what} crashed: {crash}")
    except (PaimonError, OSError) as error:
        note(f"{what} failed: {type(error).__name__}: {error}")


def _rows(data: pa.Table) -> list[Row]:
    return sorted(zip(data.column("id").to_pylist(), data.column("p").to_pylist(), strict=True), key=_row_key)


class LocalConcurrentCommits(ConcurrentCommits):
    """The machine on a local temporary directory (closer to production than memory, and slower)."""

    def make_warehouse(self) -> str:
        self._tmp = tempfile.mkdtemp(prefix="paimon-stateful-")
        return f"{self._tmp}/warehouse"

    def drop_warehouse(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)
