"""Running compaction tasks: in this thread, on a thread pool, on local processes, or (later) on Spark.

A runner is any callable ``runner(table, tasks)`` that yields one :class:`~paimon_core.table.CommitMessage`
per task, in any order. Tasks and messages are picklable, so a runner may ship them anywhere; the table is
picklable too (it re-opens its storage and schema on the other side). When a task fails, a runner deletes
the outputs of the tasks it already finished and raises.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Protocol

from paimon_core.manifest import DataFileMeta
from paimon_core.redaction import get_logger
from paimon_core.table import CommitMessage

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["CompactionTask", "LocalRunner", "TaskRunner", "delete_outputs", "run_task"]

logger = get_logger(__name__)


class CompactionTask(Protocol):
    """What every compaction task offers (:class:`CompactTask`, :class:`SortCompactTask`)."""

    @property
    def partition(self) -> bytes: ...

    @property
    def files(self) -> tuple[DataFileMeta, ...]: ...

    @property
    def input_bytes(self) -> int: ...

    def run(self, table: TableStore) -> CommitMessage: ...


class TaskRunner(Protocol):
    # ``table`` is the store the job was given (a Table for every table a catalog opens).
    def __call__(self, table: TableStore, tasks: Sequence[CompactionTask]) -> Iterator[CommitMessage]: ...


def run_task(table: TableStore, task: CompactionTask) -> CommitMessage:
    """Run one task (a module-level function, so process pools and Spark can pickle it)."""
    return task.run(table)


def delete_outputs(table: TableStore, messages: Sequence[CommitMessage]) -> None:
    """Delete the outputs of compaction messages that will not be committed."""
    table.delete_new_files(messages)


class LocalRunner:
    """Runs tasks on this machine: in the calling thread, on threads, or on processes.

    The pool lives until :meth:`close` (a streaming job reuses it round after round). Process pools start
    their workers with ``spawn``: forking a process that runs Arrow thread pools is not safe.

    Args:
        parallelism: workers; defaults to the CPU count. 1 runs tasks in the calling thread.
        processes: use processes instead of threads.
    """

    def __init__(self, parallelism: int | None = None, processes: bool = False) -> None:
        self.parallelism = max(1, parallelism or os.cpu_count() or 1)
        self.processes = processes
        self._pool: Executor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> Executor:
        with self._lock:
            return self._create()

    def _create(self) -> Executor:
        if self._pool is None:
            if self.processes:
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(max_workers=self.parallelism, mp_context=context)
            else:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.parallelism, thread_name_prefix="paimon-compact"
                )
        return self._pool

    def __call__(self, table: TableStore, tasks: Sequence[CompactionTask]) -> Iterator[CommitMessage]:
        if self.parallelism == 1 or (len(tasks) == 1 and not self.processes):
            # A failing task deletes its own outputs; yielded messages belong to the caller.
            for task in tasks:
                yield task.run(table)
            return
        pool = self._executor()
        futures: list[Future[CommitMessage]] = [pool.submit(run_task, table, task) for task in tasks]
        yielded: set[int] = set()
        try:
            for future in as_completed(futures):
                message = future.result()
                yielded.add(id(future))
                yield message
        except BaseException:
            # Stop what has not started; outputs of tasks that finished but were never handed out go.
            for future in futures:
                future.cancel()
            orphans = []
            for future in futures:
                if id(future) in yielded or future.cancelled():
                    continue
                try:
                    orphans.append(future.result())
                except BaseException:  # the first failure is already on its way up
                    continue
            delete_outputs(table, orphans)
            raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
