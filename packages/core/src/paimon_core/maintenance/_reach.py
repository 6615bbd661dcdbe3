"""The files a set of snapshots uses: manifest lists, manifests, index files, data files (the "mark" of
mark-and-sweep)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest import (
    ManifestEntry,
    read_index_manifest,
    read_manifest_file,
    read_manifest_list,
)
from paimon_core.snapshot import Snapshot
from paimon_core.storage import StorageBackend, join_path, local_path, parent_path, uri_scheme
from paimon_core.table import real_changelog_path

if TYPE_CHECKING:
    from paimon_core.table import TableStore

_T = TypeVar("_T")


@dataclass
class Reach:
    """File names in ``manifest/`` and ``index/``, and full paths of data files, used by some snapshots."""

    metadata: set[str] = field(default_factory=set)
    index: set[str] = field(default_factory=set)
    data: set[str] = field(default_factory=set)


def reach(table: TableStore, snapshots: Iterable[Snapshot]) -> Reach:
    """Every file the snapshots use; each manifest is read once however many snapshots share it.

    Every data file that any manifest entry names counts (ADD or DELETE): conservative, as orphan removal
    must be.

    Raises:
        CorruptMetadataError: a manifest list or manifest cannot be read (the caller must then delete nothing).
    """
    found = Reach()
    per_snapshot: list[list[str]] = []
    changelogs: set[str] = set()
    for snapshot in snapshots:
        names: list[str] = []
        for list_name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
            found.metadata.add(list_name)
            names += [m.file_name for m in read_manifest_list(table.storage, table.manifest_path(list_name))]
        if snapshot.changelog_manifest_list:
            found.metadata.add(snapshot.changelog_manifest_list)
            # their changelog files are in use too
            changelogs.update(
                m.file_name for m in _unless_gone(table, snapshot.changelog_manifest_list, read_manifest_list)
            )
        if snapshot.index_manifest and snapshot.index_manifest not in found.metadata:
            found.metadata.add(snapshot.index_manifest)
            index = read_index_manifest(table.storage, table.manifest_path(snapshot.index_manifest))
            found.index.update(e.file.file_name for e in index)
        found.metadata.update(names)
        per_snapshot.append(names)
    found.metadata.update(changelogs)
    manifests = sorted({name for names in per_snapshot for name in names})
    with ThreadPoolExecutor(max_workers=8) as pool:
        entries = list(
            pool.map(lambda m: read_manifest_file(table.storage, table.manifest_path(m)), manifests)
        )
        changelog_entries = list(
            pool.map(lambda m: _unless_gone(table, m, read_manifest_file), sorted(changelogs))
        )
    chunks = [*entries, *changelog_entries]
    found.data.update(same_file(p) for p in _paths(table, [e for chunk in chunks for e in chunk]))
    return found


def same_file(path: str) -> str:
    """One spelling per file, to compare listed paths with recorded ones: Java records an external path of
    ``file:///x`` as ``file:/x``, and a local table's own paths may be plain."""
    if uri_scheme(path) == "file":
        with contextlib.suppress(ValueError):
            return local_path(path)
    return join_path(path)


def _unless_gone(table: TableStore, name: str, read: Callable[[StorageBackend, str], list[_T]]) -> list[_T]:
    """``read`` of changelog manifest (list) ``name``, or nothing if it is gone: expiration deletes the
    changelog of a tagged snapshot (tags do not keep changelogs, as in Java), and lists after their manifests."""
    path = table.manifest_path(name)
    try:
        return read(table.storage, path)
    except CorruptMetadataError:
        if table.storage.exists(path):
            raise
        return []


def _paths(table: TableStore, entries: Iterable[ManifestEntry]) -> Iterable[str]:
    for entry in entries:
        yield from entry_paths(table, entry)


def entry_paths(table: TableStore, entry: ManifestEntry) -> Iterable[str]:
    """The data file of a manifest entry and its extra files, which sit beside it (also under an external path)."""
    file = entry.file
    path = file.external_path or join_path(table.bucket_dir(entry.partition, entry.bucket), file.file_name)
    yield real_changelog_path(path)  # a slice of a compacted changelog file uses its physical file
    directory = parent_path(path)
    for extra in file.extra_files:
        yield join_path(directory, extra)
