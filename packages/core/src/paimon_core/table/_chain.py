"""Did a snapshot just published continue the table's chain, or land in a hole that expiration left?

``write_if_absent("snapshot-N")`` succeeds whenever no file has that name. Snapshot expiration deletes old
snapshot files, so a committer that read ``N-1`` as the latest and then stalled may create ``snapshot-N``
after the real ``N`` was published, built upon and expired: its create succeeds, yet nothing later builds
on it. :func:`follows_chain` tells the two apart right after the publish; docs/commit-protocol.md gives the
argument. It relies on two properties of this project's expiration and rollback:

* expiration moves ``EARLIEST`` (only ever forward) above a snapshot before it deletes it, never deletes a
  snapshot while an older one remains, and never deletes the latest one: once the real ``N`` is gone,
  ``EARLIEST`` is above ``N``, its predecessor is gone, and some snapshot newer than ``N`` exists for ever
  after;
* a rollback sweeps every snapshot above its target, so nothing stays above the hole it makes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest import FileIdentifier, FileKind, ManifestEntry, merge_entries, read_manifest_list
from paimon_core.redaction import get_logger
from paimon_core.snapshot import Snapshot
from paimon_core.table._entries import read_entries

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["follows_chain"]

logger = get_logger(__name__)

_PAUSES = (0.01, 0.05, 0.2, 0.5)  # seconds between looks when the answer is not clear yet


def follows_chain(
    table: TableStore, published: Snapshot, base: Snapshot | None, entries: Sequence[ManifestEntry]
) -> bool | None:
    """Whether ``published``, just created on top of ``base``, is part of the table's history.

    Returns:
        True when it is (it was the newest snapshot when created), False when it is a stale publish that
        no later snapshot builds on, None when that cannot be told (the table moved on too far meanwhile).
    """
    for pause in _PAUSES:
        verdict = _follows_chain(table, published, base, entries)
        if verdict is not None:
            return verdict
        # Files vanished while we looked: an expiration is running. Once its deletions are done, the
        # ascending order of snapshot deletions usually decides.
        time.sleep(pause)
    return _follows_chain(table, published, base, entries)


def _follows_chain(
    table: TableStore, published: Snapshot, base: Snapshot | None, entries: Sequence[ManifestEntry]
) -> bool | None:
    sm = table.snapshot_manager
    try:
        if base is not None:
            current = sm.try_snapshot(base.id)
            earliest = sm.earliest_hint()
            if current is not None and (earliest is None or base.id >= earliest):
                # Our base stands at or above EARLIEST: had the real N been deleted, EARLIEST would be above
                # it. A different snapshot under the base's id means a rollback replaced it. (Below
                # EARLIEST the base is expiring, or is itself a stale file: the checks below decide.)
                logger.debug(
                    "snapshot %s: base %s still there (same: %s)", published.id, base.id, current == base
                )
                return current == base
        ids = sm.list_ids()
        if not any(i > published.id for i in ids):
            # Nothing above: a stale publish always has a newer snapshot above it. What remains below,
            # from EARLIEST on, is a rollback target that our base was removed from.
            earliest = sm.earliest_hint()
            logger.debug("snapshot %s: nothing above; ids %s, EARLIEST %s", published.id, ids, earliest)
            return not any(i < published.id and (earliest is None or i >= earliest) for i in ids)
        added = _new_files(entries)
        if added and added[0] in table.live_files.at(sm.latest()):
            return True  # our new files are live: a snapshot was built on ours (no one else adds them)
        successor = sm.try_snapshot(published.id + 1)
        if successor is None:
            # No snapshot is deleted while an older one remains: had ours been built upon and expired with
            # its successor, it would be gone first. Gone, it may also have been a stale file swept away
            # by an expiration: that cannot be told.
            mine = sm.try_snapshot(published.id)
            logger.debug(
                "snapshot %s: successor gone, ours %s", published.id, "gone" if mine is None else "there"
            )
            return False if mine is not None else None
        saw = _successor_saw(table, successor, entries)
        logger.debug("snapshot %s: successor built on it: %s", published.id, saw)
        return saw
    except (CorruptMetadataError, OSError) as exc:
        logger.debug("snapshot %s: cannot tell yet: %s", published.id, exc)
        return None


def _successor_saw(table: TableStore, successor: Snapshot, entries: Sequence[ManifestEntry]) -> bool | None:
    """Whether the state ``successor`` was built on (its base list) is the state our commit made."""
    ctx = table.manifest_context
    metas = read_manifest_list(table.storage, ctx.path(successor.base_manifest_list))
    state = {e.identifier() for e in merge_entries(read_entries(table, metas))}
    added = _new_files(entries)
    if added:
        return added[0] in state  # names are unique: the state before the successor either has it or not
    deleted = [e.identifier() for e in entries if e.kind == FileKind.DELETE]
    if any(key in state for key in deleted):
        return False
    return None


def _new_files(entries: Sequence[ManifestEntry]) -> list[FileIdentifier]:
    """The identifiers of the files only this commit can add: not those a compaction moved up a level, which
    keep their names (another compaction of the same file adds the very same entry)."""
    moved = {e.file.file_name for e in entries if e.kind == FileKind.DELETE}
    return [e.identifier() for e in entries if e.kind == FileKind.ADD and e.file.file_name not in moved]
