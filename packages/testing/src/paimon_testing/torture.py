"""Many processes, one table: appenders and partition overwriters committing through injected faults.

:func:`run_torture` creates a table, starts ``processes`` child processes (``spawn``) that each make
``commits`` commits on it (the first ``overwriters`` replace one partition per commit, the others append
rows), each through a :class:`~paimon_testing.faults.FaultyStorage` with its own seeded plan, and then checks
the table with :func:`verify` against the logs the workers wrote:

- snapshot ids are dense from 1;
- every snapshot is a commit some worker made, and each commit (user, identifier, kind) landed exactly once
  (workers retry unknown outcomes with the same identifier after a restart, as a streaming job would);
- each snapshot's ``totalRecordCount`` and its live files agree with the content the commits imply, replayed
  in snapshot order (an appended row must be there unless a later OVERWRITE replaced its partition);
- the latest snapshot, and a sample of older ones, read exactly those rows: none lost, none duplicated.

Workers retry every failure until their commit is known to have landed: an unknown outcome restarts the
committer (``TableCommit`` with the same commit user) and commits the same messages under the same identifier
again, which must be deduplicated; a failure before anything was published is retried as is.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import logging
import multiprocessing
import os
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from paimon_core import Catalog
from paimon_core.errors import (
    CommitError,
    CommitHistoryExpiredError,
    CommitRetriesExhaustedError,
    CommitStateUnknownError,
    SnapshotExpiredError,
)
from paimon_core.redaction import get_logger
from paimon_core.snapshot import CommitKind
from paimon_core.storage import Capability, get_backend
from paimon_core.table import CommitMessage, Table
from paimon_testing.faults import MANIFEST, SNAPSHOT, Fault, FaultPlan, FaultRule, FaultyStorage
from paimon_testing.stateful import SCHEMA, Change, Row

__all__ = [
    "DEFAULT_FAULTS",
    "PARTITIONS",
    "LoggedRoleSpec",
    "RoleSpec",
    "TortureReport",
    "commit_until_landed",
    "count_step",
    "finish",
    "recording_role",
    "rule_to_dict",
    "run_roles",
    "run_torture",
    "shared_catalog",
    "verify",
]

logger = get_logger(__name__)

PARTITIONS: tuple[str | None, ...] = ("a", "b/c=d", "%2F..", None)
"""Partition values the workers write to (hostile ones included, and the default partition); overwriters
replace the first and the last."""

DEFAULT_FAULTS: tuple[FaultRule, ...] = (
    FaultRule(Fault.TIMEOUT_AFTER, ops={"write_if_absent"}, path_contains=SNAPSHOT, probability=0.1),
    FaultRule(Fault.FAIL_BEFORE, ops={"write_if_absent"}, path_contains=SNAPSHOT, probability=0.05),
    FaultRule(Fault.FAIL_BEFORE, ops={"write_bytes", "open_output"}, probability=0.02),
    FaultRule(Fault.FAIL_AFTER, ops={"write_bytes"}, path_contains=MANIFEST, probability=0.02),
    FaultRule(Fault.FAIL_BEFORE, ops={"read_bytes"}, probability=0.005),
    FaultRule(Fault.LATENCY, ops={"write_if_absent"}, path_contains=SNAPSHOT, probability=0.3, latency_ms=5),
)
"""Ambiguous timeouts after the snapshot landed, failures before writes, failed-after-write manifests, read
errors, and latency on the commit primitive (widening the races)."""

_TABLE = "torture.t"
_ROWS_PER_COMMIT = 3
_WORKER_OPTIONS = {
    "commit.max-retries": "50",
    "commit.min-retry-wait": "5 ms",
    "commit.max-retry-wait": "100 ms",
}


# --- the workers ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _WorkerSpec:
    warehouse: str
    index: int
    overwriter: bool
    commits: int
    seed: int
    rules: tuple[dict[str, Any], ...]
    log_path: str
    storage_options: tuple[tuple[str, str], ...] = ()


def rule_to_dict(rule: FaultRule) -> dict[str, Any]:
    if rule.fault is Fault.CALLBACK:
        raise ValueError("CALLBACK rules cannot be sent to worker processes")
    return {
        "fault": rule.fault.value,
        "ops": sorted(rule.ops),
        "path_contains": rule.path_contains,
        "probability": rule.probability,
        "times": rule.times,
        "latency_ms": rule.latency_ms,
    }


def _worker(spec: _WorkerSpec) -> None:
    logging.disable(logging.WARNING)  # injected faults are expected; the log file is the record
    base = Catalog.open(spec.warehouse, **dict(spec.storage_options)).get_table(_TABLE)
    plan = FaultPlan([FaultRule.from_dict(r) for r in spec.rules], seed=spec.seed)
    table = base.with_storage(FaultyStorage(base.storage, plan)).copy(_WORKER_OPTIONS)
    user = f"torture-{spec.index}"
    with open(spec.log_path, "w", encoding="utf-8") as log:
        for identifier in range(1, spec.commits + 1):
            rows = _rows_for(spec.index, identifier, spec.overwriter)
            scope = [rows[0][1]] if spec.overwriter else None
            outcome = commit_until_landed(table, user, identifier, rows, scope)
            record = {"user": user, "identifier": identifier, "rows": rows, "scope": scope, **outcome}
            log.write(json.dumps(record) + "\n")
            log.flush()
        log.write(json.dumps({"faults": {f.value: n for f, n in plan.counts().items()}}) + "\n")


def _rows_for(index: int, identifier: int, overwriter: bool) -> list[Row]:
    first = (index * 100_000 + identifier) * 10
    if overwriter:
        # Overwriters take turns on half the partitions: rows appended to the others must all survive.
        partition = PARTITIONS[(identifier + index) % 2 * (len(PARTITIONS) - 1)]
        return [(first + j, partition) for j in range(_ROWS_PER_COMMIT)]
    return [(first + j, PARTITIONS[(identifier + j) % len(PARTITIONS)]) for j in range(_ROWS_PER_COMMIT)]


def _write(table: Table, rows: list[Row]) -> list[CommitMessage]:
    while True:
        writer = table.new_write()
        try:
            writer.write(pa.table({"id": [r[0] for r in rows], "p": [r[1] for r in rows]}, schema=SCHEMA))
            return writer.prepare_commit()
        except OSError:
            writer.abort()  # an injected failure: nothing was committed, write the files again


def commit_until_landed(
    table: Table, user: str, identifier: int, rows: list[Row], scope: list[str | None] | None
) -> dict[str, Any]:
    """Commit ``rows`` under ``identifier`` until the commit is known to have landed, or known to be beyond
    telling (``CommitHistoryExpiredError``: ``undecided``); returns the snapshots it created and how many
    attempts ended unknown, failed, or gave up (``CommitRetriesExhaustedError``)."""
    messages = _write(table, rows)
    committer = table.new_commit(user)
    unknown = failures = exhausted = 0
    while True:
        outcome = {"unknown": unknown, "failures": failures, "exhausted": exhausted}
        try:
            if scope is None:
                created = committer.commit(messages, identifier)
            else:
                created = committer.overwrite(messages, {"p": scope[0]}, commit_identifier=identifier)
            return {"created": created, "undecided": False, **outcome}
        except CommitHistoryExpiredError:
            # The history that would tell expired: retrying cannot tell either. The checks accept the rows
            # once or not at all.
            return {"created": [], "undecided": True, **outcome}
        except CommitStateUnknownError:
            unknown += 1
            committer = table.new_commit(user)  # restart: the retry must find the commit if it landed
        except CommitRetriesExhaustedError:
            exhausted += 1  # a starved writer: reported as a problem, retried so the run completes
        except (CommitError, OSError):
            failures += 1  # conflicts, failures before publishing: nothing landed, try again
        time.sleep(0.005)


# --- checking -------------------------------------------------------------------------------------------------


@dataclass
class TortureReport:
    """What :func:`verify` found; :meth:`problems` is empty for a healthy table."""

    snapshots: int = 0
    commits: int = 0
    rows: int = 0
    lost: list[Row] = field(default_factory=list)
    duplicated: list[Row] = field(default_factory=list)
    unexpected: list[Row] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    unknown_outcomes: int = 0
    retried_failures: int = 0
    exhausted: int = 0
    elapsed_s: float = 0.0

    def problems(self) -> list[str]:
        found = list(self.errors)
        if self.exhausted:
            found.append(f"writers gave up {self.exhausted} times (CommitRetriesExhaustedError)")
        for name in ("lost", "duplicated", "unexpected"):
            rows = getattr(self, name)
            if rows:
                found.append(f"{len(rows)} {name} rows, e.g. {rows[:5]}")
        return found

    def __str__(self) -> str:
        return (
            f"{self.snapshots} snapshots from {self.commits} commits, {self.rows} rows, "
            f"{self.unknown_outcomes} unknown outcomes and {self.retried_failures} failures retried, "
            f"faults {dict(self.faults)}, {self.elapsed_s:.1f} s; problems: {self.problems() or 'none'}"
        )


def _read_logs(paths: Sequence[str], report: TortureReport) -> dict[tuple[str, int, CommitKind], Change]:
    changes: dict[tuple[str, int, CommitKind], Change] = {}
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "faults" in record:
                report.faults.update(record["faults"])
                continue
            rows = tuple((int(i), p) for i, p in record["rows"])
            scope = record["scope"]
            kind = CommitKind.APPEND if scope is None else CommitKind.OVERWRITE
            change = Change(
                kind, record["user"], record["identifier"], rows, None if scope is None else tuple(scope)
            )
            changes[change.key] = change
            report.unknown_outcomes += record["unknown"]
            report.retried_failures += record["failures"]
            report.exhausted += record.get("exhausted", 0)
            if record["undecided"]:  # no expiration runs here: the history always tells
                report.errors.append(f"commit {change.key} ended undecided (CommitHistoryExpiredError)")
    return changes


def verify(table: Table, log_paths: Sequence[str], full_reads: int = 8) -> TortureReport:
    """Check ``table`` against the workers' logs (see the module docstring).

    Args:
        table: the table, read through an undisturbed backend.
        log_paths: the workers' JSON-lines logs.
        full_reads: besides the latest, read this many older snapshots in full (evenly spaced).
    """
    report = TortureReport()
    changes = _read_logs(log_paths, report)
    report.commits = len(changes)
    sm = table.snapshot_manager
    ids = sm.list_ids()
    report.snapshots = len(ids)
    if ids != list(range(1, len(ids) + 1)):
        report.errors.append(f"snapshot ids are not dense: {ids[:10]}...")
    content: tuple[Row, ...] = ()
    seen: dict[tuple[str, int, CommitKind], int] = {}
    expected_at: dict[int, tuple[Row, ...]] = {}
    for snapshot_id in ids:
        snapshot = sm.snapshot(snapshot_id)
        key = (snapshot.commit_user, snapshot.commit_identifier, snapshot.commit_kind)
        if key in seen:
            report.errors.append(f"commit {key} landed twice: snapshots {seen[key]} and {snapshot_id}")
            continue
        seen[key] = snapshot_id
        change = changes.get(key)
        if change is None:
            report.errors.append(f"snapshot {snapshot_id} ({key}) is no commit any worker logged")
            continue
        content = change.apply(content)
        expected_at[snapshot_id] = content
        live_rows = sum(e.file.row_count for e in table.live_entries(snapshot_id))
        if snapshot.total_record_count != len(content) or live_rows != len(content):
            report.errors.append(
                f"snapshot {snapshot_id}: totalRecordCount {snapshot.total_record_count}, live files hold "
                f"{live_rows} rows, the commits imply {len(content)}"
            )
    missing = sorted(set(changes) - set(seen), key=str)
    if missing:
        report.errors.append(f"{len(missing)} commits reported as landed are not in the table: {missing[:5]}")
    if ids:
        step = max(1, len(ids) // max(full_reads, 1))
        for snapshot_id in sorted({*ids[::step], ids[-1]}):
            _compare(table, snapshot_id, expected_at.get(snapshot_id), report)
    report.rows = len(content)
    return report


def _compare(table: Table, snapshot_id: int, expected: tuple[Row, ...] | None, report: TortureReport) -> None:
    if expected is None:
        return
    data = table.to_arrow(["id", "p"], snapshot_id=snapshot_id)
    actual = Counter(zip(data.column("id").to_pylist(), data.column("p").to_pylist(), strict=True))
    wanted = Counter(expected)
    report.lost += sorted(wanted - actual, key=str)
    report.unexpected += sorted(r for r in actual - wanted if r not in wanted)
    report.duplicated += sorted((r for r, n in actual.items() if n > 1), key=str)


# --- the driver -------------------------------------------------------------------------------------------------


def shared_catalog(warehouse: str, options: dict[str, str]) -> Catalog:
    """The catalog of ``warehouse`` with database ``torture``, if other processes can reach its storage.

    Raises:
        ValueError: the storage is not shared between processes.
    """
    if Capability.CROSS_PROCESS not in get_backend(warehouse, options).capabilities:
        raise ValueError(f"{warehouse}: the torture test needs storage shared between processes")
    catalog = Catalog.open(warehouse, create=True, **options)
    catalog.create_database("torture", exist_ok=True)
    return catalog


def finish(processes: Sequence[multiprocessing.process.BaseProcess], deadline: float) -> list[str]:
    """Wait for ``processes`` until ``deadline`` (monotonic), kill those still running; what went wrong."""
    failed = []
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()
            failed.append(f"{process.name} did not finish in time")
        elif process.exitcode != 0:
            failed.append(f"{process.name} failed (exit code {process.exitcode})")
    return failed


class RoleSpec(Protocol):
    """What :func:`run_roles` needs of a process's spec: its role and index, which name the process."""

    @property
    def role(self) -> str: ...

    @property
    def index(self) -> int: ...


SpecT = TypeVar("SpecT", bound=RoleSpec)


def run_roles(
    specs: Sequence[SpecT],
    target: Callable[[SpecT], None],
    *,
    writers: int,
    deadline: float,
    stop_file: str,
    grace_s: float,
) -> list[str]:
    """Spawn a process ``target(spec)`` per spec, wait until ``deadline`` (monotonic) for the first ``writers``,
    then create ``stop_file`` for the others and wait for all until ``deadline`` or ``grace_s`` from then,
    whichever is later (see :func:`finish`); what went wrong."""
    ctx = multiprocessing.get_context("spawn")
    processes = [ctx.Process(target=target, args=(s,), name=f"{s.role}-{s.index}") for s in specs]
    for process in processes:
        process.start()
    for process in processes[:writers]:
        process.join(max(0.0, deadline - time.monotonic()))
    Path(stop_file).touch()
    return finish(processes, max(deadline, time.monotonic() + grace_s))


class LoggedRoleSpec(RoleSpec, Protocol):
    """A role's spec that :func:`recording_role` can set up: where its log goes, when it dumps its stacks."""

    @property
    def log_path(self) -> str: ...

    @property
    def stacks_after_s(self) -> float: ...


@contextlib.contextmanager
def recording_role(spec: LoggedRoleSpec) -> Iterator[Callable[[dict[str, Any]], None]]:
    """In a role's process: print every thread's stack after ``spec.stacks_after_s`` (a stuck process says
    where), silence warnings, and give a function appending one JSON line, tagged with the role and index,
    to ``spec.log_path``."""
    faulthandler.dump_traceback_later(spec.stacks_after_s)
    logging.disable(logging.WARNING)  # injected faults and lost races are expected; the log is the record
    with open(spec.log_path, "w", encoding="utf-8") as log:

        def record(entry: dict[str, Any]) -> None:
            log.write(json.dumps({"role": spec.role, "index": spec.index, **entry}) + "\n")
            log.flush()

        yield record


def count_step(
    step: Callable[[Table], Counter[str]],
    table: Table,
    counts: Counter[str],
    problems: list[str],
    max_problems: int,
) -> None:
    """One ``step(table)`` of a looping role: its counts added; a lost race to expiry counted as ``expired``,
    any other error counted and, while fewer than ``max_problems`` are kept, kept as one line."""
    try:
        counts.update(step(table))
    except SnapshotExpiredError:
        counts["expired"] += 1
    except Exception as exc:
        counts["errors"] += 1
        if len(problems) < max_problems:
            problems.append("".join(traceback.format_exception_only(exc)).strip())


def run_torture(
    warehouse: str,
    *,
    processes: int = 8,
    commits: int = 50,
    overwriters: int = 1,
    faults: Sequence[FaultRule] = DEFAULT_FAULTS,
    seed: int = 0,
    storage_options: dict[str, str] | None = None,
    timeout_s: float = 600,
) -> TortureReport:
    """Create table ``torture.t`` in ``warehouse``, run the workers, and verify the result.

    Args:
        warehouse: a warehouse URI whose storage other processes can reach (``Capability.CROSS_PROCESS``).
        processes: worker processes; the first ``overwriters`` of them overwrite partitions.
        commits: commits per worker.
        faults: fault rules; each worker draws from its own plan seeded ``seed + index``.
        storage_options: options for the catalog's storage.
        timeout_s: give up waiting for the workers after this long.

    Raises:
        ValueError: the storage is not shared between processes.
        RuntimeError: a worker failed or timed out.
    """
    options = dict(storage_options or {})
    table = shared_catalog(warehouse, options).create_table(_TABLE, SCHEMA, partition_keys=["p"])
    rules = tuple(rule_to_dict(r) for r in faults)
    logs = tempfile.mkdtemp(prefix="paimon-torture-")
    specs = [
        _WorkerSpec(warehouse, i, i < overwriters, commits, seed + i, rules, os.path.join(logs, f"worker-{i}.jsonl"),
                    tuple(sorted(options.items())))
        for i in range(processes)
    ]  # fmt: skip
    started = time.monotonic()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_worker, args=(spec,), name=f"torture-{spec.index}") for spec in specs]
    for process in workers:
        process.start()
    failed = finish(workers, started + timeout_s)
    if failed:
        raise RuntimeError(f"torture workers failed: {failed}")
    report = verify(table, [s.log_path for s in specs])
    report.elapsed_s = time.monotonic() - started
    logger.info("torture run: %s", report)
    return report
