"""Branches shared with pypaimon 2.1.0 (marker ``interop``): the same ``branch/branch-<name>/`` layout, so a
branch one creates and writes is read equal by the other, and main never sees a branch's rows.

The oracle for each side is the writer's own read of what it wrote, compared with the other's read.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.maintenance import create_branch, create_tag, fast_forward, list_branches

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
KINDS = {"append": ((), {"bucket": "-1"}), "primary-key": (("id",), {"bucket": "2"})}


def _rows(data: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(data["id"].to_pylist(), data["name"].to_pylist(), strict=True))


def _batch(ids: list[int], name: str) -> pa.Table:
    return pa.table({"id": ids, "name": [name] * len(ids)}, schema=SCHEMA)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_branch_pypaimon_creates_and_writes_reads_equal_here(
    ours: Catalog, pypaimon: Any, kind: str
) -> None:
    keys, options = KINDS[kind]
    pypaimon.create_table("db.t", SCHEMA, primary_keys=list(keys), options=options)
    pypaimon.append("db.t", _batch([1, 2], "a"))
    pypaimon.catalog.create_tag("db.t", "t1")
    pypaimon.append("db.t", _batch([3], "main"))
    pypaimon.catalog.create_branch("db.t", "b1", "t1")
    pypaimon.append("db.t$branch_b1", _batch([2, 10], "branch"))
    assert list_branches(ours.get_table("db.t")) == ["b1"]
    theirs_branch, theirs_main = pypaimon.read("db.t$branch_b1"), pypaimon.read("db.t")
    assert _rows(ours.get_table("db.t$branch_b1").to_arrow()) == _rows(theirs_branch)
    assert _rows(ours.get_table("db.t").to_arrow()) == _rows(theirs_main)
    assert (10, "branch") in _rows(theirs_branch) and (10, "branch") not in _rows(theirs_main)
    # and our writes to their branch read equal there
    ours.get_table("db.t$branch_b1").append(_batch([11], "ours"))
    assert _rows(pypaimon.read("db.t$branch_b1")) == _rows(ours.get_table("db.t$branch_b1").to_arrow())


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_branch_created_and_written_here_reads_equal_in_pypaimon(
    ours: Catalog, pypaimon: Any, kind: str
) -> None:
    keys, options = KINDS[kind]
    ours.create_database("db", exist_ok=True)
    table = ours.create_table("db.t", SCHEMA, primary_keys=list(keys), options=options)
    table.append(_batch([1, 2], "a"))
    create_tag(table, "t1")
    table.append(_batch([3], "main"))
    create_branch(table, "b1", "t1")
    create_branch(table, "empty")
    ours.get_table("db.t$branch_b1").append(_batch([2, 10], "branch"))
    assert sorted(pypaimon.catalog.list_branches("db.t")) == ["b1", "empty"]
    ours_branch = ours.get_table("db.t$branch_b1").to_arrow()
    assert _rows(pypaimon.read("db.t$branch_b1")) == _rows(ours_branch)
    assert _rows(pypaimon.read("db.t")) == _rows(ours.get_table("db.t").to_arrow())
    fast_forward(ours.get_table("db.t"), "b1")
    assert _rows(pypaimon.read("db.t")) == _rows(ours_branch)
    pypaimon.append("db.t", _batch([20], "theirs"))  # pypaimon commits on the fast-forwarded main
    assert _rows(ours.get_table("db.t").to_arrow()) == _rows(pypaimon.read("db.t"))
