"""Postpone-bucket tables (``bucket = -2``): written into ``bucket-postpone/``, invisible until compacted.

Writers leave each partition's records unmerged in its postpone bucket, as Java Paimon 1.1+ does; the
compaction job assigns them to real buckets (Java's bucket hash, the partition's bucket count or
``postpone.default-bucket-num``) and merges them with the table's merge engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core import Catalog, CommitMessage
from paimon_core import options as opts
from paimon_core.bucket import assign_buckets
from paimon_core.compact import CompactJob, LocalRunner, compact_table, postpone_removals
from paimon_core.errors import MergeError
from paimon_core.snapshot import CommitKind
from paimon_core.storage import join_path
from paimon_core.table import POSTPONE_BUCKET, TableStore
from paimon_core.table.mergetree import postpone_write_table

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("score", pa.int64()),
    ]
)
_JAVA_PREFIX = re.compile(r"^data--u-.+-s-\d+-w-.+-\d+\.(\w+)$")


def create(catalog: Catalog, name: str = "db.pp", **options: str) -> Any:
    return catalog.create_table(
        name, SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "-2", **options}
    )


def data(rows: Sequence[tuple[str, int, str | None, int | None]]) -> pa.Table:
    columns: list[list[Any]] = [[row[i] for row in rows] for i in range(len(SCHEMA))]
    return pa.table({f.name: c for f, c in zip(SCHEMA, columns, strict=True)}, schema=SCHEMA)


def content(table: Any) -> dict[tuple[str, int], tuple[Any, Any]]:
    rows = table.to_arrow().to_pylist()
    found = {(r["dt"], r["id"]): (r["name"], r["score"]) for r in rows}
    assert len(found) == len(rows), "a key read twice: its rows are in two buckets"
    return found


def postponed(table: Any) -> list[Any]:
    return [e for e in table.live_entries() if e.bucket == POSTPONE_BUCKET]


def test_writes_wait_in_bucket_postpone_as_java_writes_them(catalog: Catalog) -> None:
    table = create(catalog)
    table.append(data([("a", 3, "c", 3), ("a", 1, "a", 1), ("b", 2, "b", 2)]))
    table.append(data([("a", 1, "A", 10)]))
    entries = table.live_entries()
    assert {e.bucket for e in entries} == {POSTPONE_BUCKET}
    assert {e.total_buckets for e in entries} == {POSTPONE_BUCKET}
    for entry in entries:
        meta = entry.file
        assert meta.level == 0 and meta.file_source == 0  # an APPEND level-0 file
        assert (meta.min_sequence_number, meta.max_sequence_number) == (-1, -1)  # Java's unknown sequence
        named = _JAVA_PREFIX.match(meta.file_name)
        assert named, meta.file_name
        assert named.group(1) == postpone_write_table(table).options.get_option(opts.FILE_FORMAT)
        path = join_path(table.bucket_dir(entry.partition, entry.bucket), meta.file_name)
        assert "/bucket-postpone/" in path and Path(path).is_file()
    # one writer per append: each has its own prefix, shared by its files
    prefixes = {e.file.file_name.split("-w-")[0] for e in entries}
    assert len(prefixes) == 2
    # the records stay in arrival order, unmerged: the key written first is the file's min key
    first = next(e for e in entries if e.file.row_count == 2)
    assert first.file.min_key != first.file.max_key
    assert content(table) == {}  # invisible until compacted, as in Java
    assert catalog.get_table("db.pp").to_arrow().num_rows == 0


def test_compaction_moves_rows_into_real_buckets_merged(catalog: Catalog) -> None:
    table = create(catalog)
    table.append(data([("a", 3, "c", 3), ("a", 1, "a", 1), ("b", 2, "b", 2)]))
    table.append(data([("a", 1, "A", 10), ("b", 2, None, None)]))
    table.delete(data([("a", 3, None, None)]))
    summary = table.compact()
    assert summary.snapshots and not postponed(table)
    latest = table.latest_snapshot()
    assert latest.commit_kind == CommitKind.COMPACT
    assert content(table) == {("a", 1): ("A", 10), ("b", 2): (None, None)}
    assert {(e.bucket, e.total_buckets) for e in table.live_entries()} == {(0, 1)}  # default: one bucket


def test_partitions_keep_their_own_bucket_counts(catalog: Catalog) -> None:
    table = create(catalog)
    table.append(data([("a", i, f"a{i}", i) for i in range(40)]))
    table.compact()  # partition a: postpone.default-bucket-num = 1
    three = catalog.get_table("db.pp", **{"postpone.default-bucket-num": "3"})
    three.append(
        data([("b", i, f"b{i}", i) for i in range(40)] + [("a", i, f"A{i}", i) for i in range(0, 40, 2)])
    )
    three.compact()  # b gets 3 buckets; a keeps its 1
    totals: dict[str, set[int]] = {}
    for entry in three.live_entries():
        part = three.partition_values(entry.partition)["dt"]
        totals.setdefault(part, set()).add(entry.total_buckets)
        assert entry.bucket < entry.total_buckets
        # every row lies in the bucket Java's hash of its key picks for the partition's count
        path = join_path(three.bucket_dir(entry.partition, entry.bucket), entry.file.file_name)
        rows = pq.ParquetFile(path).read(columns=["id"])  # no hive discovery of dt= from the path
        buckets = assign_buckets(rows, ["id"], [three.schema.field_by_name("id").type], entry.total_buckets)
        assert set(buckets.to_pylist()) == {entry.bucket}
    assert totals == {"a": {1}, "b": {3}}
    assert (
        len({e.bucket for e in three.live_entries() if three.partition_values(e.partition)["dt"] == "b"}) == 3
    )
    expected = {("a", i): (f"A{i}" if i % 2 == 0 else f"a{i}", i) for i in range(40)}
    expected.update({("b", i): (f"b{i}", i) for i in range(40)})
    assert content(three) == expected


def test_partial_update_merges_postponed_rows(catalog: Catalog) -> None:
    table = create(catalog, **{"merge-engine": "partial-update"})
    table.append(data([("a", 1, "a", None), ("a", 2, None, 2)]))
    table.append(data([("a", 1, None, 1)]))
    table.compact()
    table.append(data([("a", 2, "b", None), ("a", 1, "A", None)]))
    assert content(table) == {("a", 1): ("a", 1), ("a", 2): (None, 2)}  # the last append waits
    table.compact()
    assert content(table) == {("a", 1): ("A", 1), ("a", 2): ("b", 2)}


def test_a_retraction_the_engine_refuses_is_refused_when_written(catalog: Catalog) -> None:
    table = create(catalog, **{"merge-engine": "partial-update"})
    with pytest.raises(MergeError):
        table.delete(data([("a", 1, None, None)]))
    assert table.snapshots() == []


def test_aggregation_counts_each_postponed_row_once(catalog: Catalog) -> None:
    table = create(catalog, **{"merge-engine": "aggregation", "fields.score.aggregate-function": "sum"})
    for _ in range(3):
        table.append(data([("a", 1, "x", 1), ("a", 2, "y", 10)]))
        table.compact()
    assert content(table) == {("a", 1): ("x", 3), ("a", 2): ("y", 30)}


# --- against a model: write / compact cycles -----------------------------------------------------------

_KEYS = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 12))
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), st.lists(st.tuples(_KEYS, st.integers(0, 99)), min_size=1, max_size=8)),
        st.tuples(st.just("delete"), st.lists(_KEYS, min_size=1, max_size=4)),
        st.tuples(st.just("compact"), st.sampled_from([1, 2, 4])),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=12)
@given(ops=_OPS)
def test_write_and_compact_cycles_match_a_model(
    tmp_path_factory: pytest.TempPathFactory, ops: list[Any]
) -> None:
    warehouse = tmp_path_factory.mktemp("wh")
    catalog = Catalog.open(str(warehouse))
    catalog.create_database("db")
    table = create(catalog)
    visible: dict[tuple[str, int], tuple[Any, Any]] = {}
    pending: dict[tuple[str, int], tuple[Any, Any] | None] = {}
    for op, arg in ops:
        if op == "upsert":
            table.append(data([(dt, i, f"v{v}", v) for (dt, i), v in arg]))
            pending.update({key: (f"v{v}", v) for key, v in arg})
        elif op == "delete":
            table.delete(data([(dt, i, None, None) for dt, i in arg]))
            pending.update(dict.fromkeys(arg))
        else:  # a partition new to real buckets takes the default count given now
            catalog.get_table("db.pp", **{"postpone.default-bucket-num": str(arg)}).compact()
            for key, value in pending.items():
                if value is None:
                    visible.pop(key, None)
                else:
                    visible[key] = value
            pending = {}
        assert content(catalog.get_table("db.pp")) == visible


# --- failures and races -------------------------------------------------------------------------------


class _FailingRunner:
    """Runs the real tasks, then fails before the job can commit (a crash between writing and commit)."""

    def __init__(self) -> None:
        self.outputs: list[CommitMessage] = []

    def __call__(self, table: TableStore, tasks: Sequence[Any]) -> Iterator[CommitMessage]:
        for task in tasks:
            message = task.run(table)
            self.outputs.append(message)
            yield message
        raise OSError("the worker died")


def test_an_interrupted_compaction_leaves_the_table_as_it_was(catalog: Catalog) -> None:
    table = create(catalog)
    table.append(data([("a", i, "x", i) for i in range(20)]))
    table.compact()
    table.append(data([("a", i, "y", i) for i in range(10)]))
    before = content(table)
    snapshots = len(table.snapshots())
    runner = _FailingRunner()
    with pytest.raises(OSError, match="worker died"):
        CompactJob(table, runner=runner).run()
    assert runner.outputs and len(table.snapshots()) == snapshots
    assert content(catalog.get_table("db.pp")) == before  # readable, nothing changed
    written = [f for m in runner.outputs for f in m.compact_after]
    assert written and not any(  # the job deleted what it wrote
        Path(join_path(table.bucket_dir(m.partition, m.bucket), f.file_name)).exists()
        for m in runner.outputs
        for f in m.compact_after
    )
    table.compact()
    assert content(table) == {("a", i): ("y" if i < 10 else "x", i) for i in range(20)}


def test_rows_written_during_a_compaction_are_kept(catalog: Catalog) -> None:
    table = create(catalog)
    table.append(data([("a", 1, "x", 1), ("b", 2, "x", 2)]))
    job = CompactJob(table, runner=LocalRunner(1))
    tasks = job.plan()
    table.append(data([("a", 1, "late", 5), ("a", 3, "late", 3)]))  # lands between plan and commit
    messages = job.execute(tasks)
    created, conflicted = job.commit([*messages, *postpone_removals(tasks)])
    assert created and not conflicted
    assert content(table) == {("a", 1): ("x", 1), ("b", 2): ("x", 2)}
    assert len(postponed(table)) == 1  # the late append waits for the next compaction
    table.compact()
    assert content(table) == {("a", 1): ("late", 5), ("a", 3): ("late", 3), ("b", 2): ("x", 2)}


def test_two_compactions_racing_merge_each_row_once(catalog: Catalog) -> None:
    table = create(catalog, **{"merge-engine": "aggregation", "fields.score.aggregate-function": "sum"})
    table.append(data([("a", i, "x", 1) for i in range(10)]))
    loser = CompactJob(table, runner=LocalRunner(1))
    tasks = loser.plan()
    compact_table(table, progress=False)  # the winner moves the same postponed rows first
    messages = loser.execute(tasks)
    created, conflicted = loser.commit([*messages, *postpone_removals(tasks)])
    assert created == [] and conflicted  # its postponed inputs are gone: nothing committed
    assert content(table) == {("a", i): ("x", 1) for i in range(10)}  # each row summed once
    assert not any(  # the loser's outputs are deleted
        Path(join_path(table.bucket_dir(m.partition, m.bucket), f.file_name)).exists()
        for m in messages
        for f in m.compact_after
    )


def test_cli_writes_postponed_rows_and_compacts_them(catalog: Catalog, tmp_path: Path) -> None:
    from paimon_core.cli import main

    table = create(catalog)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"dt": "a", "id": 1, "name": "x", "score": 1}\n{"dt": "a", "id": 1, "name": "y", "score": 2}\n'
    )
    assert main(["write", table.path, str(rows)]) == 0
    assert len(postponed(table)) == 1 and content(table) == {}
    assert main(["compact", table.path, "--no-progress", "--threads"]) == 0
    assert content(table) == {("a", 1): ("y", 2)} and not postponed(table)


def test_a_compaction_larger_than_the_write_buffer_spills_and_merges_in_order(catalog: Catalog) -> None:
    table = create(catalog, **{"write-buffer-size": "256 kb", "write-buffer-spillable": "true"})
    expected: dict[tuple[str, int], tuple[Any, Any]] = {}
    for round_ in range(3):
        rows = [("a", i, f"r{round_}-{i}" * 4, round_) for i in range(round_ * 500, round_ * 500 + 3000)]
        table.append(data(rows))
        expected.update({(dt, i): (name, score) for dt, i, name, score in rows})
    table.compact()
    assert content(table) == expected


def test_first_row_keeps_the_first_postponed_row(catalog: Catalog) -> None:
    table = create(catalog, **{"merge-engine": "first-row"})
    table.append(data([("a", 1, "first", 1), ("a", 1, "second", 2)]))
    table.append(data([("a", 2, "x", 2)]))
    table.compact()
    table.append(data([("a", 1, "third", 3), ("a", 2, "y", 3)]))
    table.compact()
    assert content(table) == {("a", 1): ("first", 1), ("a", 2): ("x", 2)}
    with pytest.raises(MergeError):
        table.delete(data([("a", 1, None, None)]))
