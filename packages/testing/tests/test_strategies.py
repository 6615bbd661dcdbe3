"""The strategies produce what they promise, and what they produce survives a round trip through a table."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.storage import clear_memory_store
from paimon_core.types import fields_from_arrow_schema
from paimon_testing import strategies as ps

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("value", ["/", "..", "=", "%", "\x00", "", "\t\n\r"])
def test_hostile_values_include(value: str) -> None:
    assert value in ps.HOSTILE_PARTITION_VALUES


@SETTINGS
@given(ps.hostile_strings(max_length=40))
def test_hostile_strings_respect_the_length(value: str) -> None:
    assert len(value) <= 40


@SETTINGS
@given(ps.partition_values())
def test_partition_values_fit_a_directory_name(value: str | None) -> None:
    assert value is None or len(value.encode("utf-8")) * 3 <= 240


@SETTINGS
@given(ps.table_specs())
def test_table_specs_are_valid_paimon_schemas(spec: ps.TableSpec) -> None:
    fields, _ = fields_from_arrow_schema(spec.schema)
    assert fields[0].name == "id"
    assert set(spec.partition_keys) <= set(spec.schema.names) - {"id"}


def _round_trip(spec: ps.TableSpec, data: pa.Table) -> None:
    warehouse = f"memory://strategies-{uuid.uuid4().hex}"
    try:
        catalog = Catalog.open(warehouse, create=True)
        catalog.create_database("db")
        table = catalog.create_table("db.t", spec.schema, partition_keys=list(spec.partition_keys))
        table.append(data)
        back = table.to_arrow().sort_by("id")
        assert back.num_rows == data.num_rows
        for name in spec.schema.names:
            assert back.column(name).to_pylist() == data.sort_by("id").column(name).to_pylist(), name
    finally:
        clear_memory_store(warehouse)


@SETTINGS
@given(st.lists(ps.partition_values(), min_size=1, max_size=6).map(tuple))
def test_hostile_partition_values_round_trip(values: tuple[str | None, ...]) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string())])
    data = pa.table({"id": list(range(len(values))), "p": list(values)}, schema=schema)
    _round_trip(ps.TableSpec(schema, ("p",)), data)


@SETTINGS
@given(
    ps.table_specs(max_columns=4).flatmap(
        lambda spec: st.tuples(
            st.just(spec), ps.arrow_tables(spec.schema, max_rows=8, partition_keys=spec.partition_keys)
        )
    )
)
def test_generated_tables_round_trip(spec_and_data: tuple[ps.TableSpec, pa.Table]) -> None:
    _round_trip(*spec_and_data)
