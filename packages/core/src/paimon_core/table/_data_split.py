"""The unit of reading: the files of one (partition, bucket) of one snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from paimon_core.manifest import DataFileMeta

__all__ = ["DataSplit"]


@dataclass(frozen=True)
class DataSplit:
    """A unit of reading: files of one (partition, bucket) of one snapshot.

    ``streaming``: the files of a primary-key table hold changes (a snapshot's new files or changelog
    files), read in order without a merge, each record with its row kind.
    ``incremental_from``: the files are those the snapshots in ``(incremental_from, snapshot_id]`` added
    (``incremental-between``), merged as Java Paimon 0.9 merges them (see
    :mod:`paimon_core.table.mergetree._incremental`).
    ``before_files``: a diff split (``incremental-between-scan-mode = diff``, or two tags): the change from
    these files (the range's start, merged) to ``files`` (its end, merged); files both hold are in neither.
    ``diff_keeps_retractions``: a read that keeps retractions (``$audit_log``) keeps them in both merges of
    a diff split, so a delete still at level 0 is seen (Java 1.1+); Java 0.9, which reads two tags this way,
    drops them.
    ``branch``: the files are those of this branch (``scan.fallback-branch``), read with its schemas and
    options; None: the reading table's own.
    """

    snapshot_id: int
    partition: bytes
    bucket: int
    bucket_path: str
    files: tuple[DataFileMeta, ...]
    streaming: bool = False
    incremental_from: int | None = None
    before_files: tuple[DataFileMeta, ...] | None = None
    diff_keeps_retractions: bool = False
    branch: str | None = None

    @property
    def first_snapshot_id(self) -> int:
        """The oldest snapshot whose files the split reads: the one to ask about when a file is missing."""
        return self.snapshot_id if self.incremental_from is None else self.incremental_from + 1

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    @property
    def file_size(self) -> int:
        return sum(f.file_size for f in self.files)
