"""Partial-update tables whose sequence groups aggregate, against Java Apache Paimon 0.9 (marker ``java_interop``).

Java is the oracle, as in ``test_java_primary_key.py``: our merged read of a table equals Java's batch read of
it, after the writes, after a full compaction and after more writes on top. The history sends records older
than their group's stored sequence (``sum`` adds them, ``listagg`` puts them first, ``max`` takes them in),
``-D`` records that carry values (``sum`` retracts them, newer or older; ``listagg`` and ``max`` ignore them
with ``ignore-retract``), records that leave a group's sequence null (the group stays as it is) and a column
outside every group (its last non-null value).

Java 0.9's ``listagg`` concatenates blank strings where later versions skip them, so the history has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import compact_table

pytestmark = pytest.mark.java_interop

NAME = "pu"
COLUMNS = (
    ("id", "BIGINT NOT NULL"),
    ("g", "BIGINT"),
    ("score", "BIGINT"),
    ("tags", "STRING"),
    ("h", "BIGINT"),
    ("price", "DOUBLE"),
    ("name", "STRING"),
)
ARROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("g", pa.int64()),
        pa.field("score", pa.int64()),
        pa.field("tags", pa.string()),
        pa.field("h", pa.int64()),
        pa.field("price", pa.float64()),
        pa.field("name", pa.string()),
    ]
)
OPTIONS = {
    "bucket": "2",
    "merge-engine": "partial-update",
    "fields.g.sequence-group": "score,tags",
    "fields.h.sequence-group": "price",
    "fields.score.aggregate-function": "sum",
    "fields.tags.aggregate-function": "listagg",
    "fields.tags.ignore-retract": "true",
    "fields.price.aggregate-function": "max",
    "fields.price.ignore-retract": "true",
}

Row = tuple[Any, ...]
Commit = Sequence[tuple[str, Row]]

# (row kind, (id, g, score, tags, h, price, name)) per record, one commit each. An older record in a commit
# of its own: a record merged with others first (a flush, a compaction) carries their newest sequence.
HISTORY: tuple[Commit, ...] = (
    (
        ("+I", (1, 2, 10, "a", 1, 1.5, "n1")),
        ("+I", (2, 1, 5, "b", None, None, "n2")),
        ("+I", (3, None, None, None, 5, 9.0, None)),
    ),
    (
        ("+I", (1, 1, 3, "old", None, None, None)),  # older than g = 2: summed, listed first
        ("+I", (2, 3, 1, "c", 2, 0.5, None)),
    ),
    (
        ("+I", (1, 4, 1, "new", 0, 99.0, "n1b")),  # h = 0 is older than 1: max still takes 99
        ("+I", (4, 1, 7, "d", 1, 2.0, "n4")),
    ),
    (
        ("-D", (1, 5, 3, "x", None, None, None)),  # retracts 3 from the sum; tags ignore it
        ("-D", (2, 0, 1, "c", None, None, None)),  # an older retraction still retracts
    ),
    (
        ("+I", (3, 1, 2, "e", 3, 4.0, None)),
        ("+I", (4, None, None, None, None, None, "n4b")),  # touches no group
    ),
)
LATER: tuple[Commit, ...] = (
    (
        ("+I", (1, 3, 100, "late", 7, 0.1, None)),  # older than g = 5
        ("+I", (5, 2, 1, "f", 1, 1.0, "n5")),
    ),
    (("-D", (4, 2, 7, "d", None, None, None)),),
)


def _sort_key(row: Row) -> tuple[Any, ...]:
    return tuple((value is not None, value) for value in row)


def _ours(catalog: Catalog) -> list[Row]:
    data = catalog.get_table(f"db.{NAME}").to_arrow()
    return sorted((tuple(row.values()) for row in data.to_pylist()), key=_sort_key)


def _java_write(java: Any, commit: Commit) -> None:
    java.write(NAME, [row for _, row in commit], [kind for kind, _ in commit])


def _our_write(catalog: Catalog, commit: Commit) -> None:
    """The adds of ``commit`` through ``append`` (our API writes ``-D`` records with the key only)."""
    rows = [dict(zip(ARROW_SCHEMA.names, row, strict=True)) for kind, row in commit if kind == "+I"]
    if rows:
        catalog.get_table(f"db.{NAME}").append(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA))


def test_we_read_javas_aggregating_sequence_groups(ours: Catalog, java: Any) -> None:
    java.create_table(NAME, COLUMNS, primary_keys=["id"], options=OPTIONS)
    for commit in HISTORY:
        _java_write(java, commit)
        assert _ours(ours) == java.read(NAME)
    written = java.read(NAME)
    # id 1: score 10 + 3 + 1 - 3, tags with the older "old" first, price max(1.5, 99.0), name n1b
    assert written[0] == (1, 5, 11, "old,a,new", 1, 99.0, "n1b")
    java.full_compact(NAME)
    assert _ours(ours) == java.read(NAME) == written
    for commit in LATER:
        _java_write(java, commit)
        assert _ours(ours) == java.read(NAME)


def test_java_reads_our_aggregating_sequence_groups(ours: Catalog, java: Any) -> None:
    ours.create_table(f"db.{NAME}", ARROW_SCHEMA, primary_keys=["id"], options=OPTIONS)
    for commit in HISTORY:
        _our_write(ours, commit)
        assert java.read(NAME) == _ours(ours)
    compact_table(ours.get_table(f"db.{NAME}"), parallelism=1, progress=False)
    assert java.read(NAME) == _ours(ours)
    for commit in LATER:
        _our_write(ours, commit)
    java.full_compact(NAME)
    assert java.read(NAME) == _ours(ours)


def test_a_record_merged_at_flush_sorts_by_its_last_record_in_java_and_here(ours: Catalog, java: Any) -> None:
    """partial-update with ``sequence.field``: a writer's flush merges (v=null, s=1) and then (v=0, s=0) into
    (v=0, s=1), which then sorts after an older commit's (v=1, s=1). Merged with all records at once, the
    older commit's v=1 would sort between them and survive: Java's merge is not associative here, and our
    read follows Java (the primary-key state machine writes no null values with ``sequence.field``)."""
    columns = [("id", "BIGINT NOT NULL"), ("v", "BIGINT"), ("s", "BIGINT")]
    options = {"merge-engine": "partial-update", "sequence.field": "s", "bucket": "1", "write-only": "true"}
    java.create_table("flushed", columns, primary_keys=["id"], options=options)
    java.write("flushed", [(0, 1, 1)])
    java.write("flushed", [(0, None, 1), (0, 0, 0)])
    assert java.read("flushed") == [(0, 0, 1)]
    assert [tuple(r.values()) for r in ours.get_table("db.flushed").to_arrow().to_pylist()] == [(0, 0, 1)]
