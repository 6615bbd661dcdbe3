"""Merged manifests against Java Apache Paimon 0.9 (marker ``java_interop``; see ``docs/manifests.md``).

Our commits merge manifests into range manifests: blocks copied from earlier manifests (each followed by its
new file's sync marker), records cut out of others, ADD-only manifests ahead of those with DELETEs. Java must
read such a table (whole and by partition, which prunes manifests by their partition stats), merge its
manifests with its own merger when it writes on, and we must read what that leaves.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.manifest import read_manifest_list

pytestmark = pytest.mark.java_interop

NAME = "t"
IDENTIFIER = f"db.{NAME}"
COLUMNS = (("dt", "STRING NOT NULL"), ("id", "BIGINT NOT NULL"), ("name", "STRING"), ("price", "DOUBLE"))
ARROW_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("price", pa.float64()),
    ]
)
DAYS = [f"2024-01-{d:02d}" for d in range(1, 13)]
# Small manifests and early merges, for Java too: our layout forms after a few dozen commits.
OPTIONS = {
    "bucket": "2",
    "manifest.target-file-size": "64kb",
    "manifest.merge-min-count": "4",
    "manifest.full-compaction-threshold-size": "256kb",
}


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((value is not None, value) for value in row)


def _ours(catalog: Catalog, where: tuple[str, str, Any] | None = None) -> list[tuple[Any, ...]]:
    data = catalog.get_table(IDENTIFIER).to_arrow(filter=[where] if where is not None else None)
    return sorted((tuple(row.values()) for row in data.to_pylist()), key=_sort_key)


def _assert_same_reads(ours: Catalog, java: Any, stage: str) -> None:
    assert _ours(ours) == java.read(NAME), f"{stage}: our read differs from Java's"
    for day in (DAYS[0], DAYS[5], DAYS[11]):
        where = ("dt", "=", day)
        assert _ours(ours, where) == java.read(NAME, where), f"{stage}: {day} differs from Java's"


def _rows(step: int) -> pa.Table:
    """Three days per commit, ten keys each; keys repeat across commits (updates)."""
    rows = [
        {
            "dt": DAYS[(step + k) % len(DAYS)],
            "id": (step * 7 + i) % 40,
            "name": f"n{step}-{i}",
            "price": step + i / 10,
        }
        for k in range(3)
        for i in range(10)
    ]
    return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)


def test_java_reads_and_merges_our_merged_manifests(ours: Catalog, java: Any) -> None:
    table = ours.create_table(
        IDENTIFIER,
        ARROW_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options=OPTIONS,
    )
    for step in range(60):
        table.append(_rows(step))
    snapshot = table.latest_snapshot()
    assert snapshot is not None
    base = read_manifest_list(table.storage, table.manifest_path(snapshot.base_manifest_list))
    assert len(base) < 30  # merges happened
    _assert_same_reads(ours, java, "after our commits")

    # Our compaction job: DELETEs of many files, spread into the ranges that hold them.
    compact_table(ours.get_table(IDENTIFIER), parallelism=1, progress=False)
    _assert_same_reads(ours, java, "after our compaction")

    # Java writes on: its own merger reads, merges and rewrites our manifests.
    for step in range(60, 75):
        java.write(NAME, [(r["dt"], r["id"], r["name"], r["price"]) for r in _rows(step).to_pylist()])
    _assert_same_reads(ours, java, "after Java's commits")
    java.full_compact(NAME)
    _assert_same_reads(ours, java, "after Java's full compaction")
    for step in range(75, 100):
        ours.get_table(IDENTIFIER).append(_rows(step))
    _assert_same_reads(ours, java, "after our commits on Java's manifests")


def test_java_reads_and_writes_on_after_compact_manifest(ours: Catalog, java: Any) -> None:
    """``compact_manifest`` leaves a COMPACT snapshot whose base list is our merged manifests and whose delta
    list is empty: Java reads it as before, and writes on it."""
    from paimon_core.maintenance import compact_manifest

    table = ours.create_table(
        IDENTIFIER,
        ARROW_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", "manifest.merge-min-count": "1000"},
    )
    for step in range(12):
        table.append(_rows(step))
    compact_table(ours.get_table(IDENTIFIER), parallelism=1, progress=False)  # DELETE entries to cancel
    _assert_same_reads(ours, java, "before compact_manifest")
    assert compact_manifest(ours.get_table(IDENTIFIER)) is not None
    _assert_same_reads(ours, java, "after compact_manifest")
    for step in range(12, 16):
        java.write(NAME, [(r["dt"], r["id"], r["name"], r["price"]) for r in _rows(step).to_pylist()])
    _assert_same_reads(ours, java, "after Java's commits on the merged manifests")
