"""Value statistics of data files (``_VALUE_STATS`` / ``_VALUE_STATS_COLS``, docs/format.md#statistics).

Java reads min/max/null counts from the Parquet footer and then applies the stats mode of each column
(``metadata.stats-mode``, overridden by ``fields.<name>.stats-mode``). This module computes the same numbers
from the Arrow data while it is written, one vectorized ``min_max`` per column chunk, and reproduces what
the Java footer extraction keeps:

* min/max for CHAR/VARCHAR, BOOLEAN, integers, FLOAT/DOUBLE, DECIMAL, DATE, TIME and TIMESTAMP[_LTZ] with
  precision ≤ 6; BINARY/VARBINARY (and BLOB) get only a null count; nested types (ARRAY, MAP, MULTISET, ROW,
  VARIANT, VECTOR) get nothing at all, as Parquet has no column statistics for them;
* modes: ``none`` (nothing), ``counts`` (null count), ``full``, ``truncate(N)`` (strings cut to N characters,
  the max incremented; when no upper bound exists min and max are both dropped);
* dense store (``metadata.stats-dense-store``, default true): columns with no stats at all are dropped and
  listed in ``_VALUE_STATS_COLS``, which is None when every column is kept.

A float column holding NaN gets no min/max here (Java's Parquet statistics skip NaN values; leaving the bounds
out can only make file skipping more cautious).

A collector given the Arrow schema of the Parquet file it describes (``footer_schema``) takes min/max from that
file's footer instead, as Java does: Arrow's Parquet writer has already computed them for every column chunk
(docs/format.md#statistics). It still counts nulls, looks for NaN in float columns and computes the bounds
itself of a string chunk holding a value longer than :data:`FOOTER_MAX_STAT_BYTES` (the footer leaves those
out), so the numbers are those of the data. One difference: Parquet writes a zero minimum as ``-0.0`` and a
zero maximum as ``+0.0``, which are the safe bounds for readers that tell the two apart (Java's
``Double.compare``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import ConfigError
from paimon_core.manifest import EMPTY_ROW_BYTES, SimpleStats
from paimon_core.types import (
    BigIntType,
    BinaryType,
    BlobType,
    BooleanType,
    CharType,
    DataField,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

__all__ = [
    "FOOTER_MAX_STAT_BYTES",
    "ColumnStats",
    "StatsCollector",
    "collect_stats",
    "decode_stats",
    "parse_stats_mode",
]

_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")
_MAX_CODE_POINT = 0x10FFFF
FOOTER_MAX_STAT_BYTES = 4096
"""Arrow's Parquet writer (like parquet-java) leaves a column chunk's min or max out of the footer when it
is longer than this many bytes."""
_SURROGATES = range(0xD800, 0xE000)

ColumnStats = tuple[Any, Any, "int | None"]
"""(min, max, null count) of one column; None where unknown."""


@dataclass(frozen=True)
class _Mode:
    kind: str  # "none" | "counts" | "full" | "truncate"
    length: int = 0


def parse_stats_mode(text: str) -> _Mode:
    """Parse ``none``, ``counts``, ``full`` or ``truncate(N)`` (any case, as Java accepts).

    Raises:
        ConfigError: anything else.
    """
    mode = text.strip().lower()
    if mode in ("none", "counts", "full"):
        return _Mode(mode)
    match = _TRUNCATE.match(mode)
    if match is None or int(match.group(1)) <= 0:
        raise ConfigError(
            f"invalid stats mode {text!r}: expected none, counts, full or truncate(N) with N > 0",
            "metadata.stats-mode",
        )
    return _Mode("truncate", int(match.group(1)))


# What the Java Parquet footer extraction yields per type: min/max, only a null count, or nothing.
_MIN_MAX_TYPES = (
    BooleanType,
    TinyIntType,
    SmallIntType,
    IntType,
    BigIntType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimeType,
    CharType,
    VarCharType,
)
_COUNT_ONLY_TYPES = (BinaryType, VarBinaryType, BlobType)


def _footer_kind(data_type: DataType) -> str:
    if isinstance(data_type, (TimestampType, LocalZonedTimestampType)):
        return "min_max" if data_type.precision <= 6 else "count"
    if isinstance(data_type, _MIN_MAX_TYPES):
        return "min_max"
    if isinstance(data_type, _COUNT_ONLY_TYPES):
        return "count"
    return "nothing"


def _truncate_max(value: str, length: int) -> str | None:
    """The smallest-prefix upper bound of ``value`` with at most ``length`` characters (Java's rule)."""
    if len(value) <= length:
        return value
    chars = list(value[:length])
    for i in range(length - 1, -1, -1):
        code = ord(chars[i]) + 1
        if code in _SURROGATES:
            code = _SURROGATES.stop  # lone surrogates cannot be encoded; the next scalar value still bounds
        if code <= _MAX_CODE_POINT:
            return "".join(chars[:i]) + chr(code)
    return None


class _ColumnAccumulator:
    def __init__(self, data_field: DataField, mode: _Mode, leaf: int | None = None) -> None:
        self.field = data_field
        self.mode = mode
        self.footer = _footer_kind(data_field.type)
        self.is_string = isinstance(data_field.type, (CharType, VarCharType))
        self.is_float = isinstance(data_field.type, (FloatType, DoubleType))
        self.want_min_max = self.footer == "min_max" and mode.kind in ("full", "truncate")
        # The Parquet leaf column whose footer statistics give the bounds (None: computed here).
        self.leaf = leaf if self.want_min_max else None
        self.min: Any = None
        self.max: Any = None
        self.nulls = 0
        self.has_nan = False
        self.own_values = 0  # non-null values whose bounds were computed here

    def update(self, column: pa.Array | pa.ChunkedArray) -> None:
        self.nulls += column.null_count
        if not self.want_min_max or self.has_nan or column.null_count == len(column):
            return
        if self.is_float and pc.any(pc.is_nan(column)).as_py():
            self.has_nan = True
            self.min = self.max = None
            return
        if self.leaf is not None and not (self.is_string and _longest_value(column) > FOOTER_MAX_STAT_BYTES):
            return  # the footer will hold this chunk's bounds
        self.own_values += len(column) - column.null_count
        bounds = pc.min_max(column)
        self._widen(bounds["min"].as_py(), bounds["max"].as_py())

    def _widen(self, low: Any, high: Any) -> None:
        if low is not None and (self.min is None or low < self.min):
            self.min = low
        if high is not None and (self.max is None or high > self.max):
            self.max = high

    def add_footer(self, metadata: Any, arrow_type: pa.DataType) -> bool:
        """Widen the bounds by the footer's; False when the footer misses bounds of values not seen here."""
        assert self.leaf is not None
        if metadata.num_row_groups and metadata.schema.column(self.leaf).path != self.field.name:
            return False  # not the column it should be: no bounds rather than another column's
        uncovered = 0
        for i in range(metadata.num_row_groups):
            stats = metadata.row_group(i).column(self.leaf).statistics
            if stats is None or not stats.has_min_max:
                uncovered += stats.num_values if stats is not None else metadata.row_group(i).num_rows
                continue
            try:
                low, high = _logical(stats.min_raw, arrow_type), _logical(stats.max_raw, arrow_type)
            except UnicodeDecodeError:  # not UTF-8: no bounds rather than wrong ones
                return False
            self._widen(low, high)
        return uncovered <= self.own_values

    def result(self, metadata: Any = None, arrow_type: pa.DataType | None = None) -> ColumnStats:
        if self.footer == "nothing" or self.mode.kind == "none":
            return (None, None, None)
        if self.mode.kind == "counts" or self.footer == "count" or self.has_nan:
            return (None, None, self.nulls)
        if self.leaf is not None:
            assert metadata is not None and arrow_type is not None, "footer statistics need the file's footer"
            if not self.add_footer(metadata, arrow_type):
                return (None, None, self.nulls)
        low, high = self.min, self.max
        if isinstance(low, float) and math.isnan(low):  # defensive: never store NaN bounds
            return (None, None, self.nulls)
        if self.mode.kind == "truncate" and self.is_string and low is not None and high is not None:
            low = low[: self.mode.length]
            high = _truncate_max(high, self.mode.length)
            if high is None:
                return (None, None, self.nulls)
        return (low, high, self.nulls)


def _longest_value(column: pa.Array | pa.ChunkedArray) -> int:
    """The byte length of the longest string in ``column`` (0 when all of them together are short)."""
    total = column.nbytes  # offsets and validity included: an upper bound of the longest value
    if total <= FOOTER_MAX_STAT_BYTES:
        return 0
    longest = pc.max(pc.binary_length(column)).as_py()
    return int(longest or 0)


def _logical(raw: Any, arrow_type: pa.DataType) -> Any:
    """The Python value of a Parquet footer bound (its physical value), as ``pc.min_max(...).as_py()`` gives
    it for a column of ``arrow_type`` as this project writes it (timestamps at their own unit, decimals
    as integers or big-endian two's complement bytes)."""
    if isinstance(raw, bytes):
        if pa.types.is_decimal(arrow_type):
            return Decimal(f"{int.from_bytes(raw, 'big', signed=True)}E-{arrow_type.scale}")
        return raw.decode("utf-8")
    if pa.types.is_decimal(arrow_type):
        return Decimal(f"{raw}E-{arrow_type.scale}")
    if pa.types.is_temporal(arrow_type):
        physical = pa.int32() if arrow_type.bit_width == 32 else pa.int64()
        return pa.array([raw], physical).view(arrow_type)[0].as_py()
    return raw


def leaf_columns(schema: pa.Schema) -> dict[str, int]:
    """The Parquet leaf column index of each top-level, not nested field of ``schema``."""
    leaves: dict[str, int] = {}
    index = 0
    for arrow_field in schema:
        if not pa.types.is_nested(arrow_field.type):
            leaves[arrow_field.name] = index
        index += _leaf_count(arrow_field.type)
    return leaves


_LIST_KINDS = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list, pa.types.is_list_view)


def _leaf_count(arrow_type: pa.DataType) -> int:
    if pa.types.is_struct(arrow_type):
        return sum(_leaf_count(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if pa.types.is_map(arrow_type):
        return _leaf_count(arrow_type.key_type) + _leaf_count(arrow_type.item_type)
    if any(is_kind(arrow_type) for is_kind in _LIST_KINDS):
        return _leaf_count(arrow_type.value_type)
    return 1


def _stats_type(data_type: DataType) -> DataType:
    """The type a stats row uses for a column; nested types (always null there) get a plain slot."""
    return data_type if _footer_kind(data_type) != "nothing" else BigIntType()


class StatsCollector:
    """Accumulates the value stats of one data file over the batches written to it.

    Args:
        fields: the file's columns (the write schema), in file order.
        stats_mode: ``metadata.stats-mode``.
        per_field_modes: ``{column: mode}`` from ``fields.<column>.stats-mode`` options.
        dense_store: ``metadata.stats-dense-store``.
        footer_schema: the Arrow schema of the Parquet file the batches are written to (holding ``fields``
            by name); min/max then come from its footer, which :meth:`result` must be given.
    """

    def __init__(
        self,
        fields: Sequence[DataField],
        stats_mode: str = "truncate(16)",
        per_field_modes: Mapping[str, str] | None = None,
        dense_store: bool = True,
        footer_schema: pa.Schema | None = None,
    ) -> None:
        default = parse_stats_mode(stats_mode)
        modes = per_field_modes or {}
        self.fields = list(fields)
        self.dense_store = dense_store
        self._footer_schema = footer_schema
        leaves = leaf_columns(footer_schema) if footer_schema is not None else {}
        self._columns = [
            _ColumnAccumulator(
                f, parse_stats_mode(modes[f.name]) if f.name in modes else default, leaves.get(f.name)
            )
            for f in self.fields
        ]

    def update(self, data: pa.RecordBatch | pa.Table) -> None:
        """Add a batch (or table) whose columns are the collector's fields, by name."""
        for accumulator in self._columns:
            accumulator.update(data.column(accumulator.field.name))

    def column_stats(self, footer: Any = None) -> list[ColumnStats]:
        """Per column (min, max, null count); ``footer``: the written file's ``pyarrow.parquet.FileMetaData``."""
        schema = self._footer_schema
        return [
            c.result(footer, schema.field(c.field.name).type if schema is not None else None)
            for c in self._columns
        ]

    def result(self, footer: Any = None) -> tuple[SimpleStats, tuple[str, ...] | None]:
        """The stats for ``_VALUE_STATS`` and the column list for ``_VALUE_STATS_COLS``; ``footer`` as for
        :meth:`column_stats`."""
        return build_value_stats(self.fields, self.column_stats(footer), self.dense_store)


def build_value_stats(
    fields: Sequence[DataField], stats: Sequence[ColumnStats], dense_store: bool = True
) -> tuple[SimpleStats, tuple[str, ...] | None]:
    """Serialize per-column stats as Java's ``SimpleStatsConverter.toBinary`` does."""
    from paimon_core.binary_row import serialize_row

    kept = list(range(len(fields)))
    if dense_store:
        kept = [i for i, s in enumerate(stats) if s != (None, None, None)]
    cols = None if len(kept) == len(fields) else tuple(fields[i].name for i in kept)
    if not kept:
        return SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ()), cols
    types = [_stats_type(fields[i].type) for i in kept]
    mins = [stats[i][0] for i in kept]
    maxs = [stats[i][1] for i in kept]
    nulls = tuple(stats[i][2] for i in kept)
    return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), nulls), cols


def collect_stats(
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
    fields: Sequence[DataField],
    stats_mode: str = "truncate(16)",
    per_field_modes: Mapping[str, str] | None = None,
    dense_store: bool = True,
) -> tuple[SimpleStats, tuple[str, ...] | None]:
    """Value stats of a whole file's data in one call (see :class:`StatsCollector`)."""
    collector = StatsCollector(fields, stats_mode, per_field_modes, dense_store)
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        collector.update(data)
    else:
        for batch in data:
            collector.update(batch)
    return collector.result()


def decode_stats(
    stats: SimpleStats,
    value_stats_cols: Sequence[str] | None,
    file_schema_fields: Sequence[DataField],
    write_cols: Sequence[str] | None = None,
    columns: Iterable[str] | None = None,
) -> dict[str, ColumnStats]:
    """Decode a file's value stats into ``{column name: (min, max, null count)}`` for file skipping.

    Names are the file schema's; columns without stats are absent. Stats that do not match the schema
    (another writer's layout) decode to ``{}``, so they never cause a file to be skipped.

    Args:
        stats: ``_VALUE_STATS``.
        value_stats_cols: ``_VALUE_STATS_COLS``: None = all columns of the file (or its ``write_cols``).
        file_schema_fields: the fields of the schema the file was written with.
        write_cols: ``_WRITE_COLS`` of the file, if any.
        columns: decode only these columns (file schema names); None = all.
    """
    from paimon_core.binary_row import codec_for

    by_name = {f.name: f for f in file_schema_fields}
    if value_stats_cols is not None:
        names = list(value_stats_cols)
    elif write_cols is not None:
        names = [n for n in write_cols if n in by_name]
    else:
        names = list(by_name)
    if not names or any(n not in by_name for n in names):
        return {}
    wanted = set(names) if columns is None else set(columns)
    positions = [i for i, n in enumerate(names) if n in wanted]
    if not positions:
        return {}
    codec = codec_for([_stats_type(by_name[n].type) for n in names])
    try:
        mins = codec.deserialize_fields(stats.min_values, positions)
        maxs = codec.deserialize_fields(stats.max_values, positions)
    except Exception:  # unreadable stats prove nothing
        return {}
    nulls = stats.null_counts
    result: dict[str, ColumnStats] = {}
    for low, high, i in zip(mins, maxs, positions, strict=True):
        null_count = nulls[i] if nulls is not None and i < len(nulls) else None
        if low is None and high is None and null_count is None:
            continue
        result[names[i]] = (low, high, null_count)
    return result
