"""compact_manifest: the latest snapshot's data manifests merged into one COMPACT snapshot, as Java's
``CompactManifestProcedure`` commits (docs/how-to/maintenance.md)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.maintenance import compact_manifest
from paimon_core.manifest import FileKind, ManifestFileMeta, read_manifest_file, read_manifest_list
from paimon_core.snapshot import CommitKind
from paimon_core.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.int64())])


def _table(catalog: Catalog, commits: int, **options: str) -> Table:
    keys = [k for k in options.pop("primary-key", "").split(",") if k]
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], primary_keys=keys, options=options)
    for i in range(commits):
        table.append(pa.table({"id": [i, i + 100], "p": ["a", "b"], "v": [i, i]}, schema=SCHEMA))
    return table


def _manifests(table: Table, snapshot_id: int | None = None) -> list[ManifestFileMeta]:
    manager = table.snapshot_manager
    snapshot = manager.snapshot(snapshot_id) if snapshot_id else manager.latest()
    assert snapshot is not None
    ctx = table.manifest_context
    metas = read_manifest_list(table.storage, ctx.path(snapshot.base_manifest_list))
    return metas + read_manifest_list(table.storage, ctx.path(snapshot.delta_manifest_list))


def _rows(table: Table, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    return sorted(table.to_arrow(snapshot_id=snapshot_id).to_pylist(), key=lambda r: (r["id"], r["v"]))


@pytest.mark.parametrize("options", [{"bucket": "-1"}, {"bucket": "2", "primary-key": "id,p"}])
def test_merges_every_manifest_into_one_compact_snapshot(catalog: Catalog, options: dict[str, str]) -> None:
    # merge-min-count high: commits never merge, so each one leaves its delta manifest behind
    table = _table(catalog, 6, **{"manifest.merge-min-count": "1000", **options})
    table.compact()  # DELETE entries for the rewritten files
    before = table.snapshot_manager.latest()
    assert before is not None and len(_manifests(table)) > 1
    rows = _rows(table)

    created = compact_manifest(table)

    after = table.snapshot_manager.latest()
    assert after is not None and created == after.id == before.id + 1
    assert after.commit_kind == CommitKind.COMPACT
    assert (after.total_record_count, after.delta_record_count) == (before.total_record_count, 0)
    metas = _manifests(table)
    assert len(metas) == 1 and metas[0].num_deleted_files == 0
    entries = read_manifest_file(table.storage, table.manifest_context.path(metas[0].file_name))
    assert {e.kind for e in entries} == {FileKind.ADD}
    assert read_manifest_list(table.storage, table.manifest_context.path(after.delta_manifest_list)) == []
    assert _rows(table) == rows
    assert _rows(table, before.id) == rows  # the old snapshot still reads through its own manifests
    # merged already: a second run commits nothing
    assert compact_manifest(table) is None
    assert table.snapshot_manager.latest_id() == after.id
    table.append(pa.table({"id": [7], "p": ["a"], "v": [7]}, schema=SCHEMA))
    assert len(_rows(table)) == len(rows) + 1


def test_dry_run_and_empty_table_commit_nothing(catalog: Catalog) -> None:
    empty = catalog.create_table("db.empty", SCHEMA)
    assert compact_manifest(empty) is None
    assert empty.snapshot_manager.latest() is None
    table = _table(catalog, 3, **{"manifest.merge-min-count": "1000"})
    assert compact_manifest(table, dry_run=True) is None
    assert table.snapshot_manager.latest_id() == 3
    assert len(_manifests(table)) == 3
