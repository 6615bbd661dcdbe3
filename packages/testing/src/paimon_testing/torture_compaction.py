"""Write-only appenders, a partition overwriter and a streaming dedicated compaction job, all at once.

Paimon's multi-writer setup: :func:`run_compaction_torture` starts ``appenders`` write-only appender processes,
one overwriter process that replaces partition ``"x"`` on every commit, and one process running the streaming
compaction job (:func:`paimon_core.compact.compact_table` with ``mode="streaming"``) until the writers are
done. Then it checks that the table holds exactly the appended rows plus the overwriter's last rows (none lost,
none duplicated), that every process exited cleanly, and how many small files are left.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.snapshot import CommitKind
from paimon_testing.stateful import SCHEMA
from paimon_testing.torture import finish

__all__ = ["CompactionTortureReport", "run_compaction_torture"]

_TABLE = "torture.compacted"
_APPEND_PARTITIONS = ("a", "b", "c")
_OVERWRITTEN = "x"
_OPTIONS = {
    "write-only": "true",
    "target-file-size": "64 kb",
    "compaction.min.file-num": "4",
    "source.split.open-file-cost": "1 b",
}


def _ids(index: int, commit: int, rows: int) -> list[int]:
    first = (index * 100_000 + commit) * 1000
    return list(range(first, first + rows))


def _appender(warehouse: str, index: int, commits: int, rows: int) -> None:
    table = Catalog.open(warehouse).get_table(_TABLE)
    for commit in range(commits):
        ids = _ids(index, commit, rows)
        table.append(pa.table({"id": ids, "p": [_APPEND_PARTITIONS[i % 3] for i in ids]}, schema=SCHEMA))


def _overwriter(warehouse: str, index: int, commits: int, rows: int) -> None:
    table = Catalog.open(warehouse).get_table(_TABLE)
    for commit in range(commits):
        ids = _ids(index, commit, rows)
        data = pa.table({"id": ids, "p": [_OVERWRITTEN] * len(ids)}, schema=SCHEMA)
        table.overwrite(data, {"p": _OVERWRITTEN})


def _compactor(warehouse: str, stop_file: str, poll_interval: float) -> None:
    import threading

    table = Catalog.open(warehouse).get_table(_TABLE)
    stop = threading.Event()

    def watch() -> None:
        while not os.path.exists(stop_file):
            time.sleep(0.05)
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    compact_table(
        table, mode="streaming", stop=stop, poll_interval=poll_interval, parallelism=2, progress=False
    )


@dataclass
class CompactionTortureReport:
    rows: int
    lost: int
    duplicated: int
    unexpected: int
    failed_processes: list[str]
    appended_files: int
    live_files: int
    small_files: int
    compact_snapshots: int
    seconds: float


def run_compaction_torture(
    warehouse: str,
    *,
    appenders: int = 4,
    commits: int = 30,
    rows: int = 200,
    overwrite_commits: int = 10,
    poll_interval: float = 0.2,
    timeout_s: float = 150,
    settle_files: int | None = None,
) -> CompactionTortureReport:
    """Run the workload on a new table ``torture.compacted`` in ``warehouse`` and check it (see module doc).

    Once the writers are done the compactor gets a few more polls, or with ``settle_files``, until at most
    that many live files remain (within ``timeout_s``): a busy machine slows the compactor, not the check.
    """
    started = time.monotonic()
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("torture", exist_ok=True)
    table = catalog.create_table(_TABLE, SCHEMA, partition_keys=["p"], options=_OPTIONS)
    stop_file = str(Path(tempfile.mkdtemp(prefix="paimon-compaction-torture-")) / "stop")
    ctx = multiprocessing.get_context("spawn")
    writers = [
        ctx.Process(target=_appender, args=(warehouse, i, commits, rows), name=f"appender-{i}")
        for i in range(appenders)
    ]
    writers.append(
        ctx.Process(
            target=_overwriter, args=(warehouse, appenders, overwrite_commits, rows), name="overwriter"
        )
    )
    compactor = ctx.Process(target=_compactor, args=(warehouse, stop_file, poll_interval), name="compactor")
    compactor.start()
    for process in writers:
        process.start()
    deadline = started + timeout_s
    for process in writers:
        process.join(max(0.0, deadline - time.monotonic()))
    # Let the compactor see the last appends, then stop it.
    time.sleep(max(1.0, 5 * poll_interval))
    while settle_files is not None and time.monotonic() < deadline and compactor.is_alive():
        if len(catalog.get_table(_TABLE).live_entries()) <= settle_files:
            break
        time.sleep(poll_interval)
    Path(stop_file).touch()
    compactor.join(max(5.0, deadline - time.monotonic()))
    failed = finish([*writers, compactor], time.monotonic())
    table = catalog.get_table(_TABLE)
    expected = [i for a in range(appenders) for c in range(commits) for i in _ids(a, c, rows)]
    expected += _ids(appenders, overwrite_commits - 1, rows) if overwrite_commits else []
    got = table.to_arrow(columns=["id"]).column("id").to_pylist()
    got_set, expected_set = set(got), set(expected)
    entries = table.live_entries()
    small = int(table.options.target_file_size(False) * 0.7)
    return CompactionTortureReport(
        rows=len(got),
        lost=len(expected_set - got_set),
        duplicated=len(got) - len(got_set),
        unexpected=len(got_set - expected_set),
        failed_processes=failed,
        appended_files=appenders * commits * len(_APPEND_PARTITIONS),
        live_files=len(entries),
        small_files=sum(e.file.file_size < small for e in entries),
        compact_snapshots=sum(s.commit_kind == CommitKind.COMPACT for s in table.snapshots()),
        seconds=time.monotonic() - started,
    )
