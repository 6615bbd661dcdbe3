"""The records of manifests and manifest lists (docs/format.md#manifest-entries), and their merge."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum
from typing import Any, ClassVar, NamedTuple

from paimon_core import clock
from paimon_core.errors import CorruptMetadataError
from paimon_core.storage import join_path, parent_path

__all__ = [
    "EMPTY_ROW_BYTES",
    "DataFileMeta",
    "DuplicateFileError",
    "FileIdentifier",
    "FileKind",
    "FileSource",
    "ManifestEntry",
    "ManifestFileMeta",
    "SimpleStats",
    "local_wall_clock_millis",
    "merge_entries",
    "wall_clock_to_epoch_millis",
]

#: The stored bytes of a BinaryRow with arity 0: big-endian arity 0, then the 8-byte header (docs/format.md#binaryrow).
EMPTY_ROW_BYTES = bytes(12)

_NAIVE_EPOCH = datetime(1970, 1, 1)


class FileKind(IntEnum):
    """``_KIND`` of a manifest entry."""

    ADD = 0
    DELETE = 1


class FileSource(IntEnum):
    """``_FILE_SOURCE`` of a data file."""

    APPEND = 0
    COMPACT = 1


@dataclass(frozen=True)
class SimpleStats:
    """Min/max/null-count stats of some columns (docs/format.md#statistics).

    Attributes:
        min_values: stored BinaryRow bytes (arity prefix included), one nullable field per column.
        max_values: same shape as ``min_values``.
        null_counts: one entry per column (None where unknown), or None when there are no counts at all.
    """

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    EMPTY: ClassVar[SimpleStats]

    def __post_init__(self) -> None:
        if self.null_counts is not None and not isinstance(self.null_counts, tuple):
            object.__setattr__(self, "null_counts", tuple(self.null_counts))


SimpleStats.EMPTY = SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())


def local_wall_clock_millis(epoch_millis: int | None = None) -> int:
    """``_CREATION_TIME`` for a file created now (or at the instant ``epoch_millis``).

    Java stores ``LocalDateTime.now()`` as if it were UTC: the local wall clock, not the epoch instant.
    """
    if epoch_millis is None:
        epoch_millis = clock.now_millis()
    seconds, millis = divmod(epoch_millis, 1000)
    wall = datetime.fromtimestamp(seconds)  # naive, in the system time zone
    return (wall - _NAIVE_EPOCH) // timedelta(seconds=1) * 1000 + millis


def wall_clock_to_epoch_millis(wall_clock_millis: int) -> int:
    """The epoch instant of a ``_CREATION_TIME`` value, reading the wall clock in the system time zone."""
    seconds, millis = divmod(wall_clock_millis, 1000)
    wall = _NAIVE_EPOCH + timedelta(seconds=seconds)
    return int(wall.timestamp()) * 1000 + millis


@dataclass(frozen=True)
class DataFileMeta:
    """One data file as a manifest describes it (the ``_FILE`` record, docs/format.md#manifest-entries).

    ``creation_time`` is ``_CREATION_TIME`` as stored: local wall-clock milliseconds encoded as if UTC (see
    :func:`local_wall_clock_millis` and :meth:`creation_time_epoch_millis`).
    """

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time: int | None = None
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        # Accept lists from callers but keep the dataclass hashable and immutable.
        for name in ("extra_files", "value_stats_cols", "write_cols", "write_cols_sequences"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def copy(self, **changes: Any) -> DataFileMeta:
        return dataclasses.replace(self, **changes)

    def paths(self, directory: str) -> list[str]:
        """Where the file and its extra files (``.index``) live: under ``directory`` (its bucket's), or beside
        its external path when it has one."""
        path = self.external_path or join_path(directory, self.file_name)
        return [path, *(join_path(parent_path(path), extra) for extra in self.extra_files)]

    def creation_time_epoch_millis(self) -> int | None:
        """The creation instant (epoch ms), or None when the manifest did not record it."""
        if self.creation_time is None:
            return None
        return wall_clock_to_epoch_millis(self.creation_time)

    def added_row_count(self) -> int:
        """Rows minus retractions (``row_count - delete_row_count``); unknown retractions count as 0."""
        return self.row_count - (self.delete_row_count or 0)


class FileIdentifier(NamedTuple):
    """The identity of a data file across manifests (docs/format.md#manifest-entries); a DELETE must repeat it exactly."""

    partition: bytes
    bucket: int
    level: int
    file_name: str
    extra_files: tuple[str, ...]
    embedded_index: bytes | None
    external_path: str | None


@dataclass(frozen=True)
class ManifestEntry:
    """One manifest record: a data file added to or deleted from a (partition, bucket)."""

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def identifier(self) -> FileIdentifier:
        f = self.file
        return FileIdentifier(
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_index,
            f.external_path,
        )

    @property
    def is_add(self) -> bool:
        return self.kind is FileKind.ADD

    def as_delete(self) -> ManifestEntry:
        """The DELETE entry for this file, copying its identity (and everything else) unchanged."""
        return dataclasses.replace(self, kind=FileKind.DELETE)


@dataclass(frozen=True)
class ManifestFileMeta:
    """One manifest-list record: a manifest file and its summary (docs/format.md#manifest-lists)."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None
    total_buckets: int | None = None
    extra_files: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.extra_files is not None and not isinstance(self.extra_files, tuple):
            object.__setattr__(self, "extra_files", tuple(self.extra_files))


class DuplicateFileError(CorruptMetadataError):
    """Merging entries met an ADD of a file that is already present.

    In a snapshot's own manifests this is corruption; a committer merging its changes over the latest
    snapshot treats it as a commit conflict.
    """

    def __init__(self, identifier: FileIdentifier, path: str | None = None) -> None:
        super().__init__(
            f"trying to add file {identifier.file_name!r} (bucket {identifier.bucket}, level "
            f"{identifier.level}, partition {identifier.partition.hex()}) which is already added",
            path,
        )
        self.identifier = identifier


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Merge entries in order, with Java's ``FileEntry.mergeEntries`` rules (docs/format.md#manifest-entries).

    * ADD of an identity already present (added, or deleted without a matching ADD) → :class:`DuplicateFileError`.
    * DELETE of a present identity → both disappear.
    * DELETE of an absent identity → kept (its ADD lives in an earlier manifest).

    Returns:
        The survivors in first-seen order: ADDs that were not deleted, and DELETEs without a matching ADD.
        Merging a whole snapshot must leave no DELETE; merging a slice of manifests may.
    """
    merged: dict[FileIdentifier, ManifestEntry] = {}
    for entry in entries:
        key = entry.identifier()
        if entry.kind is FileKind.ADD:
            if key in merged:
                raise DuplicateFileError(key)
            merged[key] = entry
        elif key in merged:
            del merged[key]
        else:
            merged[key] = entry
    return list(merged.values())
