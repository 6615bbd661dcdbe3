"""The unaware-bucket coordinator and the bucketed window (docs/append-compaction.md), on synthetic file metas."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import (
    COMPACT_AGE,
    REMOVE_AGE,
    BucketCompactManager,
    CompactCoordinator,
    CoordinatorOptions,
    TableCoordinator,
    compact_table,
    pick_full_compaction,
)
from paimon_core.errors import ConfigError
from paimon_core.manifest import DataFileMeta, SimpleStats
from paimon_core.snapshot import CommitKind

EMPTY = bytes(12)
P1 = b"p1"
P2 = b"p2"


def meta(name: str, size: int, seq: int = 0, rows: int = 1) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=size,
        row_count=rows,
        min_key=EMPTY,
        max_key=EMPTY,
        key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY,
        min_sequence_number=seq,
        max_sequence_number=seq + rows - 1,
        schema_id=0,
        level=0,
    )


def coordinator(
    target: int = 100, open_cost: int = 10, min_files: int = 5, limit: int = 100_000
) -> CompactCoordinator:
    return CompactCoordinator(CoordinatorOptions(target, 0.7, open_cost, min_files, limit))


def names(tasks: Any) -> list[list[str]]:
    return [[f.file_name for f in t.files] for t in tasks]


def test_only_files_below_the_small_file_size_are_candidates() -> None:
    c = coordinator()  # small = 70
    joined = c.add_files(P1, [meta("a", 69), meta("b", 70), meta("c", 500)])
    assert joined == 1
    assert [f.file_name for f in c.pending()[P1]] == ["a"]


def test_bin_is_emitted_at_twice_the_target_counting_open_cost() -> None:
    c = coordinator()
    c.add_files(P1, [meta("a", 60), meta("b", 65)])  # (60+10) + (65+10) = 145 < 200
    assert c.plan() == []
    assert c.age(P1) == 1
    c.add_files(P1, [meta("c", 55)])  # age resets; sorted 55, 60, 65 → 65 + 70 + 75 = 210 ≥ 200
    assert c.age(P1) == 0
    tasks = c.plan()
    assert names(tasks) == [["c", "a", "b"]]  # smallest first
    assert tasks[0].bucket == 0 and tasks[0].total_buckets == -1 and tasks[0].partition == P1
    assert c.age(P1) is None  # nothing pending: forgotten


def test_bin_of_exactly_twice_the_target_is_emitted() -> None:
    c = coordinator(target=100, open_cost=0)
    c.add_files(P1, [meta("a", 60), meta("b", 69), meta("c", 69)])  # 60 + 69 + 69 = 198
    assert c.plan() == []
    c = coordinator(target=100, open_cost=0)
    c.add_files(P1, [meta("a", 62), meta("b", 69), meta("c", 69)])  # = 200
    assert names(c.plan()) == [["a", "b", "c"]]


def test_one_file_alone_is_never_a_task_even_when_its_open_cost_is_huge() -> None:
    c = coordinator(open_cost=1000)
    c.add_files(P1, [meta("a", 10)])
    assert c.plan() == []
    c.add_files(P1, [meta("b", 20)])
    assert names(c.plan()) == [["a", "b"]]  # 2 files, each 1000+: the first pair is emitted


def test_several_bins_and_the_remainder_needs_min_file_num() -> None:
    c = coordinator(target=100, open_cost=0, min_files=3)
    files = [meta(f"f{i}", 50 + i) for i in range(9)]  # 50..58
    c.add_files(P1, files)
    tasks = c.plan()
    # 50+51+52+53 = 206 → bin; 54+55+56+57 = 222 → bin; 58 alone < min_files stays pending.
    assert names(tasks) == [["f0", "f1", "f2", "f3"], ["f4", "f5", "f6", "f7"]]
    assert [f.file_name for f in c.pending()[P1]] == ["f8"]


def test_min_file_num_remainder() -> None:
    c = coordinator()
    c.add_files(P1, [meta(f"a{i}", 1) for i in range(4)])
    c.add_files(P2, [meta(f"b{i}", 1) for i in range(5)])
    tasks = c.plan()
    assert names(tasks) == [[f"b{i}" for i in range(5)]]
    assert tasks[0].partition == P2
    assert c.age(P1) == 1


def test_age_compacts_a_quiet_partition_after_compact_age_plans() -> None:
    c = coordinator()
    c.add_files(P1, [meta(f"a{i}", 1) for i in range(3)])
    for round_no in range(1, COMPACT_AGE + 1):
        assert c.plan() == []
        assert c.age(P1) == round_no
    tasks = c.plan()  # age becomes 6 > 5 and 3 files are pending
    assert names(tasks) == [["a0", "a1", "a2"]]
    assert c.age(P1) is None


def test_a_single_quiet_file_is_forgotten_after_remove_age() -> None:
    c = coordinator()
    c.add_files(P1, [meta("lonely", 1)])
    for _ in range(REMOVE_AGE):
        assert c.plan() == []
    assert c.age(P1) == REMOVE_AGE
    assert c.plan() == []
    assert c.age(P1) is None and c.pending() == {}


def test_new_files_make_a_partition_young_again() -> None:
    c = coordinator()
    c.add_files(P1, [meta("a", 1)])
    for _ in range(4):
        c.plan()
    assert c.age(P1) == 4
    c.add_files(P1, [meta("b", 1)])
    assert c.age(P1) == 0
    c.add_files(P1, [meta("too-big", 10_000)])  # no candidate joined: the age stays
    assert c.age(P1) == 0


def test_removed_files_leave_the_pending_set() -> None:
    c = coordinator()
    c.add_files(P1, [meta(f"a{i}", 1) for i in range(5)])
    c.remove_files(P1, ["a0", "a1"])
    assert c.plan() == []  # 3 left < min_file_num


# --- bucketed window --------------------------------------------------------------------------------


def test_bucket_window_compacts_min_file_num_files_in_sequence_order() -> None:
    m = BucketCompactManager(min_file_num=3, target_size=100)
    for i, seq in enumerate([20, 0, 10]):
        m.add_new_file(meta(f"f{i}", 10, seq=seq, rows=10))
    picked = m.pick_compact_before()
    assert picked is not None and [f.min_sequence_number for f in picked] == [0, 10, 20]
    assert m.queue == []


def test_bucket_window_drops_its_oldest_file_at_twice_the_target() -> None:
    m = BucketCompactManager(min_file_num=3, target_size=100)
    m.add_new_file(meta("big", 190, seq=0))
    m.add_new_file(meta("s1", 20, seq=1))  # 210 ≥ 200: "big" slides out
    m.add_new_file(meta("s2", 20, seq=2))
    assert m.pick_compact_before() is None
    assert [f.file_name for f in m.queue] == ["s1", "s2"]
    m.add_new_file(meta("s3", 20, seq=3))
    picked = m.pick_compact_before()
    assert picked is not None and [f.file_name for f in picked] == ["s1", "s2", "s3"]


def test_bucket_small_output_is_requeued() -> None:
    m = BucketCompactManager(min_file_num=3, target_size=100)
    m.notify_result([meta("out-big", 100), meta("out-small", 40, seq=5)])
    assert [f.file_name for f in m.queue] == ["out-small"]


def test_full_compaction_skips_leading_big_files_and_needs_more_small_than_big() -> None:
    files = [meta("b0", 100, seq=0), meta("s1", 10, seq=1), meta("s2", 10, seq=2), meta("s3", 10, seq=3)]
    picked = pick_full_compaction(files, target_size=100)
    assert picked is not None and [f.file_name for f in picked] == ["s1", "s2", "s3"]
    assert pick_full_compaction(files[:3], target_size=100) is None  # two small left: < 3 files
    mixed = [meta("s0", 10, seq=0), meta("b1", 100, seq=1), meta("b2", 100, seq=2)]
    assert pick_full_compaction(mixed, target_size=100) is None  # 1 small vs 2 big
    forced = pick_full_compaction(files[:1], target_size=100, force_rewrite_all=True)
    assert forced is not None and len(forced) == 1


# --- the coordinator on a table ------------------------------------------------------------------------


def _table(catalog: Catalog, name: str = "db.t", **options: str) -> Any:
    schema = pa.schema([pa.field("k", pa.string()), pa.field("v", pa.int64())])
    base = {"write-only": "true", "target-file-size": "1 mb", "source.split.open-file-cost": "1 b"}
    return catalog.create_table(name, schema, partition_keys=["k"], options={**base, **options})


def _append(table: Any, key: str, n: int = 1) -> None:
    for i in range(n):
        table.append(pa.table({"k": [key], "v": [i]}))


def test_table_coordinator_reads_deltas_and_rediscovers_after_restart(catalog: Catalog) -> None:
    table = _table(catalog)
    _append(table, "a", 3)
    tc = TableCoordinator(table)
    assert tc.scan() is True
    assert sum(len(v) for v in tc.coordinator.pending().values()) == 3
    _append(table, "b", 1)
    assert tc.scan() is True and tc.snapshot_id == 4
    assert tc.scan() is False
    for _ in range(REMOVE_AGE + 1):
        tc.plan()
    assert tc.coordinator.pending() == {}  # both partitions were forgotten
    tc.restart()
    tc.scan()
    assert sum(len(v) for v in tc.coordinator.pending().values()) == 4  # rediscovered from the latest


def test_table_coordinator_drops_files_an_overwrite_deleted(catalog: Catalog) -> None:
    table = _table(catalog)
    _append(table, "a", 3)
    tc = TableCoordinator(table)
    tc.scan()
    table.overwrite(pa.table({"k": ["a"], "v": [99]}), partition={"k": "a"})
    tc.scan()
    pending = tc.coordinator.pending()
    assert [len(v) for v in pending.values()] == [1]  # only the overwrite's file is left


def test_table_coordinator_honours_file_num_limit(catalog: Catalog) -> None:
    table = _table(catalog, **{"compaction.file-num-limit": "3"})
    _append(table, "a", 5)
    tc = TableCoordinator(table)
    tc.scan()
    assert tc.coordinator.pending_count() == 3
    tc.plan()  # 3 files < min file num: nothing, still pending
    tc.scan()
    assert tc.coordinator.pending_count() == 3  # the limit holds; the rest waits in the backlog


# --- compaction.max.file-num (Paimon 0.9/1.0) and the other append compaction options ------------------


def test_max_file_num_emits_bins_of_that_many_files_below_the_target() -> None:
    files = [meta(f"f{i}", 1) for i in range(7)]
    uncapped = coordinator(target=100, open_cost=0, min_files=5)
    uncapped.add_files(P1, files)
    assert names(uncapped.plan()) == [[f"f{i}" for i in range(7)]]  # the remainder: 7 ≥ min files
    capped = CompactCoordinator(CoordinatorOptions(100, 0.7, 0, 5, 100_000, max_file_num=3))
    capped.add_files(P1, files)
    assert names(capped.plan()) == [["f0", "f1", "f2"], ["f3", "f4", "f5"]]
    assert [f.file_name for f in capped.pending()[P1]] == ["f6"]
    fewer = CompactCoordinator(CoordinatorOptions(100, 0.7, 0, 5, 100_000, max_file_num=3))
    fewer.add_files(P1, files[:3])  # below min file num, yet three small files are enough
    assert names(fewer.plan()) == [["f0", "f1", "f2"]]


def test_max_file_num_lowers_the_bucket_window() -> None:
    files = [meta(f"f{i}", 10, seq=i) for i in range(2)]
    assert BucketCompactManager(5, 100, list(files)).pick_compact_before() is None
    picked = BucketCompactManager(5, 100, list(files), max_file_num=2).pick_compact_before()
    assert picked is not None and [f.file_name for f in picked] == ["f0", "f1"]
    # a window of one file is never a compaction, whatever the option says
    assert BucketCompactManager(5, 100, list(files[:1]), max_file_num=1).pick_compact_before() is None


def test_compaction_options_are_read_from_the_table(catalog: Catalog) -> None:
    table = _table(catalog, **{"compaction.early-max.file-num": "4", "compaction.min.file-num": "7"})
    options = CoordinatorOptions.of(table)
    assert (options.max_file_num, options.min_file_num) == (4, 7)  # the 0.9 fallback key works
    table = _table(
        catalog, name="db.u", **{"compaction.max.file-num": "9", "compaction.delete-ratio-threshold": "0.5"}
    )
    assert CoordinatorOptions.of(table).max_file_num == 9
    with pytest.raises(ConfigError, match=r"compaction\.max\.file-num"):
        _table(catalog, name="db.bad", **{"compaction.max.file-num": "0"})


def test_max_file_num_changes_what_the_compaction_job_rewrites(catalog: Catalog) -> None:
    for name, extra, tasks in (("db.plain", {}, 1), ("db.capped", {"compaction.max.file-num": "2"}, 3)):
        table = _table(catalog, name=name, **extra)
        _append(table, "a", 6)
        summary = compact_table(table, progress=False)
        assert summary.tasks == tasks and summary.rewritten_files == 6
        assert len(table.live_entries()) == tasks


def test_max_file_num_triggers_inline_compaction_of_a_bucket_earlier(catalog: Catalog) -> None:
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    base = {"bucket": "1", "bucket-key": "v", "target-file-size": "1 mb", "compaction.min.file-num": "5"}
    for name, extra in (("db.b5", {}), ("db.b2", {"compaction.max.file-num": "2"})):
        table = catalog.create_table(name, schema, options={**base, **extra})
        for i in range(2):
            table.append(pa.table({"k": ["a"], "v": [i]}))
        compacts = [s for s in table.snapshots() if s.commit_kind == CommitKind.COMPACT]
        assert len(compacts) == (1 if extra else 0)
        assert len(table.live_entries()) == (1 if extra else 2)
