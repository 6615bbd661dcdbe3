"""Index manifests: the Avro list of a snapshot's index files (docs/primary-key-tables.md, "Dynamic bucket").

A snapshot's ``indexManifest`` names one file holding the *full* set of live index files, every entry an
ADD. A commit that changes index files writes a new one: the previous entries combined with the changes,
where a new file of a (partition, bucket, index type) replaces the old one, as Java's bucketed combiner
does. Entries carry ``_VERSION`` 1; the field names are those of Java 0.9 and 1.x alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro

from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest._avro import _NAMESPACE_RECORD, _check_version, _opt, _read_ocf
from paimon_core.manifest._entry import FileKind
from paimon_core.manifest._files import read_metadata_file, write_avro_file
from paimon_core.storage import StorageBackend

__all__ = [
    "HASH_INDEX",
    "IndexFileMeta",
    "IndexManifestEntry",
    "combine_index_entries",
    "read_index_manifest",
    "write_index_manifest",
]

#: ``_INDEX_TYPE`` of the dynamic-bucket hash index.
HASH_INDEX = "HASH"
_INDEX_ENTRY_VERSION = 1

_RANGE_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record__DELETIONS_VECTORS_RANGES",
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
        _opt("_CARDINALITY", "long"),
    ],
}

INDEX_MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": _NAMESPACE_RECORD,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        _opt("_DELETIONS_VECTORS_RANGES", {"type": "array", "items": _RANGE_SCHEMA}),
        _opt("_EXTERNAL_PATH", "string"),
    ],
}
_PARSED_SCHEMA = fastavro.parse_schema(INDEX_MANIFEST_ENTRY_SCHEMA)


@dataclass(frozen=True)
class IndexFileMeta:
    """One file under ``index/``.

    Attributes:
        index_type: ``HASH`` (dynamic bucket) or ``DELETION_VECTORS``.
        file_name: its name in the table's ``index/`` directory.
        file_size: bytes.
        row_count: hashes in a hash index; deletion vectors in a deletion-vector file.
        external_path: where it lives when not under ``index/`` (written by newer Java only).
    """

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    external_path: str | None = None


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
            "_DELETIONS_VECTORS_RANGES": None,
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
    for record in _read_ocf(data, "index manifest", path):
        _check_version(record, _INDEX_ENTRY_VERSION, "index manifest", path)
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
                    ),
                )
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise CorruptMetadataError(
                f"index manifest {path} has a malformed entry: {exc!r}", path
            ) from None
    return entries
