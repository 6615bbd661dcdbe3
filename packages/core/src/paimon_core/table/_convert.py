"""Turning user data into record batches that fit a table's Arrow schema."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from paimon_core.errors import SchemaError


def iter_batches(data: Any) -> Iterator[pa.RecordBatch]:
    """Yield record batches from an Arrow table, batch, reader, iterable of batches, a pandas DataFrame, or
    anything that exports Arrow through the PyCapsule interface (polars, duckdb, arro3, ...)."""
    if isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, pa.RecordBatchReader):
        yield from data
    elif _is_pandas(data):
        yield from pa.Table.from_pandas(data, preserve_index=False).to_batches()
    elif hasattr(data, "__arrow_c_stream__"):  # before Iterable: a polars DataFrame iterates its columns
        yield from pa.RecordBatchReader.from_stream(data)
    elif hasattr(data, "__arrow_c_array__"):
        yield pa.record_batch(data)
    elif isinstance(data, Iterable) and not isinstance(data, (str, bytes, dict)):
        for item in data:
            yield from iter_batches(item)
    else:
        raise SchemaError(
            f"cannot write {type(data).__name__}: expected a pyarrow Table, RecordBatch, RecordBatchReader, "
            "an iterable of those, a pandas DataFrame, or an object with __arrow_c_stream__ (polars, duckdb)"
        )


def _is_pandas(data: Any) -> bool:
    module = type(data).__module__
    return module.startswith("pandas") and type(data).__name__ == "DataFrame"


def _same_family(src: pa.DataType, dst: pa.DataType) -> bool:
    """Casts allowed implicitly: within a type family, never across (no string -> number guessing)."""
    if pa.types.is_dictionary(src):
        return _same_family(src.value_type, dst)
    checks = (
        pa.types.is_integer,
        pa.types.is_floating,
        pa.types.is_decimal,
        pa.types.is_timestamp,
        pa.types.is_date,
        pa.types.is_time,
        pa.types.is_boolean,
    )
    for check in checks:
        if check(dst):
            return bool(check(src)) or (check is pa.types.is_floating and pa.types.is_integer(src))
    # view layouts (polars exports strings as string_view) belong to their family
    if pa.types.is_string(dst) or pa.types.is_large_string(dst):
        return bool(pa.types.is_string(src) or pa.types.is_large_string(src) or pa.types.is_string_view(src))
    if pa.types.is_binary(dst) or pa.types.is_large_binary(dst) or pa.types.is_fixed_size_binary(dst):
        return bool(
            pa.types.is_binary(src)
            or pa.types.is_large_binary(src)
            or pa.types.is_fixed_size_binary(src)
            or pa.types.is_binary_view(src)
        )
    if pa.types.is_list(dst):
        return bool(
            pa.types.is_list(src)
            or pa.types.is_large_list(src)
            or pa.types.is_fixed_size_list(src)
            or pa.types.is_list_view(src)
            or pa.types.is_large_list_view(src)
        )
    if pa.types.is_map(dst):
        return bool(pa.types.is_map(src))
    if pa.types.is_struct(dst):
        return bool(pa.types.is_struct(src))
    return False


def _conform_column(column: pa.Array | pa.ChunkedArray, field: pa.Field) -> pa.Array | pa.ChunkedArray:
    if column.type != field.type:
        if not _same_family(column.type, field.type):
            raise SchemaError(f"column {field.name!r} has type {column.type}, the table expects {field.type}")
        try:
            column = column.cast(field.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaError(f"column {field.name!r} cannot be stored as {field.type}: {exc}") from None
    if not field.nullable and column.null_count:
        raise SchemaError(f"column {field.name!r} is NOT NULL but holds {column.null_count} null values")
    return column


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Return ``batch`` with exactly ``schema``'s columns and types, or raise :class:`SchemaError`."""
    if batch.schema.equals(schema, check_metadata=False):
        return batch
    names = batch.schema.names
    if len(set(names)) != len(names):
        raise SchemaError(f"data has duplicate column names: {names}")
    missing = [n for n in schema.names if n not in names]
    extra = [n for n in names if n not in schema.names]
    if missing or extra:
        raise SchemaError(
            "data does not fit the table schema"
            + (f"; missing columns: {', '.join(missing)}" if missing else "")
            + (f"; unknown columns: {', '.join(extra)}" if extra else "")
        )
    columns = [_conform_column(batch.column(field.name), field) for field in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)
