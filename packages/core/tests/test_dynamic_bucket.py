"""Dynamic-bucket primary-key tables (bucket = -1): Java's assignment, the hash index, its life cycle."""

from __future__ import annotations

import struct
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core import Catalog, CommitConflictError
from paimon_core.bucket import hash_row
from paimon_core.compact import compact_table
from paimon_core.maintenance import expire_snapshots, remove_orphan_files
from paimon_core.manifest import HASH_INDEX
from paimon_core.table import KeyValueTableRead, Table
from paimon_core.table.mergetree._dynamic_bucket import PartitionIndex, read_hash_index
from paimon_core.types import BigIntType

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def _create(catalog: Catalog, **options: str) -> Table:
    return catalog.create_table(
        "db.dyn", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=options
    )


def _rows(table: Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.to_arrow().to_pylist())


def _upsert(table: Table, dt: str, ids: list[int], value: str) -> None:
    table.append(pa.table({"dt": [dt] * len(ids), "id": ids, "v": [value] * len(ids)}, schema=SCHEMA))


def _bucket_keys(table: Table) -> dict[tuple[str, int], set[int]]:
    """The keys in each (partition, bucket), read from the data files."""
    found: dict[tuple[str, int], set[int]] = {}
    for split in table.scan().plan():
        dt = table.partition_values(split.partition)["dt"]
        read = table.new_read()
        assert isinstance(read, KeyValueTableRead)
        ids = read.read_split(split).column("id").to_pylist()
        found.setdefault((dt, split.bucket), set()).update(ids)
    return found


# --- the assignment is Java's PartitionIndex.assign, one key at a time ----------------------------------


def _java_assign(loaded: dict[int, list[int]], target: int, keys: list[int]) -> list[int]:
    """Java's single assigner, key by key: known hash → its bucket; else the first non-full bucket in
    load order; else the lowest bucket id not in use."""
    hash_to_bucket = {h: b for b, hashes in loaded.items() for h in hashes}
    non_full = {b: len(h) for b, h in sorted(loaded.items())}
    total = set(loaded)
    out = []
    for key in keys:
        if key in hash_to_bucket:
            out.append(hash_to_bucket[key])
            continue
        chosen = None
        for bucket in list(non_full):
            if non_full[bucket] < target:
                non_full[bucket] += 1
                chosen = bucket
                break
            del non_full[bucket]
        if chosen is None:
            chosen = next(i for i in range(32767) if i not in total)
            non_full[chosen] = 1
            total.add(chosen)
        hash_to_bucket[key] = chosen
        out.append(chosen)
    return out


@settings(max_examples=200, deadline=None)
@given(
    loaded=st.dictionaries(st.integers(0, 6), st.sets(st.integers(-50, 50), max_size=6), max_size=4),
    target=st.integers(1, 5),
    batches=st.lists(st.lists(st.integers(-60, 60), max_size=12), min_size=1, max_size=4),
)
def test_vectorised_assignment_is_javas_key_by_key(
    loaded: dict[int, set[int]], target: int, batches: list[list[int]]
) -> None:
    # a hash lives in one bucket only
    seen: set[int] = set()
    clean = {}
    for bucket, hashes in sorted(loaded.items()):
        clean[bucket] = sorted(hashes - seen)
        seen |= hashes
    index = PartitionIndex({b: np.array(h, np.int32) for b, h in clean.items()}, target, max_buckets=-1)
    got = [index.assign(np.array(batch, np.int32)).tolist() for batch in batches]
    flat = _java_assign(clean, target, [k for batch in batches for k in batch])
    assert [b for batch in got for b in batch] == flat


# --- tables ----------------------------------------------------------------------------------------------


def test_primary_key_tables_default_to_dynamic_buckets(catalog: Catalog) -> None:
    table = _create(catalog, **{"dynamic-bucket.target-row-num": "3"})
    assert table.bucket == -1
    _upsert(table, "d1", [1, 2, 3, 4, 5], "a")
    _upsert(table, "d1", [1, 6, 7], "b")  # 1 stays where it is; 6 fills bucket 1; 7 opens bucket 2
    _upsert(table, "d2", [1], "c")
    assert _rows(table) == sorted(
        [("d1", i, "b" if i in (1, 6, 7) else "a") for i in range(1, 8)] + [("d2", 1, "c")]
    )
    assert _bucket_keys(table) == {
        ("d1", 0): {1, 2, 3},
        ("d1", 1): {4, 5, 6},
        ("d1", 2): {7},
        ("d2", 0): {1},
    }
    assert {e.total_buckets for e in table.live_entries()} == {-1}


def test_hash_index_files_hold_big_endian_key_hashes(catalog: Catalog) -> None:
    table = _create(catalog, **{"dynamic-bucket.target-row-num": "2"})
    _upsert(table, "d1", [10, 20, 30], "a")
    index = {(table.partition_values(e.partition)["dt"], e.bucket): e for e in table.index_entries()}
    assert set(index) == {("d1", 0), ("d1", 1)}
    for (_, bucket), entry in index.items():
        assert entry.file.index_type == HASH_INDEX
        assert entry.file.file_name.startswith("index-")
        data = table.storage.read_bytes(table.index_path(entry.file.file_name))
        hashes = {struct.unpack(">i", data[i : i + 4])[0] for i in range(0, len(data), 4)}
        expected = {hash_row([k], [BigIntType(nullable=False)]) for k in _bucket_keys(table)[("d1", bucket)]}
        assert hashes == expected
        assert entry.file.row_count == len(expected) and entry.file.file_size == 4 * len(expected)


def test_a_bucket_that_gains_keys_gets_a_new_index_file(catalog: Catalog) -> None:
    table = _create(catalog)
    _upsert(table, "d1", [1, 2], "a")
    first = table.index_entries()
    _upsert(table, "d1", [1, 2], "b")  # updates only: the index is unchanged
    assert table.index_entries() == first
    latest = table.latest_snapshot()
    assert latest is not None and latest.index_manifest == table.snapshot_manager.snapshot(1).index_manifest
    _upsert(table, "d1", [3], "c")
    (entry,) = table.index_entries()
    assert entry.file.file_name != first[0].file.file_name
    assert sorted(read_hash_index(table, entry.file)) == sorted(
        hash_row([k], [BigIntType(nullable=False)]) for k in (1, 2, 3)
    )


def test_overwrite_starts_the_partition_index_afresh(catalog: Catalog) -> None:
    table = _create(catalog, **{"dynamic-bucket.target-row-num": "2"})
    _upsert(table, "d1", [1, 2, 3, 4], "a")
    _upsert(table, "d2", [1], "a")
    table.overwrite(pa.table({"dt": ["d1"], "id": [9], "v": ["z"]}, schema=SCHEMA), {"dt": "d1"})
    assert _rows(table) == [("d1", 9, "z"), ("d2", 1, "a")]
    buckets = sorted((table.partition_values(e.partition)["dt"], e.bucket) for e in table.index_entries())
    assert buckets == [("d1", 0), ("d2", 0)]
    (d1,) = [e for e in table.index_entries() if table.partition_values(e.partition)["dt"] == "d1"]
    assert d1.file.row_count == 1


def test_two_writers_assigning_one_partition_conflict_without_losing_data(catalog: Catalog) -> None:
    table = _create(catalog)
    _upsert(table, "d1", [1], "a")
    first, second = table.new_write(), table.new_write()
    first.write(pa.table({"dt": ["d1"], "id": [2], "v": ["x"]}, schema=SCHEMA))
    second.write(pa.table({"dt": ["d1"], "id": [3], "v": ["y"]}, schema=SCHEMA))
    table.new_commit().commit(first.prepare_commit())
    messages = second.prepare_commit()
    with pytest.raises(CommitConflictError, match="hash index"):
        table.new_commit().commit(messages)
    second.abort(messages)
    assert _rows(table) == [("d1", 1, "a"), ("d1", 2, "x")]
    live = {e.file.file_name for e in table.index_entries()}
    assert all(table.storage.exists(table.index_path(n)) for n in live)
    assert not any(
        table.storage.exists(table.index_path(f.file_name)) for m in messages for f in m.new_index_files
    )


def test_compaction_keeps_keys_in_their_buckets(catalog: Catalog) -> None:
    table = _create(catalog, **{"dynamic-bucket.target-row-num": "2", "write-only": "true"})
    for round_ in range(3):
        _upsert(table, "d1", [1, 2, 3], f"r{round_}")
    before = _bucket_keys(table)
    compact_table(table)
    latest = table.latest_snapshot()
    assert latest is not None and latest.commit_kind.value == "COMPACT"
    assert _bucket_keys(table) == before
    assert _rows(table) == [("d1", i, "r2") for i in (1, 2, 3)]
    _upsert(table, "d1", [3, 4], "n")  # 3 stays in bucket 1, 4 joins it (2 keys per bucket)
    assert _bucket_keys(table) == {("d1", 0): {1, 2}, ("d1", 1): {3, 4}}


def test_expiration_and_orphan_cleanup_keep_exactly_the_live_index(catalog: Catalog) -> None:
    table = _create(catalog)
    for i in range(4):
        _upsert(table, "d1", [i], "a")  # each commit replaces bucket 0's index file
    index_dir = table.index_path("")
    assert len(table.storage.list_dir(index_dir)) == 4
    expire_snapshots(table, retain_max=1, retain_min=1)
    live = {e.file.file_name for e in table.index_entries()}
    assert {i.name for i in table.storage.list_dir(index_dir)} == live
    latest = table.latest_snapshot()
    assert latest is not None and latest.index_manifest is not None
    assert table.storage.exists(table.manifest_path(latest.index_manifest))
    stray = table.index_path("index-stray-0")
    table.storage.write_bytes(stray, b"\0\0\0\1")
    later = int(time.time() * 1000) + 60_000
    result = remove_orphan_files(table, older_than=later - 1, now_millis=later)
    assert result.deleted == (stray,)
    assert _rows(table) == [("d1", i, "a") for i in range(4)]
