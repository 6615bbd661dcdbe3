"""The live data files of a table at its newest snapshot, kept current from the deltas of newer snapshots.

Committers ask it whether the files a commit adds are live already (the same messages committed twice)
and whether the files an overwrite or compaction deletes are still live (conflicts). Reading every
manifest of the latest snapshot for each commit would cost a full scan plan; instead the index reads one
full state once per table handle and then only the delta manifests of the snapshots that came after.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from paimon_core._gc import gc_paused
from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest import FileIdentifier, FileKind, ManifestEntry
from paimon_core.snapshot import Snapshot
from paimon_core.table._scan import live_entries, manifest_metas, read_entries

if TYPE_CHECKING:
    from paimon_core.table._table import Table

__all__ = ["LiveFileIndex"]

# Beyond this many new snapshots, one full read is cheaper than their deltas.
_MAX_DELTAS = 64
# Changes on top of a full state are kept apart until they reach this share of it (then folded in).
_FOLD_SHARE = 8


class _LiveView(Mapping[FileIdentifier, ManifestEntry]):
    """A full state plus the changes of later snapshots: advancing by a few commits copies the changes, not
    the whole table (the full state is shared by the views of successive snapshots and never changed)."""

    def __init__(
        self,
        base: dict[FileIdentifier, ManifestEntry],
        added: dict[FileIdentifier, ManifestEntry] | None = None,
        removed: frozenset[FileIdentifier] = frozenset(),
    ) -> None:
        self._base = base
        self._added = added or {}
        self._removed = removed  # keys of the base that are gone (or replaced by an added entry)

    def __getitem__(self, key: FileIdentifier) -> ManifestEntry:
        hit = self._added.get(key)
        if hit is not None:
            return hit
        if key in self._removed:
            raise KeyError(key)
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._added or (key not in self._removed and key in self._base)

    def __iter__(self) -> Iterator[FileIdentifier]:
        removed, added = self._removed, self._added
        yield from (k for k in self._base if k not in removed and k not in added)
        yield from added

    def __len__(self) -> int:
        return len(self._base) - len(self._removed) + len(self._added)

    def advanced(self, entries: list[ManifestEntry]) -> _LiveView:
        """The view after applying ``entries`` (a snapshot's delta), in order."""
        added, removed = dict(self._added), set(self._removed)
        for entry in entries:
            key = entry.identifier()
            if entry.kind == FileKind.ADD:
                added[key] = entry
                if key in self._base:
                    removed.add(key)
            else:
                added.pop(key, None)
                if key in self._base:
                    removed.add(key)
        if (len(added) + len(removed)) * _FOLD_SHARE > len(self._base):
            return _LiveView(dict(_LiveView(self._base, added, frozenset(removed)).items()))
        return _LiveView(self._base, added, frozenset(removed))


class LiveFileIndex:
    """Live entries by file identity at one snapshot; thread-safe, one per table handle."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._files = _LiveView({})

    def at(self, snapshot: Snapshot | None) -> Mapping[FileIdentifier, ManifestEntry]:
        """The live entries of ``snapshot`` (read-only; a new mapping whenever the snapshot changes).

        Raises:
            CorruptMetadataError: a manifest of the snapshot cannot be read (the table is unreadable), or
                SnapshotExpiredError when it vanished under us.
        """
        if snapshot is None:
            return {}
        with self._lock:
            cached = self._snapshot
            if cached is not None and cached == snapshot:
                return self._files
            files = None
            if cached is not None and cached.id < snapshot.id <= cached.id + _MAX_DELTAS:
                files = self._advance(cached, snapshot)
            if files is None:
                with gc_paused():
                    files = _LiveView({e.identifier(): e for e in live_entries(self._table, snapshot)})
            self._snapshot, self._files = snapshot, files
            return files

    def _advance(self, cached: Snapshot, target: Snapshot) -> _LiveView | None:
        """Apply the deltas of ``(cached, target]``; None when the chain between them cannot be followed
        (a snapshot expired, or a rollback replaced the cached one): then the caller reads in full."""
        sm = self._table.snapshot_manager
        if sm.try_snapshot(cached.id) != cached:
            return None
        chain = [sm.try_snapshot(i) for i in range(cached.id + 1, target.id)]
        if any(s is None for s in chain):
            return None
        files = self._files
        try:
            for snapshot in [*(s for s in chain if s is not None), target]:
                files = files.advanced(
                    read_entries(self._table, manifest_metas(self._table, snapshot, delta_only=True))
                )
        except CorruptMetadataError:
            return None  # an intermediate delta expired meanwhile: read the target in full
        return files
