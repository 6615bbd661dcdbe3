"""delete_from and update on Spark (local[2]): row kinds on primary-key tables, copy-on-write on append tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.errors import ConfigError
from paimon_core.table import AuditLogTable

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64()), ("p", pa.string())])


def make_table(warehouse: str, primary_key: bool, **options: str) -> Any:
    """db.t partitioned by p: ids 0-9 in p='a', 10-19 in p='b' (v = 'v<id>', n = id), written in two commits."""
    catalog = Catalog.open(warehouse)
    catalog.create_database("db", exist_ok=True)
    keys = (
        {"primary_keys": ["id", "p"], "options": {"bucket": "2", **options}}
        if primary_key
        else {"options": options}
    )
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], **keys)
    for ids, p in ((range(0, 10), "a"), (range(10, 20), "b")):
        table.append(
            pa.table(
                {"id": list(ids), "v": [f"v{i}" for i in ids], "n": list(ids), "p": [p] * len(ids)},
                schema=SCHEMA,
            )
        )
    return table


def rows(warehouse: str, **read: Any) -> dict[int, tuple[str | None, int | None, str]]:
    data = Catalog.open(warehouse).get_table("db.t").to_arrow(**read)
    return {r["id"]: (r["v"], r["n"], r["p"]) for r in data.to_pylist()}


def live_files(warehouse: str) -> set[str]:
    return {e.file.file_name for e in Catalog.open(warehouse).get_table("db.t").live_entries()}


def kinds_after(warehouse: str, base: int) -> list[str]:
    return [s.commit_kind.value for s in Catalog.open(warehouse).get_table("db.t").snapshots() if s.id > base]


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_primary_key_delete_and_update_write_row_kinds(spark: Any, warehouse: str, engine: str) -> None:
    options = {"merge-engine": engine, "write-only": "true"}
    if engine == "partial-update":
        options["partial-update.remove-record-on-delete"] = "true"
    table = make_table(warehouse, True, **options)
    expected, files, base = rows(warehouse), live_files(warehouse), table.latest_snapshot().id

    deleted = paimon_spark.delete_from(
        spark, warehouse=warehouse, table="db.t", where="n % 3 = 0 AND p = 'a'"
    )
    for i in (0, 3, 6, 9):
        del expected[i]
    assert rows(warehouse) == expected
    assert (deleted.deleted, deleted.updated, deleted.rewritten_files) == (4, 0, ())

    updated = paimon_spark.update(
        spark,
        warehouse=warehouse,
        table="db.t",
        set={"v": "upper(v)", "n": "IF(id = 12, NULL, n * 10)"},
        where="id > 10",
    )
    for i in range(11, 20):
        # a null is a value for deduplicate; partial-update keeps the old one (the whole row is written)
        n = None if i == 12 and engine == "deduplicate" else (12 if i == 12 else i * 10)
        expected[i] = (f"V{i}", n, "b")
    assert rows(warehouse) == expected
    assert deleted.snapshot_id is not None
    assert (updated.updated, updated.deleted, updated.snapshot_id) == (9, 0, deleted.snapshot_id + 1)
    assert kinds_after(warehouse, base) == ["APPEND", "APPEND"]
    assert files <= live_files(warehouse)  # no data file rewritten or removed


def test_changelog_of_primary_key_delete_and_update(spark: Any, warehouse: str) -> None:
    table = make_table(warehouse, True, **{"changelog-producer": "input"})
    base = table.latest_snapshot().id
    paimon_spark.delete_from(spark, warehouse=warehouse, table="db.t", where="t.id = 4")
    last = paimon_spark.update(
        spark, warehouse=warehouse, table="db.t", set="v = 'new', n = n + 1", where="id = 15"
    )
    changes = (
        Catalog.open(warehouse).get_table("db.t").copy({"incremental-between": f"{base},{last.snapshot_id}"})
    )
    assert sorted(AuditLogTable(changes).to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"rowkind": "-D", "id": 4, "v": "v4", "n": 4, "p": "a"},
        {"rowkind": "+U", "id": 15, "v": "new", "n": 16, "p": "b"},
    ]


def test_append_table_delete_and_update_rewrite_files(spark: Any, warehouse: str) -> None:
    table = make_table(warehouse, False, **{"write-only": "true"})
    expected, base, files = rows(warehouse), table.latest_snapshot().id, live_files(warehouse)
    deleted = paimon_spark.delete_from(spark, warehouse=warehouse, table="db.t", where="id IN (1, 2)")
    after_delete = live_files(warehouse)
    assert set(deleted.rewritten_files) == files - after_delete and len(deleted.rewritten_files) == 1
    assert len(files & after_delete) == 1  # p='b' untouched
    updated = paimon_spark.update(spark, warehouse=warehouse, table="db.t", set="n = -n")
    assert len(updated.rewritten_files) == 2 and not after_delete & live_files(warehouse)
    del expected[1], expected[2]
    assert rows(warehouse) == {i: (v, None if n is None else -n, p) for i, (v, n, p) in expected.items()}
    assert (deleted.deleted, updated.updated) == (2, 18)
    assert kinds_after(warehouse, base) == ["OVERWRITE", "OVERWRITE"]


def test_where_on_a_partition_reads_only_that_partition(spark: Any, warehouse: str) -> None:
    make_table(warehouse, True, **{"write-only": "true"})
    for path in [p for p in Path(warehouse).rglob("*.parquet") if "p=b" in p.parts]:
        path.unlink()
    summary = paimon_spark.update(
        spark, warehouse=warehouse, table="db.t", set="v = 'x'", where="`p` = 'a' AND id < 2"
    )
    assert summary.updated == 2
    assert {i: v for i, (v, _, _) in rows(warehouse, filter=[("p", "=", "a")]).items() if i < 3} == {
        0: "x",
        1: "x",
        2: "v2",
    }
    with pytest.raises(Exception, match="missing from storage"):  # without the partition term p='b' is read
        paimon_spark.delete_from(spark, warehouse=warehouse, table="db.t", where="id = 1")


@pytest.mark.parametrize(
    ("call", "options", "message"),
    [
        ({"set": "id = id + 1"}, {}, "cannot update its primary-key column 'id'"),
        ({"set": {"p": "'c'"}}, {}, "cannot update its primary-key column 'p'"),
        ({"set": "v"}, {}, "expected 'column = expression'"),
        ({"set": {}}, {}, "update needs set"),
        ({"set": "nope = 1"}, {}, "not columns of"),
        ({"set": "v = 'x'"}, {"merge-engine": "aggregation"}, "merge engine aggregation"),
        ({"where": " "}, {}, "delete_from needs where"),
        ({"where": "TRUE"}, {"merge-engine": "first-row"}, "first-row refuses"),
        ({"where": "TRUE"}, {"merge-engine": "aggregation"}, "aggregation.remove-record-on-delete"),
    ],
)
def test_refused_deletes_and_updates(
    spark: Any, warehouse: str, call: dict[str, Any], options: dict[str, str], message: str
) -> None:
    snapshots = len(make_table(warehouse, True, **options).snapshots())
    function = paimon_spark.update if "set" in call else paimon_spark.delete_from
    with pytest.raises(ConfigError, match=message):
        function(spark, warehouse=warehouse, table="db.t", **call)
    assert len(Catalog.open(warehouse).get_table("db.t").snapshots()) == snapshots


def test_identity_assignment_of_a_key_and_no_match(spark: Any, warehouse: str) -> None:
    table = make_table(warehouse, True)
    summary = paimon_spark.update(
        spark, warehouse=warehouse, table="db.t", set="id = id, v = 'k'", where="id = 3"
    )
    assert summary.updated == 1 and rows(warehouse)[3] == ("k", 3, "a")
    count = len(table.snapshots())
    nothing = paimon_spark.delete_from(spark, warehouse=warehouse, table="db.t", where="id > 100")
    assert nothing.snapshot_id is None and len(Catalog.open(warehouse).get_table("db.t").snapshots()) == count
