"""Fixtures for the pypaimon interoperability tests: one warehouse, our catalog and pypaimon's over it.

pypaimon is imported inside the fixtures, not at module level, so collecting this folder in an
environment without pypaimon (the default ``-m "not interop"`` runs) still works; a selected interop
test without pypaimon installed fails loudly instead of being skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pytest

DATABASE = "db"


class PyPaimon:
    """The few pypaimon calls the tests need, as a user of its public API makes them.

    Args:
        warehouse: the warehouse directory shared with our catalog.
        options: more catalog options (``metastore``, ``uri``... of a jdbc catalog).
    """

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None) -> None:
        from pypaimon import CatalogFactory

        self.warehouse = warehouse
        self.catalog = CatalogFactory.create({"warehouse": warehouse, **dict(options or {})})
        self.catalog.create_database(DATABASE, True)

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema,
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        primary_keys: Sequence[str] = (),
    ) -> None:
        """Create a table; with ``primary_keys`` a primary-key table (its key columns become NOT NULL)."""
        from pypaimon import Schema

        paimon_schema = Schema.from_pyarrow_schema(
            schema,
            partition_keys=list(partition_keys),
            primary_keys=list(primary_keys) or None,
            options=dict(options or {}),
        )
        self.catalog.create_table(identifier, paimon_schema, False)

    def table(self, identifier: str, options: Mapping[str, str] | None = None) -> Any:
        table = self.catalog.get_table(identifier)
        return table.copy(dict(options)) if options else table

    def _write(self, table: Any, data: pa.Table, overwrite: Mapping[str, Any] | None) -> None:
        builder = table.new_batch_write_builder()
        if overwrite is not None:
            builder = builder.overwrite(dict(overwrite))
        write = builder.new_write()
        commit = builder.new_commit()
        try:
            write.write_arrow(data)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()

    def append(self, identifier: str, data: pa.Table) -> int:
        """Append ``data`` in one commit; returns the new latest snapshot id."""
        self._write(self.table(identifier), data, None)
        return self.latest_snapshot_id(identifier)

    def overwrite(self, identifier: str, data: pa.Table, partition: Mapping[str, Any] | None = None) -> int:
        """Overwrite like Java: dynamic (the partitions in ``data``) when ``partition`` is None.

        pypaimon ignores its static-partition argument while ``dynamic-partition-overwrite`` is true (its
        ``FileStoreCommit.overwrite``), so a static overwrite turns that option off for this write, which is
        what Java's engines do for ``INSERT OVERWRITE ... PARTITION (...)`` too.
        """
        if partition is None:
            self._write(self.table(identifier), data, {})
        else:
            table = self.table(identifier, {"dynamic-partition-overwrite": "false"})
            self._write(table, data, partition)
        return self.latest_snapshot_id(identifier)

    def latest_snapshot_id(self, identifier: str) -> int:
        snapshot = self.table(identifier).snapshot_manager().get_latest_snapshot()
        assert snapshot is not None, f"pypaimon sees no snapshot in {identifier}"
        return int(snapshot.id)

    def read(
        self,
        identifier: str,
        *,
        snapshot_id: int | None = None,
        columns: Sequence[str] | None = None,
        partition_equals: Mapping[str, Any] | None = None,
    ) -> pa.Table:
        """Read the table (time travel with ``scan.snapshot-id``) into one Arrow table."""
        options = {"scan.snapshot-id": str(snapshot_id)} if snapshot_id is not None else None
        builder = self.table(identifier, options).new_read_builder()
        # The filter first: after a projection, pypaimon's predicate builder knows only the projected columns.
        if partition_equals:
            predicates = builder.new_predicate_builder()
            leaves = [predicates.equal(k, v) for k, v in partition_equals.items()]
            builder = builder.with_filter(predicates.and_predicates(leaves))
        if columns is not None:
            builder = builder.with_projection(list(columns))
        splits = builder.new_scan().plan().splits()
        result = builder.new_read().to_arrow(splits)
        assert result is not None, f"pypaimon returned no table for {identifier}"
        return result

    def read_splits(self, identifier: str) -> list[tuple[tuple[Any, ...], int, pa.Table]]:
        """(partition values, bucket, rows) per split, the bucket coming from pypaimon's manifest entries."""
        builder = self.table(identifier).new_read_builder()
        read = builder.new_read()
        out = []
        for split in builder.new_scan().plan().splits():
            rows = read.to_arrow([split])
            assert rows is not None
            out.append((tuple(split.partition.values), int(split.bucket), rows))
        return out


@pytest.fixture
def pypaimon(warehouse: str) -> PyPaimon:
    return PyPaimon(warehouse)
