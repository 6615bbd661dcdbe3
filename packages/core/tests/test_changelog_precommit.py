"""``precommit-compact`` on primary-key tables: the small changelog files of all the writers of one commit are
concatenated per partition into compacted changelog files (Paimon's ``cc-parquet`` layout), and every reader
of changes reads them.

Each history runs on twin tables that differ only in ``precommit-compact``; their streams of changes must be
the same per key, in order. Several writers share each commit: every partition's buckets are spread over
them, so one compacted file holds changelog of several writers and buckets.
"""

from __future__ import annotations

import dataclasses
import random
import re
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.bucket import bucket_of_row
from paimon_core.compact import ChangelogCompactSizes, precommit_compact
from paimon_core.errors import CommitConflictError
from paimon_core.maintenance import expire_snapshots, remove_orphan_files
from paimon_core.manifest import DataFileMeta, read_manifest_file, read_manifest_list
from paimon_core.storage import join_path
from paimon_core.table import (
    AuditLogTable,
    CommitMessage,
    Table,
    TableCommit,
    changelog_slice,
)
from paimon_core.table._compacted_changelog import read_changelog_slice

SCHEMA = pa.schema(
    [
        pa.field("p", pa.string(), nullable=False),
        pa.field("k", pa.int32(), nullable=False),
        pa.field("v", pa.int64()),
    ]
)
PARTITIONS = ("a", "b", "c")
BUCKETS = 4
WRITERS = 3
SMALL = {"target-file-size": "8 kb"}  # a few changelog files fill a group
PRODUCERS = ("input", "lookup", "full-compaction")
KINDS = ("changelog_files", "compact_changelog_files")
# Paimon's names: the physical file, and a slice of it in any bucket of the partition
PHYSICAL = re.compile(r"compacted-changelog-[0-9a-f-]{36}\$(\d+)-(\d+)\.cc-parquet")
SLICE = re.compile(r"compacted-changelog-[0-9a-f-]{36}\$(\d+)-(\d+)-(\d+)-(\d+)\.cc-parquet")

Op = tuple[str, str, int, int]  # ("put" | "del", partition, key, value)


def make(catalog: Catalog, name: str, producer: str, merge: bool, **options: str) -> Table:
    settings = {"bucket": str(BUCKETS), "changelog-producer": producer, **SMALL, **options}
    if producer == "full-compaction":
        settings.setdefault("full-compaction.delta-commits", "1")
    if merge:
        settings.setdefault("precommit-compact", "true")
    return catalog.create_table(
        f"db.{name}", SCHEMA, partition_keys=["p"], primary_keys=["p", "k"], options=settings
    )


def history(seed: int, commits: int = 4, ops: int = 40) -> list[list[Op]]:
    rng = random.Random(seed)
    return [
        [
            (
                "del" if rng.random() < 0.2 else "put",
                rng.choice(PARTITIONS),
                rng.randrange(16),
                rng.randrange(1000),
            )
            for _ in range(ops)
        ]
        for _ in range(commits)
    ]


def owner(table: Table, partition: str, key: int) -> int:
    """The writer of a (partition, bucket): each partition's buckets spread over all writers."""
    bucket = bucket_of_row([key], [table.schema.fields[1].type], BUCKETS)
    return (PARTITIONS.index(partition) + bucket) % WRITERS


def write(table: Table, ops: Sequence[Op]) -> list[CommitMessage]:
    """The messages of several writers for one commit, each op written on its own (arrival order kept)."""
    writers = [table.new_write() for _ in range(WRITERS)]
    try:
        for kind, partition, key, value in ops:
            row = pa.table({"p": [partition], "k": [key], "v": [value]}, schema=SCHEMA)
            writer: Any = writers[owner(table, partition, key)]
            if kind == "put":
                writer.write(row)
            else:
                writer.delete(row.select(["p", "k"]))
        per_writer = [w.prepare_commit() for w in writers]
    finally:
        for w in writers:
            w.close()
    buckets = [{(m.partition, m.bucket) for m in messages} for messages in per_writer]
    assert sum(map(len, buckets)) == len(set().union(*buckets)), "a bucket written by two writers"
    return [m for messages in per_writer for m in messages]


def commit(table: Table, ops: Sequence[Op]) -> list[CommitMessage]:
    messages = precommit_compact(table, write(table, ops))
    table.new_commit().commit(messages)
    return messages


def changes(table: Table) -> dict[tuple[str, int], list[tuple[str, int | None]]]:
    """Every change a stream reads from the first snapshot on, per key, in order."""
    reading = table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    per_key: dict[tuple[str, int], list[tuple[str, int | None]]] = {}
    for batch in reading.stream(follow=False):
        for row in batch.to_pylist():
            per_key.setdefault((row["p"], row["k"]), []).append((row["rowkind"], row["v"]))
    return per_key


def changelog_entries(table: Table) -> list[Any]:
    """The changelog manifest entries of every snapshot."""
    found = []
    for snapshot in table.snapshot_manager.snapshots():
        if snapshot.changelog_manifest_list:
            path = table.manifest_path(snapshot.changelog_manifest_list)
            for meta in read_manifest_list(table.storage, path):
                found += read_manifest_file(table.storage, table.manifest_path(meta.file_name))
    return found


def changelog_objects(table: Table) -> dict[str, int]:
    """Changelog objects in storage (plain and compacted) and their sizes."""
    root = Path(table.path)
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and p.name.startswith(("changelog-", "compacted-changelog-"))
    }


def path_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def entry_path(table: Table, entry: Any) -> str:
    return join_path(table.bucket_dir(entry.partition, entry.bucket), entry.file.file_name)


# --- fewer files, the same changes -----------------------------------------------------------------------------


@pytest.mark.parametrize("producer", PRODUCERS)
@pytest.mark.parametrize("seed", [1, 2])
def test_merged_changelog_gives_the_same_changes_from_fewer_files(
    catalog: Catalog, producer: str, seed: int
) -> None:
    merged = make(catalog, "merged", producer, merge=True)
    plain = make(catalog, "plain", producer, merge=False)
    for ops in history(seed):
        commit(merged, ops)
        commit(plain, ops)

    assert changes(merged) == changes(plain)
    assert len(changes(plain)) > 20
    snapshots = [(s.commit_kind, s.changelog_record_count) for s in merged.snapshot_manager.snapshots()]
    assert snapshots == [
        (s.commit_kind, s.changelog_record_count) for s in plain.snapshot_manager.snapshots()
    ]

    entries = changelog_entries(merged)
    assert len(entries) == len(changelog_entries(plain))  # every file is still an entry of its bucket
    objects = changelog_objects(merged)
    assert not any(name.startswith("changelog-") for name in map(path_name, objects)), "all were small"
    assert len(objects) < len(changelog_objects(plain)) / 2
    sizes = ChangelogCompactSizes.of(merged)
    assert sum(objects.values()) == sum(changelog_objects(plain).values())  # bytes copied, not re-encoded
    assert max(objects.values()) < sizes.target_file_size + sizes.candidate_size
    assert all(PHYSICAL.fullmatch(e.file.file_name) or SLICE.fullmatch(e.file.file_name) for e in entries)
    writers_per_file: dict[str, set[int]] = {}  # the writers whose changelog each physical file holds
    for e in entries:
        found = changelog_slice(entry_path(merged, e))
        assert found is not None
        partition = merged.partition_values(e.partition)["p"]
        writers_per_file.setdefault(found.path, set()).add((PARTITIONS.index(partition) + e.bucket) % WRITERS)
    assert max(map(len, writers_per_file.values())) == WRITERS


def test_slices_hold_the_original_bytes_and_follow_paimons_names(catalog: Catalog) -> None:
    table = make(catalog, "t", "input", merge=True)
    messages = write(table, history(7, commits=1)[0])
    before = {
        (i, kind, f.file_name): table.storage.read_bytes(
            join_path(table.bucket_dir(m.partition, m.bucket), f.file_name)
        )
        for i, m in enumerate(messages)
        for kind in KINDS
        for f in getattr(m, kind)
    }
    merged = precommit_compact(table, messages)
    assert [(m.partition, m.bucket, m.new_files) for m in merged] == [
        (m.partition, m.bucket, m.new_files) for m in messages
    ]
    physical: dict[str, tuple[bytes, int]] = {}  # physical file name -> its partition and bucket
    for i, (old, new) in enumerate(zip(messages, merged, strict=True)):
        assert len(old.changelog_files) == len(new.changelog_files)
        for original, renamed in zip(old.changelog_files, new.changelog_files, strict=True):
            assert renamed == dataclasses.replace(original, file_name=renamed.file_name)  # only renamed
            path = join_path(table.bucket_dir(new.partition, new.bucket), renamed.file_name)
            assert (
                read_changelog_slice(table.storage, path)
                == before[(i, "changelog_files", original.file_name)]
            )
            found = PHYSICAL.fullmatch(renamed.file_name)
            if found:
                assert int(found.group(1)) == new.bucket
                assert int(found.group(2)) == original.file_size
                physical[renamed.file_name] = (new.partition, new.bucket)
    for m in merged:
        for f in m.changelog_files:
            found = SLICE.fullmatch(f.file_name)
            if found:  # it points into a physical file of its partition, named after that file's bucket
                bucket, first, offset, length = map(int, found.groups())
                name = f.file_name.split("$")[0] + f"${bucket}-{first}.cc-parquet"
                assert physical[name] == (m.partition, bucket)
                assert offset >= first and length == f.file_size
                real = changelog_slice(join_path(table.bucket_dir(m.partition, m.bucket), f.file_name))
                assert real is not None and real.path.endswith(f"/bucket-{bucket}/{name}")
    assert not list(Path(table.path).rglob("changelog-*"))  # every original was merged and deleted


def test_a_java_style_layout_is_read(catalog: Catalog) -> None:
    """Compacted files laid out as Paimon's Flink sink may leave them (slices in the order their reads
    finished, the physical file in another bucket than the first message's), built here from the protocol."""
    built = make(catalog, "built", "input", merge=False)
    plain = make(catalog, "plain", "input", merge=False)
    for ops in history(3, commits=3):
        commit(plain, ops)
        messages = write(built, ops)
        built.new_commit().commit(_java_layout(built, messages))
    assert changes(built) == changes(plain)
    assert all("compacted-changelog-" in e.file.file_name for e in changelog_entries(built))


def _java_layout(table: Table, messages: list[CommitMessage]) -> list[CommitMessage]:
    """Per partition, every changelog file concatenated in reverse order, named by the protocol."""
    renamed: dict[str, DataFileMeta] = {}
    for partition in {m.partition for m in messages}:
        members = [(m, f) for m in messages if m.partition == partition for f in m.changelog_files][::-1]
        contents = [
            table.storage.read_bytes(join_path(table.bucket_dir(partition, m.bucket), f.file_name))
            for m, f in members
        ]
        first_bucket, first_length = members[0][0].bucket, len(contents[0])
        stem = f"compacted-changelog-{uuid.uuid4()}"
        base = f"{stem}${first_bucket}-{first_length}"
        table.storage.write_bytes(
            join_path(table.bucket_dir(partition, first_bucket), f"{base}.cc-parquet"), b"".join(contents)
        )
        offset = 0
        for (m, f), data in zip(members, contents, strict=True):
            name = f"{base}.cc-parquet" if offset == 0 else f"{base}-{offset}-{len(data)}.cc-parquet"
            renamed[f.file_name] = f.copy(file_name=name)
            table.storage.delete(join_path(table.bucket_dir(partition, m.bucket), f.file_name))
            offset += len(data)
    return [
        dataclasses.replace(m, changelog_files=tuple(renamed[f.file_name] for f in m.changelog_files))
        for m in messages
    ]


def test_incremental_audit_log_reads_compacted_changelog(catalog: Catalog) -> None:
    merged = make(catalog, "merged", "input", merge=True)
    plain = make(catalog, "plain", "input", merge=False)
    for ops in history(5, commits=3):
        commit(merged, ops)
        commit(plain, ops)

    def audit(table: Table) -> list[dict[str, Any]]:
        rows = AuditLogTable(table.copy({"incremental-between": "1,3"})).to_arrow().to_pylist()
        return sorted(rows, key=lambda r: (r["p"], r["k"], r["rowkind"], r["v"] or 0))

    assert audit(merged) == audit(plain) and audit(plain)


def test_table_append_merges_the_changelog_of_its_buckets(catalog: Catalog) -> None:
    table = make(catalog, "t", "input", merge=True)
    data = pa.table(
        {"p": ["a"] * 40 + ["b"] * 40, "k": list(range(40)) * 2, "v": list(range(80))}, schema=SCHEMA
    )
    table.append(data)
    entries = changelog_entries(table)
    assert len(entries) == 2 * BUCKETS
    assert len(changelog_objects(table)) == 2  # one per partition
    rows = [r for b in table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}).stream(follow=False)
            for r in b.to_pylist()]  # fmt: skip
    assert sorted((r["p"], r["k"], r["v"]) for r in rows) == sorted(
        zip(
            data.column("p").to_pylist(),
            data.column("k").to_pylist(),
            data.column("v").to_pylist(),
            strict=True,
        )
    )


# --- which files -------------------------------------------------------------------------------------------------


def test_precommit_compact_is_off_by_default_and_has_paimon_1_0s_key(catalog: Catalog) -> None:
    ops = history(11, commits=1)[0]
    off = make(catalog, "off", "input", merge=False)
    messages = write(off, ops)
    assert precommit_compact(off, messages) == messages

    old_key = make(catalog, "old", "input", merge=False, **{"changelog.precommit-compact": "true"})
    merged = precommit_compact(old_key, write(old_key, ops))
    assert any(PHYSICAL.fullmatch(f.file_name) for m in merged for f in m.changelog_files)


def test_large_files_and_tables_without_changelog_are_left_alone(catalog: Catalog) -> None:
    ops = history(12, commits=1)[0]
    # a small target makes every changelog file a large one (>= target x 0.7)
    large = make(catalog, "large", "input", merge=True, **{"target-file-size": "1 kb"})
    messages = write(large, ops)
    assert precommit_compact(large, messages) == messages
    # so does a small buffer (changelog.precommit-compact.buffer-size caps the candidates)
    buffered = make(
        catalog, "buffered", "input", merge=True, **{"changelog.precommit-compact.buffer-size": "1 kb"}
    )
    messages = write(buffered, ops)
    assert precommit_compact(buffered, messages) == messages
    none = make(catalog, "none", "none", merge=True)
    messages = write(none, ops)
    assert precommit_compact(none, messages) == messages


def test_groups_close_at_the_target_size(catalog: Catalog) -> None:
    table = make(catalog, "t", "input", merge=True, **{"target-file-size": "4 kb"})
    messages = write(table, history(13, commits=1, ops=80)[0])
    sizes = ChangelogCompactSizes.of(table)
    merged = precommit_compact(table, messages)
    objects = changelog_objects(table)
    per_partition: dict[str, int] = {}
    for name in objects:
        per_partition[name.split("/")[-3]] = per_partition.get(name.split("/")[-3], 0) + 1
    assert max(per_partition.values()) > 1  # 4 buckets of ~1.5 kb exceed one 4 kb group
    for name, size in objects.items():
        if PHYSICAL.fullmatch(path_name(name)):
            assert size < sizes.target_file_size + sizes.candidate_size
    assert precommit_compact(table, merged) == merged  # slices are never merged again


# --- failures, aborts, maintenance ---------------------------------------------------------------------------------


def test_a_failed_merge_leaves_the_given_messages_valid(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make(catalog, "t", "input", merge=True)
    plain = make(catalog, "plain", "input", merge=False)
    ops = history(21, commits=1)[0]
    messages = write(table, ops)
    files = sum(len(m.changelog_files) for m in messages)
    storage = table.storage
    reads = 0
    real_read = storage.read_bytes

    def failing_read(path: str) -> bytes:
        nonlocal reads
        reads += 1
        if reads == files:  # the last file: earlier groups are complete by then
            raise OSError("injected read failure")
        return real_read(path)

    monkeypatch.setattr(storage, "read_bytes", failing_read)
    with pytest.raises(OSError, match="injected"):
        precommit_compact(table, messages)
    monkeypatch.undo()
    assert not list(Path(table.path).rglob("compacted-changelog-*"))
    assert len(changelog_objects(table)) == files
    table.new_commit().commit(messages)
    commit(plain, ops)
    assert changes(table) == changes(plain)


def test_a_commit_that_never_lands_leaves_no_file(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = make(catalog, "t", "input", merge=True)

    def conflict(
        self: TableCommit, messages: Sequence[CommitMessage], *args: Any, **kwargs: Any
    ) -> list[int]:
        assert any(SLICE.fullmatch(f.file_name) for m in messages for f in m.changelog_files)
        raise CommitConflictError("injected conflict")

    monkeypatch.setattr(TableCommit, "commit", conflict)
    data = pa.table({"p": ["a"] * 40, "k": list(range(40)), "v": list(range(40))}, schema=SCHEMA)
    with pytest.raises(CommitConflictError):
        table.append(data)
    assert [p for p in Path(table.path).rglob("*") if p.is_file() and "bucket-" in str(p)] == []


def test_abort_deletes_the_compacted_files_once(catalog: Catalog) -> None:
    table = make(catalog, "t", "input", merge=True)
    merged = precommit_compact(table, write(table, history(22, commits=1)[0]))
    assert changelog_objects(table)
    table.new_commit().abort(merged)
    assert [p for p in Path(table.path).rglob("*") if p.is_file() and "bucket-" in str(p)] == []


def test_expiration_deletes_compacted_files_and_orphan_removal_keeps_live_ones(catalog: Catalog) -> None:
    table = make(catalog, "t", "lookup", merge=True)
    plain = make(catalog, "plain", "lookup", merge=False)
    for ops in history(31, commits=4):
        commit(table, ops)
        commit(plain, ops)
    expected = changes(plain)
    now = int(time.time() * 1000) + 60_000
    for each in (table, plain):  # changelog files, compacted or not, are in use while their snapshot lives
        result = remove_orphan_files(each, older_than=now - 1, now_millis=now)
        assert not [p for p in result.deleted if "changelog" in p]
    assert changes(table) == changes(plain) == expected

    latest = table.snapshot_manager.latest()
    kept = [e for e in changelog_entries(table) if _in_snapshot(table, e, latest)]
    expire_snapshots(table, retain_max=1, retain_min=1)
    live_objects = {str(Path(changelog_slice(entry_path(table, e)).path).relative_to(table.path))  # type: ignore[union-attr]
                    for e in kept}  # fmt: skip
    assert set(changelog_objects(table)) == live_objects


def _in_snapshot(table: Table, entry: Any, snapshot: Any) -> bool:
    if not snapshot.changelog_manifest_list:
        return False
    names = set()
    for meta in read_manifest_list(table.storage, table.manifest_path(snapshot.changelog_manifest_list)):
        names |= {
            e.file.file_name for e in read_manifest_file(table.storage, table.manifest_path(meta.file_name))
        }
    return entry.file.file_name in names
