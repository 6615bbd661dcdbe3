"""Merged manifests against pypaimon 2.1.0 (marker ``interop``; see ``docs/manifests.md``).

Our commits merge manifests into range manifests (blocks copied from earlier manifests, records cut out of
others, DELETEs after every ADD-only manifest). pypaimon must read such a table, whole and by partition (it
prunes manifests by their partition stats and entries by their partition bytes), and our merges must take in
the manifests pypaimon writes (its writer schema is not ours: they are decoded and written again).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core.manifest import read_manifest_list

pytestmark = pytest.mark.interop

TABLE = "db.t"
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string())])
DAYS = [f"2024-01-{d:02d}" for d in range(1, 13)]
OPTIONS = {
    "manifest.target-file-size": "64kb",
    "manifest.merge-min-count": "4",
    "manifest.full-compaction-threshold-size": "256kb",
    "write-only": "true",
}


def rows(step: int) -> pa.Table:
    """Three days per commit, five rows each."""
    ids = range(step * 15, step * 15 + 15)
    return pa.table(
        {
            "dt": [DAYS[(step + i // 5) % len(DAYS)] for i in range(15)],
            "id": list(ids),
            "name": [f"n{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def assert_same(ours: Any, pypaimon: Any, expected: pa.Table, stage: str) -> None:
    assert ids(ours.get_table(TABLE).to_arrow()) == ids(expected), f"{stage}: our read"
    assert ids(pypaimon.read(TABLE)) == ids(expected), f"{stage}: pypaimon's read"
    for day in (DAYS[0], DAYS[7]):
        want = ids(expected.filter(pa.compute.equal(expected.column("dt"), day)))
        assert ids(pypaimon.read(TABLE, partition_equals={"dt": day})) == want, f"{stage}: pypaimon, {day}"
        assert ids(ours.get_table(TABLE).to_arrow(filter=[("dt", "=", day)])) == want, f"{stage}: ours, {day}"


def test_pypaimon_reads_our_merged_manifests_and_we_merge_its(ours: Any, pypaimon: Any) -> None:
    table = ours.create_table(TABLE, SCHEMA, partition_keys=["dt"], options=OPTIONS)
    expected = SCHEMA.empty_table()
    for step in range(80):
        table.append(rows(step))
        expected = pa.concat_tables([expected, rows(step)])
    # An overwrite of two days: DELETEs of their files, spread into the ranges holding them.
    replacement = pa.table(
        {"dt": [DAYS[3], DAYS[4]], "id": [10_000, 10_001], "name": ["x", "y"]}, schema=SCHEMA
    )
    ours.get_table(TABLE).overwrite(replacement)
    keep = pa.compute.invert(pa.compute.is_in(expected.column("dt"), pa.array([DAYS[3], DAYS[4]])))
    expected = pa.concat_tables([expected.filter(keep), replacement])
    snapshot = ours.get_table(TABLE).latest_snapshot()
    base = read_manifest_list(table.storage, table.manifest_path(snapshot.base_manifest_list))
    assert len(base) < 40  # merges happened
    assert_same(ours, pypaimon, expected, "after our commits")

    for step in range(80, 90):  # pypaimon's manifests, which our next merges take in
        pypaimon.append(TABLE, rows(step))
        expected = pa.concat_tables([expected, rows(step)])
    for step in range(90, 130):
        ours.get_table(TABLE).append(rows(step))
        expected = pa.concat_tables([expected, rows(step)])
    assert_same(ours, pypaimon, expected, "after both wrote")
