"""Primary-key tables end to end: create, upsert, delete, row kinds, merge engines, compaction, files."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog, ConfigError, SchemaError
from paimon_core.binary_row import deserialize_row
from paimon_core.compact import CompactJob, compact_table
from paimon_core.errors import MergeError
from paimon_core.schema_change import SchemaChange
from paimon_core.table import KeyValueTableWrite, Table
from paimon_core.types import BigIntType

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string()),
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("score", pa.int64()),
    ]
)


def _create(catalog: Catalog, name: str = "db.pk", **options: str) -> Table:
    merged = {"bucket": "2", **options}
    return catalog.create_table(
        name, SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=merged
    )


def _rows(table: Table, **kwargs: Any) -> list[tuple[Any, ...]]:
    data = table.to_arrow(**kwargs)
    return sorted(tuple(r.values()) for r in data.to_pylist())


def _data(rows: list[tuple[Any, ...]], schema: pa.Schema = SCHEMA) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema=schema)


def test_upserts_and_deletes_read_merged(catalog: Catalog) -> None:
    table = _create(catalog)
    table.append(_data([("d1", 1, "a", 10), ("d1", 2, "b", 20), ("d2", 1, "c", 30)]))
    table.append(_data([("d1", 1, "a2", 11), ("d2", 3, "e", 50)]))
    assert _rows(table) == [("d1", 1, "a2", 11), ("d1", 2, "b", 20), ("d2", 1, "c", 30), ("d2", 3, "e", 50)]
    table.delete(pa.table({"dt": ["d1", "d2"], "id": [2, 9]}))
    assert _rows(table) == [("d1", 1, "a2", 11), ("d2", 1, "c", 30), ("d2", 3, "e", 50)]
    # time travel still sees the older versions
    assert _rows(table, snapshot_id=1) == [("d1", 1, "a", 10), ("d1", 2, "b", 20), ("d2", 1, "c", 30)]


def test_the_same_key_twice_in_one_write_keeps_the_later(catalog: Catalog) -> None:
    table = _create(catalog)
    table.append(_data([("d1", 1, "first", 1), ("d1", 1, "second", 2)]))
    assert _rows(table) == [("d1", 1, "second", 2)]


def test_files_are_laid_out_as_java_writes_them(catalog: Catalog) -> None:
    table = _create(catalog, bucket="1")
    table.append(_data([("d1", 3, "c", 3), ("d1", 1, "a", 1), ("d1", 2, "b", 2)]))
    table.delete(pa.table({"dt": ["d1"], "id": [2]}))
    entries = sorted(table.live_entries(), key=lambda e: e.file.min_sequence_number)
    first, second = (e.file for e in entries)
    path = f"{table.bucket_dir(entries[0].partition, 0)}/{first.file_name}"
    data = pq.read_table(path, partitioning=None)  # a file, not a dataset: pyarrow 19 read dt= as a column
    assert data.column_names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "id", "name", "score"]
    assert data.column("_KEY_id").to_pylist() == [1, 2, 3]  # sorted by key
    assert data.column("_SEQUENCE_NUMBER").to_pylist() == [1, 2, 0]  # numbered in arrival order
    assert data.column("_VALUE_KIND").to_pylist() == [0, 0, 0]
    assert pq.read_schema(path).field("_KEY_id").metadata == {
        b"PARQUET:field_id": str(1073741823 + 1).encode()
    }
    assert (first.min_sequence_number, first.max_sequence_number, first.level) == (0, 2, 0)
    assert deserialize_row(first.min_key, [BigIntType(nullable=False)]) == [1]
    assert deserialize_row(first.max_key, [BigIntType(nullable=False)]) == [3]
    assert first.delete_row_count == 0
    # the bucket's sequence numbers continue, and the delete is a -D record
    assert (second.min_sequence_number, second.delete_row_count, second.row_count) == (3, 1, 1)
    assert entries[0].total_buckets == 1


def test_row_kinds_come_from_the_rowkind_field(catalog: Catalog) -> None:
    schema = SCHEMA.append(pa.field("op", pa.string()))
    table = catalog.create_table(
        "db.kinds", schema, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"}
    )
    table.append(_data([("d", 1, "a", 1, "+I"), ("d", 2, "b", 2, "+I"), ("d", 3, "c", 3, "+I")], schema))
    table.append(_data([("d", 1, "a", 1, "-U"), ("d", 1, "A", 9, "+U"), ("d", 2, None, None, "-d")], schema))
    assert [r[:4] for r in _rows(table)] == [("d", 1, "A", 9), ("d", 3, "c", 3)]
    snapshots = len(table.snapshots())
    with pytest.raises(SchemaError, match="row kind '\\+X'"):
        table.append(_data([("d", 4, "x", 4, "+X")], schema))
    assert len(table.snapshots()) == snapshots  # nothing written


def test_bad_input_is_refused_before_anything_is_written(catalog: Catalog) -> None:
    table = _create(catalog)
    with pytest.raises(SchemaError, match="NOT NULL"):
        table.append(_data([("d1", None, "a", 1)]))
    with pytest.raises(SchemaError, match="primary-key columns"):
        table.delete(pa.table({"dt": ["d1"]}))
    assert table.snapshots() == []
    with pytest.raises(ConfigError, match="no primary key"):
        catalog.create_table("db.append", SCHEMA).delete(pa.table({"id": [1]}))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"options": {"bucket-key": "id"}}, ConfigError, "bucket-key"),
        ({"options": {"bucket": "0"}}, ConfigError, "bucket"),
        ({"primary_keys": ["id"], "partition_keys": ["dt"]}, SchemaError, "cross-partition"),
        ({"primary_keys": ["dt"], "partition_keys": ["dt"]}, SchemaError, "partition"),
        ({"options": {"bucket": "1", "sequence.field": "nope"}}, SchemaError, "nope"),
        ({"options": {"bucket": "1", "rowkind.field": "score"}}, SchemaError, "string column"),
        ({"options": {"bucket": "1", "merge-engine": "nonsense"}}, ConfigError, "merge-engine"),
        (
            {"options": {"bucket": "1", "merge-engine": "first-row", "changelog-producer": "input"}},
            ConfigError,
            "first-row merge engine only supports",
        ),
        (
            {"options": {"deletion-vectors.enabled": "true", "merge-engine": "first-row"}},
            ConfigError,
            "deletion vectors",
        ),
        (
            {"options": {"merge-engine": "aggregation", "fields.score.aggregate-function": "count"}},
            ConfigError,
            "Paimon removed it",
        ),
        (
            {
                "options": {
                    "bucket": "1",
                    "merge-engine": "aggregation",
                    "fields.name.aggregate-function": "sum",
                }
            },
            ConfigError,
            "name",
        ),
    ],
)
def test_invalid_primary_key_tables_are_refused(
    catalog: Catalog, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    args: dict[str, Any] = {
        "primary_keys": ["dt", "id"],
        "partition_keys": ["dt"],
        "options": {"bucket": "1"},
    }
    args.update(kwargs)
    with pytest.raises(error, match=match):
        catalog.create_table("db.bad", SCHEMA, **args)
    assert not catalog.table_exists("db.bad")


def test_reserved_column_names_are_refused(catalog: Catalog) -> None:
    schema = SCHEMA.append(pa.field("_VALUE_KIND", pa.int8()))
    with pytest.raises(SchemaError, match="reserved"):
        catalog.create_table("db.r", schema, primary_keys=["id"], options={"bucket": "1"})


def test_merge_engine_cannot_change(catalog: Catalog) -> None:
    _create(catalog)
    with pytest.raises(ConfigError, match="merge-engine"):
        catalog.alter_table("db.pk", [SchemaChange.set_option("merge-engine", "first-row")])


def test_partial_update_writers_fill_their_own_columns(catalog: Catalog) -> None:
    table = _create(catalog, **{"merge-engine": "partial-update", "write-only": "true"})
    names = catalog.get_table("db.pk")
    scores = catalog.get_table("db.pk")
    names.append(_data([("d1", 1, "a", None), ("d1", 2, "b", None)]))
    scores.append(_data([("d1", 1, None, 10), ("d1", 3, None, 30)]))
    assert _rows(table) == [("d1", 1, "a", 10), ("d1", 2, "b", None), ("d1", 3, None, 30)]
    compact_table(table)
    assert _rows(table) == [("d1", 1, "a", 10), ("d1", 2, "b", None), ("d1", 3, None, 30)]
    assert {e.file.level for e in table.live_entries()} == {5}


def test_aggregation_and_first_row(catalog: Catalog) -> None:
    agg = _create(
        catalog, "db.agg", **{"merge-engine": "aggregation", "fields.score.aggregate-function": "sum"}
    )
    agg.append(_data([("d1", 1, "a", 1), ("d1", 1, "b", 2)]))
    agg.append(_data([("d1", 1, None, 4)]))
    assert _rows(agg) == [("d1", 1, "b", 7)]  # name: last non-null; score: sum
    first = _create(catalog, "db.first", **{"merge-engine": "first-row"})
    first.append(_data([("d1", 1, "a", 1)]))
    first.append(_data([("d1", 1, "b", 2), ("d1", 2, "c", 3)]))
    assert _rows(first) == [("d1", 1, "a", 1), ("d1", 2, "c", 3)]


def test_sequence_field_orders_records(catalog: Catalog) -> None:
    table = _create(catalog, **{"sequence.field": "score"})
    table.append(_data([("d1", 1, "new", 5)]))
    table.append(_data([("d1", 1, "old", 3)]))  # arrives later, but an older version
    assert _rows(table) == [("d1", 1, "new", 5)]


def test_value_filters_apply_after_the_merge(catalog: Catalog) -> None:
    table = _create(catalog, **{"merge-engine": "partial-update"})
    table.append(_data([("d1", 1, "a", 1)]))
    table.append(_data([("d1", 1, None, 50)]))
    # neither file alone holds a row with name='a' and score=50
    assert _rows(table, filter=[("name", "=", "a"), ("score", "=", 50)]) == [("d1", 1, "a", 50)]
    assert _rows(table, filter=[("score", "=", 1)]) == []  # the old value no longer matches
    assert table.to_arrow(columns=["score"]).to_pylist() == [{"score": 50}]


def test_overwrite_replaces_the_partition(catalog: Catalog) -> None:
    table = _create(catalog)
    table.append(_data([("d1", 1, "a", 1), ("d2", 1, "b", 2)]))
    table.overwrite(_data([("d1", 5, "z", 9)]))
    assert _rows(table) == [("d1", 5, "z", 9), ("d2", 1, "b", 2)]


def test_inline_compaction_keeps_the_tree_shallow(catalog: Catalog) -> None:
    table = _create(catalog, bucket="1", **{"num-sorted-run.compaction-trigger": "3"})
    expected: dict[int, tuple[Any, ...]] = {}
    for step in range(12):
        rows = [("d1", (step * 7 + i) % 10, f"v{step}", step) for i in range(3)]
        for row in rows:
            expected[row[1]] = row
        table.append(_data(rows))
        runs = _sorted_runs(table)
        assert runs <= 3 + 1, f"step {step}: {runs} sorted runs"
    assert _rows(table) == sorted(expected.values())
    assert any(e.file.level > 0 for e in table.live_entries())
    kinds = [s.commit_kind.name for s in table.snapshots()]
    assert "COMPACT" in kinds


def _sorted_runs(table: Table) -> int:
    files = [e.file for e in table.live_entries()]
    return sum(1 for f in files if f.level == 0) + len({f.level for f in files if f.level > 0})


def test_write_only_writers_leave_compaction_to_the_job(catalog: Catalog) -> None:
    table = _create(catalog, bucket="1", **{"write-only": "true", "num-sorted-run.compaction-trigger": "2"})
    for step in range(5):
        table.append(_data([("d1", 1, f"v{step}", step)]))
    assert {e.file.level for e in table.live_entries()} == {0}
    assert len(table.live_entries()) == 5
    compact_table(table)
    files = [e.file for e in table.live_entries()]
    assert len(files) == 1 and files[0].level == 2 and files[0].file_source == 1  # num-levels = trigger + 1
    assert _rows(table) == [("d1", 1, "v4", 4)]
    compact_table(table)  # nothing left to do
    assert len(table.snapshots()) == 6


# --- a model of Paimon's semantics, against random histories -------------------------------------------

ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.score.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row", "ignore-delete": "true"},
}


def _model_apply(engine: str, state: dict[tuple[str, int], list[Any]], op: str, rows: list[Any]) -> None:
    for dt, key, name, score in rows:
        current = state.get((dt, key))
        if op == "delete":
            if engine == "deduplicate":
                state.pop((dt, key), None)
            elif engine == "aggregation" and current is not None:
                current[3] = None if current[3] is None else current[3] - (score or 0)
            continue
        if current is None or engine == "deduplicate":
            state[(dt, key)] = [dt, key, name, score]
        elif engine == "partial-update":
            current[2] = name if name is not None else current[2]
            current[3] = score if score is not None else current[3]
        elif engine == "aggregation":
            current[2] = name if name is not None else current[2]
            if score is not None:
                current[3] = score if current[3] is None else current[3] + score


_rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(["d1", "d2"]),
        st.integers(0, 6),
        st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
        st.one_of(st.none(), st.integers(-5, 5)),
    ),
    min_size=1,
    max_size=6,
)
_op: st.SearchStrategy[tuple[str, list[Any]]] = st.one_of(
    st.tuples(st.just("upsert"), _rows_strategy),
    st.tuples(st.just("delete"), _rows_strategy),
    st.tuples(st.just("compact"), st.just([])),
)


# bucket = -1 with 3 keys per bucket: keys spread over several dynamic buckets of each partition
BUCKETS = {"fixed": {"bucket": "2"}, "dynamic": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}}


@pytest.mark.parametrize("buckets", sorted(BUCKETS))
@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=8))
def test_random_histories_read_what_the_model_says(
    tmp_path_factory: pytest.TempPathFactory, engine: str, buckets: str, ops: list[tuple[str, list[Any]]]
) -> None:
    catalog = Catalog.open(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    options = {"num-sorted-run.compaction-trigger": "2", **BUCKETS[buckets], **ENGINES[engine]}
    table = _create(catalog, **options)
    state: dict[tuple[str, int], list[Any]] = {}
    for op, rows in ops:
        if op == "compact":
            compact_table(table)
        elif op == "upsert":
            table.append(_data(rows))
            _model_apply(engine, state, op, rows)
        else:
            if engine == "aggregation":
                continue  # retractions of sums are covered by the merge-engine tests
            table.delete(_data(rows))
            _model_apply(engine, state, op, rows)
        assert _rows(table) == sorted(tuple(v) for v in state.values())


def test_first_row_compaction_keeps_each_key_on_one_level(catalog: Catalog) -> None:
    table = _create(catalog, bucket="1", **{"merge-engine": "first-row"})
    table.append(_data([("d1", k, f"old{k}", k) for k in range(2000)]))
    assert {e.file.level for e in table.live_entries()} == {5}  # level 0 is forced up at every commit
    table.append(_data([("d1", 5, "new", 0), ("d1", 5000, "new", 0)]))
    # the small level-0 run goes to level 4 (not merged with the large top run); key 5 is already on
    # level 5, so the lookup drops it: Java reads levels above 0 without merging them
    levels = {e.file.level: e.file for e in table.live_entries()}
    assert sorted(levels) == [4, 5] and levels[4].row_count == 1
    rows = _rows(table)
    assert ("d1", 5, "old5", 5) in rows and ("d1", 5000, "new", 0) in rows and len(rows) == 2001


_FIRST_ROW_WRITES = st.lists(
    st.tuples(
        st.sampled_from(["write", "delete", "rowkind"]),
        st.lists(
            st.tuples(st.integers(0, 6), st.sampled_from(["+I", "+U", "-U", "-D"])), min_size=1, max_size=5
        ),
    ),
    min_size=1,
    max_size=5,
)


@pytest.mark.parametrize("ignore", [None, "ignore-delete", "first-row.ignore-delete"])
@pytest.mark.parametrize("write_only", [False, True])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=_FIRST_ROW_WRITES)
def test_first_row_refuses_retractions_at_every_writer_unless_told_to_ignore_them(
    tmp_path_factory: pytest.TempPathFactory,
    ignore: str | None,
    write_only: bool,
    writes: list[tuple[str, list[tuple[int, str]]]],
) -> None:
    # Java refuses a -U/-D on a first-row table (FirstRowMergeFunction) unless ignore-delete drops it;
    # it was accepted and then dropped unseen by the writer's compaction
    catalog = Catalog.open(str(tmp_path_factory.mktemp("wh")), create=True)
    catalog.create_database("db")
    options = {"merge-engine": "first-row", "rowkind.field": "name", "write-only": str(write_only).lower()}
    if ignore is not None:
        options[ignore] = "true"
    table = _create(catalog, bucket="1", **options)
    first: dict[int, tuple[Any, ...]] = {}
    for number, (door, records) in enumerate(writes):
        kinds = ["-D" for _ in records] if door == "delete" else [kind for _, kind in records]
        rows = [("d1", key, kind, number) for key, kind in zip([k for k, _ in records], kinds, strict=True)]
        retracts = any(kind in ("-U", "-D") for kind in kinds)
        snapshot = table.snapshot_manager.latest_id()
        try:
            if door == "delete":
                table.delete(_data(rows))
            elif door == "rowkind":
                table.append(_data(rows))
            else:
                writer = table.new_write()
                assert isinstance(writer, KeyValueTableWrite)
                for row in rows:
                    writer.write(_data([row]), kind={"+I": 0, "+U": 2, "-U": 1, "-D": 3}[row[2]])
                table.new_commit().commit(writer.prepare_commit())
                writer.close()
        except MergeError as refused:
            assert ignore is None and retracts, refused
            assert "ignore-delete" in str(refused)
            assert table.snapshot_manager.latest_id() == snapshot  # nothing committed
            continue
        assert ignore is not None or not retracts
        for key, kind in zip([k for k, _ in records], kinds, strict=True):
            if kind in ("+I", "+U"):
                first.setdefault(key, ("d1", key, kind, number))
    compact_table(table)  # write-only tables show level 0 once compacted
    assert _rows(table) == sorted(first.values())


@pytest.mark.parametrize("held", [True, False])
def test_first_row_compaction_refuses_a_stored_retraction(catalog: Catalog, held: bool) -> None:
    # files another writer stored (Java's write-only writers keep -D records for the compaction to refuse)
    table = _create(catalog, bucket="1", **{"merge-engine": "first-row", "write-only": "true"})
    table.append(_data([("d1", 1, "a", 1)]))
    compact_table(table)
    writer = table.new_write()
    assert isinstance(writer, KeyValueTableWrite)
    writer._refuse_retractions = False  # stands for such a writer
    writer.delete(_data([("d1", 1 if held else 2, None, None)]))
    table.new_commit().commit(writer.prepare_commit())
    writer.close()
    with pytest.raises(MergeError, match="ignore-delete"):
        compact_table(table)
    assert _rows(table) == [("d1", 1, "a", 1)]
    compact_table(table.copy({"ignore-delete": "true"}))  # dropped, as asked
    assert _rows(table) == [("d1", 1, "a", 1)]


def test_first_row_level_zero_is_read_only_after_compaction(catalog: Catalog) -> None:
    table = _create(catalog, bucket="1", **{"merge-engine": "first-row", "write-only": "true"})
    table.append(_data([("d1", 1, "a", 1)]))
    assert _rows(table) == []  # as in Java: batch reads of first-row tables skip level 0
    compact_table(table)
    assert _rows(table) == [("d1", 1, "a", 1)]


def test_a_key_with_one_record_keeps_it_unmerged(catalog: Catalog) -> None:
    # Java's reducer wrapper: a lone -D stays a retraction (no row), it is not aggregated into one
    table = _create(
        catalog, bucket="1", **{"merge-engine": "aggregation", "fields.score.aggregate-function": "sum"}
    )
    table.delete(_data([("d1", 9, "x", 90)]))
    table.append(_data([("d1", 1, "a", 1)]))
    assert _rows(table) == [("d1", 1, "a", 1)]
    compact_table(table)
    assert _rows(table) == [("d1", 1, "a", 1)]
    assert sum(e.file.row_count for e in table.live_entries()) == 1  # the -D is dropped at the top level


def test_a_compaction_that_loses_a_race_loses_and_duplicates_nothing(catalog: Catalog) -> None:
    table = _create(catalog, bucket="1", **{"write-only": "true"})
    for round_ in range(3):
        table.append(_data([("d1", k, f"r{round_}", k) for k in range(5)]))
    expected = _rows(table)
    first, second = CompactJob(table), CompactJob(table)
    first_out = first.execute(first.plan())
    second_out = second.execute(second.plan())  # planned on the same snapshot: the same inputs
    assert first.commit(first_out)[0]
    created, conflicted = second.commit(second_out)
    assert created == [] and conflicted
    assert _rows(table) == expected
    live = {e.file.file_name for e in table.live_entries()}
    on_disk = {i.name for i in table.storage.list_dir(table.bucket_dir(table.live_entries()[0].partition, 0))}
    assert on_disk == live | {
        f.file_name for m in first_out for f in m.compact_before
    }  # loser's outputs gone


def test_an_inline_compaction_that_loses_keeps_the_written_rows(catalog: Catalog) -> None:
    table = _create(catalog, bucket="1", **{"num-sorted-run.compaction-trigger": "2"})
    table.append(_data([("d1", 1, "a", 1)]))
    write = table.new_write()
    write.write(_data([("d1", 1, "b", 2), ("d1", 2, "c", 3)]))
    messages = write.prepare_commit()  # flushes and compacts with the first file as input
    assert any(m.compact_before for m in messages)
    compact_table(table)  # a compaction job rewrites that input first
    table.new_commit().commit(messages)
    assert _rows(table) == [("d1", 1, "b", 2), ("d1", 2, "c", 3)]
