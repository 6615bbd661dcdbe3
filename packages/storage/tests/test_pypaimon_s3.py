"""Concurrent writers on moto's S3, then the same table read back by pypaimon through its own S3 client.

Runs in the ``interop_s3`` nox session (pypaimon pins pyarrow<20 and fsspec<2026, so it gets its own venv).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_storage.workload import TABLE, check_table, create_table, run_workload

from .conftest import Store

pytestmark = [pytest.mark.integration, pytest.mark.interop, pytest.mark.slow]

APPENDERS, APPENDS, OVERWRITES = 4, 12, 5


def _sorted(table: pa.Table) -> pa.Table:
    columns = ["writer", "round", "seq", "p", "payload"]
    return table.select(columns).sort_by(
        [("writer", "ascending"), ("round", "ascending"), ("seq", "ascending")]
    )


def _pypaimon_read(warehouse: str, options: dict[str, str]) -> pa.Table:
    from pypaimon import CatalogFactory

    # pypaimon reads the same Paimon option names (s3.endpoint, s3.access-key, ...), with pyarrow's S3 client.
    catalog = CatalogFactory.create({"warehouse": warehouse, **options})
    builder = catalog.get_table(TABLE).new_read_builder()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert result is not None
    return result


def test_concurrent_writers_on_s3_then_pypaimon_reads_the_table(s3_store: Store) -> None:
    warehouse = s3_store.root()
    create_table(warehouse, s3_store.options)
    run_workload(warehouse, s3_store.options, appenders=APPENDERS, appends=APPENDS, overwrites=OVERWRITES)
    ours = Catalog.open(warehouse, **s3_store.options).get_table(TABLE)
    assert check_table(ours, appenders=APPENDERS, appends=APPENDS, overwrites=OVERWRITES) == []
    expected = _sorted(ours.to_arrow())
    assert expected.num_rows == (APPENDERS * APPENDS + 1) * 3
    theirs = _sorted(_pypaimon_read(warehouse, s3_store.options))
    assert theirs.to_pylist() == expected.to_pylist()
