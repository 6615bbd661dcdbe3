"""Tables whose metadata older Paimon versions wrote (0.9 to 2.x) read and accept new commits.

The metadata is rewritten the way older writers laid it out: schema version 2, manifests without the fields
added after 0.9 (``_VALUE_STATS_COLS``, ``_EXTERNAL_PATH``, ``_FIRST_ROW_ID``, ``_WRITE_COLS``...), manifest
lists without the 1.2+ bucket/level/row-id ranges, snapshots without list sizes or uuid, and a different
Avro codec. Readers must treat every missing field as null.
"""

from __future__ import annotations

import copy
import datetime as dt
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.manifest import MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_META_SCHEMA

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.date32()), pa.field("name", pa.string())])
NEW_FILE_FIELDS = {
    "_VALUE_STATS_COLS",
    "_EXTERNAL_PATH",
    "_FIRST_ROW_ID",
    "_WRITE_COLS",
    "_WRITE_COLS_SEQUENCES",
}
NEW_LIST_FIELDS = {"_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL", "_MIN_ROW_ID", "_MAX_ROW_ID"}
NEW_LIST_FIELDS |= {"_TOTAL_BUCKETS", "_EXTRA_FILES"}
NEW_SNAPSHOT_KEYS = {"uuid", "baseManifestListSize", "deltaManifestListSize", "changelogManifestListSize"}
NEW_SNAPSHOT_KEYS |= {"nextRowId", "writerVersion", "operation"}


def _old_entry_schema() -> dict[str, Any]:
    schema = copy.deepcopy(MANIFEST_ENTRY_SCHEMA)
    file_record = next(f for f in schema["fields"] if f["name"] == "_FILE")["type"]
    file_record["fields"] = [f for f in file_record["fields"] if f["name"] not in NEW_FILE_FIELDS]
    return schema


def _old_list_schema() -> dict[str, Any]:
    schema = copy.deepcopy(MANIFEST_FILE_META_SCHEMA)
    schema["fields"] = [f for f in schema["fields"] if f["name"] not in NEW_LIST_FIELDS]
    return schema


def _read_records(path: Path) -> list[dict[str, Any]]:
    """The records of an Avro file whose schema is a record (as every manifest's is)."""
    records = []
    with path.open("rb") as f:
        for record in fastavro.reader(f):
            assert isinstance(record, dict)
            records.append(record)
    return records


def _rewrite_avro(path: Path, schema: dict[str, Any], drop: set[str], nested: str | None = None) -> int:
    records = _read_records(path)
    for record in records:
        target = record[nested] if nested else record
        for name in drop:
            target.pop(name, None)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec="deflate")
    path.write_bytes(out.getvalue())
    return len(out.getvalue())


def downgrade_to_old_format(table_dir: Path) -> None:
    manifest_dir = table_dir / "manifest"
    sizes = {}
    for manifest in manifest_dir.glob("manifest-*"):
        if not manifest.name.startswith("manifest-list-"):
            sizes[manifest.name] = _rewrite_avro(
                manifest, _old_entry_schema(), NEW_FILE_FIELDS, nested="_FILE"
            )
    for manifest_list in manifest_dir.glob("manifest-list-*"):
        records = _read_records(manifest_list)
        for record in records:
            record["_FILE_SIZE"] = sizes[record["_FILE_NAME"]]
            for name in NEW_LIST_FIELDS:
                record.pop(name, None)
        out = io.BytesIO()
        fastavro.writer(out, fastavro.parse_schema(_old_list_schema()), records, codec="deflate")
        manifest_list.write_bytes(out.getvalue())
    for snapshot_file in (table_dir / "snapshot").glob("snapshot-*"):
        snapshot = json.loads(snapshot_file.read_text())
        for key in NEW_SNAPSHOT_KEYS:
            snapshot.pop(key, None)
        snapshot["logOffsets"] = {}  # legacy key of Java <= 1.4, ignored on read
        snapshot_file.write_text(json.dumps(snapshot, indent=2))
    schema_file = table_dir / "schema" / "schema-0"
    schema = json.loads(schema_file.read_text())
    schema["version"] = 2  # Paimon 0.8/0.9 layout; file.format is explicit as those versions required
    schema["options"]["file.format"] = "parquet"
    del schema["timeMillis"]
    schema_file.write_text(json.dumps(schema, indent=2))


def _rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=i % 2) for i in ids]
    return pa.table({"id": ids, "dt": days, "name": [f"n{i}" for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("options", [{}, {"bucket": "2", "bucket-key": "id"}])
def test_old_metadata_reads_and_takes_new_commits(warehouse: str, options: dict[str, str]) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"], options=options)
    table.append(_rows(0, 10))
    table.append(_rows(10, 10))
    downgrade_to_old_format(Path(warehouse) / "db.db" / "t")

    old = Catalog.open(warehouse).get_table("db.t")
    assert old.schema.options["file.format"] == "parquet" and old.schema.time_millis == 0
    assert sorted(old.to_arrow().column("id").to_pylist()) == list(range(20))
    assert old.to_arrow(snapshot_id=1).num_rows == 10
    entries = old.live_entries()
    assert all(e.file.value_stats_cols is None and e.file.external_path is None for e in entries)
    # stats without _VALUE_STATS_COLS cover every column: file skipping still works
    assert len(old.scan(filter=[("id", ">=", 15)]).files()) < len(entries)
    assert sorted(old.to_arrow(filter=[("id", ">=", 15)]).column("id").to_pylist()) == list(range(15, 20))
    assert old.snapshots()[-1].base_manifest_list_size is None

    assert old.append(_rows(20, 5)) == 3  # new commits build on old manifests
    assert sorted(old.to_arrow().column("id").to_pylist()) == list(range(25))
    old.overwrite(_rows(100, 2))  # an overwrite deletes entries read from old manifests
    assert sorted(old.to_arrow().column("id").to_pylist()) == [100, 101]
