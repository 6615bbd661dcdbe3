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
    return column


def _check_not_null(column: pa.Array, field: pa.Field, name: str) -> None:
    """Refuse nulls in NOT NULL ``field`` and in the NOT NULL fields nested in it (``name``: its path)."""
    if not field.nullable and column.null_count:
        raise SchemaError(f"column {name!r} is NOT NULL but holds {column.null_count} null values")
    kind = field.type
    if pa.types.is_struct(kind):
        present = column.filter(column.is_valid()) if column.null_count else column  # under a null: no value
        for index, values in enumerate(present.flatten()):
            child = kind.field(index)
            _check_not_null(values, child, f"{name}.{child.name}")
    elif pa.types.is_map(kind):
        offsets = column.offsets  # of this slice of the maps; ``items`` is every map's
        start, end = offsets[0].as_py(), offsets[-1].as_py()
        _check_not_null(column.items.slice(start, end - start), kind.item_field, f"{name}.value")
    elif _is_list(kind):
        _check_not_null(column.flatten(), kind.value_field, f"{name}.element")


def _is_list(arrow_type: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(arrow_type)
        or pa.types.is_large_list(arrow_type)
        or pa.types.is_fixed_size_list(arrow_type)
    )


def _child_fields(arrow_type: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(arrow_type):
        return [arrow_type.field(i) for i in range(arrow_type.num_fields)]
    if pa.types.is_map(arrow_type):
        return [arrow_type.item_field]  # keys are never null in Arrow
    if _is_list(arrow_type):
        return [arrow_type.value_field]
    return []


def _nested_not_null(arrow_type: pa.DataType) -> bool:
    """Whether a NOT NULL field lies inside ``arrow_type``."""
    return any(not f.nullable or _nested_not_null(f.type) for f in _child_fields(arrow_type))


def check_not_null(batch: pa.RecordBatch, schema: pa.Schema) -> None:
    """Raise :class:`SchemaError` when ``batch`` (of ``schema``) holds a null where ``schema`` allows none.

    Arrow does not enforce a field's nullability: data declared with the table's own schema may hold nulls
    where the table allows none (Parquet would refuse them with a bare ``ArrowInvalid``).
    """
    for column, field in zip(batch.columns, schema, strict=True):
        if (column.null_count and not field.nullable) or _nested_not_null(field.type):
            _check_not_null(column, field, field.name)


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Return ``batch`` with exactly ``schema``'s columns and types, or raise :class:`SchemaError`."""
    if batch.schema.equals(schema, check_metadata=False):
        check_not_null(batch, schema)
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
    conformed = pa.RecordBatch.from_arrays(columns, schema=schema)
    check_not_null(conformed, schema)
    return conformed
