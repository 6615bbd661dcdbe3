"""Manifest files and manifest lists: Avro schemas, round trips, exact sizes, stats, rolling (docs/format.md#manifest-entries)."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import fastavro
import pytest

from paimon_core.binary_row import deserialize_row, serialize_row
from paimon_core.errors import ConfigError, CorruptMetadataError
from paimon_core.manifest import (
    EMPTY_ROW_BYTES,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    DataFileMeta,
    DuplicateFileError,
    FileKind,
    ManifestContext,
    ManifestEntry,
    ManifestNamer,
    RollingManifestWriter,
    SimpleStats,
    avro_codec,
    compute_partition_stats,
    local_wall_clock_millis,
    merge_entries,
    read_manifest_file,
    read_manifest_list,
    wall_clock_to_epoch_millis,
    write_manifest_file,
    write_manifest_list,
    write_manifests,
)
from paimon_core.storage import StorageBackend, clear_memory_store, get_backend
from paimon_core.types import BigIntType, DataType, DateType, IntType, string_type

PARTITION_TYPES: tuple[DataType, ...] = (string_type(), IntType())


@pytest.fixture
def table_path() -> Iterator[str]:
    path = f"memory://manifests-{uuid.uuid4().hex}/db.db/t"
    yield path
    clear_memory_store(path)


@pytest.fixture
def storage(table_path: str) -> StorageBackend:
    return get_backend(table_path, {})


@pytest.fixture
def ctx(storage: StorageBackend, table_path: str) -> ManifestContext:
    return ManifestContext(storage, f"{table_path}/manifest", PARTITION_TYPES)


def part(dt: str | None, hour: int | None) -> bytes:
    return serialize_row([dt, hour], PARTITION_TYPES)


def data_file(name: str, **changes: Any) -> DataFileMeta:
    values: dict[str, Any] = dict(
        file_name=name,
        file_size=1000,
        row_count=10,
        min_key=EMPTY_ROW_BYTES,
        max_key=EMPTY_ROW_BYTES,
        key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY,
        min_sequence_number=0,
        max_sequence_number=9,
        schema_id=0,
        level=0,
        extra_files=(),
        creation_time=1_700_000_000_123,
        delete_row_count=0,
        file_source=0,
        value_stats_cols=(),
    )
    values.update(changes)
    return DataFileMeta(**values)


def add(name: str, partition: bytes | None = None, bucket: int = 0, **changes: Any) -> ManifestEntry:
    return ManifestEntry(
        FileKind.ADD, partition or part("2024-01-01", 1), bucket, -1, data_file(name, **changes)
    )


# --- Avro schemas -------------------------------------------------------------------------------------------


def _fields(record: dict[str, Any]) -> dict[str, Any]:
    return {f["name"]: f for f in record["fields"]}


def test_entry_schema_field_order_matches_the_spec() -> None:
    assert [f["name"] for f in MANIFEST_ENTRY_SCHEMA["fields"]] == [
        "_VERSION",
        "_KIND",
        "_PARTITION",
        "_BUCKET",
        "_TOTAL_BUCKETS",
        "_FILE",
    ]
    file_record = _fields(MANIFEST_ENTRY_SCHEMA)["_FILE"]["type"]
    assert [f["name"] for f in file_record["fields"]] == [
        "_FILE_NAME",
        "_FILE_SIZE",
        "_ROW_COUNT",
        "_MIN_KEY",
        "_MAX_KEY",
        "_KEY_STATS",
        "_VALUE_STATS",
        "_MIN_SEQUENCE_NUMBER",
        "_MAX_SEQUENCE_NUMBER",
        "_SCHEMA_ID",
        "_LEVEL",
        "_EXTRA_FILES",
        "_CREATION_TIME",
        "_DELETE_ROW_COUNT",
        "_EMBEDDED_FILE_INDEX",
        "_FILE_SOURCE",
        "_VALUE_STATS_COLS",
        "_EXTERNAL_PATH",
        "_FIRST_ROW_ID",
        "_WRITE_COLS",
        "_WRITE_COLS_SEQUENCES",
    ]


def _all_fields(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict) and schema.get("type") == "record":
        for f in schema["fields"]:
            yield f
            yield from _all_fields(f["type"])
    elif isinstance(schema, list):
        for branch in schema:
            yield from _all_fields(branch)
    elif isinstance(schema, dict) and schema.get("type") == "array":
        yield from _all_fields(schema["items"])


@pytest.mark.parametrize("schema", [MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_META_SCHEMA])
def test_every_union_has_null_first_and_a_null_default(schema: dict[str, Any]) -> None:
    unions = [f for f in _all_fields(schema) if isinstance(f["type"], list)]
    assert unions  # the check below must look at something
    for f in unions:
        assert f["type"][0] == "null", f["name"]
        assert len(f["type"]) == 2, f["name"]
        assert "default" in f and f["default"] is None, f["name"]


def test_required_fields_are_not_nullable() -> None:
    file_fields = _fields(_fields(MANIFEST_ENTRY_SCHEMA)["_FILE"]["type"])
    for name in ("_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_LEVEL", "_SCHEMA_ID"):
        assert not isinstance(file_fields[name]["type"], list)
    assert file_fields["_EXTRA_FILES"]["type"] == {"type": "array", "items": "string"}
    assert file_fields["_CREATION_TIME"]["type"] == [
        "null",
        {"type": "long", "logicalType": "timestamp-millis"},
    ]
    null_counts = _fields(file_fields["_VALUE_STATS"]["type"])["_NULL_COUNTS"]["type"]
    assert null_counts == ["null", {"type": "array", "items": ["null", "long"]}]
    list_fields = _fields(MANIFEST_FILE_META_SCHEMA)
    for name in ("_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL"):
        assert list_fields[name]["type"] == ["null", "int"]
    for name in ("_MIN_ROW_ID", "_MAX_ROW_ID"):
        assert list_fields[name]["type"] == ["null", "long"]


def test_record_names_follow_java() -> None:
    assert MANIFEST_ENTRY_SCHEMA["name"] == "org.apache.paimon.avro.generated.record"
    assert _fields(MANIFEST_ENTRY_SCHEMA)["_FILE"]["type"]["name"] == "record__FILE"
    assert _fields(MANIFEST_FILE_META_SCHEMA)["_PARTITION_STATS"]["type"]["name"] == "record__PARTITION_STATS"


def test_written_file_header(ctx: ManifestContext) -> None:
    meta = write_manifest_file(ctx.storage, ctx.path("manifest-a-0"), [add("f1")], PARTITION_TYPES)
    data = ctx.storage.read_bytes(ctx.path(meta.file_name))
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == "zstandard"
    first = next(reader)
    assert isinstance(first, dict) and isinstance(reader.writer_schema, dict)
    assert first["_VERSION"] == 2
    assert first["_FILE"]["_CREATION_TIME"] == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=timezone.utc)
    creation = _fields(_fields(reader.writer_schema)["_FILE"]["type"])["_CREATION_TIME"]
    assert creation["type"] == ["null", {"type": "long", "logicalType": "timestamp-millis"}]


# --- round trips --------------------------------------------------------------------------------------------


def test_manifest_round_trip_keeps_every_field(ctx: ManifestContext) -> None:
    stats = SimpleStats(
        serialize_row([1, "a"], [IntType(), string_type()]), b"\x00" * 4 + b"x" * 8, (0, None)
    )
    full = data_file(
        "data-1.parquet",
        file_size=123456789012,
        row_count=2**40,
        min_key=serialize_row([5], [BigIntType()]),
        max_key=serialize_row([9], [BigIntType()]),
        key_stats=stats,
        value_stats=SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, None),
        min_sequence_number=-1,
        max_sequence_number=2**62,
        schema_id=3,
        level=5,
        extra_files=("data-1.parquet.index",),
        creation_time=None,
        delete_row_count=None,
        embedded_index=b"\x01\x02",
        file_source=1,
        value_stats_cols=("a", "b"),
        external_path="s3://bucket/elsewhere/data-1.parquet",
        first_row_id=1000,
        write_cols=("a",),
        write_cols_sequences=(4, 5),
    )
    entries = [
        ManifestEntry(FileKind.ADD, part("2024-01-01", None), 3, 8, full),
        ManifestEntry(FileKind.DELETE, part(None, 7), -2, -1, data_file("old")),
        add("plain", value_stats_cols=None, delete_row_count=None, file_source=None),
    ]
    meta = write_manifest_file(ctx.storage, ctx.path("manifest-b-0"), entries, PARTITION_TYPES)
    assert read_manifest_file(ctx.storage, ctx.path("manifest-b-0")) == entries
    assert meta.file_size == ctx.storage.size(ctx.path("manifest-b-0"))
    assert meta.file_name == "manifest-b-0"


def test_manifest_meta_summary(ctx: ManifestContext) -> None:
    entries = [
        add("a", part("2024-01-02", 3), bucket=4, schema_id=2, level=1),
        add("b", part("2024-01-01", None), bucket=1, schema_id=5, level=0),
        ManifestEntry(FileKind.DELETE, part(None, 9), 2, -1, data_file("c", schema_id=1, level=3)),
    ]
    meta = write_manifest_file(ctx.storage, ctx.path("m"), entries, PARTITION_TYPES)
    assert (meta.num_added_files, meta.num_deleted_files) == (2, 1)
    assert meta.schema_id == 5
    assert (meta.min_bucket, meta.max_bucket, meta.min_level, meta.max_level) == (1, 4, 0, 3)
    assert (meta.min_row_id, meta.max_row_id) == (None, None)
    assert meta.total_buckets is None  # -1 (unaware bucket) is not a bucket count
    stats = meta.partition_stats
    assert deserialize_row(stats.min_values, PARTITION_TYPES) == ["2024-01-01", 3]
    assert deserialize_row(stats.max_values, PARTITION_TYPES) == ["2024-01-02", 9]
    assert stats.null_counts == (1, 1)


def test_row_id_range_and_total_buckets() -> None:
    entries = [
        ManifestEntry(FileKind.ADD, EMPTY_ROW_BYTES, 0, 4, data_file("a", first_row_id=100, row_count=10)),
        ManifestEntry(FileKind.ADD, EMPTY_ROW_BYTES, 1, 4, data_file("b", first_row_id=0, row_count=50)),
    ]
    storage = get_backend("memory://rowids", {})
    try:
        meta = write_manifest_file(storage, "memory://rowids/m", entries)
    finally:
        clear_memory_store("memory://rowids")
    assert (meta.min_row_id, meta.max_row_id) == (0, 109)
    assert meta.total_buckets == 4
    assert meta.partition_stats == SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())


def test_partition_stats_count_nulls_per_entry() -> None:
    types = [DateType()]
    entries = [
        ManifestEntry(FileKind.ADD, serialize_row([None], types), 0, -1, data_file(str(i))) for i in range(3)
    ]
    stats = compute_partition_stats(entries, types)
    assert stats.null_counts == (3,)
    assert deserialize_row(stats.min_values, types) == [None]


def test_manifest_list_round_trip(ctx: ManifestContext) -> None:
    metas = write_manifests(ctx, [add("a"), add("b", part("x", 2))])
    metas += write_manifests(ctx, [add("c", first_row_id=5)])
    size = write_manifest_list(ctx.storage, ctx.path("manifest-list-1"), metas)
    assert size == ctx.storage.size(ctx.path("manifest-list-1"))
    assert read_manifest_list(ctx.storage, ctx.path("manifest-list-1")) == metas
    write_manifest_list(ctx.storage, ctx.path("manifest-list-empty"), [])
    assert read_manifest_list(ctx.storage, ctx.path("manifest-list-empty")) == []


def test_files_are_never_overwritten(ctx: ManifestContext) -> None:
    write_manifest_file(ctx.storage, ctx.path("m"), [add("a")])
    with pytest.raises(FileExistsError):
        write_manifest_file(ctx.storage, ctx.path("m"), [add("b")])
    with pytest.raises(ValueError):
        write_manifest_file(ctx.storage, ctx.path("m2"), [])


@pytest.mark.parametrize("compression", ["zstd", "deflate", "null", "none"])
def test_codecs(storage: StorageBackend, table_path: str, compression: str) -> None:
    ctx = ManifestContext.for_table(
        storage, table_path, PARTITION_TYPES, {"manifest.compression": compression}
    )
    metas = write_manifests(ctx, [add("a"), add("b")])
    header = fastavro.reader(io.BytesIO(storage.read_bytes(ctx.path(metas[0].file_name))))
    assert header.codec == avro_codec(compression)
    assert [e.file.file_name for e in read_manifest_file(storage, ctx.path(metas[0].file_name))] == ["a", "b"]


def test_codec_names() -> None:
    assert avro_codec("zstd") == "zstandard"
    assert avro_codec("ZSTD") == "zstandard"
    assert avro_codec("none") == "null"
    with pytest.raises(ConfigError):
        avro_codec("lzo")


def test_for_table_reads_options(storage: StorageBackend, table_path: str) -> None:
    ctx = ManifestContext.for_table(
        storage,
        table_path,
        [],
        {
            "manifest.target-file-size": "1 kb",
            "manifest.merge-min-count": "3",
            "manifest.full-compaction-threshold-size": "2kb",
            "file.compression.zstd-level": "5",
        },
    )
    assert ctx.manifest_dir == f"{table_path}/manifest"
    assert (ctx.target_file_size, ctx.merge_min_count, ctx.full_compaction_threshold) == (1024, 3, 2048)
    assert (ctx.codec, ctx.compression_level) == ("zstandard", 5)


# --- tolerance and errors -----------------------------------------------------------------------------------


_OLD_FILE_FIELDS = {
    "_FILE_NAME",
    "_FILE_SIZE",
    "_ROW_COUNT",
    "_MIN_KEY",
    "_MAX_KEY",
    "_KEY_STATS",
    "_VALUE_STATS",
    "_MIN_SEQUENCE_NUMBER",
    "_MAX_SEQUENCE_NUMBER",
    "_SCHEMA_ID",
    "_LEVEL",
    "_EXTRA_FILES",
    "_CREATION_TIME",
}


def test_reads_manifests_of_older_writers(storage: StorageBackend, table_path: str) -> None:
    # A manifest as Paimon 0.7 wrote it: no delete count, file source, stats cols, external path, row ids...
    # and with different record names.
    old_file = dict(_fields(MANIFEST_ENTRY_SCHEMA)["_FILE"]["type"])
    old_file["name"] = "DataFileMeta"
    old_file["fields"] = [f for f in old_file["fields"] if f["name"] in _OLD_FILE_FIELDS]
    old_schema = dict(MANIFEST_ENTRY_SCHEMA, name="ManifestEntry")
    old_schema["fields"] = [
        f if f["name"] != "_FILE" else {"name": "_FILE", "type": old_file}
        for f in MANIFEST_ENTRY_SCHEMA["fields"]
    ]
    record = {
        "_VERSION": 2,
        "_KIND": 0,
        "_PARTITION": EMPTY_ROW_BYTES,
        "_BUCKET": 0,
        "_TOTAL_BUCKETS": 1,
        "_FILE": {
            "_FILE_NAME": "data-old.orc",
            "_FILE_SIZE": 10,
            "_ROW_COUNT": 1,
            "_MIN_KEY": EMPTY_ROW_BYTES,
            "_MAX_KEY": EMPTY_ROW_BYTES,
            "_KEY_STATS": {
                "_MIN_VALUES": EMPTY_ROW_BYTES,
                "_MAX_VALUES": EMPTY_ROW_BYTES,
                "_NULL_COUNTS": [],
            },
            "_VALUE_STATS": {
                "_MIN_VALUES": EMPTY_ROW_BYTES,
                "_MAX_VALUES": EMPTY_ROW_BYTES,
                "_NULL_COUNTS": None,
            },
            "_MIN_SEQUENCE_NUMBER": 0,
            "_MAX_SEQUENCE_NUMBER": 0,
            "_SCHEMA_ID": 0,
            "_LEVEL": 0,
            "_EXTRA_FILES": [],
            "_CREATION_TIME": None,
        },
    }
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(old_schema), [record], codec="deflate")
    path = f"{table_path}/manifest/manifest-old-0"
    storage.write_bytes(path, buffer.getvalue())
    (entry,) = read_manifest_file(storage, path)
    assert entry.file.file_name == "data-old.orc"
    assert entry.file.delete_row_count is None
    assert entry.file.file_source is None
    assert entry.file.value_stats_cols is None
    assert entry.file.external_path is None
    assert entry.file.first_row_id is None
    assert entry.file.value_stats.null_counts is None


def test_missing_manifest_is_reported_as_corruption(storage: StorageBackend, table_path: str) -> None:
    path = f"{table_path}/manifest/manifest-gone-0"
    with pytest.raises(CorruptMetadataError, match="missing") as info:
        read_manifest_file(storage, path)
    assert info.value.path == path
    with pytest.raises(CorruptMetadataError, match="missing"):
        read_manifest_list(storage, path)


def test_garbage_is_reported_as_corruption(storage: StorageBackend, table_path: str) -> None:
    path = f"{table_path}/manifest/manifest-bad-0"
    storage.write_bytes(path, b"Obj\x01 not really avro")
    with pytest.raises(CorruptMetadataError) as info:
        read_manifest_file(storage, path)
    assert info.value.path == path


def test_a_manifest_list_is_not_a_manifest(ctx: ManifestContext) -> None:
    metas = write_manifests(ctx, [add("a")])
    write_manifest_list(ctx.storage, ctx.path("list"), metas)
    with pytest.raises(CorruptMetadataError):
        read_manifest_file(ctx.storage, ctx.path("list"))


def test_unsupported_entry_version_is_rejected(storage: StorageBackend, table_path: str) -> None:
    schema = fastavro.parse_schema(MANIFEST_ENTRY_SCHEMA)
    good = read_record_of(add("a"))
    good["_VERSION"] = 1
    buffer = io.BytesIO()
    fastavro.writer(buffer, schema, [good])
    path = f"{table_path}/manifest/v1"
    storage.write_bytes(path, buffer.getvalue())
    with pytest.raises(CorruptMetadataError, match="_VERSION"):
        read_manifest_file(storage, path)


def read_record_of(entry: ManifestEntry) -> dict[str, Any]:
    from paimon_core.manifest._avro import entry_to_record

    return entry_to_record(entry)


# --- rolling ------------------------------------------------------------------------------------------------


def test_rolling_writer_splits_at_the_target_size(storage: StorageBackend, table_path: str) -> None:
    ctx = ManifestContext(storage, f"{table_path}/manifest", PARTITION_TYPES, target_file_size=1)
    entries = [add(f"f{i}", part("d", i % 7)) for i in range(2500)]
    metas = write_manifests(ctx, entries)
    assert [m.num_added_files for m in metas] == [1000, 1000, 500]
    read_back = [e for m in metas for e in read_manifest_file(storage, ctx.path(m.file_name))]
    assert read_back == entries
    for meta in metas:
        assert meta.file_size == storage.size(ctx.path(meta.file_name))
    # One namer: one uuid, counting names.
    prefixes = {m.file_name.rsplit("-", 1)[0] for m in metas}
    assert len(prefixes) == 1
    assert [m.file_name.rsplit("-", 1)[1] for m in metas] == ["0", "1", "2"]


def test_rolling_writer_keeps_small_outputs_in_one_file(ctx: ManifestContext) -> None:
    metas = write_manifests(ctx, [add(f"f{i}") for i in range(2500)])
    assert len(metas) == 1
    assert write_manifests(ctx, []) == []


def test_rolling_writer_abort_deletes_written_files(storage: StorageBackend, table_path: str) -> None:
    ctx = ManifestContext(storage, f"{table_path}/manifest", PARTITION_TYPES, target_file_size=1)
    with pytest.raises(RuntimeError), RollingManifestWriter(ctx) as writer:
        writer.write_all(add(f"f{i}") for i in range(1500))
        assert len(writer.result) == 1
        raise RuntimeError("boom")
    assert storage.list_dir(f"{table_path}/manifest") == []


def test_namer() -> None:
    namer = ManifestNamer()
    first, second = namer("manifest"), namer("manifest-list")
    assert first.startswith("manifest-") and first.endswith("-0")
    assert second.startswith("manifest-list-") and second.endswith("-1")
    assert first.split("-", 1)[1][:-2] == second.split("-", 2)[2][:-2]


# --- entries ------------------------------------------------------------------------------------------------


def test_merge_entries() -> None:
    a, b, c = add("a"), add("b"), add("c")
    assert merge_entries([a, b, a.as_delete(), c]) == [b, c]
    # A DELETE whose ADD is in an earlier manifest survives, in order.
    orphan = add("z").as_delete()
    assert merge_entries([orphan, b]) == [orphan, b]
    with pytest.raises(DuplicateFileError) as info:
        merge_entries([a, b, a])
    assert info.value.identifier.file_name == "a"
    # Java also refuses an ADD after an unmatched DELETE of the same file.
    with pytest.raises(DuplicateFileError):
        merge_entries([orphan, add("z")])


@pytest.mark.parametrize(
    "other",
    [
        add("a", level=1),
        add("a", bucket=1),
        add("a", part("2024-01-02", 1)),
        add("a", extra_files=("a.index",)),
        add("a", embedded_index=b"\x00"),
        add("a", external_path="s3://x/a"),
    ],
)
def test_identity_includes_every_identifying_field(other: ManifestEntry) -> None:
    a = add("a")
    assert merge_entries([a, other.as_delete()]) == [a, other.as_delete()]
    # Stats and sizes are not part of the identity.
    same = add("a", file_size=1, row_count=1, creation_time=None)
    assert merge_entries([a, same.as_delete()]) == []


def test_creation_time_is_local_wall_clock() -> None:
    instant = 1_700_000_000_123
    wall = local_wall_clock_millis(instant)
    local = datetime.fromtimestamp(instant / 1000)
    expected = datetime(local.year, local.month, local.day, local.hour, local.minute, local.second, 123000)
    assert wall == int((expected - datetime(1970, 1, 1)).total_seconds() * 1000)
    assert wall_clock_to_epoch_millis(wall) == instant
    assert data_file("x", creation_time=wall).creation_time_epoch_millis() == instant
    assert data_file("x", creation_time=None).creation_time_epoch_millis() is None


def _varint(value: int) -> bytes:
    encoded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while encoded > 0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


def _avro_bytes(data: bytes) -> bytes:
    return _varint(len(data)) + data


def _streamed_zstd_frame(data: bytes) -> bytes:
    """One zstd frame written as a stream, as Java's zstd-jni ``ZstdOutputStream`` does: no content size in
    its header. Built with the zstd library fastavro's ``zstandard`` extra installed here."""
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            zstd = None
    if zstd is not None:
        compressor = zstd.ZstdCompressor(level=1)
        frame = bytes(compressor.compress(data) + compressor.flush())
        assert zstd.get_frame_info(frame).decompressed_size is None
        return frame
    import zstandard  # fastavro before 1.12 uses this one

    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=1).stream_writer(out, closefd=False) as writer:
        writer.write(data)
    frame = out.getvalue()
    assert zstandard.frame_content_size(frame) == -1
    return frame


def test_reads_zstandard_blocks_without_a_content_size(storage: StorageBackend, table_path: str) -> None:
    # Java's Avro codec streams each block through ZstdOutputStream: the frame has no content size, which a
    # one-shot decompressor may refuse. fastavro's own codec must read it. Build such a file by hand (header,
    # two blocks, sync markers).
    import json

    from paimon_core.manifest._avro import entry_to_record

    entries = [add("a"), add("b", part("2024-01-02", 2))]
    schema = fastavro.parse_schema(MANIFEST_ENTRY_SCHEMA)
    block = io.BytesIO()
    for entry in entries:
        fastavro.schemaless_writer(block, schema, entry_to_record(entry))
    frame = _streamed_zstd_frame(block.getvalue())
    sync = bytes(range(16))
    header = b"Obj\x01" + _varint(2)
    header += _avro_bytes(b"avro.schema") + _avro_bytes(json.dumps(MANIFEST_ENTRY_SCHEMA).encode())
    header += _avro_bytes(b"avro.codec") + _avro_bytes(b"zstandard") + _varint(0) + sync
    body = (_varint(len(entries)) + _avro_bytes(frame) + sync) * 2
    path = f"{table_path}/manifest/manifest-java-0"
    storage.write_bytes(path, header + body)
    assert read_manifest_file(storage, path) == entries * 2


def test_paimon_codec_names_are_accepted_everywhere(storage: StorageBackend, table_path: str) -> None:
    ctx = ManifestContext(storage, f"{table_path}/manifest", PARTITION_TYPES, codec="zstd")
    assert ctx.codec == "zstandard"
    (meta,) = write_manifests(ctx, [add("a")])
    write_manifest_file(storage, ctx.path("m-deflate"), [add("b")], PARTITION_TYPES, codec="deflate")
    write_manifest_list(storage, ctx.path("list"), [meta], codec="zstd")
    assert fastavro.reader(io.BytesIO(storage.read_bytes(ctx.path("list")))).codec == "zstandard"
    assert read_manifest_file(storage, ctx.path("m-deflate"))[0].file.file_name == "b"
