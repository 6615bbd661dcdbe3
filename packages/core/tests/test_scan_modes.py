"""The scan modes that choose their own snapshot, as Java Paimon's starting scanners do: ``compacted-full``,
``latest-delta`` and ``from-creation-timestamp`` (docs/reads.md), each judged by the table's own time travel
or by what the snapshots wrote."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConfigError
from paimon_core.compact import compact_table
from paimon_core.snapshot import CommitKind
from paimon_core.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _rows(data: pa.Table) -> list[tuple[int, str]]:
    return sorted(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))


def _batch(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _streamed(table: Table) -> list[tuple[int, str]]:
    batches = list(table.stream(follow=False))
    if not batches:
        return []
    data = pa.Table.from_batches(batches)
    return _rows(data.drop_columns([c for c in data.column_names if c == "rowkind"]))


def _kinds(table: Table) -> list[CommitKind]:
    return [s.commit_kind for s in table.snapshot_manager.snapshots()]


@pytest.fixture()
def compacted(catalog: Catalog) -> Table:
    """A primary-key table: two appends, a compaction, then two more appends (one an update)."""
    table = catalog.create_table(
        "db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"}
    )
    table.append(_batch([1, 2], "a"))
    table.append(_batch([3], "b"))
    compact_table(table)
    table.append(_batch([2, 4], "c"))
    table.append(_batch([5], "d"))
    return table


def test_compacted_full_reads_the_newest_compact_snapshot(catalog: Catalog, compacted: Table) -> None:
    kinds = _kinds(compacted)
    assert kinds.count(CommitKind.COMPACT) == 1
    compact_id = kinds.index(CommitKind.COMPACT) + 1
    table = catalog.get_table("db.pk", **{"scan.mode": "compacted-full"})
    assert _rows(table.to_arrow()) == _rows(compacted.to_arrow(snapshot_id=compact_id))
    assert _rows(table.to_arrow()) != _rows(compacted.to_arrow())  # not the latest


def test_compacted_full_streams_the_compacted_snapshot_then_the_changes(
    catalog: Catalog, compacted: Table
) -> None:
    table = catalog.get_table("db.pk", **{"scan.mode": "compacted-full"})
    # the compacted state (1, 2, 3 from a and b), then the new files of the two appends as written
    expected = sorted([(1, "a1"), (2, "a2"), (3, "b3"), (2, "c2"), (4, "c4"), (5, "d5")])
    assert _streamed(table) == expected


def test_compacted_full_without_a_compaction_reads_the_latest(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})
    assert table.copy({"scan.mode": "compacted-full"}).to_arrow().num_rows == 0  # empty table
    table.append(_batch([1], "a"))
    table.append(_batch([2], "b"))
    assert _rows(table.copy({"scan.mode": "compacted-full"}).to_arrow()) == [(1, "a1"), (2, "b2")]


def test_compacted_full_with_delta_commits_takes_only_a_full_compaction(catalog: Catalog) -> None:
    """With ``full-compaction.delta-commits``, a COMPACT snapshot counts only when its commit identifier is a
    multiple of it (Java's ``isFullCompactedIdentifier``): a streaming writer compacts under its checkpoint's
    identifier."""
    options = {"bucket": "1", "num-sorted-run.compaction-trigger": "2"}
    table = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options=options)
    committer = table.new_commit("stream")
    for identifier in range(1, 8):
        writer = table.new_write()
        writer.write(_batch([1, identifier], f"i{identifier}-"))
        committer.commit(writer.prepare_commit(), identifier)
        writer.close()
    by_identifier = {
        s.commit_identifier: s.id for s in table.snapshots() if s.commit_kind == CommitKind.COMPACT
    }
    assert len(by_identifier) >= 3, by_identifier  # compactions under several identifiers
    for every in (1, 2, 3, 5):
        full = [i for i in by_identifier if i % every == 0]
        expected = by_identifier[max(full)] if full else table.latest_snapshot().id  # type: ignore[union-attr]
        reader = table.copy({"scan.mode": "compacted-full", "full-compaction.delta-commits": str(every)})
        assert _rows(reader.to_arrow()) == _rows(table.to_arrow(snapshot_id=expected)), (every, expected)
        assert reader.scan().plan()[0].snapshot_id == expected


def test_latest_delta_reads_only_what_the_latest_append_wrote(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})
    reader = catalog.get_table("db.t", **{"scan.mode": "latest-delta"})
    assert reader.to_arrow().num_rows == 0  # no snapshot yet
    table.append(_batch([1, 2], "a"))
    assert _rows(catalog.get_table("db.t", **{"scan.mode": "latest-delta"}).to_arrow()) == [
        (1, "a1"),
        (2, "a2"),
    ]
    table.append(_batch([3], "b"))
    assert _rows(catalog.get_table("db.t", **{"scan.mode": "latest-delta"}).to_arrow()) == [(3, "b3")]
    table.overwrite(_batch([9], "c"))  # an OVERWRITE latest: nothing, as Java
    assert catalog.get_table("db.t", **{"scan.mode": "latest-delta"}).to_arrow().num_rows == 0


def test_latest_delta_of_a_primary_key_table_reads_data_files_not_changelog(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.pk",
        SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "lookup", "write-only": "true"},
    )
    table.append(_batch([1, 2], "a"))
    table.append(_batch([2, 3], "b"))
    reader = catalog.get_table("db.pk", **{"scan.mode": "latest-delta"})
    assert _rows(reader.to_arrow()) == [(2, "b2"), (3, "b3")]
    compact_table(table)  # a COMPACT latest: nothing
    assert catalog.get_table("db.pk", **{"scan.mode": "latest-delta"}).to_arrow().num_rows == 0


def test_latest_delta_is_refused_for_a_stream(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_batch([1], "a"))
    with pytest.raises(ConfigError, match="not supported for streaming reads"):
        next(iter(table.copy({"scan.mode": "latest-delta"}).stream(follow=False)))


@pytest.fixture()
def timed(catalog: Catalog) -> dict[str, Any]:
    """Append 1, append 2, overwrite with 3, append 4, each a few ms apart; their commit times."""
    table = catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})
    times = []
    for step, ids in enumerate([[1], [2], [3], [4]]):
        table.overwrite(_batch(ids, "x")) if step == 2 else table.append(_batch(ids, "x"))
        times.append(table.latest_snapshot().time_millis)  # type: ignore[union-attr]
        time.sleep(0.02)
    return {"table": table, "times": times}


def _from_creation(table: Table, millis: int) -> Table:
    return table.copy({"scan.mode": "from-creation-timestamp", "scan.creation-time-millis": str(millis)})


def test_from_creation_timestamp_starts_at_the_first_snapshot_since_the_instant(
    timed: dict[str, Any],
) -> None:
    table, times = timed["table"], timed["times"]
    for index in range(1, 4):  # the instant of snapshot index + 1: that snapshot, whole
        reader = _from_creation(table, times[index])
        assert _rows(reader.to_arrow()) == _rows(table.to_arrow(snapshot_id=index + 1))
    # a stream from snapshot 2 on: 2 appended x2, the overwrite (3) is skipped, 4 appended x4
    assert _streamed(_from_creation(table, times[1])) == [(2, "x2"), (4, "x4")]


def test_from_creation_timestamp_with_no_snapshot_to_start_from_filters_by_file_age(
    timed: dict[str, Any],
) -> None:
    table, times = timed["table"], timed["times"]
    latest = _rows(table.to_arrow())
    before_all = _from_creation(table, times[0] - 60_000)  # before the earliest: the latest, every file
    assert _rows(before_all.to_arrow()) == latest == [(3, "x3"), (4, "x4")]
    assert _streamed(before_all) == latest
    after_all = _from_creation(table, times[3] + 60_000)  # after the latest: no file is that young
    assert after_all.to_arrow().num_rows == 0
    assert _streamed(after_all) == []


def test_from_creation_timestamp_needs_its_instant(timed: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"scan\.creation-time-millis"):
        timed["table"].copy({"scan.mode": "from-creation-timestamp"}).to_arrow()
