"""The quick start's topology through the ``paimon`` stream reader: driven without a JVM as Spark's micro-batch
engine drives it (paimon_testing.torture_changelog), and once on Spark.

The reader is what Spark's engine calls in its Python worker: ``initialOffset`` (twice for the first batch),
``latestOffset``, ``partitions``, ``read``, ``commit``. Driving it directly makes the interleavings that a loaded
machine makes by chance (a commit between planning and running a batch, a restart before the first batch
committed) happen every time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from pyspark.sql.streaming.datasource import ReadAllAvailable

from paimon_core.table import Table
from paimon_spark._read import PaimonStreamReader
from paimon_spark._source import PaimonDataSource
from paimon_testing.torture_changelog import (
    FOLLOW,
    TABLE,
    WRITE_WHILE_PLANNED,
    ChangelogFold,
    WordCount,
    create_word_count_table,
    run_changelog_torture,
    run_schedule,
    schedules,
    table_rows,
)


class ReaderSource:
    """The ``paimon`` data source's stream reader (``read.changelog``) as a source of the follower."""

    def __init__(self, table: Table, **options: str) -> None:
        warehouse = str(Path(table.path).parent.parent)
        source = PaimonDataSource(
            {"table": TABLE, "warehouse": warehouse, "read.changelog": "true", **options}
        )
        reader = source.streamReader(source.schema())
        assert isinstance(reader, PaimonStreamReader)
        self.reader = reader

    def initial_offset(self) -> dict[str, Any]:
        return self.reader.initialOffset()

    def latest_offset(self, start: dict[str, Any]) -> dict[str, Any]:
        return self.reader.latestOffset(start, ReadAllAvailable())

    def read(self, start: dict[str, Any], end: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        for partition in self.reader.partitions(start, end):
            yield from self.reader.read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        self.reader.commit(end)


@pytest.mark.parametrize("mode", ["latest-full", "latest"])
def test_the_start_of_a_stream_stays_where_it_was_first_resolved(tmp_path: Path, mode: str) -> None:
    """Spark asks ``initialOffset`` when it plans the first batch and again when it runs it: a commit between
    the two must not move the start past the planned end (the quick start lost its starting read so)."""
    warehouse = str(tmp_path)
    table = create_word_count_table(warehouse)
    count = WordCount(warehouse, "word-count", 64)
    count.run_batch(0)
    source = ReaderSource(table, **{"scan.mode": mode})
    start = source.initial_offset()
    end = source.latest_offset(start)
    count.run_batch(1)
    assert source.initial_offset() == start
    assert source.latest_offset(start) != end  # the commit is there to be read


def test_a_commit_between_planning_and_running_the_first_batch_loses_nothing(tmp_path: Path) -> None:
    steps = [(FOLLOW, WRITE_WHILE_PLANNED), (FOLLOW, None), (FOLLOW, "after-offsets"), (FOLLOW, None)]
    assert run_schedule(str(tmp_path), steps, ReaderSource) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=schedules(max_steps=8))
def test_every_interleaving_through_the_spark_reader_folds_to_the_table(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str | None]]
) -> None:
    assert run_schedule(str(tmp_path_factory.mktemp("wh")), steps, ReaderSource) == []


def test_the_quickstart_topology_through_the_spark_reader_under_cpu_load() -> None:
    report = run_changelog_torture(runs=2, batches=6, seed=14, burners=1, open_source=ReaderSource)
    assert report.problems == []
    assert report.runs == 2


def test_the_quickstart_topology_on_spark(spark: Any, tmp_path: Path) -> None:
    """A Spark query follows the changelog while the word count commits (its first batch planned and run as
    commits land), then is restarted from its checkpoint and catches up: its fold equals the table."""
    warehouse, checkpoint = str(tmp_path / "wh"), str(tmp_path / "checkpoint")
    table = create_word_count_table(warehouse)
    count = WordCount(warehouse, "word-count", 64)
    count.run_batch(0)
    fold = ChangelogFold()

    def sink(changes: Any, batch_id: int) -> None:
        fold(batch_id, changes.toArrow().to_batches())

    def follow() -> None:
        changes = (
            spark.readStream.format("paimon").option("warehouse", warehouse).option("read.changelog", "true")
        )
        query = (
            changes.load(TABLE)
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()

    writer = threading.Thread(target=lambda: [count.run_batch(b) for b in range(1, 6)], name="word-count")
    writer.start()
    follow()
    writer.join(300)
    assert not writer.is_alive(), "the word count did not finish in time"
    follow()  # the restart
    assert fold.problems == []
    assert fold.compare(table_rows(table)) == []
