"""Ordering records and the merge engines of primary-key tables, vectorised over Arrow.

See docs/primary-key-tables.md ("Records and their order", "Merge engines"). Records are sorted once by
(key, sequence fields, sequence number) and cut into key groups; an engine then picks or folds rows per
group with numpy index arithmetic and Arrow kernels. The engines give what Java's merge functions give,
record for record; flushes, compactions and reads each merge a part, which changes nothing where those
functions are associative over consecutive runs of a key's records (all but a few, named in the docs).
The options that configure an engine are read in ``_merge_options``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import MergeError
from paimon_core.table.mergetree._aggregates import (
    Aggregator,
    first_where,
    last_where,
    take_or_null,
)
from paimon_core.table.mergetree._layout import SEQUENCE_NUMBER, VALUE_KIND

__all__ = [
    "DELETE",
    "FIRST_ROW_RETRACTION_REFUSAL",
    "INSERT",
    "UPDATE_AFTER",
    "UPDATE_BEFORE",
    "MergeEngine",
    "merge_in_order",
    "merge_order",
    "merge_order_of_runs",
    "order_of_runs",
    "order_records",
]

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3

Indices = npt.NDArray[np.int64]


def order_records(
    records: pa.Table,
    key_columns: Sequence[str],
    sequence_fields: Sequence[str] = (),
    descending_sequence: bool = False,
) -> tuple[pa.Table, Indices]:
    """Sort records into merge order (key, sequence fields, sequence number; nulls first) and return them
    with a group id per row (equal keys share one; ids count up from 0)."""
    if records.num_rows == 0:
        return records, np.zeros(0, dtype=np.int64)
    ordered = records.take(merge_order(records, key_columns, sequence_fields, descending_sequence))
    return ordered, group_ids(ordered, key_columns)


def merge_order(
    records: pa.Table,
    key_columns: Sequence[str],
    sequence_fields: Sequence[str] = (),
    descending_sequence: bool = False,
) -> pa.Array:
    """The indices that put records into merge order (see :func:`order_records`)."""
    order = "descending" if descending_sequence else "ascending"
    sort_keys = [(k, "ascending") for k in key_columns]
    sort_keys += [(f, order) for f in sequence_fields]
    sort_keys.append((SEQUENCE_NUMBER, "ascending"))
    return sort_indices_nulls_first(records, sort_keys)


def order_of_runs(
    records: pa.Table, key_columns: Sequence[str], sequence_fields: Sequence[str]
) -> tuple[pa.Array, Indices] | None:
    """The merge order of records that are sorted runs one after another, oldest first, and the group id
    of each ordered row; None when this shortcut does not apply (then use :func:`merge_order`).

    Oldest first, a key's records already follow their sequence numbers, so a stable sort on one numeric
    key merges the runs in linear time (numpy's stable sort finds the runs) where a sort on (key,
    sequence number) costs a full sort. The sequence numbers are checked: runs out of age order (another
    writer's files) give None.
    """
    if len(key_columns) != 1 or sequence_fields:
        return None
    keys = records.column(key_columns[0])
    if keys.null_count or not _numpy_comparable(keys.type):
        return None
    values = keys.to_numpy()
    order = np.argsort(values, kind="stable")
    values = values[order]
    sequence = records.column(SEQUENCE_NUMBER).to_numpy()[order]
    new_key = values[1:] != values[:-1]
    if np.any(~new_key & (sequence[1:] < sequence[:-1])):
        return None
    return pa.array(order), _ids_from_boundaries(new_key)


def merge_order_of_runs(
    records: pa.Table, key_columns: Sequence[str], sequence_fields: Sequence[str], descending: bool
) -> tuple[pa.Array, Indices]:
    """The merge order and group ids of records that are sorted runs one after another, oldest first: the
    linear shortcut of :func:`order_of_runs` where it applies, else the full sort of :func:`merge_order`."""
    presorted = order_of_runs(records, key_columns, sequence_fields)
    if presorted is not None:
        return presorted
    order = merge_order(records, key_columns, sequence_fields, descending)
    return order, group_ids(records.select(list(key_columns)).take(order), key_columns)


def sort_indices_nulls_first(table: pa.Table, sort_keys: Sequence[tuple[str, str]]) -> pa.Array:
    """``pc.sort_indices`` with nulls first in every key (per-key placement since pyarrow 25)."""
    if _PER_KEY_NULL_PLACEMENT:
        keys = [(name, order, "at_start") for name, order in sort_keys]
        return pc.sort_indices(table, sort_keys=keys)
    return pc.sort_indices(table, sort_keys=list(sort_keys), null_placement="at_start")


_PER_KEY_NULL_PLACEMENT = int(pa.__version__.split(".")[0]) >= 25


def group_ids(ordered: pa.Table, key_columns: Sequence[str]) -> Indices:
    """A group id per row of key-ordered records: equal keys share one; ids count up from 0."""
    rows = ordered.num_rows
    boundary = np.zeros(max(rows - 1, 0), dtype=bool)
    for name in key_columns:
        column = ordered.column(name)
        if column.null_count == 0 and _numpy_comparable(column.type):
            values = column.to_numpy()
            boundary |= values[1:] != values[:-1]
            continue
        column = column.combine_chunks()
        before, after = column.slice(0, rows - 1), column.slice(1)
        differs = pc.fill_null(pc.not_equal(after, before), True)
        both_null = pc.and_(pc.is_null(after), pc.is_null(before))
        differs = pc.and_(differs, pc.invert(both_null))
        boundary |= differs.to_numpy(zero_copy_only=False)
    return _ids_from_boundaries(boundary)


def _ids_from_boundaries(boundary: npt.NDArray[np.bool_]) -> Indices:
    """Group ids of rows, given whether each row after the first starts a new group."""
    ids = np.zeros(len(boundary) + 1, dtype=np.int64)
    np.cumsum(boundary, out=ids[1:])
    return ids


def _numpy_comparable(data_type: pa.DataType) -> bool:
    # Keys numpy compares exactly and cheaply (floats are left to Arrow: NaN keys must group together).
    return bool(pa.types.is_integer(data_type) or pa.types.is_temporal(data_type))


def merge_in_order(
    records: pa.Table,
    order: pa.Array,
    key_columns: Sequence[str],
    engine: MergeEngine,
    groups: Indices | None = None,
) -> pa.Table:
    """Merge ``records`` given the indices that put them into merge order (see :func:`merge_order`), and
    the group id of each ordered row when the caller has them.

    An engine that only picks records sees the ordered keys and row kinds, and the picked records are
    taken once: the value columns are never reordered as a whole.
    """
    if records.num_rows == 0:
        return records
    if isinstance(engine, SelectingEngine):
        if groups is None:
            groups = group_ids(records.select(list(key_columns)).take(order), key_columns)
        kinds: npt.NDArray[np.int8] = records.column(VALUE_KIND).to_numpy()[order.to_numpy()]
        chosen = engine.select(kinds, groups)
        return records.take(order.take(pa.array(chosen)))
    ordered = records.take(order)
    return engine.merge(ordered, group_ids(ordered, key_columns) if groups is None else groups)


# --- per-group index arithmetic (groups are non-decreasing) ----------------------------------------------


def _group_count(groups: Indices) -> int:
    return int(groups[-1]) + 1 if len(groups) else 0


def _group_ends(groups: Indices) -> npt.NDArray[np.bool_]:
    """Whether each row is the last of its group."""
    ends: npt.NDArray[np.bool_] = np.r_[groups[1:] != groups[:-1], True]
    return ends


def _singles(groups: Indices) -> npt.NDArray[np.bool_]:
    """Whether each row is the only record of its group."""
    starts: npt.NDArray[np.bool_] = np.r_[True, groups[1:] != groups[:-1]]
    single: npt.NDArray[np.bool_] = starts & _group_ends(groups)
    return single


def _kinds(records: pa.Table) -> npt.NDArray[np.int8]:
    kinds: npt.NDArray[np.int8] = records.column(VALUE_KIND).to_numpy()
    return kinds


def _is_retract(kinds: npt.NDArray[np.int8]) -> npt.NDArray[np.bool_]:
    retract: npt.NDArray[np.bool_] = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
    return retract


def _assemble(
    records: pa.Table, columns: dict[str, pa.Array], sequence: pa.Array, kinds: pa.Array
) -> pa.Table:
    arrays = []
    for field in records.schema:
        if field.name == SEQUENCE_NUMBER:
            arrays.append(sequence)
        elif field.name == VALUE_KIND:
            arrays.append(kinds)
        else:
            arrays.append(columns[field.name])
    return pa.Table.from_arrays(arrays, schema=records.schema)


# --- engines ---------------------------------------------------------------------------------------------


class MergeEngine(ABC):
    """Merges the ordered records of each key into one record (or none)."""

    def merge(self, records: pa.Table, groups: Indices) -> pa.Table:
        """Merge ordered records (see :func:`order_records`) into one record per group (or none).

        A key with a single record keeps it as it is, row kind included, as Java's reducer wrapper does
        (a lone ``-D`` stays a retraction, a lone ``+I`` is not aggregated).
        """
        return self.merge_groups(records, groups)[0]

    def merge_groups(
        self, records: pa.Table, groups: Indices, passthrough: bool = True
    ) -> tuple[pa.Table, Indices]:
        """As :meth:`merge`, with the group id of each result row (a group may have none).

        ``passthrough=False`` merges single records too, as Java's lookup changelog wrappers do (a lone
        ``-D`` of an aggregation table becomes an aggregated ``+I``).
        """
        if records.num_rows == 0:
            return records, groups
        if not passthrough:
            return self._merge(records, groups)
        counts = np.bincount(groups)
        single = counts[groups] == 1
        if single.all():
            return records, groups
        if not single.any():
            return self._merge(records, groups)
        multi = ~single
        merged_groups, dense = np.unique(groups[multi], return_inverse=True)
        merged, ids = self._merge(records.filter(multi), dense.astype(np.int64))
        combined = pa.concat_tables([records.filter(single), merged])
        owners = np.concatenate([groups[single], merged_groups[ids]])
        order = np.argsort(owners, kind="stable")
        return combined.take(pa.array(order)), owners[order]

    @abstractmethod
    def _merge(self, records: pa.Table, groups: Indices) -> tuple[pa.Table, Indices]:
        """Merge the groups (each of two records or more); returns the result and each row's group id."""


class SelectingEngine(MergeEngine):
    """An engine that keeps one record of a key as it is, or none: it decides from the ordered row kinds
    and key groups alone, so a caller may take just the records it picks (:func:`merge_in_order`)."""

    def merge_groups(
        self, records: pa.Table, groups: Indices, passthrough: bool = True
    ) -> tuple[pa.Table, Indices]:
        if records.num_rows == 0:
            return records, groups
        chosen = self.select(_kinds(records), groups, passthrough)
        return records.take(pa.array(chosen)), groups[chosen]

    def _merge(self, records: pa.Table, groups: Indices) -> tuple[pa.Table, Indices]:
        return self.merge_groups(records, groups, passthrough=False)

    @abstractmethod
    def select(self, kinds: npt.NDArray[np.int8], groups: Indices, passthrough: bool = True) -> Indices:
        """The rows (ascending) of the records kept: at most one per group (see :meth:`merge_groups` for
        ``passthrough``)."""


class Deduplicate(SelectingEngine):
    """The last record wins, whatever its kind (a trailing ``-D`` deletes the key)."""

    def __init__(self, ignore_delete: bool) -> None:
        self.ignore_delete = ignore_delete

    def select(self, kinds: npt.NDArray[np.int8], groups: Indices, passthrough: bool = True) -> Indices:
        if not self.ignore_delete:
            return np.flatnonzero(_group_ends(groups))
        keep = ~_is_retract(kinds)
        if passthrough:
            keep |= _singles(groups)
        chosen = last_where(groups, keep, _group_count(groups))
        return chosen[chosen >= 0]


FIRST_ROW_RETRACTION_REFUSAL = (
    "the first-row merge engine cannot accept -U/-D records (it keeps the first row of a key for ever); set "
    "'ignore-delete' (or 'first-row.ignore-delete') = 'true' to drop them"
)


class FirstRow(SelectingEngine):
    """The first record wins; later versions of a key are dropped."""

    def __init__(self, ignore_delete: bool) -> None:
        self.ignore_delete = ignore_delete

    def select(self, kinds: npt.NDArray[np.int8], groups: Indices, passthrough: bool = True) -> Indices:
        retract = _is_retract(kinds)
        single = _singles(groups) if passthrough else np.zeros(len(groups), dtype=bool)
        if not self.ignore_delete and (retract & ~single).any():
            raise MergeError(FIRST_ROW_RETRACTION_REFUSAL)
        chosen = first_where(groups, ~retract | single, _group_count(groups))
        return chosen[chosen >= 0]


_PARTIAL_UPDATE_DELETE_HELP = (
    "By default, partial-update can not accept delete records (-U/-D); choose one of: 'ignore-delete' = "
    "'true' (drop them), 'partial-update.remove-record-on-delete' = 'true' (a -D removes the row), or "
    "'fields.<seq>.sequence-group' (a retraction nulls its group)"
)


class SequenceGroup:
    """Columns updated only by records whose sequence fields are at least the stored ones; a column with an
    aggregate function folds every record of the group instead (older ones from behind)."""

    def __init__(
        self,
        sequence_fields: Sequence[str],
        columns: Sequence[str],
        aggregators: dict[str, Aggregator] | None = None,
    ) -> None:
        self.sequence_fields = list(sequence_fields)
        self.columns = list(columns)
        self.aggregators = dict(aggregators or {})


@dataclass(frozen=True)
class _Merging:
    """What a partial-update merge decided for all its records, as a sequence group reads it."""

    groups: Indices
    count: int
    considered: npt.NDArray[np.bool_]
    retract: npt.NDArray[np.bool_]
    present: npt.NDArray[np.bool_]
    removal: npt.NDArray[np.bool_]
    seeds: npt.NDArray[np.bool_]  # leading retractions whose values fill the row first
    ignore_delete: bool


class PartialUpdate(MergeEngine):
    """Per column the last non-null value; sequence groups; retractions as configured."""

    def __init__(
        self,
        value_columns: Sequence[str],
        key_columns: Sequence[str],
        ignore_delete: bool,
        remove_record_on_delete: bool,
        sequence_groups: Sequence[SequenceGroup],
        removing_groups: Sequence[SequenceGroup] = (),
    ) -> None:
        self.key_columns = list(key_columns)
        grouped = {c for g in sequence_groups for c in (*g.columns, *g.sequence_fields)}
        self.plain_columns = [c for c in value_columns if c not in grouped and c not in key_columns]
        self.ignore_delete = ignore_delete
        self.remove_record_on_delete = remove_record_on_delete
        self.sequence_groups = list(sequence_groups)
        # partial-update.remove-record-on-sequence-group: a -D winning one of these removes the row.
        self.removing_groups = list(removing_groups)

    def _merge(self, records: pa.Table, groups: Indices) -> tuple[pa.Table, Indices]:
        count = _group_count(groups)
        kinds = _kinds(records)
        retract = retractions = _is_retract(kinds)
        inserted = last_where(groups, ~retract, count) >= 0
        # Java (1.1 and later) fills the row with a key's leading retraction before applying it (initRow):
        # its values are where the row starts, as if it were inserted, and it then retracts as configured.
        leading = retract & np.r_[True, groups[1:] != groups[:-1]]
        considered = np.ones(records.num_rows, dtype=bool)
        # The -D that removed its key's row last: the row restarts from its values, as from an insert.
        removal = np.zeros(records.num_rows, dtype=bool)
        removes = np.zeros(records.num_rows, dtype=bool)
        if retract.any():
            if self.ignore_delete:
                considered = ~retract | leading
            elif self.remove_record_on_delete:
                considered = self._after_last_delete(groups, kinds, count)
                deleted = last_where(groups, kinds == DELETE, count) >= 0
                considered |= leading & ~deleted[groups]
            elif not self.sequence_groups:
                raise MergeError(_PARTIAL_UPDATE_DELETE_HELP)
            elif self.removing_groups and (kinds == DELETE).any():
                removal, removes = self._removals(records, groups, kinds, count)
                considered = np.arange(records.num_rows) >= last_where(groups, removal, count)[groups]
                retract = retract & ~removal
        last = last_where(groups, considered, count)
        present = last >= 0
        last = last[present]
        columns: dict[str, pa.Array] = {}
        for name in self.key_columns:
            columns[name] = pc.take(records.column(name), pa.array(last))
        seeds = leading & considered
        adds = (
            considered & ~retract
            if not self.remove_record_on_delete
            else considered & (kinds != UPDATE_BEFORE)
        ) | seeds
        for name in self.plain_columns:
            valid = records.column(name).is_valid().to_numpy(zero_copy_only=False)
            chosen = last_where(groups, adds & valid, count)[present]
            columns[name] = take_or_null(records.column(name), chosen)
        merging = _Merging(groups, count, considered, retract, present, removal, seeds, self.ignore_delete)
        for group in self.sequence_groups:
            columns.update(self._merge_group(records, merging, group))
            if removal.any() and group.aggregators:
                self._check_retractions(records, groups, ~considered, retractions, removes, leading, group)
        sequence = pc.take(records.column(SEQUENCE_NUMBER), pa.array(last))
        result_kinds = np.full(len(last), INSERT, dtype=np.int8)
        if self.remove_record_on_delete:
            # Java: DELETE when the key's last record is a -D (which removed the row) or it had no insert.
            final = last_where(groups, np.ones(records.num_rows, dtype=bool), count)[present]
            result_kinds[(kinds[final] == DELETE) | ~inserted[present]] = DELETE
        else:
            # Java: DELETE when the key never had an insert, or when its last record removed the row.
            result_kinds[~inserted[present] | removal[last]] = DELETE
        merged = _assemble(records, columns, sequence, pa.array(result_kinds, pa.int8()))
        return merged, np.flatnonzero(present)

    @staticmethod
    def _after_last_delete(groups: Indices, kinds: npt.NDArray[np.int8], count: int) -> npt.NDArray[np.bool_]:
        """Rows at or after their group's last -D, without -U (a -D resets the row to its values)."""
        last_delete = last_where(groups, kinds == DELETE, count)
        starts = last_delete[groups]
        positions = np.arange(len(groups))
        after: npt.NDArray[np.bool_] = (positions >= starts) & (kinds != UPDATE_BEFORE)
        return after

    def _removals(
        self, records: pa.Table, groups: Indices, kinds: npt.NDArray[np.int8], count: int
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """Per key, the last -D that removed the row, and every -D that did: one whose sequence in a
        removing group is not all null and at least the stored one. A removal resets the stored sequences
        to the -D's own, so whether a later -D removes depends on the earlier ones: the keys that have such
        a -D are walked record by record (on ranks of the sequences; -1 for all null)."""
        ranks = [_sequence_ranks(records, g.sequence_fields) for g in self.removing_groups]
        maybe = (kinds == DELETE) & np.any([r >= 0 for r in ranks], axis=0)
        removes = np.zeros(records.num_rows, dtype=bool)
        stored: list[int] = []
        key = -1
        for row in np.flatnonzero(np.isin(groups, groups[maybe])).tolist():
            if groups[row] != key:
                key, stored = int(groups[row]), [-1] * len(ranks)
            current = [int(r[row]) for r in ranks]
            if maybe[row] and any(c >= 0 and c >= s for c, s in zip(current, stored, strict=True)):
                removes[row] = True
                stored = current  # the row becomes the -D's values
            else:
                stored = [max(c, s) for c, s in zip(current, stored, strict=True)]
        last = last_where(groups, removes, count)
        removal = np.zeros(records.num_rows, dtype=bool)
        removal[last[last >= 0]] = True
        return removal, removes

    @staticmethod
    def _check_retractions(
        records: pa.Table,
        groups: Indices,
        before: npt.NDArray[np.bool_],
        retract: npt.NDArray[np.bool_],
        removes: npt.NDArray[np.bool_],
        leading: npt.NDArray[np.bool_],
        group: SequenceGroup,
    ) -> None:
        """Raise what Java raises for the retractions before a key's last removal. Java folds them one by one
        before the removal comes, so a function that cannot retract them (or not from the value it holds
        then) refuses them although the removal discards the result. Each removal restarts the fold from
        its own values, so the records are folded in stretches from one removal to the next; a leading
        retraction fills the row before it retracts, so it goes in twice."""
        sequenced = _sequenced(records, group.sequence_fields)
        folded = before & (sequenced | removes | leading)
        retracts = retract & ~removes & sequenced
        if not (folded & retracts).any():
            return
        twice = _FillingFirst(folded & leading & retracts)
        owners = twice(groups)
        stretches = np.cumsum(twice(removes) | np.r_[True, owners[1:] != owners[:-1]]) - 1
        for name, aggregator in group.aggregators.items():
            aggregator.aggregate(
                twice.column(records.column(name)),
                stretches,
                int(stretches[-1]) + 1,
                twice(folded),
                twice(retracts) & ~twice.filling,
            )

    @staticmethod
    def _merge_group(records: pa.Table, merging: _Merging, group: SequenceGroup) -> dict[str, pa.Array]:
        # The winner of a group is its record with the largest sequence fields (ties: the later record),
        # among records whose sequence fields are not all null, the removing -D the key restarts from
        # (its values are the row's, whatever its sequence) and the leading retraction the row starts from
        # (below every other when its sequence is null).
        groups, count, present = merging.groups, merging.count, merging.present
        removal, seeds = merging.removal, merging.seeds
        sequenced = _sequenced(records, group.sequence_fields)
        candidates = merging.considered & (sequenced | removal | seeds)
        # A leading retraction retracts from the group where it has a sequence, unless it removed the row
        # or deletes are ignored.
        seed_retracts = seeds & sequenced & ~removal & (not merging.ignore_delete)
        retract = (merging.retract & ~seeds) | seed_retracts
        rows = np.nonzero(candidates)[0]
        winners = np.full(count, -1, dtype=np.int64)
        if len(rows):
            keyed = pa.table(
                {
                    "g": pa.array(groups[rows]),
                    **{
                        f"s{i}": records.column(n).take(pa.array(rows))
                        for i, n in enumerate(group.sequence_fields)
                    },
                    "row": pa.array(rows),
                }
            )
            sort_keys = [("g", "ascending")] + [
                (f"s{i}", "ascending") for i in range(len(group.sequence_fields))
            ]
            order = sort_indices_nulls_first(keyed, [*sort_keys, ("row", "ascending")])
            sorted_rows = keyed.column("row").take(order).to_numpy()
            sorted_groups = groups[sorted_rows]
            ends = np.r_[sorted_groups[1:] != sorted_groups[:-1], True]
            winners[sorted_groups[ends]] = sorted_rows[ends]
        chosen = winners[present]
        result = {}
        retracted = np.zeros(len(chosen), dtype=bool)
        retracted[chosen >= 0] = retract[chosen[chosen >= 0]]
        for name in group.sequence_fields:
            result[name] = take_or_null(records.column(name), chosen)
        value_rows = np.where(retracted, -1, chosen)
        for name in group.columns:
            if name not in group.aggregators:
                result[name] = take_or_null(records.column(name), value_rows)
        if group.aggregators:
            backward = np.zeros(records.num_rows, dtype=bool)
            if len(rows):
                backward[rows] = _behind_stored(records, groups, rows, group.sequence_fields)
            where = pa.array(np.flatnonzero(present))
            # The removing -D is a seed too, but Java's functions keep their state through it: whether they
            # were called before it is whether the key had an add for the group before it.
            called = removal.copy()
            if removal.any():
                touched = first_where(groups, ~(merging.retract | removal) & sequenced, count)[groups]
                called &= (touched >= 0) & (touched < np.arange(records.num_rows))
            twice = _FillingFirst(seed_retracts)
            for name, aggregator in group.aggregators.items():
                folded = aggregator.aggregate(
                    twice.column(records.column(name)),
                    twice(groups),
                    count,
                    twice(candidates),
                    twice(retract) & ~twice.filling,
                    twice(backward & ~retract) & ~twice.filling,
                    twice(seeds | removal) & (twice.filling | ~twice(seed_retracts)),
                    twice(called),
                )
                result[name] = folded.take(where)
        return result


class _FillingFirst:
    """The records in merge order, a leading retraction that retracts twice: first as the values that fill
    the row (``filling``), then as the retraction. The records as they are when there is none."""

    def __init__(self, twice: npt.NDArray[np.bool_]) -> None:
        self.rows = np.repeat(np.arange(len(twice)), np.where(twice, 2, 1)) if twice.any() else None
        self.filling = np.zeros(len(twice), dtype=bool)
        if self.rows is not None:
            self.filling = twice[self.rows] & np.r_[True, self.rows[1:] != self.rows[:-1]]

    def __call__(self, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return values if self.rows is None else values[self.rows]

    def column(self, column: pa.ChunkedArray) -> pa.ChunkedArray:
        return column if self.rows is None else column.take(pa.array(self.rows))


def _behind_stored(
    records: pa.Table, groups: Indices, rows: Indices, sequence_fields: Sequence[str]
) -> npt.NDArray[np.bool_]:
    """For a sequence group's records ``rows`` (in merge order), whether each one's sequence fields are
    below the largest among its key's earlier ones: the value the merged row holds when it arrives."""
    keyed = pa.table({f"s{i}": records.column(n).take(pa.array(rows)) for i, n in enumerate(sequence_fields)})
    rank = _ranks(keyed)
    # Ranks lifted per key so that one running maximum serves every key (keys come in ascending order).
    level = groups[rows] * (int(rank.max()) + 1) + rank
    stored = np.maximum.accumulate(level)
    behind = np.zeros(len(rows), dtype=bool)
    behind[1:] = level[1:] < stored[:-1]
    return behind


def _ranks(keyed: pa.Table) -> Indices:
    """Each row's rank among the rows of ``keyed`` in ascending order, nulls first (equal rows share one)."""
    order = sort_indices_nulls_first(keyed, [(name, "ascending") for name in keyed.column_names]).to_numpy()
    rank = np.empty(keyed.num_rows, dtype=np.int64)
    rank[order] = group_ids(keyed.take(order), keyed.column_names)
    return rank


def _sequence_ranks(records: pa.Table, sequence_fields: Sequence[str]) -> Indices:
    """Each record's rank by a sequence group's fields, -1 where they are all null (below every other)."""
    keyed = records.select(list(sequence_fields))
    rank = _ranks(keyed)
    rank[~_sequenced(records, sequence_fields)] = -1
    return rank


def _sequenced(records: pa.Table, sequence_fields: Sequence[str]) -> npt.NDArray[np.bool_]:
    """Whether each record has a sequence for a group: its sequence fields are not all null."""
    sequenced = np.zeros(records.num_rows, dtype=bool)
    for name in sequence_fields:
        sequenced |= records.column(name).is_valid().to_numpy(zero_copy_only=False)
    return sequenced


class Aggregation(MergeEngine):
    """Each value column folded by its aggregate function; keys keep their value."""

    def __init__(
        self,
        key_columns: Sequence[str],
        aggregators: dict[str, Aggregator],
        remove_record_on_delete: bool,
    ) -> None:
        self.key_columns = list(key_columns)
        self.aggregators = aggregators
        self.remove_record_on_delete = remove_record_on_delete

    def _merge(self, records: pa.Table, groups: Indices) -> tuple[pa.Table, Indices]:
        count = _group_count(groups)
        kinds = _kinds(records)
        retract = _is_retract(kinds)
        considered = np.ones(records.num_rows, dtype=bool)
        if self.remove_record_on_delete and (kinds == DELETE).any():
            considered = PartialUpdate._after_last_delete(groups, kinds, count)
            retract = retract & (kinds != DELETE)  # the -D row is the new starting state
        last = last_where(groups, considered, count)
        columns: dict[str, pa.Array] = {}
        for name in self.key_columns:
            columns[name] = pc.take(records.column(name), pa.array(last))
        for name, aggregator in self.aggregators.items():
            columns[name] = aggregator.aggregate(records.column(name), groups, count, considered, retract)
        sequence = pc.take(records.column(SEQUENCE_NUMBER), pa.array(last))
        result_kinds = np.full(count, INSERT, dtype=np.int8)
        if self.remove_record_on_delete:
            result_kinds[kinds[last] == DELETE] = DELETE
        merged = _assemble(records, columns, sequence, pa.array(result_kinds, pa.int8()))
        return merged, np.arange(count)
