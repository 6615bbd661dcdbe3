"""The concurrent-commit state machine on primary-key tables: each merge engine, with and without
``sequence.field``, with and without ``-D`` records; tens of seconds per engine in CI, thousands of
interleavings with ``-m thorough``."""

from __future__ import annotations

import pytest
from hypothesis import settings

from paimon_testing.stateful import FAST, THOROUGH
from paimon_testing.stateful_pk import (
    ENGINES,
    VARIANTS,
    LocalPrimaryKeyCommits,
    PrimaryKeyCommits,
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
    history = ((1, "a", 5, 2, False), (1, "a", 6, 1, False), (1, "a", 7, 2, False), (2, "a", None, 0, True))
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
