"""Hypothesis strategies for Paimon tables: Arrow types and schemas that Paimon accepts, batches that fit them,
and partition values, hostile ones included.

Everything is expressed in Arrow terms, since that is what :meth:`paimon_core.Catalog.create_table` and
``table.append`` take::

    from hypothesis import given
    from paimon_testing import strategies as ps

    @given(ps.table_specs().flatmap(lambda spec: st.tuples(st.just(spec), ps.arrow_tables(spec.schema))))
    def test_round_trip(spec_and_data): ...

Values cover the edges of each type: nulls, the smallest and largest integers, infinities and signed zeros,
the extreme dates and timestamps Paimon can store, unicode outside the basic plane and long strings.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

__all__ = [
    "HOSTILE_PARTITION_VALUES",
    "TableSpec",
    "arrow_tables",
    "arrow_types",
    "column_values",
    "hostile_strings",
    "partition_key_types",
    "partition_values",
    "table_specs",
]

# Characters that break naive path handling: separators, escapes, Hive's '=' and '%', control characters.
_HOSTILE_CHARS = "/\\.=%:#?*\"'<>|{}[]^ \t\n\r\x00\x01\x1f\x7f"

HOSTILE_PARTITION_VALUES: tuple[str, ...] = (
    "",
    " ",
    "/",
    "..",
    ".",
    "../..",
    "a/../b",
    "=",
    "k=v",
    "%",
    "%2F",
    "%252F",
    "a%b",
    "\x00",
    "\t\n\r",
    "\x7f",
    "__DEFAULT_PARTITION__",
    "é",
    "日本",
    "\U0001f600",
    "\\",
    "C:\\x",
    "-",
)
"""Partition values known to trip path escaping; :func:`partition_values` mixes them with generated ones."""

_INT_BOUNDS = {
    8: (-(2**7), 2**7 - 1),
    16: (-(2**15), 2**15 - 1),
    32: (-(2**31), 2**31 - 1),
    64: (-(2**63), 2**63 - 1),
}
# date32 and timestamps within year 1..9999, the range Java's LocalDate/LocalDateTime (and Parquet readers) agree on.
_MIN_DAY = (dt.date(1, 1, 1) - dt.date(1970, 1, 1)).days
_MAX_DAY = (dt.date(9999, 12, 31) - dt.date(1970, 1, 1)).days
_SECONDS = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


def hostile_strings(max_length: int = 300) -> st.SearchStrategy[str]:
    """Strings made to break paths and encodings: separators, ``..``, ``=``, ``%``, control characters,
    the empty string, non-BMP unicode, and long values up to ``max_length`` characters."""
    pieces = st.sampled_from(HOSTILE_PARTITION_VALUES)
    return st.one_of(
        pieces,
        st.text(alphabet=st.sampled_from(_HOSTILE_CHARS), max_size=12),
        st.lists(st.one_of(pieces, st.text(max_size=4)), max_size=5).map("".join),
        st.integers(1, max(1, max_length)).map(lambda n: "x" * n),
        st.text(max_size=max_length),
    ).filter(lambda s: len(s) <= max_length)


def partition_key_types() -> st.SearchStrategy[pa.DataType]:
    """Arrow types usable as partition keys (Paimon cannot name a directory after binary or nested values)."""
    return st.sampled_from([pa.string(), pa.int32(), pa.int64(), pa.int16(), pa.date32(), pa.bool_()])


def partition_values(
    arrow_type: pa.DataType | None = None, *, hostile: bool = True, nulls: bool = True, max_length: int = 120
) -> st.SearchStrategy[Any]:
    """Values of one partition key.

    Args:
        arrow_type: the key's type (default string); strings get the hostile values (see :func:`hostile_strings`).
        hostile: include :data:`HOSTILE_PARTITION_VALUES` and generated hostile strings.
        nulls: include ``None`` (Paimon's default partition).
        max_length: longest string. A local file system limits a directory name to 255 bytes, and escaping
            can triple a character's bytes, so the default stays well below.
    """
    arrow_type = pa.string() if arrow_type is None else arrow_type
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        base: st.SearchStrategy[Any] = (
            hostile_strings(max_length) if hostile else st.text(st.characters(codec="ascii"), max_size=20)
        )
        # Escaping can grow a character to 3 bytes per UTF-8 byte: keep the directory name under 255 bytes.
        base = base.filter(lambda s: len(s.encode("utf-8")) * 3 <= 240)
    else:
        base = column_values(arrow_type)
        base = base.filter(lambda v: v is not None)
    return st.one_of(st.none(), base) if nulls else base


@st.composite
def _decimal_type(draw: st.DrawFn) -> pa.DataType:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    return pa.decimal128(precision, scale)


def arrow_types(*, nested: bool = True) -> st.SearchStrategy[pa.DataType]:
    """Arrow types with a Paimon equivalent: numbers, strings, binary, temporal, decimal, and (``nested``)
    lists, maps and structs of them."""
    scalars = st.one_of(
        st.sampled_from(
            [
                pa.bool_(),
                pa.int8(),
                pa.int16(),
                pa.int32(),
                pa.int64(),
                pa.float32(),
                pa.float64(),
                pa.string(),
                pa.binary(),
                pa.date32(),
                pa.time32("ms"),
                pa.timestamp("ms"),
                pa.timestamp("us"),
                pa.timestamp("us", tz="UTC"),
            ]
        ),
        _decimal_type(),
        st.integers(1, 16).map(pa.binary),
    )
    if not nested:
        return scalars
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            inner.map(pa.list_),
            st.tuples(st.sampled_from([pa.string(), pa.int32()]), inner).map(lambda kv: pa.map_(*kv)),
            st.lists(inner, min_size=1, max_size=3).map(
                lambda ts: pa.struct([pa.field(f"f{i}", t) for i, t in enumerate(ts)])
            ),
        ),
        max_leaves=4,
    )


def column_values(arrow_type: pa.DataType, *, nullable: bool = True) -> st.SearchStrategy[Any]:
    """Python values of one Arrow type, edges first (``pa.array(values, type=arrow_type)`` accepts them)."""
    values = _values(arrow_type)
    return st.one_of(st.none(), values) if nullable else values


def _values(t: pa.DataType) -> st.SearchStrategy[Any]:
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t):
        low, high = _INT_BOUNDS[t.bit_width]
        return st.one_of(st.sampled_from([low, high, 0, -1]), st.integers(low, high))
    if pa.types.is_floating(t):
        # NaN never equals itself, so comparisons of read-back data would need special cases.
        if pa.types.is_float32(t):
            return st.floats(width=32, allow_nan=False)
        return st.floats(allow_nan=False)
    if pa.types.is_string(t):
        return st.one_of(st.text(), st.text(max_size=1).map(lambda s: s * 5000), hostile_strings(50))
    if pa.types.is_fixed_size_binary(t):
        return st.binary(min_size=t.byte_width, max_size=t.byte_width)
    if pa.types.is_binary(t):
        return st.binary(max_size=64)
    if pa.types.is_date32(t):
        return st.integers(_MIN_DAY, _MAX_DAY).map(lambda d: dt.date(1970, 1, 1) + dt.timedelta(days=d))
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        per_day = 86_400 * _SECONDS[t.unit]
        return st.integers(0, per_day - 1).map(lambda v: _time_of(v, t.unit))
    if pa.types.is_timestamp(t):
        scale = _SECONDS[t.unit]
        low, high = (_MIN_DAY * 86_400) * scale, ((_MAX_DAY + 1) * 86_400) * scale - 1
        return st.one_of(st.sampled_from([low, high, 0, -1]), st.integers(low, high)).map(
            lambda v: pa.scalar(v, pa.int64()).cast(t).as_py()
        )
    if pa.types.is_decimal(t):
        digits = t.precision
        limit = 10**digits - 1
        # Built from text: Decimal arithmetic would round to the context's 28 digits.
        return st.integers(-limit, limit).map(lambda u: decimal.Decimal(f"{u}E-{t.scale}"))
    if pa.types.is_list(t):
        return st.lists(column_values(t.value_type), max_size=4)
    if pa.types.is_map(t):
        return st.dictionaries(_values(t.key_type), column_values(t.item_type), max_size=3).map(
            lambda d: list(d.items())
        )
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return st.fixed_dictionaries({f.name: column_values(f.type) for f in fields})
    raise TypeError(f"no value strategy for Arrow type {t}")


def _time_of(value: int, unit: str) -> dt.time:
    micros = value * 1_000_000 // _SECONDS[unit]
    return (dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=micros)).time()


@dataclass(frozen=True)
class TableSpec:
    """A table to create: its Arrow schema and partition keys (arguments of ``Catalog.create_table``)."""

    schema: pa.Schema
    partition_keys: tuple[str, ...] = ()


@st.composite
def table_specs(
    draw: st.DrawFn, *, max_columns: int = 6, max_partition_keys: int = 2, nested: bool = True
) -> TableSpec:
    """An append table's schema: ``id`` (BIGINT NOT NULL) first, then random columns, some partition keys."""
    count = draw(st.integers(1, max_columns))
    names = draw(
        st.lists(
            st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=8),
            min_size=count,
            max_size=count,
            unique=True,
        ).filter(lambda ns: "id" not in ns)
    )
    types = [draw(arrow_types(nested=nested)) for _ in names]
    keys = draw(st.integers(0, min(max_partition_keys, len(names))))
    for i in range(keys):
        types[i] = draw(partition_key_types())
    fields = [pa.field("id", pa.int64(), nullable=False)]
    fields += [pa.field(n, t) for n, t in zip(names, types, strict=True)]
    return TableSpec(pa.schema(fields), tuple(names[:keys]))


@st.composite
def arrow_tables(
    draw: st.DrawFn,
    schema: pa.Schema,
    *,
    max_rows: int = 20,
    partition_keys: Sequence[str] = (),
    hostile_partitions: bool = True,
    first_id: int = 0,
) -> pa.Table:
    """A ``pyarrow.Table`` fitting ``schema``; an ``id`` column, if present, is numbered from ``first_id``.

    Partition key columns get values from :func:`partition_values`, drawn from a handful per table so that
    partitions hold several rows.
    """
    rows = draw(st.integers(0, max_rows))
    columns: dict[str, pa.Array] = {}
    for field in schema:
        if field.name == "id":
            values: list[Any] = list(range(first_id, first_id + rows))
        elif field.name in partition_keys:
            pool = draw(
                st.lists(
                    partition_values(field.type, hostile=hostile_partitions, nulls=field.nullable),
                    min_size=1,
                    max_size=3,
                )
            )
            values = [draw(st.sampled_from(pool)) for _ in range(rows)]
        else:
            element = column_values(field.type, nullable=field.nullable)
            values = draw(st.lists(element, min_size=rows, max_size=rows))
        columns[field.name] = pa.array(values, type=field.type)
    return pa.table(columns, schema=schema)
