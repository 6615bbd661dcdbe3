"""Data-file indexes (bloom filter, bitmap): written as the options ask, skipping files on read without ever
losing a row, kept and removed with their data files. Byte compatibility with Java Paimon is checked in
tests/java_interop/test_java_file_index.py."""

from __future__ import annotations

import datetime as dt
import os
import struct
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog, SchemaChange
from paimon_core.compact import compact_table
from paimon_core.errors import ConfigError
from paimon_core.fileindex import FileIndexes, decode_file_index, encode_file_index, xxhash64
from paimon_core.maintenance import expire_snapshots, remove_orphan_files
from paimon_core.predicate import parse_filter
from paimon_core.types import BigIntType

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
FILES = 4


def _rows(commit: int, count: int = 200) -> pa.Table:
    """Ids of one residue mod FILES: every file spans the same range, so statistics skip nothing."""
    ids = list(range(commit, count, FILES))
    names = [None if i % 9 == 0 else f"n{i}" for i in ids]
    return pa.table({"id": ids, "name": names, "score": [i / 2 for i in ids]}, schema=SCHEMA)


def _table(catalog: Catalog, options: dict[str, str], primary_keys: tuple[str, ...] = ()) -> Any:
    table = catalog.create_table(
        "db.t", SCHEMA, primary_keys=primary_keys, options={"write-only": "true", **options}
    )
    for commit in range(FILES):
        table.append(_rows(commit))
    return table


def _planned(table: Any, filter: Any) -> int:
    return sum(len(split.files) for split in table.scan(filter).plan())


def _ids(table: Any, filter: Any) -> list[int]:
    return sorted(table.to_arrow(filter=filter).column("id").to_pylist())


BITMAP_AND_BLOOM = {"file-index.bitmap.columns": "id,name", "file-index.bloom-filter.columns": "score"}


def test_indexes_skip_the_files_that_cannot_match(catalog: Catalog) -> None:
    table = _table(catalog, BITMAP_AND_BLOOM)
    entries = table.live_entries()
    assert len(entries) == FILES and all(e.file.extra_files or e.file.embedded_index for e in entries)
    unread = table.copy({"file-index.read.enabled": "false"})
    for filter, files in [
        ([("id", "=", 13)], 1),
        ([("id", "in", [13, 14])], 2),
        ([("name", "=", "n42")], 1),
        ([("name", "=", "n150x")], 0),
        ([("id", "=", 13), ("name", "=", "n14")], 0),  # each is in a file, never in the same one
        ([[("id", "=", 13)], [("name", "=", "n14")]], 2),
        ([("score", "=", 6.5)], 1),  # id 13, through the bloom filter (no false positive among 4 files)
    ]:
        assert _planned(table, filter) == files, filter
        assert _planned(unread, filter) == FILES, filter
        assert _ids(table, filter) == _ids(unread, filter), filter


def test_index_files_and_embedded_indexes_by_the_threshold(catalog: Catalog) -> None:
    small = {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": "60"}
    table = _table(catalog, small)
    assert all(e.file.embedded_index and not e.file.extra_files for e in table.live_entries())
    assert _planned(table, [("id", "=", 1001)]) < FILES  # out of the ids' range, but min/max say maybe
    catalog.drop_table("db.t")
    table = _table(catalog, {**small, "file-index.in-manifest-threshold": "10 b"})
    for entry in table.live_entries():
        assert entry.file.embedded_index is None
        assert entry.file.extra_files == (entry.file.file_name + ".index",)
        index = Path(table.bucket_dir(entry.partition, entry.bucket)) / entry.file.extra_files[0]
        assert decode_file_index(index.read_bytes()) is not None


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.lists(
        st.tuples(
            st.integers(-5, 30),
            st.sampled_from(["a", "b", "cc", "", "é", None]),
            st.sampled_from([0.5, -1.0, 2.0]),
        ),
        min_size=1,
        max_size=60,
    ),
    splits=st.integers(1, 4),
    leaves=st.lists(
        st.one_of(
            st.tuples(st.just("id"), st.sampled_from(["=", "in"]), st.integers(-6, 31)),
            st.tuples(st.just("name"), st.sampled_from(["=", "in"]), st.sampled_from(["a", "cc", "zz", "é"])),
            st.tuples(st.just("score"), st.just("="), st.sampled_from([0.5, 2.0, 3.0, 0.0])),
            st.tuples(st.sampled_from(["id", "name"]), st.sampled_from(["is null", "is not null"])),
        ),
        min_size=1,
        max_size=3,
    ),
    disjunction=st.booleans(),
)
def test_an_indexed_read_equals_a_full_read_filtered(
    tmp_path_factory: pytest.TempPathFactory,
    data: list[Any],
    splits: int,
    leaves: list[Any],
    disjunction: bool,
) -> None:
    """Random data over several files, random equality/IN/null filters: never a row lost to an index."""
    catalog = Catalog.open(str(tmp_path_factory.mktemp("fi") / "wh"), create=True)
    catalog.create_database("db")
    options = {
        "write-only": "true",
        "file-index.bitmap.columns": "id,name",
        "file-index.bloom-filter.columns": "id,name,score",
        "file-index.bloom-filter.id.items": "8",  # small filters: false positives happen, must be harmless
        "file-index.bloom-filter.name.items": "8",
    }
    table = catalog.create_table("db.t", SCHEMA, options=options)
    for part in range(splits):
        chunk = data[part::splits]
        if chunk:
            table.append(
                pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in chunk], SCHEMA)
            )
    terms: list[tuple[Any, ...]] = []
    for leaf in leaves:
        column, op = leaf[0], leaf[1]
        if op.startswith("is"):
            terms.append((column, op))
        elif op == "in":
            terms.append((column, op, [leaf[2], leaf[2] + 1] if isinstance(leaf[2], int) else [leaf[2]]))
        else:
            terms.append((column, op, leaf[2]))
    filter: Any = [[t] for t in terms] if disjunction else terms
    predicate, expression = parse_filter(filter, SCHEMA)
    assert predicate is not None and expression is not None
    everything = table.copy({"file-index.read.enabled": "false"}).to_arrow()
    expected = sorted(map(str, everything.filter(expression).to_pylist()))
    assert sorted(map(str, table.to_arrow(filter=filter).to_pylist())) == expected


def test_primary_key_tables_and_compaction_rewrites_keep_indexes(catalog: Catalog) -> None:
    table = _table(catalog, {"bucket": "1", "file-index.bitmap.columns": "id"}, primary_keys=("id",))
    assert all(e.file.embedded_index or e.file.extra_files for e in table.live_entries())
    assert _planned(table, [("id", "=", 13)]) == 1
    compact_table(table, progress=False)
    entries = table.live_entries()
    assert len(entries) == 1 and (entries[0].file.embedded_index or entries[0].file.extra_files)
    assert _planned(table, [("id", "=", 1000)]) == 0
    assert _ids(table, [("id", "=", 13)]) == [13]


def test_expiration_and_orphan_removal_take_index_files_with_their_data_files(catalog: Catalog) -> None:
    table = _table(catalog, {"file-index.bitmap.columns": "id", "file-index.in-manifest-threshold": "1 b"})
    directory = Path(table.bucket_dir(table.live_entries()[0].partition, 0))
    first = {p.name for p in directory.glob("*.index")}
    assert len(first) == FILES
    compact_table(table.copy({"compaction.min.file-num": "2"}), progress=False)
    writer = table.new_write()
    writer.write(_rows(0, 8))
    writer.prepare_commit()  # written, never committed: an orphan data file and its index file
    time.sleep(0.01)
    expire_snapshots(table, retain_max=1, retain_min=1, older_than="2999-01-01 00:00:00")
    live = {n for e in table.live_entries() for n in e.file.extra_files}
    remaining = {p.name for p in directory.glob("*.index")}
    assert not first & remaining and live <= remaining and len(remaining - live) == 1
    old = time.time() - 3 * 86400
    for path in directory.iterdir():
        os.utime(path, (old, old))
    remove_orphan_files(table)
    assert {p.name for p in directory.glob("*.index")} == live
    assert _ids(table, [("id", "=", 13)]) == [13]


def test_bad_file_index_options_are_refused(catalog: Catalog) -> None:
    for options, key in [
        ({"file-index.bsi.columns": "id"}, "file-index.bsi.columns"),
        ({"file-index.bitmap.columns": "nope"}, "nope"),
        (
            {"file-index.bitmap.columns": "id", "file-index.bitmap.name.version": "1"},
            "file-index.bitmap.name.version",
        ),
        (
            {"file-index.bitmap.columns": "id", "file-index.bitmap.id.version": "2"},
            "file-index.bitmap.id.version",
        ),
        ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "x"}, "fpp"),
    ]:
        table = catalog.create_table("db.bad", SCHEMA, options=options)
        with pytest.raises(ConfigError, match=key):
            table.append(_rows(0, 8))
        assert table.live_entries() == []
        catalog.drop_table("db.bad")


def test_unknown_index_types_and_versions_prune_nothing() -> None:
    predicate, _ = parse_filter([("id", "=", 5)])
    assert predicate is not None
    columns = {"id": ("id", BigIntType())}
    garbage = encode_file_index({"id": {"bsi": b"\x07garbage", "bitmap": b"\x09" + b"\x00" * 20}})
    indexes = FileIndexes.of(garbage, columns)
    assert indexes is not None and indexes.may_match(predicate)
    newer = bytearray(encode_file_index({"id": {"bitmap": b"\x01"}}))
    newer[8:12] = struct.pack(">i", 2)  # a container version not known here
    assert FileIndexes.of(bytes(newer), columns) is None
    empty = FileIndexes.of(encode_file_index({"id": {"bitmap": None}}), columns)
    assert empty is not None and not empty.may_match(predicate)  # Java's empty index: no value at all


def test_xxhash64_matches_the_reference_vectors() -> None:
    assert xxhash64(b"") & (2**64 - 1) == 0xEF46DB3751D8E999
    assert xxhash64(b"abc") & (2**64 - 1) == 0x44BC2CF5AD770999
    assert xxhash64(b"Nobody inspects the spammish repetition") & (2**64 - 1) == 0xFBCEA83C8A378BF1


def test_files_of_older_schemas_are_looked_up_by_field_id(catalog: Catalog) -> None:
    _table(catalog, {"file-index.bitmap.columns": "id,name", "file-index.in-manifest-threshold": "8 kb"})
    table = catalog.alter_table("db.t", [SchemaChange.rename_column("name", "label")])
    assert _planned(table, [("label", "=", "n42")]) == 1  # the index of 'name' answers for 'label'
    assert table.to_arrow(filter=[("label", "=", "n42")]).column("id").to_pylist() == [42]
    table = catalog.alter_table("db.t", [SchemaChange.update_column_type("id", pa.string())])
    assert _planned(table, [("id", "=", "13")]) == FILES  # another type: its index is not used
    assert table.to_arrow(filter=[("id", "=", "13")]).column("label").to_pylist() == ["n13"]


TYPED = pa.schema(
    [
        ("day", pa.date32()),
        ("at", pa.timestamp("ms")),
        ("at_us", pa.timestamp("us")),
        ("small", pa.int16()),
        ("ratio", pa.float32()),
        ("flag", pa.bool_()),
        ("blob", pa.binary()),
    ]
)


def _typed_rows(part: int) -> pa.Table:
    base = dt.datetime(2024, 1, 1)
    rows = [
        {
            "day": dt.date(2024, 1, 1) + dt.timedelta(days=i),
            "at": base + dt.timedelta(seconds=i),
            "at_us": base + dt.timedelta(microseconds=i),
            "small": i,
            "ratio": i + 0.5,
            "flag": part == 0,
            "blob": bytes([i]),
        }
        for i in range(part, 40, 2)
    ]
    return pa.Table.from_pylist(rows, TYPED)


def test_every_indexed_type_skips_by_its_own_values(catalog: Catalog) -> None:
    """Dates, timestamps (millis and micros), small ints, floats, booleans and binaries: two files whose
    statistics overlap, each filter value in exactly one of them."""
    names = ",".join(TYPED.names)
    options = {
        "write-only": "true",
        "file-index.bloom-filter.columns": names.replace(",flag", ""),
        "file-index.bitmap.columns": names.replace(",blob", ""),
        "file-index.in-manifest-threshold": "64 kb",
        **{f"file-index.bloom-filter.{n}.items": "64" for n in TYPED.names if n != "flag"},
    }
    table = catalog.create_table("db.typed", TYPED, options=options)
    table.append(_typed_rows(0))
    table.append(_typed_rows(1))
    base = dt.datetime(2024, 1, 1)
    for column, value in [
        ("day", dt.date(2024, 1, 8)),
        ("at", base + dt.timedelta(seconds=7)),
        ("at_us", base + dt.timedelta(microseconds=7)),
        ("small", 7),
        ("ratio", 7.5),
        ("flag", False),
        ("blob", bytes([7])),
    ]:
        filter = [(column, "=", value)]
        assert _planned(table, filter) == 1, column
        assert table.to_arrow(filter=filter).num_rows == (20 if column == "flag" else 1), column
        if column != "flag":  # a boolean's statistics tell the files apart too
            assert _planned(table.copy({"file-index.read.enabled": "false"}), filter) == 2, column


def _v2_bitmap(keys: list[int], rows: int) -> bytes:
    """A bitmap index of version 2 (Java Paimon 1.1+) for int keys each in one row, and one null row,
    laid out as BitmapFileIndexMetaV2 writes it: two blocks of entries behind their directory."""
    blocks = [keys[: len(keys) // 2], keys[len(keys) // 2 :]]
    encoded = [
        struct.pack(">i", len(b)) + b"".join(struct.pack(">iii", k, -1 - i, -1) for i, k in enumerate(b))
        for b in blocks
    ]
    directory = b""
    offset = 0
    for block, data in zip(blocks, encoded, strict=True):
        directory += struct.pack(">ii", block[0], offset)
        offset += len(data)
    header = struct.pack(">Bii?ii", 2, rows, len(keys), True, -1 - (rows - 1), -1)
    return header + struct.pack(">i", len(blocks)) + directory + struct.pack(">i", offset) + b"".join(encoded)


def test_bitmap_indexes_of_version_2_are_read() -> None:
    from paimon_core.types import IntType

    columns = {"id": ("id", IntType())}
    indexes = FileIndexes.of(encode_file_index({"id": {"bitmap": _v2_bitmap([1, 5, 9, 12], 5)}}), columns)
    assert indexes is not None
    for filter, matches in [
        ([("id", "=", 9)], True),
        ([("id", "=", 7)], False),
        ([("id", "in", [2, 3])], False),
        ([("id", "in", [2, 12])], True),
        ([("id", "is null")], True),
        ([("id", "is not null")], True),
    ]:
        predicate, _ = parse_filter(filter)
        assert predicate is not None and indexes.may_match(predicate) is matches, filter


def test_damaged_bloom_filters_prune_nothing() -> None:
    predicate, _ = parse_filter([("id", "=", 5)])
    assert predicate is not None
    columns = {"id": ("id", BigIntType())}
    for data in [
        b"",
        b"\x00\x00\x00\x03",
        b"\x7f\xff\xff\xff" + b"\x00" * 16,
        b"\x00\x00\x00\x00" + b"\x00" * 16,
    ]:
        indexes = FileIndexes.of(encode_file_index({"id": {"bloom-filter": data}}), columns)
        assert indexes is not None and indexes.may_match(predicate), data
    nothing_set = FileIndexes.of(
        encode_file_index({"id": {"bloom-filter": b"\x00\x00\x00\x03" + b"\x00" * 16}}), columns
    )
    assert nothing_set is not None and not nothing_set.may_match(predicate)  # a sound, empty filter: skip
