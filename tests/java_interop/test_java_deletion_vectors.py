"""Deletion vectors against Java Apache Paimon 0.9 (marker ``java_interop``): the on-disk layer only.

* Java writes a primary-key table with ``deletion-vectors.enabled``; its writer compacts level 0 at every
  commit by lookup, marking the replaced rows of higher-level files in deletion vectors. We decode its index
  manifest and index files, and the rows that survive the vectors in the level >= 1 files (what a
  deletion-vector read returns) are exactly Java's read. Our serialization of each vector equals Java's bytes.
* We write deletion-vector index files and an index manifest for the same data files (one more row deleted)
  into a new snapshot; Java's read applies them.
* Our 32-bit Roaring serialization equals Java's ``RoaringBitmap.runOptimize()`` + ``serialize()``.

Our table read, which applies the vectors, is compared with Java's in both directions too.

Java 0.9 names the index manifest's ranges field ``_DELETIONS_VECTORS_RANGES`` like 1.x (elements f0, f1, f2,
without 1.x's ``_CARDINALITY``): checked here on Java's own manifest, and ours, carrying ``_CARDINALITY``, reads.
"""

from __future__ import annotations

import io
import json
import os
from collections import defaultdict
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimon_core import Catalog
from paimon_core.deletionvectors import (
    DeletionVector,
    read_deletion_vectors,
    serialize_roaring32,
    write_deletion_vectors,
)
from paimon_core.manifest import (
    DELETION_VECTORS_INDEX,
    FileKind,
    IndexManifestEntry,
    ManifestNamer,
    write_index_manifest,
)
from paimon_core.table import KeyValueTableWrite, Table

pytestmark = pytest.mark.java_interop

NAME = "t"
IDENTIFIER = f"db.{NAME}"
COLUMNS = (("dt", "STRING NOT NULL"), ("id", "BIGINT NOT NULL"), ("name", "STRING"), ("score", "BIGINT"))
OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true"}

Row = tuple[Any, ...]


def _commits(rounds: int, start: int = 0) -> list[tuple[list[Row], list[str]]]:
    """Overlapping upserts per round (each round rewrites most keys of the one before) and a few deletes."""
    out = []
    for i in range(start, start + rounds):
        rows: list[Row] = []
        kinds: list[str] = []
        for dt in ("a", "b"):
            for key in range(i * 15, i * 15 + 60):
                rows.append((dt, key, f"{dt}{key}-{i}", i * 1000 + key))
                kinds.append("+I")
            if i:
                rows.append((dt, i * 15 - 7, None, None))  # a key written in the round before
                kinds.append("-D")
        out.append((rows, kinds))
    return out


def _java_table(java: Any) -> None:
    java.create_table(NAME, COLUMNS, primary_keys=("dt", "id"), partition_keys=("dt",), options=OPTIONS)


def _surviving_rows(table: Table, vectors: dict[str, DeletionVector]) -> list[Row]:
    """The rows of every level >= 1 file minus those its deletion vector marks: a deletion-vector read."""
    rows: list[Row] = []
    names = [c for c, _ in COLUMNS]
    for entry in table.live_entries():
        if entry.file.level == 0:
            continue
        data = pq.read_table(
            os.path.join(table.bucket_dir(entry.partition, entry.bucket), entry.file.file_name)
        )
        assert data.num_rows == entry.file.row_count
        vector = vectors.get(entry.file.file_name, DeletionVector())
        keep = pa.array(~vector.deleted_mask(data.num_rows))
        assert set(pc.unique(data["_VALUE_KIND"]).to_pylist()) <= {0, 2}  # dropped deletes above level 0
        rows += [tuple(r[c] for c in names) for r in data.filter(keep).to_pylist()]
    return sorted(rows, key=lambda r: tuple((v is not None, v) for v in r))


def _java_vectors(table: Table) -> tuple[dict[str, DeletionVector], dict[tuple[bytes, int], str]]:
    """Every deletion vector of the latest snapshot (data file → vector), checked against its data file."""
    files = {e.file.file_name: e for e in table.live_entries()}
    vectors: dict[str, DeletionVector] = {}
    index_files = {}
    for index in table.index_entries():
        assert index.file.index_type == DELETION_VECTORS_INDEX
        assert index.file.dv_ranges is not None
        assert index.file.row_count == len(index.file.dv_ranges)
        index_files[(index.partition, index.bucket)] = index.file.file_name
        raw = table.storage.read_bytes(table.index_path(index.file.file_name))
        assert len(raw) == index.file.file_size
        decoded = read_deletion_vectors(table, index.file)
        for r in index.file.dv_ranges:
            vector = decoded[r.data_file]
            entry = files[r.data_file]  # a vector belongs to a live file of its bucket, above level 0
            assert (entry.partition, entry.bucket) == (index.partition, index.bucket)
            assert entry.file.level >= 1
            assert r.cardinality is None  # Java 0.9 does not record it
            assert len(vector.positions) and int(vector.positions[-1]) < entry.file.row_count
            assert not vector.bitmap64
            # Byte for byte what Java wrote: size, magic, run-optimized bitmap, checksum.
            assert vector.serialize() == raw[r.offset : r.offset + r.length + 8]
            vectors[r.data_file] = vector
    return vectors, index_files


def _check_against_java(ours: Catalog, java: Any) -> dict[str, DeletionVector]:
    table = ours.get_table(IDENTIFIER)
    vectors, _ = _java_vectors(table)
    assert vectors, "Java's compactions produced no deletion vectors"
    expected = java.read(NAME)
    above_zero = [e.file for e in table.live_entries() if e.file.level >= 1]
    live = sum(
        f.row_count - (vectors[f.file_name].cardinality if f.file_name in vectors else 0) for f in above_zero
    )
    assert live == len(expected)
    assert _surviving_rows(table, vectors) == expected
    assert _our_read(ours) == expected
    return vectors


def _our_read(ours: Catalog) -> list[Row]:
    """Our table read (which applies the vectors), sorted like Java's."""
    data = ours.get_table(IDENTIFIER).to_arrow()
    return sorted(
        (tuple(r.values()) for r in data.to_pylist()), key=lambda r: tuple((v is not None, v) for v in r)
    )


def test_we_read_the_deletion_vectors_java_writes(ours: Catalog, java: Any) -> None:
    _java_table(java)
    for rows, kinds in _commits(4):
        java.write(NAME, rows, kinds)
    _check_against_java(ours, java)

    # Java 0.9's index manifest: the 1.x field name, elements without _CARDINALITY.
    table = ours.get_table(IDENTIFIER)
    snapshot = table.latest_snapshot()
    assert snapshot is not None and snapshot.index_manifest
    data = table.storage.read_bytes(table.manifest_path(snapshot.index_manifest))
    schema = fastavro.reader(io.BytesIO(data)).writer_schema
    assert isinstance(schema, dict)
    (ranges,) = [f for f in schema["fields"] if "VECTORS_RANGES" in f["name"]]
    assert ranges["name"] == "_DELETIONS_VECTORS_RANGES"
    element = ranges["type"][1]["items"][1]
    assert [f["name"] for f in element["fields"]] == ["f0", "f1", "f2"]

    # A full compaction rewrites the files (their vectors go); a later write makes new ones (a second one
    # would trigger a full compaction by size amplification, leaving none).
    java.full_compact(NAME)
    for rows, kinds in _commits(1, start=4):
        java.write(NAME, rows, kinds)
    _check_against_java(ours, java)


def test_java_reads_the_deletion_vectors_we_write(ours: Catalog, java: Any) -> None:
    """A new snapshot over the same data files whose index manifest and index files we wrote, deleting
    one more row in every bucket: Java's read applies our vectors."""
    _java_table(java)
    for rows, kinds in _commits(4):
        java.write(NAME, rows, kinds)
    table = ours.get_table(IDENTIFIER)
    vectors, _ = _java_vectors(table)
    expected = java.read(NAME)

    # Per bucket: Java's vectors plus, in the bucket's first level >= 1 file, one more deleted row.
    per_bucket: dict[tuple[bytes, int], dict[str, DeletionVector]] = defaultdict(dict)
    for entry in sorted(table.live_entries(), key=lambda e: (e.partition, e.bucket, -e.file.level)):
        if entry.file.level == 0:
            continue
        slot = (entry.partition, entry.bucket)
        vector = DeletionVector(
            vectors[entry.file.file_name].positions if entry.file.file_name in vectors else None
        )
        if not per_bucket[slot]:
            live = np.flatnonzero(~vector.deleted_mask(entry.file.row_count))
            vector.add(int(live[0]))
        per_bucket[slot][entry.file.file_name] = vector
    assert len(per_bucket) == 4  # two partitions, two buckets

    namer = ManifestNamer()
    index_entries = [
        IndexManifestEntry(
            FileKind.ADD, partition, bucket, write_deletion_vectors(table, bucket_vectors, namer)
        )
        for (partition, bucket), bucket_vectors in sorted(per_bucket.items())
    ]
    manifest_name = namer("index-manifest")
    write_index_manifest(table.storage, table.manifest_path(manifest_name), index_entries)
    _publish_snapshot_with_index_manifest(table, manifest_name)

    ours_now = ours.get_table(IDENTIFIER)
    all_vectors = {name: v for bucket_vectors in per_bucket.values() for name, v in bucket_vectors.items()}
    assert read_deletion_vectors(ours_now, index_entries[0].file) == per_bucket[sorted(per_bucket)[0]]
    java_rows = java.read(NAME)
    assert len(java_rows) == len(expected) - 4
    assert set(java_rows) < set(expected)
    assert _surviving_rows(ours_now, all_vectors) == java_rows
    assert _our_read(ours) == java_rows


def _our_write(ours: Catalog, rows: list[Row], kinds: list[str]) -> None:
    """One commit of upserts and deletes through our writer (its inline lookup compaction writes vectors)."""
    table = ours.get_table(IDENTIFIER)
    names = [c for c, _ in COLUMNS]
    schema = table.arrow_schema
    upserts = [dict(zip(names, r, strict=True)) for r, k in zip(rows, kinds, strict=True) if k == "+I"]
    deletes = [{"dt": r[0], "id": r[1]} for r, k in zip(rows, kinds, strict=True) if k == "-D"]
    writer = table.new_write()
    assert isinstance(writer, KeyValueTableWrite)
    writer.write(pa.Table.from_pylist(upserts, schema=schema))
    if deletes:
        writer.delete(
            pa.Table.from_pylist(deletes, schema=pa.schema([schema.field("dt"), schema.field("id")]))
        )
    table.new_commit().commit(writer.prepare_commit())
    writer.close()


def test_java_reads_a_deletion_vector_table_we_write_and_writes_on(ours: Catalog, java: Any) -> None:
    """We write the history (our compactions write the vectors): Java's read equals ours; Java's writer then
    restores our vectors, writes and compacts on, and we read what Java reads."""
    ours.create_table(
        IDENTIFIER,
        pa.schema(
            [
                pa.field("dt", pa.string(), nullable=False),
                pa.field("id", pa.int64(), nullable=False),
                pa.field("name", pa.string()),
                pa.field("score", pa.int64()),
            ]
        ),
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options=OPTIONS,
    )
    model: dict[tuple[str, int], Row] = {}
    for rows, kinds in _commits(4):
        _our_write(ours, rows, kinds)
        for row, kind in zip(rows, kinds, strict=True):
            model.pop(row[:2], None) if kind == "-D" else model.update({row[:2]: row})
    table = ours.get_table(IDENTIFIER)
    ours_vectors = _all_vectors(table)
    assert any(not v.is_empty() for v in ours_vectors.values()), "our compactions wrote no deletion vector"
    expected = sorted(model.values(), key=lambda r: tuple((v is not None, v) for v in r))
    assert _our_read(ours) == expected
    assert java.read(NAME) == expected
    assert _surviving_rows(table, ours_vectors) == expected

    for rows, kinds in _commits(2, start=4):
        java.write(NAME, rows, kinds)
        for row, kind in zip(rows, kinds, strict=True):
            model.pop(row[:2], None) if kind == "-D" else model.update({row[:2]: row})
    expected = sorted(model.values(), key=lambda r: tuple((v is not None, v) for v in r))
    assert java.read(NAME) == expected
    assert _our_read(ours) == expected
    table = ours.get_table(IDENTIFIER)
    assert _surviving_rows(table, _all_vectors(table)) == expected


def _all_vectors(table: Table) -> dict[str, DeletionVector]:
    return {
        name: vector
        for index in table.index_entries()
        if index.file.index_type == DELETION_VECTORS_INDEX
        for name, vector in read_deletion_vectors(table, index.file).items()
    }


def _publish_snapshot_with_index_manifest(table: Table, index_manifest: str) -> None:
    """Copy the latest snapshot as the next one, with another index manifest (the data files stay)."""
    latest = table.latest_snapshot()
    assert latest is not None
    path = table.snapshot_manager.snapshot_path(latest.id)
    snapshot = json.loads(table.storage.read_bytes(path))
    snapshot["id"] = latest.id + 1
    snapshot["indexManifest"] = index_manifest
    snapshot["commitKind"] = "COMPACT"
    snapshot["deltaRecordCount"] = 0
    table.storage.write_if_absent(
        table.snapshot_manager.snapshot_path(latest.id + 1), json.dumps(snapshot).encode()
    )
    table.storage.write_bytes(
        table.snapshot_manager.hint_path("LATEST"), str(latest.id + 1).encode(), overwrite=True
    )


# --- Roaring bitmaps ------------------------------------------------------------------------------------


def _cases() -> list[np.ndarray[Any, np.dtype[np.int64]]]:
    rng = np.random.default_rng(20240901)
    cases = [
        np.empty(0, np.int64),
        np.arange(3),
        np.arange(4),
        np.array([0, 1, 2, 3, 10]),
        np.array([0, 1, 2, 3, 4, 10]),
        np.arange(0, 8192, 2),
        np.arange(0, 8194, 2),
        np.concatenate([np.arange(i * 32, i * 32 + 3) for i in range(2047)]),
        np.concatenate([np.arange(i * 32, i * 32 + 3) for i in range(2048)]),
        np.arange(65530, 65550),
        np.array([2**31 - 1]),
    ]
    for density in (0.001, 0.03, 0.07, 0.3, 0.6, 0.97, 0.9999):
        for width in (3000, 70_000, 300_000):
            cases.append(np.flatnonzero(rng.random(width) < density) + int(rng.integers(0, 2**20)))
    cases.append(np.unique(rng.integers(0, 2**31 - 1, 5000)))
    starts = np.arange(0, 2**24, 9000)  # many short runs over 256 containers
    lengths = rng.integers(1, 200, len(starts))
    cases.append(np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)]))
    return [np.asarray(c, np.int64) for c in cases]


def test_roaring_serialization_is_javas(java: Any) -> None:
    """Java builds each bitmap from the values (``bitmapOf``), run-optimizes and serializes it."""
    roaring = java.jvm.org.apache.paimon.shade.org.roaringbitmap.RoaringBitmap
    nio = java.jvm.java.nio
    for values in _cases():
        ints = java.gateway.new_array(java.jvm.int, len(values))
        if len(values):
            nio.ByteBuffer.wrap(bytearray(values.astype(">i4").tobytes())).asIntBuffer().get(ints)
        bitmap = roaring.bitmapOf(ints)
        bitmap.runOptimize()
        buffer = nio.ByteBuffer.allocate(bitmap.serializedSizeInBytes())
        bitmap.serialize(buffer)
        assert serialize_roaring32(values) == bytes(buffer.array()), f"{len(values)} values from {values[:5]}"
