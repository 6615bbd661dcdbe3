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
import paimon_spark._merge as merge_module
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
    rows = lambda ids, p: pa.table(  # noqa: E731
        {"id": list(ids), "v": [f"v{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA
    )
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
    assert Catalog.open(warehouse).get_table("db.t").latest_snapshot().commit_kind.value == "APPEND"


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
    from paimon_spark._merge import split_top_level

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
    original = merge_module._deleted_messages

    def overwrite_first(*args: Any) -> Any:
        # another writer replaces partition a after the merge read it and before the merge commits
        Catalog.open(warehouse).get_table("db.t").overwrite(replacement, partition={"p": "a"})
        return original(*args)

    monkeypatch.setattr(merge_module, "_deleted_messages", overwrite_first)
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


def test_cli_merge_into_with_plain_python(warehouse: str) -> None:
    make_target(warehouse)
    changes = str(Path(warehouse).parent / "changes.json")
    Path(changes).write_text('{"id": 2, "v": "cli"}\n{"id": 50, "v": "new"}\n')
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    completed = subprocess.run(
        [
            sys.executable, "-m", "paimon_spark.cli", "merge_into", "--master", "local[1]",
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
