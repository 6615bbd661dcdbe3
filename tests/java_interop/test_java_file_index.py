"""File indexes (bloom filter, bitmap) against Java Apache Paimon 0.9 (marker ``java_interop``).

Java writes tables with ``file-index.*`` options and our planning skips the very files Java's planning
skips (indexes embedded in the manifest; Java 0.9 evaluates ``.index`` files only when it opens a file,
so for those the rows are compared); we write such tables and Java's planning skips our files by our
bytes, and its reads (which open our ``.index`` files) return our rows.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.fileindex import decode_file_index
from paimon_core.fileindex._bitmap import read_bitmap_keys
from paimon_core.fileindex._keys import key_type

pytestmark = pytest.mark.java_interop

COLUMNS = [("id", "INT"), ("name", "STRING"), ("score", "DOUBLE")]
SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())])
COMMITS = 4
# Every file spans the same id range (ids of one residue mod COMMITS each): statistics prune nothing, so
# any file skipped is skipped by its index.
BLOOM_ON_ID = {
    "bucket": "-1",
    "write-only": "true",
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": "100",
    "file-index.bloom-filter.id.fpp": "0.01",
}
EMBEDDED = {
    **BLOOM_ON_ID,
    "file-index.bloom-filter.columns": "id,score",
    "file-index.bloom-filter.score.items": "100",
    "file-index.bitmap.columns": "id,name",
    "file-index.in-manifest-threshold": "8 kb",
}
IN_INDEX_FILES = {
    "bucket": "-1",
    "write-only": "true",
    "file-index.bitmap.columns": "name",
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": "100",
    "file-index.in-manifest-threshold": "16 b",
}


def _rows(commit: int) -> list[tuple[Any, ...]]:
    ids = range(commit, 200, COMMITS)
    return [(i, None if i % 11 == 0 else f"n{i}", i / 2) for i in ids]


def _java_planned_files(java: Any, name: str, where: tuple[str, str, Any]) -> set[str]:
    """The data files of Java's batch plan of ``name`` with the filter ``where`` pushed down."""
    table = java.table(name)
    builder = java._call(java.paimon.table.Table, table, "newReadBuilder")
    predicate = java._predicate(table.rowType(), where)
    builder = java._call(
        java.paimon.table.source.ReadBuilder,
        builder,
        "withFilter",
        (java.paimon.predicate.Predicate, predicate),
    )
    return {str(f.fileName()) for split in builder.newScan().plan().splits() for f in split.dataFiles()}


def _our_planned_files(catalog: Catalog, name: str, where: tuple[str, str, Any]) -> set[str]:
    return {f.file_name for split in catalog.get_table(name).scan([where]).plan() for f in split.files}


def _ours(catalog: Catalog, name: str, where: tuple[str, str, Any]) -> list[tuple[Any, ...]]:
    rows = catalog.get_table(name).to_arrow(filter=[where]).to_pylist()
    return sorted((tuple(row.values()) for row in rows), key=lambda row: row[0])


WHERES = [
    ("id", "=", 13),
    ("id", "=", 1000),
    ("id", "=", 42),
    ("name", "=", "n78"),
    ("name", "=", "n150x"),
    ("score", "=", 6.5),
    ("score", "=", 6.25),
]


def _all_files(catalog: Catalog, name: str) -> set[str]:
    return {e.file.file_name for e in catalog.get_table(name).live_entries()}


def test_java_embedded_indexes_skip_the_files_java_skips(ours: Catalog, java: Any) -> None:
    java.create_table("t", COLUMNS, options=EMBEDDED)
    for commit in range(COMMITS):
        java.write("t", _rows(commit))
    files = ours.get_table("db.t").live_entries()
    assert len(files) == COMMITS and all(e.file.embedded_index for e in files)
    for where in WHERES:
        planned = _our_planned_files(ours, "db.t", where)
        assert planned == _java_planned_files(java, "t", where), where
        assert _ours(ours, "db.t", where) == java.read("t", where), where
    assert len(_our_planned_files(ours, "db.t", ("id", "=", 13))) == 1  # the indexes did skip
    assert len(_our_planned_files(ours, "db.t", ("name", "=", "n150x"))) == 0


def test_java_index_files_skip_files_and_read_as_java_reads(ours: Catalog, java: Any) -> None:
    java.create_table("t", COLUMNS, options=IN_INDEX_FILES)
    for commit in range(COMMITS):
        java.write("t", _rows(commit))
    entries = ours.get_table("db.t").live_entries()
    assert all(e.file.embedded_index is None and e.file.extra_files for e in entries)
    for where in WHERES:
        assert _ours(ours, "db.t", where) == java.read("t", where), where
    assert len(_our_planned_files(ours, "db.t", ("name", "=", "n78"))) == 1
    assert len(_our_planned_files(ours, "db.t", ("name", "=", "n150x"))) == 0


def _arrow(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)


def _write_ours(catalog: Catalog, options: dict[str, str]) -> None:
    table = catalog.create_table("db.t", SCHEMA, options=options)
    for commit in range(COMMITS):
        table.append(_arrow(_rows(commit)))


def test_our_embedded_indexes_make_java_skip_the_same_files(ours: Catalog, java: Any) -> None:
    _write_ours(ours, EMBEDDED)
    assert all(e.file.embedded_index for e in ours.get_table("db.t").live_entries())
    for where in WHERES:
        planned = _java_planned_files(java, "t", where)
        assert planned == _our_planned_files(ours, "db.t", where), where
        assert java.read("t", where) == _ours(ours, "db.t", where), where
    assert len(_java_planned_files(java, "t", ("id", "=", 13))) == 1  # Java read our bitmaps
    assert len(_java_planned_files(java, "t", ("name", "=", "n150x"))) == 0


def test_our_bloom_filters_are_the_bytes_java_writes(ours: Catalog, java: Any) -> None:
    """Same rows, same options: the same bloom filter bits, byte for byte (hashes, sizing, layout)."""
    java.create_table("t", COLUMNS, options=BLOOM_ON_ID)
    ours_table = ours.create_table("db.u", SCHEMA, options=BLOOM_ON_ID)
    for commit in range(COMMITS):
        java.write("t", _rows(commit))
        ours_table.append(_arrow(_rows(commit)))
    theirs = sorted(e.file.embedded_index or b"" for e in ours.get_table("db.t").live_entries())
    assert theirs == sorted(e.file.embedded_index or b"" for e in ours_table.live_entries())
    assert all(theirs)


def test_our_index_files_are_read_by_java(ours: Catalog, java: Any) -> None:
    _write_ours(ours, IN_INDEX_FILES)
    table = ours.get_table("db.t")
    assert all(e.file.extra_files == (e.file.file_name + ".index",) for e in table.live_entries())
    for where in WHERES:
        assert java.read("t", where) == _ours(ours, "db.t", where), where
    assert len(_our_planned_files(ours, "db.t", ("name", "=", "n78"))) == 1


WIDE_COLUMNS = [("id", "INT"), ("big", "BIGINT"), ("name", "STRING"), ("score", "DOUBLE")]
WIDE = pa.schema([("id", pa.int32()), ("big", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
WIDE_OPTIONS = {
    "bucket": "-1",
    "write-only": "true",
    "file-index.in-manifest-threshold": "64 kb",
    **{f"file-index.bloom-filter.{c}.items": "100" for c in ("id", "big", "name", "score")},
}


def _wide_rows(commit: int) -> list[tuple[Any, ...]]:
    return [
        (i, -i * 10_000_000_000 if i % 3 else None, f"é{i}" if i % 5 else None, i / 3 - 10)
        for i in range(commit, 120, COMMITS)
    ]


# Java Paimon before 1.2 keeps one index of a column listed for two types: one type per table here.
@pytest.mark.parametrize("index_type", ["bloom-filter", "bitmap"])
def test_each_index_holds_what_javas_holds(ours: Catalog, java: Any, index_type: str) -> None:
    """Same rows, same options: per column, the bloom filter bytes Java writes (hashes of ints, longs,
    doubles and UTF-8 strings, sizing, layout), or a bitmap with the same values, nulls and row count."""
    options = {**WIDE_OPTIONS, f"file-index.{index_type}.columns": ",".join(WIDE.names)}
    if index_type == "bitmap":
        options = {k: v for k, v in options.items() if not k.endswith(".items")}
    java.create_table("t", WIDE_COLUMNS, options=options)
    table = ours.create_table("db.u", WIDE, options=options)
    for commit in range(COMMITS):
        rows = _wide_rows(commit)
        java.write("t", rows)
        table.append(pa.Table.from_pylist([dict(zip(WIDE.names, r, strict=True)) for r in rows], WIDE))

    def indexes(name: str) -> list[dict[str, dict[str, bytes | None]]]:
        entries = sorted(ours.get_table(name).live_entries(), key=lambda e: e.file.min_sequence_number)
        decoded = [decode_file_index(e.file.embedded_index or b"") for e in entries]
        assert len(decoded) == COMMITS and all(d is not None for d in decoded)
        return [d for d in decoded if d is not None]

    fields = {f.name: f.type for f in table.schema.fields}
    for theirs, mine in zip(indexes("db.t"), indexes("db.u"), strict=True):
        assert theirs.keys() == mine.keys() == set(WIDE.names)
        for column, kinds in theirs.items():
            assert kinds.keys() == mine[column].keys() == {index_type}
            java_bytes, our_bytes = kinds[index_type], mine[column][index_type]
            assert java_bytes is not None and our_bytes is not None
            if index_type == "bloom-filter":
                assert java_bytes == our_bytes, column
            else:
                key = key_type(fields[column])
                assert key is not None
                assert read_bitmap_keys(key, java_bytes) == read_bitmap_keys(key, our_bytes) is not None, (
                    column
                )


def test_a_primary_key_table_we_index_reads_in_java(ours: Catalog, java: Any) -> None:
    """A primary-key table with a bitmap on its key (Java 0.9 writes no index for such tables): we write
    and compact it, we skip files by our indexes, and Java reads the rows as we do."""
    options = {"bucket": "1", "file-index.bitmap.columns": "id", "num-sorted-run.compaction-trigger": "10"}
    java.create_table("kv", COLUMNS, primary_keys=["id"], options=options)
    java.write("kv", _rows(0))
    table = ours.get_table("db.kv")
    for commit in range(1, COMMITS):
        table.append(_arrow(_rows(commit)))
    table.append(_arrow([(13, "updated", 0.0), (1000, "new", 1.0)]))
    ours_files = [e for e in table.live_entries() if e.file.embedded_index]
    assert len(ours_files) == COMMITS  # ours, not Java's
    # Java's file (no index; its min/max cover 13), then ours holding the old and the new version
    assert len(_our_planned_files(ours, "db.kv", ("id", "=", 13))) == 3
    for where in [*WHERES, ("id", "=", 1000)]:
        assert java.read("kv", where) == _ours(ours, "db.kv", where), where
    compact_table(table, progress=False)
    assert all(e.file.embedded_index or e.file.extra_files for e in table.live_entries())
    assert len(_our_planned_files(ours, "db.kv", ("id", "=", 500))) == 0  # within min/max, not in the index
    for where in [*WHERES, ("id", "=", 1000)]:
        assert java.read("kv", where) == _ours(ours, "db.kv", where), where
