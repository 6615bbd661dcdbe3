"""The standard table hooks: what Paimon's writers and committers do around a commit.

Above every subpackage, so that ``table/`` depends on neither ``compact/`` nor ``maintenance/``: the
catalog and :func:`paimon_core.open_table` hand them to every table they open (a bare ``Table(...)`` has
none; see :mod:`paimon_core.table._store`).
"""

from __future__ import annotations

from collections.abc import Sequence

from paimon_core import options as opts
from paimon_core.compact import InlineBucketCompaction, InlineCompactor, compact_table, precommit_compact
from paimon_core.maintenance import expire_consumers, expire_snapshots, maintain_after_commit, might_expire
from paimon_core.table import TableHooks, TableStore

__all__ = ["STANDARD_HOOKS"]


def _expire_after_commit(table: TableStore, created: Sequence[int]) -> None:
    """After a commit, as Java's committer does: automatic tags, tag and partition expiration
    (:func:`maintain_after_commit`), then idle consumers, then snapshots: consumers first, so that the
    snapshots they held go in the same round; snapshots never for write-only tables (Java expires consumers
    there too), and cheaply skipped when nothing can expire. Consumers and snapshots expire even when the
    lifecycle step failed."""
    try:
        maintain_after_commit(table, created)
    finally:
        expire_consumers(table)
        if not table.options.get_option(opts.WRITE_ONLY) and might_expire(table, max(created)):
            expire_snapshots(table)


STANDARD_HOOKS = TableHooks(
    after_commit=_expire_after_commit,
    commit_compactor=InlineCompactor,
    bucket_compaction=InlineBucketCompaction,
    precommit=precommit_compact,
    compact=compact_table,
)
