"""Deletion-vector index files: every deletion vector of one (partition, bucket) in one file under ``index/``.

Layout: one version byte (1), then each data file's framed deletion vector (:mod:`._vector`) back to back.
The file's index manifest entry (``_INDEX_TYPE`` ``DELETION_VECTORS``) has ``_ROW_COUNT`` = number of
vectors and one :class:`~paimon_core.manifest.DeletionVectorRange` per data file, in file order: the offset
of the vector's size int (the first is 1) and its length. Java 0.9 reads a file's vectors one after the
other in range order without seeking, so the ranges must follow the file's order, as they do here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import BinaryIO, Protocol

from paimon_core.deletionvectors._vector import DeletionVector, decode_frame, frame_size
from paimon_core.errors import CorruptDeletionVectorError
from paimon_core.manifest import DELETION_VECTORS_INDEX, DeletionVectorRange, IndexFileMeta, ManifestNamer
from paimon_core.storage import StorageBackend

__all__ = [
    "INDEX_FILE_VERSION",
    "IndexFileTable",
    "decode_index_file",
    "encode_index_file",
    "read_deletion_vector",
    "read_deletion_vectors",
    "write_deletion_vectors",
]

INDEX_FILE_VERSION = 1
_MAX_FILE_SIZE = (1 << 31) - 1  # ranges hold int32 offsets and lengths


class IndexFileTable(Protocol):
    """What index files need of a table (:class:`paimon_core.table.Table` has both)."""

    @property
    def storage(self) -> StorageBackend: ...

    def index_path(self, file_name: str) -> str: ...


def encode_index_file(vectors: Mapping[str, DeletionVector]) -> tuple[bytes, tuple[DeletionVectorRange, ...]]:
    """The bytes of an index file holding ``vectors`` (data file name → vector), in the mapping's order,
    and each vector's range.

    Raises:
        ValueError: the file would exceed 2 GiB, beyond what a range's int32 offset can address.
    """
    parts = [bytes([INDEX_FILE_VERSION])]
    ranges = []
    offset = 1
    for data_file, vector in vectors.items():
        frame = vector.serialize()
        length = len(frame) if vector.bitmap64 else len(frame) - 8
        ranges.append(DeletionVectorRange(data_file, offset, length, vector.cardinality))
        parts.append(frame)
        offset += len(frame)
        if offset > _MAX_FILE_SIZE:
            raise ValueError("a deletion-vector index file cannot exceed 2 GiB")
    return b"".join(parts), tuple(ranges)


def decode_index_file(
    data: bytes | memoryview, ranges: Sequence[DeletionVectorRange], path: str | None = None
) -> dict[str, DeletionVector]:
    """The deletion vectors of an index file's bytes, one per range.

    Raises:
        CorruptDeletionVectorError: wrong version byte, or a vector that does not decode at its range.
    """
    _check_version(data[:1], path)
    return {r.data_file: _decode_at(data, r.offset, r, r.offset, path) for r in ranges}


def _check_version(head: bytes | memoryview, path: str | None) -> None:
    if bytes(head) != bytes([INDEX_FILE_VERSION]):
        raise CorruptDeletionVectorError(
            f"deletion-vector index file {path or ''} has version {bytes(head)!r}, expected {INDEX_FILE_VERSION}",
            path,
        )


def _decode_at(
    data: bytes | memoryview, at: int, r: DeletionVectorRange | None, offset: int, path: str | None
) -> DeletionVector:
    """Decode the frame at ``data[at]``, which sits at ``offset`` of the file and is described by ``r``."""
    data_file = (r.data_file or None) if r is not None else None
    where = f"deletion vector{f' of {data_file}' if data_file else ''} at offset {offset} of {path or 'an index file'}"
    try:
        vector, _ = decode_frame(data, at, r.length if r is not None else None)
    except CorruptDeletionVectorError as exc:
        raise CorruptDeletionVectorError(f"{where}: {exc}", path, data_file) from None
    if r is not None and r.cardinality is not None and r.cardinality != vector.cardinality:
        raise CorruptDeletionVectorError(
            f"{where} holds {vector.cardinality} positions, the index manifest says {r.cardinality}",
            path,
            data_file,
        )
    return vector


def write_deletion_vectors(
    table: IndexFileTable, vectors: Mapping[str, DeletionVector], namer: ManifestNamer | None = None
) -> IndexFileMeta:
    """Write the deletion vectors of one (partition, bucket) as a new index file under ``index/``.

    Java writes one file even when no vector is left (only the version byte), so that the new entry
    replaces the bucket's previous file in the index manifest; so does this.

    Args:
        table: the table (its storage and ``index/`` directory).
        vectors: data file name → deletion vector, in the order to write them.
        namer: names the file ``index-<uuid>-<n>``; pass the writer's own to keep one UUID per writer.

    Returns:
        The file's index manifest metadata, ranges included.

    Raises:
        FileExistsError: a file of that name exists.
        ValueError: the file would exceed 2 GiB.
    """
    data, ranges = encode_index_file(vectors)
    name = (namer or ManifestNamer())("index")
    table.storage.write_bytes(table.index_path(name), data, overwrite=False)
    return IndexFileMeta(DELETION_VECTORS_INDEX, name, len(data), len(ranges), dv_ranges=ranges)


def read_deletion_vectors(table: IndexFileTable, meta: IndexFileMeta) -> dict[str, DeletionVector]:
    """Every deletion vector of an index file: data file name → vector, in file order.

    Seeks to each range rather than reading the whole file.

    Raises:
        CorruptDeletionVectorError: the file is missing, has another version, or a vector is corrupt.
        ValueError: ``meta`` is not a deletion-vector index file.
    """
    if meta.index_type != DELETION_VECTORS_INDEX or meta.dv_ranges is None:
        raise ValueError(f"{meta.file_name} is a {meta.index_type} index file, not a deletion-vector one")
    path = meta.external_path or table.index_path(meta.file_name)
    try:
        with table.storage.open_input(path) as f:
            _check_version(f.read(1), path)
            return {r.data_file: _read_at(f, r.offset, r, path) for r in meta.dv_ranges}
    except FileNotFoundError:
        raise CorruptDeletionVectorError(f"deletion-vector index file {path} is missing", path) from None


def read_deletion_vector(
    storage: StorageBackend, path: str, offset: int, length: int | None = None
) -> DeletionVector:
    """One deletion vector of an index file, by its range (what a split's deletion file names).

    Args:
        storage: the table's storage.
        path: the index file.
        offset: where the vector's size int is.
        length: the recorded length, checked when given.

    Raises:
        CorruptDeletionVectorError: the file is missing, has another version, or the vector is corrupt.
    """
    r = None if length is None else DeletionVectorRange("", offset, length)
    try:
        with storage.open_input(path) as f:
            _check_version(f.read(1), path)
            return _read_at(f, offset, r, path)
    except FileNotFoundError:
        raise CorruptDeletionVectorError(f"deletion-vector index file {path} is missing", path) from None


def _read_at(f: BinaryIO, offset: int, r: DeletionVectorRange | None, path: str) -> DeletionVector:
    f.seek(offset)
    frame = f.read(4)
    if len(frame) == 4:
        try:
            rest = frame_size(frame, 0) - 4
        except CorruptDeletionVectorError as exc:
            raise CorruptDeletionVectorError(
                f"deletion vector at offset {offset} of {path}: {exc}",
                path,
                (r.data_file or None) if r else None,
            ) from None
        frame += f.read(rest)
    return _decode_at(frame, 0, r, offset, path)
