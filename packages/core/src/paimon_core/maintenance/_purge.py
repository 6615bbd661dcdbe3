"""Paimon's ``purge_files``: delete all data of a table, keeping the table (its schema and options).

The steps are Java's ``FileStoreTable.purgeFiles``, in its order: drop every branch, delete every tag, delete
every consumer, commit an OVERWRITE snapshot that deletes every live file (``TRUNCATE TABLE``), delete the
changelog directory, expire every snapshot but that last one, then delete every file nothing uses any more
(orphan removal with no age limit). Each step is one of the crash-safe maintenance operations: a purge that
dies part way leaves a readable table, and running it again finishes the work.

Everything the table held goes, time travel included; files that a writer running meanwhile is about to
commit go too (no age limit protects them), so purge a table nothing writes to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from paimon_core import clock
from paimon_core.maintenance._branches import delete_branch, list_branches
from paimon_core.maintenance._consumers import clear_consumers
from paimon_core.maintenance._expire import expire_snapshots
from paimon_core.maintenance._orphans import remove_orphan_files
from paimon_core.maintenance._tags import delete_tag
from paimon_core.storage import join_path
from paimon_core.table.commit import TableCommit
from paimon_core.tag import TagManager

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["PurgeResult", "purge_files"]

_NO_LIMIT = 2**31 - 1  # Java's Integer.MAX_VALUE snapshot deletes


@dataclass(frozen=True)
class PurgeResult:
    """What :func:`purge_files` removed.

    Attributes:
        branches: the branches dropped.
        tags: the tags deleted.
        consumers: the consumers deleted.
        snapshot_id: the OVERWRITE snapshot that emptied the table (None: it had no snapshot).
        expired_snapshots: how many snapshots expired.
        deleted_files: how many unused files the orphan removal deleted.
    """

    branches: list[str]
    tags: list[str]
    consumers: list[str]
    snapshot_id: int | None
    expired_snapshots: int
    deleted_files: int


def purge_files(table: TableStore) -> PurgeResult:
    """Delete all data of ``table``: branches, tags, consumers, live files, changelog, old snapshots and the
    files they used. The table stays, empty, with one snapshot (the OVERWRITE that emptied it).

    Raises:
        CommitRetriesExhaustedError, CommitStateUnknownError: the emptying commit did not land (the steps
            before it ran; run the purge again).
    """
    branches = list_branches(table)
    if branches:
        delete_branch(table, branches)
    tags = [t.name for t in TagManager(table.storage, table.path).tags()]
    if tags:
        delete_tag(table, tags)
    consumers = clear_consumers(table)
    created = []
    if table.snapshot_manager.latest() is not None:
        created = TableCommit(table).overwrite([], partition={}, dynamic=False)
    table.storage.delete_dir(join_path(table.path, "changelog"))
    now = clock.now_millis()
    expired = expire_snapshots(table, retain_max=1, retain_min=1, older_than=now, max_deletes=_NO_LIMIT)
    orphans = remove_orphan_files(table, older_than=clock.now_millis())
    return PurgeResult(
        branches, tags, consumers, created[0] if created else None, expired, len(orphans.deleted)
    )
