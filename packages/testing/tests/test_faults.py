"""The fault-injecting storage wrapper: each fault does what it says, plans are deterministic, and an empty
plan leaves the backend conforming."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.errors import CommitStateUnknownError
from paimon_core.snapshot import CommitKind
from paimon_core.storage import (
    StorageBackend,
    StorageRegistry,
    clear_memory_store,
    create_plugin_manager,
    get_backend,
    unwrap,
)
from paimon_core.table import Table
from paimon_testing import faults
from paimon_testing.faults import (
    DATA,
    SNAPSHOT,
    Fault,
    FaultPlan,
    FaultRule,
    FaultyStorage,
    InjectedFault,
    SimulatedCrash,
)
from paimon_testing.storage import StorageBackendTests


@pytest.fixture
def root() -> Iterator[str]:
    path = f"memory://faults-{uuid.uuid4().hex}"
    yield path
    clear_memory_store(path)


def _armed(root: str, fault: Fault, **kwargs: object) -> tuple[FaultyStorage, StorageBackend]:
    inner = get_backend(root)
    plan = FaultPlan()
    plan.arm(fault, **kwargs)  # type: ignore[arg-type]
    return FaultyStorage(inner, plan), inner


def test_fail_before_writes_nothing(root: str) -> None:
    storage, inner = _armed(root, Fault.FAIL_BEFORE, ops={"write_if_absent"})
    with pytest.raises(ConnectionError):
        storage.write_if_absent(f"{root}/x", b"data")
    assert not inner.exists(f"{root}/x")
    storage.write_if_absent(f"{root}/x", b"data")  # one-shot: the next call goes through
    assert inner.read_bytes(f"{root}/x") == b"data"


@pytest.mark.parametrize(
    ("fault", "error"), [(Fault.FAIL_AFTER, ConnectionResetError), (Fault.TIMEOUT_AFTER, TimeoutError)]
)
def test_failures_after_the_write_landed(root: str, fault: Fault, error: type[Exception]) -> None:
    storage, inner = _armed(root, fault, ops={"write_if_absent"})
    with pytest.raises(error):
        storage.write_if_absent(f"{root}/x", b"data")
    assert inner.read_bytes(f"{root}/x") == b"data"  # the write reached the store all the same
    with pytest.raises(FileExistsError):
        storage.write_if_absent(f"{root}/x", b"other")


def test_timeout_after_a_streamed_write_still_publishes_it(root: str) -> None:
    storage, inner = _armed(root, Fault.TIMEOUT_AFTER, ops={"open_output"})
    stream = storage.open_output(f"{root}/big")
    stream.write(b"abc")
    with pytest.raises(TimeoutError):
        stream.close()
    assert inner.read_bytes(f"{root}/big") == b"abc"


def test_crash_is_not_an_exception(root: str) -> None:
    storage, inner = _armed(root, Fault.CRASH, ops={"write_bytes"})
    with pytest.raises(SimulatedCrash):
        try:
            storage.write_bytes(f"{root}/x", b"data")
        except Exception:  # code under test cannot swallow a crash
            pytest.fail("SimulatedCrash was caught as an Exception")
    assert not inner.exists(f"{root}/x")


def test_latency_and_callback(root: str) -> None:
    calls: list[str] = []
    inner = get_backend(root)
    plan = FaultPlan()
    plan.arm(Fault.LATENCY, ops={"read_bytes"}, latency_ms=50)
    plan.arm(Fault.CALLBACK, ops={"write_bytes"}, callback=lambda: calls.append("before"))
    storage = FaultyStorage(inner, plan)
    storage.write_bytes(f"{root}/x", b"1")
    assert calls == ["before"]
    started = time.monotonic()
    assert storage.read_bytes(f"{root}/x") == b"1"
    assert time.monotonic() - started >= 0.045
    assert [r.fault for r in plan.injected] == [Fault.CALLBACK, Fault.LATENCY]


def test_rules_match_operations_and_paths(root: str) -> None:
    plan = FaultPlan([FaultRule(Fault.FAIL_BEFORE, ops={"write_bytes"}, path_contains=SNAPSHOT)])
    storage = FaultyStorage(get_backend(root), plan)
    storage.write_bytes(f"{root}/t/bucket-0/data.parquet", b"ok")  # other path
    storage.write_if_absent(f"{root}/t/snapshot/snapshot-1", b"ok")  # other operation
    with pytest.raises(ConnectionError):
        storage.write_bytes(f"{root}/t/snapshot/snapshot-2", b"no")
    assert plan.injected == [InjectedFault(Fault.FAIL_BEFORE, "write_bytes", f"{root}/t/snapshot/snapshot-2")]


def test_plans_are_deterministic_per_seed() -> None:
    def decisions(seed: int) -> list[bool]:
        plan = FaultPlan([FaultRule(Fault.FAIL_BEFORE, probability=0.3)], seed=seed)
        return [plan.decide("write_bytes", f"/p/{i}") is not None for i in range(200)]

    assert decisions(7) == decisions(7)
    assert decisions(7) != decisions(8)
    assert 30 < sum(decisions(7)) < 90


def test_times_bounds_a_rule_and_disarm_drops_one() -> None:
    plan = FaultPlan([FaultRule(Fault.FAIL_BEFORE, times=2)])
    assert [plan.decide("delete", "/x") is not None for _ in range(4)] == [True, True, False, False]
    kept = plan.arm(Fault.CRASH)
    dropped = plan.arm(Fault.LATENCY)
    assert plan.disarm(dropped) == [dropped]
    assert plan.armed == [kept]
    assert plan.counts() == {Fault.FAIL_BEFORE: 2}


def test_bad_rules_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown storage operations"):
        FaultRule(Fault.FAIL_BEFORE, ops={"rename"})
    with pytest.raises(ValueError, match="probability"):
        FaultRule(Fault.FAIL_BEFORE, probability=2)
    with pytest.raises(ValueError, match="callback"):
        FaultRule(Fault.CALLBACK)


def test_the_storage_wrap_hook_reads_options(root: str) -> None:
    registry = StorageRegistry(create_plugin_manager(plugins=[("faults", faults)], entry_points=False))
    rules = [{"fault": "fail-before", "ops": ["write_bytes"]}]
    wrapped = registry.get_backend(root, {"storage.faults": json.dumps(rules), "storage.faults.seed": "1"})
    assert isinstance(unwrap(wrapped), FaultyStorage)
    with pytest.raises(ConnectionError):
        wrapped.write_bytes(f"{root}/x", b"1")
    assert not isinstance(unwrap(registry.get_backend(root)), FaultyStorage)  # no option, no wrapper


SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _faulty_table(warehouse: str, plan: FaultPlan) -> Table:
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("db")
    clean = catalog.create_table("db.t", SCHEMA, options={"commit.min-retry-wait": "1 ms"})
    return clean.with_storage(FaultyStorage(clean.storage, plan))


def test_a_commit_whose_snapshot_write_timed_out_after_landing_lands_once(tmp_path: Path) -> None:
    plan = FaultPlan()
    table = _faulty_table(str(tmp_path / "wh"), plan)
    plan.arm(Fault.TIMEOUT_AFTER, ops={"write_if_absent"}, path_contains=SNAPSHOT)
    assert table.append(pa.table({"id": [1, 2]}, schema=SCHEMA)) == 1
    assert plan.injected and plan.injected[0].fault is Fault.TIMEOUT_AFTER
    assert [s.id for s in table.snapshots()] == [1]
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 2]


def test_a_crash_between_data_files_and_snapshot_leaves_only_orphans(tmp_path: Path) -> None:
    plan = FaultPlan()
    table = _faulty_table(str(tmp_path / "wh"), plan)
    table.append(pa.table({"id": [1]}, schema=SCHEMA))
    plan.arm(Fault.CRASH, ops={"write_if_absent"}, path_contains=SNAPSHOT)
    writer = table.new_write()
    writer.write(pa.table({"id": [2]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    with pytest.raises(SimulatedCrash):
        table.new_commit("job").commit(messages, 1)
    data_files = [i for i in table.storage.list_prefix(table.path) if DATA in i.path]
    assert len(data_files) == 2  # the crashed commit's data file is there, as an orphan
    assert [s.id for s in table.snapshots()] == [1]
    assert table.to_arrow()["id"].to_pylist() == [1]
    # After the restart the same identifier commits once.
    assert table.new_commit("job").commit(messages, 1) == [2]
    assert table.new_commit("job").commit(messages, 1) == []
    assert table.latest_snapshot().commit_kind == CommitKind.APPEND  # type: ignore[union-attr]
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 2]


class TestEmptyPlanIsTransparent(StorageBackendTests):
    """The conformance suite through a FaultyStorage with nothing to inject: the wrapper changes nothing."""

    @pytest.fixture
    def root(self, tmp_path: Path) -> str:
        return str(tmp_path / "store")

    @pytest.fixture
    def backend(self, root: str, backend_options: dict[str, str]) -> StorageBackend:
        return FaultyStorage(get_backend(root, backend_options), FaultPlan())

    # Child processes rebuild the backend from the registry, unwrapped: test_storage_conformance covers it.
    test_write_if_absent_process_race = None  # type: ignore[assignment]


def test_a_retry_after_an_unknown_outcome_that_landed_commits_nothing(tmp_path: Path) -> None:
    """The snapshot lands, the write times out, and the committer cannot read the snapshot directory to find
    out: CommitStateUnknownError. Retrying with the same committer must find the commit, not publish it again
    (which once added the same data file twice and made the table unreadable)."""
    plan = FaultPlan()
    table = _faulty_table(str(tmp_path / "wh"), plan)
    writer = table.new_write()
    writer.write(pa.table({"id": [1]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    committer = table.new_commit("job")
    assert not committer.is_committed(1)  # a streaming job checks this at start-up

    def blind() -> None:
        for _ in range(20):
            plan.arm(Fault.FAIL_BEFORE, ops={"list_dir", "read_bytes", "exists"}, path_contains="/snapshot")

    plan.arm(Fault.TIMEOUT_AFTER, ops={"write_if_absent"}, path_contains=SNAPSHOT, callback=blind)
    with pytest.raises(CommitStateUnknownError):
        committer.commit(messages, 1)
    plan.disarm()
    assert committer.commit(messages, 1) == []
    assert [(s.id, s.commit_identifier) for s in table.snapshots()] == [(1, 1)]
    assert table.to_arrow()["id"].to_pylist() == [1]
