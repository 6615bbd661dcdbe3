"""Maintenance: snapshot expiration, tags and rollback, orphan file removal (docs/format.md#maintenance)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConsumerManager
from paimon_core.compact import compact_table
from paimon_core.errors import ConfigError, SnapshotNotFoundError, TagAlreadyExistsError, TagNotFoundError
from paimon_core.maintenance import (
    create_tag,
    delete_tag,
    expire_snapshots,
    remove_orphan_files,
    rollback_to,
)
from paimon_core.table import Table, plan_batch
from paimon_core.tag import TagManager

SCHEMA = pa.schema([("id", pa.int64())])
FAR_FUTURE = "2999-01-01 00:00:00"


def _table(catalog: Catalog, appends: int, **options: str) -> Table:
    table = catalog.create_table("db.t", SCHEMA, options={"write-only": "true", **options})
    for i in range(appends):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))
    return table


def _ids(table: Table, snapshot_id: int | None = None) -> list[int]:
    return sorted(table.to_arrow(snapshot_id=snapshot_id).column("id").to_pylist())


def _files(table: Table) -> set[str]:
    return {str(p) for p in Path(table.path).rglob("*") if p.is_file()}


def test_expire_keeps_retained_snapshots_whole_and_deletes_the_rest(catalog: Catalog) -> None:
    table = _table(catalog, appends=3)
    compact_table(table.copy({"compaction.min.file-num": "2"}), progress=False)  # snapshot 4 rewrites 1..3
    table.append(pa.table({"id": [3]}, schema=SCHEMA))  # snapshot 5
    before = _files(table)
    assert expire_snapshots(table, retain_max=2, retain_min=2, older_than=FAR_FUTURE) == 3
    assert [s.id for s in table.snapshots()] == [4, 5]
    assert table.snapshot_manager.earliest_id() == 4
    assert _ids(table, 4) == [0, 1, 2] and _ids(table) == [0, 1, 2, 3]
    gone = before - _files(table)
    # the three small files that the compaction replaced, their manifests, and snapshots 1..3
    assert len([p for p in gone if "/bucket-0/" in p]) == 3
    assert {Path(p).name for p in gone if "/snapshot/" in p} == {"snapshot-1", "snapshot-2", "snapshot-3"}
    assert any("/manifest/" in p for p in gone)
    assert expire_snapshots(table, retain_max=2, retain_min=2, older_than=FAR_FUTURE) == 0


def test_expire_respects_retain_min_time_limit_and_consumers(catalog: Catalog) -> None:
    table = _table(catalog, appends=6)
    # all snapshots are younger than an hour: the default time-retained keeps them
    assert expire_snapshots(table, retain_min=1) == 0
    assert expire_snapshots(table, retain_min=5, older_than=FAR_FUTURE) == 1
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE, max_deletes=2) == 2
    ConsumerManager(table.storage, table.path).reset_to("reader", 5)
    assert expire_snapshots(table, retain_min=1, older_than=FAR_FUTURE) == 1  # 4 goes, 5 is to be read
    assert [s.id for s in table.snapshots()] == [5, 6]
    assert _ids(table, 5) == [0, 1, 2, 3, 4]
    with pytest.raises(ConfigError):
        expire_snapshots(table, retain_min=3, retain_max=2)


def test_tagged_files_survive_expiration_and_read_back(catalog: Catalog) -> None:
    table = _table(catalog, appends=2)
    create_tag(table, "first", 1)
    table.overwrite(pa.table({"id": [9]}, schema=SCHEMA))  # snapshot 3 deletes the files of 1 and 2
    assert expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE) == 2
    assert [s.id for s in table.snapshots()] == [3]
    tagged = table.copy({"scan.tag-name": "first"})
    assert sorted(table.new_read().to_arrow(plan_batch(tagged)).column("id").to_pylist()) == [0]
    assert _ids(table) == [9]


def test_default_writers_expire_and_write_only_writers_do_not(catalog: Catalog) -> None:
    options = {"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms"}
    busy = catalog.create_table("db.busy", SCHEMA, options=options)
    quiet = catalog.create_table("db.quiet", SCHEMA, options={**options, "write-only": "true"})
    for i in range(5):
        for table in (busy, quiet):
            table.append(pa.table({"id": [i]}, schema=SCHEMA))
            time.sleep(0.002)
    assert len(quiet.snapshots()) == 5
    assert 2 <= len(busy.snapshots()) < 5
    assert _ids(busy) == _ids(quiet) == [0, 1, 2, 3, 4]


def test_tags_create_list_delete(catalog: Catalog) -> None:
    table = _table(catalog, appends=2)
    tag = create_tag(table, "v1", time_retained="1 d")
    assert tag.snapshot.id == 2
    text = (Path(table.path) / "tag" / "tag-v1").read_text()
    assert '"tagCreateTime"' in text and '"tagTimeRetained" : 86400.0' in text
    create_tag(table, "v0", 1)
    assert '"tagCreateTime"' not in (Path(table.path) / "tag" / "tag-v0").read_text()
    with pytest.raises(TagAlreadyExistsError):
        create_tag(table, "v1")
    for bad in ("", " ", "a/b", "12"):
        with pytest.raises(ConfigError):
            create_tag(table, bad)
    with pytest.raises(SnapshotNotFoundError):
        create_tag(table, "v9", 9)
    assert [t.name for t in TagManager(table.storage, table.path).tags()] == ["v0", "v1"]
    assert delete_tag(table, "v0,missing") == ["v0"]


def test_deleting_the_last_tag_of_an_expired_snapshot_deletes_what_only_it_kept(catalog: Catalog) -> None:
    table = _table(catalog, appends=3)  # snapshots 1..3 add the files of ids 0, 1, 2
    before = _files(table)
    create_tag(table, "live", 3)
    assert delete_tag(table, "live") == ["live"]
    assert _files(table) == before  # its snapshot exists: the tag file is all that goes
    create_tag(table, "one", 1)
    create_tag(table, "two", 2)
    create_tag(table, "two-again", 2)
    table.overwrite(pa.table({"id": [9]}, schema=SCHEMA))  # snapshot 4 deletes the three files
    assert expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE) == 3

    def data() -> set[str]:
        return {p for p in _files(table) if "/bucket-0/" in p}

    kept = data()  # ids 0 and 1 (kept by the tags) and 9
    assert len(kept) == 3
    delete_tag(table, "two")
    assert data() == kept  # "two-again" still keeps snapshot 2
    delete_tag(table, "two-again")
    assert len(kept - data()) == 1  # the file of id 1; id 0's file is tag "one"'s too
    tagged = table.copy({"scan.tag-name": "one"})
    assert table.new_read().to_arrow(plan_batch(tagged)).column("id").to_pylist() == [0]
    delete_tag(table, "one")
    assert len(data()) == 1 and _ids(table) == [9]
    # nothing is left that no snapshot or tag uses: orphan removal has nothing to do, even for old files
    _age(_files(table))
    assert remove_orphan_files(table, dry_run=True).deleted == ()


def test_rollback_to_snapshot_and_tag(catalog: Catalog) -> None:
    table = _table(catalog, appends=4)
    create_tag(table, "two", 2)
    create_tag(table, "three", 3)
    rollback_to(table, snapshot_id=3)
    assert [s.id for s in table.snapshots()] == [1, 2, 3] and _ids(table) == [0, 1, 2]
    rollback_to(table, tag="two")
    assert _ids(table) == [0, 1]
    assert TagManager(table.storage, table.path).names() == ["two"]
    table.append(pa.table({"id": [7]}, schema=SCHEMA))
    assert table.latest_snapshot().id == 3 and _ids(table) == [0, 1, 7]  # type: ignore[union-attr]
    with pytest.raises(ConfigError):
        rollback_to(table)
    with pytest.raises(TagNotFoundError):
        rollback_to(table, tag="three")
    with pytest.raises(SnapshotNotFoundError):
        rollback_to(table, snapshot_id=9)


def test_rollback_to_a_tag_whose_snapshot_expired(catalog: Catalog) -> None:
    table = _table(catalog, appends=3)
    create_tag(table, "first", 1)
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)
    assert [s.id for s in table.snapshots()] == [3]
    rollback_to(table, tag="first")
    assert [s.id for s in table.snapshots()] == [1] and _ids(table) == [0]


def _age(paths: Any, days: float = 3) -> None:
    old = time.time() - days * 86400
    for path in paths:
        os.utime(path, (old, old))


def test_remove_orphan_files(catalog: Catalog) -> None:
    table = _table(catalog, appends=2)
    create_tag(table, "first", 1)
    expected = _ids(table)
    writer = table.new_write()
    writer.write(pa.table({"id": [100]}, schema=SCHEMA))
    writer.prepare_commit()  # written, never committed: orphans
    stray = Path(table.path) / "snapshot" / ".snapshot-9.tmp"
    stray.write_text("left by a crash")
    stale_manifest = Path(table.path) / "manifest" / "manifest-stale-0"
    stale_manifest.write_bytes(b"x")
    young = _files(table)
    assert remove_orphan_files(table).deleted == ()  # everything is younger than a day
    _age(_files(table))
    orphan_data = {p for p in young if "/bucket-0/" in p} - {
        os.path.join(table.bucket_dir(e.partition, e.bucket), e.file.file_name) for e in table.live_entries()
    }
    assert len(orphan_data) == 1
    dry = remove_orphan_files(table, dry_run=True)
    assert set(dry.deleted) == orphan_data | {str(stray), str(stale_manifest)} and dry.deleted_bytes > 0
    assert _files(table) == young
    result = remove_orphan_files(table)
    assert set(result.deleted) == set(dry.deleted)
    assert _files(table) == young - set(dry.deleted)
    assert _ids(table) == expected and _ids(table, 1) == [0]
    with pytest.raises(ConfigError):
        remove_orphan_files(table, older_than=FAR_FUTURE)


def test_remove_orphan_files_aborts_on_an_unreadable_manifest(catalog: Catalog) -> None:
    table = _table(catalog, appends=2)
    _age(_files(table))
    snapshot = table.latest_snapshot()
    assert snapshot is not None
    Path(table.manifest_path(snapshot.delta_manifest_list)).write_bytes(b"garbage")
    before = _files(table)
    with pytest.raises(Exception, match="manifest"):
        remove_orphan_files(table)
    assert _files(table) == before
