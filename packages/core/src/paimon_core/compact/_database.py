"""Compacting many tables: Paimon's ``compact_database`` action.

Databases and tables are chosen by regular expressions matched against the whole name: databases by
``including_databases``, tables by their full name ``db.table`` with ``including_tables`` and
``excluding_tables``. ``divided`` runs one job per table (in streaming mode, each in its own thread);
``combined`` runs one job over all of them that, in streaming mode, also picks up tables created later.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from paimon_core.compact._job import CompactJob, CompactSummary
from paimon_core.compact._runner import LocalRunner, TaskRunner
from paimon_core.errors import ConfigError, PaimonError
from paimon_core.progress import Progress, resolve_progress
from paimon_core.redaction import get_logger

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["DATABASE_MODES", "TableCatalog", "compact_database", "select_tables"]

logger = get_logger(__name__)


class TableCatalog(Protocol):
    """What compacting a database asks of a catalog (:class:`paimon_core.Catalog` is one). A protocol: the
    catalog hands its tables the standard hooks, so it is above compaction and cannot be imported here."""

    def list_databases(self) -> list[str]: ...

    def list_tables(self, database: str) -> list[str]: ...

    def get_table(self, identifier: str) -> TableStore: ...


DATABASE_MODES = ("divided", "combined")
_MAX_BATCH_ROUNDS = 20


def _pattern(regex: str | None, default: str | None) -> re.Pattern[str] | None:
    text = regex if regex is not None else default
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise ConfigError(f"invalid regular expression {text!r}: {exc}") from None


def select_tables(
    catalog: TableCatalog,
    including_databases: str | None = None,
    including_tables: str | None = None,
    excluding_tables: str | None = None,
) -> list[str]:
    """Full names (``db.table``) of the tables a database compaction covers, sorted."""
    databases = _pattern(including_databases, ".*")
    including = _pattern(including_tables, ".*")
    excluding = _pattern(excluding_tables, None)
    assert databases is not None and including is not None
    names = []
    for database in catalog.list_databases():
        if not databases.fullmatch(database):
            continue
        for table in catalog.list_tables(database):
            full = f"{database}.{table}"
            if including.fullmatch(full) and not (excluding is not None and excluding.fullmatch(full)):
                names.append(full)
    return names


def compact_database(
    catalog: TableCatalog,
    *,
    including_databases: str | None = None,
    including_tables: str | None = None,
    excluding_tables: str | None = None,
    mode: str = "divided",
    streaming: bool = False,
    parallelism: int | None = None,
    processes: bool = False,
    runner: TaskRunner | None = None,
    progress: bool | Progress | None = None,
    stop: threading.Event | None = None,
    poll_interval: float = 10.0,
    max_rounds: int | None = None,
) -> dict[str, CompactSummary]:
    """Compact every table the regular expressions choose.

    Args:
        catalog: the catalog.
        including_databases: databases to include (regex, whole name; default all).
        including_tables: tables to include, matched on ``db.table`` (default all).
        excluding_tables: tables to leave out, matched on ``db.table``.
        mode: ``divided`` (one job per table) or ``combined`` (one job for all, picking up new tables).
        streaming: keep compacting until ``stop`` is set; otherwise compact once.
        parallelism: as for :func:`compact_table`.
        processes: as for :func:`compact_table`.
        runner: as for :func:`compact_table`.
        progress: as for :func:`compact_table`.
        stop: ends streaming jobs.
        poll_interval: seconds between looks for new snapshots (and, combined, new tables).
        max_rounds: end each job (divided) or the combined job after this many rounds.

    Returns:
        A summary per compacted table, by full name.
    """
    if mode not in DATABASE_MODES:
        raise ConfigError(f"mode must be one of {', '.join(DATABASE_MODES)}, not {mode!r}")
    display = resolve_progress(progress)
    own_runner = runner is None
    active: TaskRunner = runner or LocalRunner(parallelism, processes)
    stop = stop or threading.Event()

    def choose() -> list[str]:
        return select_tables(catalog, including_databases, including_tables, excluding_tables)

    def new_job(name: str) -> CompactJob | None:
        try:
            table: TableStore = catalog.get_table(name)
            return CompactJob(table, streaming=streaming, runner=active, progress=display)
        except PaimonError as exc:  # e.g. a table kind this library cannot compact
            logger.warning("skipping %s: %s", name, exc)
            return None

    try:
        if mode == "divided":
            return _divided(choose(), new_job, streaming, stop, poll_interval, max_rounds)
        return _combined(choose, new_job, streaming, stop, poll_interval, max_rounds, display)
    finally:
        if own_runner and isinstance(active, LocalRunner):
            active.close()


def _divided(
    names: list[str],
    new_job: Callable[[str], CompactJob | None],
    streaming: bool,
    stop: threading.Event,
    poll_interval: float,
    max_rounds: int | None,
) -> dict[str, CompactSummary]:
    jobs = {name: job for name in names if (job := new_job(name)) is not None}
    if not streaming:
        return {name: job.run(stop, max_rounds=max_rounds) for name, job in jobs.items()}
    results: dict[str, CompactSummary] = {}
    errors: list[BaseException] = []

    def run(name: str, job: CompactJob) -> None:
        try:
            results[name] = job.run(stop, poll_interval=poll_interval, max_rounds=max_rounds)
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    threads = [
        threading.Thread(target=run, args=(name, job), name=f"compact-{name}", daemon=True)
        for name, job in jobs.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def _combined(
    choose: Callable[[], list[str]],
    new_job: Callable[[str], CompactJob | None],
    streaming: bool,
    stop: threading.Event,
    poll_interval: float,
    max_rounds: int | None,
    display: Progress,
) -> dict[str, CompactSummary]:
    jobs: dict[str, CompactJob] = {}
    skipped: set[str] = set()
    rounds = 0
    start = time.monotonic()
    while not stop.is_set():
        for name in choose():
            if name not in jobs and name not in skipped:
                job = new_job(name)
                if job is None:
                    skipped.add(name)
                    continue
                job.summary.files_before, job.summary.bytes_before = job.live_totals()
                jobs[name] = job
        busy = conflicted = False
        for job in jobs.values():
            result = job.run_round()
            busy = busy or bool(result.snapshots) or result.conflicted
            conflicted = conflicted or result.conflicted
        rounds += 1
        if max_rounds is not None and rounds >= max_rounds:
            break
        if not streaming:
            if not conflicted or rounds > _MAX_BATCH_ROUNDS:
                break
            continue
        if not busy:
            stop.wait(poll_interval)
    summaries = {}
    for name, job in jobs.items():
        job.summary.files_after, job.summary.bytes_after = job.live_totals()
        job.summary.seconds = time.monotonic() - start
        display.message(str(job.summary))
        summaries[name] = job.summary
    return summaries
