"""Batch incremental reads of primary-key tables (``incremental-between``), merged as Java Paimon 0.9 does.

See docs/reads.md ("Incremental reads"). Java 0.9 (and 1.0) reads the files a range of snapshots added (new
data files, or changelog files) as one batch split per bucket and merges them with its merge-tree reader.
Changelog files break that reader's assumption that a file holds each key once: a ``-U``/``+U`` pair has one
key twice, and a retraction carries the sequence number of the record it retracts, which an older file of
the range holds too. The merge result then depends on how the reader walks them, which this module
reproduces:

* each snapshot's files of a bucket, then the range's files of the bucket together, go through Java's split
  generator, which reorders them (:func:`java_split_files`); the reader then cuts them into key-range
  sections and packs each into sorted runs, in the order of Java's priority queue (``IntervalPartition``,
  a stable sort first, so the order of files with equal key ranges counts); run ``i`` is input ``i``;
* the reader takes one record per input per round: the ``n``-th record of a key in a run meets the ``n``-th
  records of that key in the other runs, so a key whose run holds it twice is merged (and output) twice;
* within a round the records go in sequence-number order; on a tie the record that reached the head of its
  input first goes first (at the start the input with the higher index), as Java's loser tree does for the
  two inputs of every tie these reads meet.

Newer Java (1.1+) reads these files as a stream instead (every record, no merge); see the docs page.
The ``diff`` mode (and tags, in Java 0.9) compares the merged end snapshot with the merged start snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.manifest import DataFileMeta
from paimon_core.table.mergetree._changelog import LeveledRecords
from paimon_core.table.mergetree._layout import SEQUENCE_NUMBER, VALUE_KIND, KeyValueLayout
from paimon_core.table.mergetree._levels import KeyOf, SortedRun, key_range_sections
from paimon_core.table.mergetree._merge import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    group_ids,
    sort_indices_nulls_first,
)

__all__ = ["diff_records", "java_sections", "java_split_files", "order_as_java_merge"]


def java_split_files(files: Sequence[DataFileMeta], key_of: KeyOf) -> list[DataFileMeta]:
    """A bucket's files in the order Java's batch split generator leaves them: as they are when they can be
    read raw (all above level 0, on one level, no retractions), else section by section, run by run."""
    levels = {f.level for f in files}
    if 0 not in levels and len(levels) == 1 and all(f.delete_row_count == 0 for f in files):
        return list(files)
    return [f for section in java_sections(files, key_of) for run in section for f in run.files]


def java_sections(files: Sequence[DataFileMeta], key_of: KeyOf) -> list[list[SortedRun]]:
    """Key-range sections of ``files``, each packed into sorted runs in the order Java's reader gets them."""
    return [_runs_in_queue_order(section, key_of) for section in key_range_sections(files, key_of)]


def _runs_in_queue_order(section: Sequence[DataFileMeta], key_of: KeyOf) -> list[SortedRun]:
    """Greedy packing (a file joins the run whose last max key is smallest, if it starts after it); the
    runs come out in the array order of the binary heap Java keeps them in, which decides the reader's
    input order."""
    heap = _JavaHeap(lambda run: key_of(run[-1].max_key))
    heap.offer([section[0]])
    for file in section[1:]:
        top = heap.poll()
        if key_of(file.min_key) > key_of(top[-1].max_key):
            top.append(file)
        else:
            heap.offer([file])
        heap.offer(top)
    return [SortedRun(tuple(run)) for run in heap.items]


class _JavaHeap:
    """A binary min-heap that moves elements exactly as ``java.util.PriorityQueue`` does (ties stay)."""

    def __init__(self, key: Any) -> None:
        self.key = key
        self.items: list[list[DataFileMeta]] = []

    def offer(self, item: list[DataFileMeta]) -> None:
        items = self.items
        items.append(item)
        k = len(items) - 1
        while k > 0:
            parent = (k - 1) >> 1
            if self.key(item) >= self.key(items[parent]):
                break
            items[k] = items[parent]
            k = parent
        items[k] = item

    def poll(self) -> list[DataFileMeta]:
        items = self.items
        result = items[0]
        last = items.pop()
        n = len(items)
        if n:
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                if child + 1 < n and self.key(items[child]) > self.key(items[child + 1]):
                    child += 1
                if self.key(last) <= self.key(items[child]):
                    break
                items[k] = items[child]
                k = child
            items[k] = last
        return result


def order_as_java_merge(
    runs: Sequence[pa.Table], levels: npt.NDArray[np.int32], layout: KeyValueLayout, descending: bool
) -> LeveledRecords:
    """The records of a section's runs (each in key order, input ``i`` first) in the order Java's merge
    reader hands them to the merge function, grouped by its rounds (see the module docstring).

    ``levels``: the level of each record's file (runs one after another), for the lookup merge.
    """
    records = pa.concat_tables(runs) if runs else layout.records_schema.empty_table()
    if records.num_rows == 0:
        return LeveledRecords(records, np.zeros(0, np.int64), np.zeros(0, np.int32))
    sizes = [run.num_rows for run in runs]
    leaf = np.repeat(np.arange(len(runs), dtype=np.int64), sizes)
    keys = list(layout.key_names)
    occurrence = _occurrence(records.select(keys), leaf, keys)
    with_occurrence = records.select(keys).append_column("_OCCURRENCE", pa.array(occurrence))
    round_of = _dense_rank(with_occurrence, [(name, "ascending") for name in with_occurrence.column_names])
    seq_order = "descending" if descending else "ascending"
    seq_keys = [*((name, seq_order) for name in layout.sequence_fields), (SEQUENCE_NUMBER, "ascending")]
    seq_rank = _dense_rank(records.select([name for name, _ in seq_keys]), seq_keys)
    order = np.lexsort((seq_rank, round_of))
    ties = (round_of[order][1:] == round_of[order][:-1]) & (seq_rank[order][1:] == seq_rank[order][:-1])
    if ties.any():  # only the reader's own walk tells which of two equal records comes last
        key_rank = _dense_rank(records.select(keys), [(name, "ascending") for name in keys])
        order = _LoserTree(np.cumsum([0, *sizes]), key_rank, seq_rank).pop_order()
    return LeveledRecords(records.take(pa.array(order)), round_of[order], levels[order])


def _dense_rank(table: pa.Table, sort_keys: list[tuple[str, str]]) -> npt.NDArray[np.int64]:
    """Each row's rank among the distinct rows of ``table`` in ``sort_keys`` order (equal rows share one)."""
    order = sort_indices_nulls_first(table, sort_keys).to_numpy()
    ranks = group_ids(table.take(pa.array(order)), [name for name, _ in sort_keys])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = ranks
    return rank


def _occurrence(keys: pa.Table, leaf: npt.NDArray[np.int64], names: list[str]) -> npt.NDArray[np.int64]:
    """How many records of the same key come before each record in its input (inputs are key-ordered)."""
    with_input = keys.append_column("_INPUT", pa.array(leaf))
    segment = group_ids(with_input, ["_INPUT", *names])
    positions = np.arange(len(segment), dtype=np.int64)
    starts = np.zeros(int(segment[-1]) + 1, dtype=np.int64)
    first = np.ones(len(segment), dtype=bool)
    first[1:] = segment[1:] != segment[:-1]
    starts[segment[first]] = positions[first]
    return positions - starts[segment]


# The states of an input in the loser tree; the last three are winners (a node keeps the loser of a match).
_LOSER_NEW_KEY, _LOSER_SAME_KEY, _LOSER_POPPED, _WINNER_NEW_KEY, _WINNER_SAME_KEY, _WINNER_POPPED = range(6)
_END = -2  # the head of an input that has no record left (before its first record: that record - 1)


class _LoserTree:
    """The order in which Java Paimon's loser-tree merge reader (its default ``sort-engine``) pops the
    records of its inputs: each round takes the smallest key's head record of every input holding it, in
    sequence order. Equal sequence numbers are decided by where the records sit in the tree, so the tree
    is walked as Java walks it: a record joining the tree loses a tie against the record already at a node
    for a new key, and wins it while a round of one key is being popped.

    Args:
        bounds: input ``i`` is records ``bounds[i]:bounds[i + 1]`` (each in key order).
        key_rank, seq_rank: each record's key and sequence, as comparable ints.
    """

    def __init__(
        self, bounds: npt.NDArray[np.int64], key_rank: npt.NDArray[np.int64], seq_rank: npt.NDArray[np.int64]
    ) -> None:
        self.size = len(bounds) - 1
        self.ends: list[int] = bounds[1:].tolist()
        self.head: list[int] = (bounds[:-1] - 1).tolist()  # the record each input offers, or _END
        self.keys: list[int] = key_rank.tolist()
        self.seqs: list[int] = seq_rank.tolist()
        self.tree = [-1] * self.size
        self.state = [_WINNER_NEW_KEY] * self.size
        self.same_key_node = [-1] * self.size
        for leaf in reversed(range(self.size)):
            self._advance(leaf)
            self._adjust(leaf)

    def pop_order(self) -> npt.NDArray[np.int64]:
        order: list[int] = []
        tree, state, head = self.tree, self.state, self.head
        while True:
            while state[tree[0]] == _WINNER_POPPED:  # advance the inputs the last round took
                self._advance(tree[0])
                self._adjust(tree[0])
            if head[tree[0]] == _END:
                return np.array(order, dtype=np.int64)
            while state[tree[0]] != _WINNER_POPPED and head[tree[0]] != _END:
                leaf = tree[0]
                order.append(head[leaf])
                state[leaf] = _WINNER_POPPED
                self._adjust(leaf)

    def _advance(self, leaf: int) -> None:
        self.same_key_node[leaf] = -1
        self.state[leaf] = _WINNER_NEW_KEY
        following = self.head[leaf] + 1
        self.head[leaf] = following if self.head[leaf] != _END and following < self.ends[leaf] else _END

    def _order(self, values: list[int], parent: int, child: int) -> int:
        """> 0: ``parent``'s head comes first (smaller value); < 0: ``child``'s, or an input has ended."""
        a, b = self.head[parent], self.head[child]
        if a == _END:
            return -1
        if b == _END:
            return 1
        return (values[a] < values[b]) - (values[a] > values[b])

    def _mark_same_key(self, leaf: int, node: int) -> None:
        if self.same_key_node[leaf] == -1:
            self.same_key_node[leaf] = node

    def _adjust(self, winner: int) -> None:
        tree, state = self.tree, self.state
        node = (winner + self.size) // 2
        while node > 0 and winner >= 0:
            if tree[node] == -1:
                state[winner] = _LOSER_NEW_KEY
            elif state[winner] == _WINNER_NEW_KEY:
                self._meet_new_key(node, tree[node], winner)
            elif state[winner] == _WINNER_SAME_KEY:
                self._meet_same_key(node, tree[node], winner)
            elif self.same_key_node[winner] < 0:  # popped, and no other input holds its key
                break
            else:  # popped: the next input holding its key takes over where they met
                node = self.same_key_node[winner]
                state[winner] = _LOSER_POPPED
                state[tree[node]] = _WINNER_SAME_KEY
            if state[winner] < _WINNER_NEW_KEY:  # it lost here: the node keeps it, the other goes on
                winner, tree[node] = tree[node], winner
            node //= 2
        tree[0] = winner

    def _meet_new_key(self, node: int, parent: int, winner: int) -> None:
        state = self.state
        if state[parent] == _LOSER_POPPED:
            state[parent] = _WINNER_POPPED
            self.same_key_node[parent] = -1
            state[winner] = _LOSER_NEW_KEY
            return
        if state[parent] != _LOSER_NEW_KEY:
            raise AssertionError(f"a new key met a node in state {state[parent]}")
        by_key = self._order(self.keys, parent, winner)
        if by_key == 0:
            if self._order(self.seqs, parent, winner) < 0:
                state[parent] = _LOSER_SAME_KEY
                self._mark_same_key(winner, node)
            else:  # a tie goes to the record already in the tree
                state[winner] = _LOSER_SAME_KEY
                state[parent] = _WINNER_NEW_KEY
                self._mark_same_key(parent, node)
        elif by_key > 0:
            state[parent] = _WINNER_NEW_KEY
            state[winner] = _LOSER_NEW_KEY

    def _meet_same_key(self, node: int, parent: int, winner: int) -> None:
        if self.state[parent] != _LOSER_SAME_KEY:
            return
        if self._order(self.seqs, parent, winner) > 0:
            self.state[parent] = _WINNER_SAME_KEY
            self.state[winner] = _LOSER_SAME_KEY
            self._mark_same_key(parent, node)
        else:  # a tie goes to the record coming up
            self._mark_same_key(winner, node)


def diff_records(before: pa.Table, after: pa.Table, keys: Sequence[str], keep_delete: bool) -> pa.Table:
    """The change from ``before`` to ``after`` (each merged: one record per key), as Java's incremental
    diff read gives it. A key only after is its record; a key only before is a ``-D`` of its old record; a
    key in both is its new record when a column or whether it is a row (not a retraction) differs, else
    nothing. Retractions are output only with ``keep_delete``."""
    values = [n for n in after.column_names if n not in (SEQUENCE_NUMBER, VALUE_KIND)]
    both = pa.concat_tables([before, after.select(before.column_names)])
    side = np.concatenate([np.zeros(before.num_rows, np.int8), np.ones(after.num_rows, np.int8)])
    table = both.select(list(keys)).append_column("_SIDE", pa.array(side))
    order = sort_indices_nulls_first(table, [*((k, "ascending") for k in keys), ("_SIDE", "ascending")])
    ordered = both.take(order)
    sides = side[order.to_numpy()]
    kinds = ordered.column(VALUE_KIND).to_numpy().copy()
    adds = (kinds == INSERT) | (kinds == UPDATE_AFTER)
    groups = group_ids(ordered.select(list(keys)), list(keys))
    first = np.ones(len(groups), dtype=bool)
    first[1:] = groups[1:] != groups[:-1]
    last = np.ones(len(groups), dtype=bool)
    last[:-1] = groups[1:] != groups[:-1]
    single = first & last
    removed = single & (sides == 0) & adds
    changed = single & (sides == 1)
    pairs = np.flatnonzero(~single & last)  # the after record of a key in both
    if len(pairs):
        same = _same_rows(ordered, values, pairs - 1, pairs) & (adds[pairs - 1] == adds[pairs])
        changed[pairs[~same]] = True
    kinds[removed] = DELETE
    keep = (changed | removed) & (adds & ~removed | keep_delete)
    kind_column = pa.array(kinds, ordered.schema.field(VALUE_KIND).type)
    result = ordered.set_column(ordered.column_names.index(VALUE_KIND), VALUE_KIND, kind_column)
    return result.filter(pa.array(keep))


def _same_rows(
    table: pa.Table, columns: Sequence[str], left: npt.NDArray[np.int64], right: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Whether rows ``left[i]`` and ``right[i]`` hold equal values in every column (nulls equal nulls)."""
    same = np.ones(len(left), dtype=bool)
    left_indices, right_indices = pa.array(left), pa.array(right)
    for name in columns:
        column = table.column(name)
        a, b = column.take(left_indices), column.take(right_indices)
        equal = pc.fill_null(pc.equal(a, b), False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        same &= pc.or_(equal, both_null).to_numpy(zero_copy_only=False)
    return same
