"""Metadata written by pypaimon is read here, and metadata written here is read (and extended) by pypaimon.

pypaimon runs in a subprocess: ``$PYPAIMON_PYTHON``, or this interpreter (the nox ``interop`` session has both).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from paimon_core.binary_row import deserialize_row
from paimon_core.manifest import (
    FileKind,
    ManifestContext,
    ManifestNamer,
    merge_entries,
    read_all_entries,
    read_manifest_list,
    write_manifest_list,
    write_manifests,
)
from paimon_core.schema import SchemaManager
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot, SnapshotManager
from paimon_core.stats import decode_stats
from paimon_core.storage import get_backend
from paimon_core.types import IntType

pytestmark = pytest.mark.interop

PYPAIMON_PYTHON = os.environ.get("PYPAIMON_PYTHON", sys.executable)

_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    warehouse, action = sys.argv[1], sys.argv[2]
    catalog = CatalogFactory.create({"warehouse": warehouse})
    arrow_schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string())])

    def append(table, rows):
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        data = pa.table({k: [r[i] for r in rows] for i, k in enumerate(["dt", "id", "name"])}, schema=arrow_schema)
        if "extra" in [f.name for f in table.table_schema.fields]:
            data = data.append_column(pa.field("extra", pa.int32()), pa.nulls(len(rows), pa.int32()))
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()

    if action == "create":
        catalog.create_database("db", False)
        schema = Schema.from_pyarrow_schema(
            arrow_schema, partition_keys=["dt"], options={"metadata.stats-mode": "full"}
        )
        catalog.create_table("db.t", schema, False)
        table = catalog.get_table("db.t")
        append(table, [("2024-01-01", 1, "a"), ("2024-01-02", 2, "b"), ("2024-01-01", 3, None)])
        append(table, [("2024-01-01", 4, "d"), ("2024-01-03", 5, "e"), ("2024-01-02", 6, "f")])
    table = catalog.get_table("db.t")
    if action == "append":
        append(table, [("2024-01-09", 7, "g"), ("2024-01-01", 8, "h"), ("2024-01-02", 9, "i")])
    builder = table.new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    print(json.dumps(sorted(rows, key=lambda r: r["id"])))
    """
)


def pypaimon(warehouse: Path, action: str) -> list[dict[str, Any]]:
    if not os.path.exists(PYPAIMON_PYTHON):
        pytest.skip(f"pypaimon interpreter not found at {PYPAIMON_PYTHON}")
    done = subprocess.run(
        [PYPAIMON_PYTHON, "-c", _SCRIPT, str(warehouse), action], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_reads_pypaimon_metadata(tmp_path: Path) -> None:
    rows = pypaimon(tmp_path, "create")
    assert len(rows) == 6
    table_path = str(tmp_path / "db.db" / "t")
    storage = get_backend(table_path, {})
    schema = SchemaManager(storage, table_path).latest()
    assert schema is not None and schema.field_names == ["dt", "id", "name"]
    assert schema.comment is None
    sm = SnapshotManager(storage, table_path)
    latest = sm.latest()
    assert latest is not None and latest.id == 2
    assert latest.commit_kind is CommitKind.APPEND
    assert latest.total_record_count == 6

    partition_types = [f.type for f in schema.partition_fields()]
    ctx = ManifestContext.for_table(storage, table_path, partition_types, schema.options)
    base = read_manifest_list(storage, ctx.path(latest.base_manifest_list))
    delta = read_manifest_list(storage, ctx.path(latest.delta_manifest_list))
    assert latest.base_manifest_list_size == storage.size(ctx.path(latest.base_manifest_list))
    for meta in base + delta:
        assert meta.file_size == storage.size(ctx.path(meta.file_name))
    entries = merge_entries(read_all_entries(ctx, base + delta))
    assert len(entries) == 5 and all(e.kind is FileKind.ADD for e in entries)
    name_nulls = 0
    for entry in entries:
        (dt,) = deserialize_row(entry.partition, partition_types)
        bucket_dir = tmp_path / "db.db" / "t" / f"dt={dt}" / f"bucket-{entry.bucket}"
        assert (bucket_dir / entry.file.file_name).stat().st_size == entry.file.file_size
        assert entry.total_buckets == -1
        # pypaimon writes full stats of every column (stats-mode full).
        stats = decode_stats(entry.file.value_stats, entry.file.value_stats_cols, list(schema.fields))
        assert stats["dt"] == (dt, dt, 0)
        low, high, nulls = stats["id"]
        assert 1 <= low <= high <= 6 and nulls == 0
        name_null_count = stats["name"][2]
        assert name_null_count is not None
        name_nulls += name_null_count
    assert name_nulls == 1
    assert sum(e.file.row_count for e in entries) == 6


def test_pypaimon_reads_and_extends_our_metadata(tmp_path: Path) -> None:
    pypaimon(tmp_path, "create")
    table_path = str(tmp_path / "db.db" / "t")
    storage = get_backend(table_path, {})
    schemas = SchemaManager(storage, table_path)
    evolved = schemas.commit_change(lambda s: s.add_columns([("extra", IntType(), "added here")]))
    sm = SnapshotManager(storage, table_path)
    latest = sm.latest()
    assert latest is not None
    partition_types = [f.type for f in evolved.partition_fields()]
    ctx = ManifestContext.for_table(storage, table_path, partition_types, evolved.options)
    namer = ManifestNamer()
    old_metas = read_manifest_list(storage, ctx.path(latest.base_manifest_list))
    old_metas += read_manifest_list(storage, ctx.path(latest.delta_manifest_list))
    live = merge_entries(read_all_entries(ctx, old_metas))

    # Snapshot 3, all ours: the live files rewritten into our manifests, an empty delta, our schema 1.
    base_name, delta_name = namer("manifest-list"), namer("manifest-list")
    base_size = write_manifest_list(storage, ctx.path(base_name), write_manifests(ctx, live, namer))
    delta_size = write_manifest_list(storage, ctx.path(delta_name), [])
    ours = Snapshot(
        id=latest.id + 1,
        schema_id=evolved.id,
        base_manifest_list=base_name,
        base_manifest_list_size=base_size,
        delta_manifest_list=delta_name,
        delta_manifest_list_size=delta_size,
        commit_user="paimon-core-test",
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_kind=CommitKind.COMPACT,
        time_millis=int(time.time() * 1000),
        total_record_count=latest.total_record_count,
        delta_record_count=0,
    )
    assert sm.try_publish(ours)

    rows = pypaimon(tmp_path, "read")
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(r["extra"] is None for r in rows)

    # pypaimon commits on top of our snapshot: it reads our manifest list, manifests and schema.
    rows = pypaimon(tmp_path, "append")
    assert [r["id"] for r in rows] == list(range(1, 10))
    theirs = sm.latest()
    assert theirs is not None and theirs.id == ours.id + 1 and theirs.schema_id == evolved.id
    metas = read_manifest_list(storage, ctx.path(theirs.base_manifest_list))
    metas += read_manifest_list(storage, ctx.path(theirs.delta_manifest_list))
    entries = merge_entries(read_all_entries(ctx, metas))
    assert sum(e.file.row_count for e in entries) == 9
    assert {e.file.schema_id for e in entries} == {0, 1}
