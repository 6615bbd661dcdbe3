"""Snapshot expiration (spec §7.1): which snapshots go, then mark-and-sweep of the files only they used.

The range follows Java: keep at least ``snapshot.num-retained.min`` snapshots and at most ``.max``; a
snapshot goes only when its successor is older than ``snapshot.time-retained`` (or ``older_than``); never
one a consumer has still to read; at most ``snapshot.expire.limit`` per run. Files are deleted by
mark-and-sweep rather than Java's delta walk: a file goes only when an expired snapshot used it and no
retained snapshot and no tag does. Snapshots newer than the range (a concurrent commit) are never expired,
and their new files were never used by an expired snapshot, so a concurrent writer loses nothing.

Order of deletion: the snapshot files and ``EARLIEST`` first, then data files, manifests and manifest lists
(Java deletes files first); an interrupted run leaves orphan files, never a snapshot missing its files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import time
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.consumer import ConsumerManager
from paimon_core.errors import ConfigError
from paimon_core.maintenance._reach import reach, to_millis
from paimon_core.tag import TagManager

if TYPE_CHECKING:
    from paimon_core.table import Table

__all__ = ["expire_snapshots"]

logger = logging.getLogger(__name__)


def expire_snapshots(
    table: Table,
    *,
    retain_max: int | None = None,
    retain_min: int | None = None,
    older_than: dt.datetime | int | str | None = None,
    max_deletes: int | None = None,
    now_millis: int | None = None,
) -> int:
    """Paimon's ``expire_snapshots``; arguments left out come from the table options. Returns how many
    snapshots expired.

    Args:
        table: the table.
        retain_max: keep at most this many snapshots (``snapshot.num-retained.max``).
        retain_min: keep at least this many (``snapshot.num-retained.min``).
        older_than: expire snapshots whose successor is older than this (default: now minus
            ``snapshot.time-retained``): a datetime, epoch millis or ``'yyyy-MM-dd HH:mm:ss'``.
        max_deletes: expire at most this many snapshots in this run (``snapshot.expire.limit``).
        now_millis: the current time, for tests.
    """
    options = table.options
    retain_min = retain_min if retain_min is not None else options.get_option(opts.SNAPSHOT_NUM_RETAINED_MIN)
    retain_max = retain_max if retain_max is not None else options.get_option(opts.SNAPSHOT_NUM_RETAINED_MAX)
    limit = max_deletes if max_deletes is not None else options.get_option(opts.SNAPSHOT_EXPIRE_LIMIT)
    if min(retain_min, retain_max, limit) < 1 or retain_min > retain_max:
        raise ConfigError(
            f"need 1 <= retain_min ({retain_min}) <= retain_max ({retain_max}) and max_deletes ({limit}) >= 1"
        )
    now = now_millis if now_millis is not None else int(time.time() * 1000)
    threshold = (
        to_millis(older_than)
        if older_than is not None
        else now - options.get_option(opts.SNAPSHOT_TIME_RETAINED)
    )
    sm = table.snapshot_manager
    latest, earliest = sm.latest_id(), sm.earliest_id()
    if latest is None or earliest is None:
        return 0
    end = _expire_end(table, latest, earliest, retain_min, retain_max, limit, threshold)
    if end <= earliest:
        return 0
    expired = [s for s in (sm.try_snapshot(i) for i in range(earliest, end)) if s is not None]
    retained = [s for s in (sm.try_snapshot(i) for i in range(end, latest + 1)) if s is not None]
    if not retained:
        return 0  # the range always keeps at least one snapshot; a vanished one means a concurrent rollback
    doomed = reach(table, expired)
    kept = reach(
        table, [*retained, *TagManager(table.storage, table.path).tagged_snapshots()], live_only=True
    )
    storage = table.storage
    # Snapshots first: once they are gone nothing can reach the files below, so a run that dies midway
    # leaves orphan files at worst (for remove_orphan_files), never a snapshot with missing files.
    for snapshot in expired:
        with contextlib.suppress(FileNotFoundError):
            storage.delete(sm.snapshot_path(snapshot.id))
    sm.write_earliest_hint(end)
    unused_data = doomed.data - kept.data
    for path in sorted(unused_data):
        with contextlib.suppress(FileNotFoundError):
            storage.delete(path)
    if options.get_option(opts.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES):
        _remove_empty_dirs(table, unused_data)
    for name in sorted(doomed.metadata - kept.metadata):
        with contextlib.suppress(FileNotFoundError):
            storage.delete(table.manifest_path(name))
    logger.info("expired snapshots %s..%s of %s", earliest, end - 1, table.identifier)
    return len(expired)


def _expire_end(
    table: Table, latest: int, earliest: int, retain_min: int, retain_max: int, limit: int, threshold: int
) -> int:
    """The first snapshot id to keep (spec §7.1)."""
    low = max(latest - retain_max + 1, earliest)
    max_exclusive = latest - retain_min + 1
    consumer_min = ConsumerManager(table.storage, table.path).min_next_snapshot()
    if consumer_min is not None:
        max_exclusive = min(max_exclusive, consumer_min)
    max_exclusive = min(max_exclusive, earliest + limit)
    sm = table.snapshot_manager
    for snapshot_id in range(low, max_exclusive):
        successor = sm.try_snapshot(snapshot_id + 1)
        if successor is not None and threshold <= successor.time_millis:
            return snapshot_id
    return max(max_exclusive, earliest)


def _remove_empty_dirs(table: Table, deleted: set[str]) -> None:
    """Remove bucket directories (and then partition directories) left empty, up to the table root."""
    root = table.path.rstrip("/")
    for directory in sorted({p.rsplit("/", 1)[0] for p in deleted}, key=len, reverse=True):
        while directory.startswith(root + "/"):
            try:
                if table.storage.list_dir(directory):
                    break
                table.storage.delete_dir(directory)
            except (FileNotFoundError, OSError):
                break
            directory = directory.rsplit("/", 1)[0]


def might_expire(table: Table, latest_id: int) -> bool:
    """A cheap test for writers: can anything expire at all (without reading any manifest)?"""
    options = table.options
    earliest = table.snapshot_manager.earliest_id()
    if earliest is None:
        return False
    retain_min = options.get_option(opts.SNAPSHOT_NUM_RETAINED_MIN)
    if latest_id - earliest + 1 <= retain_min:
        return False
    successor = table.snapshot_manager.try_snapshot(earliest + 1)
    threshold = int(time.time() * 1000) - options.get_option(opts.SNAPSHOT_TIME_RETAINED)
    retain_max = options.get_option(opts.SNAPSHOT_NUM_RETAINED_MAX)
    return latest_id - earliest + 1 > retain_max or (
        successor is not None and successor.time_millis < threshold
    )
