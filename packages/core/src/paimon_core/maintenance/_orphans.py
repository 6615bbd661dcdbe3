"""``remove_orphan_files`` (docs/format.md#orphan-files): delete files that no snapshot and no tag uses, once old enough.

Used set: every snapshot still present and every tag (of the table and of its branches). Candidates: the
files of ``manifest/`` and ``index/``, the files of every ``bucket-*`` directory of the partition tree (of the table
and of each of ``data-file.external-paths``), and stray files in
``snapshot/`` (not a hint or a retained ``snapshot-N``). A candidate goes when it is unused and older than
``older_than`` (default: a day ago), so files of writes still in progress are never touched. Anything that
cannot be read while building the used set aborts the run before a single deletion.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from paimon_core import options as opts
from paimon_core.errors import ConfigError, CorruptMetadataError
from paimon_core.maintenance._reach import Reach, reach, same_file
from paimon_core.options import to_millis
from paimon_core.progress import Progress, resolve_progress
from paimon_core.snapshot import Snapshot, SnapshotManager
from paimon_core.storage import FileInfo, join_path, uri_scheme
from paimon_core.tag import TagManager

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["OrphanCleanResult", "remove_orphan_files"]

_DAY_MS = 86_400_000
_SCAN_ROUNDS = 3
_HINTS = ("EARLIEST", "LATEST")


@dataclass(frozen=True)
class OrphanCleanResult:
    """The orphan files deleted (or, in a dry run, that would be) and their total size."""

    deleted: tuple[str, ...]
    deleted_bytes: int


def remove_orphan_files(
    table: TableStore,
    older_than: dt.datetime | int | str | None = None,
    dry_run: bool = False,
    *,
    now_millis: int | None = None,
    progress: bool | Progress | None = False,
) -> OrphanCleanResult:
    """Delete unused files older than ``older_than`` (a datetime, epoch millis or 'yyyy-MM-dd HH:mm:ss');
    ``progress`` shows the deletions (None: when stderr is a terminal), or is a :class:`Progress`.

    Raises:
        ConfigError: ``older_than`` is not in the past.
        CorruptMetadataError: a manifest of a live snapshot or tag cannot be read (nothing is deleted).
    """
    now = now_millis if now_millis is not None else int(time.time() * 1000)
    limit = to_millis(older_than) if older_than is not None else now - _DAY_MS
    if limit > now:
        raise ConfigError(f"older_than must be in the past, got {older_than!r}")
    used = _used(table)
    storage = table.storage
    orphans = [
        info
        for info, where in _candidates(table)
        if 0 < info.mtime_ms < limit and not _is_used(info, where, used)
    ]
    if not dry_run:
        total_bytes = sum(i.size for i in orphans)
        counter = resolve_progress(progress).counter(
            "remove-orphan-files", len(orphans), "files", total_bytes
        )
        for info in orphans:
            with contextlib.suppress(FileNotFoundError):
                storage.delete(info.path)
            counter.advance(1, info.size)
        _remove_empty_bucket_dirs(table)
    return OrphanCleanResult(tuple(sorted(i.path for i in orphans)), sum(i.size for i in orphans))


def _roots(table: TableStore) -> list[str]:
    roots = [table.path.rstrip("/")]
    with contextlib.suppress(FileNotFoundError):
        branch_dir = join_path(roots[0], "branch")
        roots += [i.path for i in table.storage.list_dir(branch_dir) if i.is_dir]
    return roots


def _used(table: TableStore) -> Reach:
    """What the retained snapshots and the tags use. A snapshot that expires during the scan takes its
    files with it: the scan starts over without it (a few times), and only a file missing from a snapshot
    that is still retained means the table is corrupt."""
    for _ in range(_SCAN_ROUNDS - 1):
        try:
            return reach(table, _live_roots(table))
        except CorruptMetadataError:
            continue  # probably a snapshot expired under us: list the roots again
    return reach(table, _live_roots(table))


def _live_roots(table: TableStore) -> list[Snapshot]:
    """Retained snapshots (from EARLIEST on: files below it are expired, or stale publishes that lost to
    expiration) and tags, of the table and its branches."""
    snapshots: list[Snapshot] = []
    for root in _roots(table):
        manager = SnapshotManager(table.storage, root)
        earliest = manager.earliest_id()
        snapshots += [s for s in manager.snapshots() if earliest is None or s.id >= earliest]
        snapshots += [t.snapshot for t in TagManager(table.storage, root).tags()]
    return snapshots


_Where = Literal["manifest", "index", "other"]


def _is_used(info: FileInfo, where: _Where, used: Reach) -> bool:
    # Manifests and index files are referenced by name; data files by their path (partition and bucket).
    if where == "manifest":
        return info.name in used.metadata
    if where == "index":
        return info.name in used.index
    return same_file(info.path) in used.data


def _candidates(table: TableStore) -> list[tuple[FileInfo, _Where]]:
    """Files that may be orphans, each with the directory kind it lives in."""
    storage = table.storage
    found: list[tuple[FileInfo, _Where]] = []
    with contextlib.suppress(FileNotFoundError):
        manifest_dir = table.manifest_context.manifest_dir
        found += [(i, "manifest") for i in storage.list_dir(manifest_dir) if not i.is_dir]
    with contextlib.suppress(FileNotFoundError):
        found += [(i, "index") for i in storage.list_dir(join_path(table.path, "index")) if not i.is_dir]
    earliest = table.snapshot_manager.earliest_id()
    with contextlib.suppress(FileNotFoundError):
        for info in storage.list_dir(join_path(table.path, "snapshot")):
            if not info.is_dir and _stray_in_snapshot_dir(info.name, earliest):
                found.append((info, "other"))
    for bucket_dir in _bucket_dirs(table):
        with contextlib.suppress(FileNotFoundError):
            found += [(i, "other") for i in storage.list_dir(bucket_dir) if not i.is_dir]
    return found


def _stray_in_snapshot_dir(name: str, earliest: int | None) -> bool:
    """Anything but hints and retained snapshots: temporary files, and snapshot files below EARLIEST left
    by a committer that died before withdrawing a publish that lost to expiration."""
    if name in _HINTS:
        return False
    suffix = name[len("snapshot-") :] if name.startswith("snapshot-") else ""
    if not suffix.isdigit():
        return True
    return earliest is not None and int(suffix) < earliest


def _bucket_dirs(table: TableStore) -> list[str]:
    """``bucket-*`` directories under the partition tree (one level per partition key) of the table and of
    each of ``data-file.external-paths`` (as Java lists them; whatever the strategy now, files may be there)."""
    found = _buckets_under(table, table.data_dir())
    directory = table.options.get_option(opts.DATA_FILE_PATH_DIRECTORY) or ""
    for root in (table.options.get_option(opts.DATA_FILE_EXTERNAL_PATHS) or "").split(","):
        if root.strip() and uri_scheme(root.strip()) == uri_scheme(table.path):  # others: another store
            found += _buckets_under(table, join_path(root.strip(), directory))
    return found


def _buckets_under(table: TableStore, top: str) -> list[str]:
    level = [top]
    for _ in table.partition_keys:
        below = []
        for directory in level:
            with contextlib.suppress(FileNotFoundError):
                below += [i.path for i in table.storage.list_dir(directory) if i.is_dir and "=" in i.name]
        level = below
    buckets = []
    for directory in level:
        with contextlib.suppress(FileNotFoundError):
            listing = table.storage.list_dir(directory)
            buckets += [i.path for i in listing if i.is_dir and i.name.startswith("bucket-")]
    return buckets


def _remove_empty_bucket_dirs(table: TableStore) -> None:
    for directory in _bucket_dirs(table):
        with contextlib.suppress(FileNotFoundError, OSError):
            if not table.storage.list_dir(directory):
                table.storage.delete_dir(directory)
