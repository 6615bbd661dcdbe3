"""Snapshot expiration (docs/format.md#snapshot-expiration): the range, what is deleted, tags, consumers, writers, crashes."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConsumerManager
from paimon_core.compact import compact_table
from paimon_core.maintenance import expire_snapshots
from paimon_core.maintenance._expire import might_expire
from paimon_core.manifest import read_manifest_list
from paimon_core.snapshot import Snapshot
from paimon_core.table import CommitMessage, Table, live_entries, plan_batch
from paimon_core.tag import TagManager

SCHEMA = pa.schema([("id", pa.int64())])
FAR_FUTURE = "2999-01-01 00:00:00"


def _table(catalog: Catalog, name: str = "db.t", **options: str) -> Table:
    return catalog.create_table(name, SCHEMA, options={"write-only": "true", **options})


def _append(table: Table, *ids: int) -> None:
    table.append(pa.table({"id": list(ids)}, schema=SCHEMA))
    time.sleep(0.003)  # strictly increasing commit times, so time-based ranges are exact


def _ids(table: Table, snapshot_id: int | None = None) -> list[int]:
    return sorted(table.to_arrow(snapshot_id=snapshot_id).column("id").to_pylist())


def _snapshot_ids(table: Table) -> list[int]:
    return [s.id for s in table.snapshots()]


def _data_paths(table: Table, snapshot: Snapshot) -> set[str]:
    return {
        os.path.join(table.bucket_dir(e.partition, e.bucket), e.file.file_name)
        for e in live_entries(table, snapshot)
    }


def _uses(table: Table, snapshot: Snapshot) -> set[str]:
    """Every file a snapshot needs: its manifest lists, their manifests, its live data files."""
    used = _data_paths(table, snapshot)
    for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
        used.add(table.manifest_path(name))
        used.update(
            table.manifest_path(m.file_name)
            for m in read_manifest_list(table.storage, table.manifest_path(name))
        )
    return used


def _on_disk(table: Table) -> set[str]:
    return {str(p) for p in Path(table.path).rglob("*") if p.is_file()}


def _earliest_hint(table: Table) -> str:
    return (Path(table.path) / "snapshot" / "EARLIEST").read_text()


def _busy_partitioned_table(catalog: Catalog, data: Any) -> Table:
    """Appends, a partition overwrite and a compaction: deltas with ADDs and DELETEs over 3 partitions."""
    table = catalog.create_table(
        "db.events", data.schema, partition_keys=["dt"], options={"write-only": "true"}
    )
    for start in (0, 30, 60):
        table.append(data.events(start, 30))
    table.overwrite(data.events(200, 5, days=1), partition={"dt": data.events(0, 1).column("dt")[0].as_py()})
    compact_table(table.copy({"compaction.min.file-num": "2"}), progress=False)
    table.append(data.events(300, 12))
    return table


def test_expired_files_go_and_every_retained_snapshot_reads_back_whole(catalog: Catalog, data: Any) -> None:
    table = _busy_partitioned_table(catalog, data)
    snapshots = table.snapshots()
    assert len(snapshots) == 6 and {s.commit_kind.value for s in snapshots} >= {"OVERWRITE", "COMPACT"}
    rows = {s.id: data.sorted_rows(table.to_arrow(snapshot_id=s.id)) for s in snapshots}
    uses = {s.id: _uses(table, s) for s in snapshots}

    assert expire_snapshots(table, retain_max=2, retain_min=2, older_than=FAR_FUTURE) == 4

    assert _snapshot_ids(table) == [5, 6]
    for snapshot_id in (5, 6):
        assert data.sorted_rows(table.to_arrow(snapshot_id=snapshot_id)) == rows[snapshot_id]
    still_used = uses[5] | uses[6]
    only_expired = set().union(*(uses[i] for i in range(1, 5))) - still_used
    disk = _on_disk(table)
    assert still_used <= disk
    assert only_expired and not only_expired & disk  # data files and manifests of snapshots 1..4
    assert any("/bucket-0/" in p for p in only_expired) and any("/manifest/" in p for p in only_expired)
    assert not any(f"snapshot-{i}" in p for p in disk for i in range(1, 5))
    assert _earliest_hint(table) == "5"


def test_retain_min_and_max(catalog: Catalog) -> None:
    table = _table(catalog)
    for i in range(8):
        _append(table, i)
    # all snapshots are younger than the default hour: only retain-max can expire anything
    assert expire_snapshots(table, retain_min=1) == 0
    assert expire_snapshots(table, retain_min=1, retain_max=6) == 2
    assert _snapshot_ids(table) == [3, 4, 5, 6, 7, 8]
    # old enough, but retain-min keeps the newest five
    assert expire_snapshots(table, retain_min=5, older_than=FAR_FUTURE) == 1
    assert _snapshot_ids(table) == [4, 5, 6, 7, 8]
    assert _ids(table, 4) == [0, 1, 2, 3]
    table_options = table.copy({"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "2"})
    assert expire_snapshots(table_options) == 2
    assert _snapshot_ids(table) == [6, 7, 8] and _ids(table, 6) == list(range(6))


def test_time_retained_uses_the_successors_commit_time(catalog: Catalog) -> None:
    table = _table(catalog, **{"snapshot.time-retained": "10 s", "snapshot.num-retained.min": "1"})
    for i in range(5):
        _append(table, i)
    times = {s.id: s.time_millis for s in table.snapshots()}
    # snapshot 3 becomes 10 s old at this instant: 1 and 2 (successors 2 and 3 are old enough) expire
    now = times[3] + 10_000 + 1
    assert not might_expire(table, 5, now_millis=times[2] + 10_000)
    assert might_expire(table, 5, now_millis=now)
    assert expire_snapshots(table, now_millis=times[2] + 10_000) == 0
    assert expire_snapshots(table, now_millis=now) == 2
    assert _snapshot_ids(table) == [3, 4, 5]
    # older_than is the threshold itself, in any of its forms
    assert expire_snapshots(table, older_than=times[4] + 1) == 1
    assert _snapshot_ids(table) == [4, 5] and _ids(table, 4) == [0, 1, 2, 3]


def test_expire_limit(catalog: Catalog) -> None:
    table = _table(catalog, **{"snapshot.expire.limit": "2"})
    for i in range(7):
        _append(table, i)
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 2
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE, max_deletes=3) == 3
    assert _snapshot_ids(table) == [6, 7] and _earliest_hint(table) == "6"
    assert _ids(table, 6) == [0, 1, 2, 3, 4, 5]


def test_compacted_files_go_only_when_no_retained_snapshot_uses_them(catalog: Catalog) -> None:
    table = _table(catalog)
    for i in range(3):
        _append(table, i)
    small = _data_paths(table, table.snapshot_manager.snapshot(3))
    compact_table(table.copy({"compaction.min.file-num": "2"}), progress=False)  # snapshot 4 rewrites them
    _append(table, 3)
    assert table.snapshot_manager.snapshot(4).commit_kind.value == "COMPACT"
    assert len(small) == 3 and not small & _data_paths(table, table.snapshot_manager.snapshot(4))

    assert expire_snapshots(table, retain_min=3, older_than=FAR_FUTURE) == 2  # snapshot 3 still reads them
    assert small <= _on_disk(table) and _ids(table, 3) == [0, 1, 2]
    assert expire_snapshots(table, retain_min=2, older_than=FAR_FUTURE) == 1
    assert not small & _on_disk(table)
    assert _ids(table, 4) == [0, 1, 2] and _ids(table) == [0, 1, 2, 3]


def test_a_tag_keeps_the_files_of_its_expired_snapshot(catalog: Catalog) -> None:
    table = _table(catalog)
    _append(table, 0)
    _append(table, 1)
    tag = TagManager(table.storage, table.path).create("v2", table.snapshot_manager.snapshot(2))
    _append(table, 2)  # snapshot 3 adds a file the tag does not have
    after_tag = _data_paths(table, table.snapshot_manager.snapshot(3)) - _data_paths(table, tag.snapshot)
    tag_uses = _uses(table, tag.snapshot)
    table.overwrite(pa.table({"id": [9]}, schema=SCHEMA))  # snapshot 4 deletes all three files
    # a tag on the deleting snapshot has none of them: it must not hide the earlier tag
    TagManager(table.storage, table.path).create("v4", table.snapshot_manager.snapshot(4))
    _append(table, 10)

    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 4
    assert _snapshot_ids(table) == [5]
    disk = _on_disk(table)
    assert tag_uses <= disk  # manifest lists, manifests and data files of the tag
    assert len(after_tag) == 1 and not after_tag & disk
    tagged = table.copy({"scan.tag-name": "v2"})
    assert sorted(table.new_read().to_arrow(plan_batch(tagged)).column("id").to_pylist()) == [0, 1]
    assert _ids(table) == [9, 10]


def test_a_tag_between_expired_snapshots_keeps_its_manifests(catalog: Catalog) -> None:
    table = _table(catalog)
    for i in range(3):
        _append(table, i)
    tagged = table.snapshot_manager.snapshot(2)
    TagManager(table.storage, table.path).create("middle", tagged)
    tag_uses = _uses(table, tagged)
    expired_only = _uses(table, table.snapshot_manager.snapshot(1)) - tag_uses
    for i in range(3, 5):
        _append(table, i)
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 4
    disk = _on_disk(table)
    assert tag_uses <= disk and expired_only and not expired_only & disk
    reader = table.copy({"scan.tag-name": "middle"})
    assert sorted(table.new_read().to_arrow(plan_batch(reader)).column("id").to_pylist()) == [0, 1]


def test_a_consumer_bounds_expiration(catalog: Catalog) -> None:
    table = _table(catalog)
    for i in range(6):
        _append(table, i)
    consumers = ConsumerManager(table.storage, table.path)
    consumers.reset_to("reader", 3)
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 2
    assert _snapshot_ids(table) == [3, 4, 5, 6] and _ids(table, 3) == [0, 1, 2]
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 0
    consumers.reset_to("reader", 5)
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 2
    assert _snapshot_ids(table) == [5, 6]


def test_default_writers_expire_after_commits_and_write_only_writers_never(catalog: Catalog) -> None:
    options = {"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms"}
    busy = catalog.create_table("db.busy", SCHEMA, options=options)
    quiet = catalog.create_table("db.quiet", SCHEMA, options={**options, "write-only": "true"})
    for i in range(5):
        _append(busy, i)
        _append(quiet, i)
    assert _snapshot_ids(quiet) == [1, 2, 3, 4, 5]
    assert not (Path(quiet.path) / "snapshot" / "EARLIEST").exists()
    latest = busy.snapshot_manager.latest_id()
    assert latest is not None and latest >= 5  # the default writer also compacts inline
    assert _snapshot_ids(busy) == [latest - 1, latest] and _earliest_hint(busy) == str(latest - 1)
    assert _ids(busy, latest - 1) and _ids(busy) == _ids(quiet) == [0, 1, 2, 3, 4]
    assert len(list(Path(busy.path, "manifest").iterdir())) < len(
        list(Path(quiet.path, "manifest").iterdir())
    )


def test_a_failed_expiration_never_fails_the_commit(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    table = catalog.create_table(
        "db.t", SCHEMA, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}
    )
    _append(table, 0)
    tag_dir = Path(table.path) / "tag"
    tag_dir.mkdir()
    (tag_dir / "tag-broken").write_text("not json")
    with caplog.at_level(logging.WARNING, logger="paimon_core.table.commit._api"):
        _append(table, 1)
    assert _snapshot_ids(table) == [1, 2] and _ids(table) == [0, 1]
    assert any("the work after a commit to db.t" in r.getMessage() for r in caplog.records)


def test_rerun_after_an_interrupted_run_finishes_the_job(catalog: Catalog, data: Any) -> None:
    table = _busy_partitioned_table(catalog, data)
    snapshots = table.snapshots()
    uses = {s.id: _uses(table, s) for s in snapshots}
    rows = {s.id: data.sorted_rows(table.to_arrow(snapshot_id=s.id)) for s in snapshots}
    only_expired = set().union(*(uses[i] for i in range(1, 5))) - uses[5] - uses[6]
    data_files = sorted(p for p in only_expired if "/manifest/" not in p)
    assert len(data_files) >= 4
    for path in data_files[::2]:  # a crash while the data files went
        os.remove(path)

    assert expire_snapshots(table, retain_max=2, retain_min=2, older_than=FAR_FUTURE) == 4
    assert _snapshot_ids(table) == [5, 6] and _earliest_hint(table) == "5"
    assert not set(only_expired) & _on_disk(table)
    assert (uses[5] | uses[6]) <= _on_disk(table)
    assert all(data.sorted_rows(table.to_arrow(snapshot_id=i)) == rows[i] for i in (5, 6))


def test_rerun_after_the_metadata_of_expired_snapshots_went(catalog: Catalog) -> None:
    table = _table(catalog)
    for i in range(4):
        _append(table, i)
    table.overwrite(pa.table({"id": [7]}, schema=SCHEMA))
    uses = {s.id: _uses(table, s) for s in table.snapshots()}
    gone = set().union(*(uses[i] for i in range(1, 5))) - uses[5]
    # a crash in the last phase: all files went, and snapshot-1 too, but EARLIEST was not written
    for path in [*gone, table.snapshot_manager.snapshot_path(1)]:
        os.remove(path)
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 3
    assert _snapshot_ids(table) == [5] and _ids(table) == [7]
    assert uses[5] <= _on_disk(table)


def test_extra_files_and_external_paths_are_deleted_with_their_data_file(
    catalog: Catalog, tmp_path: Path
) -> None:
    table = _table(catalog)
    writer = table.new_write()
    writer.write(pa.table({"id": [1, 2]}, schema=SCHEMA))
    (message,) = writer.prepare_commit()
    (local,) = message.new_files
    directory = Path(table.bucket_dir(message.partition, message.bucket))
    (directory / f"{local.file_name}.index").write_bytes(b"file index")
    external_dir = tmp_path / "external"
    external_dir.mkdir()
    writer = table.new_write()
    writer.write(pa.table({"id": [3]}, schema=SCHEMA))
    (message_2,) = writer.prepare_commit()
    (moved,) = message_2.new_files
    external = external_dir / moved.file_name
    os.replace(directory / moved.file_name, external)
    (external_dir / f"{moved.file_name}.index").write_bytes(b"file index")
    files = (
        local.copy(extra_files=(f"{local.file_name}.index",)),
        moved.copy(external_path=str(external), extra_files=(f"{moved.file_name}.index",)),
    )
    table.new_commit().commit([dataclasses.replace(message, new_files=files)])
    assert _ids(table) == [1, 2, 3]
    table.overwrite(pa.table({"id": [4]}, schema=SCHEMA))
    doomed = {
        directory / local.file_name,
        directory / f"{local.file_name}.index",
        external,
        external_dir / f"{moved.file_name}.index",
    }
    assert all(p.exists() for p in doomed)
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 1
    assert not any(p.exists() for p in doomed) and _ids(table) == [4]


def test_clean_empty_directories(catalog: Catalog, data: Any) -> None:
    table = catalog.create_table(
        "db.events",
        data.schema,
        partition_keys=["dt"],
        options={"write-only": "true", "snapshot.clean-empty-directories": "true"},
    )
    table.append(data.events(0, 6, days=2))
    partitions = sorted(p.name for p in Path(table.path).glob("dt=*"))
    table.overwrite(data.events(10, 2, days=1), partition={})  # one partition only
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 1
    assert len(partitions) == 2 and sorted(p.name for p in Path(table.path).glob("dt=*")) == partitions[:1]
    assert data.sorted_rows(table.to_arrow()) == data.sorted_rows(data.events(10, 2, days=1))


def test_expiring_while_a_writer_commits_loses_nothing(catalog: Catalog) -> None:
    table = _table(catalog)
    _append(table, 0)
    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(1, 16):
                table.append(pa.table({"id": [i]}, schema=SCHEMA))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=write)
    thread.start()
    expired = 0
    while not done.is_set():
        expired += expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE)
    thread.join()
    assert not errors
    expired += expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE)
    assert expired == 15 and _snapshot_ids(table) == [16]
    assert _ids(table) == list(range(16))
    assert _uses(table, table.snapshot_manager.snapshot(16)) <= _on_disk(table)


def test_nothing_to_expire_writes_the_earliest_hint_once(catalog: Catalog) -> None:
    table = _table(catalog)
    _append(table, 0)
    assert not (Path(table.path) / "snapshot" / "EARLIEST").exists()
    assert expire_snapshots(table) == 0
    assert _earliest_hint(table) == "1"


def test_a_file_deleted_and_re_added_in_one_delta_stays(catalog: Catalog) -> None:
    table = _table(catalog)
    _append(table, 0)
    (entry,) = table.live_entries()
    upgraded = CommitMessage(
        entry.partition,
        entry.bucket,
        entry.total_buckets,
        compact_before=(entry.file,),
        compact_after=(entry.file.copy(level=1),),
    )
    table.new_commit().commit([upgraded])  # snapshot 2: the same file moves up a level, as Java's upgrades do
    _append(table, 1)
    path = _data_paths(table, table.snapshot_manager.snapshot(1))
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 2
    assert path <= _on_disk(table) and _ids(table) == [0, 1]
