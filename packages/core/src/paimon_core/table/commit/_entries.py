"""What the commit reads of earlier snapshots: their delta entries, and why a metadata file is missing.

Read through the table's entry listing (table/_entries.py), below both the scan and the commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paimon_core.manifest import ManifestEntry
from paimon_core.snapshot import Snapshot
from paimon_core.table._entries import explain_missing, manifest_metas, read_entries

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["delta_entries", "explain_missing"]


def delta_entries(table: TableStore, snapshot: Snapshot) -> list[ManifestEntry]:
    """The entries of the snapshot's delta manifest list: the files it added and deleted."""
    return read_entries(table, manifest_metas(table, snapshot, delta_only=True))
