"""The quick start's topology in core: a word count into a ``changelog-producer = lookup`` table and a follower of
its changelog, both crashing and restarting; the folded changelog must equal the table every time
(paimon_testing.torture_changelog)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings

from paimon_testing.torture_changelog import (
    FOLLOW,
    WRITE,
    run_changelog_torture,
    run_schedule,
    schedules,
)


def test_a_follower_restarted_before_its_first_batch_ran_reads_a_whole_table(tmp_path: Path) -> None:
    """Spark keeps no start offset for a query's first batch: restarted after logging that batch's end, it asks
    the new source where the stream starts, and the table has moved on. The full read it gets must still
    bring the fold to the table (it read nothing before: 16 retractions of rows never inserted)."""
    steps = [(FOLLOW, "after-offsets"), (WRITE, None), (WRITE, None), (FOLLOW, None), (WRITE, None)]
    assert run_schedule(str(tmp_path), steps) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=schedules())
def test_every_interleaving_of_writes_crashes_and_follows_folds_to_the_table(
    tmp_path_factory: object, steps: list[tuple[str, str | None]]
) -> None:
    """Micro-batches of the word count (crashing before its commit, between its APPEND and COMPACT snapshots,
    or after its commit, then replayed) interleaved with the follower's batches (crashing after logging their
    offsets or after the sink took them, then restarted at its next step; or with a commit landing between
    planning and running a batch), one step at a time."""
    warehouse = str(tmp_path_factory.mktemp("wh"))  # type: ignore[attr-defined]
    assert run_schedule(warehouse, steps) == []


def test_the_quickstart_topology_under_cpu_load_folds_to_the_table_every_run() -> None:
    """Writer and follower in threads, each crashing and restarting once per run, beside a process burning CPU."""
    report = run_changelog_torture(runs=4, batches=8, seed=32, burners=1)
    print(report)
    assert report.problems == []
    assert report.runs == 4
    assert report.follower_batches >= report.runs  # each follower took its share
