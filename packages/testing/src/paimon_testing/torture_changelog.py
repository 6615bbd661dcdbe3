"""Paimon's quick start, many times over in core: a word count and a follower of its changelog, both restarted.

The topology of ``examples/spark_quickstart.py`` without Spark, so it can run many times under CPU load:

- a **word count** upserts each micro-batch's changed counts into ``word_count (word PRIMARY KEY, cnt)``
  (``changelog-producer = lookup``, two buckets; every writer compacts inline, so a micro-batch makes an
  APPEND and a COMPACT snapshot carrying the changelog), committing micro-batch ``b`` with commit identifier
  ``b`` as ``paimon_spark.write_stream`` does. Midway it crashes (before its commit, between its APPEND and
  COMPACT snapshots, or after its commit) and restarts, replaying the micro-batch it was in: a replay that
  landed is skipped (``TableCommit.is_committed``);
- a **follower** reads the table's changelog as Spark's micro-batch engine drives a source
  (:class:`MicroBatchFollower`: an offset log, a commit log, ``initialOffset`` asked again when the first
  batch runs, a replayed batch with the offsets it logged) into a sink that skips replayed batch ids, as the
  quick start's tally does. Midway it crashes (after logging a batch's offsets, or after its sink took the
  batch) and restarts with a new source.

The sink folds the changes key by key (:class:`ChangelogFold`): a ``-U``/``-D`` must retract the value the
fold holds, a ``+I``/``+U`` must come to a key the fold lacks, and once the follower has caught up the fold
must equal the table. A lost, duplicated or misordered change breaks one of these. The source is pluggable
(:class:`Source`), so an engine's own reader can be driven the same way.

The lookup producer writes a change when a compaction takes its level-0 record up: a micro-batch whose
COMPACT snapshot was lost in a crash (its replay is skipped, the APPEND landed) has its changes written by the
next micro-batch's compaction, and until then a follower lags the table. So every run ends with a micro-batch
that completes, and the follower compares once it has caught up with that.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.table import KeyValueTableRead, StreamPosition, StreamScan, Table

__all__ = [
    "CRASHES_OF_FOLLOWER",
    "CRASHES_OF_WRITER",
    "FOLLOW",
    "SCHEMA",
    "TABLE",
    "TABLE_OPTIONS",
    "WRITE",
    "WRITE_WHILE_PLANNED",
    "ChangelogFold",
    "ChangelogTortureReport",
    "MicroBatchCheckpoint",
    "MicroBatchFollower",
    "ScanSource",
    "Source",
    "WordCount",
    "burning_cpu",
    "create_word_count_table",
    "run_changelog_torture",
    "run_schedule",
    "schedules",
    "table_rows",
]

TABLE = "default.word_count"
SCHEMA = pa.schema([pa.field("word", pa.string(), nullable=False), pa.field("cnt", pa.int64())])
TABLE_OPTIONS = {"bucket": "2", "changelog-producer": "lookup"}
CRASHES_OF_WRITER = ("before-commit", "between-snapshots", "after-commit")
CRASHES_OF_FOLLOWER = ("after-offsets", "after-sink")
_ADDS = ("+I", "+U")


def create_word_count_table(warehouse: str) -> Table:
    """The quick start's ``default.word_count`` in a new warehouse."""
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("default", exist_ok=True)
    return catalog.create_table(TABLE, SCHEMA, primary_keys=["word"], options=TABLE_OPTIONS)


def table_rows(table: Table) -> dict[str, int]:
    """The table's latest content, word -> count."""
    data = table.to_arrow()
    return dict(zip(data.column("word").to_pylist(), data.column("cnt").to_pylist(), strict=True))


# --- the word count ----------------------------------------------------------------------------------------------


class WordCount:
    """The quick start's streaming word count, one micro-batch at a time (Spark's ``update`` output mode).

    Micro-batch ``b`` counts the numbers ``b * rows .. (b + 1) * rows - 1``, each as the first hex digit of
    its SHA-1 (16 words), and upserts the new totals of the words it saw.
    """

    def __init__(self, warehouse: str, commit_user: str, rows_per_batch: int = 400) -> None:
        self.warehouse = warehouse
        self.commit_user = commit_user
        self.rows_per_batch = rows_per_batch
        self._totals: list[Counter[str]] = []  # the aggregation's state after each micro-batch

    def words(self, batch_id: int) -> Counter[str]:
        first = batch_id * self.rows_per_batch
        return Counter(
            hashlib.sha1(str(n).encode()).hexdigest()[0] for n in range(first, first + self.rows_per_batch)
        )

    def totals(self, batch_id: int) -> Counter[str]:
        while len(self._totals) <= batch_id:
            previous = self._totals[-1] if self._totals else Counter[str]()
            self._totals.append(previous + self.words(len(self._totals)))
        return self._totals[batch_id]

    def run_batch(self, batch_id: int, crash: str | None = None) -> bool:
        """Write and commit micro-batch ``batch_id`` as the sink of ``write_stream`` does; with ``crash``
        (one of :data:`CRASHES_OF_WRITER`) stop where it says instead of finishing. Returns whether it wrote
        (False: a replay of a committed micro-batch)."""
        table = Catalog.open(self.warehouse).get_table(TABLE)  # as a Spark task opens it
        committer = table.new_commit(self.commit_user)
        if committer.is_committed(batch_id):
            return False
        totals = self.totals(batch_id)
        changed = sorted(self.words(batch_id))
        rows = pa.table({"word": changed, "cnt": [totals[w] for w in changed]}, schema=SCHEMA)
        write = table.new_write()
        try:
            write.write(rows)
            messages = write.prepare_commit()
        finally:
            write.close()
        if crash == "before-commit":
            return True  # the files stay behind, as a killed process leaves them
        if crash == "between-snapshots":
            # The APPEND landed, the process died before the COMPACT (with the changelog) was published.
            appended = [
                replace(m, compact_before=(), compact_after=(), compact_changelog_files=()) for m in messages
            ]
            committer.commit([m for m in appended if not m.is_empty()], batch_id)
            return True
        committer.commit(messages, batch_id)
        return True


# --- the follower --------------------------------------------------------------------------------------------------


class Source(Protocol):
    """What Spark's micro-batch engine asks of a streaming source (offsets are the source's values)."""

    def initial_offset(self) -> Any: ...

    def latest_offset(self, start: Any) -> Any: ...

    def read(self, start: Any, end: Any) -> Iterator[pa.RecordBatch]: ...

    def commit(self, end: Any) -> None: ...


class ScanSource:
    """Core's stream scan as a source: positions are offsets; the changelog read with its row kinds."""

    def __init__(self, table: Table) -> None:
        self.scan = StreamScan(table)
        self.read_changes = KeyValueTableRead(table, row_kind=True, keep_delete=True)
        self._initial: StreamPosition | None = None

    def initial_offset(self) -> StreamPosition:
        if self._initial is None:  # the engine may ask again: the start must not move
            self._initial = self.scan.starting_position()
        return self._initial

    def latest_offset(self, start: StreamPosition) -> StreamPosition:
        return self.scan.advance(start)

    def read(self, start: StreamPosition, end: StreamPosition) -> Iterator[pa.RecordBatch]:
        yield from self.read_changes.to_batches(self.scan.plan(start, end))

    def commit(self, end: StreamPosition) -> None:
        self.scan.record_progress(end)


class ChangelogFold:
    """A sink folding a changelog into the rows it describes, checking every change against the fold.

    Batches with an id it has taken already are skipped (a micro-batch the engine runs again after a restart).
    """

    def __init__(self, key: str = "word", value: str = "cnt") -> None:
        self.key, self.value = key, value
        self.rows: dict[Any, Any] = {}
        self.batches: set[int] = set()
        self.changes = 0
        self.problems: list[str] = []

    def __call__(self, batch_id: int, batches: Iterable[pa.RecordBatch]) -> None:
        if batch_id in self.batches:
            return
        changes = [
            change
            for batch in batches
            for change in zip(
                batch.column("rowkind").to_pylist(),
                batch.column(self.key).to_pylist(),
                batch.column(self.value).to_pylist(),
                strict=True,
            )
        ]
        for kind, key, value in changes:  # taken as a whole or not at all, as a sink's transaction
            self._apply(batch_id, kind, key, value)
        self.changes += len(changes)
        self.batches.add(batch_id)

    def _apply(self, batch_id: int, kind: str, key: Any, value: Any) -> None:
        held = self.rows.get(key)
        if kind in _ADDS:
            if key in self.rows:
                self.problems.append(f"batch {batch_id}: {kind} {key}={value} while the fold holds {held}")
            self.rows[key] = value
            return
        if key not in self.rows:
            self.problems.append(f"batch {batch_id}: {kind} {key}={value} of a key the fold lacks")
        elif held != value:
            self.problems.append(f"batch {batch_id}: {kind} {key}={value} while the fold holds {held}")
        self.rows.pop(key, None)

    def compare(self, expected: dict[Any, Any]) -> list[str]:
        """The differences between the fold and ``expected`` (the table), key by key."""
        keys = sorted(set(self.rows) | set(expected), key=str)
        return [
            f"{k}: followed {self.rows.get(k)}, table {expected.get(k)}"
            for k in keys
            if self.rows.get(k) != expected.get(k)
        ]


@dataclass
class MicroBatchCheckpoint:
    """A streaming query's checkpoint: the end offset logged for each batch, and how many batches committed."""

    offsets: list[Any] = field(default_factory=list)
    committed: int = 0


class MicroBatchFollower:
    """Spark's ``MicroBatchExecution`` as far as a source sees it.

    Constructing batch ``n`` asks ``latestOffset`` from the last logged end (``initialOffset`` for the first
    batch), logs the end, and commits the previous end to the source; running it asks ``initialOffset``
    again for the first batch (Spark does), reads the range into the sink and writes the commit log. A
    restarted follower (a new source, the same checkpoint) first runs a batch whose offsets were logged but
    not committed, over the logged range.
    """

    def __init__(
        self,
        source: Source,
        sink: Callable[[int, Iterable[pa.RecordBatch]], None],
        checkpoint: MicroBatchCheckpoint,
    ) -> None:
        self.source, self.sink, self.checkpoint = source, sink, checkpoint
        if len(checkpoint.offsets) > checkpoint.committed:
            self._run(checkpoint.committed)

    def _start_of(self, batch_id: int) -> Any:
        return self.checkpoint.offsets[batch_id - 1] if batch_id else self.source.initial_offset()

    def step(self, planned: Callable[[], None] | None = None, crash: str | None = None) -> bool:
        """Construct and run the next batch, if there is new data (returns whether there was).

        ``planned`` runs between logging the batch's offsets and running it; ``crash`` (one of
        :data:`CRASHES_OF_FOLLOWER`) stops there (a restart follows)."""
        batch_id = self.checkpoint.committed
        start = self._start_of(batch_id)
        end = self.source.latest_offset(start)
        if end == start:
            return False
        self.checkpoint.offsets.append(end)
        if batch_id:
            self.source.commit(self.checkpoint.offsets[batch_id - 1])
        if planned is not None:
            planned()
        if crash == "after-offsets":
            return True
        self._run(batch_id, crash)
        return True

    def _run(self, batch_id: int, crash: str | None = None) -> None:
        start, end = self._start_of(batch_id), self.checkpoint.offsets[batch_id]
        self.sink(batch_id, self.source.read(start, end))
        if crash == "after-sink":
            return
        self.checkpoint.committed = batch_id + 1


# --- one step at a time --------------------------------------------------------------------------------------------

WRITE = "write"
FOLLOW = "follow"
WRITE_WHILE_PLANNED = "write-while-planned"


def schedules(max_steps: int = 10) -> st.SearchStrategy[list[tuple[str, str | None]]]:
    """Schedules for :func:`run_schedule`: writes and follows, each plain or crashing in every way there is."""
    write = st.tuples(st.just(WRITE), st.sampled_from((None, *CRASHES_OF_WRITER)))
    follow = st.tuples(st.just(FOLLOW), st.sampled_from((None, WRITE_WHILE_PLANNED, *CRASHES_OF_FOLLOWER)))
    return st.lists(st.one_of(write, follow), min_size=2, max_size=max_steps)


def run_schedule(
    warehouse: str,
    steps: Iterable[tuple[str, str | None]],
    open_source: Callable[[Table], Source] = ScanSource,
    rows_per_batch: int = 64,
) -> list[str]:
    """Run the topology one step at a time on a new table in ``warehouse``; the problems the fold found.

    Each step is ``("write", crash)``: the word count's next micro-batch (a crash of
    :data:`CRASHES_OF_WRITER`, then its replay), or ``("follow", how)``: the follower's next batch, restarted
    first if it is down (after a crash of :data:`CRASHES_OF_FOLLOWER` in ``how``), or with a micro-batch
    of the word count committed between planning and running it (``how`` :data:`WRITE_WHILE_PLANNED`).
    The table starts with one micro-batch; a last one completes, and the follower catches up before the fold
    is compared with the table.
    """
    create_word_count_table(warehouse)
    count = WordCount(warehouse, "word-count", rows_per_batch)
    written = 0
    fold, checkpoint = ChangelogFold(), MicroBatchCheckpoint()

    def write(crash: str | None = None) -> None:
        nonlocal written
        count.run_batch(written, crash)
        if crash is not None:
            count.run_batch(written)  # the restart replays the micro-batch
        written += 1

    def start() -> MicroBatchFollower:  # a (re)start first runs a batch it logged but did not commit
        return MicroBatchFollower(open_source(Catalog.open(warehouse).get_table(TABLE)), fold, checkpoint)

    write()
    follower: MicroBatchFollower | None = None  # down until its next step
    for action, how in steps:
        if action == WRITE:
            write(how)
            continue
        follower = follower or start()
        if how == WRITE_WHILE_PLANNED:
            follower.step(planned=write)
            continue
        follower.step(crash=how)
        if how is not None:
            follower = None
    write()  # its compaction writes the changes of a COMPACT snapshot a crash lost
    follower = start()
    while follower.step():
        pass
    table = Catalog.open(warehouse).get_table(TABLE)
    expected = table_rows(table)
    counted = [] if sum(expected.values()) == written * rows_per_batch else [f"{expected} counted"]
    return fold.problems + fold.compare(expected) + counted


# --- CPU load ----------------------------------------------------------------------------------------------------


def _burn(stop: Any) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


class burning_cpu:  # a context manager, named as one
    """``with burning_cpu(processes):`` keeps ``processes`` processes busy computing, to perturb timing."""

    def __init__(self, processes: int = 1) -> None:
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._processes = [
            context.Process(target=_burn, args=(self._stop,), name=f"burn-{i}", daemon=True)
            for i in range(processes)
        ]

    def __enter__(self) -> burning_cpu:
        for process in self._processes:
            process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for process in self._processes:
            process.join(30)
            if process.is_alive():
                process.kill()
                process.join()


# --- the runs ----------------------------------------------------------------------------------------------------


@dataclass
class ChangelogTortureReport:
    runs: int = 0
    batches_written: int = 0
    changes_followed: int = 0
    follower_batches: int = 0
    writer_crashes: Counter[str] = field(default_factory=Counter)
    follower_crashes: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0


def _write_all(count: WordCount, batches: int, rng: random.Random, report: ChangelogTortureReport) -> None:
    crash_at, crash = rng.randrange(1, batches - 1), rng.choice(CRASHES_OF_WRITER)  # the last one completes
    for batch_id in range(batches):
        if batch_id == crash_at:
            count.run_batch(batch_id, crash)
            report.writer_crashes[crash] += 1
        count.run_batch(batch_id)  # after a crash: the restart replays the micro-batch
        report.batches_written += 1
        time.sleep(rng.uniform(0, 0.01))  # the trigger interval, jittered


def _follow(
    open_source: Callable[[], Source],
    fold: ChangelogFold,
    writing: threading.Thread,
    rng: random.Random,
    report: ChangelogTortureReport,
    deadline: float,
) -> None:
    checkpoint = MicroBatchCheckpoint()
    follower = MicroBatchFollower(open_source(), fold, checkpoint)
    crash_at, crash = rng.randrange(1, 6), rng.choice(CRASHES_OF_FOLLOWER)
    steps = 0
    while writing.is_alive():
        if time.monotonic() > deadline:
            raise TimeoutError("the word count did not finish in time")
        steps += 1
        if steps == crash_at:
            if follower.step(crash=crash):
                report.follower_crashes[crash] += 1
            follower = MicroBatchFollower(open_source(), fold, checkpoint)  # the restart
        else:
            follower.step()
        time.sleep(rng.uniform(0, 0.01))
    follower = MicroBatchFollower(open_source(), fold, checkpoint)  # catching up, as availableNow
    while follower.step():
        pass
    report.follower_batches += checkpoint.committed


def _run_once(
    warehouse: str,
    open_source: Callable[[Table], Source],
    seed: int,
    batches: int,
    report: ChangelogTortureReport,
    deadline: float,
) -> None:
    rng = random.Random(seed)
    table = create_word_count_table(warehouse)
    count = WordCount(warehouse, f"word-count-{seed}")
    count.run_batch(0)  # the follower starts on a table with data, as the quick start's does
    errors: list[BaseException] = []

    def guarded(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # reported by the run, with the seed
                errors.append(exc)

        return run

    writing = threading.Thread(
        target=guarded(lambda: _write_all(count, batches, random.Random(rng.random()), report)),
        name="word-count",
    )
    fold = ChangelogFold()
    follow_rng = random.Random(rng.random())
    following = threading.Thread(
        target=guarded(
            lambda: _follow(
                lambda: open_source(Catalog.open(warehouse).get_table(TABLE)),
                fold,
                writing,
                follow_rng,
                report,
                deadline,
            )
        ),
        name="follower",
    )
    writing.start()
    following.start()
    for thread in (writing, following):
        thread.join(max(1.0, deadline - time.monotonic()))
        if thread.is_alive():
            errors.append(TimeoutError(f"{thread.name} did not finish in time"))
    if errors:
        raise RuntimeError(f"run with seed {seed} failed: {errors!r}") from errors[0]
    report.changes_followed += fold.changes
    report.runs += 1
    expected = table_rows(table)
    report.problems += [f"seed {seed}: {p}" for p in fold.problems + fold.compare(expected)]
    if sum(expected.values()) != batches * count.rows_per_batch:
        report.problems.append(
            f"seed {seed}: {sum(expected.values())} counted of {batches * count.rows_per_batch}"
        )


def run_changelog_torture(
    *,
    runs: int = 8,
    batches: int = 8,
    seed: int = 0,
    burners: int = 1,
    open_source: Callable[[Table], Source] = ScanSource,
    timeout_s: float = 300,
) -> ChangelogTortureReport:
    """Run the topology ``runs`` times (each on a new table, with its own seed) beside ``burners`` processes
    burning CPU, and report what the folds found.

    Args:
        runs: tables, one after the other.
        batches: micro-batches of the word count per run (at least 3).
        seed: the first run's seed; run ``i`` uses ``seed + i`` (where the crashes happen, and the pauses).
        burners: processes computing beside the run (0: none).
        open_source: the follower's source over the table; a new one at every restart.
        timeout_s: the whole run's deadline.

    Raises:
        RuntimeError: a run failed or did not finish in time (its seed named).
    """
    report = ChangelogTortureReport()
    started = time.monotonic()
    deadline = started + timeout_s
    with tempfile.TemporaryDirectory(prefix="paimon-changelog-torture-") as root, burning_cpu(burners):
        for index in range(runs):
            warehouse = str(Path(root) / f"run-{index}")
            _run_once(warehouse, open_source, seed + index, batches, report, deadline)
    report.elapsed_s = time.monotonic() - started
    return report
