"""Paimon's ``compact_manifest``: rewrite the latest snapshot's data manifests into merged ones.

Each commit adds a delta manifest; commits merge them only past ``manifest.merge-min-count`` and
``manifest.full-compaction-threshold-size``, so a table written often in small commits carries many small
manifests (and DELETE entries) that every scan plan reads. The procedure merges all of them, whatever those
thresholds, in one COMPACT snapshot with the same live files (Java's ``BatchTableCommit.compactManifests``).
The replaced manifests stay until snapshot expiration removes them with their snapshots.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from paimon_core.manifest import read_manifest_list
from paimon_core.redaction import get_logger
from paimon_core.table.commit import TableCommit

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["compact_manifest"]

logger = get_logger(__name__)


def compact_manifest(
    table: TableStore, *, dry_run: bool = False, options: Mapping[str, Any] | None = None
) -> int | None:
    """Merge the latest snapshot's data manifests into as few as ``manifest.target-file-size`` allows.

    Args:
        table: the table.
        dry_run: only log how many manifests and entries the latest snapshot has; commit nothing.
        options: dynamic options for this run (``manifest.target-file-size``, ``commit.*``...).

    Returns:
        The id of the COMPACT snapshot created; None on a dry run, an empty table, or when the manifests are
        merged already (a single manifest).

    Raises:
        CommitRetriesExhaustedError, CommitStateUnknownError: as for any commit.
    """
    if options:
        table = table.copy(options)
    if dry_run:
        _log_state(table)
        return None
    created = TableCommit(table).compact_manifests()
    return created[0] if created else None


def _log_state(table: TableStore) -> None:
    latest = table.snapshot_manager.latest()
    if latest is None:
        logger.info("compact_manifest dry run on %s: the table has no snapshot", table.identifier)
        return
    ctx = table.manifest_context
    metas = read_manifest_list(table.storage, ctx.path(latest.base_manifest_list))
    metas += read_manifest_list(table.storage, ctx.path(latest.delta_manifest_list))
    logger.info(
        "compact_manifest dry run on %s: snapshot %s has %s data manifests (%s bytes, %s ADD and %s DELETE "
        "entries)",
        table.identifier, latest.id, len(metas), sum(m.file_size for m in metas),
        sum(m.num_added_files for m in metas), sum(m.num_deleted_files for m in metas),
    )  # fmt: skip
