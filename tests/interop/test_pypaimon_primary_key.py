"""Interoperability with pypaimon 2.1.0 on primary-key tables, in both directions.

The expected rows always come from a model of Java Paimon's merge semantics kept by the test (deduplicate:
last record wins; partial-update: last non-null value per column; aggregation: ``sum`` for ``score`` and
``last_non_null_value`` for ``name``; first-row: first record wins), never from either reader. Rows are
compared as ``(dt, id, name, score)`` tuples sorted by key, and schemas ignoring field metadata.

What the installed wheel (``python-2.1.0-3a5ffe78``) does on primary-key tables, measured here; it is newer
than the releases before it, several of whose departures from Java are gone:

* Sequence numbers: a bucket's counter starts at the max ``_MAX_SEQUENCE_NUMBER`` of its live files plus one,
  **0** for an empty bucket, and a file records the true min/max of its rows, as Java does (an older
  pypaimon started at 1 and recorded the previous max as the min). The tests still
  assert the exact Java numbering only for files we write; for pypaimon's files they assert only what merge
  order needs (new numbers above every live number of the bucket, a max that covers the rows).
* ``_VALUE_KIND`` is 0 for every row, unless the table has ``rowkind.field``: this wheel then writes the
  row's kind (``-U``/``+U``/``-D``), so pypaimon can delete from such a table (older releases could not).
* ``_DELETE_ROW_COUNT`` is written as 0 even for a file holding ``-D`` rows (Java counts ``-U``/``-D`` rows):
  see ``test_a_retraction_in_its_own_key_range_is_dropped``.
* ``sequence.field`` is honoured when the writer folds a batch (older releases ignored it).
* The aggregation engine is accepted on write (older releases rejected it); partial-update with sequence
  groups, ``ignore-delete`` or ``remove-record-on-delete`` is still refused, on write and on read.
* No compaction: every pypaimon file is at level 0. Its batch reader skips level 0 for
  ``first-row`` tables, as Java's ``DataTableBatchScan`` does (``batchScanSkipLevel0``), so a first-row
  table only pypaimon wrote reads as empty until a compaction pushes the files up.
* Dynamic bucket (``bucket = -1``): Java's single-assigner algorithm with HASH index files.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core.compact import compact_table

pytestmark = pytest.mark.interop

TABLE = "db.pk"
SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string()),
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("score", pa.int64()),
    ]
)
PARTITION_KEYS = ["dt"]
PRIMARY_KEYS = ["dt", "id"]
# How both readers return the table: primary-key columns are NOT NULL.
READ_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("score", pa.int64()),
    ]
)
MAX_LEVEL = 5  # num-levels - 1 with the default num-sorted-run.compaction-trigger (5)

ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.score.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
}
BUCKETS: dict[str, dict[str, str]] = {
    "bucket-2": {"bucket": "2"},
    # A small target makes the assigner open several buckets per partition.
    "dynamic": {"bucket": "-1", "dynamic-bucket.target-row-num": "4"},
}

Row = tuple[Any, ...]
Key = tuple[str, int]


# --- data and the model ------------------------------------------------------------------------------


def upserts(commit: int, size: int = 14) -> list[Row]:
    """A batch of ``(dt, id, name, score)`` rows whose keys overlap the other commits' keys.

    The first key comes again last in the batch, so every writer has to fold a key inside one write.
    """
    rows: list[Row] = []
    for i in range(size):
        key = (commit * 7 + i * 5) % 23
        dt = "d1" if key % 3 else "d2"
        name = None if (commit + i) % 4 == 0 else f"n{commit}.{i}"
        score = None if (commit + i) % 5 == 0 else commit * 100 + i
        rows.append((dt, key, name, score))
    rows.append((rows[0][0], rows[0][1], f"again{commit}", None))
    return rows


def data(rows: Iterable[Row], schema: pa.Schema = SCHEMA) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema=schema)


def keys_table(keys: Iterable[Key]) -> pa.Table:
    keys = list(keys)
    return pa.table({"dt": [k[0] for k in keys], "id": pa.array([k[1] for k in keys], pa.int64())})


def rows_of(table: pa.Table) -> list[Row]:
    """Rows as tuples sorted by key (a stable sort, so duplicate keys would show up side by side)."""
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=lambda r: (r[0], r[1]))


class Model:
    """Java Paimon's merged result of a primary-key table, for the engines of :data:`ENGINES`."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.state: dict[Key, list[Any]] = {}

    def upsert(self, rows: Iterable[Row]) -> None:
        for dt, key, name, score in rows:
            current = self.state.get((dt, key))
            if current is None or self.engine == "deduplicate":
                self.state[(dt, key)] = [dt, key, name, score]
            elif self.engine == "partial-update":
                current[2] = name if name is not None else current[2]
                current[3] = score if score is not None else current[3]
            elif self.engine == "aggregation":
                current[2] = name if name is not None else current[2]  # last_non_null_value
                if score is not None:
                    current[3] = score if current[3] is None else current[3] + score
            # first-row: the first record stays

    def delete(self, keys: Iterable[Key]) -> None:
        assert self.engine == "deduplicate", "batch deletes are modelled for deduplicate only"
        for key in keys:
            self.state.pop(key, None)

    def rows(self) -> list[Row]:
        return sorted((tuple(v) for v in self.state.values()), key=lambda r: (r[0], r[1]))


# --- reading both ways --------------------------------------------------------------------------------


def ours_rows(ours: Any, identifier: str = TABLE, **kwargs: Any) -> list[Row]:
    result = ours.get_table(identifier).to_arrow(**kwargs)
    assert result.schema.equals(READ_SCHEMA, check_metadata=False), f"ours: schema {result.schema}"
    return rows_of(result)


def their_rows(pypaimon: Any, identifier: str = TABLE, **kwargs: Any) -> list[Row]:
    result = pypaimon.read(identifier, **kwargs)
    assert result.schema.equals(READ_SCHEMA, check_metadata=False), f"pypaimon: schema {result.schema}"
    return rows_of(result)


def assert_both_read(
    ours: Any, pypaimon: Any, expected: list[Row], what: str, snapshot_id: int | None = None
) -> None:
    mine = ours_rows(ours, snapshot_id=snapshot_id)
    assert mine == expected, f"ours, {what}: {_diff(mine, expected)}"
    theirs = their_rows(pypaimon, snapshot_id=snapshot_id)
    assert theirs == expected, f"pypaimon, {what}: {_diff(theirs, expected)}"


def assert_history(ours: Any, pypaimon: Any, history: Mapping[int, list[Row]]) -> None:
    """Time travel to every recorded snapshot, with both readers."""
    for snapshot_id, expected in history.items():
        assert_both_read(ours, pypaimon, expected, f"snapshot {snapshot_id}", snapshot_id)


def assert_projection_and_partition_filter(ours: Any, pypaimon: Any, expected: list[Row]) -> None:
    want = sorted((r[1], r[3]) for r in expected if r[0] == "d1")
    mine = ours.get_table(TABLE).to_arrow(columns=["id", "score"], filter=[("dt", "=", "d1")])
    theirs = pypaimon.read(TABLE, columns=["id", "score"], partition_equals={"dt": "d1"})
    assert mine.column_names == theirs.column_names == ["id", "score"]
    assert sorted(zip(*mine.to_pydict().values(), strict=True)) == want
    assert sorted(zip(*theirs.to_pydict().values(), strict=True)) == want


def _diff(actual: list[Row], expected: list[Row]) -> str:
    missing = [r for r in expected if r not in actual]
    unexpected = [r for r in actual if r not in expected]
    return f"{len(actual)} rows vs {len(expected)} expected; missing {missing}, unexpected {unexpected}"


def latest_id(ours: Any, identifier: str = TABLE) -> int:
    snapshot = ours.get_table(identifier).latest_snapshot()
    assert snapshot is not None
    return int(snapshot.id)


# --- the files ----------------------------------------------------------------------------------------

Slot = tuple[bytes, int]  # (partition bytes, bucket)


def live_files(ours: Any, identifier: str = TABLE) -> dict[tuple[bytes, int, str], Any]:
    return {(e.partition, e.bucket, e.file.file_name): e for e in ours.get_table(identifier).live_entries()}


def file_rows(ours: Any, entry: Any, identifier: str = TABLE) -> pa.Table:
    table = ours.get_table(identifier)
    path = f"{table.bucket_dir(entry.partition, entry.bucket)}/{entry.file.file_name}"
    return pq.ParquetFile(path).read(columns=["_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "id"])


def check_new_files(
    ours: Any,
    before: Mapping[tuple[bytes, int, str], Any],
    writer: str,
    written: Sequence[Row],
    deleting: bool = False,
) -> None:
    """The level-0 files one write added: sequence numbers and row kinds as Java's writer sets them.

    Java (docs/primary-key-tables.md#records-and-their-order): one counter per (partition, bucket), starting at the max ``_MAX_SEQUENCE_NUMBER`` of the
    bucket's live files plus one (0 for an empty bucket), one number per record in arrival order; a merged
    record keeps the number of the record that decides it (the last one for deduplicate, partial-update and
    aggregation), so a bucket's new max is its old max plus the number of records written to it; a file
    records the min/max of its rows.
    """
    after = live_files(ours)
    new = [e for k, e in after.items() if k not in before and e.file.level == 0]
    assert new, f"{writer}: the write added no level-0 file"
    previous_max: dict[Slot, int] = {}
    for e in before.values():
        slot = (e.partition, e.bucket)
        previous_max[slot] = max(previous_max.get(slot, -1), e.file.max_sequence_number)
    slot_of: dict[Key, Slot] = {}
    new_max: dict[Slot, int] = {}
    for e in new:
        slot = (e.partition, e.bucket)
        rows = file_rows(ours, e)
        sequences = rows.column("_SEQUENCE_NUMBER").to_pylist()
        kinds = set(rows.column("_VALUE_KIND").to_pylist())
        # Both writers: new numbers lie above every live number of the bucket, or merges pick wrong winners.
        assert min(sequences) > previous_max.get(slot, -1), f"{writer}: {e.file.file_name} reuses numbers"
        assert e.file.max_sequence_number == max(sequences)
        assert e.file.file_source == 0  # APPEND
        new_max[slot] = max(new_max.get(slot, -1), max(sequences))
        if writer == "ours":
            assert e.file.min_sequence_number == min(sequences), f"ours: {e.file.file_name} min"
            assert kinds == ({3} if deleting else {0})
            assert e.file.delete_row_count == (e.file.row_count if deleting else 0)
        else:
            # An older pypaimon recorded the previous max as the file's min; only require that
            # the range covers the rows (this wheel records the true min).
            assert e.file.min_sequence_number <= min(sequences)
            assert kinds == {0}  # pypaimon writes +I only without rowkind.field
            assert e.file.delete_row_count == 0  # never null: a null makes Java expect retract rows
        for dt, key in zip(rows.column("dt").to_pylist(), rows.column("id").to_pylist(), strict=True):
            slot_of[(dt, key)] = slot
    if writer == "ours":
        records = Counter(slot_of[(r[0], r[1])] for r in written)
        for slot, count in records.items():
            assert new_max[slot] == previous_max.get(slot, -1) + count, (
                f"ours: bucket {slot[1]} numbered {count} records up to {new_max[slot]}, "
                f"after a live max of {previous_max.get(slot, -1)}"
            )


def table_dir(warehouse: str, identifier: str = TABLE) -> Path:
    database, table = identifier.split(".")
    return Path(warehouse) / f"{database}.db" / table


def hash_index(warehouse: str, identifier: str) -> dict[Slot, set[int]]:
    """The HASH index of the latest snapshot, read from the files: (partition, bucket) -> key hashes."""
    root = table_dir(warehouse, identifier)
    latest = (root / "snapshot" / "LATEST").read_text().strip()
    snapshot = json.loads((root / "snapshot" / f"snapshot-{latest}").read_text())
    assert snapshot.get("indexManifest"), f"{identifier}: no index manifest in snapshot {latest}"
    with (root / "manifest" / snapshot["indexManifest"]).open("rb") as f:
        entries: list[Any] = list(fastavro.reader(f))
    out: dict[Slot, set[int]] = {}
    for entry in entries:
        assert entry["_KIND"] == 0, "an index manifest lists live files only"
        if entry["_INDEX_TYPE"] != "HASH":
            continue
        slot = (entry["_PARTITION"], entry["_BUCKET"])
        assert slot not in out, f"two HASH files for {slot}"
        raw = (root / "index" / entry["_FILE_NAME"]).read_bytes()
        assert entry["_FILE_SIZE"] == len(raw) and entry["_ROW_COUNT"] * 4 == len(raw)
        hashes = struct.unpack(f">{len(raw) // 4}i", raw)
        assert len(set(hashes)) == len(hashes), f"duplicate hashes in the index of {slot}"
        out[slot] = set(hashes)
    return out


def buckets_by_key(pypaimon: Any, identifier: str) -> dict[Key, tuple[tuple[Any, ...], int]]:
    """Key -> (partition values, bucket), as pypaimon's splits place each merged row."""
    out: dict[Key, tuple[tuple[Any, ...], int]] = {}
    for partition, bucket, rows in pypaimon.read_splits(identifier):
        for row in rows.to_pylist():
            key = (row["dt"], row["id"])
            assert key not in out, f"{identifier}: key {key} in two buckets"
            out[key] = (partition, bucket)
    return out


# --- 1. pypaimon writes, we read ---------------------------------------------------------------------


@pytest.mark.parametrize("buckets", BUCKETS)
@pytest.mark.parametrize("engine", ENGINES)
def test_we_read_what_pypaimon_writes(ours: Any, pypaimon: Any, engine: str, buckets: str) -> None:
    options = {**ENGINES[engine], **BUCKETS[buckets]}
    pypaimon.create_table(TABLE, SCHEMA, PARTITION_KEYS, options, primary_keys=PRIMARY_KEYS)
    model = Model(engine)
    history: dict[int, list[Row]] = {}
    for commit in range(4):
        rows = upserts(commit)
        snapshot_id = pypaimon.append(TABLE, data(rows))
        model.upsert(rows)
        history[snapshot_id] = model.rows()

    entries = ours.get_table(TABLE).live_entries()
    assert {e.file.level for e in entries} == {0}, "pypaimon does not compact"
    assert {e.total_buckets for e in entries} == {int(options["bucket"])}
    if buckets == "dynamic":
        assert len({(e.partition, e.bucket) for e in entries}) > 2, "the assigner should open several buckets"
    if engine == "first-row":
        # Java's batch scan skips level 0 for first-row, so a table only pypaimon wrote reads as empty, and
        # pypaimon's reader agrees; our reader is checked in test_first_row_level_zero_is_invisible_in_batch.
        assert their_rows(pypaimon) == []
    else:
        assert_history(ours, pypaimon, history)
        assert_projection_and_partition_filter(ours, pypaimon, model.rows())

    # Our compaction job rewrites pypaimon's files; pypaimon reads the result.
    compact_table(ours.get_table(TABLE))
    assert {e.file.level for e in ours.get_table(TABLE).live_entries()} == {MAX_LEVEL}
    assert_both_read(ours, pypaimon, model.rows(), "after our compaction")
    if engine == "first-row":
        return  # a further pypaimon commit would again sit at level 0: see the first-row test

    # pypaimon continues above the numbers our compaction kept.
    rows = upserts(4)
    snapshot_id = pypaimon.append(TABLE, data(rows))
    model.upsert(rows)
    history[snapshot_id] = model.rows()
    assert_history(ours, pypaimon, history)


def test_first_row_level_zero_is_invisible_in_batch(ours: Any, pypaimon: Any) -> None:
    """Java's batch scan of a first-row table skips level 0 (``CoreOptions.batchScanSkipLevel0``): rows
    become visible when a compaction moves them up. pypaimon never compacts, so what it writes stays at
    level 0 until our compaction job runs."""
    options = {**ENGINES["first-row"], **BUCKETS["bucket-2"]}
    pypaimon.create_table(TABLE, SCHEMA, PARTITION_KEYS, options, primary_keys=PRIMARY_KEYS)
    model = Model("first-row")
    for commit in range(2):
        rows = upserts(commit)
        pypaimon.append(TABLE, data(rows))
        model.upsert(rows)
    assert_both_read(ours, pypaimon, [], "level-0 files only")

    compact_table(ours.get_table(TABLE))
    visible = model.rows()
    assert_both_read(ours, pypaimon, visible, "after our compaction")

    rows = upserts(2)
    pypaimon.append(TABLE, data(rows))
    model.upsert(rows)
    assert_both_read(ours, pypaimon, visible, "a new level-0 file on top of compacted ones")
    compact_table(ours.get_table(TABLE))
    assert_both_read(ours, pypaimon, model.rows(), "after the second compaction")


ROWKIND_SCHEMA = SCHEMA.append(pa.field("op", pa.string()))


def test_we_read_pypaimons_row_kinds(ours: Any, pypaimon: Any) -> None:
    """With ``rowkind.field`` this pypaimon writes real ``-U``/``+U``/``-D`` records (older releases
    wrote only ``+I``); our merge honours them, and pypaimon reads the ``-D`` we write, before and after our
    compaction."""
    options = {"bucket": "2", "rowkind.field": "op"}
    pypaimon.create_table(TABLE, ROWKIND_SCHEMA, PARTITION_KEYS, options, primary_keys=PRIMARY_KEYS)
    pypaimon.append(TABLE, data([("d1", i, f"a{i}", i, "+I") for i in range(6)], ROWKIND_SCHEMA))
    changes = [("d1", 1, "a1", 1, "-U"), ("d1", 1, "b1", 10, "+U"), ("d1", 2, None, None, "-D")]
    pypaimon.append(TABLE, data(changes, ROWKIND_SCHEMA))
    expected = [("d1", 0, "a0", 0, "+I"), ("d1", 1, "b1", 10, "+U")] + [
        ("d1", i, f"a{i}", i, "+I") for i in range(3, 6)
    ]
    assert rows_of(ours.get_table(TABLE).to_arrow()) == expected
    assert rows_of(pypaimon.read(TABLE)) == expected

    ours.get_table(TABLE).append(data([("d1", 3, None, None, "-D")], ROWKIND_SCHEMA))
    expected = [r for r in expected if r[1] != 3]
    assert rows_of(pypaimon.read(TABLE)) == expected
    compact_table(ours.get_table(TABLE))
    assert rows_of(ours.get_table(TABLE).to_arrow()) == expected
    assert rows_of(pypaimon.read(TABLE)) == expected


def test_a_retraction_in_its_own_key_range_is_dropped(ours: Any, pypaimon: Any) -> None:
    """A ``-D`` whose key no other file of the bucket covers is still a retraction, never a row.

    pypaimon departs from Java here: it records ``_DELETE_ROW_COUNT`` = 0 for files holding ``-D`` rows (Java
    counts the ``-U``/``-D`` rows). Java trusts that count only to read a split holding one file raw
    (``DataSplit.rawConvertible``); a split with several files goes through the merge reader for every key-range
    section, then ``DropDeleteReader``, so the ``-D`` of key 7 below (bucket 1, next to a file holding keys 0 and
    3) is dropped. pypaimon's reader drops it too.
    """
    options = {"bucket": "2", "rowkind.field": "op"}
    pypaimon.create_table(TABLE, ROWKIND_SCHEMA, PARTITION_KEYS, options, primary_keys=PRIMARY_KEYS)
    pypaimon.append(TABLE, data([("d1", i, f"a{i}", i, "+I") for i in range(6)], ROWKIND_SCHEMA))
    pypaimon.append(TABLE, data([("d1", 7, None, None, "-D")], ROWKIND_SCHEMA))
    entries = ours.get_table(TABLE).live_entries()
    (retraction,) = [e for e in entries if e.file.row_count == 1]
    assert file_rows(ours, retraction).column("_VALUE_KIND").to_pylist() == [3]
    assert len([e for e in entries if e.bucket == retraction.bucket]) == 2, "key 7 shares its bucket"
    expected = [("d1", i, f"a{i}", i, "+I") for i in range(6)]
    assert rows_of(pypaimon.read(TABLE)) == expected
    assert rows_of(ours.get_table(TABLE).to_arrow()) == expected


def test_we_read_pypaimons_sequence_field(ours: Any, pypaimon: Any) -> None:
    """``sequence.field`` orders the records of a key before ``_SEQUENCE_NUMBER``: a later record with a lower
    ``score`` loses, within one pypaimon write (its buffer fold) and across commits (our merge)."""
    options = {"bucket": "2", "sequence.field": "score"}
    pypaimon.create_table(TABLE, SCHEMA, PARTITION_KEYS, options, primary_keys=PRIMARY_KEYS)
    pypaimon.append(TABLE, data([("d1", 1, "new", 5), ("d1", 1, "old", 3), ("d1", 2, "x", 1)]))
    pypaimon.append(TABLE, data([("d1", 1, "older", 4), ("d1", 2, "y", 2)]))
    expected = [("d1", 1, "new", 5), ("d1", 2, "y", 2)]
    assert_both_read(ours, pypaimon, expected, "sequence.field")
    compact_table(ours.get_table(TABLE))
    assert_both_read(ours, pypaimon, expected, "sequence.field, after our compaction")


# --- 2. we write, pypaimon reads ----------------------------------------------------------------------


def _write_history(ours: Any, engine: str, options: Mapping[str, str]) -> tuple[Model, dict[int, list[Row]]]:
    """Three upsert commits, then (deduplicate) a delete of two live keys and one that never existed."""
    table = ours.create_table(
        TABLE, SCHEMA, partition_keys=PARTITION_KEYS, primary_keys=PRIMARY_KEYS, options=dict(options)
    )
    model = Model(engine)
    history: dict[int, list[Row]] = {}
    for commit in range(3):
        rows = upserts(commit)
        table.append(data(rows))
        model.upsert(rows)
        history[latest_id(ours)] = model.rows()
    if engine == "deduplicate":
        gone = [model.rows()[0][:2], model.rows()[-1][:2], ("d2", 999)]
        table.delete(keys_table(gone))
        model.delete(gone)
        history[latest_id(ours)] = model.rows()
    return model, history


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
def test_pypaimon_reads_what_we_write(ours: Any, pypaimon: Any, engine: str) -> None:
    """Batch ``DELETE`` needs deduplicate in Java (partial-update / aggregation need
    ``remove-record-on-delete``, which pypaimon refuses to read), so only deduplicate deletes here."""
    model, history = _write_history(ours, engine, {**ENGINES[engine], **BUCKETS["bucket-2"]})
    assert {e.file.level for e in ours.get_table(TABLE).live_entries()} == {0}
    assert_history(ours, pypaimon, history)
    assert_projection_and_partition_filter(ours, pypaimon, model.rows())

    compact_table(ours.get_table(TABLE))
    entries = ours.get_table(TABLE).live_entries()
    assert {e.file.level for e in entries} == {MAX_LEVEL}
    assert all(e.file.delete_row_count == 0 for e in entries), "a full compaction drops the deletes"
    history[latest_id(ours)] = model.rows()

    # A new level-0 file over the compacted level: pypaimon merges the two.
    rows = upserts(3)
    ours.get_table(TABLE).append(data(rows))
    model.upsert(rows)
    history[latest_id(ours)] = model.rows()
    assert {e.file.level for e in ours.get_table(TABLE).live_entries()} == {0, MAX_LEVEL}
    assert_history(ours, pypaimon, history)
    assert_projection_and_partition_filter(ours, pypaimon, model.rows())


def test_pypaimon_reads_our_full_compactions(ours: Any, pypaimon: Any) -> None:
    """``full-compaction.delta-commits = 1``: every commit of ours is followed by a full compaction."""
    options = {**BUCKETS["bucket-2"], "full-compaction.delta-commits": "1"}
    _, history = _write_history(ours, "deduplicate", options)
    entries = ours.get_table(TABLE).live_entries()
    assert {e.file.level for e in entries} == {MAX_LEVEL}
    assert "COMPACT" in {s.commit_kind for s in ours.get_table(TABLE).snapshots()}
    assert_history(ours, pypaimon, history)


def test_our_first_row_writes_are_visible_to_pypaimon(ours: Any, pypaimon: Any) -> None:
    """A Java writer of a first-row table compacts at every commit (first-row needs lookup, and with
    ``lookup-wait`` = true ``prepareCommit`` waits for a compaction that forces level 0 up), so its batch
    readers, which skip level 0, see every committed row. pypaimon's reader skips level 0 as Java does."""
    options = {**ENGINES["first-row"], **BUCKETS["bucket-2"]}
    table = ours.create_table(
        TABLE, SCHEMA, partition_keys=PARTITION_KEYS, primary_keys=PRIMARY_KEYS, options=options
    )
    model = Model("first-row")
    for commit in range(3):
        rows = upserts(commit)
        table.append(data(rows))
        model.upsert(rows)
        assert_both_read(ours, pypaimon, model.rows(), f"after commit {commit}")
        levels = {e.file.level for e in ours.get_table(TABLE).live_entries()}
        assert 0 not in levels, f"commit {commit}: level-0 files left behind ({levels})"


def test_pypaimon_reads_our_dynamic_bucket_table(ours: Any, pypaimon: Any, warehouse: str) -> None:
    model, history = _write_history(ours, "deduplicate", BUCKETS["dynamic"])
    entries = ours.get_table(TABLE).live_entries()
    assert {e.total_buckets for e in entries} == {-1}
    assert len({(e.partition, e.bucket) for e in entries}) > 2, "the assigner should open several buckets"
    assert_history(ours, pypaimon, history)
    assert set(hash_index(warehouse, TABLE)) == {(e.partition, e.bucket) for e in entries}

    compact_table(ours.get_table(TABLE))
    history[latest_id(ours)] = model.rows()
    assert_history(ours, pypaimon, history)

    # pypaimon's assigner loads our HASH files: known keys stay in their bucket (no duplicates), new keys go
    # where there is room.
    placed = buckets_by_key(pypaimon, TABLE)
    rows = upserts(5) + [("d1", 100 + i, "new", i) for i in range(6)]
    pypaimon.append(TABLE, data(rows))
    model.upsert(rows)
    assert_both_read(ours, pypaimon, model.rows(), "after pypaimon wrote into our table")
    now = buckets_by_key(pypaimon, TABLE)
    moved = {k: (v, now[k]) for k, v in placed.items() if now[k] != v}
    assert not moved, f"keys changed bucket: {moved}"


def test_we_write_into_pypaimons_dynamic_bucket_table(ours: Any, pypaimon: Any) -> None:
    """The reverse: our assigner loads pypaimon's HASH files."""
    pypaimon.create_table(TABLE, SCHEMA, PARTITION_KEYS, BUCKETS["dynamic"], primary_keys=PRIMARY_KEYS)
    model = Model("deduplicate")
    for commit in range(2):
        rows = upserts(commit)
        pypaimon.append(TABLE, data(rows))
        model.upsert(rows)
    placed = buckets_by_key(pypaimon, TABLE)
    rows = upserts(5) + [("d1", 100 + i, "new", i) for i in range(6)]
    ours.get_table(TABLE).append(data(rows))
    model.upsert(rows)
    assert_both_read(ours, pypaimon, model.rows(), "after we wrote into pypaimon's table")
    now = buckets_by_key(pypaimon, TABLE)
    moved = {k: (v, now[k]) for k, v in placed.items() if now[k] != v}
    assert not moved, f"keys changed bucket: {moved}"


def test_dynamic_buckets_are_assigned_as_pypaimon_assigns_them(
    ours: Any, pypaimon: Any, warehouse: str
) -> None:
    """Same commits, same table definition: Java's single assigner is deterministic, so both put every key
    in the same bucket and write the same HASH index (key hashes per bucket)."""
    ours.create_table(
        "db.ours",
        SCHEMA,
        partition_keys=PARTITION_KEYS,
        primary_keys=PRIMARY_KEYS,
        options=BUCKETS["dynamic"],
    )
    pypaimon.create_table("db.theirs", SCHEMA, PARTITION_KEYS, BUCKETS["dynamic"], primary_keys=PRIMARY_KEYS)
    for commit in range(3):
        rows = data(upserts(commit))
        ours.get_table("db.ours").append(rows)
        pypaimon.append("db.theirs", rows)
    mine, theirs = buckets_by_key(pypaimon, "db.ours"), buckets_by_key(pypaimon, "db.theirs")
    assert set(mine) == set(theirs)
    differ = {k: (mine[k], theirs[k]) for k in mine if mine[k] != theirs[k]}
    assert not differ, f"keys in other buckets than pypaimon's (ours, pypaimon): {differ}"
    assert hash_index(warehouse, "db.ours") == hash_index(warehouse, "db.theirs")


# --- 3. both writing one table ------------------------------------------------------------------------

# (writer, action, commit number of the rows); "compact" is our compaction job.
ALTERNATING = [
    ("ours", "upsert", 0),
    ("pypaimon", "upsert", 1),
    ("ours", "delete", None),
    ("pypaimon", "upsert", 2),  # re-inserts a deleted key (see below)
    ("ours", "compact", None),
    ("pypaimon", "upsert", 3),
    ("ours", "upsert", 4),
    ("pypaimon", "upsert", 5),
]


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
@pytest.mark.parametrize("creator", ["ours", "pypaimon"])
def test_alternating_writers_share_a_table(ours: Any, pypaimon: Any, creator: str, engine: str) -> None:
    """Each writer continues the other's sequence numbers per bucket, so the later write wins the merge
    whoever made it. ``write-only`` keeps our writer from compacting on its own: the compaction is a step."""
    options = {**ENGINES[engine], **BUCKETS["bucket-2"], "write-only": "true"}
    if creator == "ours":
        ours.create_table(
            TABLE, SCHEMA, partition_keys=PARTITION_KEYS, primary_keys=PRIMARY_KEYS, options=options
        )
    else:
        pypaimon.create_table(TABLE, SCHEMA, PARTITION_KEYS, options, primary_keys=PRIMARY_KEYS)

    model = Model(engine)
    history: dict[int, list[Row]] = {}
    deleted: list[Key] = []
    for writer, action, commit in ALTERNATING:
        before = live_files(ours)
        if action == "compact":
            compact_table(ours.get_table(TABLE))
            assert {e.file.level for e in ours.get_table(TABLE).live_entries()} == {MAX_LEVEL}
        elif action == "delete":
            if engine != "deduplicate":
                continue  # Java allows batch DELETE on deduplicate tables only (without extra options)
            deleted = [model.rows()[1][:2], model.rows()[-2][:2]]
            ours.get_table(TABLE).delete(keys_table(deleted))
            model.delete(deleted)
            check_new_files(ours, before, writer, [(*k, None, None) for k in deleted], deleting=True)
        else:
            assert commit is not None
            rows = upserts(commit)
            if commit == 2 and deleted:
                rows.append((*deleted[0], "back", 7))  # a later +I resurrects a key our -D removed
            if writer == "ours":
                ours.get_table(TABLE).append(data(rows))
            else:
                pypaimon.append(TABLE, data(rows))
            model.upsert(rows)
            check_new_files(ours, before, writer, rows)
        history[latest_id(ours)] = model.rows()
        assert_both_read(ours, pypaimon, model.rows(), f"after {writer} {action} {commit}")

    assert_history(ours, pypaimon, history)
    assert_projection_and_partition_filter(ours, pypaimon, model.rows())
