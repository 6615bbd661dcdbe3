"""What the layers above ``table/`` plug into a table: work before and after a commit.

``table/`` writes, commits and reads; it never imports compaction or maintenance. Those live above it and
reach a table through :class:`TableHooks`: snapshot expiration after a commit (as Java's committer runs it),
the inline compaction of writers, and ``precommit-compact``. ``paimon_core`` installs the standard hooks
when it is imported (:func:`set_default_hooks`); a :class:`~paimon_core.table.Table` uses the defaults
unless it is given its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from paimon_core.manifest import DataFileMeta
from paimon_core.table._messages import CommitMessage

if TYPE_CHECKING:
    from paimon_core.table._table import Table

__all__ = ["BucketCompaction", "CommitCompactor", "TableHooks", "default_hooks", "set_default_hooks"]


class CommitCompactor(Protocol):
    """Compaction a table handle runs after each of its commits (unaware-bucket tables)."""

    def after_commit(self) -> list[int]: ...


class BucketCompaction(Protocol):
    """Compaction a writer runs per bucket before it commits (bucketed tables)."""

    def restore(self, restored: dict[tuple[bytes, int], list[DataFileMeta]]) -> None: ...

    def compact(
        self, partition: bytes, bucket: int, new_files: Sequence[DataFileMeta]
    ) -> tuple[tuple[DataFileMeta, ...], tuple[DataFileMeta, ...]]: ...


@dataclass(frozen=True)
class TableHooks:
    """The work a table delegates upwards; each is optional.

    Attributes:
        after_commit: runs after a commit created snapshots, also for ``write-only`` tables (consumer and
            snapshot expiration, which decides what ``write-only`` skips); failures are logged.
        commit_compactor: builds the compactor a handle runs after its appends (unaware-bucket tables).
        bucket_compaction: builds the per-bucket compaction of a writer (bucketed tables).
        precommit: rewrites the messages of all the writers of one commit before they are committed
            (``precommit-compact``); :meth:`Table.append` and ``overwrite`` call it, writers never do.
    """

    after_commit: Callable[[Table, Sequence[int]], None] | None = None
    commit_compactor: Callable[[Table], CommitCompactor] | None = None
    bucket_compaction: Callable[[Table], BucketCompaction] | None = None
    precommit: Callable[[Table, list[CommitMessage]], list[CommitMessage]] | None = None


_default = TableHooks()


def default_hooks() -> TableHooks:
    """The hooks tables get when none are given (the standard ones once ``paimon_core`` is imported)."""
    return _default


def set_default_hooks(hooks: TableHooks) -> TableHooks:
    """Install ``hooks`` as the default; returns the previous ones."""
    global _default
    previous, _default = _default, hooks
    return previous
