"""Branch procedures (docs/format.md#branches), as Java's ``FileSystemBranchManager``: create, delete,
fast-forward, list; and what the other branches of a table use, which no deletion may touch.

Only metadata moves: a branch directory holds snapshot, schema and tag files; the data files, manifests and
index files its snapshots use stay in the table's directories, shared with the branch they came from.
Deleting a branch deletes its directory and nothing else (as Java): the files only it used become orphans
for :func:`~paimon_core.maintenance.remove_orphan_files`. Snapshot expiration and tag deletion of one branch
keep every file another branch (its snapshots and tags) still uses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.branch import BranchManager, branch_path, check_branch_name, is_main
from paimon_core.errors import (
    BranchAlreadyExistsError,
    BranchNotFoundError,
    ConfigError,
    CorruptMetadataError,
    SnapshotNotFoundError,
)
from paimon_core.maintenance._reach import Reach, reach
from paimon_core.redaction import get_logger
from paimon_core.schema import SchemaManager
from paimon_core.snapshot import LATEST_HINT, Snapshot, SnapshotManager
from paimon_core.storage import StorageBackend
from paimon_core.tag import TagManager

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["create_branch", "delete_branch", "fast_forward", "list_branches", "other_branches_reach"]

logger = get_logger(__name__)


def _branches(table: TableStore) -> BranchManager:
    return BranchManager(table.storage, table.path)


def list_branches(table: TableStore) -> list[str]:
    """The table's branches, sorted (``main`` is not listed)."""
    return _branches(table).names()


def create_branch(
    table: TableStore, branch: str, tag: str | None = None, *, ignore_if_exists: bool = False
) -> str:
    """Paimon's ``create_branch``: from ``tag`` of this handle's branch, the branch starts with the tag, its
    snapshot and the schemas up to the snapshot's; without one it is empty, with the current schemas.
    Returns the branch's directory.

    Raises:
        ConfigError: the name is refused (``main``, blank, only digits, a path character).
        BranchAlreadyExistsError: the branch exists and ``ignore_if_exists`` is false.
        TagNotFoundError: ``tag`` does not exist.
    """
    branches = _branches(table)
    if ignore_if_exists and _complete(table, branch):
        return branches.path(branch)
    check_branch_name(branch)
    if _complete(table, branch):
        raise BranchAlreadyExistsError(branch)
    # A directory without a schema is a creation that died: it is done again. The schema files are written
    # last, so a branch is readable only once everything is in place.
    target = branches.path(branch)
    if tag is not None:
        kept = table.tag_manager.tag(tag)
        _copy(table.storage, table.tag_manager.tag_path(tag), TagManager(table.storage, target).tag_path(tag))
        snapshot = kept.snapshot
        source = table.snapshot_manager.snapshot_path(snapshot.id)
        destination = SnapshotManager(table.storage, target).snapshot_path(snapshot.id)
        if table.snapshot_manager.snapshot_exists(snapshot.id):
            _copy(table.storage, source, destination)
        else:  # expired, and kept by the tag: the snapshot is written from the tag
            table.storage.write_bytes(destination, snapshot.to_json().encode("utf-8"), overwrite=True)
        last_schema = snapshot.schema_id
    else:
        last_schema = table.schema_manager.latest_id() or 0
    _copy_schemas(table.storage, table.schema_manager, SchemaManager(table.storage, target), last_schema)
    logger.info("created branch %s of %s%s", branch, table.identifier, f" from tag {tag}" if tag else "")
    return target


def delete_branch(table: TableStore, branch: str | Sequence[str]) -> list[str]:
    """Paimon's ``delete_branch`` (a name, ``'a,b'`` or a list): deletes each branch's directory, never a
    data file or manifest (main or another branch may use them; orphan removal takes what none uses).
    Returns the branches deleted.

    Raises:
        BranchNotFoundError: a branch does not exist (those before it are deleted).
        ConfigError: a branch is the table's ``scan.fallback-branch``, or ``main``.
    """
    names = [n.strip() for n in branch.split(",")] if isinstance(branch, str) else list(branch)
    fallback = table.options.get_option(opts.SCAN_FALLBACK_BRANCH)
    branches = _branches(table)
    deleted = []
    for name in names:
        if is_main(name):
            raise ConfigError("the main branch cannot be deleted", "branch")
        if name == fallback:
            raise ConfigError(
                f"cannot delete branch {name!r}: it is the table's 'scan.fallback-branch'; unset it first",
                opts.SCAN_FALLBACK_BRANCH.key,
            )
        if not name or not branches.exists(name):
            raise BranchNotFoundError(name, branches.names())
        table.storage.delete_dir(branches.path(name))
        deleted.append(name)
        logger.info("deleted branch %s of %s", name, table.identifier)
    return deleted


def _complete(table: TableStore, branch: str) -> bool:
    return (
        _branches(table).exists(branch)
        and SchemaManager(table.storage, branch_path(table.path, branch)).latest_id() is not None
    )


def _copy(storage: StorageBackend, source: str, target: str) -> None:
    storage.write_bytes(target, storage.read_bytes(source), overwrite=True)


def _copy_schemas(storage: StorageBackend, source: SchemaManager, target: SchemaManager, last: int) -> None:
    for schema_id in source.list_ids():
        if schema_id <= last:
            _copy(storage, source.schema_path(schema_id), target.schema_path(schema_id))


def fast_forward(table: TableStore, branch: str) -> Snapshot:
    """Paimon's ``fast_forward``: this handle's branch (main, usually) takes the history of ``branch`` from
    the branch's earliest snapshot on; returns the latest snapshot it now has.

    As in Java, the handle's snapshots, schemas and tags from the branch's earliest snapshot (and schema) on
    are replaced by the branch's; their data files are left for orphan removal. Here the replaced snapshots
    go newest first and the LATEST hint before them, and the branch's files are copied oldest first with the
    schemas before the snapshots: a fast-forward that dies midway leaves a snapshot of either history as the
    latest, never a snapshot without its schema, and running it again finishes the job.

    Raises:
        ConfigError: ``branch`` is ``main`` or the handle's own branch.
        BranchNotFoundError: no such branch.
        SnapshotNotFoundError: the branch has no snapshot.
    """
    if is_main(branch) or not branch.strip():
        raise ConfigError(f"branch name {branch!r} cannot be fast-forwarded from", "branch")
    if branch == table.branch:
        raise ConfigError(f"fast-forward from the current branch {branch!r} is not allowed", "branch")
    branches = _branches(table)
    if not _complete(table, branch):
        raise BranchNotFoundError(branch, branches.names())
    source_path = branches.path(branch)
    source = SnapshotManager(table.storage, source_path)
    ids = source.list_ids()
    earliest = source.earliest_id()
    snapshots = [s for s in (source.try_snapshot(i) for i in ids if earliest is None or i >= earliest) if s]
    if not snapshots:
        raise SnapshotNotFoundError(None, f"cannot fast-forward branch {branch!r}: it has no snapshot")
    first, last = snapshots[0], snapshots[-1]
    sm, schemas, tags = table.snapshot_manager, table.schema_manager, table.tag_manager
    source_schemas = SchemaManager(table.storage, source_path)
    source_tags = TagManager(table.storage, source_path)

    # 1. what the branch replaces goes, newest first: the handle reads an older snapshot of its own meanwhile
    with contextlib.suppress(FileNotFoundError):
        table.storage.delete(sm.hint_path(LATEST_HINT))
    for snapshot_id in reversed([i for i in sm.list_ids() if i >= first.id]):
        with contextlib.suppress(FileNotFoundError):
            table.storage.delete(sm.snapshot_path(snapshot_id))
    tags.delete([t.name for t in tags.tags() if t.snapshot.id >= first.id])
    branch_schema_ids = set(source_schemas.list_ids())
    for schema_id in schemas.list_ids():
        if schema_id >= first.schema_id and schema_id not in branch_schema_ids:
            with contextlib.suppress(FileNotFoundError):
                table.storage.delete(schemas.schema_path(schema_id))
    # 2. the branch's schemas, snapshots (oldest first), tags, then the hints
    for schema_id in sorted(i for i in branch_schema_ids if i >= first.schema_id):
        _copy(table.storage, source_schemas.schema_path(schema_id), schemas.schema_path(schema_id))
    for snapshot in snapshots:
        _copy(table.storage, source.snapshot_path(snapshot.id), sm.snapshot_path(snapshot.id))
    for tag in source_tags.tags():
        _copy(table.storage, source_tags.tag_path(tag.name), tags.tag_path(tag.name))
    earliest_here = sm.earliest_id()
    if earliest_here is None or earliest_here > first.id:
        sm.write_earliest_hint(first.id)
    sm.write_latest_hint(last.id)
    logger.info(
        "fast-forwarded %s to branch %s (snapshots %s..%s)", table.identifier, branch, first.id, last.id
    )
    return last


def other_branches_reach(table: TableStore) -> Reach | None:
    """Every file the other branches of the table use (main's too, for a branch): their retained snapshots
    and their tags. None when the table has no other branch.

    Raises:
        CorruptMetadataError: a manifest of another branch cannot be read, several times over (the caller
            must then delete nothing).
    """
    names = _branches(table).names()
    paths = [branch_path(table.path, b) for b in ["main", *names] if b != table.branch]
    if not names or not paths:
        return None
    for attempt in range(3):
        try:
            return reach(table, _roots(table.storage, paths))
        except CorruptMetadataError:
            if attempt == 2:
                raise
            # a snapshot of another branch probably expired under us: list its roots again
    return None  # unreachable


def _roots(storage: StorageBackend, paths: list[str]) -> list[Snapshot]:
    roots: list[Snapshot] = []
    for path in paths:
        manager = SnapshotManager(storage, path)
        earliest = manager.earliest_id()
        roots += [s for s in manager.snapshots() if earliest is None or s.id >= earliest]
        roots += [t.snapshot for t in TagManager(storage, path).tags()]
    return roots


def metadata_paths(table: TableStore, used: Reach) -> set[str]:
    """The paths of the manifests, lists and index files in ``used``."""
    return {table.manifest_path(n) for n in used.metadata} | {table.index_path(n) for n in used.index}
