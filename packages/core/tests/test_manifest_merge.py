"""The manifest merge that builds base manifest lists (docs/manifests.md; layout and rules in ``manifest/_merge.py``)."""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Iterator
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.binary_row import deserialize_row, serialize_row
from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest import (
    EMPTY_ROW_BYTES,
    MANIFEST_ENTRY_SCHEMA,
    DataFileMeta,
    DuplicateFileError,
    FileIdentifier,
    FileKind,
    ManifestContext,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    _avro,
    _merge,
    _raw,
    merge_entries,
    merge_manifests,
    read_all_entries,
    write_manifests,
)
from paimon_core.manifest._avro import entry_to_record
from paimon_core.manifest._files import MetaBuilder
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


def add(name: str, dt: str = "2024-01-01", bucket: int = 0, level: int = 0) -> ManifestEntry:
    file = DataFileMeta(
        name, 100, 1, EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, SimpleStats.EMPTY, SimpleStats.EMPTY, 0, 0, 0, level
    )
    return ManifestEntry(FileKind.ADD, serialize_row([dt], PARTITION_TYPES), bucket, -1, file)


def day(i: int) -> str:
    return f"d{i:03d}"


def live(ctx: ManifestContext, metas: list[ManifestFileMeta]) -> set[FileIdentifier]:
    merged = merge_entries(read_all_entries(ctx, metas))
    assert all(e.kind is FileKind.ADD for e in merged), "a full table state must not keep DELETEs"
    return {e.identifier() for e in merged}


def one_manifest(ctx: ManifestContext, entries: list[ManifestEntry]) -> ManifestFileMeta:
    (meta,) = write_manifests(ctx, entries)
    return meta


def manifest_names(storage: StorageBackend, ctx: ManifestContext) -> set[str]:
    return {info.name for info in storage.list_dir(ctx.manifest_dir)}


def partitions_of(ctx: ManifestContext, meta: ManifestFileMeta) -> set[str]:
    return {deserialize_row(e.partition, list(PARTITION_TYPES))[0] for e in read_all_entries(ctx, [meta])}


def ranges_over(ctx: ManifestContext, days: int, per_day: int) -> list[ManifestFileMeta]:
    """Range manifests as merges leave them: one per day here, each between half and twice the range size."""
    ranges = [one_manifest(ctx, [add(f"r-{d}-{i}-{uuid.uuid4().hex}", day(d)) for i in range(per_day)])
              for d in range(days)]  # fmt: skip
    assert all(ctx.range_size // 2 <= _merge._content(m) < 2 * ctx.range_size for m in ranges)
    return ranges


# --- minor merges -------------------------------------------------------------------------------------------


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


def test_deletes_cancel_and_unmatched_ones_follow_their_adds(
    storage: StorageBackend, table_path: str
) -> None:
    filler = [add(f"f{i}-{uuid.uuid4().hex}") for i in range(200)]
    large = one_manifest(context(storage, table_path), [add("x"), add("y"), add("w"), *filler])
    ctx = context(storage, table_path, target_file_size=large.file_size, merge_min_count=2)
    second = write_manifests(ctx, [add("x").as_delete(), add("z")])
    third = write_manifests(ctx, [add("y").as_delete(), add("z").as_delete(), add("v")])
    merged = merge_manifests(ctx, [large, *second, *third])
    # z cancelled; the DELETEs of x and y (added in the large manifest, which stays) wait at the end.
    assert merged[0] == large
    assert [(e.kind, e.file.file_name) for e in read_all_entries(ctx, merged[1:])] == [
        (FileKind.ADD, "v"),
        (FileKind.DELETE, "x"),
        (FileKind.DELETE, "y"),
    ]
    assert merged[-1].num_deleted_files == 2 and merged[-1].num_added_files == 0
    expected = {add("w").identifier(), add("v").identifier(), *(e.identifier() for e in filler)}
    assert live(ctx, merged) == live(ctx, [large, *second, *third]) == expected


def test_fully_cancelled_entries_disappear(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path, merge_min_count=2)
    metas = write_manifests(ctx, [add("a")]) + write_manifests(ctx, [add("a").as_delete()])
    assert merge_manifests(ctx, metas) == []


def test_large_manifests_are_untouched_by_minor_merges(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path)
    large = one_manifest(ctx, [add(f"big-{i}", day(i % 7)) for i in range(400)])
    ctx = context(storage, table_path, target_file_size=large.file_size, merge_min_count=5)
    fresh = [m for i in range(6) for m in write_manifests(ctx, [add(f"new-{i}", day(i))])]
    large_bytes = storage.read_bytes(ctx.path(large.file_name))
    before = manifest_names(storage, ctx)

    merged = merge_manifests(ctx, [large, *fresh])
    # Only the small manifests were rewritten, into one; the large one is the same file, unread and unchanged.
    assert merged[0] == large
    assert {m.file_name for m in [large, *fresh]} - {m.file_name for m in merged} == {
        m.file_name for m in fresh
    }
    written = manifest_names(storage, ctx) - before
    new = [m for m in merged if m.file_name in written]
    assert len(new) == len(written) and {e.file.file_name for e in read_all_entries(ctx, new)} == {
        f"new-{i}" for i in range(6)
    }
    assert storage.read_bytes(ctx.path(large.file_name)) == large_bytes
    assert live(ctx, merged) == live(ctx, [large, *fresh])


def test_ranges_that_receive_nothing_keep_their_files(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path, target_file_size=64 << 10, merge_min_count=3)  # ranges of 1 KiB
    ranges = ranges_over(ctx, days=20, per_day=40)
    assert len(ranges) > 4
    # Enough fresh entries of one day to be spread into the ranges (more than a range's worth).
    fresh = [
        one_manifest(ctx, [add(f"n-{j}-{i}-{uuid.uuid4().hex}", day(5)) for i in range(40)]) for j in range(3)
    ]
    merged = merge_manifests(ctx, ranges + fresh)
    holding = [m for m in ranges if day(5) in partitions_of(ctx, m)]
    # Ranges below half the range size are merged too (as Java merges small manifests); the others are kept
    # unless they hold day 5.
    kept = [m for m in ranges if m not in holding and _merge._content(m) >= ctx.range_size // 2]
    assert holding and kept
    assert all(m not in merged for m in holding) and all(m in merged for m in kept)
    assert live(ctx, merged) == live(ctx, ranges + fresh)


def test_distributed_deletes_drop_files_from_their_range(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path, target_file_size=64 << 10, merge_min_count=1)
    ranges = ranges_over(ctx, days=20, per_day=40)
    doomed = read_all_entries(ctx, [ranges[7]])[:8]
    fresh = [
        one_manifest(
            ctx,
            [e.as_delete() for e in doomed] + [add(f"n-{i}-{uuid.uuid4().hex}", day(7)) for i in range(60)],
        )
    ]
    merged = merge_manifests(ctx, ranges + fresh)
    assert all(m.num_deleted_files == 0 for m in merged)  # the DELETEs found their files in the range
    assert all(m in merged for m in ranges if _merge._content(m) >= ctx.range_size // 2 and day(7) not in
               partitions_of(ctx, m))  # fmt: skip
    assert live(ctx, merged) == live(ctx, ranges + fresh)


def test_merged_manifests_have_narrow_partition_ranges(storage: StorageBackend, table_path: str) -> None:
    rng = random.Random(3)
    ctx = context(storage, table_path, target_file_size=64 << 10, merge_min_count=10)
    base: list[ManifestFileMeta] = []
    days = 60
    for commit in range(300):  # commits of a few files each, into random partitions
        delta = write_manifests(ctx, [add(f"c{commit}-{i}-{rng.getrandbits(64):x}", day(rng.randrange(days)))
                                      for i in range(5)])  # fmt: skip
        base = merge_manifests(ctx, base + delta)
    total = sum(m.num_added_files for m in base)
    spans = []
    for meta in base:
        low, high = (deserialize_row(v, list(PARTITION_TYPES))[0] for v in (
            meta.partition_stats.min_values, meta.partition_stats.max_values))  # fmt: skip
        spans.append((int(low[1:]), int(high[1:]), meta.num_added_files))
    # Only the manifest that gathers recent commits (below the range size) spans many days; every other
    # manifest covers a few days of the 60.
    wide = [s for s in spans if s[1] - s[0] >= days // 6]
    assert len(wide) <= 1 and sum(s[2] for s in wide) < total // 10, wide
    assert len(spans) - len(wide) >= 4
    narrow = sorted(s for s in spans if s not in wide)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(narrow))  # one sorted run, no overlaps


def test_moved_entries_are_neither_decoded_nor_encoded(
    storage: StorageBackend, table_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = context(storage, table_path, target_file_size=64 << 10, merge_min_count=3)
    ranges = ranges_over(ctx, days=20, per_day=40)
    fresh = [
        one_manifest(ctx, [add(f"n-{j}-{i}-{uuid.uuid4().hex}", day(i % 20)) for i in range(40)])
        for j in range(3)
    ]
    decoded, encoded = [0], [0]
    real_decode, real_encode = _avro._record_to_entry, entry_to_record

    def decode(record: dict[str, Any]) -> ManifestEntry:
        decoded[0] += 1
        return real_decode(record)

    def encode(entry: ManifestEntry) -> dict[str, Any]:
        encoded[0] += 1
        return real_encode(entry)

    monkeypatch.setattr(_avro, "_record_to_entry", decode)
    monkeypatch.setattr(_raw, "entry_to_record", encode)
    merged = merge_manifests(ctx, ranges + fresh)
    assert sum(m not in merged for m in ranges) > 1  # ranges were rewritten, with blocks and records moved
    assert (decoded[0], encoded[0]) == (0, 0)
    monkeypatch.undo()
    assert live(ctx, merged) == live(ctx, ranges + fresh)


def test_duplicate_adds_among_merged_entries_fail(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path, merge_min_count=2)
    metas = write_manifests(ctx, [add("a"), add("b"), add("c")])
    corrupt = write_manifests(ctx, [add("x"), add("x").as_delete()]) + write_manifests(
        ctx, [add("a2"), add("a2")]
    )
    with pytest.raises(DuplicateFileError):
        merge_manifests(ctx, metas + corrupt)


def test_failed_merge_deletes_what_it_wrote(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path, target_file_size=64 << 10, merge_min_count=3)
    ranges = ranges_over(ctx, days=20, per_day=40)
    fresh = [
        one_manifest(ctx, [add(f"n-{j}-{i}-{uuid.uuid4().hex}", day(i % 20)) for i in range(40)])
        for j in range(3)
    ]
    before = manifest_names(storage, ctx)
    writes = [0]
    real_write = storage.write_bytes

    def failing_write(path: str, data: bytes, overwrite: bool = False) -> None:
        writes[0] += 1
        if writes[0] == 3:
            raise OSError("disk full")
        real_write(path, data, overwrite=overwrite)

    storage.write_bytes = failing_write  # type: ignore[method-assign]
    try:
        with pytest.raises(OSError, match="disk full"):
            merge_manifests(ctx, ranges + fresh)
    finally:
        del storage.write_bytes
    assert writes[0] == 3
    assert manifest_names(storage, ctx) == before
    storage.delete(ctx.path(fresh[0].file_name))
    with pytest.raises(CorruptMetadataError, match="missing"):
        merge_manifests(ctx, ranges + fresh)


# --- full compaction ----------------------------------------------------------------------------------------


def test_full_compaction_drops_deleted_files_and_keeps_untouched_manifests(
    storage: StorageBackend, table_path: str
) -> None:
    # Three big manifests, one per partition, then a delta deleting a file of the second partition.
    big = [
        one_manifest(context(storage, table_path), [add(f"{d}-{i}", d) for i in range(50)])
        for d in ("d1", "d2", "d3")
    ]
    ctx = context(storage, table_path, target_file_size=min(m.file_size for m in big), full_compaction_threshold=1,
                  merge_min_count=100)  # fmt: skip
    delta = write_manifests(ctx, [add("d2-7", "d2").as_delete(), add("new", "d4")])
    result = merge_manifests(ctx, big + delta)
    # d1's and d3's manifests cannot hold the deleted file (partition stats): kept. d2's is rewritten.
    assert big[0] in result and big[2] in result and big[1] not in result
    expected = live(ctx, big + delta)
    assert live(ctx, result) == expected
    assert add("d2-7", "d2").identifier() not in expected
    assert all(m.num_deleted_files == 0 for m in result)


def test_full_compaction_reads_manifests_that_may_hold_a_deleted_file(
    storage: StorageBackend, table_path: str
) -> None:
    # All big manifests cover the same partition, so only reading them tells where the deleted file is.
    big = [
        one_manifest(context(storage, table_path), [add(f"m{j}-{i}") for i in range(50)]) for j in range(3)
    ]
    ctx = context(
        storage, table_path, target_file_size=min(m.file_size for m in big), full_compaction_threshold=1
    )
    delta = write_manifests(ctx, [add("m1-3").as_delete()])
    result = merge_manifests(ctx, big + delta)
    assert result == [big[0], result[1], big[2]] and result[1] != big[1]
    assert result[1].num_added_files == 49
    assert live(ctx, result) == live(ctx, big + delta)


def test_full_compaction_without_deletes_keeps_the_large_manifests(
    storage: StorageBackend, table_path: str
) -> None:
    big = [
        one_manifest(context(storage, table_path), [add(f"m{j}-{i}") for i in range(50)]) for j in range(2)
    ]
    ctx = context(
        storage, table_path, target_file_size=min(m.file_size for m in big), full_compaction_threshold=1
    )
    delta = write_manifests(ctx, [add("x")]) + write_manifests(ctx, [add("y")])
    result = merge_manifests(ctx, big + delta)
    assert result[:2] == big
    assert len(result) == 3
    assert live(ctx, result) == live(ctx, big + delta)


# --- layouts: unpartitioned tables, other writers ------------------------------------------------------------


def test_unpartitioned_manifests_freeze_and_stay_untouched(storage: StorageBackend, table_path: str) -> None:
    ctx = context(storage, table_path, partition_types=(), target_file_size=32 << 10, merge_min_count=4)
    base: list[ManifestFileMeta] = []
    frozen: set[str] = set()
    model: set[FileIdentifier] = set()
    for commit in range(120):
        entries = [
            ManifestEntry(FileKind.ADD, EMPTY_ROW_BYTES, 0, -1, add(f"c{commit}-{i}-{uuid.uuid4().hex}").file)
            for i in range(4)
        ]
        model |= {e.identifier() for e in entries}
        base = merge_manifests(ctx, base + write_manifests(ctx, entries))
        names = {m.file_name for m in base}
        assert frozen <= names  # once frozen, never rewritten
        frozen |= {m.file_name for m in base if _merge._content(m) >= 2 * ctx.range_size}
    assert len(frozen) >= 3
    assert live(ctx, base) == model


def test_manifests_of_another_layout_are_merged(storage: StorageBackend, table_path: str) -> None:
    """A manifest written with another writer schema (Java 0.9 had fewer ``_FILE`` fields) and codec."""
    ctx = context(storage, table_path, merge_min_count=3)
    old_fields = {
        "_VALUE_STATS_COLS",
        "_EXTERNAL_PATH",
        "_FIRST_ROW_ID",
        "_WRITE_COLS",
        "_WRITE_COLS_SEQUENCES",
    }
    schema: dict[str, Any] = {
        **MANIFEST_ENTRY_SCHEMA,
        "fields": [dict(f) for f in MANIFEST_ENTRY_SCHEMA["fields"]],
    }
    file_type = dict(schema["fields"][5]["type"])
    file_type["fields"] = [f for f in file_type["fields"] if f["name"] not in old_fields]
    schema["fields"][5]["type"] = file_type
    old_entries = [add(f"old-{i}", day(i)) for i in range(5)]
    import io

    buffer = io.BytesIO()
    fastavro.writer(
        buffer, fastavro.parse_schema(schema), [entry_to_record(e) for e in old_entries], codec="deflate"
    )
    name = "manifest-old-0"
    storage.write_bytes(ctx.path(name), buffer.getvalue())
    builder = MetaBuilder(PARTITION_TYPES)
    for entry in old_entries:
        builder.add_entry(entry)
    old = builder.build(name, len(buffer.getvalue()))
    fresh = [m for i in range(3) for m in write_manifests(ctx, [add(f"n{i}", day(i))])]
    merged = merge_manifests(ctx, [old, *fresh])
    assert old not in merged
    assert live(ctx, merged) == live(ctx, [old, *fresh])


# --- many commits -------------------------------------------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> tuple[dict[str, int], list[list[tuple[str, int]]]]:
    """Merge settings and commits: per commit ``("add", partition)``, ``("bulk", n)`` (n files at once),
    ``("upgrade", k)`` (the k-th live file again one level up, as a primary-key compaction renames nothing) and
    ``("delete", k)`` steps."""
    settings_ = {
        "target_file_size": draw(st.sampled_from([3 << 10, 4 << 10, 8 << 10, 16 << 10, 64 << 10, 8 << 20])),
        "merge_min_count": draw(st.integers(2, 8)),
        "full_compaction_threshold": draw(st.sampled_from([8 << 10, 64 << 10, 16 << 20])),
        "partitions": draw(st.integers(1, 12)),
    }
    step = st.one_of(
        st.tuples(st.just("add"), st.integers(0, 11)),
        st.tuples(st.just("bulk"), st.integers(20, 120)),
        st.tuples(st.just("delete"), st.integers(0, 1000)),
        st.tuples(st.just("upgrade"), st.integers(0, 1000)),
    )
    commits = draw(st.lists(st.lists(step, min_size=1, max_size=40), min_size=1, max_size=25))
    return settings_, commits


@pytest.mark.slow
@settings(max_examples=60)
@given(histories())
def test_merging_keeps_every_live_entry(history: tuple[dict[str, int], list[list[tuple[str, int]]]]) -> None:
    """Random add/delete histories: the merged base lists hold exactly the live files of the unmerged history,
    with every DELETE after its ADD (``live`` fails otherwise), after every commit."""
    config, commits = history
    path = f"memory://merge-prop-{uuid.uuid4().hex}/t"
    storage = get_backend(path, {})
    partitions = config.pop("partitions")
    ctx = context(storage, path, **config)
    try:
        model: dict[FileIdentifier, ManifestEntry] = {}
        unmerged: list[ManifestFileMeta] = []
        base: list[ManifestFileMeta] = []
        delta: list[ManifestFileMeta] = []
        for n, steps in enumerate(commits):
            base = merge_manifests(ctx, base + delta)
            changes: list[ManifestEntry] = []
            for i, (kind, value) in enumerate(steps):
                current = sorted(model.values(), key=lambda e: e.identifier())
                if kind == "bulk":
                    bulk = [
                        add(f"b{n}-{i}-{j}-{uuid.uuid4().hex[:12]}", day(j % partitions))
                        for j in range(value)
                    ]
                    model.update((e.identifier(), e) for e in bulk)
                    changes += bulk
                    continue
                if kind == "add":
                    entry = add(
                        f"c{n}-{i}-{uuid.uuid4().hex[:12]}", day(value % partitions), bucket=value % 3
                    )
                elif not current:
                    continue
                elif kind == "delete":
                    entry = current[value % len(current)].as_delete()
                else:  # the same file name one level up, in the same commit as its DELETE
                    old = current[value % len(current)]
                    changes.append(old.as_delete())
                    del model[old.identifier()]
                    entry = ManifestEntry(
                        FileKind.ADD, old.partition, old.bucket, -1, old.file.copy(level=old.file.level + 1)
                    )
                if entry.kind is FileKind.ADD:
                    model[entry.identifier()] = entry
                else:
                    del model[entry.identifier()]
                changes.append(entry)
            delta = write_manifests(ctx, changes)
            unmerged += delta
            assert live(ctx, base + delta) == set(model) == live(ctx, unmerged)
        assert live(ctx, merge_manifests(ctx, base + delta)) == set(model)
    finally:
        clear_memory_store(path)


def test_base_list_stays_bounded_over_hundreds_of_commits(storage: StorageBackend, table_path: str) -> None:
    rng = random.Random(1)
    ctx = context(
        storage, table_path, target_file_size=64 << 10, merge_min_count=8, full_compaction_threshold=64 << 10
    )
    model: dict[FileIdentifier, ManifestEntry] = {}
    base: list[ManifestFileMeta] = []
    delta: list[ManifestFileMeta] = []
    lengths = []
    for commit in range(400):
        base = merge_manifests(ctx, base + delta)
        lengths.append(len(base))
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
        if commit % 50 == 0:
            assert live(ctx, base + delta) == set(model)
    assert max(lengths) <= 2 * ctx.merge_min_count, max(lengths)
    assert live(ctx, merge_manifests(ctx, base + delta)) == set(model)
