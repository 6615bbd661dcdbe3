"""Building an attempt's snapshot: its manifests, manifest lists, index manifest and the snapshot record.

The base manifest list is the base snapshot's state, merged (docs/manifests.md), written anew by every
attempt; the delta (and changelog) manifests and lists are written once per commit call and reused by later
attempts. The record carries the commit progress record (docs/commit-protocol.md, "Exactly once"). What an
attempt wrote is kept in :class:`WrittenFiles`, for the attempt loop to delete once it knows them unused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paimon_core import clock
from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest import (
    FileIdentifier,
    FileKind,
    IndexManifestEntry,
    ManifestContext,
    ManifestEntry,
    ManifestFileMeta,
    ManifestNamer,
    merge_manifests,
    read_manifest_list,
    write_index_manifest,
    write_manifest_list,
    write_manifests,
)
from paimon_core.redaction import get_logger
from paimon_core.snapshot import Snapshot
from paimon_core.table._history import PROGRESS_PROPERTY, CommitProgress, rebuild_progress
from paimon_core.table.commit._changes import Changes
from paimon_core.table.commit._entries import explain_missing

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

logger = get_logger(__name__)


@dataclass(frozen=True)
class ManifestList:
    """A written manifest list and the manifests it names."""

    name: str
    size: int
    metas: list[ManifestFileMeta]

    def paths(self, table: TableStore) -> list[str]:
        return [table.manifest_path(self.name), *(table.manifest_path(m.file_name) for m in self.metas)]


@dataclass(frozen=True)
class DeltaLists:
    """The delta (and changelog) manifest lists of an attempt's entries; reused by later attempts."""

    key: tuple[tuple[FileKind, FileIdentifier], ...]
    delta: ManifestList
    changelog: ManifestList | None


@dataclass
class WrittenFiles:
    """Metadata files one commit call wrote; deleted when they can be known to be unused."""

    attempt: list[str] = field(default_factory=list)  # base list and merged manifests of one attempt
    delta: DeltaLists | None = None
    uncertain: bool = False  # some attempt's outcome is unknown: its files may be referenced

    def delta_paths(self, table: TableStore) -> list[str]:
        if self.delta is None:
            return []
        changelog = self.delta.changelog
        return [*self.delta.delta.paths(table), *(changelog.paths(table) if changelog else ())]


def delete_files(table: TableStore, paths: Sequence[str]) -> None:
    """Delete metadata files no snapshot uses (best effort: a leftover is an orphan, not an error)."""
    for path in paths:
        try:
            table.storage.delete(path)
        except FileNotFoundError:
            pass
        except OSError:
            logger.debug("could not delete unused metadata file %s", path, exc_info=True)


def delete_unused(table: TableStore, written: WrittenFiles) -> None:
    """After a commit call that published nothing: its metadata files are garbage (unless an attempt's
    outcome stayed unknown, in which case a snapshot may reference them)."""
    if not written.uncertain:
        delete_files(table, [*written.attempt, *written.delta_paths(table)])


class SnapshotBuilder:
    """Writes the metadata files of one committer's attempts and builds their snapshots.

    Args:
        table: the table.
        commit_user: the committer's user, recorded in each snapshot.
    """

    def __init__(self, table: TableStore, commit_user: str) -> None:
        self.table = table
        self.commit_user = commit_user
        self._new_name = ManifestNamer()
        self._rebuilt: tuple[int, CommitProgress] | None = None  # the record of a latest snapshot without one

    def build(
        self,
        latest: Snapshot | None,
        changes: Changes,
        identifier: int,
        written: WrittenFiles,
        index: list[IndexManifestEntry] | None,
    ) -> Snapshot:
        """The snapshot of ``changes`` on ``latest``, its metadata files written (and noted in ``written``).

        Args:
            index: the live index files once it lands; None keeps the base's index manifest.
        """
        ctx, storage = self.table.manifest_context, self.table.storage
        written.attempt = []
        base_list, base_size = self._write_base_list(latest, written, changes.full_manifest_merge)
        lists = self._delta(changes, written)
        changelog = lists.changelog
        index_manifest = latest.index_manifest if latest else None
        if index is not None:
            index_manifest = self._new_name("index-manifest")
            written.attempt.append(ctx.path(index_manifest))
            write_index_manifest(storage, ctx.path(index_manifest), index, ctx.codec, ctx.level)
        delta_rows = sum(
            e.file.row_count if e.kind == FileKind.ADD else -e.file.row_count for e in changes.entries
        )
        schema_id = self.table.schema_manager.latest_id() or 0
        same_schema = latest is not None and latest.schema_id == schema_id
        return Snapshot(
            id=(latest.id + 1) if latest else 1,
            schema_id=schema_id,
            base_manifest_list=base_list,
            base_manifest_list_size=base_size,
            delta_manifest_list=lists.delta.name,
            delta_manifest_list_size=lists.delta.size,
            changelog_manifest_list=changelog.name if changelog else None,
            changelog_manifest_list_size=changelog.size if changelog else None,
            index_manifest=index_manifest,
            commit_user=self.commit_user,
            commit_identifier=identifier,
            commit_kind=changes.kind,
            time_millis=clock.now_millis(),
            total_record_count=(latest.total_record_count if latest else 0) + delta_rows,
            delta_record_count=delta_rows,
            changelog_record_count=sum(e.file.row_count for e in changes.changelog),
            watermark=_max_watermark(latest.watermark if latest else None, changes.watermark),
            statistics=latest.statistics if latest and same_schema else None,
            next_row_id=latest.next_row_id if latest else None,
            properties={PROGRESS_PROPERTY: self._progress(latest, identifier).to_property()},
        )

    def _write_base_list(
        self, latest: Snapshot | None, written: WrittenFiles, full: bool = False
    ) -> tuple[str, int]:
        """The base manifest list: the state of ``latest``, its manifests merged (all of them when ``full``).
        Returns its name and size."""
        table = self.table
        ctx, storage = table.manifest_context, table.storage
        if full:
            ctx = full_merge_context(ctx)
        base_metas: list[ManifestFileMeta] = []
        if latest is not None:
            try:
                read = read_manifest_list(storage, ctx.path(latest.base_manifest_list))
                read += read_manifest_list(storage, ctx.path(latest.delta_manifest_list))
                base_metas = merge_manifests(ctx, read, self._new_name)
            except CorruptMetadataError as exc:
                raise explain_missing(table, latest.id, exc) from exc
            known = {m.file_name for m in read}
            written.attempt += [ctx.path(m.file_name) for m in base_metas if m.file_name not in known]
        base_list = self._new_name("manifest-list")
        written.attempt.append(ctx.path(base_list))
        base_size = write_manifest_list(storage, ctx.path(base_list), base_metas, ctx.codec, ctx.level)
        return base_list, base_size

    def _progress(self, latest: Snapshot | None, identifier: int) -> CommitProgress:
        """The commit progress record of the snapshot built on ``latest``: its record plus this commit."""
        new_id = (latest.id + 1) if latest else 1
        if latest is None:
            base = CommitProgress()
        else:
            found = CommitProgress.of(latest)
            if found is None:  # written by another engine or an older release: rebuilt once per base
                if self._rebuilt is None or self._rebuilt[0] != latest.id:
                    self._rebuilt = (latest.id, rebuild_progress(self.table.snapshot_manager, latest))
                found = self._rebuilt[1]
            base = found
        return base.with_commit(self.commit_user, identifier, new_id)

    def _delta(self, changes: Changes, written: WrittenFiles) -> DeltaLists:
        """The delta (and changelog) manifests and lists of these entries, written once and reused by later
        attempts."""
        key = tuple((e.kind, e.identifier()) for e in (*changes.entries, *changes.changelog))
        if written.delta is not None and written.delta.key == key:
            return written.delta
        if written.delta is not None and not written.uncertain:
            delete_files(self.table, written.delta_paths(self.table))  # an overwrite's scope changed
        delta = self._write_list(changes.entries)
        changelog = self._write_list(list(changes.changelog)) if changes.changelog else None
        written.delta = DeltaLists(key, delta, changelog)
        return written.delta

    def _write_list(self, entries: list[ManifestEntry]) -> ManifestList:
        ctx = self.table.manifest_context
        metas = write_manifests(ctx, entries, self._new_name)
        name = self._new_name("manifest-list")
        size = write_manifest_list(self.table.storage, ctx.path(name), metas, ctx.codec, ctx.level)
        return ManifestList(name, size, metas)


def full_merge_context(ctx: ManifestContext) -> ManifestContext:
    """``ctx`` with the thresholds that make a merge rewrite every manifest (as Java's compact_manifest
    forces ``manifest.merge-min-count`` 1 and ``manifest.full-compaction-threshold-size`` 1 byte)."""
    return dataclasses.replace(ctx, merge_min_count=1, full_compaction_threshold=1)


def _max_watermark(previous: int | None, new: int | None) -> int | None:
    if previous is None or new is None:
        return new if previous is None else previous
    return max(previous, new)
