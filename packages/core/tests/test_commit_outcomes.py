"""The attempt loop matches on the outcome of each attempt: a lost race retries, an unknown outcome is looked
for before anything else, an outcome that says the files are committed ends the call."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, Table
from paimon_core.table import CommitMessage
from paimon_core.table.commit._attempt import AttemptLoop
from paimon_core.table.commit._outcome import AlreadyLive, Landed, LostRace, Outcome, Unknown

SCHEMA = pa.schema([pa.field("writer", pa.int32()), pa.field("seq", pa.int32())])
FAST_RETRIES = {"commit.min-retry-wait": "1 ms", "commit.max-retry-wait": "2 ms"}


def _messages(table: Table) -> list[CommitMessage]:
    writer = table.new_write()
    writer.write(pa.table({"writer": [1], "seq": [1]}, schema=SCHEMA))
    return writer.prepare_commit()


def _script_attempts(monkeypatch: pytest.MonkeyPatch, *steps: Any) -> list[Outcome]:
    """Replace the outcomes of the first attempts: each step maps the real attempt (a callable running it)
    to the outcome the loop sees. Returns the outcomes the loop saw."""
    real = AttemptLoop._attempt
    seen: list[Outcome] = []

    def scripted(self: AttemptLoop, *args: Any) -> Outcome:
        step = steps[len(seen)] if len(seen) < len(steps) else (lambda run: run())
        outcome: Outcome = step(lambda: real(self, *args))
        seen.append(outcome)
        return outcome

    monkeypatch.setattr(AttemptLoop, "_attempt", scripted)
    return seen


def test_a_lost_race_then_a_landing_retries_once_and_returns_the_id(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table("db.t", SCHEMA, options=FAST_RETRIES)
    committer = table.new_commit("job")
    seen = _script_attempts(monkeypatch, lambda run: LostRace())
    assert committer.commit(_messages(table)) == [1]
    assert [type(o) for o in seen] == [LostRace, Landed]
    assert committer.last_attempts == {1: 2}
    assert [s.id for s in table.snapshots()] == [1] and table.to_arrow().num_rows == 1


def test_an_unknown_outcome_that_landed_is_found_before_another_attempt(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table("db.t", SCHEMA, options=FAST_RETRIES)
    committer = table.new_commit("job")

    def landed_but_unheard(run: Any) -> Outcome:
        outcome = run()
        assert isinstance(outcome, Landed)
        return Unknown(outcome.published)  # the store holds it; the committer was never told

    seen = _script_attempts(monkeypatch, landed_but_unheard)
    assert committer.commit(_messages(table)) == [1]
    assert [type(o) for o in seen] == [Unknown]  # found by its uuid: no second publish
    assert committer.last_attempts == {1: 1}
    assert [s.id for s in table.snapshots()] == [1]


def test_already_live_ends_the_call_without_publishing(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table("db.t", SCHEMA, options=FAST_RETRIES)
    committer = table.new_commit("job")
    seen = _script_attempts(monkeypatch, lambda run: AlreadyLive())
    assert committer.commit(_messages(table)) == []
    assert [type(o) for o in seen] == [AlreadyLive]
    assert committer.last_attempts == {} and table.latest_snapshot() is None
