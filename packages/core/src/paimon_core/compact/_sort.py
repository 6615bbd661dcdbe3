"""Sort compaction: rewrite whole partitions ordered by columns, so file statistics prune well.

``order`` sorts lexicographically by the ``order_by`` columns; ``zorder`` sorts by a Z-order key that
interleaves the bits of the columns' normalized values, so a filter on any subset of the columns skips files.
Each column is normalized to its dense rank scaled onto the bits it gets in a 64-bit key (nulls last), which
spreads skewed values evenly; the interleaving is vectorized with numpy.

The result is committed like any compaction (COMPACT: the partition's files out, the sorted files in), so
rows appended meanwhile are kept; Paimon's Java action overwrites the partitions instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.compact._task import read_files, write_sorted
from paimon_core.errors import ConfigError, SchemaError
from paimon_core.manifest import DataFileMeta
from paimon_core.table import CommitMessage

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["ORDER_STRATEGIES", "SortCompactTask", "check_sort_columns", "sort_table", "z_order_key"]

ORDER_STRATEGIES = ("order", "zorder")
_KEY_BITS = 64


def check_sort_columns(table: TableStore, order_strategy: str, order_by: Sequence[str]) -> None:
    """Raise when the strategy or columns cannot be used on this table."""
    if table.schema.primary_keys:
        raise ConfigError(
            f"sort compaction is for append tables; {table.identifier} has a primary key (its files are "
            "sorted by key)"
        )
    if order_strategy not in ORDER_STRATEGIES:
        raise ConfigError(
            f"order_strategy must be one of {', '.join(ORDER_STRATEGIES)}, not {order_strategy!r}"
        )
    if not order_by:
        raise ConfigError("sort compaction needs order_by columns")
    unknown = [c for c in order_by if c not in table.field_names]
    if unknown:
        raise SchemaError(f"order_by columns not in the table: {', '.join(unknown)}")
    partition_columns = [c for c in order_by if c in table.partition_keys]
    if partition_columns:
        raise SchemaError(f"order_by columns must not be partition keys: {', '.join(partition_columns)}")
    if table.bucket != -1:
        raise ConfigError("sort compaction needs an unaware-bucket table ('bucket' = -1)", "bucket")


def _normalized(column: pa.ChunkedArray | pa.Array, bits: int) -> np.ndarray:
    """Dense rank of each value (nulls last), scaled onto ``[0, 2**bits)`` as uint64."""
    ranks = pc.rank(column, sort_keys="ascending", tiebreaker="dense")  # nulls rank last
    values: np.ndarray = np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.uint64) - np.uint64(1)
    distinct = int(values.max()) + 1 if len(values) else 1
    top = (1 << bits) - 1
    if distinct <= 1:
        return values
    if distinct - 1 <= top:
        # Spread the ranks over the full range so that every column fills its high bits.
        scaled = np.minimum(values.astype(np.float64) * (top / (distinct - 1)), float(top))
        result: np.ndarray = scaled.astype(np.uint64)
        return result
    shifted: np.ndarray = values >> np.uint64((distinct - 1).bit_length() - bits)
    return shifted


def z_order_key(data: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """A uint64 Z-order key per row: bit ``b`` of column ``j`` lands at bit ``b * n + (n - 1 - j)``."""
    n = len(columns)
    bits = max(1, min(_KEY_BITS // n, 32))
    normalized = [_normalized(data.column(c), bits) for c in columns]
    key = np.zeros(data.num_rows, dtype=np.uint64)
    one = np.uint64(1)
    for bit in range(bits):
        for j, values in enumerate(normalized):
            position = bit * n + (n - 1 - j)  # the first column is the most significant of each group
            key |= ((values >> np.uint64(bit)) & one) << np.uint64(position)
    return key


def sort_table(data: pa.Table, order_strategy: str, order_by: Sequence[str]) -> pa.Table:
    """``data`` ordered by the strategy."""
    if data.num_rows == 0:
        return data
    if order_strategy == "order":
        indices = pc.sort_indices(data, sort_keys=[(c, "ascending") for c in order_by])  # nulls last
    else:
        indices = pa.array(np.argsort(z_order_key(data, order_by), kind="stable"))
    return data.take(indices)


@dataclass(frozen=True)
class SortCompactTask:
    """Sort all ``files`` of one partition and rewrite them (unaware-bucket tables: bucket 0)."""

    partition: bytes
    files: tuple[DataFileMeta, ...]
    order_strategy: str
    order_by: tuple[str, ...]
    bucket: int = 0
    total_buckets: int = -1

    @property
    def input_bytes(self) -> int:
        return sum(f.file_size for f in self.files)

    def run(self, table: TableStore) -> CommitMessage:
        chunks = list(read_files(table, self.partition, self.bucket, self.files))
        data = pa.concat_tables(chunks) if chunks else table.arrow_schema.empty_table()
        ordered = sort_table(data, self.order_strategy, self.order_by)
        first_sequence = min(f.min_sequence_number for f in self.files)
        after = write_sorted(table, self.partition, self.bucket, iter([ordered]), first_sequence)
        return CommitMessage(
            self.partition,
            self.bucket,
            self.total_buckets,
            compact_before=self.files,
            compact_after=tuple(after),
        )
