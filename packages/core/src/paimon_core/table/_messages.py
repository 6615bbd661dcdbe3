"""What writers hand to the committer."""

from __future__ import annotations

from dataclasses import dataclass

from paimon_core.manifest import DataFileMeta, IndexFileMeta
from paimon_core.snapshot import Snapshot


@dataclass(frozen=True)
class RestoredFrom:
    """The snapshot a primary-key writer read its buckets from: their sequence numbers continue after that
    snapshot's files. The committer refuses the writer's files once a rollback removed the snapshot from the
    history (docs/commit-protocol.md, "A writer across a rollback").
    """

    snapshot_id: int
    time_millis: int
    commit_user: str
    commit_identifier: int

    @classmethod
    def of(cls, snapshot: Snapshot) -> RestoredFrom:
        return cls(snapshot.id, snapshot.time_millis, snapshot.commit_user, snapshot.commit_identifier)

    def is_snapshot(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot`` is the one this writer read (and not another one under its id)."""
        return self == RestoredFrom.of(snapshot)


@dataclass(frozen=True)
class CommitMessage:
    """The files one writer changed in one (partition, bucket).

    Picklable, so engines can ship it from executors to the driver that commits.

    Attributes:
        partition: the partition as stored BinaryRow bytes.
        bucket: the bucket number (0 for unaware-bucket tables).
        total_buckets: the table's ``bucket`` option when the files were written.
        new_files: files to add (APPEND, or OVERWRITE when ``deleted_files`` is not empty).
        deleted_files: live files to remove (forces an OVERWRITE commit with conflict checks).
        compact_before: files a compaction rewrote (removed in a COMPACT commit).
        compact_after: the compaction's output files.
        new_index_files: index files of the bucket to add (a dynamic bucket's new hash index).
        deleted_index_files: index files they replace.
        changelog_files: changelog files of the new files (``changelog-producer = input``), listed in the
            APPEND snapshot's changelog manifest list.
        compact_changelog_files: changelog files a compaction produced (``lookup``, ``full-compaction``),
            listed in the COMPACT snapshot's changelog manifest list.
        restored_from: for a primary-key writer's new files, the snapshot its buckets were read from (None
            when the table was empty, or for an overwrite, which starts its buckets afresh).
    """

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    deleted_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    new_index_files: tuple[IndexFileMeta, ...] = ()
    deleted_index_files: tuple[IndexFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_changelog_files: tuple[DataFileMeta, ...] = ()
    restored_from: RestoredFrom | None = None

    def is_empty(self) -> bool:
        return not (
            self.new_files
            or self.deleted_files
            or self.compact_before
            or self.compact_after
            or self.new_index_files
            or self.deleted_index_files
            or self.changelog_files
            or self.compact_changelog_files
        )
