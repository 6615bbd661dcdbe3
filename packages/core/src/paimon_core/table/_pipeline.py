"""One way from written data to snapshots: write → precommit → commit → after-commit.

:meth:`Table.append <paimon_core.table.Table.append>`, ``overwrite`` and ``delete`` run all four stages
(:meth:`CommitPipeline.write_and_commit`); engines that wrote on workers and hold the commit messages run
the last three (:meth:`CommitPipeline.commit`, :meth:`CommitPipeline.overwrite`). The stages:

1. precommit: ``precommit-compact`` merges the small new files of all the writers of the commit
   (``hooks.precommit``; writers never do it themselves, so no file is rewritten twice);
2. the commit (:class:`~paimon_core.table.TableCommit`), whose own after-commit hook creates automatic
   tags, expires tags and partitions, then consumers and snapshots (``hooks.after_commit``, also for
   ``write-only`` tables, where it does less);
3. after-commit compaction: after an append (not an overwrite, as before this pipeline existed), an
   unaware-bucket append table runs its compaction coordinator (``hooks.commit_compactor``) unless
   ``write-only``; it commits separately (COMPACT) and never makes the commit fail.

The hooks are the store's, handed in by whoever opened the table (docs/architecture.md, "Hooks").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from paimon_core import options as opts
from paimon_core.errors import (
    AtomicCommitUnsupportedError,
    CommitConflictError,
    CommitRetriesExhaustedError,
    ConfigError,
    LockAcquisitionError,
    SchemaError,
)
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER
from paimon_core.table._messages import CommitMessage
from paimon_core.table._store import CommitCompactor, TableStore
from paimon_core.table._write import TableWrite
from paimon_core.table.commit import TableCommit
from paimon_core.table.mergetree._writer import KeyValueTableWrite

__all__ = ["COMMIT_NEVER_LANDED", "CommitPipeline", "new_write"]

COMMIT_NEVER_LANDED = (
    SchemaError,
    ConfigError,
    CommitConflictError,
    CommitRetriesExhaustedError,
    AtomicCommitUnsupportedError,
    LockAcquisitionError,
)
"""Failures after which no snapshot can reference the written files: those files are deleted."""

_Commit = Callable[[TableCommit, list[CommitMessage]], list[int]]


def new_write(store: TableStore, *, overwrite: bool = False) -> TableWrite:
    """The writer of ``store``: a :class:`KeyValueTableWrite` for a primary-key table (``overwrite``: into
    fresh merge trees, for an OVERWRITE commit), else a :class:`TableWrite`."""
    if store.has_primary_key:
        return KeyValueTableWrite(store, overwrite=overwrite)
    return TableWrite(store)


class CommitPipeline:
    """Precommit, commit and after-commit compaction of one table handle.

    Args:
        store: the table.
        committer: commits every call (keep one with a stable commit user for a streaming job, so that a
            replayed commit identifier is recognised); None: a fresh :class:`TableCommit` per call.

    Keep one pipeline per handle: its after-commit compactor keeps the coordinator's state between
    commits.
    """

    def __init__(self, store: TableStore, committer: TableCommit | None = None) -> None:
        self.store = store
        self.committer = committer
        self._compactor: CommitCompactor | None = None

    def precommit(self, messages: Sequence[CommitMessage]) -> list[CommitMessage]:
        """``precommit-compact`` over the messages of all the writers of one commit (unchanged without it).

        Commit (or abort) the returned messages, never the given ones: files they replaced are deleted.
        """
        hook = self.store.hooks.precommit
        return list(messages) if hook is None else hook(self.store, list(messages))

    def commit(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        *,
        watermark: int | None = None,
    ) -> list[int]:
        """Precommit, then :meth:`TableCommit.commit`, then after-commit compaction.

        Returns:
            The ids of the snapshots the commit created (not the compaction's).

        Raises:
            CommitError: as :meth:`TableCommit.commit`. When nothing can have been committed and precommit
                rewrote the messages, the files of the rewritten messages are deleted (the given ones are
                no longer valid); otherwise the given messages' files stay the caller's to abort.
        """
        return self._commit_messages(
            messages,
            lambda committer, merged: committer.commit(merged, commit_identifier, watermark=watermark),
            compact=True,
        )

    def overwrite(
        self,
        messages: Sequence[CommitMessage],
        partition: Mapping[str, Any] | None = None,
        *,
        dynamic: bool | None = None,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        watermark: int | None = None,
    ) -> list[int]:
        """As :meth:`commit`, with :meth:`TableCommit.overwrite` (arguments as there), and no compaction after
        it."""

        def overwrite(committer: TableCommit, merged: list[CommitMessage]) -> list[int]:
            return committer.overwrite(
                merged, partition, dynamic=dynamic, commit_identifier=commit_identifier, watermark=watermark
            )

        return self._commit_messages(messages, overwrite, compact=False)

    def _commit_messages(
        self, messages: Sequence[CommitMessage], do_commit: _Commit, *, compact: bool
    ) -> list[int]:
        given = list(messages)
        merged = self.precommit(given)
        try:
            created = do_commit(self._committer(), merged)
        except COMMIT_NEVER_LANDED:
            if merged != given:
                self.store.delete_new_files(merged)
            raise
        if compact:
            self.after_commit(created)
        return created

    def write_and_commit(
        self,
        write: Callable[[TableWrite], None],
        do_commit: _Commit,
        *,
        overwrite: bool = False,
    ) -> int | None:
        """Write with a fresh writer (``write(writer)``), precommit, commit with ``do_commit``, and compact
        after it unless ``overwrite`` (which also makes a primary-key writer start fresh merge trees).

        Returns the id of the last snapshot the commit created (None when there was nothing to write). The
        written files are deleted when the commit fails before it could land.
        """
        writer = new_write(self.store, overwrite=overwrite)
        messages: list[CommitMessage] = []
        committing = False
        try:
            write(writer)
            messages = self.precommit(writer.prepare_commit())
            committing = True
            created = do_commit(self._committer(), messages)
        except COMMIT_NEVER_LANDED:
            writer.abort(messages)
            raise
        except BaseException:
            # The commit may have landed (an unknown outcome, an interrupt mid-publish): the new files
            # may be referenced, so they stay; orphan cleanup removes them if they are not. Before the
            # commit started nothing can reference them.
            writer.abort([] if committing else messages)
            raise
        finally:
            writer.close()
        if not overwrite:
            self.after_commit(created)
        return created[-1] if created else None

    def after_commit(self, created: Sequence[int]) -> list[int]:
        """Compaction after a commit that created snapshots: an unaware-bucket append table runs its
        coordinator (``hooks.commit_compactor``) unless ``write-only``. Returns the COMPACT snapshots."""
        store = self.store
        factory = store.hooks.commit_compactor
        if (
            not created
            or factory is None
            or store.bucket != -1
            or store.has_primary_key
            or store.options.get_option(opts.WRITE_ONLY)
        ):
            return []
        if self._compactor is None:
            self._compactor = factory(store)
        return self._compactor.after_commit()

    def _committer(self) -> TableCommit:
        return self.committer if self.committer is not None else TableCommit(self.store)
