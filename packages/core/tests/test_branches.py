"""Branches: create (from a tag, or empty), delete, fast-forward, list; a branch table's reads, writes, streams,
compactions, tags, expiration, schema changes and system tables stay on the branch; expiration, tag deletion and
orphan removal of one branch keep what the others use.

The oracle is the table itself: what each branch and main read right after their own commits (a model of
two histories), read again after every other operation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, SchemaChange
from paimon_core.branch import check_branch_name, split_branch
from paimon_core.compact import compact_table
from paimon_core.errors import (
    BranchAlreadyExistsError,
    BranchNotFoundError,
    ConfigError,
    SnapshotNotFoundError,
    TableNotFoundError,
    TagNotFoundError,
)
from paimon_core.maintenance import (
    create_branch,
    create_tag,
    delete_branch,
    delete_tag,
    expire_snapshots,
    fast_forward,
    list_branches,
    remove_orphan_files,
)
from paimon_core.table import Table

SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
KINDS = {
    "append": ({"bucket": "-1"}, []),
    "primary-key": ({"bucket": "2"}, ["p", "id"]),
}
FAR_FUTURE = "2999-01-01 00:00:00"
Rows = list[tuple[Any, ...]]


def rows(table: Table, **travel: Any) -> Rows:
    data = table.to_arrow(**travel).select(["p", "id", "v"])
    return sorted(tuple(r.values()) for r in data.to_pylist())


def batch(ids: list[int], partition: str = "a", v: int = 0) -> pa.Table:
    return pa.table({"p": [partition] * len(ids), "id": ids, "v": [v] * len(ids)}, schema=SCHEMA)


@pytest.fixture(params=list(KINDS))
def table(request: pytest.FixtureRequest, catalog: Catalog) -> Table:
    """Main: snapshots 1 (a: 0, 1) and 2 (b: 2), tag ``t2`` on 2, then 3 (a: 3)."""
    options, keys = KINDS[request.param]
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_keys=["p"],
        primary_keys=keys,
        options={**options, "write-only": "true", "compaction.min.file-num": "2"},
    )
    table.append(batch([0, 1]))
    table.append(batch([2], "b"))
    create_tag(table, "t2")
    table.append(batch([3]))
    return table


def _branch(catalog: Catalog, name: str = "b1") -> Table:
    return catalog.get_table(f"db.t$branch_{name}")


def _main(catalog: Catalog) -> Table:
    return catalog.get_table("db.t")


def test_a_branch_from_a_tag_starts_where_the_tag_is_and_writes_stay_apart(
    catalog: Catalog, table: Table
) -> None:
    main_before = rows(table)
    create_branch(table, "b1", "t2")
    branch = _branch(catalog)
    assert rows(branch) == rows(table, tag="t2")
    assert [s.id for s in branch.snapshots()] == [2]
    assert branch.tag_manager.names() == ["t2"]  # the tag comes along, as in Java
    branch.append(batch([100]))
    table.append(batch([4]))
    assert rows(_branch(catalog)) == sorted([*rows(table, tag="t2"), ("a", 100, 0)])
    assert rows(_main(catalog)) == sorted([*main_before, ("a", 4, 0)])
    # the ``branch`` option names the same branch
    assert rows(catalog.get_table("db.t", branch="b1")) == rows(_branch(catalog))
    assert [s.id for s in _branch(catalog).snapshots()] == [2, 3]
    assert [s.id for s in _main(catalog).snapshots()] == [1, 2, 3, 4]


def test_an_empty_branch_has_the_current_schema_and_no_snapshot(catalog: Catalog, table: Table) -> None:
    catalog.alter_table("db.t", SchemaChange.add_column("w", pa.int64()))
    create_branch(_main(catalog), "b1")
    branch = _branch(catalog)
    assert branch.latest_snapshot() is None and branch.schema.id == 1
    assert branch.to_arrow().num_rows == 0
    branch.append(pa.table({"p": ["x"], "id": [9], "v": [9], "w": [9]}))
    assert rows(_branch(catalog)) == [("x", 9, 9)]
    assert ("x", 9, 9) not in rows(_main(catalog))


def test_schema_changes_on_a_branch_stay_on_it(catalog: Catalog, table: Table) -> None:
    create_branch(table, "b1", "t2")
    catalog.alter_table("db.t$branch_b1", SchemaChange.add_column("extra", pa.string()))
    assert [f.name for f in _branch(catalog).schema.fields][-1] == "extra"
    assert [f.name for f in _main(catalog).schema.fields] == SCHEMA.names
    _branch(catalog).append(pa.table({"p": ["a"], "id": [7], "v": [7], "extra": ["e"]}))
    assert _branch(catalog).to_arrow().column("extra").to_pylist().count("e") == 1
    table.append(batch([8]))  # main still writes its own schema
    assert ("a", 8, 0) in rows(_main(catalog))


def test_tags_compaction_streams_expiration_and_system_tables_work_on_the_branch(
    catalog: Catalog, table: Table
) -> None:
    create_branch(table, "b1", "t2")
    branch = _branch(catalog)
    for i in range(3):
        branch.append(batch([200 + i]))
    create_tag(branch, "bt")
    assert branch.tag_manager.names() == ["bt", "t2"] and table.tag_manager.names() == ["t2"]
    expected = rows(branch)
    compact_table(branch, progress=False)
    assert rows(_branch(catalog)) == expected
    assert _branch(catalog).latest_snapshot().commit_kind == "COMPACT"  # type: ignore[union-attr]
    assert _main(catalog).latest_snapshot().commit_kind == "APPEND"  # type: ignore[union-attr]
    expire_snapshots(_branch(catalog), retain_min=1, retain_max=1, older_than=FAR_FUTURE)
    assert [s.id for s in _branch(catalog).snapshots()] == [6]
    assert rows(_branch(catalog)) == expected and rows(_branch(catalog), tag="bt") == expected
    streamed = pa.Table.from_batches(list(_branch(catalog).stream(follow=False)))
    assert sorted(streamed.column("id").to_pylist()) == sorted(r[1] for r in expected)
    snapshots = catalog.get_table("db.t$branch_b1$snapshots").to_arrow()
    assert snapshots.column("snapshot_id").to_pylist() == [6]
    tags = catalog.get_table("db.t$branch_b1$tags").to_arrow()
    assert sorted(tags.column("tag_name").to_pylist()) == ["bt", "t2"]
    assert catalog.get_table("db.t$tags").to_arrow().column("tag_name").to_pylist() == ["t2"]
    assert catalog.get_table("db.t$branches").to_arrow().column("branch_name").to_pylist() == ["b1"]
    assert [s.id for s in _main(catalog).snapshots()] == [1, 2, 3]


def test_main_expiration_and_tag_deletion_keep_what_a_branch_uses(catalog: Catalog, table: Table) -> None:
    create_branch(table, "b1", "t2")
    _branch(catalog).append(batch([100]))
    branch_rows = rows(_branch(catalog))
    branch_at_2 = rows(_branch(catalog), snapshot_id=2)
    compact_table(table, progress=False)  # main replaces the files of snapshots 1..3
    table.append(batch([4]))
    expire_snapshots(_main(catalog), retain_min=1, retain_max=1, older_than=FAR_FUTURE)
    delete_tag(_main(catalog), "t2")  # the last to keep main's snapshot 2: its files would go
    assert rows(_branch(catalog)) == branch_rows
    assert rows(_branch(catalog), snapshot_id=2) == branch_at_2
    _remove_orphans(_main(catalog))
    assert rows(_branch(catalog)) == branch_rows


def test_branch_expiration_keeps_what_main_uses(catalog: Catalog, table: Table) -> None:
    create_branch(table, "b1", "t2")
    delete_tag(table, "t2")  # main's snapshot 2 is still there: nothing deleted
    main_rows = {s.id: rows(table, snapshot_id=s.id) for s in table.snapshots()}
    branch = _branch(catalog)
    branch.append(batch([100]))
    compact_table(branch, progress=False)  # the branch replaces main's files of snapshot 2
    expire_snapshots(_branch(catalog), retain_min=1, retain_max=1, older_than=FAR_FUTURE)
    delete_tag(_branch(catalog), "t2")
    assert {s.id: rows(_main(catalog), snapshot_id=s.id) for s in _main(catalog).snapshots()} == main_rows


def test_delete_branch_deletes_only_its_metadata(catalog: Catalog, table: Table, tmp_path: Path) -> None:
    create_branch(table, "b1", "t2")
    create_branch(table, "b2", "t2")
    _branch(catalog).append(batch([100]))
    _branch(catalog, "b2").append(batch([200]))
    main_rows, b2_rows = rows(table), rows(_branch(catalog, "b2"))
    assert delete_branch(table, "b1") == ["b1"]
    assert list_branches(table) == ["b2"]
    with pytest.raises(BranchNotFoundError, match="b2"):
        _branch(catalog)
    assert rows(_main(catalog)) == main_rows and rows(_branch(catalog, "b2")) == b2_rows
    deleted = _remove_orphans(_main(catalog))
    assert deleted, "the files only b1 wrote are orphans now"
    assert rows(_main(catalog)) == main_rows and rows(_branch(catalog, "b2")) == b2_rows
    with pytest.raises(BranchNotFoundError):
        delete_branch(table, "b1")


def test_fast_forward_gives_main_the_branch_history(catalog: Catalog, table: Table) -> None:
    create_tag(table, "t3")
    create_branch(table, "b1", "t2")
    branch = _branch(catalog)
    branch.append(batch([100]))
    create_tag(branch, "bt")
    expected = {s.id: rows(branch, snapshot_id=s.id) for s in branch.snapshots()}
    latest = fast_forward(table, "b1")
    main = _main(catalog)
    assert latest.id == 3 and main.latest_snapshot() == latest
    assert rows(main) == expected[3]
    assert {i: rows(main, snapshot_id=i) for i in (2, 3)} == expected
    assert main.tag_manager.names() == ["bt", "t2"]  # t3 (on a replaced snapshot) is gone
    main.append(batch([5]))
    assert rows(_main(catalog)) == sorted([*expected[3], ("a", 5, 0)])
    assert rows(_branch(catalog)) == expected[3]  # the branch stays


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda t: fast_forward(t, "main"), ConfigError),
        (lambda t: fast_forward(t, "nope"), BranchNotFoundError),
        (lambda t: create_branch(t, "b1", "no-such-tag"), TagNotFoundError),
        (lambda t: delete_branch(t, "main"), ConfigError),
        (lambda t: delete_branch(t, "nope"), BranchNotFoundError),
    ],
)
def test_refusals(table: Table, call: Callable[[Table], Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        call(table)
    assert list_branches(table) == []


def test_fast_forward_of_an_empty_branch_and_from_itself_are_refused(catalog: Catalog, table: Table) -> None:
    create_branch(table, "b1")
    with pytest.raises(SnapshotNotFoundError, match="no snapshot"):
        fast_forward(table, "b1")
    with pytest.raises(ConfigError, match="current branch"):
        fast_forward(_branch(catalog), "b1")
    with pytest.raises(BranchAlreadyExistsError):
        create_branch(table, "b1")
    create_branch(table, "b1", ignore_if_exists=True)


def test_a_branch_of_a_branch_and_fast_forward_between_branches(catalog: Catalog, table: Table) -> None:
    create_branch(table, "b1", "t2")
    b1 = _branch(catalog)
    b1.append(batch([100]))
    create_tag(b1, "b1t")
    create_branch(b1, "b2", "b1t")
    _branch(catalog, "b2").append(batch([200]))
    fast_forward(_branch(catalog), "b2")
    assert rows(_branch(catalog)) == rows(_branch(catalog, "b2"))
    assert ("a", 200, 0) not in rows(_main(catalog))


@pytest.mark.parametrize(
    "name", ["main", "", "  ", "123", "a/b", "..", ".", "x$y", "a,b", "a\\b", "tab\t", " b"]
)
def test_hostile_or_reserved_names_are_refused(table: Table, name: str) -> None:
    with pytest.raises(ConfigError, match="branch"):
        create_branch(table, name)
    assert list_branches(table) == []
    assert not (Path(table.path) / "branch").exists() or not any((Path(table.path) / "branch").iterdir())


@pytest.mark.parametrize("name", ["b1", "dev-2", "feature_x", "v1.0", "ünï"])
def test_ordinary_names_are_accepted(name: str) -> None:
    assert check_branch_name(name) == name
    assert split_branch(f"t$branch_{name}") == ("t", name)


def test_a_missing_branch_or_table_says_which(catalog: Catalog, table: Table) -> None:
    with pytest.raises(BranchNotFoundError, match="'nope' does not exist; the table has no branch"):
        catalog.get_table("db.t$branch_nope")
    with pytest.raises(TableNotFoundError):
        catalog.get_table("db.missing$branch_b1")


def test_the_cli_creates_lists_fast_forwards_and_deletes_branches(
    catalog: Catalog, table: Table, capsys: pytest.CaptureFixture[str]
) -> None:
    from paimon_core.cli import main

    steps: list[tuple[list[str], int, Callable[[], bool]]] = [
        (
            ["create-branch", table.path, "b1", "--tag", "t2"],
            0,
            lambda: rows(_branch(catalog)) == rows(table, tag="t2"),
        ),
        (["create-branch", table.path, "b2"], 0, lambda: list_branches(table) == ["b1", "b2"]),
        (["create-branch", table.path, "b2"], 1, lambda: list_branches(table) == ["b1", "b2"]),
        (["create-branch", table.path, "b2", "--ignore-if-exists"], 0, lambda: True),
        (["create-branch", table.path, "12"], 1, lambda: list_branches(table) == ["b1", "b2"]),
        (["list-branches", table.path], 0, lambda: capsys.readouterr().out.split() == ["b1", "b2"]),
        (["fast-forward", table.path, "b1"], 0, lambda: rows(_main(catalog)) == rows(_branch(catalog))),
        (["delete-branch", table.path, "b1,b2"], 0, lambda: list_branches(table) == []),
        (["delete-branch", table.path, "b1"], 1, lambda: True),
    ]
    for argv, code, check in steps:
        capsys.readouterr()
        assert main(argv) == code, argv
        assert check(), argv


def test_the_cli_reads_and_writes_a_branch_by_name(catalog: Catalog, table: Table, tmp_path: Path) -> None:
    from paimon_core.cli import main

    create_branch(table, "b1", "t2")
    source = tmp_path / "rows.parquet"
    import pyarrow.parquet as pq

    pq.write_table(batch([300]), source)
    warehouse = str(Path(table.path).parent.parent)
    argv = ["write", "--warehouse", warehouse, "--table", "db.t$branch_b1", str(source), "--no-progress"]
    assert main(argv) == 0
    assert ("a", 300, 0) in rows(_branch(catalog)) and ("a", 300, 0) not in rows(_main(catalog))
    assert main(["write", table.path, str(source), "--option", "branch=b1", "--no-progress"]) == 0
    assert rows(_branch(catalog)).count(("a", 300, 0)) == (1 if table.has_primary_key else 2)
    assert ("a", 300, 0) not in rows(_main(catalog))


def _remove_orphans(table: Table) -> tuple[str, ...]:
    now = int(time.time() * 1000) + 86_400_000
    return remove_orphan_files(table, older_than=now, now_millis=now).deleted


def test_a_fallback_branch_gives_the_partitions_the_branch_lacks(catalog: Catalog, table: Table) -> None:
    create_branch(table, "fb")
    fallback = _branch(catalog, "fb")
    fallback.append(batch([1, 50], "a", v=9))  # partition a is main's: main's rows win
    fallback.append(batch([60, 61], "c", v=9))  # partition c only the fallback has
    main_rows = rows(table)
    catalog.alter_options("db.t", {"scan.fallback-branch": "fb"})
    main = _main(catalog)
    expected = sorted([*main_rows, ("c", 60, 9), ("c", 61, 9)])
    assert rows(main) == expected
    assert pa.Table.from_batches(list(main.to_batches())).num_rows == len(expected)
    only_c = main.to_arrow(filter=[("p", "=", "c")]).column("id").to_pylist()
    assert sorted(only_c) == [60, 61]
    assert rows(main, snapshot_id=3) == main_rows  # a snapshot of main is main's alone
    assert rows(_branch(catalog, "fb")) == sorted([("a", 1, 9), ("a", 50, 9), ("c", 60, 9), ("c", 61, 9)])
    with pytest.raises(ConfigError, match=r"scan\.fallback-branch"):
        delete_branch(main, "fb")
    catalog.alter_table("db.t$branch_fb", SchemaChange.add_column("other", pa.int64()))
    with pytest.raises(ConfigError, match="same columns"):
        _main(catalog).to_arrow()


@pytest.mark.parametrize("name", ["../..", "a/../../..", "x/y", "..\\.."])
def test_no_branch_operation_leaves_the_branch_directory(catalog: Catalog, table: Table, name: str) -> None:
    for operation in (
        lambda: delete_branch(table, name),
        lambda: fast_forward(table, name),
        lambda: catalog.get_table(f"db.t$branch_{name}"),
        lambda: catalog.get_table("db.t", branch=name),
        lambda: create_branch(table, name),
    ):
        with pytest.raises(ConfigError, match="branch"):
            operation()
    assert rows(_main(catalog)) == rows(table) and Path(table.path).is_dir()


def test_only_the_handle_chooses_its_branch_never_a_stored_option(catalog: Catalog, table: Table) -> None:
    create_branch(table, "b1", "t2")
    main_rows = rows(table)
    catalog.alter_options("db.t", {"branch": "b1"})  # stored: it does not move main's handles
    assert rows(_main(catalog)) == main_rows and _main(catalog).branch == "main"
    assert rows(catalog.get_table("db.t", branch="b1")) == rows(table, tag="t2")
