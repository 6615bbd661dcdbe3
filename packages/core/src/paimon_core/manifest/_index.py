"""Index manifests: the Avro list of a snapshot's index files (docs/primary-key-tables.md, "Dynamic bucket").

A snapshot's ``indexManifest`` names one file holding the *full* set of live index files, every entry an
ADD. A commit that changes index files writes a new one: the previous entries combined with the changes,
where a new file of a (partition, bucket, index type) replaces the old one, as Java's bucketed combiner
does. Entries carry ``_VERSION`` 1; the field names are those of Java 0.9 and 1.x alike.

A deletion-vector file's entry lists where each data file's deletion vector sits in it, in
``_DELETIONS_VECTORS_RANGES`` (sic): elements ``f0`` (data file name), ``f1`` (offset), ``f2`` (length) and,
since Java 1.0, ``_CARDINALITY``. Java 0.9 writes the same field name with the first three elements only, and
reads ours by field name, skipping ``_CARDINALITY`` (checked against Java 0.9 in tests/java_interop). Java 0.9
spells its commit-message schema ``_DELETION_VECTORS_RANGES``; a manifest carrying that name is read too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro

from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest._avro import NAMESPACE_RECORD, check_version, nullable, opt, read_ocf
from paimon_core.manifest._entry import FileKind
from paimon_core.manifest._files import read_metadata_file, write_avro_file
from paimon_core.storage import StorageBackend

__all__ = [
    "DELETION_VECTORS_INDEX",
    "HASH_INDEX",
    "DeletionVectorRange",
    "IndexFileMeta",
    "IndexManifestEntry",
    "combine_index_entries",
    "read_index_manifest",
    "write_index_manifest",
]

#: ``_INDEX_TYPE`` of the dynamic-bucket hash index.
HASH_INDEX = "HASH"
#: ``_INDEX_TYPE`` of a deletion-vector index file.
DELETION_VECTORS_INDEX = "DELETION_VECTORS"
_INDEX_ENTRY_VERSION = 1

_RANGES_FIELD = "_DELETIONS_VECTORS_RANGES"
_RANGES_FIELD_ALIAS = "_DELETION_VECTORS_RANGES"  # Java 0.9's IndexFileMeta.SCHEMA (commit messages)
_RANGE_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record__DELETIONS_VECTORS_RANGES",
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
        opt("_CARDINALITY", "long"),
    ],
}

INDEX_MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": NAMESPACE_RECORD,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        # Java declares the elements nullable, as it does every nested row.
        opt(_RANGES_FIELD, {"type": "array", "items": nullable(_RANGE_SCHEMA)}),
        opt("_EXTERNAL_PATH", "string"),
    ],
}
_PARSED_SCHEMA = fastavro.parse_schema(INDEX_MANIFEST_ENTRY_SCHEMA)


@dataclass(frozen=True)
class DeletionVectorRange:
    """Where one data file's deletion vector sits in a deletion-vector index file.

    Attributes:
        data_file: the data file's name.
        offset: position of the deletion vector's leading size int in the index file.
        length: for 32-bit bitmaps the size int's value (magic number + bitmap); for 64-bit bitmaps the
            whole frame (size int + magic number + bitmap + checksum), as Java records them.
        cardinality: deleted rows; None when the writer did not record it (Java 0.9).
    """

    data_file: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True)
class IndexFileMeta:
    """One file under ``index/``.

    Attributes:
        index_type: ``HASH`` (dynamic bucket) or ``DELETION_VECTORS``.
        file_name: its name in the table's ``index/`` directory.
        file_size: bytes.
        row_count: hashes in a hash index; deletion vectors in a deletion-vector file.
        external_path: where it lives when not under ``index/`` (written by newer Java only).
        dv_ranges: a deletion-vector file's deletion vectors, in file order; None for other index types.
    """

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    external_path: str | None = None
    dv_ranges: tuple[DeletionVectorRange, ...] | None = None


@dataclass(frozen=True)
class IndexManifestEntry:
    """An index file of one (partition, bucket), added or removed."""

    kind: FileKind
    partition: bytes
    bucket: int
    file: IndexFileMeta

    @property
    def slot(self) -> tuple[bytes, int, str]:
        """What the file indexes: a newer file of the same slot replaces it."""
        return self.partition, self.bucket, self.file.index_type


def combine_index_entries(
    previous: Iterable[IndexManifestEntry], changes: Iterable[IndexManifestEntry]
) -> list[IndexManifestEntry]:
    """The live index files after ``changes``: DELETEs remove their file, an ADD replaces its slot's file."""
    live = {e.slot: e for e in previous if e.kind == FileKind.ADD}
    for change in changes:
        current = live.get(change.slot)
        if change.kind == FileKind.ADD:
            live[change.slot] = change
        elif current is not None and current.file.file_name == change.file.file_name:
            del live[change.slot]
    return list(live.values())


def write_index_manifest(
    storage: StorageBackend,
    path: str,
    entries: Sequence[IndexManifestEntry],
    codec: str = "zstandard",
    compression_level: int | None = 1,
) -> None:
    """Write an index manifest (possibly empty) as one file."""
    records = (
        {
            "_VERSION": _INDEX_ENTRY_VERSION,
            "_KIND": int(e.kind),
            "_PARTITION": e.partition,
            "_BUCKET": e.bucket,
            "_INDEX_TYPE": e.file.index_type,
            "_FILE_NAME": e.file.file_name,
            "_FILE_SIZE": e.file.file_size,
            "_ROW_COUNT": e.file.row_count,
            _RANGES_FIELD: _ranges_to_records(e.file.dv_ranges),
            "_EXTERNAL_PATH": e.file.external_path,
        }
        for e in entries
    )
    write_avro_file(storage, path, _PARSED_SCHEMA, records, codec, compression_level)


def read_index_manifest(storage: StorageBackend, path: str) -> list[IndexManifestEntry]:
    """Read an index manifest.

    Raises:
        CorruptMetadataError: the file is missing or unreadable.
    """
    data = read_metadata_file(storage, path, "index manifest")
    entries = []
    for record in read_ocf(data, "index manifest", path):
        check_version(record, _INDEX_ENTRY_VERSION, "index manifest", path)
        try:
            entries.append(
                IndexManifestEntry(
                    kind=FileKind(record["_KIND"]),
                    partition=record["_PARTITION"],
                    bucket=record["_BUCKET"],
                    file=IndexFileMeta(
                        index_type=record["_INDEX_TYPE"],
                        file_name=record["_FILE_NAME"],
                        file_size=record["_FILE_SIZE"],
                        row_count=record["_ROW_COUNT"],
                        external_path=record.get("_EXTERNAL_PATH"),
                        dv_ranges=_records_to_ranges(record),
                    ),
                )
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise CorruptMetadataError(
                f"index manifest {path} has a malformed entry: {exc!r}", path
            ) from None
    return entries


def _ranges_to_records(ranges: tuple[DeletionVectorRange, ...] | None) -> list[dict[str, Any]] | None:
    if ranges is None:
        return None
    return [
        {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality} for r in ranges
    ]


def _records_to_ranges(record: dict[str, Any]) -> tuple[DeletionVectorRange, ...] | None:
    raw = record.get(_RANGES_FIELD)
    if raw is None:
        raw = record.get(_RANGES_FIELD_ALIAS)
    if raw is None:
        return None
    return tuple(
        DeletionVectorRange(
            data_file=r["f0"], offset=r["f1"], length=r["f2"], cardinality=r.get("_CARDINALITY")
        )
        for r in raw
    )
