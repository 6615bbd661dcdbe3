"""purge_files: all data of a table deleted as Java's ``FileStoreTable.purgeFiles`` does; the table stays."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from paimon_core import Catalog, ConsumerManager
from paimon_core.maintenance import create_branch, create_tag, list_branches, purge_files
from paimon_core.snapshot import CommitKind
from paimon_core.tag import TagManager

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.string())])


def _data_files(path: str) -> list[str]:
    return sorted(
        str(f.relative_to(path)) for f in Path(path).rglob("*") if f.is_file() and f.name.startswith("data-")
    )


def test_purge_deletes_everything_but_the_table(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options={"bucket": "-1"})
    for i in range(4):
        table.append(pa.table({"id": [i], "p": [f"p{i % 2}"]}, schema=SCHEMA))
    create_tag(table, "v1", snapshot_id=2)
    create_branch(table, "b", "v1")
    ConsumerManager(table.storage, table.path).reset_to("job", 3)
    assert _data_files(table.path)
    orphan = Path(table.path, "p=p0", "bucket-0", "data-crashed-writer-0.parquet")
    orphan.write_bytes(b"left by a writer that died")

    result = purge_files(table)

    assert (result.branches, result.tags, result.consumers) == (["b"], ["v1"], ["job"])
    table = catalog.get_table("db.t")
    latest = table.snapshot_manager.latest()
    assert latest is not None and latest.id == result.snapshot_id == 5
    assert latest.commit_kind == CommitKind.OVERWRITE and latest.total_record_count == 0
    assert [s.id for s in table.snapshots()] == [5] and result.expired_snapshots == 4
    assert table.to_arrow().num_rows == 0
    assert list_branches(table) == [] and TagManager(table.storage, table.path).tags() == []
    assert ConsumerManager(table.storage, table.path).consumers() == {}
    assert _data_files(table.path) == [] and result.deleted_files == 1  # the orphan
    assert not [f for f in Path(table.path, "branch").rglob("*") if f.is_file()]
    # the table takes new data, and a second purge finds nothing left to delete but that
    table.append(pa.table({"id": [9], "p": ["p0"]}, schema=SCHEMA))
    assert table.to_arrow().column("id").to_pylist() == [9]
    again = purge_files(table)
    assert (again.branches, again.tags, again.consumers) == ([], [], [])
    assert catalog.get_table("db.t").to_arrow().num_rows == 0


def test_purge_of_a_table_without_snapshots(catalog: Catalog) -> None:
    table = catalog.create_table("db.e", SCHEMA)
    result = purge_files(table)
    assert result.snapshot_id is None and table.snapshot_manager.latest() is None
    assert catalog.get_table("db.e").schema.fields == table.schema.fields
