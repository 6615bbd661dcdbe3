"""Primary-key tables against Java Apache Paimon 0.9, in both directions (marker ``java_interop``).

Java is the oracle: every check compares paimon_core's merged read with Java's own batch read of the same
table at the same snapshot, whole and with a filter (pushed down to file pruning by statistics, then applied
to the merged rows). The history of each table has overlapping keys across commits, the same key twice in
one commit, null values, deletes (of existing and of absent keys) and, where Java writes, ``-U``/``+U`` pairs;
it is checked after the writes, after a full compaction and after more writes on top of the compacted files.

Java 0.9 facts these tests rely on (see ``docs/primary-key-tables.md``):

* ``first-row`` batch reads skip level 0. Java's own writer never leaves first-row files at level 0
  (its lookup compaction at every commit pushes them up), but files another writer leaves at level 0 are
  invisible to Java's batch read until a compaction; the expected result is Java's read either way.
* A key whose only record in a merge is a ``-D``/``-U`` is dropped by Java's read whatever the merge engine:
  ``ReducerMergeFunctionWrapper`` passes a single record through unmerged, keeping its row kind, and the
  read drops retractions. An aggregation table therefore shows no row for a lone delete of an absent key.
* Java 0.9 ignores ``_VALUE_STATS_COLS`` (it always assumes stats for every column), so files written with
  dense value stats would be pruned wrongly by its filtered reads; the filtered checks catch that.
* Java 0.9 names partition directories the legacy way (``dt=a``).
* A dynamic-bucket table (``bucket = -1``) gets ``dynamic-bucket.target-row-num = 2`` so that each partition
  spreads over several buckets and the hash index decides where an updated key goes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.table import Table

pytestmark = pytest.mark.java_interop

NAME = "t"
IDENTIFIER = f"db.{NAME}"
PRIMARY_KEYS = ("dt", "id")
PARTITION_KEYS = ("dt",)
COLUMNS = (
    ("dt", "STRING NOT NULL"),
    ("id", "BIGINT NOT NULL"),
    ("name", "STRING"),
    ("score", "BIGINT"),
    ("price", "DOUBLE"),
)
ARROW_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("score", pa.int64()),
        pa.field("price", pa.float64()),
    ]
)

ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    # Partial-update refuses -U/-D unless told what to do with them. Not remove-record-on-delete: Java 0.9
    # fails its own reads with it (NullPointerException in PartialUpdateMergeFunction.updateNonNullFields)
    # when a key's merge sees +I, -D, +I.
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    # name keeps the default last_non_null_value; max cannot retract, so its retractions are ignored.
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.score.aggregate-function": "sum",
        "fields.price.aggregate-function": "max",
        "fields.price.ignore-retract": "true",
    },
    # first-row refuses deletes unless they are ignored.
    "first-row": {"merge-engine": "first-row", "ignore-delete": "true"},
}

BUCKETS = {"fixed": {"bucket": "2"}, "dynamic": {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}}

# Filters checked besides the whole table: a value column, a string value column, the partition.
WHERES: tuple[tuple[str, str, Any], ...] = (("price", ">", 3.0), ("name", "=", "a1y"), ("dt", "=", "b"))

Row = tuple[Any, ...]
Commit = Sequence[tuple[str, Row]]

# (row kind, row) per record, one commit each; rows are (dt, id, name, score, price).
HISTORY: tuple[Commit, ...] = (
    (
        ("+I", ("a", 1, "a1", 10, 1.5)),
        ("+I", ("a", 2, "a2", 20, 2.5)),
        ("+I", ("a", 3, "a3", 30, None)),
        ("+I", ("b", 1, "b1", 5, 0.5)),
        ("+I", ("b", 4, "b4", 40, 4.0)),
    ),
    (
        ("+I", ("a", 1, None, 11, 9.5)),
        ("+I", ("a", 3, "a3x", None, 3.5)),
        ("+I", ("b", 1, "b1x", 6, None)),
        ("+I", ("a", 5, "a5", 50, 5.0)),
    ),
    (
        ("-D", ("a", 2, "a2", 20, 2.5)),
        ("+I", ("b", 6, "b6", 60, 6.0)),
        ("-D", ("a", 9, "a9", 90, 9.0)),  # a key that was never written
    ),
    (
        ("+I", ("a", 1, "a1y", None, 0.1)),
        ("+I", ("a", 2, "a2new", 22, 2.2)),  # back after its delete
        ("+I", ("b", 1, None, 7, 8.0)),
        ("+I", ("a", 5, "a5b", 1, 1.0)),
        ("+I", ("a", 5, "a5c", 2, None)),  # the same key twice in one commit
        ("-U", ("b", 6, "b6", 60, 6.0)),
        ("+U", ("b", 6, "b6u", 61, 5.0)),
    ),
)
# Written after the full compaction, on top of the compacted files.
LATER: tuple[Commit, ...] = (
    (
        ("+I", ("a", 3, "a3z", 3, None)),
        ("-D", ("b", 4, "b4", 40, 4.0)),
        ("+I", ("c", 7, "c7", 70, 7.0)),
    ),
    (("+I", ("a", 1, "a1y", 100, 0.2)),),
)


def _sort_key(row: Row) -> tuple[Any, ...]:
    return tuple((value is not None, value) for value in row)


def _ours(catalog: Catalog, where: tuple[str, str, Any] | None = None, name: str = NAME) -> list[Row]:
    """Our merged read of the latest snapshot (through a fresh table handle), sorted like Java's."""
    table = catalog.get_table(f"db.{name}")
    data = table.to_arrow(filter=[where] if where is not None else None)
    assert data.schema.names == [column for column, _ in COLUMNS]
    return sorted((tuple(row.values()) for row in data.to_pylist()), key=_sort_key)


def _assert_same_reads(ours: Catalog, java: Any, stage: str) -> list[Row]:
    """Our read equals Java's, whole and filtered; returns Java's whole read."""
    expected: list[Row] = java.read(NAME)
    assert _ours(ours) == expected, f"{stage}: our read differs from Java's"
    for where in WHERES:
        assert _ours(ours, where) == java.read(NAME, where), f"{stage}: filter {where} differs from Java's"
    return expected


def _deduplicate_model(commits: Sequence[Commit]) -> list[Row]:
    """What deduplicate must return, to check the harness itself (its row kinds reach Java)."""
    state: dict[tuple[Any, ...], Row] = {}
    for commit in commits:
        for kind, row in commit:
            key = row[:2]
            if kind in ("+I", "+U"):
                state[key] = row
            else:
                state.pop(key, None)
    return sorted(state.values(), key=_sort_key)


def _java_write(java: Any, commit: Commit, name: str = NAME) -> None:
    java.write(name, [row for _, row in commit], [kind for kind, _ in commit])


def _java_table(java: Any, engine: str, buckets: str, name: str = NAME) -> None:
    java.create_table(
        name,
        COLUMNS,
        primary_keys=PRIMARY_KEYS,
        partition_keys=PARTITION_KEYS,
        options={**BUCKETS[buckets], **ENGINES[engine]},
    )


def _our_table(catalog: Catalog, engine: str, buckets: str, name: str = NAME) -> None:
    catalog.create_table(
        f"db.{name}",
        ARROW_SCHEMA,
        partition_keys=list(PARTITION_KEYS),
        primary_keys=list(PRIMARY_KEYS),
        options={**BUCKETS[buckets], **ENGINES[engine]},
    )


def _our_write(catalog: Catalog, commit: Commit, name: str = NAME) -> None:
    """One commit per call: the adds through ``append``, or the deletes through ``delete`` (keys only).

    Our API has no ``-U``; a commit mixing adds and deletes is refused here rather than split silently.
    """
    table = catalog.get_table(f"db.{name}")
    kinds = {kind for kind, _ in commit}
    rows = [dict(zip(ARROW_SCHEMA.names, row, strict=True)) for _, row in commit]
    if kinds <= {"+I", "+U"}:
        table.append(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA))
    elif kinds == {"-D"}:
        keys = pa.Table.from_pylist(rows, schema=ARROW_SCHEMA).select(list(PRIMARY_KEYS))
        table.delete(keys)
    else:
        raise ValueError(f"cannot write row kinds {sorted(kinds)} in one commit through our API")


def _as_our_commits(commits: Sequence[Commit]) -> list[Commit]:
    """The history as our API writes it: adds, then deletes (their value columns null, as ``delete``
    writes them) in separate commits, without ``-U`` records."""
    out: list[Commit] = []
    for commit in commits:
        adds = [(kind, row) for kind, row in commit if kind in ("+I", "+U")]
        deletes = [(kind, (*row[:2], None, None, None)) for kind, row in commit if kind == "-D"]
        out += [part for part in (adds, deletes) if part]
    return out


# --- Java writes, we read ------------------------------------------------------------------------------


@pytest.mark.parametrize("buckets", list(BUCKETS))
@pytest.mark.parametrize("engine", list(ENGINES))
def test_we_read_what_java_writes(ours: Catalog, java: Any, engine: str, buckets: str) -> None:
    _java_table(java, engine, buckets)
    for commit in HISTORY:
        _java_write(java, commit)
    written = _assert_same_reads(ours, java, "after Java's writes")
    if engine == "deduplicate":
        assert written == _deduplicate_model(HISTORY)

    java.full_compact(NAME)
    compacted = _assert_same_reads(ours, java, "after Java's full compaction")
    if engine != "first-row":
        assert compacted == written  # a full compaction changes files, not rows
    assert compacted

    for commit in LATER:
        _java_write(java, commit)
    later = _assert_same_reads(ours, java, "after Java's writes on top of the compaction")
    if engine == "deduplicate":
        assert later == _deduplicate_model((*HISTORY, *LATER))


def test_java_dynamic_bucket_table_spreads_over_buckets(ours: Catalog, java: Any) -> None:
    """The dynamic-bucket setup really gives several buckets per partition and a hash index."""
    _java_table(java, "deduplicate", "dynamic")
    for commit in HISTORY:
        _java_write(java, commit)
    table = ours.get_table(IDENTIFIER)
    buckets = {(e.partition, e.bucket) for e in table.live_entries()}
    assert len(buckets) > len({p for p, _ in buckets})
    assert {e.total_buckets for e in table.live_entries()} == {-1}
    assert os.listdir(os.path.join(ours.table_path(IDENTIFIER), "index"))  # Java's hash index files
    assert _ours(ours) == _deduplicate_model(HISTORY)


# --- we write, Java reads ------------------------------------------------------------------------------


def _we_write_java_reads(ours: Catalog, java: Any, engine: str, buckets: str) -> None:
    _our_table(ours, engine, buckets)
    for commit in _as_our_commits(HISTORY):
        _our_write(ours, commit)
    written = _assert_same_reads(ours, java, "after our writes")
    if engine == "deduplicate":
        assert written == _deduplicate_model(_as_our_commits(HISTORY))

    compact_table(ours.get_table(IDENTIFIER), parallelism=1, progress=False)
    compacted = _assert_same_reads(ours, java, "after our compaction job")
    assert compacted
    if engine != "first-row":
        assert compacted == written

    for commit in _as_our_commits(LATER):
        _our_write(ours, commit)
    later = _assert_same_reads(ours, java, "after our writes on top of the compaction")
    if engine == "deduplicate":
        assert later == _deduplicate_model(_as_our_commits((*HISTORY, *LATER)))

    # Java compacts what we wrote, and both still agree.
    java.full_compact(NAME)
    _assert_same_reads(ours, java, "after Java's full compaction of our files")


@pytest.mark.parametrize("engine", list(ENGINES))
def test_java_reads_what_we_write(ours: Catalog, java: Any, engine: str) -> None:
    _we_write_java_reads(ours, java, engine, "fixed")


@pytest.mark.parametrize("engine", list(ENGINES))
def test_java_reads_our_dynamic_bucket_table(ours: Catalog, java: Any, engine: str) -> None:
    _we_write_java_reads(ours, java, engine, "dynamic")


# --- both write one table ------------------------------------------------------------------------------


@pytest.mark.parametrize("buckets", list(BUCKETS))
@pytest.mark.parametrize("engine", ["deduplicate", "aggregation"])
def test_java_and_we_take_turns(ours: Catalog, java: Any, engine: str, buckets: str) -> None:
    """Alternating writers on one table created by Java: our writer continues Java's sequence numbers (and,
    with dynamic buckets, Java's hash index), Java's continues ours."""
    _java_table(java, engine, buckets)
    for i, commit in enumerate(HISTORY):
        if i % 2 == 0:
            _java_write(java, commit)
        else:
            for part in _as_our_commits([commit]):
                _our_write(ours, part)
        _assert_same_reads(ours, java, f"after commit {i}")
    compact_table(ours.get_table(IDENTIFIER), parallelism=1, progress=False)
    _assert_same_reads(ours, java, "after our compaction job")
    for commit in LATER:
        _java_write(java, commit)
    _assert_same_reads(ours, java, "after Java's writes on top of our compaction")
    java.full_compact(NAME)
    _assert_same_reads(ours, java, "after Java's full compaction")


# --- the same operations through both writers ----------------------------------------------------------


def _assert_java_reads_alike(ours: Catalog, java: Any, stage: str) -> None:
    by_java = java.read("by_java")
    assert java.read("by_us") == by_java, f"{stage}: Java reads other rows from our table than from its own"
    assert _ours(ours, name="by_us") == by_java, f"{stage}: our read of our table differs from Java's table"
    for where in WHERES:
        assert java.read("by_us", where) == java.read("by_java", where), f"{stage}: filter {where}"


@pytest.mark.parametrize("buckets", list(BUCKETS))
@pytest.mark.parametrize("engine", list(ENGINES))
def test_both_writers_give_the_same_rows(ours: Catalog, java: Any, engine: str, buckets: str) -> None:
    """The same operations written by Java into one table and by us into another (what our API can say:
    appends, deletes by key, our compaction job against Java's full compaction): Java reads the same rows
    from both. This checks our writer's semantics, which reading our files back cannot."""
    _java_table(java, engine, buckets, name="by_java")
    _our_table(ours, engine, buckets, name="by_us")
    for commit in _as_our_commits(HISTORY):
        _java_write(java, commit, name="by_java")
        _our_write(ours, commit, name="by_us")
    _assert_java_reads_alike(ours, java, "after the writes")

    java.full_compact("by_java")
    compact_table(ours.get_table("db.by_us"), parallelism=1, progress=False)
    _assert_java_reads_alike(ours, java, "after the compactions")

    for commit in _as_our_commits(LATER):
        _java_write(java, commit, name="by_java")
        _our_write(ours, commit, name="by_us")
    _assert_java_reads_alike(ours, java, "after the writes on top of the compactions")


# --- value statistics -----------------------------------------------------------------------------------

# Java 0.9 prunes files by value statistics only for first-row (and deletion-vector) tables, files above
# level 0. After the full compaction each partition is one file; each filter keeps one and prunes the other.
VALUE_WHERES: tuple[tuple[str, str, Any], ...] = (
    ("price", ">", 5.5),
    ("price", "<", 1.0),
    ("name", ">=", "b"),
    ("name", "<", "a2"),
)


@pytest.mark.parametrize(
    "stats",
    [
        pytest.param({}, id="all-columns"),
        # name gets no stats; without the dense store every column still has a (null) slot.
        pytest.param(
            {"fields.name.stats-mode": "none", "metadata.stats-dense-store": "false"}, id="sparse-store"
        ),
        pytest.param(
            {"fields.name.stats-mode": "none"},
            id="dense-store",
            marks=pytest.mark.xfail(
                strict=True,
                reason="Java 0.9 ignores _VALUE_STATS_COLS and reads dense value stats as if every column had "
                "a slot (shared/ENVIRONMENT.md); set metadata.stats-dense-store=false for tables Java 0.9 reads",
            ),
        ),
    ],
)
def test_java_prunes_our_files_by_their_value_stats(ours: Catalog, java: Any, stats: dict[str, str]) -> None:
    """Java's filtered reads of first-row files our compaction job wrote above level 0, where Java uses their
    value statistics to skip files: it returns the same rows as our filtered read.

    ``write-only`` leaves the writes at level 0 and the full compaction makes one file per partition, so
    this checks the statistics, not the writer's own compactions (``test_java_reads_what_we_write`` does).
    """
    table = ours.create_table(
        IDENTIFIER,
        ARROW_SCHEMA,
        partition_keys=list(PARTITION_KEYS),
        primary_keys=list(PRIMARY_KEYS),
        options={"bucket": "1", "write-only": "true", **ENGINES["first-row"], **stats},
    )
    for commit in _as_our_commits(HISTORY):
        _our_write(ours, commit)
    compact_table(table, parallelism=1, progress=False)
    entries = ours.get_table(IDENTIFIER).live_entries()
    assert sorted(e.file.level for e in entries) == [5, 5]  # one file per partition
    assert _ours(ours) == java.read(NAME)
    for where in VALUE_WHERES:
        assert _ours(ours, where) == java.read(NAME, where), f"filter {where}"


# --- changelog producers ------------------------------------------------------------------------------
# The same history goes into a table Java writes and one written here, with the same merge engine and
# changelog producer. Each table's changelog, read snapshot by snapshot as a stream reads it, must hold the
# same changes per key in the same order: what Java produces for that history is what we produce. Java's
# full-compaction changelog comes from an explicit full compaction after every commit; ours from the
# producer's default (full-compaction.delta-commits unset: a full compaction at every commit, as Paimon
# documents it).

COMBINATIONS = [
    (engine, producer)
    for engine in ENGINES
    for producer in ("input", "lookup", "full-compaction")
    if engine != "first-row" or producer == "lookup"  # Paimon allows first-row only none / lookup
]


def _changes_by_key(table: Table) -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
    """Every snapshot's changes, as a stream reads them, per key in order."""
    changes: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for snapshot_id in range(1, (table.snapshot_manager.latest_id() or 0) + 1):
        reading = table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": str(snapshot_id)})
        for batch in reading.stream(follow=False, until_snapshot=snapshot_id):
            for row in batch.to_pylist():
                changes.setdefault((row["dt"], row["id"]), []).append(tuple(row.values()))
    return changes


def _by_key(rows: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
    """Java's stream rows ``(rowkind, dt, id, ...)`` per key in order."""
    changes: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for row in rows:
        changes.setdefault((row[1], row[2]), []).append(row)
    return changes


@pytest.mark.parametrize(("engine", "producer"), COMBINATIONS)
def test_our_changelog_equals_javas(ours: Catalog, java: Any, engine: str, producer: str) -> None:
    options = {"bucket": "2", **ENGINES[engine], "changelog-producer": producer}
    java.create_table(
        "jt", COLUMNS, primary_keys=PRIMARY_KEYS, partition_keys=PARTITION_KEYS, options=options
    )
    ours_options = {"changelog-producer": producer}
    ours.create_table(
        "db.ot",
        ARROW_SCHEMA,
        partition_keys=list(PARTITION_KEYS),
        primary_keys=list(PRIMARY_KEYS),
        options={**options, **ours_options},
    )
    # as our API writes them: +I for every add (our writes carry no +U)
    history = [
        [("+I" if kind == "+U" else kind, row) for kind, row in commit] for commit in (*HISTORY, *LATER)
    ]
    for commit in _as_our_commits(history):
        _java_write(java, commit, name="jt")
        if producer == "full-compaction":
            java.full_compact("jt")
        _our_write(ours, commit, name="ot")
    javas = _changes_by_key(ours.get_table("db.jt"))
    assert javas, "Java produced a changelog"
    assert _changes_by_key(ours.get_table("db.ot")) == javas
    # Java's own stream read of each table: of its changelog what we read, of ours the same changes
    assert _by_key(java.read_changes("jt")) == javas
    assert _by_key(java.read_changes("ot")) == javas
    assert sorted(map(tuple, (r.values() for r in ours.get_table("db.ot").to_arrow().to_pylist()))) == sorted(
        java.read("jt")
    )
