"""The concurrent-commit state machine on primary-key tables: each merge engine, with and without
``sequence.field``, with and without ``-D`` records; tens of seconds per engine in CI, thousands of
interleavings with ``-m thorough``."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.storage import clear_memory_store
from paimon_core.table import KeyValueTableWrite
from paimon_core.table.mergetree._merge import DELETE, INSERT
from paimon_testing.stateful import FAST, THOROUGH, JobCompactor
from paimon_testing.stateful_pk import (
    ENGINES,
    KEYED_SCHEMA,
    VARIANTS,
    KeyedVariant,
    LocalPrimaryKeyCommits,
    PrimaryKeyCommits,
    Record,
    merge_records,
)

PK_FAST = settings(FAST, max_examples=40)


@pytest.mark.parametrize("engine", ENGINES)
def test_primary_key_commits_memory(engine: str) -> None:
    machine = PrimaryKeyCommits.only(engine=engine)
    machine.TestCase.settings = PK_FAST
    machine.TestCase().runTest()


def test_primary_key_commits_local() -> None:
    LocalPrimaryKeyCommits.TestCase.settings = settings(FAST, max_examples=10)
    LocalPrimaryKeyCommits.TestCase().runTest()


@pytest.mark.thorough
@pytest.mark.parametrize("engine", ENGINES)
def test_primary_key_commits_thorough(engine: str) -> None:
    machine = PrimaryKeyCommits.only(engine=engine)
    machine.TestCase.settings = settings(THOROUGH, max_examples=1500)
    machine.TestCase().runTest()


def test_variants_cover_every_engine_sequence_field_and_deletes() -> None:
    assert {v.engine for v in VARIANTS} == set(ENGINES)
    assert all(any(v.sequence_field for v in VARIANTS if v.engine == e) for e in ENGINES if e != "first-row")
    assert all(any(v.deletes for v in VARIANTS if v.engine == e) for e in ENGINES)
    with pytest.raises(ValueError, match="no variant"):
        PrimaryKeyCommits.only(engine="first-row", sequence_field=True)


def test_model_merges_by_sequence_then_commit_order() -> None:
    """The model itself, on hand-made histories: the sequence field orders first, ties keep write order."""
    dedup = next(v for v in VARIANTS if v.engine == "deduplicate" and v.sequence_field and v.deletes)
    history: tuple[Record, ...] = (
        (1, "a", 5, 2, False),
        (1, "a", 6, 1, False),
        (1, "a", 7, 2, False),
        (2, "a", None, 0, True),
    )
    assert merge_records(dedup, history) == [(1, "a", 7, 2)]
    partial = next(
        v for v in VARIANTS if v.engine == "partial-update" and not v.sequence_field and not v.deletes
    )
    assert merge_records(partial, ((1, "a", 5, 0, False), (1, "a", None, 1, False))) == [(1, "a", 5, 1)]
    aggregation = next(
        v for v in VARIANTS if v.engine == "aggregation" and not v.sequence_field and v.deletes
    )
    history = ((1, "a", 5, 0, False), (1, "a", 2, 1, False), (1, "a", None, 2, True), (1, "a", 4, 3, False))
    assert merge_records(aggregation, history) == [(1, "a", 4, 3)]
    assert merge_records(aggregation, history[:2]) == [(1, "a", 7, 1)]
    first = next(v for v in VARIANTS if v.engine == "first-row" and v.deletes)
    assert merge_records(first, ((1, "a", None, 1, True), (1, "a", 3, 0, False), (1, "a", 4, 0, False))) == [
        (1, "a", 3, 0)
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    variant=st.sampled_from(VARIANTS),
    jobs=st.lists(
        st.tuples(
            st.lists(
                st.tuples(
                    st.integers(0, 1),
                    st.one_of(st.none(), st.integers(-3, 3)),
                    st.integers(0, 2),
                    st.booleans(),
                ),
                min_size=1,
                max_size=6,
            ),
            st.booleans(),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_model_agrees_with_one_writer(
    variant: KeyedVariant, jobs: list[tuple[list[tuple[int, int | None, int, bool]], bool]]
) -> None:
    """One writer, commits one after another, full compactions between some: the table reads what the
    model merges (first-row: a subset, since level 0 is not read). The machine's model rests on this."""
    catalog = Catalog.open(f"memory://model-{uuid.uuid4().hex}", create=True)
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table(
        "db.t", KEYED_SCHEMA, partition_keys=["p"], primary_keys=["id", "p"], options=variant.options()
    )
    content: tuple[Record, ...] = ()
    floor: dict[int, int] = {}
    deleted: set[int] = set()
    try:
        for identifier, (drawn, compact) in enumerate(jobs, start=1):
            records = [_legal(variant, floor, deleted, *d) for d in drawn]
            writer = table.new_write()
            assert isinstance(writer, KeyValueTableWrite)
            for record in records:  # one record a call: the write order is the order of the calls
                data = pa.table(
                    {n: [record[i]] for i, n in enumerate(KEYED_SCHEMA.names)}, schema=KEYED_SCHEMA
                )
                writer.write(data, DELETE if record[4] else INSERT)
            table.new_commit("writer").commit(writer.prepare_commit(), identifier)
            content += tuple(r for r in records if not (variant.engine == "first-row" and r[4]))
            if compact:
                compactor = JobCompactor(table)
                plan = compactor.plan()
                if plan is not None:
                    table.new_commit("compactor").commit(compactor.rewrite(plan), identifier)
        actual = sorted(table.to_arrow(["id", "p", "v", "s"]).to_pylist(), key=str)
        rows = [tuple(r.values()) for r in actual]
        expected = merge_records(variant, content)
        if variant.engine == "first-row":
            assert set(rows) <= set(expected)
        else:
            assert sorted(rows) == expected
    finally:
        clear_memory_store(catalog.warehouse)


def _legal(
    variant: KeyedVariant,
    floor: dict[int, int],
    deleted: set[int],
    key: int,
    v: int | None,
    s: int,
    delete: bool,
) -> Record:
    """A record the machine could write (see the module doc of paimon_testing.stateful_pk)."""
    delete = delete and variant.deletes
    if variant.engine == "aggregation" and variant.deletes:
        delete = delete or key in deleted  # after a -D the key only takes -D
        if delete:
            deleted.add(key)
    if delete and variant.engine in ("partial-update", "aggregation"):
        v = None
    elif variant.engine == "partial-update" and (variant.deletes or variant.sequence_field) and v is None:
        v = 0
    if variant.sequence_field and variant.deletes:
        s = max(s, floor.get(key, s))
        if delete:
            floor[key] = s
    return (key, "a", v, s, delete)
