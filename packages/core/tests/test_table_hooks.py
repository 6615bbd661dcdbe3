"""Hooks are handed in by whoever opens a table, and copies and pickles of the table keep them."""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import pyarrow as pa
import pytest

import paimon_core
from paimon_core import STANDARD_HOOKS, Catalog
from paimon_core.maintenance import expire_snapshots
from paimon_core.table import CommitMessage, CommitPipeline, Table, TableHooks, TableStore, open_table

SCHEMA = pa.schema([("id", pa.int64())])
RETAIN_ONE = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}

CALLS: list[tuple[str, str, tuple[int, ...]]] = []


def _expire_and_record(table: TableStore, created: Sequence[int]) -> None:
    # Module-level, so that the hooks pickle by reference.
    CALLS.append(("after_commit", table.identifier, tuple(created)))
    expire_snapshots(table)


def _record_precommit(table: TableStore, messages: list[CommitMessage]) -> list[CommitMessage]:
    CALLS.append(("precommit", table.identifier, ()))
    return messages


CUSTOM = TableHooks(after_commit=_expire_and_record, precommit=_record_precommit)


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


def _custom_table(catalog: Catalog) -> Table:
    created = catalog.create_table("db.t", SCHEMA, options=RETAIN_ONE)
    return Table(created.path, created.storage, created.schema, created.identifier, hooks=CUSTOM)


def _append(table: Table, value: int) -> int | None:
    return table.append(pa.table({"id": [value]}, schema=SCHEMA))


def test_the_catalog_and_open_table_hand_tables_the_standard_hooks(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    assert table.hooks is STANDARD_HOOKS
    assert catalog.get_table("db.t").hooks is STANDARD_HOOKS
    assert paimon_core.open_table(table.path).hooks is STANDARD_HOOKS
    assert Table.open(table.path, hooks=CUSTOM).hooks is CUSTOM
    assert open_table(table.path).hooks is paimon_core.table.default_hooks()
    assert paimon_core.table.default_hooks() == TableHooks()  # nothing set process-wide at import
    faulty = table.with_storage(table.storage)
    assert faulty.hooks is STANDARD_HOOKS and dict(faulty.options.items()) == dict(table.options.items())


@pytest.mark.parametrize(
    "handle",
    [lambda t: t.copy({"commit.max-retries": "5"}), lambda t: pickle.loads(pickle.dumps(t))],
    ids=["copy", "pickle"],
)
def test_a_copied_or_unpickled_table_keeps_its_hooks_and_expires_after_commits(
    catalog: Catalog, handle: object
) -> None:
    original = _custom_table(catalog)
    _append(original, 0)
    table = handle(original)  # type: ignore[operator]
    assert isinstance(table, Table) and table.hooks == CUSTOM
    created = _append(table, 1)
    assert created == 2
    assert ("precommit", "db.t", ()) in CALLS and ("after_commit", "db.t", (2,)) in CALLS
    assert [s.id for s in table.snapshots()] == [2]  # the custom hook expired snapshot 1
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1]


def test_the_pipeline_runs_precommit_commit_and_after_commit_for_an_engine(catalog: Catalog) -> None:
    table = _custom_table(catalog)
    writer = table.new_write()
    writer.write(pa.table({"id": [1, 2]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    writer.close()
    pipeline = CommitPipeline(table, table.new_commit("engine-user"))
    assert pipeline.commit(messages, 7) == [1]
    assert [kind for kind, _, _ in CALLS] == ["precommit", "after_commit"]
    assert table.snapshot_manager.latest().commit_user == "engine-user"  # type: ignore[union-attr]
    assert pipeline.commit(messages, 7) == []  # a replayed identifier is recognised


def test_the_pipeline_compacts_an_unaware_bucket_table_after_an_engine_commit(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, options={"compaction.min.file-num": "2"})
    pipeline = CommitPipeline(table)
    for value in range(3):
        writer = table.new_write()
        writer.write(pa.table({"id": [value]}, schema=SCHEMA))
        pipeline.commit(writer.prepare_commit())
        writer.close()
    kinds = [s.commit_kind.name for s in table.snapshots()]
    assert "COMPACT" in kinds
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2]
