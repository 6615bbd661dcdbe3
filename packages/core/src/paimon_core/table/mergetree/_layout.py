"""The physical rows of primary-key data files: ``_KEY_<k>``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, values.

See docs/primary-key-tables.md ("Keys, buckets and files"). Java ≥ 1.0 gives the system columns fixed
Parquet field ids and each ``_KEY_<k>`` column the id of ``<k>`` plus ``Integer.MAX_VALUE / 2``; readers here
take the key from the value columns, so files without ``_KEY_*`` columns (Java's thin mode) read too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import options as opts
from paimon_core.binary_row import deserialize_row, serialize_row
from paimon_core.errors import SchemaError
from paimon_core.schema import TableSchema
from paimon_core.stats import StatsCollector
from paimon_core.types import DataField, DataType, to_arrow_field, to_arrow_schema

__all__ = [
    "KEY_FIELD_ID_OFFSET",
    "KEY_PREFIX",
    "SEQUENCE_NUMBER",
    "VALUE_KIND",
    "KeyValueFileStats",
    "KeyValueLayout",
    "kinds_of",
]

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_FIELD_ID_OFFSET = 2147483647 // 2
_SEQUENCE_NUMBER_ID = 2147483646
_VALUE_KIND_ID = 2147483645

_NULL_FIRST = (0,)


@dataclass(frozen=True)
class KeyValueLayout:
    """How one schema of a primary-key table is laid out in its data files."""

    schema: TableSchema

    @cached_property
    def key_fields(self) -> list[DataField]:
        """The trimmed primary key (the primary key without partition columns), in key order."""
        return self.schema.trimmed_primary_key_fields()

    @cached_property
    def key_names(self) -> list[str]:
        return [f.name for f in self.key_fields]

    @cached_property
    def key_types(self) -> list[DataType]:
        return [f.type for f in self.key_fields]

    @cached_property
    def physical_key_fields(self) -> list[DataField]:
        return [
            replace(f, id=f.id + KEY_FIELD_ID_OFFSET, name=KEY_PREFIX + f.name, description=None)
            for f in self.key_fields
        ]

    @cached_property
    def value_schema(self) -> pa.Schema:
        return to_arrow_schema(self.schema.fields)

    @cached_property
    def records_schema(self) -> pa.Schema:
        """Records in memory: sequence number, row kind, then the value columns."""
        system = [
            pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False),
            pa.field(VALUE_KIND, pa.int8(), False),
        ]
        return pa.schema([*system, *self.value_schema])

    @cached_property
    def file_schema(self) -> pa.Schema:
        """A data file's columns, with Java's Parquet field ids."""
        keys = [to_arrow_field(f) for f in self.physical_key_fields]
        system = [
            pa.field(
                SEQUENCE_NUMBER, pa.int64(), False, {b"PARQUET:field_id": str(_SEQUENCE_NUMBER_ID).encode()}
            ),
            pa.field(VALUE_KIND, pa.int8(), False, {b"PARQUET:field_id": str(_VALUE_KIND_ID).encode()}),
        ]
        return pa.schema([*keys, *system, *self.value_schema])

    @cached_property
    def sequence_fields(self) -> list[str]:
        text = self.schema.options.get(opts.SEQUENCE_FIELD.key) or ""
        return [name.strip() for name in text.split(",") if name.strip()]

    def to_file_rows(self, records: pa.Table) -> pa.Table:
        """Records (sorted, one per key) as a data file stores them: the key columns copied in front."""
        keys = [records.column(name) for name in self.key_names]
        columns = [*keys, *records.columns]
        return pa.Table.from_arrays(columns, schema=self.file_schema)

    def key_row(self, records: pa.Table, index: int) -> bytes:
        """The BinaryRow of the key of row ``index`` (a file's min or max key)."""
        values = [records.column(name)[index].as_py() for name in self.key_names]
        return serialize_row(values, self.key_types)

    def new_file_stats(self, footer_schema: pa.Schema | None = None) -> KeyValueFileStats:
        return KeyValueFileStats(self, footer_schema)

    def key_of(self, row: bytes) -> tuple[Any, ...]:
        """A sort key for a stored key row, in Paimon's key order (nulls first)."""
        values = deserialize_row(row, self.key_types)
        return tuple(_NULL_FIRST if v is None else (1, v) for v in values)


def kinds_of(text: pa.Array | pa.ChunkedArray, column: str) -> pa.Array:
    """Row kinds from ``+I``/``-U``/``+U``/``-D`` strings (``rowkind.field``), as ``_VALUE_KIND`` bytes.

    Raises:
        SchemaError: a null or unknown row kind (naming it and the column).
    """
    upper = pc.utf8_upper(text)
    codes = pc.index_in(upper, value_set=pa.array(["+I", "-U", "+U", "-D"]))
    if codes.null_count:
        bad = pc.filter(text, pc.is_null(codes)).to_pylist()[0] if len(text) else None
        raise SchemaError(f"row kind {bad!r} in column {column!r} is not one of +I, -U, +U, -D")
    return pc.cast(codes, pa.int8())


class KeyValueFileStats:
    """What a primary-key data file's metadata records beyond value stats: key stats (all key columns,
    ``truncate(128)`` as Java ≥ 1.0 uses for system columns), min/max key, sequence range and deletes."""

    def __init__(self, layout: KeyValueLayout, footer_schema: pa.Schema | None = None) -> None:
        self.layout = layout
        # With the file's schema, min/max come from its footer (StatsCollector.result needs it then).
        self.key_stats = StatsCollector(
            layout.physical_key_fields, "truncate(128)", None, dense_store=False, footer_schema=footer_schema
        )
        self.min_sequence: int | None = None
        self.max_sequence: int | None = None
        self.first_key: bytes | None = None
        self.last_key: bytes | None = None
        self.delete_rows = 0

    def update(self, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        self.key_stats.update(rows)
        bounds = pc.min_max(rows.column(SEQUENCE_NUMBER))
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        self.min_sequence = low if self.min_sequence is None else min(self.min_sequence, low)
        self.max_sequence = high if self.max_sequence is None else max(self.max_sequence, high)
        if self.first_key is None:
            self.first_key = self.layout.key_row(rows, 0)
        self.last_key = self.layout.key_row(rows, rows.num_rows - 1)
        kinds = rows.column(VALUE_KIND)
        self.delete_rows += pc.sum(pc.is_in(kinds, value_set=_RETRACT_KINDS)).as_py() or 0


_RETRACT_KINDS = pa.array([1, 3], pa.int8())
_ADD_KINDS = pa.array([0, 2], pa.int8())


def is_add(kinds: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Which ``_VALUE_KIND`` values are rows (``+I``/``+U``) rather than retractions (``-U``/``-D``)."""
    return pc.is_in(kinds, value_set=_ADD_KINDS)
