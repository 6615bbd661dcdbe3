"""Manifest merging when building a snapshot's base list: Java's legacy ``ManifestFileMerger`` (spec §5.5).

Without it every commit would add manifests to the base list forever. Two strategies, tried in order:

* **Full compaction**: the leading run of big (≥ target size) delete-free manifests is the *base*; the rest is
  the *delta*. When the delta adds up to ``manifest.full-compaction-threshold-size``, the delta is merged and
  its DELETEs applied to the base: base manifests before the first one holding a deleted file are kept as
  they are, everything from there on is rewritten with only live ADDs.
* **Minor compaction**: otherwise, walk the manifests in order and merge each run that reaches the target
  size; the trailing run is merged only when it holds at least ``manifest.merge-min-count`` manifests.

Merging keeps entry order (a DELETE stays after its ADD). Files written by a failed merge are deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from paimon_core.manifest._entry import (
    FileIdentifier,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    merge_entries,
)
from paimon_core.manifest._files import (
    ManifestContext,
    ManifestNamer,
    RollingManifestWriter,
    read_all_entries,
    read_manifest_file,
)

logger = logging.getLogger(__name__)

__all__ = ["merge_manifests"]


def merge_manifests(
    ctx: ManifestContext,
    metas: Sequence[ManifestFileMeta],
    new_name: Callable[[str], str] | None = None,
) -> list[ManifestFileMeta]:
    """Merge the manifests of a full table state (base + delta of a snapshot) into a shorter list.

    Args:
        ctx: table context; ``target_file_size``, ``merge_min_count`` and ``full_compaction_threshold``
            steer the merge.
        metas: the manifests, in snapshot order.
        new_name: names new manifests (``new_name("manifest")``).

    Returns:
        The new list: untouched input metas plus newly written manifests, in an order that keeps every
        DELETE after its ADD.

    Raises:
        DuplicateFileError: the manifests add one file twice (corrupt table).
        CorruptMetadataError: a manifest is missing or unreadable.
    """
    namer = new_name or ManifestNamer()
    written: list[ManifestFileMeta] = []
    try:
        full = _try_full_compaction(ctx, metas, namer, written)
        if full is not None:
            return full
        return _minor_compaction(ctx, metas, namer, written)
    except BaseException:
        for meta in written:
            try:
                ctx.storage.delete(ctx.path(meta.file_name))
            except OSError:
                logger.warning(
                    "could not delete manifest %s after a failed merge", meta.file_name, exc_info=True
                )
        raise


def _write(
    ctx: ManifestContext, entries: Sequence[ManifestEntry], namer: Callable[[str], str], written: list[Any]
) -> list[ManifestFileMeta]:
    writer = RollingManifestWriter(ctx, namer)
    try:
        writer.write_all(entries)
        metas = writer.close()
    finally:
        # Record partial output too, so that a failure removes it.
        written.extend(writer.result)
    return metas


def _minor_compaction(
    ctx: ManifestContext, metas: Sequence[ManifestFileMeta], namer: Callable[[str], str], written: list[Any]
) -> list[ManifestFileMeta]:
    result: list[ManifestFileMeta] = []
    candidates: list[ManifestFileMeta] = []
    total = 0
    for meta in metas:
        total += meta.file_size
        candidates.append(meta)
        if total >= ctx.target_file_size:
            result.extend(_merge_candidates(ctx, candidates, namer, written))
            candidates = []
            total = 0
    if len(candidates) >= ctx.merge_min_count:
        result.extend(_merge_candidates(ctx, candidates, namer, written))
    else:
        result.extend(candidates)
    return result


def _merge_candidates(
    ctx: ManifestContext, candidates: list[ManifestFileMeta], namer: Callable[[str], str], written: list[Any]
) -> list[ManifestFileMeta]:
    if len(candidates) == 1:
        return candidates
    # DELETEs whose ADD lies in an earlier manifest survive here, and still follow that ADD.
    merged = merge_entries(read_all_entries(ctx, candidates))
    return _write(ctx, merged, namer, written) if merged else []


def _try_full_compaction(
    ctx: ManifestContext, metas: Sequence[ManifestFileMeta], namer: Callable[[str], str], written: list[Any]
) -> list[ManifestFileMeta] | None:
    split = 0
    while (
        split < len(metas)
        and metas[split].num_deleted_files == 0
        and metas[split].file_size >= ctx.target_file_size
    ):
        split += 1
    base, delta = list(metas[:split]), list(metas[split:])
    delta_size = sum(m.file_size for m in delta)
    if delta_size < ctx.full_compaction_threshold:
        return None
    logger.info(
        "manifest full compaction: %d base and %d delta manifests, %d delta bytes",
        len(base),
        len(delta),
        delta_size,
    )

    delta_merged = merge_entries(read_all_entries(ctx, delta))
    deleted: set[FileIdentifier] = {e.identifier() for e in delta_merged if e.kind is FileKind.DELETE}

    result: list[ManifestFileMeta] = []
    index = 0
    # 1. Keep base manifests that cannot hold a deleted file, judged by their partition stats.
    if not deleted:
        result.extend(base)
        index = len(base)
    elif ctx.partition_types:
        checker = _PartitionRangeChecker(ctx, {key.partition for key in deleted})
        while index < len(base) and not checker.may_contain(base[index]):
            result.append(base[index])
            index += 1

    # 2. Keep base manifests that hold no deleted file, judged by reading them, up to the first that does.
    survivors: list[ManifestEntry] = []
    while index < len(base):
        meta = base[index]
        entries = read_manifest_file(ctx.storage, ctx.path(meta.file_name))
        index += 1
        kept = [e for e in entries if e.identifier() not in deleted]
        if len(kept) != len(entries):
            survivors = kept
            break
        result.append(meta)

    # 3. Rewrite the rest: survivors of the first touched manifest, the later base manifests minus deleted
    #    files, then the delta's live ADDs. DELETEs are dropped: their ADDs are gone with them.
    remaining = [e for e in read_all_entries(ctx, base[index:]) if e.identifier() not in deleted]
    new_entries = survivors + remaining + [e for e in delta_merged if e.kind is FileKind.ADD]
    if new_entries:
        result.extend(_write(ctx, new_entries, namer, written))
    return result


class _PartitionRangeChecker:
    """Whether a manifest's partition stats admit any of some partitions (conservative: unknown → yes)."""

    def __init__(self, ctx: ManifestContext, partitions: set[bytes]) -> None:
        from paimon_core.binary_row import deserialize_row

        self._decode = deserialize_row
        self.types = list(ctx.partition_types)
        self.partitions = [deserialize_row(p, self.types) for p in partitions]

    def may_contain(self, meta: ManifestFileMeta) -> bool:
        stats = meta.partition_stats
        try:
            mins = self._decode(stats.min_values, self.types)
            maxs = self._decode(stats.max_values, self.types)
        except Exception:  # stats we cannot read prove nothing
            return True
        nulls = stats.null_counts
        if len(mins) != len(self.types) or len(maxs) != len(self.types):
            return True
        return any(self._admits(values, mins, maxs, nulls) for values in self.partitions)

    @staticmethod
    def _admits(
        values: list[Any], mins: list[Any], maxs: list[Any], nulls: tuple[int | None, ...] | None
    ) -> bool:
        for i, value in enumerate(values):
            null_count = nulls[i] if nulls is not None and i < len(nulls) else None
            if value is None:
                if null_count == 0:
                    return False
                continue
            if mins[i] is None or maxs[i] is None:
                continue  # no range known; wrongly skipping a manifest would resurrect deleted files
            try:
                if value < mins[i] or value > maxs[i]:
                    return False
            except TypeError:
                continue
        return True
