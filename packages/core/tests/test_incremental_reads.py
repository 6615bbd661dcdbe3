"""Batch incremental reads of primary-key tables (``incremental-between[-timestamp]``, docs/reads.md).

Java Paimon is the judge (tests/java_interop/test_java_incremental.py checks every mode against Java 0.9);
these tests run without Java: the merge of a range's changelog files as Java 0.9 does it, the ``diff`` mode
against a model of the table's states, the ways a range is given, and a missing changelog file.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.errors import ConfigError, DataFileError, SnapshotExpiredError
from paimon_core.maintenance import create_tag
from paimon_core.table import AuditLogTable, KeyValueTableWrite, Table

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.string())])
_names = itertools.count()

Op = tuple[str, int, str]  # ("put" | "del", key, value)


def _table(root: Path, producer: str, **options: str) -> Table:
    catalog = Catalog.open(str(root), create=True)
    catalog.create_database("db", exist_ok=True)
    opts = {"bucket": "1", "changelog-producer": producer, **options}
    return catalog.create_table(f"db.t{next(_names)}", SCHEMA, primary_keys=["k"], options=opts)


def _put(table: Table, rows: dict[int, str]) -> None:
    table.append(pa.table({"k": list(rows), "v": list(rows.values())}, schema=SCHEMA))


def _delete(table: Table, *keys: int) -> None:
    table.delete(pa.table({"k": pa.array(keys, pa.int32())}))


def _read(table: Table, **options: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The rows and the ``$audit_log`` rows of a read with ``options`` (keys with dashes), sorted."""
    reading = table.copy({k.replace("_", "-"): v for k, v in options.items()})
    rows = sorted(tuple(r.values()) for r in reading.to_arrow().to_pylist())
    audit = sorted((tuple(r.values()) for r in AuditLogTable(reading).to_arrow().to_pylist()), key=str)
    return rows, audit


def _upsert_and_delete(table: Table) -> int:
    """The history of the report: insert (1,a),(2,b); upsert (1,a2); delete key 2. Returns the latest id."""
    _put(table, {1: "a", 2: "b"})
    _put(table, {1: "a2"})
    _delete(table, 2)
    latest = table.snapshot_manager.latest_id()
    assert latest is not None
    return latest


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_a_deleted_key_is_not_read_as_live_from_the_changelog(tmp_path: Path, producer: str) -> None:
    """The changelog files of the range, merged as Java 0.9 merges them: Java 0.9 answers exactly this on
    the same files (the ``-U 1 a`` of the upsert meets the ``+I 1 a`` of the insert in one merge, so ``1 a``
    is read as a row; the ``+U 1 a2`` is merged on its own)."""
    options = {"full-compaction.delta-commits": "1"} if producer == "full-compaction" else {}
    table = _table(tmp_path, producer, **options)
    latest = _upsert_and_delete(table)
    for mode in ("auto", "changelog"):
        rows, audit = _read(table, incremental_between=f"1,{latest}", incremental_between_scan_mode=mode)
        assert audit == sorted([("+I", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b")], key=str)
        assert rows == [(1, "a"), (1, "a2")]
    rows, audit = _read(table, incremental_between=f"1,{latest}", incremental_between_scan_mode="delta")
    assert audit == sorted([("+I", 1, "a2"), ("-D", 2, None)], key=str)
    assert rows == [(1, "a2")]


@pytest.mark.parametrize("producer", ["none", "input"])
def test_the_range_of_new_files_is_merged(tmp_path: Path, producer: str) -> None:
    table = _table(tmp_path, producer)
    latest = _upsert_and_delete(table)
    for mode in ("auto", "delta", "changelog"):
        rows, audit = _read(table, incremental_between=f"1,{latest}", incremental_between_scan_mode=mode)
        if producer == "none" and mode == "changelog":
            assert (rows, audit) == ([], [])  # no changelog files
        else:
            assert audit == sorted([("+I", 1, "a2"), ("-D", 2, None)], key=str)
            assert rows == [(1, "a2")]


histories = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["put", "put", "del"]), st.integers(0, 6), st.sampled_from("abc")),
        min_size=1,
        max_size=6,
    ),
    min_size=2,
    max_size=5,
)


def _commit(table: Table, ops: list[Op]) -> None:
    write = table.new_write()
    assert isinstance(write, KeyValueTableWrite)
    for kind, key, value in ops:
        data = pa.table({"k": [key], "v": [value]}, schema=SCHEMA)
        if kind == "put":
            write.write(data)
        else:
            write.delete(data.select(["k"]))
    messages = write.prepare_commit()
    write.close()
    table.new_commit().commit(messages)


def _apply(state: dict[int, str], ops: list[Op]) -> dict[int, str]:
    after = dict(state)
    for kind, key, value in ops:
        if kind == "put":
            after[key] = value
        else:
            after.pop(key, None)
    return after


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, data=st.data())
def test_diff_is_the_change_between_the_two_states(
    tmp_path: Path, history: list[list[Op]], data: Any
) -> None:
    """``diff`` compares the merged start with the merged end. Every commit compacts fully here, so a
    bucket that changed has no file in common with its start and the diff is exact: the model is the
    difference of the two states."""
    table = _table(
        tmp_path / str(next(_names)),
        "full-compaction",
        **{"full-compaction.delta-commits": "1", "bucket": "2"},
    )
    states: dict[int, dict[int, str]] = {0: {}}
    for ops in history:
        _commit(table, ops)
        latest = table.snapshot_manager.latest_id()
        assert latest is not None
        states[latest] = _apply(states[max(states)], ops)
    ids = sorted(states)
    start = data.draw(st.sampled_from(ids[:-1]), label="start")
    end = data.draw(st.sampled_from([i for i in ids if i > start]), label="end")
    before, after = states[start], states[end]
    rows, audit = _read(table, incremental_between=f"{start},{end}", incremental_between_scan_mode="diff")
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    assert rows == sorted(changed.items())
    removed = [("-D", k, v) for k, v in before.items() if k not in after]
    assert audit == sorted([("+I", k, v) for k, v in changed.items()] + removed, key=str)


def test_two_tags_are_compared_unless_read_as_their_snapshots(tmp_path: Path) -> None:
    """Java reads between two tags as a diff of their data; ``incremental-between-tag-to-snapshot`` reads
    the snapshots between them instead."""
    table = _table(tmp_path, "none")
    _put(table, {1: "a", 2: "b"})
    create_tag(table, "first")
    _put(table, {1: "a2"})
    _put(table, {1: "a"})  # back to its value at the first tag
    _delete(table, 2)
    compact_table(table, parallelism=1, progress=False)  # the end shares no file with the start
    create_tag(table, "last")
    assert _read(table, incremental_between="first,last") == ([], [("-D", 2, "b")])
    rows, audit = _read(table, incremental_between="first,last", incremental_between_tag_to_snapshot="true")
    assert (rows, audit) == ([(1, "a")], sorted([("+I", 1, "a"), ("-D", 2, None)], key=str))
    with pytest.raises(ConfigError, match="neither two tags nor two snapshot ids"):
        _read(table, incremental_between="first,4")


def test_a_diff_sees_a_delete_still_at_level_0_as_java_1_1_does(tmp_path: Path) -> None:
    """A diff reads the files only one end holds. A delete not yet compacted is a retraction that the end's
    merge drops (Java 0.9, which compares two tags so) or keeps for ``$audit_log`` (Java 1.1+, whose
    ``diff`` mode this is): only the latter sees the key go."""
    table = _table(tmp_path, "none", **{"write-only": "true"})
    _put(table, {1: "a", 2: "b"})
    create_tag(table, "first")
    _delete(table, 2)
    create_tag(table, "last")
    assert _read(table, incremental_between="first,last") == ([], [])
    assert _read(table, incremental_between="1,2", incremental_between_scan_mode="diff") == (
        [],
        [("-D", 2, None)],
    )


def test_timestamp_bounds_as_java_resolves_them(tmp_path: Path) -> None:
    """A start before the first snapshot reads from the first on; a range wholly before it, or an empty
    one, reads nothing; date-times are local (Java 1.1+), epoch milliseconds work everywhere."""
    table = _table(tmp_path, "none")
    _put(table, {1: "a"})
    _put(table, {2: "b"})
    first, second = (table.snapshot_manager.snapshot(i) for i in (1, 2))
    everything = ([(1, "a"), (2, "b")], [("+I", 1, "a"), ("+I", 2, "b")])
    assert (
        _read(table, incremental_between_timestamp=f"{first.time_millis - 1},{second.time_millis}")
        == everything
    )
    assert _read(table, incremental_between_timestamp=f"0,{first.time_millis - 1}") == ([], [])
    assert _read(table, incremental_between_timestamp=f"{second.time_millis},{second.time_millis}") == (
        [],
        [],
    )
    if first.time_millis < second.time_millis:
        only_second = ([(2, "b")], [("+I", 2, "b")])
        assert (
            _read(table, incremental_between_timestamp=f"{first.time_millis},{second.time_millis}")
            == only_second
        )
    with pytest.raises(ConfigError, match="the start is after the end"):
        _read(table, incremental_between_timestamp=f"{second.time_millis},{first.time_millis}")


# --- a changelog file missing from storage ---------------------------------------------------------------


def _changelog_path(table: Table, snapshot_id: int) -> str:
    snapshot = table.snapshot_manager.snapshot(snapshot_id)
    (entry,) = table.scan().pruner.changelog(snapshot)
    return f"{table.bucket_dir(entry.partition, entry.bucket)}/{entry.file.file_name}"


def test_a_missing_changelog_file_of_a_live_snapshot_is_a_data_file_error(tmp_path: Path) -> None:
    """Not an expiry: a stream or read that took it for one would skip the snapshot's changes."""
    table = _table(tmp_path, "input")
    _put(table, {1: "a"})
    _put(table, {2: "b"})
    _put(table, {3: "c"})
    table.storage.delete(_changelog_path(table, 2))
    from_first = table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    reads: dict[str, Callable[[], object]] = {
        "stream": lambda: list(from_first.stream(follow=False)),
        "incremental read": lambda: table.copy({"incremental-between": "1,3"}).to_arrow(),
        "audit log": lambda: AuditLogTable(table.copy({"incremental-between": "0,3"})).to_arrow(),
    }
    for name, read in reads.items():
        with pytest.raises(DataFileError, match=r"changelog file .* but missing from storage") as info:
            read()
        assert not isinstance(info.value, SnapshotExpiredError), name


def test_a_changelog_file_gone_with_its_expired_snapshot_is_an_expiry(tmp_path: Path) -> None:
    table = _table(tmp_path, "input")
    _put(table, {1: "a"})
    _put(table, {2: "b"})
    splits = table.copy({"incremental-between": "0,2"}).scan().plan()
    table.storage.delete(_changelog_path(table, 1))
    table.storage.delete(table.snapshot_manager.snapshot_path(1))  # as an expiration does, file first
    with pytest.raises(SnapshotExpiredError):
        table.new_read().to_arrow(splits)


@settings(max_examples=200, deadline=None)
@given(
    inputs=st.lists(
        st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), max_size=8).map(sorted),
        min_size=1,
        max_size=6,
    )
)
def test_the_loser_tree_pops_rounds_of_one_key_in_sequence_order(inputs: list[list[tuple[int, int]]]) -> None:
    """Every record once; keys ascending; a key's round takes one record from each input still holding it
    (its ``n``-th round the ``n``-th ones), smallest sequence first; only equal sequences are the tree's."""
    from paimon_core.table.mergetree._incremental import _LoserTree

    records = [(key, seq, leaf) for leaf, rows in enumerate(inputs) for key, seq in rows]
    bounds = np.cumsum([0, *(len(rows) for rows in inputs)])
    keys = np.array([r[0] for r in records], dtype=np.int64)
    seqs = np.array([r[1] for r in records], dtype=np.int64)
    order = _LoserTree(bounds, keys, seqs).pop_order().tolist()
    assert sorted(order) == list(range(len(records)))
    occurrence = [
        sum(1 for j in range(bounds[records[i][2]], i) if keys[j] == keys[i]) for i in range(len(records))
    ]
    rounds = [(records[i][0], occurrence[i]) for i in order]
    assert rounds == sorted(rounds)
    popped = [(rounds[n], records[i][1]) for n, i in enumerate(order)]
    assert popped == sorted(popped)
