"""Crashes inside ``fast_forward``, ``create_branch`` and ``delete_branch``, at every storage write or delete.

As in test_maintenance_crashes: the process "dies" before its N-th write or delete (every later storage call
fails too), for every N until the operation runs to its end. After each crash, with plain storage:

- main's latest snapshot reads a state main or the branch had (never a mix, never an error), and every
  snapshot from EARLIEST on reads what it read when it was committed, on main and on every branch;
- running the operation again completes and leaves the state it leaves without a crash;
- main takes new commits, and orphan removal then keeps everything main and the branches read.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, SchemaChange
from paimon_core.compact import compact_table
from paimon_core.errors import BranchNotFoundError
from paimon_core.maintenance import (
    create_branch,
    create_tag,
    delete_branch,
    expire_snapshots,
    fast_forward,
    list_branches,
    remove_orphan_files,
)
from paimon_core.table import Table
from paimon_testing.faults import WRITE_OPS, Fault, FaultPlan, FaultRule, FaultyStorage, SimulatedCrash

SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
Rows = list[tuple[Any, ...]]
Lines = dict[str, dict[int, Rows]]  # branch ("main", "b1", ...) -> snapshot id -> rows


class CrashAt:
    """The process dies before its ``n``-th write or delete; every storage call after that fails."""

    def __init__(self, n: int) -> None:
        self.n, self.calls, self.crashed = n, 0, False
        self._lock = threading.Lock()

    def before_write(self) -> None:
        with self._lock:
            self.calls += 1
            self.crashed = self.crashed or self.calls >= self.n
            if self.crashed:
                raise SimulatedCrash(f"crash before storage write {self.calls}")

    def before_read(self) -> None:
        if self.crashed:
            raise SimulatedCrash("the process is dead")

    def storage(self, inner: Any) -> FaultyStorage:
        reads = frozenset({"open_input", "read_bytes", "exists", "size", "info", "list_dir", "list_prefix"})
        rules = [
            FaultRule(Fault.CALLBACK, ops=WRITE_OPS, callback=self.before_write),
            FaultRule(Fault.CALLBACK, ops=reads, callback=self.before_read),
        ]
        return FaultyStorage(inner, FaultPlan(rules))


def rows(table: Table, snapshot_id: int | None = None) -> Rows:
    data = table.to_arrow(snapshot_id=snapshot_id).select(SCHEMA.names)
    return sorted(tuple(r.values()) for r in data.to_pylist())


def _open(warehouse: Path, branch: str = "main") -> Table:
    name = "db.t" if branch == "main" else f"db.t$branch_{branch}"
    return Catalog.open(str(warehouse)).get_table(name)


def _lines(warehouse: Path) -> Lines:
    """What every retained snapshot of main and of each branch reads."""
    lines: Lines = {}
    for branch in ["main", *list_branches(_open(warehouse))]:
        with contextlib.suppress(BranchNotFoundError):
            table = _open(warehouse, branch)
            earliest = table.snapshot_manager.earliest_id() or 0
            lines[branch] = {s.id: rows(table, s.id) for s in table.snapshots() if s.id >= earliest}
    return lines


def _append(table: Table, ids: list[int], partition: str = "a") -> None:
    data = pa.table({"p": [partition] * len(ids), "id": ids, "v": ids}, schema=SCHEMA)
    for name in table.field_names[len(SCHEMA) :]:  # columns a branch added read as null
        data = data.append_column(name, pa.nulls(len(ids), table.arrow_schema.field(name).type))
    table.append(data)


def build(warehouse: Path) -> None:
    """Main: 1..5 with a compaction at 4, tag t2; branch b1 from t2 with two appends, a compaction, tag bt,
    a new column and an append;
    branch b2 from t2 with one append; main's snapshots below 4 expired."""
    catalog = Catalog.open(str(warehouse), create=True)
    catalog.create_database("db")
    options = {"write-only": "true", "compaction.min.file-num": "2"}
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=options)
    _append(table, [0, 1])
    _append(table, [2], "b")
    create_tag(table, "t2")
    _append(table, [3])
    compact_table(table, progress=False)
    _append(table, [4], "b")
    create_branch(table, "b1", "t2")
    b1 = _open(warehouse, "b1")
    _append(b1, [100])
    _append(b1, [101], "b")
    compact_table(b1, progress=False)
    create_tag(b1, "bt")
    # a schema only b1 has: fast-forward must bring it before the snapshots that use it
    catalog.alter_table("db.t$branch_b1", SchemaChange.add_column("w", pa.int64()))
    _open(warehouse, "b1").append(pa.table({"p": ["a"], "id": [102], "v": [102], "w": [1]}))
    create_branch(table, "b2", "t2")
    _append(_open(warehouse, "b2"), [200])
    expire_snapshots(_open(warehouse), retain_min=2, retain_max=2, older_than="2999-01-01 00:00:00")


@dataclass(frozen=True)
class Operation:
    name: str
    run: Callable[[Table], Any]


OPERATIONS = [
    Operation("fast-forward", lambda t: fast_forward(t, "b1")),
    Operation("delete-branch", lambda t: delete_branch(t, "b1")),
    Operation("create-branch-from-tag", lambda t: create_branch(t, "b3", "t2")),
    Operation("create-empty-branch", lambda t: create_branch(t, "b3")),
]


def _remove_orphans(table: Table) -> None:
    now = int(time.time() * 1000) + 86_400_000
    remove_orphan_files(table, older_than=now, now_millis=now)


def _check_lines(warehouse: Path, before: Lines, after: Lines, where: str) -> None:
    """Each line's retained snapshots read what they read before or what the operation leaves; main's
    latest reads a state of main or of b1."""
    states = [r for line in (*before.values(), *after.values()) for r in line.values()]
    now = _lines(warehouse)
    for branch, snapshots in now.items():
        known = {**before.get(branch, {}), **after.get(branch, {})}
        for snapshot_id, read in snapshots.items():
            if branch == "main":
                assert read in states, f"{where}: main's snapshot {snapshot_id} reads a state no line had"
            else:
                assert read == known[snapshot_id], f"{where}: {branch} snapshot {snapshot_id} reads otherwise"
    for branch in ("b2",):
        assert now[branch] == before[branch], f"{where}: {branch} changed"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    warehouse = tmp_path_factory.mktemp("branches")
    build(warehouse)
    return warehouse


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_a_crash_at_every_storage_call_leaves_every_line_readable_and_the_operation_can_run_again(
    template: Path, tmp_path: Path, op: Operation
) -> None:
    before = _lines(template)
    done = tmp_path / "done"
    shutil.copytree(template, done)
    op.run(_open(done))
    after = _lines(done)
    for n in itertools.count(1):
        where = f"{op.name}, crash at storage write {n}"
        warehouse = tmp_path / f"n{n}"
        shutil.copytree(template, warehouse)
        crash = CrashAt(n)
        table = _open(warehouse)
        with contextlib.suppress(SimulatedCrash):
            op.run(table.with_storage(crash.storage(table.storage)))
        _check_lines(warehouse, before, after, where)
        if not crash.crashed:
            assert _lines(warehouse) == after, where
        else:
            op.run(_open(warehouse))  # again: completes
            assert _lines(warehouse) == after, f"{where}, run again"
        main = _open(warehouse)
        _append(main, [9000 + n])
        expected = sorted([*rows(_open(done)), ("a", 9000 + n, 9000 + n)])
        assert rows(_open(warehouse)) == expected, where
        lines = _lines(warehouse)
        _remove_orphans(_open(warehouse))
        assert _lines(warehouse) == lines, f"{where}: orphan removal changed what a line reads"
        if not crash.crashed:
            assert n > 1, f"{op.name} made no storage write"
            return
        shutil.rmtree(warehouse)
