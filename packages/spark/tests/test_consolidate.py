"""The driver's side of a ``paimon`` data source write into a primary-key table, without Spark: the files of
several writers of one bucket (as Spark tasks write them) made one correct commit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.manifest import HASH_INDEX
from paimon_core.options import Options
from paimon_core.table import CommitMessage, Table
from paimon_core.table.mergetree import read_hash_index
from paimon_spark._write._consolidate import SplitKeyError, consolidate, full_compaction_due

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.int64())])


def make_table(tmp_path: Path, **options: str) -> Table:
    catalog = Catalog.open(str(tmp_path / "wh"), create=True)
    catalog.create_database("db")
    return catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options=options)


def task(table: Table, keys: Sequence[int], value: int = 1) -> list[CommitMessage]:
    """What one Spark task of the data source writes: level-0 files only (write-only)."""
    writer = table.copy({"write-only": "true"}).new_write()
    writer.write(pa.table({"k": list(keys), "v": [value] * len(keys)}, schema=SCHEMA))
    messages = writer.prepare_commit()
    writer.close()
    return messages


def commit(table: Table, tasks: list[list[CommitMessage]]) -> None:
    done = consolidate(table, tasks, overwrite=False, full_compaction=False)
    table.new_commit().commit(done.messages)
    for index in done.superseded:
        table.storage.delete(table.index_path(index.file_name))


def values(table: Table) -> dict[int, int]:
    return {r["k"]: r["v"] for r in table.to_arrow().to_pylist()}


def test_each_bucket_is_compacted_once_so_an_aggregation_counts_every_row_once(tmp_path: Path) -> None:
    table = make_table(
        tmp_path,
        **{
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
            "num-sorted-run.compaction-trigger": "2",
        },
    )
    for _ in range(4):
        commit(table, [task(table, range(10)), task(table, range(10)), task(table, range(10))])
    assert values(table) == {k: 12 for k in range(10)}
    # the writers' level-0 files were compacted by one compaction: one sorted run remains
    assert {e.file.level for e in table.live_entries()} == {table.options.merge_tree_levels() - 1}


def test_write_only_tables_are_not_compacted_by_the_driver(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"bucket": "1", "write-only": "true"})
    commit(table, [task(table, [1, 2]), task(table, [2, 3])])
    assert {e.file.level for e in table.live_entries()} == {0}
    assert sorted(values(table)) == [1, 2, 3]


def test_dynamic_bucket_index_files_of_several_tasks_become_one_per_bucket(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"bucket": "-1"})
    commit(table, [task(table, [1, 2, 3]), task(table, [4, 5]), task(table, [6])])
    entries = [e for e in table.index_entries() if e.file.index_type == HASH_INDEX]
    assert len(entries) == 1 and entries[0].bucket == 0
    assert entries[0].file.row_count == 6 == len(read_hash_index(table, entries[0].file))
    # the tasks' own index files are gone: only the merged one is left under index/
    assert sorted(p.name for p in Path(table.path, "index").iterdir()) == [entries[0].file.file_name]
    # a later write knows all six keys: updates go to their bucket, no key lands twice
    commit(table, [task(table, [1, 6], 9), task(table, [7], 9)])
    assert values(table) == {1: 9, 2: 1, 3: 1, 4: 1, 5: 1, 6: 9, 7: 9}
    entries = [e for e in table.index_entries() if e.file.index_type == HASH_INDEX]
    assert [e.file.row_count for e in entries] == [7]


def test_a_key_two_tasks_put_in_different_buckets_is_refused(tmp_path: Path) -> None:
    table = make_table(tmp_path, **{"bucket": "-1", "dynamic-bucket.target-row-num": "1"})
    first, second = task(table, [1, 2]), task(table, [2, 1])  # each opens bucket 0 for its first key
    with pytest.raises(SplitKeyError, match="buckets 0 and 1") as caught:
        consolidate(table, [first, second], overwrite=False, full_compaction=False)
    assert caught.value.buckets == (0, 1)
    table.new_commit().abort([*first, *second])  # what Spark's abort does with the tasks' messages
    assert table.latest_snapshot() is None
    assert not list(Path(table.path).rglob("*.parquet")) and not list(Path(table.path, "index").iterdir())


def test_full_compaction_every_n_commits() -> None:
    def due(options: dict[str, str], commits: int) -> list[bool]:
        table = cast(Table, SimpleNamespace(options=Options.of(options)))
        return [full_compaction_due(table, n) for n in range(1, commits + 1)]

    assert due({"full-compaction.delta-commits": "3"}, 6) == [False, False, True, False, False, True]
    # the full-compaction producer without the option: every commit (Paimon's documented default)
    assert due({"changelog-producer": "full-compaction"}, 3) == [True, True, True]
    assert due({}, 3) == [False, False, False]
    assert due({"full-compaction.delta-commits": "1", "write-only": "true"}, 3) == [False, False, False]
