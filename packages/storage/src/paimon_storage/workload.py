"""A concurrent-writer workload for any store: several processes append while another overwrites a partition.

Used by the integration tests (nothing lost or duplicated, dense snapshot ids) and the storage benchmark. Each
writer process opens the catalog itself (through the installed backends), so the workload proves what a real
multi-machine deployment relies on: the store's create-only write (or a commit lock) is the only
coordination. Workers run in ``spawn`` processes; the functions here are importable by them.

Table ``bench.events``: ``writer`` (int, -1 for the overwriter), ``round``, ``seq``, ``p`` (the partition:
``w<writer>`` for appenders, ``z`` for the overwriter), ``payload``.
"""

from __future__ import annotations

import itertools
import multiprocessing
import queue
import time
import traceback
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

__all__ = [
    "SCHEMA",
    "TABLE",
    "WorkloadResult",
    "check_table",
    "count_under_lock",
    "create_table",
    "die_holding_lock",
    "rows",
    "run_workload",
]

TABLE = "bench.events"
SCHEMA = pa.schema(
    [
        pa.field("writer", pa.int32(), nullable=False),
        pa.field("round", pa.int32(), nullable=False),
        pa.field("seq", pa.int32(), nullable=False),
        pa.field("p", pa.string(), nullable=False),
        pa.field("payload", pa.string()),
    ]
)
OVERWRITER = -1
_ROWS_PER_COMMIT = 3


def rows(writer: int, round_: int, count: int = _ROWS_PER_COMMIT) -> pa.Table:
    """The rows one commit of ``writer`` adds in ``round_``."""
    partition = "z" if writer == OVERWRITER else f"w{writer}"
    return pa.table(
        {
            "writer": [writer] * count,
            "round": [round_] * count,
            "seq": list(range(count)),
            "p": [partition] * count,
            "payload": [f"{writer}/{round_}/{i}" for i in range(count)],
        },
        schema=SCHEMA,
    )


def create_table(
    warehouse: str, options: Mapping[str, str], table_options: Mapping[str, str] | None = None
) -> Any:
    """Create ``bench.events`` (partitioned by ``p``) in the warehouse; returns the table."""
    from paimon_core import Catalog

    catalog = Catalog.open(warehouse, create=True, **options)
    catalog.create_database("bench", exist_ok=True)
    return catalog.create_table(TABLE, SCHEMA, partition_keys=["p"], options=dict(table_options or {}))


def _open(warehouse: str, options: Mapping[str, str], dynamic: Mapping[str, str]) -> Any:
    from paimon_core import Catalog

    return Catalog.open(warehouse, **options).get_table(TABLE, **dynamic)


def _worker(
    warehouse: str,
    options: Mapping[str, str],
    dynamic: Mapping[str, str],
    writer: int,
    commits: int,
    barrier: Any,
    results: Any,
) -> None:
    try:
        table = _open(warehouse, options, dynamic)
        barrier.wait(300)
        latencies = []
        for round_ in range(commits):
            data = rows(writer, round_)
            start = time.perf_counter()
            if writer == OVERWRITER:
                table.overwrite(data, partition={"p": "z"})
            else:
                table.append(data)
            latencies.append(time.perf_counter() - start)
        results.put((writer, latencies))
    except BaseException:
        results.put((writer, traceback.format_exc()))


@dataclass
class WorkloadResult:
    """What the writers did: per-commit latencies (seconds) by writer, and the wall time."""

    latencies: dict[int, list[float]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def commits(self) -> int:
        return sum(len(v) for v in self.latencies.values())


def run_workload(
    warehouse: str,
    options: Mapping[str, str],
    *,
    appenders: int = 4,
    appends: int = 25,
    overwrites: int = 10,
    dynamic_options: Mapping[str, str] | None = None,
    timeout: float = 600.0,
) -> WorkloadResult:
    """Run ``appenders`` processes of ``appends`` commits each plus one overwriter, all started together.

    Raises:
        RuntimeError: a writer failed (with its traceback) or did not finish within ``timeout``.
    """
    dynamic = {"commit.max-retries": "200", **(dynamic_options or {})}
    writers = [*range(appenders), *([OVERWRITER] if overwrites else [])]
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(len(writers) + 1), ctx.Queue()
    processes = [
        ctx.Process(
            target=_worker,
            args=(
                warehouse,
                dict(options),
                dynamic,
                w,
                overwrites if w == OVERWRITER else appends,
                barrier,
                results,
            ),
            daemon=True,
        )
        for w in writers
    ]
    result = WorkloadResult()
    try:
        for process in processes:
            process.start()
        barrier.wait(300)
        start = time.perf_counter()
        deadline = time.monotonic() + timeout
        failures: dict[int, str] = {}
        while len(result.latencies) + len(failures) < len(writers):
            try:
                writer, report = results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"writers did not finish within {timeout:.0f} s") from None
            if isinstance(report, str):
                failures[writer] = report
            else:
                result.latencies[writer] = report
        result.seconds = time.perf_counter() - start
        if failures:
            raise RuntimeError(f"writers failed: {failures}")
    finally:
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.terminate()
                process.join()
        results.close()
        results.join_thread()
    return result


def check_table(table: Any, *, appenders: int, appends: int, overwrites: int) -> list[str]:
    """The invariants the workload must keep; returns the violations (empty when all hold).

    Snapshot ids are dense, each snapshot built on its predecessor, with one APPEND per append and one
    OVERWRITE per overwrite (plus the COMPACT snapshots that writers' automatic compaction adds); every
    append's rows are present exactly once; partition ``z`` holds exactly the last overwrite's rows.
    """
    problems = []
    snapshots = table.snapshots()
    ids = [s.id for s in snapshots]
    if ids != list(range(1, len(ids) + 1)):
        problems.append(f"snapshot ids are not dense: {ids}")
    kinds = Counter(s.commit_kind.value for s in snapshots)
    wanted_kinds = {"APPEND": appenders * appends, "OVERWRITE": overwrites}
    if {k: kinds.get(k, 0) for k in wanted_kinds} != wanted_kinds or set(kinds) - {*wanted_kinds, "COMPACT"}:
        problems.append(f"snapshot kinds {dict(kinds)}; wanted {wanted_kinds} and any number of COMPACT")
    commits = Counter(
        (s.commit_user, s.commit_identifier, s.commit_kind.value)
        for s in snapshots
        if s.commit_kind.value != "COMPACT"  # a writer compacts repeatedly under one user and identifier
    )
    if any(n > 1 for n in commits.values()):
        problems.append(f"a commit landed twice: {[c for c, n in commits.items() if n > 1][:5]}")
    for before, after in itertools.pairwise(snapshots):
        if after.total_record_count != before.total_record_count + after.delta_record_count:
            problems.append(f"snapshot {after.id} is not built on snapshot {before.id} (record counts)")
    data = table.to_arrow()
    if snapshots and snapshots[-1].total_record_count != data.num_rows:
        problems.append(
            f"latest snapshot counts {snapshots[-1].total_record_count} rows, read {data.num_rows}"
        )
    keys = Counter(
        zip(
            data.column("writer").to_pylist(),
            data.column("round").to_pylist(),
            data.column("seq").to_pylist(),
            strict=True,
        )
    )
    duplicated = [k for k, n in keys.items() if n > 1]
    if duplicated:
        problems.append(f"duplicated rows: {duplicated[:10]}")
    wanted = {(w, r, s) for w in range(appenders) for r in range(appends) for s in range(_ROWS_PER_COMMIT)}
    if overwrites:
        wanted |= {(OVERWRITER, overwrites - 1, s) for s in range(_ROWS_PER_COMMIT)}
    missing, extra = wanted - set(keys), set(keys) - wanted
    if missing:
        problems.append(f"lost rows: {sorted(missing)[:10]} ({len(missing)} in all)")
    if extra:
        problems.append(f"unexpected rows: {sorted(extra)[:10]} ({len(extra)} in all)")
    return problems


def count_under_lock(options: Mapping[str, str], counter: str, rounds: int, key: str = "db.t") -> None:
    """Process body for lock tests: read-modify-write a counter file ``rounds`` times, each under the lock.

    The read and the write are apart by a sleep, so writers that were not excluded lose updates.
    """
    from pathlib import Path

    from paimon_core.storage import open_commit_lock

    lock = open_commit_lock(options)

    def bump() -> None:
        value = int(Path(counter).read_text())
        time.sleep(0.002)
        Path(counter).write_text(str(value + 1))

    for _ in range(rounds):
        lock.run_with_lock(key, bump)


def die_holding_lock(options: Mapping[str, str], key: str) -> None:
    """Process body for lock tests: a writer killed inside its critical section (exit status 3)."""
    import os

    from paimon_core.storage import open_commit_lock

    open_commit_lock(options).run_with_lock(key, lambda: os._exit(3))
