"""Every readable thing — a table, each data view, each system table — offers the same readers, and they agree.

The readers are written once (``paimon_core/table/_readable.py``): ``to_pandas``, ``to_polars``,
``to_duckdb``, ``to_batches``, iteration and the Arrow C stream all give what ``to_arrow`` gives, with the same
``columns``, ``filter`` and time-travel arguments. System tables of metadata refuse time travel.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas.testing
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_core import Catalog, ConfigError, SystemTable, Table
from paimon_core.maintenance import create_tag
from paimon_core.table import SYSTEM_TABLES, AuditLogTable, BinlogTable, ReadOptimizedTable
from paimon_core.table._readable import Readable, TimeTravel

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
READERS = ("to_arrow", "to_batches", "to_pandas", "to_polars", "to_duckdb")


@dataclass(frozen=True)
class Case:
    """A readable of the shared warehouse, with columns (out of order) and a filter that suit it."""

    table: str  # the name to get_table
    columns: list[str]
    filter: Any
    travels: bool = True
    kind: type = object


CASES = {
    "append table": Case("db.t", ["name", "id"], [("id", ">", 1)], kind=Table),
    "primary-key table": Case("db.pk", ["name", "id"], [("id", ">", 1)], kind=Table),
    "audit_log": Case("db.pk$audit_log", ["id", "rowkind"], [("id", ">", 1)], kind=AuditLogTable),
    "audit_log of an append table": Case("db.t$audit_log", ["rowkind", "name"], None, kind=AuditLogTable),
    "binlog": Case("db.pk$binlog", ["name", "rowkind"], [("id", ">", 1)], kind=BinlogTable),
    "binlog of an append table": Case("db.t$binlog", ["id"], None, kind=BinlogTable),
    "ro": Case("db.pk$ro", ["id"], [("id", ">", 1)], kind=ReadOptimizedTable),
    "ro of an append table": Case("db.t$ro", ["name", "id"], [("id", ">", 1)], kind=ReadOptimizedTable),
}


@dataclass
class Warehouse:
    catalog: Catalog
    first_snapshot_millis: int  # both tables' first snapshots, and neither's second, are current then


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    catalog = Catalog.open(str(tmp_path_factory.mktemp("readers")))
    catalog.create_database("db")
    first = pa.table({"id": [1, 2, 3], "name": ["a", "b", None]}, schema=SCHEMA)
    second = pa.table({"id": [2, 4], "name": ["B", "d"]}, schema=SCHEMA)
    append = catalog.create_table("db.t", SCHEMA)
    keyed = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    for table in (append, keyed):
        table.append(first)
        create_tag(table, "first", 1)
    time.sleep(0.01)  # the second snapshots are later than the first by the clock: timestamp travel
    for table in (append, keyed):
        table.append(second)
    last_first = max(table.snapshot_manager.snapshot(1).time_millis for table in (append, keyed))
    return Warehouse(catalog, last_first)


# a system table's columns and filter come from its schema (_open)
ALL = {
    **CASES,
    **{f"${n}": Case(f"db.pk${n}", [], None, travels=False, kind=SystemTable) for n in SYSTEM_TABLES},
}


def _open(warehouse: Warehouse, case: Case) -> tuple[Readable, Case]:
    readable = warehouse.catalog.get_table(case.table)
    assert isinstance(readable, case.kind)
    assert isinstance(readable, Readable)
    if isinstance(readable, SystemTable):  # columns and a filter from its schema
        names = readable.arrow_schema.names
        case = Case(case.table, names[:2][::-1], pc.field(names[0]).is_valid(), False, SystemTable)
    return readable, case


# --- what each reader gives, as a pyarrow table to compare with to_arrow's ---------------------------------


def _via_pandas(readable: Readable, *args: Any, **kwargs: Any) -> Callable[[pa.Table], None]:
    frame = readable.to_pandas(*args, **kwargs)
    return lambda expected: pandas.testing.assert_frame_equal(frame, expected.to_pandas())


def _via_polars(readable: Readable, *args: Any, **kwargs: Any) -> Callable[[pa.Table], None]:
    frame = readable.to_polars(*args, **kwargs)

    def check(expected: pa.Table) -> None:
        assert frame.equals(pl.DataFrame(expected))

    return check


def _via_duckdb(readable: Readable, *args: Any, **kwargs: Any) -> Callable[[pa.Table], None]:
    connection = duckdb.connect()
    relation = readable.to_duckdb(*args, **kwargs, connection=connection)

    def check(expected: pa.Table) -> None:
        same = connection.from_arrow(expected)
        assert (relation.columns, relation.types) == (same.columns, same.types)
        assert relation.fetchall() == same.fetchall()

    return check


def _via_batches(readable: Readable, *args: Any, **kwargs: Any) -> Callable[[pa.Table], None]:
    reader = readable.to_batches(*args, **kwargs)
    assert isinstance(reader, pa.RecordBatchReader)
    data = reader.read_all()
    return lambda expected: _assert_same(data, expected)


def _via_arrow(readable: Readable, *args: Any, **kwargs: Any) -> Callable[[pa.Table], None]:
    data = readable.to_arrow(*args, **kwargs)
    return lambda expected: _assert_same(data, expected)


VIA = {
    "to_arrow": _via_arrow,
    "to_batches": _via_batches,
    "to_pandas": _via_pandas,
    "to_polars": _via_polars,
    "to_duckdb": _via_duckdb,
}


def _assert_same(got: pa.Table, expected: pa.Table) -> None:
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()


# --- the tests -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ALL))
def test_every_readable_offers_the_same_readers_and_arguments(warehouse: Warehouse, name: str) -> None:
    readable, _ = _open(warehouse, ALL[name])
    table = warehouse.catalog.get_table("db.t")
    for reader in READERS:
        assert inspect.signature(getattr(readable, reader)) == inspect.signature(getattr(table, reader))
    parameters = list(inspect.signature(readable.to_arrow).parameters.values())
    assert [(p.name, p.kind) for p in parameters] == [
        ("columns", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("filter", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("snapshot_id", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("tag", inspect.Parameter.KEYWORD_ONLY),
        ("timestamp", inspect.Parameter.KEYWORD_ONLY),
    ]
    assert "connection" in inspect.signature(readable.to_duckdb).parameters
    assert callable(readable.__arrow_c_stream__)
    assert callable(readable.__iter__)


@pytest.mark.parametrize("name", list(ALL))
@pytest.mark.parametrize("reader", READERS)
def test_every_reader_gives_what_to_arrow_gives(warehouse: Warehouse, name: str, reader: str) -> None:
    readable, case = _open(warehouse, ALL[name])
    VIA[reader](readable)(readable.to_arrow())
    VIA[reader](readable, case.columns)(readable.to_arrow(case.columns))
    VIA[reader](readable, columns=case.columns, filter=case.filter)(
        readable.to_arrow(case.columns, case.filter)
    )
    narrowed = readable.to_arrow(case.columns, case.filter)
    assert narrowed.schema.names == case.columns
    if case.filter is not None:
        assert narrowed.num_rows <= readable.to_arrow().num_rows


@pytest.mark.parametrize("name", list(ALL))
def test_iteration_and_the_arrow_stream_give_the_latest_rows(warehouse: Warehouse, name: str) -> None:
    readable, _ = _open(warehouse, ALL[name])
    expected = readable.to_arrow()
    _assert_same(pa.Table.from_batches(list(readable), expected.schema), expected)
    assert all(isinstance(batch, pa.RecordBatch) for batch in readable)
    _assert_same(pa.table(readable), expected)
    _assert_same(pa.RecordBatchReader.from_stream(readable).read_all(), expected)
    assert pl.DataFrame(readable).equals(pl.DataFrame(expected))


@pytest.mark.parametrize("name", [n for n, c in ALL.items() if c.travels])
@pytest.mark.parametrize("reader", READERS)
def test_time_travel_is_the_same_for_every_reader(warehouse: Warehouse, name: str, reader: str) -> None:
    readable, case = _open(warehouse, ALL[name])
    expected = readable.to_arrow(snapshot_id=1)
    if name != "ro":  # the keyed table's top level is empty before a full compaction
        assert expected.num_rows == 3
        assert not expected.equals(readable.to_arrow())
    VIA[reader](readable, None, None, 1)(expected)
    VIA[reader](readable, snapshot_id=1)(expected)
    VIA[reader](readable, tag="first")(expected)
    VIA[reader](readable, timestamp=warehouse.first_snapshot_millis)(expected)
    narrowed = readable.to_arrow(case.columns, case.filter, 1)
    VIA[reader](readable, case.columns, case.filter, 1)(narrowed)
    with pytest.raises(ConfigError, match="time travel takes one of snapshot_id, tag and timestamp"):
        getattr(readable, reader)(snapshot_id=1, tag="first")
    with pytest.raises(ConfigError, match="not a time"):
        getattr(readable, reader)(timestamp="yesterday")


@pytest.mark.parametrize("name", [n for n, c in ALL.items() if not c.travels])
@pytest.mark.parametrize("reader", READERS)
def test_system_tables_of_metadata_refuse_time_travel(warehouse: Warehouse, name: str, reader: str) -> None:
    readable, _ = _open(warehouse, ALL[name])
    for argument, value in (("snapshot_id", 1), ("tag", "first"), ("timestamp", 0)):
        message = f"SystemTable.{reader}() got an unexpected keyword argument '{argument}'"
        with pytest.raises(TypeError) as refused:
            getattr(readable, reader)(**{argument: value})
        assert str(refused.value) == message


def test_time_travel_is_one_validated_value() -> None:
    assert not TimeTravel()
    assert TimeTravel(snapshot_id=3) == TimeTravel(3)
    assert TimeTravel(tag="t").tag == "t"
    with pytest.raises(ConfigError, match="not several"):
        TimeTravel(1, "t")
    with pytest.raises(ConfigError, match="not a time"):
        TimeTravel(timestamp="soon")
    with pytest.raises(AttributeError):
        TimeTravel(1).snapshot_id = 2  # type: ignore[misc]


def test_readers_of_the_table_page_keep_their_docs() -> None:
    for reader in READERS:
        assert getattr(Table, reader).__doc__
        assert getattr(SystemTable, reader).__doc__ == getattr(Table, reader).__doc__
