"""A replayed overwrite whose snapshot expired after a primary-key compaction moved its files up a level.

Found by the primary-key state machine of paimon-testing (a restarted overwriter retried its landed
commit; the OVERWRITE landed twice). A compaction that only changes a file's level keeps its name, so the
overwrite's files are live under the same names: the replay must be recognised by them, never published
again (which would delete what later commits added to the partition).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import CompactJob
from paimon_core.maintenance import expire_snapshots
from paimon_core.snapshot import CommitKind
from paimon_core.table import CommitMessage, Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("p", pa.string(), nullable=False),
        pa.field("v", pa.int64()),
    ]
)


def _table(tmp_path: Path) -> Table:
    catalog = Catalog.open(str(tmp_path / "warehouse"), create=True)
    catalog.create_database("db")
    options = {"bucket": "1", "write-only": "true"}
    return catalog.create_table(
        "db.t", SCHEMA, partition_keys=["p"], primary_keys=["id", "p"], options=options
    )


def _write(table: Table, key: int) -> list[CommitMessage]:
    writer = table.new_write()
    writer.write(pa.table({"id": [key], "p": ["a"], "v": [key * 10]}, schema=SCHEMA))
    return writer.prepare_commit()


@pytest.mark.parametrize("partition", [{"p": "a"}, {}])
def test_replayed_overwrite_with_upgraded_files_is_not_published_again(
    tmp_path: Path, partition: dict[str, str]
) -> None:
    table = _table(tmp_path)
    messages = _write(table, 1)
    assert table.new_commit("overwriter").overwrite(messages, partition, commit_identifier=2) == [1]
    tasks = CompactJob(table).plan()
    table.new_commit("compactor").commit([task.run(table) for task in tasks], 1)
    upgraded = [(e.file.file_name, e.file.level) for e in table.live_entries()]
    assert upgraded == [(messages[0].new_files[0].file_name, 5)]  # same file, moved up: not rewritten
    assert table.new_commit("appender").commit(_write(table, 2), 1) == [3]
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=dt.datetime(2999, 1, 1))
    assert [s.id for s in table.snapshots()] == [3]  # the overwrite's snapshot expired

    # A restarted overwriter replays its landed commit: recognised by its live files, nothing published.
    assert table.new_commit("overwriter").overwrite(messages, partition, commit_identifier=2) == []
    assert [s.commit_kind for s in table.snapshots()] == [CommitKind.APPEND]
    assert sorted(table.to_arrow(["id"]).column("id").to_pylist()) == [1, 2]  # the later append stays


def test_overwrite_with_unknown_outcome_then_upgraded_and_expired_is_not_published_again(
    tmp_path: Path,
) -> None:
    """The same inside one commit call: its publish times out after landing, and before it looks again its
    files move up a level, a later append lands and its snapshot expires."""
    from paimon_testing.faults import Fault, FaultPlan, FaultyStorage

    clean = _table(tmp_path)
    plan = FaultPlan()
    table = clean.with_storage(FaultyStorage(clean.storage, plan))
    messages = _write(table, 1)

    def compact_append_and_expire() -> None:
        tasks = CompactJob(clean).plan()
        clean.new_commit("compactor").commit([task.run(clean) for task in tasks], 1)
        clean.new_commit("appender").commit(_write(clean, 2), 1)
        expire_snapshots(clean, retain_max=1, retain_min=1, older_than=dt.datetime(2999, 1, 1))

    plan.arm(
        Fault.TIMEOUT_AFTER,
        ops={"write_if_absent"},
        path_contains="/snapshot/snapshot-1",
        callback=compact_append_and_expire,
    )
    assert table.new_commit("overwriter").overwrite(messages, {"p": "a"}, commit_identifier=2) == []
    assert [s.commit_kind for s in clean.snapshots()] == [CommitKind.APPEND]
    assert sorted(clean.to_arrow(["id"]).column("id").to_pylist()) == [1, 2]
