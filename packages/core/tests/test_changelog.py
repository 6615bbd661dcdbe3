"""Changelog producers, streaming and incremental reads of primary-key tables, ``$audit_log`` and ``$ro``.

The property tests run random upsert/delete histories against an in-memory model of Paimon's rules for
each producer (docs/primary-key-tables.md, "Changelog"): what each snapshot's changes are, and that
replaying every change from an empty table gives the table's content at every snapshot.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.errors import ConfigError
from paimon_core.snapshot import CommitKind
from paimon_core.table import KeyValueTableWrite, Table

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.int64())])
_names = itertools.count()

Op = tuple[str, int, int]  # ("put" | "del", key, value)


def _table(root: Path, producer: str, **options: str) -> Table:
    catalog = Catalog.open(str(root), create=True)
    catalog.create_database("db", exist_ok=True)
    opts = {"bucket": "2", "changelog-producer": producer, **options}
    return catalog.create_table(f"db.t{next(_names)}", SCHEMA, primary_keys=["k"], options=opts)


def _commit(table: Table, ops: list[Op]) -> None:
    rows = [{"k": k, "v": v, "rowkind": "+I" if kind == "put" else "-D"} for kind, k, v in ops]
    writer = table.new_write()
    assert isinstance(writer, KeyValueTableWrite)
    # each op as its own write: records keep their order of arrival
    for row in rows:
        data = pa.table({"k": [row["k"]], "v": [row["v"]]}, schema=SCHEMA)
        if row["rowkind"] == "+I":
            writer.write(data)
        else:
            writer.delete(data.select(["k"]))
    messages = writer.prepare_commit()
    writer.close()
    table.new_commit().commit(messages)


def _changes(table: Table, snapshot_id: int) -> list[tuple[str, int, int | None]]:
    """The changes a stream reads for one snapshot."""
    reading = table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": str(snapshot_id)})
    rows = [
        (r["rowkind"], r["k"], r["v"])
        for batch in reading.stream(follow=False, until_snapshot=snapshot_id)
        for r in batch.to_pylist()
    ]
    return rows


def _by_key(rows: list[tuple[str, int, int | None]]) -> dict[int, list[tuple[str, int | None]]]:
    """Changes grouped per key, each key's in order (keys of different buckets interleave freely)."""
    grouped: dict[int, list[tuple[str, int | None]]] = {}
    for kind, key, value in rows:
        grouped.setdefault(key, []).append((kind, value))
    return grouped


def _diff(
    before: dict[int, int], after: dict[int, int], keys: set[int], dedupe: bool
) -> dict[int, list[Any]]:
    """Paimon's changelog between two states, for ``keys``."""
    changes: dict[int, list[Any]] = {}
    for key in sorted(keys):
        old, new = before.get(key), after.get(key)
        if old is None and new is not None:
            changes[key] = [("+I", new)]
        elif old is not None and new is None:
            changes[key] = [("-D", old)]
        elif old is not None and new is not None and not (dedupe and old == new):
            changes[key] = [("-U", old), ("+U", new)]
    return changes


def _apply(state: dict[int, int], ops: list[Op]) -> dict[int, int]:
    after = dict(state)
    for kind, key, value in ops:
        if kind == "put":
            after[key] = value
        else:
            after.pop(key, None)
    return after


def _replay(state: dict[int, int], rows: list[tuple[str, int, int | None]]) -> dict[int, int]:
    after = dict(state)
    for kind, key, value in rows:
        if kind in ("+I", "+U"):
            assert value is not None
            after[key] = value
        elif kind == "-D":
            after.pop(key, None)
    return after


histories = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["put", "put", "del"]), st.integers(0, 7), st.integers(0, 3)),
        min_size=1,
        max_size=8,
    ),
    min_size=1,
    max_size=6,
)


@pytest.mark.parametrize(
    ("producer", "deletion_vectors"),
    [
        ("none", False),
        ("input", False),
        ("lookup", False),
        ("full-compaction", False),
        # deletion vectors take every producer but full-compaction
        ("none", True),
        ("input", True),
        ("lookup", True),
    ],
)
@pytest.mark.parametrize("dedupe", [False, True])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories)
def test_changelog_matches_the_model(
    tmp_path: Path, producer: str, deletion_vectors: bool, dedupe: bool, history: list[list[Op]]
) -> None:
    options = {
        "changelog-producer.row-deduplicate": str(dedupe).lower(),
        "deletion-vectors.enabled": str(deletion_vectors).lower(),
    }
    table = _table(tmp_path, producer, **options)
    state: dict[int, int] = {}
    replayed: dict[int, int] = {}
    for ops in history:
        before_id = table.snapshot_manager.latest_id() or 0
        _commit(table, ops)
        after = _apply(state, ops)
        new_ids = range(before_id + 1, (table.snapshot_manager.latest_id() or 0) + 1)
        rows = [row for snapshot_id in new_ids for row in _changes(table, snapshot_id)]
        got = _by_key(rows)
        touched = {key for _, key, _ in ops}
        if producer == "input":
            expected = {
                k: [("+I" if kind == "put" else "-D", v) for kind, kk, v in ops if kk == k] for k in touched
            }
            assert {k: [(kind, v) for kind, v in changes if kind != "-D"] for k, changes in got.items()} == {
                k: [c for c in changes if c[0] != "-D"] for k, changes in expected.items()
            }
            assert {k: [kind for kind, _ in changes] for k, changes in got.items()} == {
                k: [kind for kind, _ in changes] for k, changes in expected.items()
            }
        elif producer == "none":
            # the delta: the writer's merged record per key (deduplicate: the last one)
            last = {k: [(kind, v) for kind, kk, v in ops if kk == k][-1] for k in touched}
            assert {k: [kind for kind, _ in changes] for k, changes in got.items()} == {
                k: ["+I" if kind == "put" else "-D"] for k, (kind, _) in last.items()
            }
        else:
            # full compaction every commit (delta-commits = 1) and lookup compaction of level 0 both see the
            # previous state as "before"; untouched keys (one record, already on the top) have no changes
            assert got == _diff(state, after, touched, dedupe)
        replayed = _replay(replayed, rows)
        assert replayed == after == {r["k"]: r["v"] for r in table.to_arrow().to_pylist()}
        state = after


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories)
def test_full_compaction_producer_compacts_at_every_commit_unless_told_otherwise(
    tmp_path_factory: pytest.TempPathFactory, history: list[list[Op]]
) -> None:
    # Paimon documents full-compaction.delta-commits = 1 as the producer's default: without it the producer
    # gave no changelog at all until a compaction happened to reach the top level
    root = tmp_path_factory.mktemp("wh")
    default = _table(root, "full-compaction")
    explicit = _table(root, "full-compaction", **{"full-compaction.delta-commits": "1"})
    every_other = _table(root, "full-compaction", **{"full-compaction.delta-commits": "2"})
    write_only = _table(root, "full-compaction", **{"write-only": "true"})
    for ops in history:
        for table in (default, explicit, every_other, write_only):
            _commit(table, ops)
    latest = default.snapshot_manager.latest_id() or 0
    assert latest == explicit.snapshot_manager.latest_id()
    changes = [_by_key(_changes(default, i)) for i in range(1, latest + 1)]
    assert changes == [_by_key(_changes(explicit, i)) for i in range(1, latest + 1)]
    if default.to_arrow().num_rows:  # rows that are there came through the changelog as +I
        assert any(changes)
    compacts = [s.commit_kind for s in every_other.snapshots()].count(CommitKind.COMPACT)
    assert compacts <= len(history) // 2
    assert all(s.commit_kind == CommitKind.APPEND for s in write_only.snapshots())


def test_input_changelog_files_are_listed_in_the_changelog_manifest_list(tmp_path: Path) -> None:
    table = _table(tmp_path, "input")
    _commit(table, [("put", 1, 1), ("put", 2, 2), ("put", 1, 3)])
    snapshot = table.latest_snapshot()
    assert snapshot is not None and snapshot.commit_kind == CommitKind.APPEND
    assert snapshot.changelog_manifest_list is not None
    assert snapshot.changelog_record_count == 3
    names = [p.name for p in tmp_path.rglob("changelog-*.parquet")]
    assert names, "input changelog files are named with changelog-file.prefix"
    live = {e.file.file_name for e in table.live_entries()}
    assert not live & set(names), "changelog files are not data files"


def test_lookup_changelog_of_aggregation_and_partial_update(tmp_path: Path) -> None:
    catalog = Catalog.open(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema(
        [pa.field("k", pa.int32(), nullable=False), pa.field("a", pa.int64()), pa.field("b", pa.string())]
    )
    agg = catalog.create_table(
        "db.agg",
        schema,
        primary_keys=["k"],
        options={
            "bucket": "1",
            "changelog-producer": "lookup",
            "merge-engine": "aggregation",
            "fields.a.aggregate-function": "sum",
        },
    )
    for value in (1, 2, 3, 4):
        agg.append(pa.table({"k": [1], "a": [value], "b": ["x"]}, schema=schema))
    # every lookup compaction wrote the complete sum: reads must not add superseded partial sums again
    assert agg.to_arrow().to_pylist() == [{"k": 1, "a": 10, "b": "x"}]
    last = _rows(agg, agg.snapshot_manager.latest_id() or 0)
    assert last == [("-U", 1, 6, "x"), ("+U", 1, 10, "x")]

    partial = catalog.create_table(
        "db.partial",
        schema,
        primary_keys=["k"],
        options={"bucket": "1", "changelog-producer": "lookup", "merge-engine": "partial-update"},
    )
    partial.append(pa.table({"k": [1], "a": [5], "b": [None]}, schema=schema))
    partial.append(pa.table({"k": [1], "a": [None], "b": ["y"]}, schema=schema))
    assert partial.to_arrow().to_pylist() == [{"k": 1, "a": 5, "b": "y"}]


def _rows(table: Table, snapshot_id: int) -> list[tuple[Any, ...]]:
    reading = table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": str(snapshot_id)})
    return [
        tuple(r.values())
        for batch in reading.stream(follow=False, until_snapshot=snapshot_id)
        for r in batch.to_pylist()
    ]


def test_first_row_lookup_changelog_has_only_new_keys(tmp_path: Path) -> None:
    table = _table(tmp_path, "lookup", **{"merge-engine": "first-row", "bucket": "1"})
    table.append(pa.table({"k": [1, 2], "v": [10, 20]}, schema=SCHEMA))
    table.append(pa.table({"k": [2, 3], "v": [99, 30]}, schema=SCHEMA))
    changes = [
        row for s in range(1, (table.snapshot_manager.latest_id() or 0) + 1) for row in _rows(table, s)
    ]
    assert sorted(changes) == [("+I", 1, 10), ("+I", 2, 20), ("+I", 3, 30)]
    assert table.to_arrow().sort_by("k").to_pylist() == [
        {"k": 1, "v": 10},
        {"k": 2, "v": 20},
        {"k": 3, "v": 30},
    ]


def test_first_row_refuses_input_and_full_compaction_producers(tmp_path: Path) -> None:
    for producer in ("input", "full-compaction"):
        with pytest.raises(ConfigError, match="first-row"):
            _table(tmp_path, producer, **{"merge-engine": "first-row"})


def test_audit_log_and_read_optimized(tmp_path: Path) -> None:
    catalog = Catalog.open(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true"}
    )
    table.append(pa.table({"k": [1, 2], "v": [1, 2]}, schema=SCHEMA))
    compact_table(table)
    table.append(pa.table({"k": [1], "v": [5]}, schema=SCHEMA))
    table.delete(pa.table({"k": [2]}))
    audit = catalog.get_table("db.t$audit_log")
    rows = audit.to_arrow().sort_by("k").to_pylist()
    assert rows == [{"rowkind": "+I", "k": 1, "v": 5}, {"rowkind": "-D", "k": 2, "v": None}]
    assert audit.to_arrow(columns=["k", "rowkind"]).column_names == ["k", "rowkind"]
    # $ro: the top level only, as the last full compaction left it
    ro = catalog.get_table("db.t$ro")
    assert ro.to_arrow().sort_by("k").to_pylist() == [{"k": 1, "v": 1}, {"k": 2, "v": 2}]
    compact_table(table)
    assert ro.to_arrow().to_pylist() == [{"k": 1, "v": 5}]
    # append tables have an audit log too: every row +I
    plain = catalog.create_table("db.plain", SCHEMA)
    plain.append(pa.table({"k": [7], "v": [7]}, schema=SCHEMA))
    assert catalog.get_table("db.plain$audit_log").to_arrow().to_pylist() == [
        {"rowkind": "+I", "k": 7, "v": 7}
    ]


def test_incremental_between_reads_changelog_or_new_files(tmp_path: Path) -> None:
    table = _table(tmp_path, "input", bucket="1")
    table.append(pa.table({"k": [1, 2], "v": [1, 2]}, schema=SCHEMA))
    table.append(pa.table({"k": [2, 3], "v": [20, 30]}, schema=SCHEMA))
    table.delete(pa.table({"k": [1]}))
    between = table.copy({"incremental-between": "1,3"})
    assert between.to_arrow().sort_by("k").to_pylist() == [{"k": 2, "v": 20}, {"k": 3, "v": 30}]
    audit = table.copy({"incremental-between": "1,3"})
    from paimon_core.table import AuditLogTable

    rows = AuditLogTable(audit).to_arrow().sort_by("k").to_pylist()
    assert rows == [
        {"rowkind": "-D", "k": 1, "v": None},
        {"rowkind": "+I", "k": 2, "v": 20},
        {"rowkind": "+I", "k": 3, "v": 30},
    ]


def test_stream_resumes_from_a_consumer_and_stops(tmp_path: Path) -> None:
    table = _table(tmp_path, "input", bucket="1")
    table.append(pa.table({"k": [1], "v": [1]}, schema=SCHEMA))
    first = table.stream(consumer_id="job", follow=False)
    assert [r["k"] for b in first for r in b.to_pylist()] == [1]
    table.append(pa.table({"k": [2], "v": [2]}, schema=SCHEMA))
    resumed = table.stream(consumer_id="job", follow=False)
    assert [(r["rowkind"], r["k"]) for b in resumed for r in b.to_pylist()] == [("+I", 2)]

    # a following stream sees new commits and ends on request
    stream = table.stream(poll_interval=0.01)
    seen: list[int] = []

    def consume() -> None:
        for batch in stream:
            seen.extend(batch.column("k").to_pylist())
            if 3 in seen:
                stream.stop()

    worker = threading.Thread(target=consume)
    worker.start()
    table.append(pa.table({"k": [3], "v": [3]}, schema=SCHEMA))
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert 3 in seen


def test_full_snapshot_of_a_bucket_is_never_split(tmp_path: Path) -> None:
    table = _table(tmp_path, "none", bucket="1", **{"write-only": "true"})
    for value in range(3):
        table.append(pa.table({"k": [1, 2], "v": [value, value]}, schema=SCHEMA))
    from paimon_core.table import StreamScan

    scan = StreamScan(table)
    start = scan.starting_position()
    assert start.full
    end = scan.advance(start, max_files=1)
    rows = scan.plan(start, end)
    assert len(rows) == 1 and len(rows[0].files) == 3, "the bucket's three level-0 files merge together"


def test_abort_deletes_changelog_files(tmp_path: Path) -> None:
    table = _table(tmp_path, "input", bucket="1")
    writer = table.new_write()
    writer.write(pa.table({"k": [1], "v": [1]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    assert messages[0].changelog_files
    writer.abort(messages)
    assert not list(tmp_path.rglob("changelog-*"))


def _ids(stream: Iterator[pa.RecordBatch]) -> list[int]:
    return [r["k"] for b in stream for r in b.to_pylist()]
