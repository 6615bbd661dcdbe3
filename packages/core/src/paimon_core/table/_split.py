"""Input rows cut into bounded pieces and grouped by (partition, bucket) for the writers.

See docs/writing.md#the-path-of-a-batch. A batch larger than a piece is sliced (no copy), so one huge
input never makes a copy of its own size; a piece that spans several groups is reordered once by a single
``take`` and each group is copied out of it, so a buffered group owns its memory and never pins the rest of
the piece.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["group_rows", "pieces"]


def pieces(batch: pa.RecordBatch, max_bytes: int) -> Iterator[pa.RecordBatch]:
    """``batch`` as zero-copy slices of about ``max_bytes`` each (itself when it is no larger)."""
    size = batch.nbytes
    if size <= max_bytes or batch.num_rows <= 1:
        yield batch
        return
    rows = max(1, int(batch.num_rows * max_bytes / size))
    for start in range(0, batch.num_rows, rows):
        yield batch.slice(start, rows)


def group_rows(
    batch: pa.RecordBatch, keys: Sequence[pa.Array]
) -> Iterator[tuple[tuple[Any, ...], pa.RecordBatch]]:
    """The rows of ``batch`` grouped by the values of the ``keys`` arrays, arrival order kept in a group.

    A batch holding one group is yielded as it is; otherwise every group is a new batch.
    """
    constant = _constant_key(keys)
    if constant is not None:
        yield constant, batch
        return
    columns = {f"k{i}": key for i, key in enumerate(keys)}
    columns["row"] = pa.array(np.arange(batch.num_rows, dtype=np.int64))
    grouped = pa.table(columns).group_by(list(columns)[:-1], use_threads=False).aggregate([("row", "list")])
    rows = grouped.column("row_list").combine_chunks()
    offsets = rows.offsets.to_numpy()
    values = [grouped.column(f"k{i}").to_pylist() for i in range(len(keys))]
    # One take puts every group's rows side by side; copying each group out of it (contiguous, so a
    # memcpy) is much cheaper than a take per group and leaves no group holding the others' rows.
    ordered = batch.take(rows.values)
    for g in range(grouped.num_rows):
        start, end = int(offsets[g]), int(offsets[g + 1])
        part = ordered.slice(start, end - start)
        yield tuple(v[g] for v in values), pa.concat_batches([part])


def _constant_key(keys: Sequence[pa.Array]) -> tuple[Any, ...] | None:
    """The key when every row has the same one (cheap min/max checks); None when unknown or not."""
    found: list[Any] = []
    for key in keys:
        if pa.types.is_floating(key.type):
            return None  # min/max skip NaN: they cannot tell NaN and numbers apart
        if key.null_count == len(key):
            found.append(None)
            continue
        if key.null_count:
            return None
        bounds = pc.min_max(key)
        low = bounds["min"]
        if low != bounds["max"]:
            return None
        found.append(low.as_py())
    return tuple(found)
