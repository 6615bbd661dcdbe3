"""``precommit-compact`` for primary-key tables: the small changelog files of one commit, concatenated.

Paimon's Flink sink (1.0+) gathers the changelog files of all its writers' messages per partition, across
buckets, and copies their bytes, unchanged, into one file per group; each original stays an entry of its own
bucket under a name that points into that file (:mod:`paimon_core.table._compacted_changelog`). Nothing is
decoded or re-encoded, so a slice reads exactly as the file it replaces, with the same statistics, sequence
numbers and level.

Which files, as Paimon does it: changelog files below ``target-file-size`` (the append-table value, 256 MB by
default: changelog files are not in an LSM tree) x 0.7 and below ``changelog.precommit-compact.buffer-size``
are taken per partition in commit order; a group closes when its sizes reach ``target-file-size``, the rest
of a partition is the last group, and a group of one file is left as it is. The changelog of new files
(APPEND snapshot) and of compactions (COMPACT snapshot) never share a file: the two land in different
snapshots, which expire apart.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from paimon_core import options as opts
from paimon_core.manifest import DataFileMeta
from paimon_core.redaction import get_logger
from paimon_core.storage import join_path
from paimon_core.table import CommitMessage, CompactedChangelogNames, is_compacted_changelog

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["ChangelogCompactSizes", "precommit_compact_changelog"]

logger = get_logger(__name__)

#: The two kinds of changelog a message carries, compacted apart.
KINDS = ("changelog_files", "compact_changelog_files")


@dataclass(frozen=True)
class ChangelogCompactSizes:
    """When a changelog file is merged, and when a group of them is complete."""

    target_file_size: int
    candidate_size: int  # files of this size or more are left alone

    @classmethod
    def of(cls, table: TableStore) -> ChangelogCompactSizes:
        target = table.options.target_file_size(False)
        buffer = table.options.get_option(opts.CHANGELOG_PRECOMMIT_COMPACT_BUFFER_SIZE)
        return cls(target, min(target // 10 * 7, buffer))


@dataclass(frozen=True)
class _Member:
    """A changelog file in a group: where it is listed (message index and kind) and where it lives."""

    message: int
    kind: str
    bucket: int
    file: DataFileMeta
    path: str


def _groups(
    table: TableStore, messages: Sequence[CommitMessage], sizes: ChangelogCompactSizes
) -> list[list[_Member]]:
    """The groups of two or more files to concatenate, per (partition, kind), in commit order."""
    done: list[list[_Member]] = []
    for kind in KINDS:
        open_groups: dict[bytes, tuple[list[_Member], int]] = {}
        for index, message in enumerate(messages):
            directory = table.bucket_dir(message.partition, message.bucket)
            for file in getattr(message, kind):
                if (
                    file.file_size >= sizes.candidate_size
                    or file.external_path
                    or is_compacted_changelog(file.file_name)
                ):
                    continue
                members, size = open_groups.get(message.partition, ([], 0))
                members.append(
                    _Member(index, kind, message.bucket, file, join_path(directory, file.file_name))
                )
                size += file.file_size
                if size >= sizes.target_file_size:
                    done.append(members)
                    open_groups.pop(message.partition, None)
                else:
                    open_groups[message.partition] = (members, size)
        done += [members for members, _ in open_groups.values()]
    return [g for g in done if len(g) > 1]


def _read_ahead(
    table: TableStore, paths: Sequence[tuple[str, int]], pool: ThreadPoolExecutor
) -> Generator[bytes, None, None]:
    """The bytes of each file in order, read on ``pool`` while at most a buffer's worth waits."""
    budget = table.options.get_option(opts.CHANGELOG_PRECOMMIT_COMPACT_BUFFER_SIZE)
    waiting: deque[tuple[Future[bytes], int]] = deque()
    held = 0
    try:
        for path, size in paths:
            while waiting and held + size > budget:
                future, taken = waiting.popleft()
                held -= taken
                yield future.result()
            waiting.append((pool.submit(table.storage.read_bytes, path), size))
            held += size
        while waiting:
            yield waiting.popleft()[0].result()
    finally:
        for future, _ in waiting:
            future.cancel()


def _concatenate(
    table: TableStore, partition: bytes, group: Sequence[_Member], pool: ThreadPoolExecutor
) -> tuple[str, list[DataFileMeta]]:
    """Copy the group's files into one file; returns its path and the renamed entries, in group order."""
    contents = _read_ahead(table, [(m.path, m.file.file_size) for m in group], pool)
    first = next(contents)  # the physical file's name holds the length of its first slice
    file_format = group[0].file.file_name.rsplit(".", 1)[-1]
    names = CompactedChangelogNames(group[0].bucket, len(first), file_format)
    path = join_path(table.bucket_dir(partition, group[0].bucket), names.physical)
    renamed = [group[0].file.copy(file_name=names.physical)]
    offset = len(first)
    try:
        with table.storage.open_output(path) as out:  # discarded unless every file was copied
            out.write(first)
            for member, data in zip(group[1:], contents, strict=True):
                out.write(data)
                renamed.append(member.file.copy(file_name=names.slice(offset, len(data))))
                offset += len(data)
    finally:
        contents.close()
    return path, renamed


def precommit_compact_changelog(table: TableStore, messages: Sequence[CommitMessage]) -> list[CommitMessage]:
    """Concatenate the small changelog files of one commit's messages (see the module docstring).

    The messages come back in their order with their data files untouched; each merged changelog file is
    replaced, in place, by its slice of a compacted file. Once every group is written the originals are
    deleted (no snapshot listed them), so commit, retry or abort the returned messages, never the given
    ones. When writing fails, what was written is deleted and the given messages stay valid.
    """
    groups = _groups(table, messages, ChangelogCompactSizes.of(table))
    if not groups:
        return list(messages)
    written: list[str] = []
    renamed: dict[tuple[int, str, str], DataFileMeta] = {}
    workers = table.options.get_option(opts.CHANGELOG_PRECOMMIT_COMPACT_THREAD_NUM) or os.cpu_count() or 1
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="changelog-compact") as pool:
            for group in groups:
                partition = messages[group[0].message].partition
                path, files = _concatenate(table, partition, group, pool)
                written.append(path)
                for member, file in zip(group, files, strict=True):
                    renamed[(member.message, member.kind, member.file.file_name)] = file
    except BaseException:
        for path in written:
            _delete_quietly(table, path)
        raise
    for group in groups:
        for member in group:
            _delete_quietly(table, member.path)
    logger.debug("precommit-compact of %s concatenated %d changelog files into %d", table.identifier,
                 sum(map(len, groups)), len(groups))  # fmt: skip
    return [_with_renamed(index, message, renamed) for index, message in enumerate(messages)]


def _with_renamed(
    index: int, message: CommitMessage, renamed: dict[tuple[int, str, str], DataFileMeta]
) -> CommitMessage:
    """``message`` (the ``index``-th) with each merged changelog file replaced by its slice, in place."""

    def files(kind: str, given: tuple[DataFileMeta, ...]) -> tuple[DataFileMeta, ...]:
        return tuple(renamed.get((index, kind, f.file_name), f) for f in given)

    return replace(
        message,
        changelog_files=files("changelog_files", message.changelog_files),
        compact_changelog_files=files("compact_changelog_files", message.compact_changelog_files),
    )


def _delete_quietly(table: TableStore, path: str) -> None:
    try:
        table.storage.delete(path)
    except OSError:
        logger.warning("could not delete %s after precommit-compact; it is an orphan", path, exc_info=True)
