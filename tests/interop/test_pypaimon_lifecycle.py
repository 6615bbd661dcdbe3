"""pypaimon 2.1 reads a table after our automatic tags and partition expiration as we read it (marker
``interop``): the latest snapshot (expired partitions gone), every automatic tag (numeric names included)
and the snapshot before each partition drop."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, clock
from paimon_core.snapshot import CommitKind
from paimon_core.tag import TagManager

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])


def _sorted(rows: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["dt"]) for r in rows.select(["id", "dt"]).to_pylist())


def _fixed(millis: int) -> Callable[[], int]:
    """A clock standing at ``millis``."""
    return lambda: millis


@pytest.mark.parametrize("formatter", ["with_dashes", "without_dashes"])
def test_pypaimon_reads_our_auto_tags_and_expired_partitions(
    ours: Catalog, pypaimon: Any, formatter: str
) -> None:
    options = {
        "tag.automatic-creation": "process-time",
        "tag.period-formatter": formatter,
        "sink.process-time-zone": "UTC",
        "partition.expiration-time": "2 d",
        "partition.timestamp-formatter": "yyyyMMdd",
        "partition.expiration-check-interval": "0 s",
    }
    table = ours.create_table("db.life", SCHEMA, partition_keys=["dt"], options=options)
    start = dt.datetime(2024, 3, 1, 9, tzinfo=dt.timezone.utc)
    for day in range(6):
        now = start + dt.timedelta(days=day)
        with clock.use_clock(_fixed(int(now.timestamp() * 1000))):
            rows = {"id": [day * 10, day * 10 + 1], "dt": [now.strftime("%Y%m%d")] * 2}
            table.append(pa.table(rows, schema=SCHEMA))
    tags = TagManager(table.storage, table.path).tags()
    assert len(tags) == 6 and all(t.name[:4] == "2024" for t in tags)
    drops = [s.id for s in table.snapshots() if s.commit_kind == CommitKind.OVERWRITE]
    assert drops, "no partition expired"
    assert _sorted(pypaimon.read("db.life")) == _sorted(table.to_arrow())
    assert {d for _, d in _sorted(table.to_arrow())} == {
        "20240305",
        "20240306",
    }  # 03-04 00:00 is before 03-06 09:00 - 2 d
    for snapshot_id in drops:
        before = snapshot_id - 1
        assert _sorted(pypaimon.read("db.life", snapshot_id=before)) == _sorted(
            table.to_arrow(snapshot_id=before)
        )
    for tag in tags:
        builder = pypaimon.table("db.life", {"scan.tag-name": tag.name}).new_read_builder()
        theirs = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        assert _sorted(theirs) == _sorted(table.to_arrow(tag=tag.name)), tag.name
