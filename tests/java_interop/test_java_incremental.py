"""Batch incremental reads (``incremental-between[-timestamp]``) against Java Apache Paimon 0.9.

Java writes each table (so both sides read the same files); our read of the rows and of ``$audit_log`` must
equal Java's for every ``incremental-between-scan-mode`` and every changelog producer, over ranges that hold
upserts, ``-U``/``+U`` pairs, deletes (of live keys, and keys written again after their delete), the same key
twice in one commit and a full compaction (after every commit for ``full-compaction``, whose changelog
needs it).

What is Java's where (docs/reads.md, "Incremental reads"):

* ``auto``, ``delta`` and ``changelog`` between snapshot ids or timestamps: Java 0.9 merges the range's
  files; checked here against 0.9 itself.
* Two tags: Java 0.9 compares the tags' data (``readIncrementalDiff``); checked against 0.9.
* ``diff`` between snapshot ids or timestamps is Java 1.1+ only. It is the same comparison Java 0.9 makes
  between two tags, so it is checked against 0.9's read between tags on the same snapshots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from paimon_core import Catalog
from paimon_core.table import AuditLogTable, Table

pytestmark = pytest.mark.java_interop

NAME = "t"
COLUMNS = (("k", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT"))

Row = tuple[Any, ...]
Commit = Sequence[tuple[str, Row]]

HISTORY: tuple[Commit, ...] = (
    (("+I", (1, "a", 1)), ("+I", (2, "b", 2)), ("+I", (3, "c", 3)), ("+I", (4, "d", 4))),
    (("+I", (1, "a2", 10)), ("-D", (2, "b", 2)), ("+I", (5, "e", 5))),
    (("-U", (3, "c", 3)), ("+U", (3, "c2", 30)), ("+I", (6, None, 6))),
    (("+I", (2, "b2", 20)), ("-D", (4, "d", 4)), ("+I", (1, "a3", None))),
    (("+I", (7, "g", 7)), ("+I", (7, "g2", 70)), ("-D", (1, "a3", None))),  # 7 twice in one commit
    (("+I", (1, "a4", 100)), ("+I", (5, "e", 5)), ("-D", (6, None, 6))),  # 5 rewritten unchanged
)
COMPACT_AFTER = 2  # a full compaction after this many commits (after every one for full-compaction)

PRODUCERS = ("none", "input", "lookup", "full-compaction")
MODES = ("auto", "delta", "changelog")


def _sort_key(row: Row) -> tuple[Any, ...]:
    return tuple((value is not None, value) for value in row)


def _write_history(java: Any, producer: str) -> None:
    java.create_table(
        NAME, COLUMNS, primary_keys=("k",), options={"bucket": "2", "changelog-producer": producer}
    )
    for i, commit in enumerate(HISTORY):
        java.write(NAME, [row for _, row in commit], [kind for kind, _ in commit])
        if producer == "full-compaction" or i + 1 == COMPACT_AFTER:
            java.full_compact(NAME)


def _ours(table: Table, options: dict[str, str]) -> tuple[list[Row], list[Row]]:
    """Our rows and ``$audit_log`` rows (``rowkind`` first) of the read with ``options``, sorted."""
    reading = table.copy(options)
    rows = [tuple(r.values()) for r in reading.to_arrow().to_pylist()]
    audit = [tuple(r.values()) for r in AuditLogTable(reading).to_arrow().to_pylist()]
    return sorted(rows, key=_sort_key), sorted(audit, key=_sort_key)


def _javas(java: Any, options: dict[str, str]) -> tuple[list[Row], list[Row]]:
    rows = [values for _, *values in java.read_with(NAME, options)]
    audit = [values for _, *values in java.read_with(NAME, options, audit_log=True)]
    return sorted(map(tuple, rows), key=_sort_key), sorted(map(tuple, audit), key=_sort_key)


def _ranges(latest: int) -> list[tuple[int, int]]:
    """Snapshot ranges (exclusive start, inclusive end): whole, without the first commit, inner ones."""
    middle = latest // 2
    candidates = [(0, latest), (1, latest), (2, latest - 1), (middle, latest), (1, middle), (0, 2)]
    return sorted({(s, e) for s, e in candidates if 0 <= s < e <= latest})


@pytest.mark.parametrize("producer", PRODUCERS)
def test_incremental_reads_equal_javas(ours: Catalog, java: Any, producer: str) -> None:
    _write_history(java, producer)
    table = ours.get_table(f"db.{NAME}")
    latest = java.latest_snapshot_id(NAME)
    assert latest >= len(HISTORY)
    checked: list[Row] = []
    for start, end in _ranges(latest):
        for mode in MODES:
            options = {"incremental-between": f"{start},{end}", "incremental-between-scan-mode": mode}
            expected = _javas(java, options)
            assert _ours(table, options) == expected, f"{producer}: {options}"
            checked += expected[1]
    # the ranges hold what this test is about
    kinds = {row[0] for row in checked}
    assert {"+I", "-D"} <= kinds
    if producer in ("lookup", "full-compaction"):
        assert {"-U", "+U"} <= kinds


@pytest.mark.parametrize("producer", PRODUCERS)
def test_incremental_reads_between_timestamps_equal_javas(ours: Catalog, java: Any, producer: str) -> None:
    """Epoch-millisecond bounds (all Java 0.9 parses): at a snapshot's commit time, between two, and
    before the first snapshot."""
    _write_history(java, producer)
    table = ours.get_table(f"db.{NAME}")
    snapshots = [table.snapshot_manager.snapshot(i) for i in range(1, java.latest_snapshot_id(NAME) + 1)]
    times = [s.time_millis for s in snapshots]
    # bounds at commit times that no other snapshot shares, so "the snapshot at or before" is one snapshot
    unique = [t for t in times if times.count(t) == 1]
    bounds = {(times[0] - 1, times[-1]), (unique[0], unique[-1]), (unique[1], unique[-2] + 1)}
    bounds.add((times[0] - 10, times[0] - 5))  # before every snapshot: nothing
    for start, end in sorted(bounds):
        for mode in MODES:
            options = {
                "incremental-between-timestamp": f"{start},{end}",
                "incremental-between-scan-mode": mode,
            }
            assert _ours(table, options) == _javas(java, options), f"{producer}: {options}"


@pytest.mark.parametrize("producer", ("none", "lookup"))
def test_incremental_diff_equals_javas_read_between_tags(ours: Catalog, java: Any, producer: str) -> None:
    """Java 0.9 compares two tags' data: our read between the tags equals it. Our ``diff`` mode between the
    tags' snapshot ids (Java 1.1+) reads the same rows; its ``$audit_log`` adds only the ``-D`` of keys whose
    delete was still at level 0, which 0.9 drops while merging (fixed in Java 1.1): each such key is gone
    from Java's read of the end snapshot."""
    _write_history(java, producer)
    table = ours.get_table(f"db.{NAME}")
    latest = java.latest_snapshot_id(NAME)
    seen_level0_delete = False
    for start, end in _ranges(latest):
        if start == 0:
            continue  # a tag needs a snapshot
        java.create_tag(NAME, f"s{start}", start)
        java.create_tag(NAME, f"e{end}-{start}", end)
        between_tags = {"incremental-between": f"s{start},e{end}-{start}"}
        rows, audit = _javas(java, between_tags)
        assert _ours(table, between_tags) == (rows, audit), f"{producer}: {between_tags}"
        diff = {"incremental-between": f"{start},{end}", "incremental-between-scan-mode": "diff"}
        our_rows, our_audit = _ours(table, diff)
        assert our_rows == rows, f"{producer}: {diff}"
        extra = [row for row in our_audit if row not in audit]
        assert sorted([*audit, *extra], key=_sort_key) == our_audit
        at_end = {values[0] for _, *values in java.read_with(NAME, {"scan.snapshot-id": str(end)})}
        assert all(row[0] == "-D" and row[1] not in at_end for row in extra), f"{producer}: {diff}: {extra}"
        seen_level0_delete |= bool(extra)
        java.table(NAME).deleteTag(f"s{start}")
    assert seen_level0_delete
