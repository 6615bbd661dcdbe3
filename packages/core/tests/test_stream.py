"""Streaming reads of append tables and batch scan-mode resolution (docs/reads.md)."""

from __future__ import annotations

import time

import pytest

from paimon_core import Catalog, Consumer, ConsumerManager, StreamPosition, StreamScan
from paimon_core.errors import ConfigError, SnapshotNotFoundError, TagNotFoundError
from paimon_core.maintenance import create_tag
from paimon_core.manifest import DataFileMeta
from paimon_core.table import Table, TableStore, plan_batch


def ids(table: TableStore, splits) -> list[int]:  # type: ignore[no-untyped-def]
    assert isinstance(table, Table)  # a stream scan keeps the handle it was given: here a Table
    return sorted(table.new_read().to_arrow(splits).column("id").to_pylist())


def read_range(scan: StreamScan, start: StreamPosition, end: StreamPosition) -> list[int]:
    return ids(scan.table, scan.plan(start, end))


def compact(table: Table) -> None:
    """A COMPACT snapshot rewriting every live file into one (rows unchanged)."""
    data = table.to_arrow()
    writer = table.new_write()
    writer.write(data)
    new = writer.prepare_commit()
    old: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in table.live_entries():
        old.setdefault((e.partition, e.bucket), []).append(e.file)
    from paimon_core.table import CommitMessage

    messages = [
        CommitMessage(
            m.partition,
            m.bucket,
            m.total_buckets,
            compact_before=tuple(old.pop((m.partition, m.bucket), ())),
            compact_after=m.new_files,
        )
        for m in new
    ]
    table.new_commit().commit(messages)


@pytest.fixture
def table(catalog: Catalog, data) -> Table:  # type: ignore[no-untyped-def]
    t = catalog.create_table("db.t", data.schema, partition_keys=["dt"])
    t.append(data.events(0, 10))  # snapshot 1
    t.append(data.events(10, 10))  # snapshot 2
    return t


def test_latest_full_reads_everything_then_only_new_appends(table: Table, data) -> None:  # type: ignore[no-untyped-def]
    scan = StreamScan(table)
    start = scan.starting_position()
    assert start == StreamPosition(2, full=True)
    end = scan.advance(start)
    assert end == StreamPosition(3)
    assert read_range(scan, start, end) == list(range(20))
    assert scan.advance(end) == end  # nothing new
    table.append(data.events(20, 5))  # snapshot 3
    end2 = scan.advance(end)
    assert read_range(scan, end, end2) == list(range(20, 25))


def test_compact_and_overwrite_snapshots_are_skipped(table: Table, data) -> None:  # type: ignore[no-untyped-def]
    scan = StreamScan(table.copy({"scan.mode": "latest"}))
    start = scan.starting_position()
    assert start == StreamPosition(3)
    compact(table)  # 3 COMPACT
    table.overwrite(data.events(100, 3))  # 4 OVERWRITE
    table.append(data.events(200, 2))  # 5 APPEND
    kinds = [s.commit_kind.value for s in table.snapshots()]
    assert kinds == ["APPEND", "APPEND", "COMPACT", "OVERWRITE", "APPEND"]
    end = scan.advance(start)
    assert end == StreamPosition(6)
    assert read_range(scan, start, end) == [200, 201]
    with_overwrite = StreamScan(
        table.copy({"scan.mode": "latest", "streaming-read-append-overwrite": "true"})
    )
    assert read_range(with_overwrite, start, end) == [100, 101, 102, 200, 201]


def test_from_snapshot_and_from_snapshot_full(table: Table, data) -> None:  # type: ignore[no-untyped-def]
    table.append(data.events(20, 5))  # 3
    delta = StreamScan(table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "2"}))
    start = delta.starting_position()
    assert start == StreamPosition(2)
    assert read_range(delta, start, delta.advance(start)) == list(range(10, 25))
    full = StreamScan(table.copy({"scan.snapshot-id": "2", "scan.mode": "from-snapshot-full"}))
    start = full.starting_position()
    assert read_range(full, start, full.advance(start)) == list(range(25))
    # default mode with scan.snapshot-id resolves to from-snapshot
    assert StreamScan(table.copy({"scan.snapshot-id": "2"})).starting_position() == StreamPosition(2)
    with pytest.raises(SnapshotNotFoundError):
        StreamScan(
            table.copy({"scan.snapshot-id": "9", "scan.mode": "from-snapshot-full"})
        ).starting_position()


def test_from_timestamp(table: Table, data) -> None:  # type: ignore[no-untyped-def]
    time.sleep(0.01)
    instant = int(time.time() * 1000)
    time.sleep(0.01)
    table.append(data.events(20, 5))  # 3
    scan = StreamScan(table.copy({"scan.timestamp-millis": str(instant)}))
    assert scan.mode == "from-timestamp"
    start = scan.starting_position()
    assert start == StreamPosition(3)
    assert read_range(scan, start, scan.advance(start)) == list(range(20, 25))
    early = StreamScan(table.copy({"scan.timestamp-millis": "1"}))
    assert early.starting_position() == StreamPosition(1)


def test_file_creation_time_filters_full_and_deltas(table: Table, data) -> None:  # type: ignore[no-untyped-def]
    time.sleep(0.01)
    instant = int(time.time() * 1000)
    time.sleep(0.01)
    table.append(data.events(20, 5))  # 3
    scan = StreamScan(table.copy({"scan.file-creation-time-millis": str(instant)}))
    assert scan.mode == "from-file-creation-time"
    start = scan.starting_position()
    assert start == StreamPosition(3, full=True)
    end = scan.advance(start)
    assert read_range(scan, start, end) == list(range(20, 25))
    table.append(data.events(30, 1))
    assert read_range(scan, end, scan.advance(end)) == [30]
    with pytest.raises(ConfigError):
        StreamScan(table.copy({"scan.mode": "from-file-creation-time"}))


def test_limits_split_ranges_by_file_and_keep_every_row_once(table: Table, data) -> None:  # type: ignore[no-untyped-def]
    table.append(data.events(20, 9))  # 3, three partitions -> three files
    scan = StreamScan(table)
    position = scan.starting_position()
    seen: list[int] = []
    steps = 0
    while True:
        end = scan.advance(position, max_files=2)
        if end == position:
            break
        files = list(scan.entries_between(position, end))
        assert 1 <= len(files) <= 2
        seen += read_range(scan, position, end)
        position = end
        steps += 1
    assert sorted(seen) == list(range(29))
    assert steps >= 3
    # a row limit smaller than any file still makes progress one file at a time
    start = scan.starting_position()
    end = scan.advance(start, max_rows=1)
    assert len(list(scan.entries_between(start, end))) == 1


def test_empty_table_streams_first_snapshot(catalog: Catalog, data) -> None:  # type: ignore[no-untyped-def]
    table = catalog.create_table("db.empty", data.schema)
    scan = StreamScan(table)
    start = scan.starting_position()
    assert start == StreamPosition(1)
    assert scan.advance(start) == start
    table.append(data.events(0, 3))
    assert read_range(scan, start, scan.advance(start)) == [0, 1, 2]


def test_consumer_progress_sets_the_start(table: Table, data) -> None:  # type: ignore[no-untyped-def]
    scan = StreamScan(table.copy({"consumer-id": "job"}))
    start = scan.starting_position()
    end = scan.advance(start)
    scan.record_progress(start)  # inside a full read: not recorded
    assert ConsumerManager(table.storage, table.path).consumer("job") is None
    scan.record_progress(end)
    assert ConsumerManager(table.storage, table.path).consumer("job") == Consumer(3)
    table.append(data.events(20, 2))
    restarted = StreamScan(table.copy({"consumer-id": "job"}))
    begin = restarted.starting_position()
    assert begin == StreamPosition(3)
    assert read_range(restarted, begin, restarted.advance(begin)) == [20, 21]
    ignoring = StreamScan(table.copy({"consumer-id": "job", "consumer.ignore-progress": "true"}))
    assert ignoring.starting_position() == StreamPosition(3, full=True)


def test_expired_snapshot_fails_the_stream(table: Table) -> None:
    scan = StreamScan(table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}))
    table.storage.delete(table.snapshot_manager.snapshot_path(1))
    with pytest.raises(SnapshotNotFoundError):
        list(scan.entries_between(StreamPosition(1), StreamPosition(3)))


def test_filter_prunes_partitions(table: Table) -> None:
    import datetime as dt

    scan = StreamScan(table, filter=[("dt", "=", dt.date(2024, 1, 2))])
    start = scan.starting_position()
    splits = scan.plan(start, scan.advance(start))
    assert ids(table, splits) == [i for i in range(20) if i % 3 == 1]


def test_position_json_round_trip() -> None:
    position = StreamPosition(7, True, 3)
    assert StreamPosition.from_json(position.to_json()) == position
    assert StreamPosition(3) < StreamPosition(3, True) < StreamPosition(3, True, 1) < StreamPosition(4)


def test_reads_by_tag_name(table: Table) -> None:
    create_tag(table, "t1", 1)
    table.append(table.to_arrow().slice(0, 0))  # an empty append changes nothing below
    assert ids(table, plan_batch(table.copy({"scan.tag-name": "t1"}))) == list(range(10))
    scan = StreamScan(table.copy({"scan.tag-name": "t1"}))  # from-snapshot: deltas starting at the tag
    start = scan.starting_position()
    assert start.snapshot_id == 1
    assert read_range(scan, start, scan.latest_position()) == list(range(20))
    with pytest.raises(TagNotFoundError):
        plan_batch(table.copy({"scan.tag-name": "missing"}))
