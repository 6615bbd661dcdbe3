"""The concurrent-commit state machine on a primary-key table, checked against a model of the merge.

:class:`PrimaryKeyCommits` is :class:`paimon_testing.stateful.ConcurrentCommits` (the same actors, jobs,
faults, compaction, expiration, tags, rollbacks and orphan removal) on a primary-key table
``(id, p, v, s)`` with primary key ``(id, p)``, partitioned by ``p``, two fixed buckets. Its first step draws
a :class:`KeyedVariant` from :attr:`PrimaryKeyCommits.variants`: a merge engine (deduplicate, partial-update,
aggregation with ``sum``, first-row), with or without ``sequence.field = s``, with or without ``-D`` records
(through the option each engine needs to take them: partial-update's ``remove-record-on-delete``,
aggregation's ``aggregation.remove-record-on-delete``, first-row's ``ignore-delete``).

The model keeps, for each snapshot, the records of the live keys in commit order (an overwrite drops those of
its scope) and merges them per key as Paimon does: by ``s`` when it is the sequence field, then in the order
they were written. That order is Paimon's ``_SEQUENCE_NUMBER`` only for one writer at a time per bucket and
key (Paimon's rule: two writers of one bucket have overlapping sequence numbers), so each actor writes its own
keys: ids ``10 * actor + k``. An actor's next job starts its writer after its previous commit was decided,
from the latest snapshot, so its numbers keep growing.

What the model cannot know is left out on purpose, and said so:

- Records are written so that any grouping of them into merges (flush, compaction, read) gives the same
  result, since Java's merges are not associative otherwise. A compaction to the top level drops a lone
  ``-D``, so what follows it must not depend on it: a ``-D`` of partial-update or aggregation carries null
  values, and with ``sequence.field`` a key's later records never take an ``s`` below its last ``-D``'s.
  Aggregation with ``aggregation.remove-record-on-delete`` writes only ``-D`` to a key after its first
  one: a merge of a ``-D`` and later adds without the older records yields an add that the older records
  are then summed with, unlike a merge of them all.
  Partial-update with deletes or ``sequence.field`` writes non-null values: Java starts the row from a
  removing ``-D``'s values, which a later null would keep or not depending on the grouping; and a merged
  record takes its place in the ``s`` order from its last record but its values from earlier ones, so a
  record of another commit that sorts among them (``s`` need not follow the commits) wins or not depending
  on whether they were merged first.
- Writers are ``write-only``: compaction is the compactor actor's (one snapshot per commit, as the machine
  checks).
- first-row: a batch read skips level 0 (only compacted keys are visible, as in Java), so a read must be a
  subset of the model (each row the model's row for its key) and the merge of all live files, level 0
  included, must equal it.

Running it::

    from paimon_testing.stateful_pk import PrimaryKeyCommits
    from paimon_testing.stateful import FAST

    TestPrimaryKeyCommits = PrimaryKeyCommits.TestCase
    TestPrimaryKeyCommits.settings = FAST

``PrimaryKeyCommits.only(engine="first-row")`` is a subclass restricted to the matching variants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import pyarrow as pa
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from paimon_core.manifest import ManifestEntry
from paimon_core.snapshot import Snapshot
from paimon_core.table import KeyValueTableWrite
from paimon_core.table.mergetree import DELETE, KeyValueTableRead
from paimon_testing.faults import SimulatedCrash
from paimon_testing.stateful import Actor, ConcurrentCommits, LocalConcurrentCommits
from paimon_testing.strategies import partition_values

__all__ = [
    "ENGINES",
    "KEYED_SCHEMA",
    "VARIANTS",
    "KeyedVariant",
    "LocalPrimaryKeyCommits",
    "PrimaryKeyCommits",
    "Record",
    "merge_records",
]

KEYED_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("p", pa.string(), nullable=False),
        pa.field("v", pa.int64()),
        pa.field("s", pa.int64()),
    ]
)
"""The primary-key machine's table: key ``(id, p)``, partition ``p``, a value ``v``, ``s`` (the sequence
field in the variants that have one)."""

Record = tuple[int, str, int | None, int, bool]
"""One written record: (id, partition, v, s, is a ``-D``)."""

KeyedRow = tuple[int, str, int | None, int | None]

ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
_IDS_PER_ACTOR = 10
_KEYS_PER_ACTOR = 3


@dataclass(frozen=True)
class KeyedVariant:
    """One table configuration of the primary-key machine."""

    engine: str
    sequence_field: bool = False
    deletes: bool = False

    def options(self) -> dict[str, str]:
        """The table options of this variant (besides the machine's commit options)."""
        options = {"merge-engine": self.engine, "bucket": "2", "write-only": "true"}
        if self.sequence_field:
            options["sequence.field"] = "s"
        if self.engine == "aggregation":
            options["fields.v.aggregate-function"] = "sum"
        if self.deletes:
            options.update(_DELETE_OPTIONS[self.engine])
        return options

    def describe(self) -> str:
        return (
            f"{self.engine}{' + sequence.field' if self.sequence_field else ''}"
            f"{' + deletes' if self.deletes else ''}"
        )


_DELETE_OPTIONS = {
    "deduplicate": {},
    "partial-update": {"partial-update.remove-record-on-delete": "true"},
    "aggregation": {"aggregation.remove-record-on-delete": "true"},
    "first-row": {"ignore-delete": "true"},  # first-row refuses -D records otherwise
}

VARIANTS: tuple[KeyedVariant, ...] = tuple(
    KeyedVariant(engine, sequence_field, deletes)
    for engine in ENGINES
    for sequence_field in ((False,) if engine == "first-row" else (False, True))  # first-row takes none
    for deletes in (False, True)
)
"""Every engine, with and without ``sequence.field`` (first-row refuses one), with and without ``-D``."""


# --- the model of the merge -----------------------------------------------------------------------------------


def _add(acc: int | None, value: int | None) -> int | None:
    if acc is None:
        return value
    return acc if value is None else acc + value


def _merge_key(variant: KeyedVariant, records: Sequence[Record]) -> tuple[int | None, int] | None:
    """One key's records (oldest first) merged by the variant's engine: (v, s), or None when it is gone."""
    if variant.engine == "first-row":
        adds = [r for r in records if not r[4]]  # with ignore-delete, -D records are dropped
        return (adds[0][2], adds[0][3]) if adds else None
    if variant.engine == "deduplicate":
        last = records[-1]
        return None if last[4] else (last[2], last[3])
    row: tuple[int | None, int] | None = None
    deleted = False
    for _, _, v, s, is_delete in records:
        if is_delete:  # remove-record-on-delete: the row restarts from the -D's values, removed
            row, deleted = (v, s), True
        elif row is None:
            row, deleted = (v, s), False
        elif variant.engine == "partial-update":  # the last non-null value of each column
            row, deleted = (row[0] if v is None else v, s), False
        else:  # aggregation: v sums, s is the last value
            row, deleted = (_add(row[0], v), s), False
    return None if deleted or row is None else row


def merge_records(variant: KeyedVariant, content: Sequence[Record]) -> list[KeyedRow]:
    """What a read of ``content`` (records in commit order) returns, sorted by key: each key's records in
    Paimon's merge order (by the sequence field when there is one; the sort is stable, so ties keep the order
    they were written in), merged by the engine."""
    by_key: dict[tuple[int, str], list[Record]] = {}
    for record in content:
        by_key.setdefault((record[0], record[1]), []).append(record)
    rows: list[KeyedRow] = []
    for key in sorted(by_key):
        records = by_key[key]
        if variant.sequence_field:
            records = sorted(records, key=lambda r: r[3])
        merged = _merge_key(variant, records)
        if merged is not None:
            rows.append((key[0], key[1], merged[0], merged[1]))
    return rows


def _table_rows(data: pa.Table) -> list[KeyedRow]:
    ids, partitions, values, sequences = (data.column(name).to_pylist() for name in ("id", "p", "v", "s"))
    return sorted(zip(ids, partitions, values, sequences, strict=True))


# --- the machine ------------------------------------------------------------------------------------------------

_RECORDS = st.lists(
    st.tuples(
        st.integers(0, _KEYS_PER_ACTOR - 1),  # key, among the actor's own
        st.integers(0, 2),  # partition index
        st.one_of(st.none(), st.integers(-3, 3)),  # v
        st.integers(0, 3),  # s: few values, so that ties happen
        st.sampled_from((False, False, True)),  # a -D
    ),
    max_size=4,
)


class PrimaryKeyCommits(ConcurrentCommits):
    """:class:`ConcurrentCommits` on a primary-key table of a drawn :class:`KeyedVariant`."""

    variants: ClassVar[tuple[KeyedVariant, ...]] = VARIANTS

    def __init__(self) -> None:
        super().__init__()
        self.variant = self.variants[0]
        self.next_table = 1
        self.delete_floor: dict[tuple[int, str], int] = {}  # the s of a key's latest -D (see _record)
        self.deleted_keys: set[tuple[int, str]] = set()  # aggregation: keys that had a -D (see _record)

    @classmethod
    def only(cls, **fields: Any) -> type[PrimaryKeyCommits]:
        """A subclass drawing only the variants whose fields equal ``fields`` (``engine="first-row"``)."""
        chosen = tuple(v for v in cls.variants if all(getattr(v, k) == x for k, x in fields.items()))
        if not chosen:
            raise ValueError(f"no variant has {fields}")
        name = f"{cls.__name__}_" + "_".join(f"{k}_{x}" for k, x in sorted(fields.items()))
        return cast("type[PrimaryKeyCommits]", type(name.replace("-", "_"), (cls,), {"variants": chosen}))

    @initialize(
        partitions=st.lists(
            partition_values().filter(lambda v: v is not None), min_size=1, max_size=3, unique=True
        )
    )
    def choose_partitions(self, partitions: list[str | None]) -> None:
        """Partition values, non-null: ``p`` is part of the primary key."""
        self.partitions = partitions

    @initialize(data=st.data())
    def choose_variant(self, data: st.DataObject) -> None:
        """Draw the table's variant and create it (the append table the base machine made stays unused)."""
        self.variant = data.draw(st.sampled_from(self.variants), label="variant")
        note(f"table: {self.variant.describe()}")
        options = {**self.table_options, **self.variant.options()}
        self._open_table(f"db.pk{self.next_table}", KEYED_SCHEMA, ("id", "p"), options)
        self.next_table += 1

    # --- writing records ---------------------------------------------------------------------------------------

    @precondition(lambda self: self._idle())
    @rule(
        data=st.data(),
        job=st.sampled_from(("append", "append", "overwrite-partition", "overwrite-table")),
        rows=_RECORDS,
    )
    def begin(self, data: st.DataObject, job: str, rows: list[Any]) -> None:
        """Start a job and write its first records (an overwrite of one partition writes only there)."""
        self._begin(self._pick(data, self._idle()), job, rows)

    @precondition(lambda self: self._writing())
    @rule(data=st.data(), rows=_RECORDS.filter(bool))
    def write(self, data: st.DataObject, rows: list[Any]) -> None:
        """Write more records: upserts and ``-D``, on the actor's own keys."""
        self._write_rows(self._pick(data, self._writing()), rows)

    def _begin(self, actor: Actor, job: str, rows: list[Any]) -> None:
        super()._begin(actor, job, [])
        if actor.job is not None:
            actor.job.ordered = True
            self._write_rows(actor, rows)

    def _write_rows(self, actor: Actor, rows: list[Any]) -> None:
        job = actor.job
        assert job is not None and job.writer is not None
        records = [self._record(actor, job.scope, drawn) for drawn in rows]
        if not records:
            return
        try:
            for run in _runs_of_one_kind(records):
                data = pa.table(
                    {name: [r[i] for r in run] for i, name in enumerate(KEYED_SCHEMA.names)},
                    schema=KEYED_SCHEMA,
                )
                assert isinstance(job.writer, KeyValueTableWrite)
                if run[0][4]:
                    job.writer.write(data, DELETE)
                else:
                    job.writer.write(data)
            # With ignore-delete the writer drops -D records: the model never sees them either.
            dropped = self.variant.engine == "first-row"
            job.rows.extend(r for r in records if not (dropped and r[4]))
        except SimulatedCrash as crash:
            self._crash(actor, str(crash))
        except OSError as error:
            self._fail_job(actor, error)

    def _record(self, actor: Actor, scope: tuple[str | None, ...] | None, drawn: Any) -> Record:
        """The record a drawn tuple stands for (an int, as ``commit_paused`` writes, is an upsert)."""
        if isinstance(drawn, int):
            drawn = (drawn, drawn, drawn, 0, False)
        key, partition_index, v, s, is_delete = drawn
        owner = int(actor.name[1:])
        partition = scope[0] if scope is not None else self.partitions[partition_index % len(self.partitions)]
        assert partition is not None  # a primary-key column: partition values are drawn non-null here
        is_delete = is_delete and self.variant.deletes
        key_id = owner * _IDS_PER_ACTOR + key % _KEYS_PER_ACTOR
        if self.variant.engine == "aggregation" and self.variant.deletes:
            # A flush or compaction that merges a -D with later adds but not with the older records turns
            # them into one add, which the older records then sum with: after a -D the key only takes -D.
            is_delete = is_delete or (key_id, partition) in self.deleted_keys
            if is_delete:
                self.deleted_keys.add((key_id, partition))
        if self.variant.sequence_field and self.variant.deletes:
            # A compaction to the top level drops a lone -D: a later record ordered before it (a smaller
            # s) would be hidden by it or not depending on that. Later records of the key never go below it.
            floor = self.delete_floor.get((key_id, partition), s)
            s = max(s, floor)
            if is_delete:
                self.delete_floor[(key_id, partition)] = s
        if is_delete and self.variant.engine in ("partial-update", "aggregation"):
            v = None  # see the module doc: what follows a -D must not depend on its values
        elif (
            self.variant.engine == "partial-update"
            and v is None
            and (self.variant.deletes or self.variant.sequence_field)
        ):
            v = 0  # see the module doc: a null value would make the result depend on the grouping
        return (key_id, partition, v, s, is_delete)

    # --- reading and comparing ---------------------------------------------------------------------------------

    def read_rows(self, snapshot_id: int | None = None, tag: str | None = None) -> list[Any]:
        return _table_rows(self.checker.to_arrow(["id", "p", "v", "s"], snapshot_id=snapshot_id, tag=tag))

    def expected_rows(self, content: tuple[Any, ...]) -> list[Any]:
        return list(merge_records(self.variant, content))

    def check_rows(
        self,
        what: str,
        actual: list[Any],
        expected: list[Any],
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
    ) -> None:
        if self.variant.engine != "first-row":
            super().check_rows(what, actual, expected, snapshot_id=snapshot_id, tag=tag)
            return
        # Level 0 is not read: every row read is the model's row of its key, and all files merged are the model.
        wrong = sorted(set(actual) - set(expected), key=str)
        assert not wrong and len(set(actual)) == len(actual), (
            f"{what} reads rows that are not the first of their key (or twice): {wrong or actual}"
        )
        merged = self._merge_all_files(snapshot_id, tag)
        super().check_rows(f"{what}, all files merged (level 0 too)", merged, expected)

    def _merge_all_files(self, snapshot_id: int | None, tag: str | None) -> list[KeyedRow]:
        """Every live file of the snapshot merged per bucket, level 0 included, deletes dropped."""
        read = KeyValueTableRead(self.checker, list(KEYED_SCHEMA.names))
        parts = []
        for split in self.checker.scan(snapshot_id=snapshot_id, tag=tag).plan():
            merged = read.merged(split, split.files)
            kinds = merged.column("_VALUE_KIND").to_pylist()
            adds = pa.array([kind in (0, 2) for kind in kinds], pa.bool_())
            parts.append(merged.filter(adds).select(list(KEYED_SCHEMA.names)))
        rows: list[KeyedRow] = []
        for part in parts:
            rows += _table_rows(part)
        return sorted(rows)

    def check_record_count(self, snapshot: Snapshot, expected: list[Any]) -> None:
        # A primary-key snapshot counts the records of its files (older versions, -D), not the rows read.
        records = sum(e.file.row_count for e in self.checker.live_entries(snapshot.id))
        assert snapshot.total_record_count == records, (
            f"snapshot {snapshot.id} says totalRecordCount={snapshot.total_record_count}, its files hold {records}"
        )

    def is_compactable(self, entries: Sequence[ManifestEntry]) -> bool:
        # A full compaction also moves a lone level-0 file up (first-row reads only what is above level 0).
        return super().is_compactable(entries) or any(e.file.level == 0 for e in entries)


def _runs_of_one_kind(records: list[Record]) -> list[list[Record]]:
    """Consecutive records split where the kind changes: one write call per run keeps the order written."""
    runs: list[list[Record]] = []
    for record in records:
        if runs and runs[-1][-1][4] == record[4]:
            runs[-1].append(record)
        else:
            runs.append([record])
    return runs


class LocalPrimaryKeyCommits(PrimaryKeyCommits, LocalConcurrentCommits):
    """The primary-key machine on a local temporary directory."""
