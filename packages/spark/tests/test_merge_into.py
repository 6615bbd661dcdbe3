"""merge_into on Spark (local[2]): copy-on-write merges into append tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
import paimon_spark._commands._rowlevel as rowlevel_module
from paimon_core import Catalog
from paimon_core.errors import CommitConflictError, ConfigError
from paimon_spark.cli import build_parser, merge_arguments

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


def make_target(warehouse: str) -> Any:
    """db.t partitioned by p: ids 0-9 in p='a' (two files), ids 10-19 in p='b' (one file)."""
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options={"write-only": "true"})

    def rows(ids: range, p: str) -> pa.Table:
        return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)

    table.append(rows(range(0, 5), "a"))
    table.append(rows(range(5, 10), "a"))
    table.append(rows(range(10, 20), "b"))
    return table


def current(warehouse: str) -> dict[int, tuple[str, str]]:
    data = Catalog.open(warehouse).get_table("db.t").to_arrow()
    return {r["id"]: (r["v"], r["p"]) for r in data.to_pylist()}


def merge(spark: Any, warehouse: str, **arguments: Any) -> paimon_spark.MergeSummary:
    """merge_into db.t from the view S on t.id = S.id (unless the arguments say otherwise)."""
    defaults = {"target_table": "db.t", "source_table": "S", "merge_condition": "t.id = S.id"}
    return paimon_spark.merge_into(spark, warehouse=warehouse, **{**defaults, **arguments})


def live_files(warehouse: str) -> set[str]:
    return {e.file.file_name for e in Catalog.open(warehouse).get_table("db.t").live_entries()}


def on_disk(warehouse: str) -> set[str]:
    return {p.name for p in Path(warehouse).rglob("data-*.parquet")}


def source(spark: Any, rows: list[tuple[int, str, str]]) -> None:
    spark.createDataFrame(rows, "id long, v string, p string").createOrReplaceTempView("S")


def test_upsert_delete_insert_rewrites_only_the_touched_files(spark: Any, warehouse: str) -> None:
    table = make_target(warehouse)
    before = current(warehouse)
    untouched = {e.file.file_name for e in table.live_entries() if e.file.row_count == 10}  # p='b'
    source(spark, [(1, "new1", "a"), (3, "gone", "a"), (42, "new42", "b"), (43, "skip", "b")])
    summary = merge(
        spark,
        warehouse,
        target_alias="T",
        merge_condition="T.id = S.id",
        matched_upsert_condition="S.v <> 'gone'",
        matched_upsert_setting="v = S.v",
        matched_delete_condition="TRUE",
        not_matched_insert_condition="S.v <> 'skip'",
        not_matched_insert_values="*",
    )
    expected = dict(before)
    expected[1] = ("new1", "a")
    del expected[3]
    expected[42] = ("new42", "b")
    assert current(warehouse) == expected
    assert (summary.updated, summary.deleted, summary.inserted) == (1, 1, 1)
    snapshot = Catalog.open(warehouse).get_table("db.t").latest_snapshot()
    assert snapshot is not None and snapshot.id == summary.snapshot_id == 4
    assert snapshot.commit_kind.value == "OVERWRITE"
    # only the file holding ids 0-4 changed; the other p='a' file and p='b' stay as they were
    assert len(summary.rewritten_files) == 1
    assert untouched <= live_files(warehouse)
    assert summary.rewritten_files[0] not in live_files(warehouse)


def test_not_matched_by_source_upsert_and_delete(spark: Any, warehouse: str) -> None:
    make_target(warehouse)
    source(spark, [(i, "seen", "a") for i in range(0, 10)])
    summary = merge(
        spark,
        warehouse,
        not_matched_by_source_upsert_condition="t.id < 15",
        not_matched_by_source_upsert_setting="v = concat(t.v, '-orphan')",
        not_matched_by_source_delete_condition="TRUE",
    )
    got = current(warehouse)
    assert sorted(got) == list(range(0, 15))
    assert got[12] == ("v12-orphan", "b")
    assert got[3] == ("v3", "a")  # matched rows have no action: kept as they were
    assert (summary.updated, summary.deleted, summary.inserted) == (5, 5, 0)


def test_insert_only_merge_from_a_dataframe_appends(spark: Any, warehouse: str) -> None:
    make_target(warehouse)
    files = live_files(warehouse)
    frame = spark.createDataFrame([(5, "dup", "a"), (100, "x", "c")], "id long, v string, p string")
    summary = merge(
        spark,
        warehouse,
        source_table=frame,
        source_alias="src",
        merge_condition="t.id = src.id",
        not_matched_insert_values="src.id + 1, upper(src.v), src.p",
    )
    assert summary.inserted == 1 and summary.rewritten_files == ()
    assert current(warehouse)[101] == ("X", "c")
    assert files <= live_files(warehouse)  # nothing rewritten
    latest = Catalog.open(warehouse).get_table("db.t").latest_snapshot()
    assert latest is not None and latest.commit_kind.value == "APPEND"


def test_merge_into_an_empty_table_and_a_merge_that_changes_nothing(spark: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA)
    source(spark, [(1, "a", "x")])
    arguments = dict(
        not_matched_insert_values="*",
    )
    assert merge(spark, warehouse, **arguments).inserted == 1
    assert current(warehouse) == {1: ("a", "x")}
    again = merge(spark, warehouse, **arguments)  # the row matches now: nothing to insert
    assert again.snapshot_id is None
    assert len(Catalog.open(warehouse).get_table("db.t").snapshots()) == 1


def test_several_source_rows_for_one_changed_row_is_an_error(spark: Any, warehouse: str) -> None:
    make_target(warehouse)
    before, files = current(warehouse), on_disk(warehouse)
    source(spark, [(1, "x", "a"), (1, "y", "a")])
    with pytest.raises(paimon_spark.MergeCardinalityError, match="matched by 2 source rows"):
        merge(
            spark,
            warehouse,
            matched_upsert_setting="*",
        )
    assert current(warehouse) == before
    assert on_disk(warehouse) == files


def test_a_row_matched_twice_is_kept_once_or_is_an_error_when_a_match_changes_it(
    spark: Any, warehouse: str
) -> None:
    make_target(warehouse)
    before = current(warehouse)
    arguments = dict(
        matched_upsert_condition="S.v = 'change'",
        matched_upsert_setting="v = S.v",
    )
    # id 2 is matched twice and neither match changes it; id 4 (same file) changes: id 2 is written once
    source(spark, [(2, "same", "a"), (2, "same again", "a"), (4, "change", "a")])
    summary = merge(spark, warehouse, **arguments)
    assert summary.updated == 1
    assert current(warehouse) == {**before, 4: ("change", "a")}
    assert Catalog.open(warehouse).get_table("db.t").to_arrow().num_rows == 20
    # one of id 3's two matches changes it: ambiguous
    source(spark, [(3, "change", "a"), (3, "keep", "a")])
    with pytest.raises(paimon_spark.MergeCardinalityError, match="matched by 2 source rows"):
        merge(spark, warehouse, **arguments)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "at least one action"),
        ({"matched_upsert_condition": "S.v = 'x'"}, "needs matched_upsert_setting"),
        ({"matched_upsert_setting": "nope = S.v"}, "not columns of"),
        ({"matched_upsert_setting": "v"}, "expected 'column = expression'"),
        ({"not_matched_insert_values": "S.id, S.v"}, "has 2 values"),
        ({"not_matched_insert_condition": "TRUE"}, "needs not_matched_insert_values"),
        ({"not_matched_by_source_upsert_setting": "*"}, "cannot be"),
    ],
)
def test_bad_arguments_are_config_errors(
    spark: Any, warehouse: str, arguments: dict[str, str], message: str
) -> None:
    make_target(warehouse)
    source(spark, [(1, "x", "a")])
    with pytest.raises(ConfigError, match=message):
        merge(
            spark,
            warehouse,
            **arguments,
        )
    assert len(Catalog.open(warehouse).get_table("db.t").snapshots()) == 3


def test_split_top_level_keeps_nested_commas() -> None:
    from paimon_spark._commands._rowlevel import split_top_level

    assert split_top_level("a = concat(S.x, ','), b = `c,d`, e = 'f,(g'") == [
        "a = concat(S.x, ',')",
        "b = `c,d`",
        "e = 'f,(g'",
    ]


def test_a_concurrent_overwrite_of_a_rewritten_file_fails_the_merge_and_it_leaves_nothing(
    spark: Any, warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_target(warehouse)
    before_files = on_disk(warehouse)
    replacement = pa.table({"id": [7], "v": ["other writer"], "p": ["a"]}, schema=SCHEMA)
    original = rowlevel_module._deleted_messages

    def overwrite_first(*args: Any) -> Any:
        # another writer replaces partition a after the merge read it and before the merge commits
        Catalog.open(warehouse).get_table("db.t").overwrite(replacement, partition={"p": "a"})
        return original(*args)

    monkeypatch.setattr(rowlevel_module, "_deleted_messages", overwrite_first)
    source(spark, [(1, "new1", "a")])
    with pytest.raises(CommitConflictError):
        merge(
            spark,
            warehouse,
            matched_upsert_setting="v = S.v",
        )
    got = current(warehouse)
    assert got[7] == ("other writer", "a") and 1 not in got and len(got) == 11
    assert (on_disk(warehouse) - before_files) <= live_files(warehouse)  # the merge's files are gone


def test_cli_action_flags_map_to_merge_into_arguments() -> None:
    parser = build_parser()
    common = [
        "merge_into",
        "--warehouse",
        "/wh",
        "--table",
        "db.t",
        "--source_table",
        "S",
        "--on",
        "T.id = S.id",
    ]
    args = parser.parse_args(
        [*common, "--merge_actions", "matched-upsert,matched-delete", "--matched_upsert_set", "v = S.v",
         "--not_matched_insert_values", "*"]
    )  # fmt: skip
    # not-matched-insert is not among the actions: its values are ignored; a delete without condition: TRUE
    assert merge_arguments(args) == {"matched_upsert_setting": "v = S.v", "matched_delete_condition": "TRUE"}
    with pytest.raises(SystemExit, match="needs --not_matched_insert_values"):
        merge_arguments(parser.parse_args([*common, "--merge_actions", "not-matched-insert"]))
    with pytest.raises(SystemExit, match="--merge_actions takes"):
        merge_arguments(parser.parse_args([*common, "--merge_actions", "upsert"]))


def test_cli_merge_into_with_plain_python(connect_url: str, warehouse: str) -> None:
    """The action from a plain Python process, as a Spark Connect client of the tests' own Spark (a JVM of
    its own would cost seconds; the CLI's own ``--master`` session is test_compact_spark's CLI test)."""
    make_target(warehouse)
    changes = str(Path(warehouse).parent / "changes.json")
    Path(changes).write_text('{"id": 2, "v": "cli"}\n{"id": 50, "v": "new"}\n')
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    completed = subprocess.run(
        [
            sys.executable, "-m", "paimon_spark.cli", "merge_into", "--remote", connect_url,
            "--warehouse", warehouse, "--database", "db", "--table", "t", "--target_as", "T",
            "--source_sql", f"CREATE TEMPORARY VIEW S AS SELECT id, v, 'z' AS p FROM json.`{changes}`",
            "--source_table", "S", "--on", "T.id = S.id",
            "--merge_actions", "matched-upsert,not-matched-insert",
            "--matched_upsert_set", "v = S.v", "--not_matched_insert_values", "*",
        ],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "db.t: snapshot 4, 1 updated, 0 deleted, 1 inserted, 1 files rewritten" in completed.stdout
    got = current(warehouse)
    assert got[2] == ("cli", "a") and got[50] == ("new", "z") and len(got) == 21


# --- primary-key tables: row-kind writes -----------------------------------------------------------------------

PK_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("w", pa.string()), ("p", pa.string())])


def make_pk_target(warehouse: str, **options: str) -> Any:
    """db.t with primary key (id, p), partitioned by p: ids 0-9 in p='a', ids 10-19 in p='b'."""
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table(
        "db.t", PK_SCHEMA, partition_keys=["p"], primary_keys=["id", "p"], options={"bucket": "2", **options}
    )
    ids = list(range(20))
    table.append(
        pa.table(
            {
                "id": ids,
                "v": [f"v{i}" for i in ids],
                "w": [f"w{i}" for i in ids],
                "p": ["a"] * 10 + ["b"] * 10,
            },
            schema=PK_SCHEMA,
        )
    )
    return table


def pk_rows(warehouse: str, **read: Any) -> dict[tuple[int, str], tuple[str | None, str | None]]:
    data = Catalog.open(warehouse).get_table("db.t").to_arrow(**read)
    return {(r["id"], r["p"]): (r["v"], r["w"]) for r in data.to_pylist()}


def new_snapshot_kinds(warehouse: str, base: int) -> list[str]:
    return [s.commit_kind.value for s in Catalog.open(warehouse).get_table("db.t").snapshots() if s.id > base]


def pk_source(spark: Any, rows: list[tuple[int, str | None, str]]) -> None:
    spark.createDataFrame(rows, "id long, v string, p string").createOrReplaceTempView("S")


PK_MERGE = dict(
    target_alias="T",
    merge_condition="T.id = S.id AND T.p = S.p",
    matched_upsert_condition="S.v IS NULL OR S.v <> 'gone'",
    matched_upsert_setting="v = S.v",
    matched_delete_condition="TRUE",
    not_matched_insert_condition="S.v <> 'skip'",
    not_matched_insert_values="S.id, S.v, 'inserted', S.p",
)


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_primary_key_merge_writes_upserts_and_deletes_in_one_append_snapshot(
    spark: Any, warehouse: str, engine: str
) -> None:
    options = {"merge-engine": engine, "write-only": "true"}
    if engine == "partial-update":
        options["partial-update.remove-record-on-delete"] = "true"
    table = make_pk_target(warehouse, **options)
    base, before, files = table.latest_snapshot().id, pk_rows(warehouse), live_files(warehouse)
    pk_source(
        spark, [(1, "new1", "a"), (2, None, "a"), (3, "gone", "a"), (42, "new42", "b"), (43, "skip", "b")]
    )
    summary = merge(spark, warehouse, **PK_MERGE)
    expected = dict(before)
    expected[(1, "a")] = ("new1", "w1")
    # the whole row is written: a null from the source clears v, unless partial-update keeps the old value
    expected[(2, "a")] = (None if engine == "deduplicate" else "v2", "w2")
    del expected[(3, "a")]
    expected[(42, "b")] = ("new42", "inserted")
    assert pk_rows(warehouse) == expected
    assert (summary.updated, summary.deleted, summary.inserted) == (2, 1, 1)
    assert summary.snapshot_id == base + 1 and summary.rewritten_files == ()
    assert new_snapshot_kinds(warehouse, base) == ["APPEND"]
    assert files <= live_files(warehouse)  # nothing rewritten, nothing removed


def test_primary_key_merge_changelog_has_the_row_kinds_and_whole_rows(spark: Any, warehouse: str) -> None:
    from paimon_core.table import AuditLogTable

    table = make_pk_target(
        warehouse,
        **{
            "merge-engine": "partial-update",
            "partial-update.remove-record-on-delete": "true",
            "changelog-producer": "input",
        },
    )
    base = table.latest_snapshot().id
    pk_source(spark, [(1, "new1", "a"), (3, "gone", "a"), (42, "new42", "b")])
    summary = merge(spark, warehouse, **PK_MERGE)
    assert summary.snapshot_id is not None
    changes = (
        Catalog.open(warehouse)
        .get_table("db.t")
        .copy({"incremental-between": f"{base},{summary.snapshot_id}"})
    )
    got = sorted(AuditLogTable(changes).to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"rowkind": "+U", "id": 1, "v": "new1", "w": "w1", "p": "a"},  # w from the target row: the whole row
        {"rowkind": "-D", "id": 3, "v": "v3", "w": "w3", "p": "a"},  # the deleted row as it was read
        {"rowkind": "+I", "id": 42, "v": "new42", "w": "inserted", "p": "b"},
    ]


@pytest.mark.parametrize("bucket", ["3", "-1"])
def test_each_bucket_of_a_primary_key_merge_has_one_writer(spark: Any, warehouse: str, bucket: str) -> None:
    table = make_pk_target(warehouse, bucket=bucket, **{"write-only": "true"})
    base_entries = {e.file.file_name for e in table.live_entries()}
    frame = spark.range(300).selectExpr("id", "concat('n', id) AS v", "IF(id % 2 = 0, 'a', 'b') AS p")
    summary = merge(
        spark,
        warehouse,
        source_table=frame.repartition(4),  # rows of one bucket arrive at several tasks
        merge_condition="t.id = S.id AND t.p = S.p",
        matched_upsert_setting="v = S.v",
        not_matched_insert_values="S.id, S.v, NULL, S.p",
    )
    added: dict[tuple[bytes, int], list[str]] = {}
    for entry in Catalog.open(warehouse).get_table("db.t").live_entries(summary.snapshot_id):
        if entry.file.file_name not in base_entries:
            added.setdefault((entry.partition, entry.bucket), []).append(entry.file.file_name)
    assert added and all(len(names) == 1 for names in added.values()), added
    rows = pk_rows(warehouse)
    assert len(rows) == 300 + 10  # ids 0-9 (p='a') and 10-19 (p='b'): the source matched half of them
    assert (
        rows[(4, "a")] == ("n4", "w4") and rows[(5, "a")] == ("v5", "w5") and rows[(5, "b")] == ("n5", None)
    )


@pytest.mark.parametrize("primary_key", [True, False])
def test_a_merge_reads_only_the_partitions_the_source_touches(
    spark: Any, warehouse: str, primary_key: bool
) -> None:
    if primary_key:
        make_pk_target(warehouse, **{"write-only": "true"})
    else:
        make_target(warehouse)
    source(spark, [(1, "new1", "a"), (2, "new2", "a")])
    # p='b' loses its data files: any read of that partition fails
    gone = [p for p in Path(warehouse).rglob("*.parquet") if "p=b" in p.parts]
    assert gone
    for path in gone:
        path.unlink()
    arguments = dict(merge_condition="t.id = S.id AND t.p = S.p", matched_upsert_setting="v = S.v")
    summary = merge(spark, warehouse, **arguments)
    assert summary.updated == 2
    rows = Catalog.open(warehouse).get_table("db.t").to_arrow(filter=[("p", "=", "a")]).to_pylist()
    assert {r["id"]: r["v"] for r in rows if r["id"] < 3} == {0: "v0", 1: "new1", 2: "new2"}
    # without the partition in the condition, or with an action on unmatched target rows, p='b' is read
    for more in (
        {"merge_condition": "t.id = S.id"},
        {"not_matched_by_source_delete_condition": "t.id = 15"},
    ):
        with pytest.raises(Exception, match="missing from storage"):
            merge(spark, warehouse, **{**arguments, **more})


def test_primary_key_merge_errors(spark: Any, warehouse: str) -> None:
    make_pk_target(warehouse)
    before = pk_rows(warehouse)
    pk_source(spark, [(1, "x", "a"), (1, "y", "a")])
    with pytest.raises(
        paimon_spark.MergeCardinalityError, match=r"key \{'id': 1, 'p': 'a'\}.* 2 source rows"
    ):
        merge(spark, warehouse, merge_condition="t.id = S.id AND t.p = S.p", matched_upsert_setting="v = S.v")
    pk_source(spark, [(1, "x", "a")])
    with pytest.raises(ConfigError, match="changes its primary key"):
        merge(spark, warehouse, merge_condition="t.id = S.id", matched_upsert_setting="id = S.id + 100")
    with pytest.raises(ConfigError, match="cannot update its primary-key column 'p'"):
        merge(spark, warehouse, not_matched_by_source_upsert_setting="p = 'z'")
    assert pk_rows(warehouse) == before
    assert len(Catalog.open(warehouse).get_table("db.t").snapshots()) == 1
    # an assignment that keeps the key is no change of it
    summary = merge(
        spark, warehouse, merge_condition="t.id = S.id", matched_upsert_setting="id = S.id, v = S.v"
    )
    assert summary.updated == 1 and pk_rows(warehouse)[(1, "a")] == ("x", "w1")


@pytest.mark.parametrize(
    ("options", "arguments", "message"),
    [
        ({"merge-engine": "aggregation"}, {"not_matched_insert_values": "*"}, "merge engine aggregation"),
        ({"merge-engine": "first-row"}, {"not_matched_insert_values": "*"}, "merge engine first-row"),
        ({"merge-engine": "partial-update"}, {"matched_delete_condition": "TRUE"}, "remove-record-on-delete"),
        ({"ignore-delete": "true"}, {"matched_delete_condition": "TRUE"}, "ignore-delete"),
    ],
)
def test_primary_key_merge_engines_that_cannot_take_the_merge(
    spark: Any, warehouse: str, options: dict[str, str], arguments: dict[str, str], message: str
) -> None:
    snapshots = len(make_pk_target(warehouse, **options).snapshots())  # first-row compacts at once
    pk_source(spark, [(1, "x", "a")])
    with pytest.raises(ConfigError, match=message):
        merge(spark, warehouse, **arguments)
    assert len(Catalog.open(warehouse).get_table("db.t").snapshots()) == snapshots


def test_conditions_that_prune_partitions() -> None:
    from paimon_spark._read._prune import conjuncts, equated_expressions, is_column

    terms = conjuncts("(T.id = S.id) AND `T`.`p` = upper(S.p) and S.q = T.q AND T.r <=> S.r AND T.s >= S.s")
    assert terms == ["T.id = S.id", "`T`.`p` = upper(S.p)", "S.q = T.q", "T.r <=> S.r", "T.s >= S.s"]
    assert equated_expressions(terms, "T", "p", qualified=True) == ["upper(S.p)"]
    assert equated_expressions(terms, "t", "q", qualified=True) == ["S.q"]
    assert equated_expressions(terms, "T", "r", qualified=True) == []  # null-safe equality: not pruned
    assert equated_expressions(terms, "T", "s", qualified=True) == []
    assert equated_expressions(["p = 'x'"], "T", "p", qualified=True) == []  # a bare name may be the source's
    assert equated_expressions(["p = 'x'"], "T", "p", qualified=False) == ["'x'"]
    assert equated_expressions(["T.p = 'a=b'"], "T", "p", qualified=True) == ["'a=b'"]
    for loose in (
        "T.p = S.p OR T.id = S.id",
        "T.p = S.p AND x BETWEEN 1 AND 2",
        "CASE WHEN a AND b THEN 1 END = 1",
    ):
        assert conjuncts(loose) is None
    terms = conjuncts("(T.p = S.p OR x) AND T.id = S.id AND (T.q = NOT S.q) AND T.r = S.r IS NULL")
    assert terms == ["T.p = S.p OR x", "T.id = S.id", "T.q = NOT S.q", "T.r = S.r IS NULL"]
    assert [equated_expressions(terms, "T", c, qualified=True) for c in "pqr"] == [[], [], []]
    assert (
        is_column(" `t`.`id` ", "t", "id")
        and is_column("ID", "t", "id")
        and not is_column("id + 0", "t", "id")
    )
