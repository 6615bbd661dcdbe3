"""Deletion vectors on disk: Roaring bitmaps (32- and 64-bit), the framed form, index files, index manifests.

pyroaring (CRoaring) is the reference for the portable 32-bit serialization: for every set of positions our
bytes equal ``BitMap(positions).serialize()`` (CRoaring's ``run_optimize`` picks containers by the same
rule as Java's ``runOptimize``; tests/java_interop checks against Java's RoaringBitmap itself).
"""

from __future__ import annotations

import ast
import io
import re
import struct
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64

import paimon_core.deletionvectors
from paimon_core import Catalog
from paimon_core.deletionvectors import (
    MAGIC_32,
    MAGIC_64,
    MAX_POSITION_32,
    MAX_POSITION_64,
    DeletionVector,
    decode_index_file,
    deserialize_roaring32,
    deserialize_roaring64,
    encode_index_file,
    read_deletion_vector,
    read_deletion_vectors,
    serialize_roaring32,
    serialize_roaring64,
    write_deletion_vectors,
)
from paimon_core.errors import CorruptDeletionVectorError, CorruptMetadataError
from paimon_core.manifest import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    DeletionVectorRange,
    FileKind,
    IndexFileMeta,
    IndexManifestEntry,
    ManifestNamer,
    read_index_manifest,
    write_index_manifest,
)
from paimon_core.storage import StorageBackend, clear_memory_store, get_backend

Positions = npt.NDArray[np.int64]


# --- strategies -------------------------------------------------------------------------------------------


@st.composite
def position_sets(draw: st.DrawFn, max_position: int = MAX_POSITION_32) -> Positions:
    """Sorted distinct positions mixing the shapes that give each container kind: scattered values (array
    containers), long runs (run containers), random blocks of any density (bitmap containers, or runs), near
    container boundaries and anywhere in the range."""
    base = st.one_of(
        st.integers(0, 300_000),
        st.integers(1, 40).map(lambda k: k * 65536 - 3),
        st.integers(0, max_position),
    )
    parts: list[Positions] = [np.empty(0, np.int64)]
    for kind in draw(st.lists(st.sampled_from(["sparse", "run", "block"]), max_size=4)):
        start = draw(base)
        if kind == "sparse":
            offsets = draw(st.lists(st.integers(0, 200_000), max_size=60))
            parts.append(start + np.array(offsets, np.int64))
        elif kind == "run":
            parts.append(start + np.arange(draw(st.integers(1, 140_000)), dtype=np.int64))
        else:
            rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
            density = draw(st.sampled_from([0.01, 0.07, 0.2, 0.5, 0.93, 0.9995]))
            width = draw(st.sampled_from([5000, 65536, 131072]))
            parts.append(start + np.flatnonzero(rng.random(width) < density).astype(np.int64))
    positions = np.unique(np.concatenate(parts))
    return positions[positions <= max_position]


def pyroaring_bytes(positions: Positions) -> bytes:
    return bytes(BitMap(positions.tolist()).serialize())


def containers(bitmap: bytes) -> tuple[list[str], list[int]]:
    """The container kinds ('array', 'bitmap', 'run') and cardinalities of a portable 32-bit bitmap."""
    (cookie,) = struct.unpack_from("<I", bitmap, 0)
    if cookie & 0xFFFF == 12347:
        count = (cookie >> 16) + 1
        flags = np.unpackbits(np.frombuffer(bitmap, np.uint8, (count + 7) // 8, 4), bitorder="little")
        at = 4 + (count + 7) // 8
    else:
        count = struct.unpack_from("<I", bitmap, 4)[0]
        flags = np.zeros(count, np.uint8)
        at = 8
    cards = [c + 1 for c in struct.unpack_from(f"<{2 * count}H", bitmap, at)[1::2]]
    kinds = ["run" if flags[i] else ("bitmap" if cards[i] > 4096 else "array") for i in range(count)]
    return kinds, cards


# --- 32-bit Roaring bitmaps -------------------------------------------------------------------------------


@given(position_sets())
@example(np.empty(0, np.int64))
@example(np.array([MAX_POSITION_32], np.int64))
@example(np.arange(65530, 65550, dtype=np.int64))  # a run across a container boundary is two runs
def test_roaring32_matches_pyroaring_and_round_trips(positions: Positions) -> None:
    ours = serialize_roaring32(positions)
    assert ours == pyroaring_bytes(positions)
    back, end = deserialize_roaring32(ours)
    assert end == len(ours)
    assert back.dtype == np.uint32
    np.testing.assert_array_equal(back, positions)


@pytest.mark.parametrize(
    ("positions", "kinds"),
    [
        # Three consecutive values: as a run 6 bytes, as an array 6 bytes; Java keeps the array on a tie.
        (np.arange(3), ["array"]),
        (np.arange(4), ["run"]),
        (np.array([0, 1, 2, 3, 10]), ["array"]),  # two runs: 10 bytes either way
        (np.array([0, 1, 2, 3, 4, 10]), ["run"]),
        (np.arange(0, 8192, 2), ["array"]),  # 4096 values
        (np.arange(0, 8194, 2), ["bitmap"]),  # 4097 values
        # A bitmap becomes runs below 8192 bytes: 2047 runs take 8190, 2048 take 8194.
        (np.concatenate([np.arange(i * 32, i * 32 + 3) for i in range(2047)]), ["run"]),
        (np.concatenate([np.arange(i * 32, i * 32 + 3) for i in range(2048)]), ["bitmap"]),
        (np.array([5, 65536 + 7, 2**31 - 1]), ["array", "array", "array"]),
    ],
)
def test_container_choice_follows_run_optimize(positions: npt.ArrayLike, kinds: list[str]) -> None:
    p = np.asarray(positions, np.int64)
    ours = serialize_roaring32(p)
    assert containers(ours)[0] == kinds
    assert ours == pyroaring_bytes(p)


@given(position_sets())
def test_roaring32_reads_unoptimized_containers(positions: Positions) -> None:
    """Bitmaps written without run optimization (arrays and bitmaps where runs would be smaller), and with
    runs where arrays would be smaller, as other writers may leave them."""
    plain = BitMap(positions.tolist(), optimize=False)
    np.testing.assert_array_equal(deserialize_roaring32(bytes(plain.serialize()))[0], positions)
    runs = BitMap(optimize=False)
    for start, stop in _runs(positions):
        runs.add_range(start, stop)
    np.testing.assert_array_equal(deserialize_roaring32(bytes(runs.serialize()))[0], positions)


def _runs(positions: Positions) -> Iterator[tuple[int, int]]:
    if not len(positions):
        return
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(positions)]])
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        yield int(positions[s]), int(positions[e - 1]) + 1


def test_roaring32_reads_at_an_offset_and_reports_its_end() -> None:
    bitmap = serialize_roaring32(np.array([1, 2, 3, 100_000]))
    data = b"xyz" + bitmap + b"tail"
    values, end = deserialize_roaring32(data, 3)
    assert values.tolist() == [1, 2, 3, 100_000]
    assert data[end:] == b"tail"


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda b: b[:-1], id="truncated-data"),
        pytest.param(lambda b: b[:6], id="truncated-header"),
        pytest.param(lambda b: b"", id="empty"),
        pytest.param(lambda b: struct.pack("<I", 999) + b[4:], id="cookie"),
        pytest.param(lambda b: struct.pack("<II", 12346, 70_000) + b[8:], id="container-count"),
    ],
)
def test_malformed_roaring32_raises_the_typed_error(mangle: Any) -> None:
    good = serialize_roaring32(np.array([3, 1_000_000, 1_000_001]))
    with pytest.raises(CorruptDeletionVectorError):
        deserialize_roaring32(mangle(good))


@given(
    st.lists(st.integers(0, 300_000), max_size=40).map(lambda v: np.unique(np.array(v, np.int64))),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 64),
)
def test_mangled_bitmaps_raise_only_the_typed_error(
    positions: Positions, changes: list[tuple[int, int]], cut: int
) -> None:
    """Whatever bytes a (checksum-valid) frame holds, decoding gives sorted positions or the typed error."""
    for serialize, deserialize in (
        (serialize_roaring32, deserialize_roaring32),
        (serialize_roaring64, deserialize_roaring64),
    ):
        data = bytearray(serialize(positions))
        for at, value in changes:
            data[at % len(data)] = value
        mangled = bytes(data[: len(data) - cut % len(data)])
        try:
            values, end = deserialize(mangled)
        except CorruptDeletionVectorError:
            continue
        assert end <= len(mangled)
        assert (np.diff(values.astype(np.int64)) > 0).all()


def test_roaring32_refuses_out_of_order_contents() -> None:
    # Two array containers with keys 1 then 0.
    header = struct.pack("<II", 12346, 2) + struct.pack("<4H", 1, 0, 0, 0) + struct.pack("<2I", 24, 26)
    with pytest.raises(CorruptDeletionVectorError, match="keys"):
        deserialize_roaring32(header + struct.pack("<2H", 5, 5))
    # One array container holding 9 then 4.
    header = struct.pack("<II", 12346, 1) + struct.pack("<2H", 0, 1) + struct.pack("<I", 16)
    with pytest.raises(CorruptDeletionVectorError, match="increasing"):
        deserialize_roaring32(header + struct.pack("<2H", 9, 4))
    # A bitmap container claiming 5000 values with none set.
    header = struct.pack("<II", 12346, 1) + struct.pack("<2H", 0, 4999) + struct.pack("<I", 16)
    with pytest.raises(CorruptDeletionVectorError, match="cardinality"):
        deserialize_roaring32(header + bytes(8192))


# --- 64-bit positions -------------------------------------------------------------------------------------


@given(
    st.one_of(
        position_sets(),
        st.lists(st.integers(0, 3 * 2**32), max_size=80).map(lambda v: np.unique(np.array(v, np.int64))),
    )
)
@example(np.array([0, 2**32 * 1023 + 5], np.int64))
@example(np.array([0, 2**32 * 1024 + 5], np.int64))
def test_roaring64_round_trips(positions: Positions) -> None:
    ours = serialize_roaring64(positions)
    back, end = deserialize_roaring64(ours)
    assert end == len(ours)
    np.testing.assert_array_equal(back, positions)
    # CRoaring writes only the 32-bit bitmaps that hold positions; Java (and we) write every key up to the
    # largest, empty ones included. Below 2**32 that is the same single bitmap; above, both read alike.
    reference = bytes(BitMap64(positions.tolist()).serialize())
    if len(positions) and positions[-1] < 2**32:
        assert ours == reference
    np.testing.assert_array_equal(deserialize_roaring64(reference)[0], positions)


def test_roaring64_writes_every_key_up_to_the_largest() -> None:
    ours = serialize_roaring64(np.array([2 * 2**32 + 1]))
    assert struct.unpack_from("<Q", ours)[0] == 3
    empty = serialize_roaring32(np.empty(0, np.int64))
    assert ours[8:12] == struct.pack("<I", 0) and ours[12 : 12 + len(empty)] == empty
    assert serialize_roaring64(np.empty(0, np.int64)) == struct.pack("<Q", 0)
    # Beyond 2**42 (no real file) only the keys holding positions are written: the largest position is fine.
    far = serialize_roaring64(np.array([1, MAX_POSITION_64]))
    assert struct.unpack_from("<Q", far)[0] == 2
    assert deserialize_roaring64(far)[0].tolist() == [1, MAX_POSITION_64]


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x01\x00\x00", id="truncated-count"),
        pytest.param(struct.pack("<q", -1), id="negative-count"),
        pytest.param(struct.pack("<Q", 1), id="truncated-key"),
        pytest.param(struct.pack("<Qi", 1, -1) + serialize_roaring32(np.array([1])), id="negative-key"),
        pytest.param(
            struct.pack("<Q", 2) + (struct.pack("<I", 0) + serialize_roaring32(np.array([1]))) * 2,
            id="repeated-key",
        ),
    ],
)
def test_malformed_roaring64_raises_the_typed_error(data: bytes) -> None:
    with pytest.raises(CorruptDeletionVectorError):
        deserialize_roaring64(data)


# --- DeletionVector ---------------------------------------------------------------------------------------


@given(position_sets(), st.booleans())
def test_framed_vector_round_trips_and_detects_its_kind(positions: Positions, bitmap64: bool) -> None:
    vector = DeletionVector(positions, bitmap64=bitmap64)
    framed = vector.serialize()
    size, magic = struct.unpack_from(">i4s", framed)
    assert size == len(framed) - 8
    assert magic == (struct.pack("<i", MAGIC_64) if bitmap64 else struct.pack(">i", MAGIC_32))
    assert struct.unpack(">I", framed[-4:])[0] == zlib.crc32(framed[4:-4])
    if not bitmap64:
        assert framed[8:-4] == pyroaring_bytes(positions)
    back = DeletionVector.deserialize(framed)
    assert back == vector
    assert back.bitmap64 == bitmap64
    assert back.cardinality == len(positions)
    np.testing.assert_array_equal(back.positions, positions)


def test_add_merge_and_masks() -> None:
    vector = DeletionVector([5, 1])
    vector.add(3)
    vector.add(np.array([1, 9], np.uint32))
    other = DeletionVector([0, 9])
    vector.merge(other)
    assert vector.positions.tolist() == [0, 1, 3, 5, 9]
    assert len(vector) == vector.cardinality == 5
    assert vector.is_deleted(3) and not vector.is_deleted(4) and not vector.is_deleted(10)
    assert vector.deleted_mask(12).tolist() == [i in (0, 1, 3, 5, 9) for i in range(12)]
    assert not vector.positions.flags.writeable
    assert DeletionVector().is_empty() and DeletionVector().deleted_mask(3).tolist() == [False] * 3
    assert DeletionVector.union([DeletionVector([1]), DeletionVector([2])]) == DeletionVector([1, 2])
    with pytest.raises(CorruptDeletionVectorError, match="has 9 rows"):
        vector.deleted_mask(9)


def test_positions_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="outside"):
        DeletionVector([-1])
    with pytest.raises(ValueError, match="outside"):
        DeletionVector([MAX_POSITION_32 + 1])
    with pytest.raises(ValueError, match="integers"):
        DeletionVector([1.5])
    DeletionVector([MAX_POSITION_32 + 1], bitmap64=True)
    with pytest.raises(ValueError):
        DeletionVector([MAX_POSITION_64 + 1], bitmap64=True)
    with pytest.raises(ValueError):
        DeletionVector().merge(DeletionVector([2**40], bitmap64=True))


def _frame(bitmap64: bool = False) -> bytes:
    return DeletionVector([1, 2, 3, 70_000], bitmap64=bitmap64).serialize()


@pytest.mark.parametrize("bitmap64", [False, True])
@pytest.mark.parametrize(
    ("mangle", "match"),
    [
        pytest.param(lambda b: b[:4] + b"\x00\x00\x00\x01" + b[8:], "magic", id="magic"),
        pytest.param(lambda b: b[:-1] + bytes([b[-1] ^ 1]), "checksum", id="crc"),
        pytest.param(lambda b: b[:12] + bytes([b[12] ^ 0x40]) + b[13:], "checksum", id="flipped-bit"),
        pytest.param(lambda b: b[:-3], "truncated", id="truncated"),
        pytest.param(lambda b: b[:2], "truncated", id="no-size"),
        pytest.param(lambda b: struct.pack(">i", -5) + b[4:], "small", id="negative-size"),
        pytest.param(lambda b: b + b"\x00", "after", id="trailing"),
    ],
)
def test_corrupt_frames_raise_the_typed_error(bitmap64: bool, mangle: Any, match: str) -> None:
    with pytest.raises(CorruptDeletionVectorError, match=match) as info:
        DeletionVector.deserialize(mangle(_frame(bitmap64)))
    assert isinstance(info.value, CorruptMetadataError)


def test_a_bitmap_shorter_than_its_frame_is_corrupt() -> None:
    payload = struct.pack(">i", MAGIC_32) + serialize_roaring32(np.array([1])) + b"\x00\x00"
    framed = struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))
    with pytest.raises(CorruptDeletionVectorError, match="before"):
        DeletionVector.deserialize(framed)


def test_recorded_length_is_checked_per_kind() -> None:
    for bitmap64, extra in ((False, 0), (True, 8)):
        framed = _frame(bitmap64)
        size = len(framed) - 8
        DeletionVector.deserialize(framed, length=size + extra)
        with pytest.raises(CorruptDeletionVectorError, match="recorded length"):
            DeletionVector.deserialize(framed, length=size + extra + 1)


# --- index files ------------------------------------------------------------------------------------------


class FakeTable:
    """The two things index files need of a table."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.storage: StorageBackend = get_backend(root, {})

    def index_path(self, file_name: str) -> str:
        return f"{self.root}/index/{file_name}"


@pytest.fixture
def table() -> Iterator[FakeTable]:
    root = f"memory://dv-{uuid.uuid4().hex}/db.db/t"
    yield FakeTable(root)
    clear_memory_store(root)


@settings(max_examples=40)
@given(st.lists(st.tuples(position_sets(), st.booleans()), max_size=5))
def test_index_file_bytes_round_trip(vectors: list[tuple[Positions, bool]]) -> None:
    given_vectors = {f"data-{i}.parquet": DeletionVector(p, bitmap64=b) for i, (p, b) in enumerate(vectors)}
    data, ranges = encode_index_file(given_vectors)
    assert data[0] == 1
    assert [r.data_file for r in ranges] == list(given_vectors)
    offset = 1
    for r, vector in zip(ranges, given_vectors.values(), strict=True):
        assert r.offset == offset
        (size,) = struct.unpack_from(">i", data, r.offset)
        assert r.length == (size + 8 if vector.bitmap64 else size)
        assert r.cardinality == vector.cardinality
        offset += size + 8
    assert offset == len(data)
    assert decode_index_file(data, ranges) == given_vectors


def test_index_file_written_and_read_through_storage(table: FakeTable) -> None:
    vectors = {
        "data-b.parquet": DeletionVector([0, 7, 8, 9]),
        "data-a.parquet": DeletionVector(np.arange(100_000, 200_000)),
        "data-c.parquet": DeletionVector([2**33], bitmap64=True),
    }
    namer = ManifestNamer()
    meta = write_deletion_vectors(table, vectors, namer)
    assert meta.index_type == DELETION_VECTORS_INDEX == "DELETION_VECTORS"
    assert re.fullmatch(r"index-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}-0", meta.file_name)
    data = table.storage.read_bytes(table.index_path(meta.file_name))
    assert meta.file_size == len(data)
    assert meta.row_count == 3
    assert meta.dv_ranges is not None
    assert [(r.data_file, r.cardinality) for r in meta.dv_ranges] == [
        ("data-b.parquet", 4),
        ("data-a.parquet", 100_000),
        ("data-c.parquet", 1),
    ]
    assert meta.dv_ranges[0].offset == 1
    assert read_deletion_vectors(table, meta) == vectors
    assert list(read_deletion_vectors(table, meta)) == list(vectors)
    for r in meta.dv_ranges:
        one = read_deletion_vector(table.storage, table.index_path(meta.file_name), r.offset, r.length)
        assert one == vectors[r.data_file]
    assert write_deletion_vectors(table, {}, namer).file_name.endswith("-1")


def test_an_empty_index_file_holds_only_the_version(table: FakeTable) -> None:
    meta = write_deletion_vectors(table, {})
    assert (meta.file_size, meta.row_count, meta.dv_ranges) == (1, 0, ())
    assert table.storage.read_bytes(table.index_path(meta.file_name)) == b"\x01"
    assert read_deletion_vectors(table, meta) == {}


def test_corrupt_index_files_raise_the_typed_error(table: FakeTable) -> None:
    meta = write_deletion_vectors(table, {"f1": DeletionVector([1, 2]), "f2": DeletionVector([3])})
    path = table.index_path(meta.file_name)
    good = table.storage.read_bytes(path)
    assert meta.dv_ranges is not None
    second = meta.dv_ranges[1]

    def rewritten(data: bytes) -> IndexFileMeta:
        name = f"index-{uuid.uuid4()}-0"
        table.storage.write_bytes(table.index_path(name), data)
        return IndexFileMeta(DELETION_VECTORS_INDEX, name, len(data), 2, dv_ranges=meta.dv_ranges)

    with pytest.raises(CorruptDeletionVectorError, match="version"):
        read_deletion_vectors(table, rewritten(b"\x02" + good[1:]))
    flipped = bytearray(good)
    flipped[second.offset + 10] ^= 0xFF
    with pytest.raises(CorruptDeletionVectorError, match="checksum") as info:
        read_deletion_vectors(table, rewritten(bytes(flipped)))
    assert info.value.data_file == "f2"
    assert info.value.path is not None and info.value.path.endswith("-0")
    with pytest.raises(CorruptDeletionVectorError, match="truncated"):
        read_deletion_vectors(table, rewritten(good[:-2]))
    with pytest.raises(CorruptDeletionVectorError, match="truncated"):
        read_deletion_vectors(table, rewritten(good[: second.offset + 2]))
    wrong_count = DeletionVectorRange("f2", second.offset, second.length, 5)
    with pytest.raises(CorruptDeletionVectorError, match="says 5"):
        decode_index_file(good, [wrong_count])
    wrong_offset = DeletionVectorRange("f2", second.offset + 1, second.length, None)
    with pytest.raises(CorruptDeletionVectorError, match="f2"):
        decode_index_file(good, [wrong_offset])
    missing = IndexFileMeta(DELETION_VECTORS_INDEX, "index-gone-0", 1, 0, dv_ranges=())
    with pytest.raises(CorruptDeletionVectorError, match="missing"):
        read_deletion_vectors(table, missing)
    with pytest.raises(ValueError, match="HASH"):
        read_deletion_vectors(table, IndexFileMeta(HASH_INDEX, meta.file_name, 4, 1))


def test_a_table_is_an_index_file_table(catalog: Catalog, tmp_path: Path) -> None:
    import pyarrow as pa

    real = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    meta = write_deletion_vectors(real, {"f": DeletionVector([4])})
    assert Path(real.path, "index", meta.file_name).is_file()
    assert read_deletion_vectors(real, meta) == {"f": DeletionVector([4])}


# --- index manifests --------------------------------------------------------------------------------------


@pytest.fixture
def storage() -> Iterator[StorageBackend]:
    root = f"memory://dv-manifest-{uuid.uuid4().hex}"
    yield get_backend(root, {})
    clear_memory_store(root)


def test_index_manifest_round_trips_ranges(storage: StorageBackend) -> None:
    ranges = (
        DeletionVectorRange("data-1.parquet", 1, 30, 4),
        DeletionVectorRange("data-2.parquet", 39, 22, None),
    )
    entries = [
        IndexManifestEntry(FileKind.ADD, b"\x00" * 8, 0, IndexFileMeta(HASH_INDEX, "index-h-0", 40, 10)),
        IndexManifestEntry(
            FileKind.ADD,
            b"\x00" * 8,
            1,
            IndexFileMeta(DELETION_VECTORS_INDEX, "index-d-0", 69, 2, dv_ranges=ranges),
        ),
        IndexManifestEntry(
            FileKind.ADD,
            b"\x00" * 8,
            2,
            IndexFileMeta(DELETION_VECTORS_INDEX, "index-d-1", 1, 0, dv_ranges=()),
        ),
    ]
    path = "memory://dv-manifest/index-manifest-1"
    try:
        write_index_manifest(storage, path, entries)
        assert read_index_manifest(storage, path) == entries
        schema = fastavro.reader(io.BytesIO(storage.read_bytes(path))).writer_schema
        assert isinstance(schema, dict)
        names = [f["name"] for f in schema["fields"]]
        assert "_DELETIONS_VECTORS_RANGES" in names and "_DELETION_VECTORS_RANGES" not in names
    finally:
        clear_memory_store("memory://dv-manifest")


_RANGE_09 = {
    "type": "record",
    "name": "record__DELETION_VECTORS_RANGES",
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
    ],
}


@pytest.mark.parametrize("field", ["_DELETIONS_VECTORS_RANGES", "_DELETION_VECTORS_RANGES"])
def test_index_manifest_reads_ranges_without_cardinality_under_either_name(
    storage: StorageBackend, field: str
) -> None:
    """Java 0.9 writes elements without ``_CARDINALITY``; its commit-message schema spells the field
    ``_DELETION_VECTORS_RANGES``. Both read."""
    schema = {
        "type": "record",
        "name": "org.apache.paimon.avro.generated.record",
        "fields": [
            {"name": "_VERSION", "type": "int"},
            {"name": "_KIND", "type": "int"},
            {"name": "_PARTITION", "type": "bytes"},
            {"name": "_BUCKET", "type": "int"},
            {"name": "_INDEX_TYPE", "type": "string"},
            {"name": "_FILE_NAME", "type": "string"},
            {"name": "_FILE_SIZE", "type": "long"},
            {"name": "_ROW_COUNT", "type": "long"},
            {"name": field, "type": ["null", {"type": "array", "items": _RANGE_09}], "default": None},
        ],
    }
    record = {
        "_VERSION": 1,
        "_KIND": 0,
        "_PARTITION": b"\x00" * 8,
        "_BUCKET": 3,
        "_INDEX_TYPE": "DELETION_VECTORS",
        "_FILE_NAME": "index-x-0",
        "_FILE_SIZE": 31,
        "_ROW_COUNT": 1,
        field: [{"f0": "data-0.parquet", "f1": 1, "f2": 22}],
    }
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    path = "memory://dv-manifest-09/index-manifest-0"
    try:
        storage.write_bytes(path, out.getvalue())
        (entry,) = read_index_manifest(storage, path)
    finally:
        clear_memory_store("memory://dv-manifest-09")
    assert entry.bucket == 3
    assert entry.file.dv_ranges == (DeletionVectorRange("data-0.parquet", 1, 22, None),)


# --- layering ---------------------------------------------------------------------------------------------


def test_deletionvectors_imports_nothing_above_the_manifest_layer() -> None:
    """The table's read and write paths import this package, so it must not import them."""
    package = Path(paimon_core.deletionvectors.__file__).parent
    above = ("paimon_core.table", "paimon_core.compact", "paimon_core.maintenance", "paimon_core.catalog")
    found = []
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(above):
                found.append((source.name, node.module))
            elif isinstance(node, ast.Import):
                found += [(source.name, a.name) for a in node.names if a.name.startswith(above)]
    assert found == []
