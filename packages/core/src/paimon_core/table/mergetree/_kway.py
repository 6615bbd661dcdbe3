"""A k-way merge of sorted runs that holds one chunk per run at a time (docs/primary-key-tables.md)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from paimon_core.table.mergetree._merge import (
    MergeEngine,
    merge_in_order,
    merge_order_of_runs,
    sort_indices_nulls_first,
)

__all__ = ["merge_sorted_runs"]


def merge_sorted_runs(
    runs: Sequence[Iterable[pa.Table]],
    key_names: Sequence[str],
    sequence_fields: Sequence[str],
    descending: bool,
    engine: MergeEngine,
) -> Iterator[pa.Table]:
    """Merge sorted runs (each an iterable of record chunks, every key once and in key order) chunk by chunk.

    The smallest last key among the runs' current chunks bounds what is complete: no run can still hold a
    key at or below it. Those rows are merged and handed out in key order; each run keeps the rest of its
    chunk, and the run that set the bound moves on to its next chunk.
    """
    keys = list(key_names)
    sources = [iter(run) for run in runs]
    current: list[pa.Table | None] = [_next_chunk(s) for s in sources]
    while True:
        live = [i for i, t in enumerate(current) if t is not None]
        if not live:
            return
        tables = [t for t in current if t is not None]
        combined = pa.concat_tables(tables)
        ends = np.cumsum([t.num_rows for t in tables])
        lasts = pa.concat_tables([t.slice(t.num_rows - 1) for t in tables]).select(keys)
        bound = int(sort_indices_nulls_first(lasts, [(k, "ascending") for k in keys])[0].as_py())
        indices, groups = merge_order_of_runs(combined, keys, sequence_fields, descending)
        position = int(np.flatnonzero(indices.to_numpy() == ends[bound] - 1)[0])
        cut = int(np.searchsorted(groups, groups[position], side="right"))
        yield merge_in_order(combined, indices.slice(0, cut), keys, engine, groups[:cut])
        taken = np.bincount(
            np.searchsorted(ends, indices.slice(0, cut).to_numpy(), side="right"), minlength=len(live)
        )
        for slot, i in enumerate(live):
            rest = tables[slot].slice(int(taken[slot]))
            current[i] = rest if rest.num_rows else _next_chunk(sources[i])


def _next_chunk(source: Iterator[pa.Table]) -> pa.Table | None:
    for chunk in source:
        if chunk.num_rows:
            return chunk
    return None
