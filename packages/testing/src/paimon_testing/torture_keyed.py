"""Primary-key writers racing compaction and a maintainer that tags, rolls back and removes orphans.

:func:`run_keyed_torture` creates the primary-key table ``torture.k`` (``(id, p, v, s)``, key ``(id, p)``,
partition ``p``, two buckets, ``merge-engine`` deduplicate or partial-update, optionally
``sequence.field = s``, ``snapshot.num-retained.max`` small) and starts, each in its own process (``spawn``):

- ``writers`` processes committing ``commits`` times each, through injected faults
  (:data:`paimon_testing.torture.DEFAULT_FAULTS`): commit ``j`` of writer ``i`` upserts two of the writer's
  own keys with ``v`` unique to (writer, commit, key) and ``s = j``, and every third commit deletes a third
  key. A writer owns its keys (Paimon's rule: one writer per bucket and key, or sequence numbers overlap),
  an unknown outcome restarts the committer and commits the same messages again, and files that orphan
  removal deleted under a slow commit are written again;
- a compactor compacting the table back to back (``compactor=True``);
- a maintainer (``maintainer=True``) looping: expire snapshots (keeping ``retain_max``; only it expires, as
  nothing guards a tag's creation against another process expiring its snapshot); tag the latest snapshot
  after reading it
  (the tag must read that forever); roll back (at most ``rollbacks`` times, to a retained snapshot or to a
  tag); remove orphan files older than ``orphan_age_s`` seconds (in the past, so it really deletes files
  while the writers run).

What a rollback racing writers leaves is checkable only in part: a commit that landed before the rollback
finished may be undone (even after its committer reported it). So, once every process stopped,
:func:`verify_keyed` checks:

- the retained snapshot ids are dense, no commit (user, identifier, kind) landed twice among them, and
  ``totalRecordCount`` of the latest is what its files hold;
- every key's row is what the writer's commits made of it: the last commit touching the key that *started*
  after the last rollback finished decides it, unless a later commit's outcome stayed undecided (then one
  of those); before that, any of the key's commits (or none); no row that no commit wrote;
- every tag still present reads exactly what its snapshot read when it was tagged; a rollback to a tag makes
  its snapshot read the tag's content;
- every file a retained snapshot or a tag uses exists; orphan removal then succeeds and the table reads the
  same afterwards.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pyarrow as pa

from paimon_core import Catalog
from paimon_core.errors import (
    CommitError,
    CommitFilesError,
    CommitHistoryExpiredError,
    CommitRetriesExhaustedError,
    CommitStateUnknownError,
    SnapshotExpiredError,
)
from paimon_core.redaction import get_logger
from paimon_core.table import CommitMessage, KeyValueTableWrite, Table, live_entries
from paimon_core.table.mergetree import DELETE, INSERT
from paimon_core.tag import TagManager
from paimon_testing.faults import FaultPlan, FaultRule, FaultyStorage
from paimon_testing.stateful_pk import KEYED_SCHEMA
from paimon_testing.torture import (
    DEFAULT_FAULTS,
    count_step,
    recording_role,
    rule_to_dict,
    run_roles,
    shared_catalog,
)
from paimon_testing.torture_maintenance import MaintenanceReport, check_snapshots

__all__ = ["KeyedReport", "run_keyed_torture", "verify_keyed"]

logger = get_logger(__name__)

_TABLE = "torture.k"
_PARTITIONS = ("a", "b")
_KEYS_PER_WRITER = 4
_MAX_PROBLEMS = 20
KeyedRecord = tuple[int, str, int | None, int, bool]  # (id, p, v, s, a -D)
_Key = tuple[int, str]


@dataclass(frozen=True)
class _Spec:
    role: str  # writer, compactor, maintainer
    index: int
    warehouse: str
    storage_options: tuple[tuple[str, str], ...]
    log_path: str
    stop_file: str
    commits: int = 0
    seed: int = 0
    rules: tuple[dict[str, Any], ...] = ()
    rollbacks: int = 0
    orphan_age_s: float = 5.0
    retain_max: int = 5
    stacks_after_s: float = 0.0
    # Where the looping roles mark that they have done their work once, and which marks writers wait for
    # halfway through their commits: on a loaded machine the writers could otherwise finish before a slowly
    # started maintainer has tagged or rolled back anything, and the run would race nothing.
    marks_dir: str = ""
    awaited_marks: tuple[str, ...] = ()
    marks_timeout_s: float = 120.0


def _records(index: int, identifier: int) -> list[KeyedRecord]:
    """Commit ``identifier`` of writer ``index``: two upserts of its keys, and every third commit a -D."""
    base = index * 1000
    records: list[KeyedRecord] = []
    for j in range(2):
        key = (identifier + j) % _KEYS_PER_WRITER
        v = (index * 100_000 + identifier) * 10 + j  # unique: a row read names the commit that wrote it
        records.append((base + key, _PARTITIONS[key % 2], v, identifier, False))
    if identifier % 3 == 0:
        key = (identifier + 2) % _KEYS_PER_WRITER
        records.append((base + key, _PARTITIONS[key % 2], None, identifier, True))
    return records


def _open(spec: _Spec) -> Table:
    return Catalog.open(spec.warehouse, **dict(spec.storage_options)).get_table(_TABLE)


def _process(spec: _Spec) -> None:
    with recording_role(spec) as record:
        if spec.role == "writer":
            _write_commits(spec, record)
        elif spec.role == "compactor":
            _loop(spec, record, _compact, lambda counts: counts["snapshots"] > 0)
        else:
            _maintain(spec, record)


# --- the writers ------------------------------------------------------------------------------------------------


def _write(table: Table, records: list[KeyedRecord]) -> list[CommitMessage]:
    while True:
        writer = table.new_write()
        assert isinstance(writer, KeyValueTableWrite)
        try:
            for is_delete in (False, True):  # upserts and deletes touch different keys: order is free
                part = [r for r in records if r[4] == is_delete]
                if part:
                    columns = {n: [r[i] for r in part] for i, n in enumerate(KEYED_SCHEMA.names)}
                    data = pa.table(columns, schema=KEYED_SCHEMA)
                    writer.write(data, DELETE if is_delete else INSERT)
            return writer.prepare_commit()
        except OSError:
            writer.abort()  # an injected failure: nothing was committed, write the files again


def _commit_until_decided(
    table: Table, user: str, identifier: int, records: list[KeyedRecord]
) -> dict[str, Any]:
    """Commit until the commit is known to have landed, or known to be beyond telling (undecided)."""
    started_ns = time.time_ns()
    messages = _write(table, records)
    committer = table.new_commit(user)
    counts = Counter[str]()
    while True:
        try:
            created = committer.commit(messages, identifier)
            return {"created": created, "undecided": False, "started_ns": started_ns, **counts}
        except CommitHistoryExpiredError:
            return {"created": [], "undecided": True, "started_ns": started_ns, **counts}
        except CommitStateUnknownError:
            counts["unknown"] += 1
            committer = table.new_commit(user)  # restart: the retry must find the commit if it landed
        except CommitRetriesExhaustedError:
            counts["exhausted"] += 1
        except CommitFilesError:
            # Orphan removal deleted the files of this slow commit (it never landed): write them again.
            counts["rewritten"] += 1
            messages = _write(table, records)
        except (CommitError, OSError):
            counts["failures"] += 1
        time.sleep(0.005)


def _write_commits(spec: _Spec, record: Callable[[dict[str, Any]], None]) -> None:
    base = _open(spec)
    plan = FaultPlan([FaultRule.from_dict(r) for r in spec.rules], seed=spec.seed)
    table = base.with_storage(FaultyStorage(base.storage, plan)).copy({"write-only": "true"})
    user = f"torture-writer-{spec.index}"
    for identifier in range(1, spec.commits + 1):
        if identifier == spec.commits // 2 + 1:
            _await_marks(spec)
        records = _records(spec.index, identifier)
        outcome = _commit_until_decided(table, user, identifier, records)
        record({"user": user, "identifier": identifier, "records": records, **outcome})


def _await_marks(spec: _Spec) -> None:
    """Wait (bounded) until every awaited role has marked its work done once; a role that never does makes
    the run's checks fail, not this wait."""
    deadline = time.monotonic() + spec.marks_timeout_s
    paths = [os.path.join(spec.marks_dir, role) for role in spec.awaited_marks]
    while time.monotonic() < deadline and not all(os.path.exists(p) for p in paths):
        time.sleep(0.05)


# --- the compactor and the maintainer ------------------------------------------------------------------------


def _loop(
    spec: _Spec,
    record: Callable[[dict[str, Any]], None],
    step: Callable[[Table], Counter[str]],
    done_once: Callable[[Counter[str]], bool],
) -> None:
    """Run ``step`` until the stop file appears; count what happened, keep the first problems; mark the
    role once ``done_once(counts)`` holds (see ``_Spec.marks_dir``)."""
    table = _open(spec)
    counts: Counter[str] = Counter()
    problems: list[str] = []
    marked = False
    while not os.path.exists(spec.stop_file):
        count_step(step, table, counts, problems, _MAX_PROBLEMS)
        if not marked and spec.marks_dir and done_once(counts):
            Path(spec.marks_dir, spec.role).touch()
            marked = True
        time.sleep(0.01)
    record({"counts": dict(counts), "problems": problems})


def _compact(table: Table) -> Counter[str]:
    from paimon_core.compact import compact_table

    summary = compact_table(table, progress=False)
    return Counter(snapshots=len(summary.snapshots))


def _read(table: Table, snapshot_id: int | None = None, tag: str | None = None) -> list[list[Any]]:
    data = table.to_arrow(list(KEYED_SCHEMA.names), snapshot_id=snapshot_id, tag=tag)
    return sorted([list(r.values()) for r in data.to_pylist()], key=str)


def _maintain(spec: _Spec, record: Callable[[dict[str, Any]], None]) -> None:
    """Expire, tag, roll back (a few times), remove orphans; log every tag and rollback for the checks."""
    from paimon_core.maintenance import create_tag, expire_snapshots, remove_orphan_files, rollback_to

    rng = random.Random(spec.seed)
    rollbacks = 0
    tags: dict[str, list[list[Any]]] = {}

    def tag_latest(table: Table) -> Counter[str]:
        latest = table.latest_snapshot()
        if latest is None:
            return Counter()
        rows = _read(table, snapshot_id=latest.id)
        name = f"tag-{len(tags) + 1}"
        create_tag(table, name, latest.id)
        tags[name] = rows
        record({"tag": name, "snapshot": latest.id, "rows": rows})
        return Counter(tags=1)

    def roll_back(table: Table) -> Counter[str]:
        nonlocal rollbacks
        present = [n for n in tags if TagManager(table.storage, table.path).exists(n)]
        if present and rng.random() < 0.5:
            name = rng.choice(present)
            rollback_to(table, tag=name)
            target = TagManager(table.storage, table.path).tag(name).snapshot.id
            rollbacks += 1
            record({"rollback": target, "tag": name, "finished_ns": time.time_ns()})
            problems = []
            try:  # the rolled-back-to snapshot reads the tag's content (until it expires again)
                if _read(table, snapshot_id=target) != tags[name]:
                    problems.append(f"after a rollback to tag {name}, snapshot {target} reads otherwise")
            except SnapshotExpiredError:
                pass
            if problems:
                raise AssertionError("; ".join(problems))
            return Counter(rollbacks=1)
        sm = table.snapshot_manager
        earliest, latest = sm.earliest_id(), sm.latest_id()
        if earliest is None or latest is None or latest <= earliest:
            return Counter()
        target = rng.randint(earliest, latest - 1)
        rollback_to(table, target)
        rollbacks += 1
        record({"rollback": target, "tag": None, "finished_ns": time.time_ns()})
        return Counter(rollbacks=1)

    def remove_orphans(table: Table) -> Counter[str]:
        older_than = dt.datetime.now() - dt.timedelta(seconds=spec.orphan_age_s)
        return Counter(orphans=len(remove_orphan_files(table, older_than=older_than).deleted), orphan_runs=1)

    def step(table: Table) -> Counter[str]:
        far = dt.datetime.now() + dt.timedelta(days=1)
        counts = Counter(
            runs=1, expired=expire_snapshots(table, retain_max=spec.retain_max, retain_min=1, older_than=far)
        )
        action = rng.choice(("tag", "rollback", "orphans", "orphans"))
        if action == "tag" and len(tags) < 8:
            counts.update(tag_latest(table))
        elif action == "rollback" and rollbacks < spec.rollbacks:
            counts.update(roll_back(table))
        elif action == "orphans":
            counts.update(remove_orphans(table))
        return counts

    def done_once(counts: Counter[str]) -> bool:
        return bool(counts["tags"] and counts["orphan_runs"] and (counts["rollbacks"] or not spec.rollbacks))

    _loop(spec, record, step, done_once)


# --- checking ---------------------------------------------------------------------------------------------------


@dataclass
class KeyedReport(MaintenanceReport):
    """What :func:`verify_keyed` found; :meth:`problems` is empty for a healthy run."""

    rollbacks: int = 0
    tags: int = 0
    wrong_keys: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        found = super().problems()
        if self.wrong_keys:
            found.append(f"{len(self.wrong_keys)} keys read wrong, e.g. {self.wrong_keys[:5]}")
        return found

    def __str__(self) -> str:
        return f"{super().__str__()}; {self.rollbacks} rollbacks, {self.tags} tags"


@dataclass
class _Commit:
    identifier: int
    records: list[KeyedRecord]
    started_ns: int
    undecided: bool


def verify_keyed(table: Table, log_paths: Sequence[str]) -> KeyedReport:
    """Check ``table`` (read through an undisturbed backend) against the processes' logs."""
    report = KeyedReport()
    commits: dict[int, list[_Commit]] = {}  # by writer
    tags: dict[str, list[list[Any]]] = {}
    last_rollback_ns = 0
    for path in log_paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            role = entry["role"]
            if "counts" in entry:
                report.counts.setdefault(role, Counter()).update(entry["counts"])
                report.errors += [f"{role} {entry['index']}: {p}" for p in entry["problems"]]
            elif "rollback" in entry:
                report.rollbacks += 1
                last_rollback_ns = max(last_rollback_ns, entry["finished_ns"])
            elif "tag" in entry:
                report.tags += 1
                tags[entry["tag"]] = entry["rows"]
            else:
                report.commits += 1
                report.unknown_outcomes += entry.get("unknown", 0)
                report.retried_failures += entry.get("failures", 0) + entry.get("rewritten", 0)
                report.exhausted += entry.get("exhausted", 0)
                report.undecided += entry["undecided"]
                records = [cast(KeyedRecord, tuple(r)) for r in entry["records"]]
                commits.setdefault(entry["index"], []).append(
                    _Commit(entry["identifier"], records, entry["started_ns"], entry["undecided"])
                )
    check_snapshots(table, report)
    rows = {(r[0], r[1]): r for r in _read(table)}
    report.rows = len(rows)
    expected_keys: set[_Key] = set()
    for writer_commits in commits.values():
        expected_keys |= _check_writer(
            sorted(writer_commits, key=lambda c: c.identifier), rows, last_rollback_ns, report
        )
    report.unexpected = sorted(((k[0], k[1]) for k in rows if k not in expected_keys), key=str)
    _check_tags(table, tags, report)
    _check_files(table, report)
    _check_orphan_removal(table, report)
    return report


def _check_writer(
    commits: list[_Commit], rows: dict[_Key, list[Any]], last_rollback_ns: int, report: KeyedReport
) -> set[_Key]:
    """Each key of one writer reads what one of the commits allowed to decide it wrote (see the module doc)."""
    touching: dict[_Key, list[tuple[_Commit, KeyedRecord]]] = {}
    for commit in commits:
        for r in commit.records:
            touching.setdefault((r[0], r[1]), []).append((commit, r))
    for key, history in touching.items():
        # Commits that started after the last rollback finished and were decided are there for sure; the
        # later ones on this key are all undecided, so the last of the sure ones or any later one decides.
        sure = [i for i, (c, _) in enumerate(history) if c.started_ns > last_rollback_ns and not c.undecided]
        candidates = [r for _, r in history[sure[-1] :]] if sure else [r for _, r in history]
        accepted: list[list[Any] | None] = [None if r[4] else [r[0], r[1], r[2], r[3]] for r in candidates]
        if not sure:
            accepted.append(None)  # every commit on the key may have been rolled back
        actual = rows.get(key)
        if actual not in accepted:
            report.wrong_keys.append(f"{key}: read {actual}, expected one of {accepted}")
    return set(touching)


def _check_tags(table: Table, tags: dict[str, list[list[Any]]], report: KeyedReport) -> None:
    for tag in TagManager(table.storage, table.path).tags():
        if tag.name not in tags:
            report.errors.append(f"tag {tag.name} exists, but the maintainer never logged it")
            continue
        if _read(table, tag=tag.name) != tags[tag.name]:
            report.errors.append(f"tag {tag.name} no longer reads what its snapshot read when it was tagged")


def _check_files(table: Table, report: KeyedReport) -> None:
    sm = table.snapshot_manager
    earliest = sm.earliest_id()
    roots = [s for s in sm.snapshots() if earliest is None or s.id >= earliest]
    roots += [t.snapshot for t in TagManager(table.storage, table.path).tags()]
    used = set()
    for snapshot in roots:
        used |= {
            f"{table.bucket_dir(e.partition, e.bucket)}/{e.file.file_name}"
            for e in live_entries(table, snapshot)
        }
    gone = sorted(p for p in used if not table.storage.exists(p))
    if gone:
        report.errors.append(f"{len(gone)} files a snapshot or tag uses were deleted, e.g. {gone[:3]}")


def _check_orphan_removal(table: Table, report: KeyedReport) -> None:
    from paimon_core.maintenance import remove_orphan_files

    before = _read(table)
    try:
        later = dt.datetime.now() + dt.timedelta(
            days=1
        )  # every process stopped: any unused file is an orphan
        remove_orphan_files(table, older_than=later, now_millis=int(later.timestamp() * 1000) + 1)
    except Exception as exc:
        report.errors.append(f"orphan removal after the run failed: {type(exc).__name__}: {exc}")
        return
    if _read(table) != before:
        report.errors.append("the table reads differently after orphan removal")


# --- the driver -------------------------------------------------------------------------------------------------


def run_keyed_torture(
    warehouse: str,
    *,
    writers: int = 4,
    commits: int = 10,
    engine: str = "deduplicate",
    sequence_field: bool = False,
    compactor: bool = True,
    maintainer: bool = True,
    rollbacks: int = 3,
    orphan_age_s: float = 5.0,
    retain_max: int = 5,
    faults: Sequence[FaultRule] = DEFAULT_FAULTS,
    seed: int = 0,
    storage_options: dict[str, str] | None = None,
    timeout_s: float = 600,
) -> KeyedReport:
    """Create ``torture.k`` in ``warehouse``, run the processes, stop them, and verify (see the module doc).

    Raises:
        ValueError: the storage is not shared between processes, or ``engine`` is not deduplicate or
            partial-update (the engines whose result a rollback of unknown extent leaves checkable).
    """
    if engine not in ("deduplicate", "partial-update"):
        raise ValueError(f"engine {engine!r}: the keyed torture checks deduplicate or partial-update")
    options = dict(storage_options or {})
    catalog = shared_catalog(warehouse, options)
    # Only the maintainer expires (keeping retain_max): committers expiring on their own would race its tag
    # creation, which nothing guards (in Java neither): a tag of a snapshot whose expiration is under way
    # may lose its files.
    table_options = {"bucket": "2", "merge-engine": engine, "snapshot.num-retained.max": "100000"}
    if engine == "partial-update":
        table_options["partial-update.remove-record-on-delete"] = "true"
    if sequence_field:
        table_options["sequence.field"] = "s"
    catalog.create_table(
        _TABLE, KEYED_SCHEMA, partition_keys=["p"], primary_keys=["id", "p"], options=table_options
    )
    logs = tempfile.mkdtemp(prefix="paimon-torture-k-")
    stop_file = os.path.join(logs, "stop")
    marks_dir = os.path.join(logs, "marks")
    os.mkdir(marks_dir)
    awaited = tuple(role for role, on in (("compactor", compactor), ("maintainer", maintainer)) if on)
    rules = tuple(rule_to_dict(r) for r in faults)
    stored = tuple(sorted(options.items()))
    stacks_after_s = max(1.0, timeout_s - 10)

    def spec(role: str, index: int, **extra: Any) -> _Spec:
        log_path = os.path.join(logs, f"{role}-{index}.jsonl")
        return _Spec(
            role,
            index,
            warehouse,
            stored,
            log_path,
            stop_file,
            stacks_after_s=stacks_after_s,
            marks_dir=marks_dir,
            awaited_marks=awaited,
            **extra,
        )

    writing = [spec("writer", i, commits=commits, seed=seed + i, rules=rules) for i in range(writers)]
    others = [spec("compactor", 0)] if compactor else []
    if maintainer:
        others.append(
            spec(
                "maintainer",
                0,
                seed=seed,
                rollbacks=rollbacks,
                orphan_age_s=orphan_age_s,
                retain_max=retain_max,
            )
        )
    started = time.monotonic()
    specs = writing + others
    failed = run_roles(
        specs, _process, writers=len(writing), deadline=started + timeout_s, stop_file=stop_file, grace_s=30
    )
    logs_written = [s.log_path for s in specs if os.path.exists(s.log_path)]
    report = verify_keyed(catalog.get_table(_TABLE), logs_written)
    report.errors = failed + report.errors
    report.elapsed_s = time.monotonic() - started
    logger.info("keyed torture: %s", report)
    return report
