"""Branches against Java Paimon 0.9 (marker ``java_interop``): the same ``branch/branch-<name>/`` layout and
``t$branch_<name>`` names. Java reads the branch we create and write as we read it, and we read the branch
Java creates from a tag and writes as Java reads it; main stays apart on both sides.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.maintenance import create_branch, create_tag, fast_forward

pytestmark = pytest.mark.java_interop

COLUMNS = [("id", "INT NOT NULL"), ("name", "STRING")]
SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("name", pa.string())])
KINDS = {"append": ((), {"bucket": "-1"}), "primary-key": (("id",), {"bucket": "2"})}


def _ours(catalog: Catalog, name: str) -> list[tuple[Any, ...]]:
    data = catalog.get_table(f"db.{name}").to_arrow()
    return sorted(zip(data["id"].to_pylist(), data["name"].to_pylist(), strict=True))


@pytest.mark.parametrize("kind", list(KINDS))
def test_java_reads_the_branch_we_create_and_write(ours: Catalog, java: Any, kind: str) -> None:
    keys, options = KINDS[kind]
    java.create_table("t", COLUMNS, primary_keys=keys, options=options)
    java.write("t", [(1, "a"), (2, "b")])
    table = ours.get_table("db.t")
    create_tag(table, "t1")
    java.write("t", [(3, "main")])
    create_branch(ours.get_table("db.t"), "b1", "t1")
    ours.get_table("db.t$branch_b1").append(pa.table({"id": [2, 10], "name": ["x", "branch"]}, schema=SCHEMA))
    assert java.read("t$branch_b1") == _ours(ours, "t$branch_b1")
    assert (10, "branch") in _ours(ours, "t$branch_b1")
    assert java.read("t") == _ours(ours, "t") and (10, "branch") not in java.read("t")
    fast_forward(ours.get_table("db.t"), "b1")
    assert java.read("t") == _ours(ours, "t$branch_b1")
    java.write("t", [(20, "java")])  # Java commits on the fast-forwarded main
    assert _ours(ours, "t") == java.read("t")


@pytest.mark.parametrize("kind", list(KINDS))
def test_we_read_the_branch_java_creates_and_writes(ours: Catalog, java: Any, kind: str) -> None:
    keys, options = KINDS[kind]
    java.create_table("t", COLUMNS, primary_keys=keys, options=options)
    java.write("t", [(1, "a"), (2, "b")])
    java.create_tag("t", "t1", 1)
    java.write("t", [(3, "main")])
    java.table("t").createBranch("b1", "t1")
    java.write("t$branch_b1", [(2, "x"), (10, "branch")])
    assert _ours(ours, "t$branch_b1") == java.read("t$branch_b1")
    assert (10, "branch") in _ours(ours, "t$branch_b1") and (10, "branch") not in _ours(ours, "t")
    assert _ours(ours, "t") == java.read("t")
