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
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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

__all__ = ["ColumnStats", "StatsCollector", "collect_stats", "decode_stats", "parse_stats_mode"]

_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")
_MAX_CODE_POINT = 0x10FFFF
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
    def __init__(self, data_field: DataField, mode: _Mode) -> None:
        self.field = data_field
        self.mode = mode
        self.footer = _footer_kind(data_field.type)
        self.is_string = isinstance(data_field.type, (CharType, VarCharType))
        self.is_float = isinstance(data_field.type, (FloatType, DoubleType))
        self.want_min_max = self.footer == "min_max" and mode.kind in ("full", "truncate")
        self.min: Any = None
        self.max: Any = None
        self.nulls = 0
        self.has_nan = False

    def update(self, column: pa.Array | pa.ChunkedArray) -> None:
        self.nulls += column.null_count
        if not self.want_min_max or self.has_nan or column.null_count == len(column):
            return
        if self.is_float and pc.any(pc.is_nan(column)).as_py():
            self.has_nan = True
            self.min = self.max = None
            return
        bounds = pc.min_max(column)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is not None and (self.min is None or low < self.min):
            self.min = low
        if high is not None and (self.max is None or high > self.max):
            self.max = high

    def result(self) -> ColumnStats:
        if self.footer == "nothing" or self.mode.kind == "none":
            return (None, None, None)
        if self.mode.kind == "counts" or self.footer == "count" or self.has_nan:
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
    """

    def __init__(
        self,
        fields: Sequence[DataField],
        stats_mode: str = "truncate(16)",
        per_field_modes: Mapping[str, str] | None = None,
        dense_store: bool = True,
    ) -> None:
        default = parse_stats_mode(stats_mode)
        modes = per_field_modes or {}
        self.fields = list(fields)
        self.dense_store = dense_store
        self._columns = [
            _ColumnAccumulator(f, parse_stats_mode(modes[f.name]) if f.name in modes else default)
            for f in self.fields
        ]

    def update(self, data: pa.RecordBatch | pa.Table) -> None:
        """Add a batch (or table) whose columns are the collector's fields, by name."""
        for accumulator in self._columns:
            accumulator.update(data.column(accumulator.field.name))

    def column_stats(self) -> list[ColumnStats]:
        return [c.result() for c in self._columns]

    def result(self) -> tuple[SimpleStats, tuple[str, ...] | None]:
        """The stats for ``_VALUE_STATS`` and the column list for ``_VALUE_STATS_COLS``."""
        return build_value_stats(self.fields, self.column_stats(), self.dense_store)


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
