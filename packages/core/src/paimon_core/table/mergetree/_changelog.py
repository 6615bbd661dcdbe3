"""What the ``lookup`` and ``full-compaction`` changelog producers compute while compacting.

See docs/primary-key-tables.md ("Changelog"). Both compare, per key, the value the table showed before the
compaction ("before") with the value after it ("after") and write the difference: ``+I`` for a new key,
``-D`` for a removed one, ``-U``/``+U`` for a changed one (skipped when equal and
``changelog-producer.row-deduplicate``). They differ in what "before" is:

* ``full-compaction``: the key's record on the top level, the only level a full compaction writes;
* ``lookup``: the newest record of the key on a level above 0, found in the compaction or looked up in the
  levels above its output. In lookup mode every compaction of level-0 records writes the key's complete
  value, so a newer high-level record supersedes older ones (:func:`drop_superseded`).

Records travel with the level of the file they came from; everything is vectorised per key group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.table.mergetree._aggregates import last_where
from paimon_core.table.mergetree._layout import VALUE_KIND, KeyValueLayout
from paimon_core.table.mergetree._merge import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    MergeEngine,
    group_ids,
    merge_order,
)

__all__ = [
    "Compacted",
    "LeveledRecords",
    "drop_superseded",
    "full_compaction_changelog",
    "lookup_changelog",
    "new_keys_changelog",
]

Levels = npt.NDArray[np.int32]
Indices = npt.NDArray[np.int64]


@dataclass(frozen=True)
class LeveledRecords:
    """Records in merge order with their key group ids and the level each came from."""

    records: pa.Table
    groups: Indices
    levels: Levels

    @classmethod
    def order(
        cls, records: pa.Table, levels: Levels, layout: KeyValueLayout, descending: bool
    ) -> LeveledRecords:
        if records.num_rows == 0:
            return cls(records, np.zeros(0, np.int64), levels)
        indices = merge_order(records, layout.key_names, layout.sequence_fields, descending)
        ordered = records.take(indices)
        return cls(ordered, group_ids(ordered, layout.key_names), levels[indices.to_numpy()])

    def filter(self, mask: npt.NDArray[np.bool_]) -> LeveledRecords:
        """The rows where ``mask`` holds, group ids made dense again."""
        kept = self.groups[mask]
        dense = np.unique(kept, return_inverse=True)[1].astype(np.int64) if len(kept) else kept
        return LeveledRecords(self.records.filter(pa.array(mask)), dense, self.levels[mask])

    @property
    def group_count(self) -> int:
        return int(self.groups[-1]) + 1 if len(self.groups) else 0


@dataclass(frozen=True)
class Compacted:
    """A compaction's merged records (one per key, retractions kept) and the changelog it produced."""

    merged: pa.Table
    changelog: pa.Table


def drop_superseded(leveled: LeveledRecords) -> LeveledRecords:
    """Lookup mode: of a key's records above level 0 only the newest counts (it holds the full value)."""
    high = leveled.levels > 0
    if not high.any():
        return leveled
    newest = last_where(leveled.groups, high, leveled.group_count)
    keep = ~high
    keep[newest[newest >= 0]] = True
    return leveled if keep.all() else leveled.filter(keep)


def full_compaction_changelog(
    leveled: LeveledRecords, engine: MergeEngine, max_level: int, deduplicate: bool, values: Sequence[str]
) -> Compacted:
    """Merge a full compaction's records and diff each key against its top-level record."""
    merged, owners = engine.merge_groups(leveled.records, leveled.groups)
    count = leveled.group_count
    sizes = np.bincount(leveled.groups, minlength=count)
    before = last_where(leveled.groups, leveled.levels == max_level, count)
    after = _per_group(owners, count)
    # A key with one record is unchanged when that record is on the top level, new otherwise (Java's
    # wrapper never merges a single record).
    single = sizes == 1
    single_new = single & (before < 0)
    before = np.where(single, -1, before)
    after = np.where(single & ~single_new, -1, after)
    return Compacted(merged, _diff(leveled.records, before, merged, after, deduplicate, values))


def lookup_changelog(
    leveled: LeveledRecords, engine: MergeEngine, deduplicate: bool, values: Sequence[str]
) -> Compacted:
    """Merge a lookup compaction's records (superseded ones dropped, looked-up "before" records included)
    and diff the keys that have level-0 records against their high-level record."""
    leveled = drop_superseded(leveled)
    merged, owners = engine.merge_groups(leveled.records, leveled.groups, passthrough=False)
    count = leveled.group_count
    has_level0 = np.zeros(count, dtype=bool)
    has_level0[leveled.groups[leveled.levels == 0]] = True
    before = np.where(has_level0, last_where(leveled.groups, leveled.levels > 0, count), -1)
    after = np.where(has_level0, _per_group(owners, count), -1)
    return Compacted(merged, _diff(leveled.records, before, merged, after, deduplicate, values))


def new_keys_changelog(merged: pa.Table, from_level0: npt.NDArray[np.bool_]) -> pa.Table:
    """First-row with ``lookup``: the kept rows that are new keys (came from level 0) as ``+I``."""
    rows = merged.filter(pa.array(from_level0))
    return _with_kinds(rows, np.full(rows.num_rows, INSERT, np.int8))


# --- the diff ----------------------------------------------------------------------------------------------


def _per_group(owners: Indices, count: int) -> Indices:
    """For each group, the index of its result row (-1: the merge produced none)."""
    found = np.full(count, -1, dtype=np.int64)
    found[owners] = np.arange(len(owners))
    return found


def _is_add(kinds: npt.NDArray[np.int8]) -> npt.NDArray[np.bool_]:
    add: npt.NDArray[np.bool_] = (kinds == INSERT) | (kinds == UPDATE_AFTER)
    return add


def _diff(
    records: pa.Table,
    before: Indices,
    merged: pa.Table,
    after: Indices,
    deduplicate: bool,
    values: Sequence[str],
) -> pa.Table:
    """Per group: ``before`` (a record index or -1) against ``after`` (a merged row index or -1)."""
    record_kinds = records.column(VALUE_KIND).to_numpy()
    merged_kinds = merged.column(VALUE_KIND).to_numpy()
    has_before = before >= 0
    has_before[has_before] &= _is_add(record_kinds[before[has_before]])
    has_after = after >= 0
    has_after[has_after] &= _is_add(merged_kinds[after[has_after]])
    inserts = ~has_before & has_after
    deletes = has_before & ~has_after
    updates = has_before & has_after
    if deduplicate and updates.any():
        changed = np.flatnonzero(updates)
        equal = _rows_equal(records.take(before[changed]), merged.take(after[changed]), values)
        updates[changed[equal]] = False
    groups = np.arange(len(before))
    parts = [
        (records, before[deletes], groups[deletes], 0, DELETE),
        (records, before[updates], groups[updates], 0, UPDATE_BEFORE),
        (merged, after[updates], groups[updates], 1, UPDATE_AFTER),
        (merged, after[inserts], groups[inserts], 1, INSERT),
    ]
    tables, order_group, order_slot = [], [], []
    for source, rows, owners, slot, kind in parts:
        if len(rows):
            tables.append(_with_kinds(source.take(pa.array(rows)), np.full(len(rows), kind, np.int8)))
            order_group.append(owners)
            order_slot.append(np.full(len(rows), slot))
    if not tables:
        return records.schema.empty_table()
    combined = pa.concat_tables(tables)
    order = np.lexsort((np.concatenate(order_slot), np.concatenate(order_group)))
    return combined.take(pa.array(order))


def _with_kinds(records: pa.Table, kinds: npt.NDArray[np.int8]) -> pa.Table:
    index = records.schema.get_field_index(VALUE_KIND)
    return records.set_column(index, records.schema.field(index), pa.array(kinds, pa.int8()))


def _rows_equal(left: pa.Table, right: pa.Table, values: Sequence[str]) -> npt.NDArray[np.bool_]:
    """Row-wise equality of the value columns (nulls equal nulls), as Java's record equaliser."""
    equal = np.ones(left.num_rows, dtype=bool)
    for name in values:
        a, b = left.column(name), right.column(name)
        try:
            same = pc.fill_null(pc.equal(a, b), False)
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            equal &= pc.or_(same, both_null).to_numpy(zero_copy_only=False)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # nested types: compare as Python values
            equal &= np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)], bool)
    return equal
