"""Crashes inside every maintenance operation that deletes files or snapshots.

Each operation runs on a copy of one table history with a storage wrapper that "kills the process" before
its N-th write or delete (every later storage call fails too), for every N from the first storage call of
the operation to one past its last, so that every call is a crash point (after call N is before call N+1);
and again with the N-th call landing and then raising ``ConnectionResetError`` to a process that lives on.
After each failure, with plain storage:

- the latest snapshot reads the state before the operation or the state after it; every retained snapshot
  (from EARLIEST on) and every tag reads what it read before;
- new commits land and are read back (no acknowledged commit is lost);
- running the operation again completes, and leaves the state after it (with the new commits, unless the
  operation is a rollback or a purge, which remove them on purpose);
- orphan removal then deletes nothing that a retained snapshot or a tag reads.

Operations: snapshot expiration, rollback to a snapshot, to a tag and to a tag whose snapshot expired, tag
deletion (of the last tag of an expired snapshot), orphan file removal, a partition drop (an empty
overwrite of one partition, as ``ALTER TABLE ... DROP PARTITION`` commits), partition expiration, tag
expiration, manifest compaction and purging a table. Paimon's changelog lifecycle
decoupling (``changelog.num-retained.*``) does not exist here: changelog files expire with their
snapshots, which the primary-key table (``changelog-producer=input``) covers.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, clock
from paimon_core.compact import compact_table
from paimon_core.errors import CommitConflictError, PaimonError, SnapshotExpiredError
from paimon_core.maintenance import (
    compact_manifest,
    create_tag,
    delete_tag,
    expire_partitions,
    expire_snapshots,
    expire_tags,
    purge_files,
    remove_orphan_files,
    rollback_to,
)
from paimon_core.table import Table
from paimon_core.tag import TagManager
from paimon_testing.faults import WRITE_OPS, Fault, FaultPlan, FaultRule, FaultyStorage, SimulatedCrash

FAR_FUTURE = "2999-01-01 00:00:00"
SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
KINDS = {
    "append": {"bucket": "-1"},
    "primary-key": {"bucket": "2", "changelog-producer": "input"},
}
Rows = list[tuple[Any, ...]]


class CrashAt:
    """A storage wrapper's plan: the process dies before its ``n``-th write or delete; every storage call
    after that fails as well (a dead process does nothing more, also in the other threads of its pools)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls = 0
        self.crashed = False
        self._lock = threading.Lock()

    def before_write(self) -> None:
        with self._lock:
            self.calls += 1
            self.crashed = self.crashed or self.calls >= self.n
            if self.crashed:
                raise SimulatedCrash(f"crash before storage write {self.calls}")

    def before_read(self) -> None:
        with self._lock:
            if self.crashed:
                raise SimulatedCrash("the process is dead")

    def storage(self, inner: Any) -> FaultyStorage:
        reads = frozenset({"open_input", "read_bytes", "exists", "size", "info", "list_dir", "list_prefix"})
        return FaultyStorage(
            inner,
            FaultPlan(
                [
                    FaultRule(Fault.CALLBACK, ops=WRITE_OPS, callback=self.before_write),
                    FaultRule(Fault.CALLBACK, ops=reads, callback=self.before_read),
                ]
            ),
        )


@dataclass
class History:
    """A table's history and what every snapshot and tag reads (the oracle: read right after each commit)."""

    warehouse: Path
    kind: str
    rows: dict[int, Rows] = field(default_factory=dict)  # snapshot id -> rows
    next_id: int = 0

    def table(self, warehouse: Path | None = None) -> Table:
        return Catalog.open(str(warehouse or self.warehouse)).get_table("db.t")

    def commit(self, table: Table, action: Callable[[Table], Any]) -> int:
        action(table)
        snapshot = table.latest_snapshot()
        assert snapshot is not None
        self.rows[snapshot.id] = read(table, snapshot.id)
        return snapshot.id

    def append(self, table: Table, partition: str, count: int = 2) -> int:
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        data = pa.table({"p": [partition] * count, "id": ids, "v": [i * 10 for i in ids]}, schema=SCHEMA)
        return self.commit(table, lambda t: t.append(data))


def read(table: Table, snapshot_id: int | None = None, tag: str | None = None) -> Rows:
    data = table.to_arrow(snapshot_id=snapshot_id, tag=tag)
    return sorted(tuple(row.values()) for row in data.select(SCHEMA.names).to_pylist())


def build(warehouse: Path, kind: str) -> History:
    """Eight snapshots: appends to two partitions, a full compaction, an overwrite of partition ``b``,
    tags on snapshots 2 and 5, an orphan data file and a stray snapshot-directory file."""
    catalog = Catalog.open(str(warehouse), create=True)
    catalog.create_database("db")
    options = {"write-only": "true", "compaction.min.file-num": "2", **KINDS[kind]}
    keys = ["p", "id"] if kind == "primary-key" else []
    catalog.create_table("db.t", SCHEMA, partition_keys=["p"], primary_keys=keys, options=options)
    history = History(warehouse, kind)
    table = history.table()
    history.append(table, "a")  # 1
    history.append(table, "b")  # 2
    history.append(table, "a")  # 3
    history.commit(table, lambda t: compact_table(t, progress=False))  # 4: replaces the files of 1..3
    history.append(table, "b")  # 5
    replacement = pa.table({"p": ["b"], "id": [1000], "v": [0]}, schema=SCHEMA)
    history.commit(table, lambda t: t.overwrite(replacement, partition={"p": "b"}))  # 6
    history.append(table, "a")  # 7
    history.append(table, "b")  # 8
    create_tag(table, "t2", 2)
    create_tag(table, "t5", 5)
    writer = table.new_write()
    writer.write(pa.table({"p": ["a"], "id": [-1], "v": [-1]}, schema=SCHEMA))
    writer.prepare_commit()  # written, never committed: an orphan
    (warehouse / "db.db" / "t" / "snapshot" / ".snapshot-9.tmp").write_text("left by a crash")
    assert sorted(history.rows) == list(range(1, 9))
    return history


def _expire(table: Table) -> None:
    expire_snapshots(table, retain_min=2, retain_max=2, older_than=FAR_FUTURE)


def _remove_orphans(table: Table) -> None:
    now = int(time.time() * 1000) + 86_400_000  # a day ahead: every file is old enough
    remove_orphan_files(table, older_than=now, now_millis=now)


def _drop_partition_b(table: Table) -> None:
    table.overwrite(pa.table({"p": [], "id": [], "v": []}, schema=SCHEMA), partition={"p": "b"})


def _expire_partition_a(table: Table) -> None:
    """``expire_partitions`` of the partition whose newest file is oldest by name (``a``), two days ahead."""
    ahead = int(time.time() * 1000) + 2 * 86_400_000
    with clock.use_clock(lambda: ahead):
        expire_partitions(table, expiration_time="1 d", expire_strategy="update-time", max_expires=1)


@dataclass(frozen=True)
class Operation:
    name: str
    run: Callable[[Table], Any]
    setup: Callable[[Table], Any] | None = None
    rollback_target: int | None = None  # a rollback: its target snapshot, whose state is the result
    keeps: Callable[[tuple[Any, ...]], bool] = lambda row: True  # whether running again keeps a new row


OPERATIONS = [
    Operation("expire-snapshots", _expire),
    Operation("rollback-to-snapshot", lambda t: rollback_to(t, snapshot_id=3), rollback_target=3),
    Operation("rollback-to-tag", lambda t: rollback_to(t, tag="t5"), rollback_target=5),
    Operation("rollback-to-expired-tag", lambda t: rollback_to(t, tag="t2"), _expire, rollback_target=2),
    Operation("delete-expired-tag", lambda t: delete_tag(t, "t2"), _expire),
    Operation("remove-orphan-files", _remove_orphans, _expire),
    Operation("drop-partition", _drop_partition_b, keeps=lambda row: row[0] != "b"),
    Operation("expire-partitions", _expire_partition_a, keeps=lambda row: row[0] != "a"),
    Operation("expire-tags", lambda t: expire_tags(t, older_than=FAR_FUTURE), _expire),
    Operation("compact-manifest", compact_manifest),
    Operation("purge-files", purge_files, keeps=lambda row: False),  # running again purges the new rows too
]


@dataclass(frozen=True)
class State:
    latest: Rows
    retained: dict[int, Rows]  # snapshot id (from EARLIEST on) -> rows
    tags: dict[str, Rows]


def observe(table: Table) -> State:
    sm = table.snapshot_manager
    earliest = sm.earliest_id() or 0
    retained = {s.id: read(table, s.id) for s in table.snapshots() if s.id >= earliest}
    tags = {tag.name: read(table, tag=tag.name) for tag in TagManager(table.storage, table.path).tags()}
    return State(read(table), retained, tags)


Template = tuple[History, State, State]


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Operation], Template]:
    """Per (kind, operation), built once: the history before the operation, the states before and after."""
    bases: dict[str, History] = {}
    built: dict[tuple[str, str], Template] = {}

    def template(kind: str, op: Operation) -> Template:
        if (kind, op.name) in built:
            return built[(kind, op.name)]
        if kind not in bases:
            bases[kind] = build(tmp_path_factory.mktemp(f"{kind}-base"), kind)
        base = bases[kind]
        warehouse = tmp_path_factory.mktemp(f"{kind}-{op.name}")
        shutil.copytree(base.warehouse, warehouse, dirs_exist_ok=True)
        history = History(warehouse, kind, dict(base.rows), base.next_id)
        if op.setup is not None:
            op.setup(history.table())
        before = observe(history.table())
        done = Path(str(warehouse) + "-done")
        shutil.copytree(warehouse, done)
        op.run(history.table(done))
        built[(kind, op.name)] = (history, before, observe(history.table(done)))
        return built[(kind, op.name)]

    return template


def _check_readable(table: Table, history: History, before: State, after: State, where: str) -> None:
    state = observe(table)
    assert state.latest in (before.latest, after.latest), f"{where}: the latest snapshot reads neither state"
    _check_retained(state, history, after, where)
    for name, rows in state.tags.items():
        assert rows == before.tags[name], f"{where}: tag {name} reads something else"
    assert set(before.tags) >= set(state.tags) >= set(after.tags), f"{where}: tags {sorted(state.tags)}"


def _check_retained(state: State, history: History, after: State, where: str) -> None:
    """Every retained snapshot reads what it read when it was committed (or what the operation made)."""
    expected = {**after.retained, **history.rows}
    for snapshot_id, rows in state.retained.items():
        assert rows == expected[snapshot_id], f"{where}: snapshot {snapshot_id} reads something else"


def _commit_and_check(table: Table, history: History, where: str) -> Rows:
    """Two appends land on whatever the crash left, and every acknowledged row is read back."""
    for partition in ("a", "b"):
        latest_before = read(table)
        snapshot_id = history.append(table, partition, count=1)
        added = [r for r in history.rows[snapshot_id] if r not in latest_before]
        assert len(added) == 1 and sorted(latest_before + added) == read(table), where
    return read(table)


def _run_failing(op: Operation, table: Table, failure: str, n: int) -> bool:
    """Run ``op`` with ``failure`` at its ``n``-th storage write or delete; whether it came that far.

    ``crash``: the process dies before the call (and does nothing more). ``fail-after``: the call lands,
    then raises ``ConnectionResetError``; the process lives on, and the operation goes on or gives up.
    """
    if failure == "crash":
        crash = CrashAt(n)
        with contextlib.suppress(SimulatedCrash):
            op.run(table.with_storage(crash.storage(table.storage)))
        return crash.crashed
    plan = FaultPlan(
        [
            FaultRule(Fault.CALLBACK, ops=WRITE_OPS, times=n - 1, callback=lambda: None),  # the first n-1
            FaultRule(Fault.FAIL_AFTER, ops=WRITE_OPS, times=1),
        ]
    )
    with contextlib.suppress(PaimonError, OSError):
        op.run(table.with_storage(FaultyStorage(table.storage, plan)))
    return Fault.FAIL_AFTER in plan.counts()


@pytest.mark.slow
@pytest.mark.parametrize("failure", ["crash", "fail-after"])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_a_crash_at_every_storage_call_leaves_a_readable_table_and_the_operation_can_run_again(
    templates: Callable[[str, Operation], Template],
    tmp_path: Path,
    kind: str,
    op: Operation,
    failure: str,
) -> None:
    template, before, after = templates(kind, op)
    for n in itertools.count(1):
        where = f"{op.name} on a {kind} table, {failure} at storage write {n}"
        warehouse = tmp_path / f"n{n}"
        shutil.copytree(template.warehouse, warehouse)
        history = History(warehouse, kind, dict(template.rows), template.next_id)
        finished = not _run_failing(op, history.table(), failure, n)
        table = history.table()
        _check_readable(table, history, before, after, where)
        if finished:
            assert observe(table) == after, where
        latest = _commit_and_check(table, history, where)
        op.run(table)  # again: completes
        sm = table.snapshot_manager
        left_below = [i for i in sm.list_ids() if i < (sm.earliest_id() or 0)]
        assert not left_below, f"{where}: snapshot files {left_below} left below EARLIEST after running again"
        if op.rollback_target is not None:
            assert read(table) == history.rows[op.rollback_target], where
            latest = _commit_and_check(table, history, where)
        else:
            new_rows = [r for r in latest if r not in before.latest and op.keeps(r)]
            latest = read(table)
            assert latest == sorted(after.latest + new_rows), where
            snapshot = table.latest_snapshot()
            assert snapshot is not None
            history.rows.setdefault(snapshot.id, latest)  # the snapshot a drop commits again
        _remove_orphans(table)
        state = observe(table)
        assert state.latest == latest, f"{where}: orphan removal changed the latest snapshot"
        _check_retained(state, history, after, f"{where}, after orphan removal")
        if finished:
            assert n > 1, f"{op.name} made no storage write"
            return
        shutil.rmtree(warehouse)


def test_crash_at_counts_every_write_and_then_fails_every_call(tmp_path: Path) -> None:
    history = build(tmp_path / "w", "append")
    table = history.table()
    crash = CrashAt(2)
    faulty = table.with_storage(crash.storage(table.storage))
    with pytest.raises(SimulatedCrash):
        _expire(faulty)
    assert crash.crashed and crash.calls == 2
    with pytest.raises(SimulatedCrash):
        faulty.snapshot_manager.latest_id()


# --- point 7: a rollback to an expired tag that dies midway ---------------------------------------------------


def _simple_table(warehouse: Path, **options: str) -> Table:
    catalog = Catalog.open(str(warehouse), create=True)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, options={"write-only": "true", **options})
    for i in range(3):
        table.append(pa.table({"p": ["a"], "id": [i], "v": [i]}, schema=SCHEMA))
    return table


@pytest.mark.parametrize("crash_before", [1, 2, 3])
def test_a_rollback_to_an_expired_tag_that_dies_keeps_the_table_and_every_later_commit(
    tmp_path: Path, crash_before: int
) -> None:
    table = _simple_table(tmp_path)
    create_tag(table, "first", 1)
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)
    assert [s.id for s in table.snapshots()] == [3]
    crash = CrashAt(crash_before)
    faulty = table.with_storage(crash.storage(table.storage))
    with pytest.raises(SimulatedCrash):
        rollback_to(faulty, tag="first")
    # Not an empty table: it reads snapshot 3 (the restored snapshot 1 is written first), or snapshot 1.
    assert sorted(read(table)) in ([("a", 0, 0), ("a", 1, 1), ("a", 2, 2)], [("a", 0, 0)])
    landed = table.append(pa.table({"p": ["a"], "id": [7], "v": [7]}, schema=SCHEMA))
    assert landed is not None and landed > 1  # history does not start again at snapshot 1
    assert ("a", 7, 7) in read(table)
    rollback_to(table, tag="first")
    assert read(table) == [("a", 0, 0)] and [s.id for s in table.snapshots()] == [1]
    assert table.snapshot_manager.earliest_id() == 1
    # the next commit builds on the restored snapshot, and a second rollback only removes what came after it
    assert table.append(pa.table({"p": ["a"], "id": [8], "v": [8]}, schema=SCHEMA)) == 2
    rollback_to(table, tag="first")
    assert read(table) == [("a", 0, 0)]
    assert table.append(pa.table({"p": ["a"], "id": [9], "v": [9]}, schema=SCHEMA)) == 2
    assert read(table) == [("a", 0, 0), ("a", 9, 9)]


@pytest.mark.parametrize("expired_tag", [False, True])
@pytest.mark.parametrize("commits", [0, 4])
def test_writers_see_the_old_latest_or_the_target_while_a_rollback_runs(
    tmp_path: Path, commits: int, expired_tag: bool
) -> None:
    """Before every write or delete of a rollback (to snapshot 2, or to a tag on it after it expired),
    another handle reads the table (and, the first ``commits`` times, commits): it reads the latest
    snapshot as it was (with its own commits) or the target, never a snapshot in between; its commits land
    on what it read; and when the rollback is done, the table is the target, with no snapshot above a hole
    (the commits that raced it are rolled back)."""
    table = _simple_table(tmp_path)
    for i in range(3, 6):
        table.append(pa.table({"p": ["a"], "id": [i], "v": [i]}, schema=SCHEMA))
    old_latest, target = read(table), read(table, 2)
    if expired_tag:
        create_tag(table, "two", 2)
        expire_snapshots(table, retain_min=2, retain_max=2, older_than=FAR_FUTURE)
    other = Catalog.open(str(tmp_path)).get_table("db.t")
    seen: list[Rows] = []
    committed: list[tuple[Any, ...]] = []

    def meanwhile() -> None:
        rows = read(other)
        seen.append(rows)
        if len(committed) < commits:
            row = ("a", 100 + len(committed), 0)
            other.append(pa.table({"p": [row[0]], "id": [row[1]], "v": [row[2]]}, schema=SCHEMA))
            committed.append(row)
            assert read(other) == sorted([*rows, row])

    plan = FaultPlan([FaultRule(Fault.CALLBACK, ops={"delete", "write_bytes"}, callback=meanwhile)])
    faulty = table.with_storage(FaultyStorage(table.storage, plan))
    if expired_tag:
        rollback_to(faulty, tag="two")
    else:
        rollback_to(faulty, snapshot_id=2)
    assert len(seen) > commits
    for rows in seen:
        assert rows == target or [r for r in rows if r not in committed] == old_latest, rows
    assert read(table) == target
    assert [s.id for s in table.snapshots()] == ([2] if expired_tag else [1, 2])


def test_a_rollback_that_writers_keep_outrunning_says_so(tmp_path: Path) -> None:
    table = _simple_table(tmp_path)
    other = Catalog.open(str(tmp_path)).get_table("db.t")
    ids = itertools.count(100)

    def meanwhile() -> None:
        other.append(pa.table({"p": ["a"], "id": [next(ids)], "v": [0]}, schema=SCHEMA))

    plan = FaultPlan([FaultRule(Fault.CALLBACK, ops={"delete"}, callback=meanwhile)])
    with pytest.raises(CommitConflictError, match="commits kept landing"):
        rollback_to(table.with_storage(FaultyStorage(table.storage, plan)), snapshot_id=1)
    assert len(read(table)) > 1  # it reads the newest commit, whole
    rollback_to(table, snapshot_id=1)  # with nobody writing, it finishes
    assert read(table) == [("a", 0, 0)]


# --- point 8: hints that name the wrong snapshot --------------------------------------------------------------


@pytest.mark.parametrize(
    ("hint", "text"),
    [
        ("EARLIEST", "11"),
        ("EARLIEST", "-3"),
        ("LATEST", "11"),
        ("LATEST", "1"),
        ("EARLIEST", "x"),
        ("LATEST", ""),
    ],
)
def test_a_wrong_hint_never_blocks_writers_and_maintenance_repairs_it(
    tmp_path: Path, hint: str, text: str
) -> None:
    """A hint above the latest snapshot, naming a missing id, or holding garbage (a crashed rollback of
    before, or a hand edit) makes no commit impossible: appends, compaction and expiration work, nothing is
    expired beyond the retention, and expiration puts a stale EARLIEST right."""
    table = _simple_table(tmp_path, **{"commit.max-retries": "2", "compaction.min.file-num": "2"})
    sm = table.snapshot_manager
    Path(sm.hint_path(hint)).write_text(text)
    assert table.append(pa.table({"p": ["a"], "id": [3], "v": [3]}, schema=SCHEMA)) == 4
    compact_table(table, progress=False)
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]
    assert expire_snapshots(table, retain_min=3, retain_max=3, older_than=FAR_FUTURE) == 2
    assert [s.id for s in table.snapshots()] == [3, 4, 5]
    assert sm.earliest_hint() == 3 and Path(sm.hint_path("EARLIEST")).read_text() == "3"
    assert table.append(pa.table({"p": ["a"], "id": [4], "v": [4]}, schema=SCHEMA)) == 6
    assert read(table) == [("a", i, i) for i in range(5)]


def test_expiration_rewrites_an_earliest_hint_above_every_snapshot(tmp_path: Path) -> None:
    table = _simple_table(tmp_path)
    sm = table.snapshot_manager
    Path(sm.hint_path("EARLIEST")).write_text("9")
    assert sm.earliest_id() == 1 and sm.earliest_hint() is None
    assert expire_snapshots(table) == 0  # nothing is old enough; the hint is put right anyway
    assert Path(sm.hint_path("EARLIEST")).read_text() == "1"


def test_expiration_run_again_finishes_what_a_dead_run_left_below_earliest(tmp_path: Path) -> None:
    table = _simple_table(tmp_path)
    crash = CrashAt(2)  # EARLIEST is written, then the process dies before its first delete
    faulty = table.with_storage(crash.storage(table.storage))
    with pytest.raises(SimulatedCrash):
        expire_snapshots(faulty, retain_min=1, retain_max=1, older_than=FAR_FUTURE)
    sm = table.snapshot_manager
    assert sm.earliest_id() == 3 and sm.list_ids() == [1, 2, 3]
    with pytest.raises(SnapshotExpiredError):  # its files may be gone: no rollback to a left-over file
        rollback_to(table, snapshot_id=1)
    assert expire_snapshots(table, retain_min=1, retain_max=1, older_than=FAR_FUTURE) == 0
    assert sm.list_ids() == [3]
    assert read(table) == [("a", 0, 0), ("a", 1, 1), ("a", 2, 2)]


def test_orphan_removal_after_a_tagged_snapshot_with_a_changelog_expired(tmp_path: Path) -> None:
    """Expiration deletes the changelog of a tagged snapshot (tags do not keep changelogs, as in Java):
    orphan removal must not take the tag's missing changelog list for corruption."""
    catalog = Catalog.open(str(tmp_path), create=True)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", SCHEMA, primary_keys=["p", "id"],
        options={"write-only": "true", "bucket": "1", "changelog-producer": "input"},
    )  # fmt: skip
    for i in range(3):
        table.append(pa.table({"p": ["a"], "id": [i], "v": [i]}, schema=SCHEMA))
    create_tag(table, "one", 1)
    expire_snapshots(table, retain_min=1, retain_max=1, older_than=FAR_FUTURE)
    _remove_orphans(table)
    assert read(table, tag="one") == [("a", 0, 0)]
    assert read(table) == [("a", i, i) for i in range(3)]
