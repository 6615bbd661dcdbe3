"""The manifest merge that builds base manifest lists (spec §5.5)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from paimon_core.binary_row import serialize_row
from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest import (
    EMPTY_ROW_BYTES,
    DataFileMeta,
    DuplicateFileError,
    FileIdentifier,
    FileKind,
    ManifestContext,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
    merge_manifests,
    read_all_entries,
    write_manifests,
)
from paimon_core.storage import StorageBackend, clear_memory_store, get_backend
from paimon_core.types import DataType, string_type

PARTITION_TYPES: tuple[DataType, ...] = (string_type(),)


@pytest.fixture
def table_path() -> Iterator[str]:
    path = f"memory://merge-{uuid.uuid4().hex}/t"
    yield path
    clear_memory_store(path)


@pytest.fixture
def storage(table_path: str) -> StorageBackend:
    return get_backend(table_path, {})


def context(storage: StorageBackend, table_path: str, **changes: Any) -> ManifestContext:
    values: dict[str, Any] = dict(
        storage=storage,
        manifest_dir=f"{table_path}/manifest",
        partition_types=PARTITION_TYPES,
        target_file_size=8 << 20,
        merge_min_count=30,
        full_compaction_threshold=16 << 20,
    )
    values.update(changes)
    return ManifestContext(**values)


def add(name: str, dt: str = "2024-01-01") -> ManifestEntry:
    file = DataFileMeta(
        name, 100, 1, EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, SimpleStats.EMPTY, SimpleStats.EMPTY, 0, 0, 0, 0
    )
    return ManifestEntry(FileKind.ADD, serialize_row([dt], PARTITION_TYPES), 0, -1, file)


def live(ctx: ManifestContext, metas: list[ManifestFileMeta]) -> set[FileIdentifier]:
    merged = merge_entries(read_all_entries(ctx, metas))
    assert all(e.kind is FileKind.ADD for e in merged), "a full table state must not keep DELETEs"
    return {e.identifier() for e in merged}


def big_manifest(storage: StorageBackend, table_path: str, entries: list[ManifestEntry]) -> ManifestFileMeta:
    (meta,) = write_manifests(context(storage, table_path), entries)
    return meta


def manifest_names(storage: StorageBackend, ctx: ManifestContext) -> set[str]:
    return {info.name for info in storage.list_dir(ctx.manifest_dir)}


# --- minor compaction ---------------------------------------------------------------------------------------


def test_few_small_manifests_stay_untouched(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path)
    metas = [m for i in range(10) for m in write_manifests(ctx, [add(f"f{i}")])]
    before = manifest_names(storage, ctx)
    assert merge_manifests(ctx, metas) == metas
    assert manifest_names(storage, ctx) == before  # nothing written


def test_many_small_manifests_are_merged_into_one(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path)
    metas = [m for i in range(30) for m in write_manifests(ctx, [add(f"f{i}")])]
    merged = merge_manifests(ctx, metas)
    assert len(merged) == 1
    assert merged[0].num_added_files == 30
    assert live(ctx, merged) == live(ctx, metas)


def test_minor_merge_cancels_deletes_and_keeps_unmatched_ones_in_order(
    storage: StorageBackend, table_path: str
) -> None:
    ctx = context(storage, table_path, target_file_size=1, merge_min_count=100)
    # Every manifest reaches the (tiny) target on its own: runs of one are kept as they are.
    first = write_manifests(ctx, [add("a"), add("b")])
    second = write_manifests(ctx, [add("a").as_delete(), add("c")])
    assert merge_manifests(ctx, first + second) == first + second

    ctx = context(storage, table_path, merge_min_count=2)
    first = write_manifests(ctx, [add("x"), add("y")])
    second = write_manifests(ctx, [add("x").as_delete(), add("z")])
    third = write_manifests(ctx, [add("y").as_delete()])
    # Merge the last two only: y's DELETE survives (its ADD is in `first`), after it.
    tail = merge_manifests(ctx, second + third)
    assert len(tail) == 1
    entries = read_all_entries(ctx, tail)
    assert [(e.kind, e.file.file_name) for e in entries] == [
        (FileKind.DELETE, "x"),
        (FileKind.ADD, "z"),
        (FileKind.DELETE, "y"),
    ]
    assert tail[0].num_deleted_files == 2
    assert live(ctx, first + tail) == {add("z").identifier()}


def test_runs_that_reach_the_target_are_merged(storage: StorageBackend, table_path: str) -> None:
    metas = [m for i in range(8) for m in write_manifests(context(storage, table_path), [add(f"f{i}")])]
    assert len({m.file_size for m in metas}) == 1
    # Runs of three manifests reach the target; the trailing two stay (fewer than merge-min-count).
    ctx = context(storage, table_path, target_file_size=3 * metas[0].file_size, merge_min_count=5)
    merged = merge_manifests(ctx, metas)
    assert [m.num_added_files for m in merged] == [3, 3, 1, 1]
    assert merged[2:] == metas[6:]
    assert live(ctx, merged) == live(ctx, metas)


def test_fully_cancelled_run_disappears(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path, merge_min_count=2)
    metas = write_manifests(ctx, [add("a")]) + write_manifests(ctx, [add("a").as_delete()])
    assert merge_manifests(ctx, metas) == []


# --- full compaction ----------------------------------------------------------------------------------------


def test_full_compaction_drops_deleted_files_and_keeps_untouched_base(
    storage: StorageBackend, table_path: str
) -> None:
    # Three big base manifests, one per partition, then a delta deleting a file of the second partition.
    base = [
        big_manifest(storage, table_path, [add(f"{dt}-{i}", dt) for i in range(50)])
        for dt in ("d1", "d2", "d3")
    ]
    ctx = context(
        storage,
        table_path,
        target_file_size=min(m.file_size for m in base),
        full_compaction_threshold=1,
        merge_min_count=100,
    )
    assert all(m.file_size >= ctx.target_file_size for m in base)
    delta = write_manifests(ctx, [add("d2-7", "d2").as_delete(), add("new", "d4")])
    result = merge_manifests(ctx, base + delta)
    # d1's manifest cannot hold the deleted file (partition stats): kept as is. From d2 on, all is rewritten.
    assert result[0] == base[0]
    assert all(m not in result for m in base[1:] + delta)
    expected = live(ctx, base + delta)
    assert live(ctx, result) == expected
    assert add("d2-7", "d2").identifier() not in expected
    assert all(m.num_deleted_files == 0 for m in result)


def test_full_compaction_reads_base_to_find_the_first_touched_manifest(
    storage: StorageBackend, table_path: str
) -> None:
    # All base manifests cover the same partition, so only reading them tells where the deleted file is.
    base = [big_manifest(storage, table_path, [add(f"m{j}-{i}") for i in range(50)]) for j in range(3)]
    ctx = context(
        storage, table_path, target_file_size=min(m.file_size for m in base), full_compaction_threshold=1
    )
    delta = write_manifests(ctx, [add("m1-3").as_delete()])
    result = merge_manifests(ctx, base + delta)
    assert result[0] == base[0]
    assert base[1] not in result and base[2] not in result
    assert live(ctx, result) == live(ctx, base + delta)


def test_full_compaction_without_deletes_keeps_the_base(storage: StorageBackend, table_path: str) -> None:
    base = [big_manifest(storage, table_path, [add(f"m{j}-{i}") for i in range(50)]) for j in range(2)]
    ctx = context(
        storage, table_path, target_file_size=min(m.file_size for m in base), full_compaction_threshold=1
    )
    delta = write_manifests(ctx, [add("x")]) + write_manifests(ctx, [add("y")])
    result = merge_manifests(ctx, base + delta)
    assert result[:2] == base
    assert len(result) == 3
    assert live(ctx, result) == live(ctx, base + delta)


def test_failed_merge_deletes_what_it_wrote(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path, merge_min_count=2)
    metas = write_manifests(ctx, [add("a")]) + write_manifests(ctx, [add("b")])
    corrupt = write_manifests(ctx, [add("a")])  # "a" added twice: merging must fail
    before = manifest_names(storage, ctx)
    with pytest.raises(DuplicateFileError):
        merge_manifests(ctx, metas + corrupt)
    assert manifest_names(storage, ctx) == before
    storage.delete(ctx.path(corrupt[0].file_name))
    with pytest.raises(CorruptMetadataError, match="missing"):
        merge_manifests(ctx, metas + corrupt)


# --- many commits -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1])
def test_base_list_stays_bounded_over_hundreds_of_commits(
    storage: StorageBackend, table_path: str, seed: int
) -> None:
    rng = random.Random(seed)
    ctx = context(
        storage, table_path, target_file_size=4096, merge_min_count=8, full_compaction_threshold=16384
    )
    model: dict[FileIdentifier, ManifestEntry] = {}
    base: list[ManifestFileMeta] = []
    delta: list[ManifestFileMeta] = []
    longest = 0
    for commit in range(300):
        # Committer step: the new base is the previous snapshot's base + delta, merged.
        base = merge_manifests(ctx, base + delta)
        longest = max(longest, len(base))
        changes = [add(f"c{commit}-{i}", f"d{rng.randrange(5)}") for i in range(rng.randrange(1, 4))]
        if model and rng.random() < 0.3:  # a compaction or overwrite deletes some live files
            for victim in rng.sample(sorted(model, key=lambda k: k.file_name), min(len(model), 3)):
                changes.append(model[victim].as_delete())
        for entry in changes:
            if entry.kind is FileKind.ADD:
                model[entry.identifier()] = entry
            else:
                del model[entry.identifier()]
        delta = write_manifests(ctx, changes)
        if commit % 25 == 0:
            assert live(ctx, base + delta) == set(model)
    assert longest <= 12, longest
    final = merge_manifests(ctx, base + delta)
    assert live(ctx, final) == set(model)
