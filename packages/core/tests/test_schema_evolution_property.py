"""Property: random sequences of schema changes and writes; every snapshot reads the right columns and values.

The model keeps every written row by field id. A read (of any snapshot, under the current schema) must return
the rows written up to that snapshot, with the current columns in the current order: values of renamed
columns kept, dropped columns gone, columns added later null, widened columns cast.
"""

from __future__ import annotations

import itertools
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog, Move, SchemaChange

_WIDER = {
    pa.int32(): [pa.int64(), pa.float64(), pa.string()],
    pa.float32(): [pa.float64(), pa.string()],
    pa.int64(): [pa.string()],
}
_NEW_TYPES = [pa.int32(), pa.int64(), pa.float32(), pa.string()]


@dataclass
class Column:
    field_id: int
    name: str
    type: pa.DataType


@dataclass
class Model:
    columns: list[Column]
    rows: list[dict[int, Any]] = field(default_factory=list)  # by field id, as written
    row_counts: dict[int, int] = field(default_factory=dict)  # snapshot id -> rows written up to it
    next_id: int = 3
    names: itertools.count[int] = field(default_factory=lambda: itertools.count())

    def expected(self, upto: int) -> list[tuple[Any, ...]]:
        out = []
        for row in self.rows[:upto]:
            out.append(tuple(_as(row.get(c.field_id), c.type) for c in self.columns))
        return sorted(out, key=repr)


def _as(value: Any, arrow_type: pa.DataType) -> Any:
    if value is None:
        return None
    return pa.array([value]).cast(arrow_type)[0].as_py()


def _value(column: Column, n: int) -> Any:
    if pa.types.is_string(column.type):
        return f"s{n}"
    if pa.types.is_floating(column.type):
        return n + 0.5  # exact in float32 and float64
    return n


operations = st.lists(
    st.tuples(
        st.sampled_from(["write", "write", "add", "drop", "rename", "widen", "move"]),
        st.integers(0, 1000),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations)
def test_random_alters_and_writes_read_back_by_field_id(ops: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Catalog.open(f"{tmp}/wh", create=True)
        catalog.create_database("db")
        schema = pa.schema([("p", pa.string()), ("a", pa.int32()), ("b", pa.float32())])
        catalog.create_table("db.t", schema, partition_keys=["p"])
        model = Model([Column(0, "p", pa.string()), Column(1, "a", pa.int32()), Column(2, "b", pa.float32())])
        n = 0
        for op, pick, count in ops:
            others = [c for c in model.columns if c.name != "p"]
            target = others[pick % len(others)] if others else None
            if op == "write":
                table = catalog.get_table("db.t")
                rows = []
                for _ in range(count + 1):
                    n += 1
                    rows.append({c.field_id: ("x" if c.name == "p" else _value(c, n)) for c in model.columns})
                data = pa.table(
                    {c.name: pa.array([r[c.field_id] for r in rows], c.type) for c in model.columns}
                )
                snapshot = table.append(data)
                model.rows += rows
                assert snapshot is not None
                model.row_counts[snapshot] = len(model.rows)
            elif op == "add":
                name = f"c{next(model.names)}"
                arrow_type = _NEW_TYPES[pick % len(_NEW_TYPES)]
                position = pick % (len(model.columns) + 1)
                move = (
                    Move.first(name) if position == 0 else Move.after(name, model.columns[position - 1].name)
                )
                catalog.alter_table("db.t", SchemaChange.add_column(name, arrow_type, move=move))
                model.columns.insert(position, Column(model.next_id, name, arrow_type))
                model.next_id += 1
            elif op == "drop" and target is not None and len(others) > 1:
                catalog.alter_table("db.t", SchemaChange.drop_column(target.name))
                model.columns.remove(target)
            elif op == "rename" and target is not None:
                new_name = f"r{next(model.names)}"
                catalog.alter_table("db.t", SchemaChange.rename_column(target.name, new_name))
                target.name = new_name
            elif op == "widen" and target is not None and target.type in _WIDER:
                wider = _WIDER[target.type][pick % len(_WIDER[target.type])]
                catalog.alter_table("db.t", SchemaChange.update_column_type(target.name, wider))
                target.type = wider
            elif op == "move" and target is not None:
                catalog.alter_table("db.t", SchemaChange.update_column_position(Move.first(target.name)))
                model.columns.remove(target)
                model.columns.insert(0, target)
            table = catalog.get_table("db.t")
            assert table.arrow_schema.names == [c.name for c in model.columns]
            for snapshot_id, upto in model.row_counts.items():
                data = table.to_arrow(snapshot_id=snapshot_id)
                assert data.schema.names == [c.name for c in model.columns]
                actual = sorted(
                    zip(*(data.column(i).to_pylist() for i in range(data.num_columns)), strict=True), key=repr
                )
                assert actual == model.expected(upto), (snapshot_id, op)
