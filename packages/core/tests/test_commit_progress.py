"""Issue 32 (11): a commit user's progress survives the expiration of its snapshots, so a replayed identifier
never lands twice (the Spark sink's restart path asks ``is_committed`` first)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from paimon_core import Catalog, CommitMessage
from paimon_core.compact import compact_table
from paimon_core.errors import CommitIdentifierError
from paimon_core.maintenance import expire_snapshots
from paimon_core.table import Table
from paimon_core.table._history import PROGRESS_PROPERTY, CommitProgress

SCHEMA = pa.schema([pa.field("id", pa.int64())])
FAR_FUTURE = dt.datetime(2999, 1, 1)


def _open(warehouse: str) -> Table:
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("db")
    return catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})


@pytest.fixture()
def table(tmp_path: Any) -> Table:
    return _open(str(tmp_path / "warehouse"))


def _messages(table: Table, *ids: int) -> list[CommitMessage]:
    writer = table.new_write()
    writer.write(pa.table({"id": list(ids)}, schema=SCHEMA))
    return writer.prepare_commit()


def _ids(table: Table) -> list[int]:
    return sorted(table.to_arrow().column("id").to_pylist())


def _as_foreign(table: Table, snapshot_id: int) -> None:
    """Rewrite a snapshot without the commit progress record, as Java Paimon or pypaimon write snapshots."""
    sm = table.snapshot_manager
    bare = dataclasses.replace(sm.snapshot(snapshot_id), properties=None)
    table.storage.write_bytes(sm.snapshot_path(snapshot_id), bare.to_json().encode(), overwrite=True)


def test_a_replay_after_its_users_snapshots_expired_does_not_land_twice(table: Table) -> None:
    batch = _messages(table, 1)
    assert table.new_commit("job").commit(batch, 3) == [1]
    for i in (2, 3, 4):  # another user commits, and the job's snapshot expires
        table.new_commit("other").commit(_messages(table, i), i)
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)
    assert table.snapshot_manager.list_ids() == [4]

    restarted = table.new_commit("job")
    assert restarted.is_committed(3)  # what the Spark sink asks before writing a replayed batch again
    assert restarted.is_committed(2)
    assert not restarted.is_committed(4)
    rewritten = _messages(table, 1)  # the batch written again by the restarted query
    with pytest.raises(CommitIdentifierError, match="identifier 3 is not newer"):
        restarted.commit(rewritten, 3)
    restarted.abort(rewritten)
    assert restarted.commit(batch, 3) == []  # the same messages: recognised
    assert _ids(table) == [1, 2, 3, 4]
    assert restarted.commit(_messages(table, 5), 4) == [5]
    assert _ids(table) == [1, 2, 3, 4, 5]


def test_every_snapshot_records_each_users_newest_identifier(table: Table) -> None:
    table.new_commit("a").commit(_messages(table, 1), 1)
    table.append(pa.table({"id": [2]}, schema=SCHEMA))  # a batch commit
    table.new_commit("b").commit(_messages(table, 3), 7)
    table.new_commit("a").commit(_messages(table, 4), 2)
    latest = table.snapshot_manager.latest()
    assert latest is not None and latest.properties is not None
    # readable as plain JSON by any reader; batch commits are not recorded
    assert json.loads(latest.properties[PROGRESS_PROPERTY]) == {"users": {"a": [2, 4], "b": [7, 3]}}
    progress = CommitProgress.of(latest)
    assert progress is not None and not progress.partial


def test_the_record_is_rebuilt_over_snapshots_another_engine_committed(table: Table) -> None:
    table.new_commit("job").commit(_messages(table, 1), 3)
    table.new_commit("other").commit(_messages(table, 2), 5)
    _as_foreign(table, 2)  # a Java commit carries no record
    table.append(pa.table({"id": [3]}, schema=SCHEMA))  # rebuilt: snapshot 1's record plus snapshot 2
    _as_foreign(table, 3)
    table.new_commit("other").commit(_messages(table, 4), 6)
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)
    latest = table.snapshot_manager.latest()
    assert latest is not None and latest.id == 4
    assert CommitProgress.of(latest) == CommitProgress({"job": (3, 1), "other": (6, 4)})
    assert table.new_commit("job").is_committed(3)
    assert not table.new_commit("job").is_committed(4)


def test_a_recovering_committer_reads_the_newest_record_below_foreign_snapshots(table: Table) -> None:
    table.new_commit("job").commit(_messages(table, 1), 3)
    table.new_commit("other").commit(_messages(table, 2), 1)
    table.new_commit("other").commit(_messages(table, 3), 2)
    _as_foreign(table, 3)
    expire_snapshots(table, retain_max=2, retain_min=2, older_than=FAR_FUTURE)  # keeps 2 (recorded) and 3
    assert table.new_commit("job").is_committed(3)


def test_a_record_over_an_expired_unrecorded_history_is_partial(table: Table) -> None:
    table.new_commit("job").commit(_messages(table, 1), 3)
    table.append(pa.table({"id": [2]}, schema=SCHEMA))
    for snapshot_id in (1, 2):
        _as_foreign(table, snapshot_id)  # a table written before records existed
    expire_snapshots(table, retain_max=1, retain_min=1, older_than=FAR_FUTURE)
    table.new_commit("other").commit(_messages(table, 3), 1)
    latest = table.snapshot_manager.latest()
    assert latest is not None
    assert CommitProgress.of(latest) == CommitProgress({"other": (1, 3)}, partial=True)
    committer = table.new_commit("job")
    assert not committer.is_committed(3)  # not known: the history that held it expired unrecorded
    assert not committer._own.complete  # so a replay is judged by its files, as before


def test_the_record_keeps_the_most_recent_users_and_then_says_it_is_partial(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from paimon_core.table import _history

    monkeypatch.setattr(_history, "MAX_TRACKED_USERS", 2)
    progress = CommitProgress().with_commit("a", 1, 1).with_commit("b", 1, 2)
    assert not progress.partial
    progress = progress.with_commit("c", 5, 3).with_commit("b", 2, 4)
    assert progress == CommitProgress({"c": (5, 3), "b": (2, 4)}, partial=True)


# --- interleavings against a model --------------------------------------------------------------------

_USERS = ("u0", "u1", "u2")


class ReplaysAfterExpiration(RuleBasedStateMachine):
    """Several commit users commit increasing identifiers, replay them (with the same or with rewritten
    files, as a restarted streaming query does), while others compact, expire and commit from another
    engine. Model: the rows of every acknowledged commit, once."""

    def __init__(self) -> None:
        super().__init__()
        self.table = _open(f"memory://commit-progress-{uuid.uuid4().hex}")
        self.rows: list[int] = []
        self.next_row = 0
        self.next_identifier = dict.fromkeys(_USERS, 1)
        self.acknowledged: dict[str, list[int]] = {u: [] for u in _USERS}
        # each user's newest commit: identifier, rows, messages as committed
        self.last: dict[str, tuple[int, list[int], list[CommitMessage]]] = {}
        self.recorded_id = 0  # the newest snapshot that carries a progress record

    def _new_rows(self, count: int) -> list[int]:
        rows = list(range(self.next_row, self.next_row + count))
        self.next_row += count
        return rows

    @initialize()
    def start(self) -> None:
        self.table.append(pa.table({"id": self._new_rows(1)}, schema=SCHEMA))
        self.rows += [0]
        self.recorded_id = 1

    @rule(user=st.sampled_from(_USERS), count=st.integers(1, 2), skip=st.integers(0, 2))
    def commit(self, user: str, count: int, skip: int) -> None:
        identifier = self.next_identifier[user] + skip  # identifiers grow, not always by one
        committer = self.table.new_commit(user)
        assert not committer.is_committed(identifier)
        rows = self._new_rows(count)
        messages = _messages(self.table, *rows)
        created = committer.commit(messages, identifier)
        assert len(created) == 1
        self.recorded_id = created[0]
        self.next_identifier[user] = identifier + 1
        self.acknowledged[user].append(identifier)
        self.last[user] = (identifier, rows, messages)
        self.rows += rows

    @precondition(lambda self: bool(self.last))
    @rule(data=st.data(), rewritten=st.booleans())
    def replay(self, data: st.DataObject, rewritten: bool) -> None:
        user = data.draw(st.sampled_from(sorted(self.last)))
        identifier, rows, messages = self.last[user]
        committer = self.table.new_commit(user)
        assert committer.is_committed(identifier)  # the Spark sink skips the batch on this answer
        if not rewritten:
            assert committer.commit(messages, identifier) == []
            return
        again = _messages(self.table, *rows)
        try:
            assert committer.commit(again, identifier) == []
        except CommitIdentifierError:
            committer.abort(again)

    @rule(retain=st.integers(1, 3))
    def expire(self, retain: int) -> None:
        latest = self.table.snapshot_manager.latest_id() or 0
        # Documented limit: one snapshot carrying the record must be retained (foreign commits drop it).
        retain = max(retain, latest - self.recorded_id + 1)
        expire_snapshots(self.table, retain_max=retain, retain_min=retain, older_than=FAR_FUTURE)

    @rule()
    def compact(self) -> None:
        if compact_table(self.table.copy({"compaction.min.file-num": "2"})).tasks:
            self.recorded_id = self.table.snapshot_manager.latest_id() or 0

    @rule(count=st.integers(1, 2))
    def foreign_commit(self, count: int) -> None:
        rows = self._new_rows(count)
        self.table.append(pa.table({"id": rows}, schema=SCHEMA))
        _as_foreign(self.table, self.table.snapshot_manager.latest_id() or 0)
        self.rows += rows

    @invariant()
    def every_acknowledged_commit_once(self) -> None:
        assert _ids(self.table) == sorted(self.rows)

    @invariant()
    def acknowledged_identifiers_are_committed(self) -> None:
        for user in _USERS:
            committer = self.table.new_commit(user)
            if self.acknowledged[user]:
                assert committer.is_committed(self.acknowledged[user][-1])
                assert committer.is_committed(self.acknowledged[user][0])
            assert not committer.is_committed(self.next_identifier[user])


def test_replays_after_expiration_against_a_model() -> None:
    ReplaysAfterExpiration.TestCase.settings = settings(
        max_examples=25, stateful_step_count=20, deadline=None
    )
    ReplaysAfterExpiration.TestCase().runTest()
