"""Writers racing maintenance: appenders, an overwriter, a compactor, an expirer and readers, all at once.

:func:`run_maintenance_torture` creates table ``torture.m`` with ``snapshot.num-retained.max`` small (3 by
default) and starts, each in its own process (``spawn``):

- ``appenders`` processes committing ``commits`` appends each (rows with unique ids), through injected faults
  (:data:`paimon_testing.torture.DEFAULT_FAULTS`); an unknown outcome restarts the committer and commits the
  same messages under the same identifier, as a streaming job does after a failover;
- ``overwriters`` processes replacing partition ``"x"`` (only they write there) on every commit;
- a compactor running compaction rounds back to back (``compactor=True``);
- an expirer expiring snapshots back to back with the table's retention;
- ``readers`` processes reading the latest snapshot in a loop.

Writers run with the table's default commit options: lost races retry until ``commit.timeout`` (unbounded by
default), so a writer that gives up (``CommitRetriesExhaustedError``) is a failure. When the writers are done
the others stop, and :func:`verify_maintenance` checks:

- every acknowledged appended row is in the latest snapshot exactly once, and partition ``"x"`` holds exactly
  the rows of the last overwrite; no other row is there; a commit whose outcome the committer could no longer
  tell (``CommitHistoryExpiredError``: its snapshot expired and its files were compacted away and deleted)
  is there whole or not at all;
- the retained snapshot ids are dense, no commit (user, identifier, kind) landed twice among them, and the
  latest ``totalRecordCount`` matches what it reads;
- every read a reader made returned a complete snapshot (its row count is the snapshot's
  ``totalRecordCount``, no id twice, partition ``"x"`` from one overwrite) or raised ``SnapshotExpiredError``;
  any other error of a reader, the compactor or the expirer is a problem;
- orphan file removal then succeeds, and the table reads the same afterwards.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paimon_core import Catalog
from paimon_core.redaction import get_logger
from paimon_core.snapshot import CommitKind
from paimon_core.table import Table
from paimon_testing.faults import FaultPlan, FaultRule, FaultyStorage
from paimon_testing.stateful import SCHEMA, Row
from paimon_testing.torture import (
    DEFAULT_FAULTS,
    commit_until_landed,
    count_step,
    recording_role,
    rule_to_dict,
    run_roles,
    shared_catalog,
)

__all__ = ["MaintenanceReport", "check_snapshots", "run_maintenance_torture", "verify_maintenance"]

logger = get_logger(__name__)

_TABLE = "torture.m"
_APPEND_PARTITIONS: tuple[str | None, ...] = ("a", "b/c=d", None)
_OVERWRITTEN = "x"
_ROWS_PER_COMMIT = 3
_MAX_PROBLEMS = 20  # per process: enough to diagnose, bounded logs
_PROGRESS = {"compactor": "snapshots", "expirer": "snapshots", "reader": "reads"}


@dataclass(frozen=True)
class _Spec:
    role: str  # appender, overwriter, compactor, expirer, reader
    index: int
    warehouse: str
    storage_options: tuple[tuple[str, str], ...]
    log_path: str
    stop_file: str
    commits: int = 0
    seed: int = 0
    rules: tuple[dict[str, Any], ...] = ()
    stacks_after_s: float = 0.0  # print every thread's stack to stderr then: the process is stuck


def _rows(index: int, identifier: int, partitions: Sequence[str | None]) -> list[Row]:
    first = (index * 100_000 + identifier) * 10
    return [(first + j, partitions[(identifier + j) % len(partitions)]) for j in range(_ROWS_PER_COMMIT)]


def _open(spec: _Spec) -> Table:
    return Catalog.open(spec.warehouse, **dict(spec.storage_options)).get_table(_TABLE)


def _process(spec: _Spec) -> None:
    with recording_role(spec) as record:
        if spec.role in ("appender", "overwriter"):
            _write_commits(spec, record)
        else:
            _loop(spec, record)


def _write_commits(spec: _Spec, record: Callable[[dict[str, Any]], None]) -> None:
    base = _open(spec)
    plan = FaultPlan([FaultRule.from_dict(r) for r in spec.rules], seed=spec.seed)
    table = base.with_storage(FaultyStorage(base.storage, plan)).copy({"write-only": "true"})
    user = f"torture-{spec.role}-{spec.index}"
    overwriter = spec.role == "overwriter"
    for identifier in range(1, spec.commits + 1):
        rows = _rows(spec.index, identifier, (_OVERWRITTEN,) if overwriter else _APPEND_PARTITIONS)
        scope: list[str | None] | None = [_OVERWRITTEN] if overwriter else None
        outcome = commit_until_landed(table, user, identifier, rows, scope)
        record({"user": user, "identifier": identifier, "rows": rows, "scope": scope, **outcome})


def _loop(spec: _Spec, record: Callable[[dict[str, Any]], None]) -> None:
    """Run the role's step until the stop file appears; count what happened, keep the first problems."""
    table = _open(spec)
    step = {"compactor": _compact, "expirer": _expire, "reader": _read}[spec.role]
    counts: Counter[str] = Counter()
    problems: list[str] = []
    stopping_since: float | None = None
    # After the stop, a role that has not done its work once yet (a busy machine) gets a little longer.
    while stopping_since is None or (
        not counts[_PROGRESS[spec.role]] and time.monotonic() < stopping_since + 30
    ):
        if stopping_since is None and os.path.exists(spec.stop_file):
            stopping_since = time.monotonic()
        count_step(step, table, counts, problems, _MAX_PROBLEMS)
        time.sleep(0.01)
    record({"counts": dict(counts), "problems": problems})


def _compact(table: Table) -> Counter[str]:
    from paimon_core.compact import compact_table

    summary = compact_table(table.copy({"compaction.min.file-num": "2"}), progress=False)
    return Counter(rounds=summary.rounds, snapshots=len(summary.snapshots), replans=summary.replans)


def _expire(table: Table) -> Counter[str]:
    from paimon_core.maintenance import expire_snapshots

    return Counter(runs=1, snapshots=expire_snapshots(table))


def _read(table: Table) -> Counter[str]:
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return Counter(empty=1)
    data = table.to_arrow(["id", "p"], snapshot_id=snapshot.id)
    ids = data.column("id").to_pylist()
    problems = []
    if len(ids) != snapshot.total_record_count:
        problems.append(
            f"read {len(ids)} rows of snapshot {snapshot.id}, totalRecordCount {snapshot.total_record_count}"
        )
    if len(set(ids)) != len(ids):
        problems.append(f"snapshot {snapshot.id} read some ids twice")
    overwritten = {
        i // 10 for i, p in zip(ids, data.column("p").to_pylist(), strict=True) if p == _OVERWRITTEN
    }
    if len(overwritten) > 1:
        problems.append(f"snapshot {snapshot.id} holds rows of several overwrites of p={_OVERWRITTEN!r}")
    if problems:
        raise AssertionError("; ".join(problems))
    return Counter(reads=1)


# --- checking ---------------------------------------------------------------------------------------------------


@dataclass
class MaintenanceReport:
    """What :func:`verify_maintenance` found; :meth:`problems` is empty for a healthy run."""

    commits: int = 0
    rows: int = 0
    snapshots: int = 0
    earliest: int = 0
    lost: list[Row] = field(default_factory=list)
    duplicated: list[Row] = field(default_factory=list)
    unexpected: list[Row] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    unknown_outcomes: int = 0
    retried_failures: int = 0
    exhausted: int = 0
    undecided: int = 0
    elapsed_s: float = 0.0

    def problems(self) -> list[str]:
        found = list(self.errors)
        for name in ("lost", "duplicated", "unexpected"):
            rows = getattr(self, name)
            if rows:
                found.append(f"{len(rows)} {name} rows, e.g. {rows[:5]}")
        if self.exhausted:
            found.append(f"writers gave up {self.exhausted} times (CommitRetriesExhaustedError)")
        return found

    def __str__(self) -> str:
        counts = {role: dict(c) for role, c in self.counts.items()}
        return (
            f"{self.commits} commits, snapshots {self.earliest}..{self.snapshots} retained, {self.rows} rows, "
            f"{self.unknown_outcomes} unknown outcomes and {self.retried_failures} failures retried, "
            f"{self.undecided} commits undecided (history expired); {counts}; "
            f"{self.elapsed_s:.1f} s; problems: {self.problems() or 'none'}"
        )


def verify_maintenance(table: Table, log_paths: Sequence[str]) -> MaintenanceReport:
    """Check ``table`` (read through an undisturbed backend) against the processes' logs."""
    report = MaintenanceReport()
    appended: Counter[Row] = Counter()
    undecided: list[list[Row]] = []  # appends whose outcome the committer could no longer tell
    overwrites: dict[str, list[tuple[int, list[Row], bool]]] = {}
    for path in log_paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            role = entry["role"]
            if "counts" in entry:
                report.counts.setdefault(role, Counter()).update(entry["counts"])
                report.errors += [f"{role} {entry['index']}: {p}" for p in entry["problems"]]
                continue
            report.commits += 1
            report.unknown_outcomes += entry["unknown"]
            report.retried_failures += entry["failures"]
            report.exhausted += entry["exhausted"]
            report.undecided += entry["undecided"]
            rows = [(int(i), p) for i, p in entry["rows"]]
            if role == "overwriter":
                overwrites.setdefault(entry["user"], []).append(
                    (entry["identifier"], rows, entry["undecided"])
                )
            elif entry["undecided"]:
                undecided.append(rows)
            else:
                appended.update(rows)
    expected = Counter(appended)
    check_snapshots(table, report)
    data = table.to_arrow(["id", "p"])
    actual = Counter(zip(data.column("id").to_pylist(), data.column("p").to_pylist(), strict=True))
    for rows in undecided:  # landed whole, or not at all
        if all(r in actual for r in rows):
            expected.update(rows)
    # The partition holds one overwrite, whole: the last of some overwriter, or an undecided one after it.
    candidates = [rows for log in overwrites.values() for rows in _overwrites_that_may_stand(log)]
    if candidates:
        present = [rows for rows in candidates if all(r in actual for r in rows)]
        expected.update(present[0] if present else candidates[0])
    report.rows = sum(actual.values())
    report.lost = sorted(expected - actual, key=str)
    report.unexpected = sorted((r for r in actual if r not in expected), key=str)
    report.duplicated = sorted((r for r, n in actual.items() if n > 1), key=str)
    _check_orphan_removal(table, actual, report)
    return report


def _overwrites_that_may_stand(log: list[tuple[int, list[Row], bool]]) -> list[list[Row]]:
    """The rows of an overwriter's last decided overwrite and of the undecided ones after it, newest first."""
    last_decided = max((i for i, _, undecided in log if not undecided), default=0)
    return [rows for i, rows, _ in sorted(log, key=lambda e: -e[0]) if i >= last_decided]


def check_snapshots(table: Table, report: MaintenanceReport) -> None:
    sm = table.snapshot_manager
    earliest, latest = sm.earliest_id(), sm.latest_id()
    if earliest is None or latest is None:
        report.errors.append("the table has no snapshots")
        return
    report.earliest, report.snapshots = earliest, latest
    retained = [i for i in sm.list_ids() if i >= earliest]
    if retained != list(range(earliest, latest + 1)):
        report.errors.append(f"retained snapshot ids are not dense: {retained[:10]}...")
    seen: dict[tuple[str, int, CommitKind], int] = {}
    for snapshot_id in retained:
        snapshot = sm.snapshot(snapshot_id)
        key = (snapshot.commit_user, snapshot.commit_identifier, snapshot.commit_kind)
        if key in seen and snapshot.commit_kind != CommitKind.COMPACT:
            report.errors.append(f"commit {key} landed twice: snapshots {seen[key]} and {snapshot_id}")
        seen[key] = snapshot_id
    last = sm.snapshot(latest)
    rows = sum(e.file.row_count for e in table.live_entries(latest))
    if last.total_record_count != rows:
        report.errors.append(
            f"snapshot {latest}: totalRecordCount {last.total_record_count}, live files {rows}"
        )


def _check_orphan_removal(table: Table, before: Counter[Row], report: MaintenanceReport) -> None:
    from paimon_core.maintenance import remove_orphan_files

    try:
        # every process has stopped: files of any age that no snapshot uses are orphans now
        later = dt.datetime.now() + dt.timedelta(days=1)
        remove_orphan_files(table, older_than=later, now_millis=int(later.timestamp() * 1000) + 1)
    except Exception as exc:
        report.errors.append(f"orphan removal after the run failed: {type(exc).__name__}: {exc}")
        return
    data = table.to_arrow(["id", "p"])
    after = Counter(zip(data.column("id").to_pylist(), data.column("p").to_pylist(), strict=True))
    if after != before:
        report.errors.append("the table reads differently after orphan removal")


# --- the driver -------------------------------------------------------------------------------------------------


def run_maintenance_torture(
    warehouse: str,
    *,
    appenders: int = 16,
    commits: int = 10,
    overwriters: int = 1,
    compactor: bool = True,
    readers: int = 2,
    retain_max: int = 3,
    retain_min: int = 1,
    faults: Sequence[FaultRule] = DEFAULT_FAULTS,
    seed: int = 0,
    storage_options: dict[str, str] | None = None,
    timeout_s: float = 900,
) -> MaintenanceReport:
    """Create ``torture.m`` in ``warehouse``, run the processes, stop them, and verify (see the module doc).

    Raises:
        ValueError: the storage is not shared between processes.
    """
    options = dict(storage_options or {})
    catalog = shared_catalog(warehouse, options)
    retention = {
        "snapshot.num-retained.max": str(retain_max),
        "snapshot.num-retained.min": str(retain_min),
        "snapshot.time-retained": "1 ms",
    }
    catalog.create_table(_TABLE, SCHEMA, partition_keys=["p"], options=retention)
    logs = tempfile.mkdtemp(prefix="paimon-torture-m-")
    stop_file = os.path.join(logs, "stop")
    rules = tuple(rule_to_dict(r) for r in faults)
    stored_options = tuple(sorted(options.items()))

    # A writer still running shortly before the deadline prints where it is stuck (it is killed after it).
    stacks_after_s = max(1.0, timeout_s - 10)

    def spec(role: str, index: int, **extra: Any) -> _Spec:
        log_path = os.path.join(logs, f"{role}-{index}.jsonl")
        return _Spec(
            role,
            index,
            warehouse,
            stored_options,
            log_path,
            stop_file,
            stacks_after_s=stacks_after_s,
            **extra,
        )

    writers = [spec("appender", i, commits=commits, seed=seed + i, rules=rules) for i in range(appenders)]
    writers += [
        spec("overwriter", appenders + i, commits=commits, seed=seed + appenders + i, rules=rules)
        for i in range(overwriters)
    ]
    others = [spec("expirer", 0)] + [spec("reader", i) for i in range(readers)]
    others += [spec("compactor", 0)] if compactor else []
    started = time.monotonic()
    specs = writers + others
    failed = run_roles(
        specs, _process, writers=len(writers), deadline=started + timeout_s, stop_file=stop_file, grace_s=5
    )
    logs_written = [s.log_path for s in specs if os.path.exists(s.log_path)]
    checked = verify_maintenance(catalog.get_table(_TABLE), logs_written)
    checked.errors = failed + checked.errors
    checked.elapsed_s = time.monotonic() - started
    logger.info("maintenance torture: %s", checked)
    return checked
