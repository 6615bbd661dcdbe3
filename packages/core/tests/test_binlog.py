"""``t$binlog``: the audit log with array columns, an update's ``-U``/``+U`` packed into one row when
streamed (Java's ``BinlogTable``; Java 0.9, the interop oracle, has no binlog: a model judges)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.errors import ReadOnlyTableError, SchemaError
from paimon_core.table import BinlogTable, KeyValueTableWrite, Table

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.int64())])
_names = itertools.count()
Op = tuple[str, int, int]


def _table(root: Path, **options: str) -> tuple[Catalog, Table]:
    catalog = Catalog.open(str(root), create=True)
    catalog.create_database("db", exist_ok=True)
    name = f"db.t{next(_names)}"
    opts = {"bucket": "2", "changelog-producer": "lookup", **options}
    return catalog, catalog.create_table(name, SCHEMA, primary_keys=["k"], options=opts)


def _commit(table: Table, ops: list[Op]) -> None:
    writer = table.new_write()
    assert isinstance(writer, KeyValueTableWrite)
    for kind, k, v in ops:
        data = pa.table({"k": [k], "v": [v]}, schema=SCHEMA)
        if kind == "put":
            writer.write(data)
        else:
            writer.delete(data.select(["k"]))
    messages = writer.prepare_commit()
    writer.close()
    table.new_commit().commit(messages)


def _pack(changes: list[tuple[str, Any]]) -> list[tuple[str, list[Any]]]:
    """The model of Java's packing: a ``-U`` and the change after it are one row of the second's kind."""
    rows: list[tuple[str, list[Any]]] = []
    i = 0
    while i < len(changes):
        if changes[i][0] == "-U" and i + 1 < len(changes):
            rows.append((changes[i + 1][0], [changes[i][1], changes[i + 1][1]]))
            i += 2
        else:
            rows.append((changes[i][0], [changes[i][1]]))
            i += 1
    return rows


def _per_key(rows: list[dict[str, Any]], arrays: bool) -> dict[int, list[tuple[str, Any]]]:
    grouped: dict[int, list[tuple[str, Any]]] = {}
    for row in rows:
        key = row["k"][0] if arrays else row["k"]
        if arrays:
            assert row["k"] == [key] * len(row["v"])  # a pair is one key's before and after
        grouped.setdefault(key, []).append((row["rowkind"], row["v"]))
    return grouped


histories = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["put", "put", "del"]), st.integers(0, 5), st.integers(0, 3)),
        min_size=1,
        max_size=6,
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories)
def test_binlog_stream_packs_the_audit_log_stream(
    tmp_path_factory: pytest.TempPathFactory, history: list[list[Op]]
) -> None:
    catalog, table = _table(tmp_path_factory.mktemp("wh"))
    for ops in history:
        _commit(table, ops)
    start = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}
    audit = catalog.get_table(f"{table.identifier}$audit_log", **start)
    binlog = catalog.get_table(f"{table.identifier}$binlog", **start)
    assert isinstance(binlog, BinlogTable)
    changes = [r for b in audit.stream(follow=False) for r in b.to_pylist()]
    packed = [r for b in binlog.stream(follow=False) for r in b.to_pylist()]
    expected = {k: _pack(c) for k, c in _per_key(changes, arrays=False).items()}
    assert _per_key(packed, arrays=True) == expected
    # a batch read: the audit log's rows, each value a one-element array
    batch = sorted((r["rowkind"], r["k"], r["v"]) for r in audit.to_arrow().to_pylist())
    assert sorted((r["rowkind"], *r["k"], *r["v"]) for r in binlog.to_arrow().to_pylist()) == batch
    assert all(len(r["k"]) == 1 for r in binlog.to_arrow().to_pylist())


def test_binlog_schema_projection_and_filter(tmp_path: Path) -> None:
    catalog, table = _table(tmp_path, bucket="1")
    _commit(table, [("put", 1, 1), ("put", 2, 2)])
    _commit(table, [("put", 1, 5)])
    binlog = catalog.get_table(f"{table.identifier}$binlog")
    # Java: rowkind, then each column as a nullable array of its (nullable) type
    assert binlog.arrow_schema.field("k").type == pa.list_(pa.field("element", pa.int32()))
    assert binlog.arrow_schema.field("k").nullable
    assert binlog.field_names == ["rowkind", "k", "v"]
    assert binlog.to_arrow(columns=["v"]).to_pylist() == [{"v": [5]}, {"v": [2]}]
    assert binlog.to_arrow(columns=["v", "rowkind"], filter=[("k", "=", 2)]).to_pylist() == [
        {"v": [2], "rowkind": "+I"}
    ]
    start = catalog.get_table(
        f"{table.identifier}$binlog", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}
    )
    rows = [r for b in start.stream(columns=["v"], follow=False) for r in b.to_pylist()]
    assert rows == [{"rowkind": "+I", "v": [1]}, {"rowkind": "+I", "v": [2]}, {"rowkind": "+U", "v": [1, 5]}]
    with pytest.raises(SchemaError):
        binlog.to_arrow(columns=["nope"])
    with pytest.raises(ReadOnlyTableError):
        binlog.append(pa.table({"k": [1], "v": [1]}, schema=SCHEMA))
