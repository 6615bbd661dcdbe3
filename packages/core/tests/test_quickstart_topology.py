"""The quick start's topology in core: a word count into a ``changelog-producer = lookup`` table and a follower of
its changelog, both crashing and restarting; the folded changelog must equal the table every time
(paimon_testing.torture_changelog)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.table import Table
from paimon_testing.torture_changelog import (
    CRASHES_OF_FOLLOWER,
    CRASHES_OF_WRITER,
    TABLE,
    ChangelogFold,
    MicroBatchCheckpoint,
    MicroBatchFollower,
    ScanSource,
    WordCount,
    create_word_count_table,
    run_changelog_torture,
    table_rows,
)

ROWS = 64  # per micro-batch: 16 words, most of them in every batch


def follow_to_the_end(warehouse: str, fold: ChangelogFold, checkpoint: MicroBatchCheckpoint) -> None:
    follower = MicroBatchFollower(ScanSource(open_table(warehouse)), fold, checkpoint)
    while follower.step():
        pass


def open_table(warehouse: str) -> Table:
    return Catalog.open(warehouse).get_table(TABLE)


def assert_followed(warehouse: str, fold: ChangelogFold) -> None:
    assert fold.problems == []
    assert fold.compare(table_rows(open_table(warehouse))) == []


def test_a_follower_restarted_before_its_first_batch_ran_reads_a_whole_table(tmp_path: Path) -> None:
    """Spark keeps no start offset for a query's first batch: restarted after logging that batch's end, it asks
    the new source where the stream starts, and the table has moved on. The full read it gets must still
    bring the fold to the table (it read nothing before: 16 retractions of rows never inserted)."""
    warehouse = str(tmp_path)
    create_word_count_table(warehouse)
    count = WordCount(warehouse, "word-count", ROWS)
    count.run_batch(0)
    fold, checkpoint = ChangelogFold(), MicroBatchCheckpoint()
    follower = MicroBatchFollower(ScanSource(open_table(warehouse)), fold, checkpoint)
    assert follower.step(crash="after-offsets")
    count.run_batch(1)
    count.run_batch(2)
    follow_to_the_end(warehouse, fold, checkpoint)  # the restart runs batch 0 first
    count.run_batch(3)
    follow_to_the_end(warehouse, fold, checkpoint)
    assert_followed(warehouse, fold)
    assert len(fold.rows) == 16


WRITE = st.tuples(st.just("write"), st.sampled_from((None, *CRASHES_OF_WRITER)))
FOLLOW = st.tuples(st.just("follow"), st.sampled_from((None, "write-while-planned", *CRASHES_OF_FOLLOWER)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.one_of(WRITE, FOLLOW), min_size=2, max_size=10))
def test_every_interleaving_of_writes_crashes_and_follows_folds_to_the_table(
    tmp_path_factory: object, steps: list[tuple[str, str | None]]
) -> None:
    """Micro-batches of the word count (crashing before its commit, between its APPEND and COMPACT snapshots,
    or after its commit, then replayed) interleaved with the follower's batches (crashing after logging their
    offsets or after the sink took them, then restarted at its next step; or with a commit landing between
    planning and running a batch), one step at a time."""
    warehouse = str(tmp_path_factory.mktemp("wh"))  # type: ignore[attr-defined]
    create_word_count_table(warehouse)
    count = WordCount(warehouse, "word-count", ROWS)
    count.run_batch(0)
    written = 1
    fold, checkpoint = ChangelogFold(), MicroBatchCheckpoint()
    follower: MicroBatchFollower | None = None  # down until its next step (a crash leaves it down)

    def write(crash: str | None = None) -> None:
        nonlocal written
        count.run_batch(written, crash)
        if crash is not None:
            count.run_batch(written)  # the restart replays the micro-batch
        written += 1

    for action, how in steps:
        if action == "write":
            write(how)
            continue
        if follower is None:  # (re)started: it first runs a batch it logged but did not commit
            follower = MicroBatchFollower(ScanSource(open_table(warehouse)), fold, checkpoint)
        if how == "write-while-planned":
            follower.step(planned=write)
        else:
            follower.step(crash=how)
            if how is not None:
                follower = None
    write()  # a micro-batch that completes: its compaction writes the changes a lost COMPACT left behind
    follow_to_the_end(warehouse, fold, checkpoint)
    assert_followed(warehouse, fold)
    assert sum(table_rows(open_table(warehouse)).values()) == written * ROWS


def test_the_quickstart_topology_under_cpu_load_folds_to_the_table_every_run() -> None:
    """Writer and follower in threads, each crashing and restarting once per run, beside a process burning CPU."""
    report = run_changelog_torture(runs=4, batches=8, seed=32, burners=1)
    print(report)
    assert report.problems == []
    assert report.runs == 4
    assert report.follower_batches >= report.runs  # each follower took its share
