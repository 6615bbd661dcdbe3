"""Tag procedures and rollback (docs/format.md#tags, docs/format.md#rollback), with Paimon's argument names."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paimon_core.errors import ConfigError, SnapshotNotFoundError, TagNotFoundError
from paimon_core.maintenance._expire import clean_after_last_tag
from paimon_core.options import parse_duration_ms
from paimon_core.tag import Tag, TagManager, split_tag_names

if TYPE_CHECKING:
    from paimon_core.table import Table

__all__ = ["create_tag", "delete_tag", "rollback_to"]


def _tags(table: Table) -> TagManager:
    return TagManager(table.storage, table.path)


def create_tag(
    table: Table,
    tag: str,
    snapshot_id: int | None = None,
    time_retained: dt.timedelta | str | None = None,
    *,
    ignore_if_exists: bool = False,
) -> Tag:
    """Tag ``snapshot_id`` (the latest snapshot by default), optionally with a time-to-live ('7 d').

    Raises:
        SnapshotNotFoundError: the snapshot does not exist (or the table has none).
        TagAlreadyExistsError: the tag exists and ``ignore_if_exists`` is false.
    """
    sm = table.snapshot_manager
    snapshot = sm.snapshot(snapshot_id) if snapshot_id is not None else sm.latest()
    if snapshot is None:
        raise SnapshotNotFoundError(None, f"{table.identifier} has no snapshot to tag")
    if isinstance(time_retained, str):
        try:
            time_retained = dt.timedelta(milliseconds=parse_duration_ms(time_retained))
        except ValueError as exc:
            raise ConfigError(f"time_retained: {exc}") from None
    return _tags(table).create(tag, snapshot, time_retained, ignore_if_exists=ignore_if_exists)


def delete_tag(table: Table, tag: str | Sequence[str]) -> list[str]:
    """Delete tags (a name, ``'a,b'`` or a list); returns the names deleted. Missing tags are skipped, as in Java.

    When a deleted tag was the last to keep a snapshot that has expired, the files only that snapshot used
    are deleted too (docs/format.md#tags): data files that neither neighbouring tag nor the earliest snapshot uses,
    then its manifests.
    """
    tags = _tags(table)
    # every tag is read before any is deleted: the remaining ones decide what a deleted tag's files still serve
    remaining = {t.name: t.snapshot for t in tags.tags()}
    removed = []
    for name in split_tag_names(tag):
        snapshot = remaining.pop(name, None)
        if snapshot is None or not tags.delete([name]):
            continue
        removed.append(name)
        others = {s.id: s for s in remaining.values()}
        if snapshot.id in others or table.snapshot_manager.snapshot_exists(snapshot.id):
            continue
        clean_after_last_tag(table, snapshot, [others[i] for i in sorted(others)])
    return removed


def rollback_to(table: Table, snapshot_id: int | None = None, tag: str | None = None) -> None:
    """Make ``snapshot_id`` (or the snapshot of ``tag``) the latest again (docs/format.md#rollback).

    Newer snapshot files and tags of newer snapshots are deleted; data files and manifests are left for
    :func:`remove_orphan_files`, as Java does since 1.2. Like Java's, this is for a table no one is
    writing to: a commit racing the rollback may land on top of the removed snapshots' successor id.

    Raises:
        ConfigError: neither or both of ``snapshot_id`` and ``tag``.
        SnapshotNotFoundError / TagNotFoundError: the target does not exist.
    """
    if (snapshot_id is None) == (tag is None):
        raise ConfigError("rollback_to needs exactly one of snapshot_id and tag")
    sm = table.snapshot_manager
    tags = _tags(table)
    if tag is not None:
        target = tags.tag(tag).snapshot
    else:
        assert snapshot_id is not None
        target = sm.snapshot(snapshot_id)
    latest = sm.latest_id()
    if latest is None or target.id > latest:
        raise SnapshotNotFoundError(target.id, f"snapshot {target.id} is newer than the latest ({latest})")
    _delete_newer_snapshots(table, target.id, latest)
    for later in tags.tags():
        if later.snapshot.id > target.id:
            with contextlib.suppress(TagNotFoundError):
                tags.delete([later.name])
    if not sm.snapshot_exists(target.id):  # a tag whose snapshot expired: bring the snapshot back
        table.storage.write_bytes(
            sm.snapshot_path(target.id), target.to_json().encode("utf-8"), overwrite=True
        )
        sm.write_earliest_hint(target.id)
    sm.write_latest_hint(target.id)


_ROLLBACK_SWEEPS = 5


def _delete_newer_snapshots(table: Table, target: int, latest: int) -> None:
    """Delete the snapshot files above ``target``, newest first, so the listing never shows a gap below LATEST.

    A commit racing the rollback may publish above ``target`` meanwhile: the directory is listed again and
    swept until nothing above ``target`` remains, so the rollback never leaves a snapshot on top of a hole.
    Such a commit is rolled back with the others (its committer may already have reported it).
    """
    sm = table.snapshot_manager
    doomed = list(range(latest, target, -1))
    for _ in range(_ROLLBACK_SWEEPS):
        for newer in doomed:
            with contextlib.suppress(FileNotFoundError):
                table.storage.delete(sm.snapshot_path(newer))
        doomed = sorted((i for i in sm.list_ids() if i > target), reverse=True)
        if not doomed:
            return
