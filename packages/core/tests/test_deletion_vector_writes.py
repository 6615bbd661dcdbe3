"""Writing primary-key tables with deletion vectors (``deletion-vectors.enabled``).

Lookup compaction deletes the old row of every key it moves down by vector instead of rewriting its file;
batch reads skip level 0 and read the other levels without a merge (docs/primary-key-tables.md,
"Deletion vectors"). The property test runs random histories through every engine deletion vectors take and
checks, after every commit, the read against a model and the invariant that makes merge-free reads
right: above level 0, each key is visible in one file only.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.deletionvectors import read_deletion_vectors, write_deletion_vectors
from paimon_core.errors import CommitConflictError, ConfigError
from paimon_core.manifest import DELETION_VECTORS_INDEX
from paimon_core.snapshot import CommitKind
from paimon_core.storage import join_path
from paimon_core.table import CommitMessage, KeyValueTableWrite, Table
from paimon_core.table.mergetree import MergeTreeCompactTask

SCHEMA = pa.schema(
    [pa.field("k", pa.int32(), nullable=False), pa.field("a", pa.int64()), pa.field("b", pa.int64())]
)
_names = itertools.count()

ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.a.aggregate-function": "sum",
        "fields.b.aggregate-function": "max",
        "aggregation.remove-record-on-delete": "true",
    },
}

Op = tuple[str, int, int]  # ("put" | "del", key, value)
Row = dict[str, Any]


def _table(root: Path, **options: str) -> Table:
    catalog = Catalog.open(str(root), create=True)
    catalog.create_database("db", exist_ok=True)
    all_options = {"bucket": "2", "deletion-vectors.enabled": "true", **options}
    return catalog.create_table(f"db.t{next(_names)}", SCHEMA, primary_keys=["k"], options=all_options)


def _put_row(engine: str, key: int, value: int) -> Row:
    if engine == "partial-update":  # each put sets one column, the other stays
        return {"k": key, "a": value, "b": None} if value % 2 else {"k": key, "a": None, "b": value}
    return {"k": key, "a": value, "b": value}


def _write(table: Table, engine: str, ops: list[Op], batch: int) -> None:
    """One commit; every ``batch`` ops a separate write, so small buffers flush several level-0 files."""
    writer = table.new_write()
    assert isinstance(writer, KeyValueTableWrite)
    for start in range(0, len(ops), batch):
        for kind, key, value in ops[start : start + batch]:
            if kind == "put":
                writer.write(pa.Table.from_pylist([_put_row(engine, key, value)], schema=SCHEMA))
            else:
                writer.delete(pa.table({"k": pa.array([key], pa.int32())}))
    messages = writer.prepare_commit()
    writer.close()
    table.new_commit().commit(messages)


def _read(table: Table) -> dict[int, Row]:
    return {r["k"]: r for r in table.to_arrow().to_pylist()}


def _deletion_vectors(table: Table) -> dict[tuple[bytes, int], dict[str, Any]]:
    """(partition, bucket) → data file → its deletion vector, of the latest snapshot."""
    found: dict[tuple[bytes, int], dict[str, Any]] = {}
    slots: Counter[tuple[bytes, int]] = Counter()
    for entry in table.index_entries():
        if entry.file.index_type == DELETION_VECTORS_INDEX:
            slots[(entry.partition, entry.bucket)] += 1
            found[(entry.partition, entry.bucket)] = read_deletion_vectors(table, entry.file)
    assert all(count == 1 for count in slots.values()), "one deletion-vector file per bucket"
    return found


def _check_invariants(table: Table) -> None:
    """Above level 0 each key is visible once; vectors name live files and positions inside them."""
    vectors = _deletion_vectors(table)
    entries = table.live_entries()
    live = {(e.partition, e.bucket, e.file.file_name) for e in entries}
    for (partition, bucket), by_file in vectors.items():
        for name in by_file:
            assert (partition, bucket, name) in live, f"a deletion vector of a file no longer live: {name}"
    visible: Counter[tuple[bytes, int, int]] = Counter()
    for entry in entries:
        if entry.file.level == 0:
            continue
        path = join_path(table.bucket_dir(entry.partition, entry.bucket), entry.file.file_name)
        keys = pq.read_table(path, columns=["_KEY_k"], partitioning=None).column(0).to_pylist()
        vector = vectors.get((entry.partition, entry.bucket), {}).get(entry.file.file_name)
        if vector is not None:
            assert int(vector.positions.max(initial=-1)) < entry.file.row_count
        for position, key in enumerate(keys):
            if vector is None or not vector.is_deleted(position):
                visible[(entry.partition, entry.bucket, key)] += 1
    assert all(count == 1 for count in visible.values()), "a key visible in two files above level 0"


histories = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["put", "put", "put", "del"]), st.integers(0, 40), st.integers(1, 9)),
        min_size=1,
        max_size=30,
    ),
    min_size=1,
    max_size=8,
)


@pytest.mark.slow
@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("producer", ["none", "lookup"])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, batch=st.sampled_from([1, 4, 100]))
def test_reads_match_the_model_after_every_commit(
    tmp_path: Path, engine: str, producer: str, history: list[list[Op]], batch: int
) -> None:
    options = {
        **ENGINES[engine],
        "changelog-producer": producer,
        "num-levels": "3",  # few levels: compactions soon reach files that hold older rows
        "write-buffer-size": "1kb",
        "write-buffer-spillable": "false",
    }
    table = _table(tmp_path, **options)
    # The oracle: the same history merged on read, without deletion vectors.
    merged_on_read = _table(tmp_path, **{**options, "deletion-vectors.enabled": "false"})
    state: dict[int, int] = {}
    for ops in history:
        _write(table, engine, ops, batch)
        _write(merged_on_read, engine, ops, batch)
        rows = _read(table)
        assert rows == _read(merged_on_read)
        if engine == "deduplicate":
            for kind, key, value in ops:
                state.pop(key, None) if kind == "del" else state.update({key: value})
            assert {k: r["a"] for k, r in rows.items()} == state
        assert not [e for e in table.live_entries() if e.file.level == 0], "compaction takes level 0 up"
        _check_invariants(table)


def test_compaction_deletes_old_rows_by_vector_instead_of_rewriting(tmp_path: Path) -> None:
    table = _table(tmp_path, bucket="1")
    size = 20_000  # large beside the updates: no size-amplification compaction rewrites it
    table.append(pa.table({"k": pa.array(range(size), pa.int32()), "a": range(size), "b": range(size)}))
    table.append(pa.table({"k": pa.array([70], pa.int32()), "a": [-1], "b": [-1]}))
    table.append(pa.table({"k": pa.array([3, 5], pa.int32()), "a": [-1, -1], "b": [-1, -1]}))
    [big] = [e.file for e in table.live_entries() if e.file.row_count == size]
    [vectors] = _deletion_vectors(table).values()
    assert sorted(vectors[big.file_name].positions.tolist()) == [3, 5, 70]  # the big file kept, rows deleted
    compaction = table.snapshots()[-1]
    assert compaction.commit_kind == CommitKind.COMPACT and compaction.index_manifest
    rows = _read(table)
    assert sorted(k for k, r in rows.items() if r["a"] == -1) == [3, 5, 70] and len(rows) == size


def test_write_only_writers_and_a_dedicated_compaction(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"write-only": "true"})
    table.append(pa.table({"k": pa.array(range(20), pa.int32()), "a": [1] * 20, "b": [1] * 20}))
    assert _read(table) == {}, "level 0 is not read until it is compacted"
    compact_table(table, mode="batch")
    assert len(_read(table)) == 20
    table.append(pa.table({"k": pa.array(range(10), pa.int32()), "a": [2] * 10, "b": [2] * 10}))
    table.delete(pa.table({"k": pa.array([15], pa.int32())}))
    assert {r["a"] for r in _read(table).values()} == {1}, "the new writes wait for the compaction"
    compact_table(table, mode="batch")
    rows = _read(table)
    assert sorted(rows) == [k for k in range(20) if k != 15]
    assert all(rows[k]["a"] == (2 if k < 10 else 1) for k in rows)
    _check_invariants(table)


def test_full_compaction_rewrites_files_with_deleted_rows(tmp_path: Path) -> None:
    table = _table(tmp_path, bucket="1")
    table.append(pa.table({"k": pa.array(range(50), pa.int32()), "a": range(50), "b": range(50)}))
    table.append(pa.table({"k": pa.array([1, 2], pa.int32()), "a": [-1, -1], "b": [-1, -1]}))
    compact_table(table, mode="batch")  # everything to the top level, once
    table.append(pa.table({"k": pa.array([9], pa.int32()), "a": [-1], "b": [-1]}))
    assert any(not v.is_empty() for by_file in _deletion_vectors(table).values() for v in by_file.values())
    compact_table(table, mode="batch")
    assert all(not by_file for by_file in _deletion_vectors(table).values()), "no deleted row left"
    assert {e.file.level for e in table.live_entries()} == {table.options.merge_tree_levels() - 1}
    assert [k for k, r in _read(table).items() if r["a"] == -1] == [1, 2, 9]


def test_overwrite_replaces_vectors_and_commits_its_compactions(tmp_path: Path) -> None:
    table = _table(tmp_path, bucket="1", **{"write-buffer-size": "4kb", "write-buffer-spillable": "false"})
    table.append(pa.table({"k": pa.array(range(30), pa.int32()), "a": [1] * 30, "b": [1] * 30}))
    table.append(pa.table({"k": pa.array([1], pa.int32()), "a": [2], "b": [2]}))
    data = pa.table(
        {"k": pa.array([i % 300 for i in range(3000)], pa.int32()), "a": range(3000), "b": range(3000)}
    )
    table.overwrite(data.to_batches(max_chunksize=200))
    rows = _read(table)
    assert len(rows) == 300 and all(rows[k]["a"] == 2700 + k for k in rows)
    kinds = [s.commit_kind for s in table.snapshots()]
    assert CommitKind.OVERWRITE in kinds and kinds[-1] == CommitKind.COMPACT, "the writer's compaction landed"
    on_disk = {p.name for p in Path(table.bucket_dir(b"", 0).removeprefix("file://")).iterdir()}
    referenced = {f.file_name for s in table.snapshots() for f in (e.file for e in table.live_entries(s.id))}
    assert not {n for n in on_disk - referenced if n.startswith("data-")}, "no orphan compaction output"
    _check_invariants(table)


def test_a_compaction_that_lost_its_vectors_race_is_dropped(tmp_path: Path) -> None:
    table = _table(tmp_path, bucket="1")
    table.append(pa.table({"k": pa.array(range(40), pa.int32()), "a": [1] * 40, "b": [1] * 40}))
    first, second = table.new_write(), table.new_write()  # both restore the same bucket
    first.write(pa.table({"k": pa.array([1], pa.int32()), "a": [2], "b": [2]}))
    second.write(pa.table({"k": pa.array([2], pa.int32()), "a": [3], "b": [3]}))
    first_messages, second_messages = first.prepare_commit(), second.prepare_commit()
    table.new_commit().commit(first_messages)
    table.new_commit().commit(second_messages)  # its data lands, its compaction does not
    first.close()
    second.close()
    rows = _read(table)
    assert (rows[1]["a"], rows[2]["a"]) == (2, 1), "the second write waits on level 0"
    _check_invariants(table)
    compact_table(table, mode="batch")
    rows = _read(table)
    assert (rows[1]["a"], rows[2]["a"], len(rows)) == (2, 3, 40)
    _check_invariants(table)


def test_a_lone_compaction_that_lost_its_vectors_race_raises(tmp_path: Path) -> None:
    table = _table(tmp_path, bucket="1")
    table.append(pa.table({"k": pa.array(range(10), pa.int32()), "a": [1] * 10, "b": [1] * 10}))
    table.append(pa.table({"k": pa.array([1], pa.int32()), "a": [2], "b": [2]}))  # a vector now
    table.copy({"write-only": "true"}).append(pa.table({"k": pa.array([2], pa.int32()), "a": [3], "b": [3]}))

    def task() -> MergeTreeCompactTask:
        [index] = [e.file for e in table.index_entries() if e.file.index_type == DELETION_VECTORS_INDEX]
        entries = table.live_entries()
        files = tuple(e.file for e in entries)
        return MergeTreeCompactTask(entries[0].partition, 0, 1, files, full=False, deletion_files=(index,))

    stale, fresh = task(), task()
    table.new_commit().commit([fresh.run(table)])
    with pytest.raises(CommitConflictError):
        table.new_commit().commit([stale.run(table)])
    rows = _read(table)
    assert (rows[1]["a"], rows[2]["a"]) == (2, 3)
    _check_invariants(table)


def test_replacing_a_bucket_vectors_file_that_changed_meanwhile_conflicts(tmp_path: Path) -> None:
    table = _table(tmp_path, bucket="1")
    table.append(pa.table({"k": pa.array(range(10), pa.int32()), "a": [1] * 10, "b": [1] * 10}))
    table.append(pa.table({"k": pa.array([1], pa.int32()), "a": [2], "b": [2]}))
    [entry] = [e for e in table.index_entries() if e.file.index_type == DELETION_VECTORS_INDEX]
    vectors = read_deletion_vectors(table, entry.file)

    def replacement() -> CommitMessage:
        new = write_deletion_vectors(table, vectors)
        return CommitMessage(entry.partition, 0, 1, new_index_files=(new,), deleted_index_files=(entry.file,))

    first, second = replacement(), replacement()
    table.new_commit().commit([first])
    assert table.snapshots()[-1].commit_kind == CommitKind.COMPACT, "vectors change in compactions"
    with pytest.raises(CommitConflictError, match="deletion vectors"):
        table.new_commit().commit([second])


def test_abort_deletes_the_vectors_it_wrote(tmp_path: Path) -> None:
    table = _table(tmp_path, bucket="1")
    table.append(pa.table({"k": pa.array(range(10), pa.int32()), "a": [1] * 10, "b": [1] * 10}))
    table.append(pa.table({"k": pa.array([2], pa.int32()), "a": [2], "b": [2]}))  # a vectors file
    index_dir = Path(table.index_path("x").removeprefix("file://")).parent
    before = set(index_dir.iterdir())
    writer = table.new_write()
    writer.write(pa.table({"k": pa.array([1], pa.int32()), "a": [2], "b": [2]}))
    messages = writer.prepare_commit()
    assert any(f.index_type == DELETION_VECTORS_INDEX for m in messages for f in m.new_index_files)
    writer.abort(messages)
    assert set(index_dir.iterdir()) == before


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"merge-engine": "first-row"}, "first-row"),
        ({"changelog-producer": "full-compaction"}, "full-compaction"),
    ],
)
def test_refused_combinations(tmp_path: Path, options: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        _table(tmp_path, **options)


def test_append_tables_refuse_deletion_vectors(tmp_path: Path) -> None:
    catalog = Catalog.open(str(tmp_path))
    catalog.create_database("db")
    with pytest.raises(ConfigError, match="append table"):
        catalog.create_table("db.a", SCHEMA, options={"deletion-vectors.enabled": "true"})


def test_bitmap64_vectors_are_written_when_asked(tmp_path: Path) -> None:
    table = _table(tmp_path, bucket="1", **{"deletion-vectors.bitmap64": "true"})
    table.append(pa.table({"k": pa.array(range(10), pa.int32()), "a": [1] * 10, "b": [1] * 10}))
    table.append(pa.table({"k": pa.array([4], pa.int32()), "a": [2], "b": [2]}))
    [vectors] = _deletion_vectors(table).values()
    assert [v.bitmap64 for v in vectors.values()] == [True]
    assert _read(table)[4]["a"] == 2


def test_dynamic_bucket_partitioned_table_keeps_both_index_kinds(tmp_path: Path) -> None:
    catalog = Catalog.open(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), *SCHEMA])
    table = catalog.create_table(
        "db.dyn",
        schema,
        primary_keys=["dt", "k"],
        partition_keys=["dt"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "30", "deletion-vectors.enabled": "true"},
    )
    model: dict[tuple[str, int], int] = {}
    for round_ in range(6):
        keys = list(range(round_ * 10, round_ * 10 + 40))
        rows: list[dict[str, Any]] = [
            {"dt": dt, "k": k, "a": round_, "b": round_} for dt in ("x", "y") for k in keys
        ]
        table.append(pa.Table.from_pylist(rows, schema=schema))
        model.update({(r["dt"], r["k"]): round_ for r in rows})
        got = {(r["dt"], r["k"]): r["a"] for r in table.to_arrow().to_pylist()}
        assert got == model
        _check_invariants(table)
    kinds = Counter(e.file.index_type for e in table.index_entries())
    assert kinds["HASH"] >= 4 and kinds[DELETION_VECTORS_INDEX] >= 2, kinds
