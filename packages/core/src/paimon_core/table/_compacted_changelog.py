"""Compacted changelog files: several small changelog files of one partition concatenated into one.

``precommit-compact`` on a primary-key table (see :mod:`paimon_core.compact._changelog`) copies the bytes of
small changelog files, unchanged, one after the other into one physical file, as Paimon's Flink sink does
since 1.0. Each original file stays a manifest entry of its own bucket, renamed so that its name says where
its bytes are (the format Paimon calls ``cc-<format>``, e.g. ``cc-parquet``; ``<u>`` is a UUID):

* ``bucket-<b>/compacted-changelog-<u>$<b>-<n>.cc-parquet`` is the physical file, in the bucket of the
  file copied first; its own entry is the first ``<n>`` bytes.
* ``bucket-<c>/compacted-changelog-<u>$<b>-<n>-<off>-<len>.cc-parquet`` is a slice: the ``<len>`` bytes at
  ``<off>`` of the physical file above (in the same partition, bucket ``<b>``); no such object exists.

A slice is a complete Parquet file: its bytes at its offset in the physical file. Every path that reaches
storage for a changelog file goes through :func:`real_changelog_path` (existence checks, deletion,
orphan accounting) or :func:`read_changelog_slice` (reads).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from paimon_core.storage import join_path, parent_path, path_name

if TYPE_CHECKING:
    from paimon_core.storage import StorageBackend

__all__ = [
    "COMPACTED_CHANGELOG_PREFIX",
    "ChangelogSlice",
    "CompactedChangelogNames",
    "changelog_slice",
    "is_compacted_changelog",
    "read_changelog_slice",
    "real_changelog_path",
]

COMPACTED_CHANGELOG_PREFIX = "compacted-changelog-"
_FORMAT_PREFIX = "cc-"


def is_compacted_changelog(file_name: str) -> bool:
    """Whether a file name (or path) names a compacted changelog file or a slice of one."""
    return path_name(file_name).startswith(COMPACTED_CHANGELOG_PREFIX)


@dataclass(frozen=True)
class ChangelogSlice:
    """Where the bytes of a compacted changelog entry are: ``length`` bytes at ``offset`` of ``path``."""

    path: str
    offset: int
    length: int


def changelog_slice(path: str) -> ChangelogSlice | None:
    """Decode the path of a compacted changelog entry (None for any other file).

    Raises:
        ValueError: the name starts like a compacted changelog name but does not follow the protocol.
    """
    name = path_name(path)
    if not name.startswith(COMPACTED_CHANGELOG_PREFIX):
        return None
    stem, dot, file_format = name.partition(".")
    head, dollar, tail = stem.partition("$")
    numbers = tail.split("-")
    if not (dot and dollar and len(numbers) in (2, 4) and all(n.isdigit() for n in numbers)):
        raise ValueError(f"not a compacted changelog file name: {name!r}")
    if len(numbers) == 2:
        return ChangelogSlice(path, 0, int(numbers[1]))
    bucket, length, offset, size = numbers
    partition_dir = parent_path(parent_path(path))
    real = join_path(partition_dir, f"bucket-{bucket}", f"{head}${bucket}-{length}.{file_format}")
    return ChangelogSlice(real, int(offset), int(size))


def real_changelog_path(path: str) -> str:
    """The object that holds a file's bytes: ``path`` itself unless it is a slice of a compacted file."""
    found = changelog_slice(path)
    return path if found is None else found.path


@dataclass(frozen=True)
class CompactedChangelogNames:
    """The names of the entries of one compacted changelog file, from its first slice's bucket and length.

    Args:
        bucket: the bucket whose directory holds the physical file (that of the first file copied).
        first_length: the byte length of the first file copied.
        file_format: the format of the copied files (``parquet``).
        unique: the file's UUID (a fresh one by default).
    """

    bucket: int
    first_length: int
    file_format: str
    unique: str = ""

    def __post_init__(self) -> None:
        if not self.unique:
            object.__setattr__(self, "unique", str(uuid.uuid4()))

    @property
    def _base(self) -> str:
        return f"{COMPACTED_CHANGELOG_PREFIX}{self.unique}${self.bucket}-{self.first_length}"

    @property
    def _suffix(self) -> str:
        return f".{_FORMAT_PREFIX}{self.file_format}"

    @property
    def physical(self) -> str:
        """The name of the physical file, which is also the entry of the first slice."""
        return self._base + self._suffix

    def slice(self, offset: int, length: int) -> str:
        """The entry name of the ``length`` bytes at ``offset`` (the physical name at offset 0)."""
        if offset == 0:
            return self.physical
        return f"{self._base}-{offset}-{length}{self._suffix}"


def read_changelog_slice(storage: StorageBackend, path: str) -> bytes | None:
    """The bytes of a compacted changelog entry (None for any other file).

    Raises:
        FileNotFoundError: the physical file does not exist.
        OSError: the physical file ends before the slice.
        ValueError: the name does not follow the protocol.
    """
    found = changelog_slice(path)
    if found is None:
        return None
    with storage.open_input(found.path) as raw:
        raw.seek(found.offset)
        data = raw.read(found.length)
    if len(data) < found.length:
        raise OSError(
            f"compacted changelog file {found.path} ends before its slice: "
            f"{found.offset + found.length} bytes expected"
        )
    return data
