"""The ``jdbc`` commit lock on a real PostgreSQL server started by the tests."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.errors import LockUnavailableError
from paimon_core.redaction import redact
from paimon_core.storage import (
    Capability,
    LockAcquireTimeoutError,
    LockRegistry,
    MemoryBackend,
    open_commit_lock,
)
from paimon_storage.emulators import PostgresServer
from paimon_storage.jdbc_lock import TABLE, JdbcCommitLock
from paimon_storage.workload import count_under_lock, die_holding_lock

pytestmark = pytest.mark.integration


def _options(server: PostgresServer, **extra: str) -> dict[str, str]:
    return {"lock.enabled": "true", "lock.type": "jdbc", "lock.jdbc.uri": f"jdbc:{server.dsn}", **extra}


def test_the_jdbc_lock_is_found_by_entry_point() -> None:
    assert "jdbc" in LockRegistry().names()


def test_mutual_exclusion_across_processes(postgres: PostgresServer, tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    ctx = multiprocessing.get_context("spawn")
    processes = [
        ctx.Process(target=count_under_lock, args=(_options(postgres), str(counter), 15)) for _ in range(4)
    ]
    for p in processes:
        p.start()
    for p in processes:
        p.join(180)
    assert [p.exitcode for p in processes] == [0, 0, 0, 0]
    assert counter.read_text() == "60"  # no lost update: never two holders at once


def test_threads_share_nothing_but_the_database(postgres: PostgresServer) -> None:
    lock = open_commit_lock(_options(postgres))
    inside, overlaps = [0], [0]
    guard = threading.Lock()

    def action() -> None:
        with guard:
            inside[0] += 1
            overlaps[0] = max(overlaps[0], inside[0])
        time.sleep(0.005)
        with guard:
            inside[0] -= 1

    threads = [
        threading.Thread(target=lambda: [lock.run_with_lock("db.threads", action) for _ in range(10)])
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert overlaps[0] == 1


def test_acquire_times_out_while_held(postgres: PostgresServer) -> None:
    holder = JdbcCommitLock(_options(postgres))
    waiter = JdbcCommitLock(
        _options(postgres, **{"lock-acquire-timeout": "1 s", "lock-check-max-sleep": "100 ms"})
    )
    ran = []

    def held() -> None:
        start = time.monotonic()
        with pytest.raises(LockAcquireTimeoutError, match="still held") as caught:
            waiter.run_with_lock("db.busy", lambda: ran.append("waiter"))
        assert 0.9 < time.monotonic() - start < 10
        assert caught.value.key == "db.busy"
        assert isinstance(caught.value, TimeoutError)

    holder.run_with_lock("db.busy", held)
    assert ran == []
    assert waiter.run_with_lock("db.busy", lambda: "free again") == "free again"


def test_lock_of_a_dead_writer_expires(postgres: PostgresServer) -> None:
    options = _options(postgres, **{"lock-acquire-timeout": "2 s", "lock-check-max-sleep": "100 ms"})
    process = multiprocessing.get_context("spawn").Process(target=die_holding_lock, args=(options, "db.dead"))
    process.start()
    process.join(120)
    assert process.exitcode == 3
    lock = JdbcCommitLock(
        _options(postgres, **{"lock-acquire-timeout": "30 s", "lock-check-max-sleep": "100 ms"})
    )
    start = time.monotonic()
    assert lock.run_with_lock("db.dead", lambda: "taken over") == "taken over"
    assert time.monotonic() - start < 10  # the dead writer's 2 s lease, not the 30 s timeout


def test_release_after_expiry_spares_the_new_holder(postgres: PostgresServer) -> None:
    import psycopg

    slow = JdbcCommitLock(_options(postgres, **{"lock-acquire-timeout": "1 s"}))
    fast = JdbcCommitLock(
        _options(postgres, **{"lock-acquire-timeout": "10 s", "lock-check-max-sleep": "50 ms"})
    )
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:

        def overrun() -> None:
            # Our lease runs out; another writer takes the lock; our release must not free theirs.
            time.sleep(2.2)
            with psycopg.connect(postgres.dsn, autocommit=True) as other:
                assert fast.acquire(other, "db.lease") is not None  # held on; never released here

        slow.run_with_lock("db.lease", overrun)
        rows = conn.execute(f"SELECT count(*) FROM {TABLE} WHERE lock_id = 'db.lease'").fetchone()
        assert rows is not None and rows[0] == 1


def test_long_keys_are_hashed_within_the_column(postgres: PostgresServer) -> None:
    lock = JdbcCommitLock(_options(postgres, **{"lock-key-max-length": "64"}))
    key_a, key_b = "s3://bucket/" + "a" * 300, "s3://bucket/" + "a" * 299 + "b"
    assert len(lock.lock_id(key_a)) <= 64
    assert lock.lock_id(key_a) != lock.lock_id(key_b)
    assert lock.run_with_lock(key_a, lambda: 1) == 1


def test_passwords_stay_out_of_errors_and_reprs(postgres: PostgresServer) -> None:
    secret = "pg-s3cr3t-value"
    unreachable = f"jdbc:postgresql://someone:{secret}@127.0.0.1:1/db?password={secret}"
    lock = JdbcCommitLock(
        {
            "lock.jdbc.uri": unreachable,
            "jdbc.user": "paimon",
            "jdbc.password": secret,
            "lock-acquire-timeout": "1 s",
        }
    )
    assert secret not in repr(lock)
    with pytest.raises(LockUnavailableError) as caught:
        lock.run_with_lock("k", lambda: None)
    assert secret not in str(caught.value)
    assert caught.value.__cause__ is not None and secret not in str(caught.value.__cause__)
    assert redact("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert redact("host=h password='p w' user=u") == "host=h password=*** user=u"


def test_a_table_commits_under_a_reachable_lock_whose_options_show_no_password(
    postgres: PostgresServer,
) -> None:
    class NoAtomicCreate(MemoryBackend):
        capabilities = frozenset({Capability.LIST})

    secret = "pg-s3cr3t-value"
    catalog = Catalog(f"memory://jdbc-{time.monotonic_ns()}/wh", NoAtomicCreate(), {})
    catalog.create_database("db")
    uri = postgres.dsn.replace(f"{postgres.user}@", f"{postgres.user}:{secret}@", 1)  # trust: not checked
    table = catalog.create_table(
        "db.t",
        pa.schema([("id", pa.int64())]),
        options={
            "lock.enabled": "true",
            "lock.type": "jdbc",
            "lock.jdbc.uri": f"jdbc:{uri}",
            "jdbc.password": secret,
        },
    )
    table.append(pa.table({"id": [1]}))
    table.append(pa.table({"id": [2]}))
    assert [s.id for s in table.snapshots()] == [1, 2]  # redaction is for display: the lock still connects
    options_table = catalog.get_table("db.t$options").to_arrow()
    shown = [repr(table.options), str(table.options), repr(table.schema), str(options_table.to_pylist())]
    assert all(secret not in text for text in shown)
