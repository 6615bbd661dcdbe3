"""Paimon's ``rename_tag``, ``create_tag_from_timestamp`` and ``rollback_to_timestamp`` procedures."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.errors import SnapshotNotFoundError, TagAlreadyExistsError, TagNotFoundError
from paimon_core.maintenance import (
    create_tag,
    create_tag_from_timestamp,
    expire_snapshots,
    rename_tag,
    rollback_to_timestamp,
)
from paimon_core.table import Table
from paimon_core.tag import Tag, TagManager

SCHEMA = pa.schema([pa.field("id", pa.int64())])


@pytest.fixture()
def table(catalog: Catalog) -> Table:
    table = catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})
    for i in range(4):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))
    return table


def _tags(table: Table) -> list[Tag]:
    return TagManager(table.storage, table.path).tags()


def _times(table: Table) -> list[int]:
    return [s.time_millis for s in table.snapshots()]


def test_rename_tag_keeps_the_snapshot_and_the_retention(table: Table) -> None:
    created = create_tag(table, "old", snapshot_id=2, time_retained="7 d")
    renamed = rename_tag(table, "old", "new")
    assert renamed.snapshot.id == 2 and renamed.time_retained == created.time_retained
    assert renamed.create_time == created.create_time
    assert [t.name for t in _tags(table)] == ["new"]
    assert sorted(table.to_arrow(tag="new").column("id").to_pylist()) == [0, 1]
    create_tag(table, "other", snapshot_id=3)
    with pytest.raises(TagAlreadyExistsError):
        rename_tag(table, "new", "other")
    with pytest.raises(TagNotFoundError):
        rename_tag(table, "missing", "x")
    assert {t.name: t.snapshot.id for t in _tags(table)} == {"new": 2, "other": 3}


def test_create_tag_from_timestamp_tags_the_first_snapshot_at_or_after_it(table: Table) -> None:
    times = _times(table)
    for name, target in (("at", times[2]), ("after", times[1] + 1)):
        expected = next(i + 1 for i, t in enumerate(times) if t >= target)  # snapshot ids start at 1
        assert create_tag_from_timestamp(table, name, target).snapshot.id == expected
    as_text = dt.datetime.fromtimestamp(times[0] / 1000).strftime("%Y-%m-%d %H:%M:%S")
    assert create_tag_from_timestamp(table, "text", as_text).snapshot.id == 1
    with pytest.raises(SnapshotNotFoundError, match="at or after"):
        create_tag_from_timestamp(table, "future", times[-1] + 60_000)


def test_an_expired_snapshot_a_tag_keeps_is_tagged_again_as_in_java(table: Table) -> None:
    times = _times(table)
    create_tag(table, "kept", snapshot_id=2)
    expire_snapshots(table, retain_max=1, retain_min=1)
    assert table.snapshot_manager.earliest_id() == 4
    # Java's procedure looks in the tags too: snapshot 2 is the earliest committed at or after times[1].
    again = create_tag_from_timestamp(table, "again", times[1])
    assert again.snapshot.id == 2
    assert sorted(table.to_arrow(tag="again").column("id").to_pylist()) == [0, 1]
    # Before every tagged snapshot too: the earliest of them (only tags remember snapshot 1's time is gone).
    assert create_tag_from_timestamp(table, "earliest", times[0]).snapshot.id == 2
    # A retained snapshot wins over a newer tagged one, and a tag by id finds the expired snapshot.
    assert create_tag_from_timestamp(table, "latest", times[2] + 1).snapshot.id == 4
    assert create_tag(table, "by-id", snapshot_id=2).snapshot.id == 2
    with pytest.raises(SnapshotNotFoundError):
        create_tag(table, "gone", snapshot_id=3)


def test_rollback_to_timestamp_rolls_back_to_the_newest_snapshot_at_or_before_it(table: Table) -> None:
    times = _times(table)
    target = max(i + 1 for i, t in enumerate(times) if t <= times[1])
    assert rollback_to_timestamp(table, times[1]).id == target
    assert table.snapshot_manager.latest_id() == target
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(target))
    with pytest.raises(SnapshotNotFoundError, match="at or before"):
        rollback_to_timestamp(table, times[0] - 60_000)
    assert table.snapshot_manager.latest_id() == target


def test_the_procedures_from_the_command_line(table: Table, capsys: pytest.CaptureFixture[str]) -> None:
    from paimon_core.cli import main

    times = _times(table)
    first = next(i + 1 for i, t in enumerate(times) if t >= times[1])
    assert main(["create-tag-from-timestamp", table.path, "t1", str(times[1])]) == 0
    assert main(["rename-tag", table.path, "t1", "t2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"tag 't1' -> snapshot {first}", f"tag 't1' renamed to 't2' (snapshot {first})"]
    target = max(i + 1 for i, t in enumerate(times) if t <= times[2])
    assert main(["rollback", table.path, "--timestamp", str(times[2])]) == 0
    assert capsys.readouterr().out == f"rolled back; latest snapshot is {target}\n"
