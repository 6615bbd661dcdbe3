"""The table lifecycle work after a commit, as Java's ``TableCommitImpl.maintain``: automatic tags, tag
expiration by time-to-live, then partition expiration (the standard after-commit hook runs this before
consumer and snapshot expiration, in Java's order).

Like Java, none of it runs for a ``write-only`` table's writers; the dedicated compaction job (which Java
runs with ``write-only`` off) does it: on a write-only table only that job makes COMPACT snapshots.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paimon_core import clock
from paimon_core import options as opts
from paimon_core.maintenance._auto_tags import create_auto_tags, create_batch_tag, expire_tags
from paimon_core.maintenance._partitions import expiration_settings, run_expiration
from paimon_core.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["maintain_after_commit"]

# table path -> when this process last checked its partitions for expiration (epoch ms)
_last_partition_check: dict[str, int] = {}
_lock = threading.Lock()


def maintain_after_commit(table: TableStore, created: Sequence[int]) -> None:
    """Automatic tags, tag expiration and partition expiration after a commit that created ``created``.

    Partitions are checked at most every ``partition.expiration-check-interval`` per table and process (the
    first commit of a process checks), and after every batch commit with
    ``end-input.check-partition-expire``.
    """
    if not created:
        return
    options = table.options
    mode = options.get_option(opts.TAG_AUTOMATIC_CREATION)
    write_only = options.get_option(opts.WRITE_ONLY)
    last = None
    if write_only or mode == "batch" or options.get_option(opts.END_INPUT_CHECK_PARTITION_EXPIRE):
        # only then does the commit's kind or identifier matter: one snapshot read, not one per commit
        last = table.snapshot_manager.try_snapshot(max(created))
        if last is None:  # expired or rolled back already
            return
        if write_only and last.commit_kind != CommitKind.COMPACT:
            return
    batch = last is not None and last.commit_identifier == BATCH_COMMIT_IDENTIFIER
    create_auto_tags(table)
    if batch and last is not None and last.commit_kind != CommitKind.COMPACT:
        create_batch_tag(table)
    if options.get_option(opts.TAG_TIME_EXPIRE_ENABLED):
        expire_tags(table)
    _expire_partitions(table, batch)


def _expire_partitions(table: TableStore, batch: bool) -> None:
    settings = expiration_settings(table)
    if settings is None:
        return
    interval = table.options.get_option(opts.PARTITION_EXPIRATION_CHECK_INTERVAL)
    forced = batch and table.options.get_option(opts.END_INPUT_CHECK_PARTITION_EXPIRE)
    now = clock.now_millis()
    with _lock:
        previous = _last_partition_check.get(table.path)
        due = interval == 0 or previous is None or now > previous + interval or forced
        if due:
            _last_partition_check[table.path] = now
    if due:
        run_expiration(table, settings)
