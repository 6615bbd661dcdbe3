"""Consumer files: format, overwrite, retries on half-written files, reset rules."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core import Catalog, Consumer, ConsumerManager
from paimon_core.errors import ConfigError, CorruptMetadataError, SnapshotNotFoundError


@pytest.fixture
def table(catalog: Catalog, data):  # type: ignore[no-untyped-def]
    t = catalog.create_table("db.t", data.schema)
    t.append(data.events(0, 10))
    t.append(data.events(10, 10))
    return t


def test_file_layout_and_json(table) -> None:  # type: ignore[no-untyped-def]
    manager = ConsumerManager(table.storage, table.path)
    assert manager.consumer("job") is None
    manager.reset_consumer("job", Consumer(2))
    raw = table.storage.read_bytes(f"{table.path}/consumer/consumer-job")
    assert json.loads(raw) == {"nextSnapshot": 2}
    assert raw.decode().startswith('{\n  "nextSnapshot" : 2')  # Jackson's pretty shape
    assert manager.consumer("job") == Consumer(2)


def test_overwrite_list_min_and_delete(table) -> None:  # type: ignore[no-untyped-def]
    manager = ConsumerManager(table.storage, table.path)
    manager.reset_consumer("a", Consumer(1))
    manager.reset_consumer("a", Consumer(3))
    manager.reset_consumer("b", Consumer(2))
    assert manager.consumers() == {"a": 3, "b": 2}
    assert manager.min_next_snapshot() == 2
    manager.delete_consumer("b")
    manager.delete_consumer("missing")
    assert manager.consumers() == {"a": 3}


def test_reset_to_requires_existing_snapshot(table) -> None:  # type: ignore[no-untyped-def]
    manager = ConsumerManager(table.storage, table.path)
    manager.reset_to("a", 2)
    assert manager.consumer("a") == Consumer(2)
    with pytest.raises(SnapshotNotFoundError):
        manager.reset_to("a", 99)
    manager.reset_to("a", None)
    assert manager.consumer("a") is None


def test_reads_a_java_written_file(table) -> None:  # type: ignore[no-untyped-def]
    manager = ConsumerManager(table.storage, table.path)
    table.storage.mkdirs(manager.consumer_dir)
    table.storage.write_bytes(manager.consumer_path("flink"), b'{\n  "nextSnapshot" : 7\n}')
    assert manager.consumer("flink") == Consumer(7)


def test_retries_while_a_writer_overwrites(table) -> None:  # type: ignore[no-untyped-def]
    manager = ConsumerManager(table.storage, table.path)
    table.storage.mkdirs(manager.consumer_dir)
    path = manager.consumer_path("c")
    table.storage.write_bytes(path, b'{"nextSn', overwrite=True)  # half written
    timer = threading.Timer(
        0.15, lambda: table.storage.write_bytes(path, b'{"nextSnapshot": 5}', overwrite=True)
    )
    timer.start()
    try:
        assert manager.consumer("c") == Consumer(5)
    finally:
        timer.join()


def test_persistent_garbage_fails(table) -> None:  # type: ignore[no-untyped-def]
    manager = ConsumerManager(table.storage, table.path)
    table.storage.mkdirs(manager.consumer_dir)
    table.storage.write_bytes(manager.consumer_path("c"), b"not json")
    with pytest.raises(CorruptMetadataError):
        manager.consumer("c")


@pytest.mark.parametrize("bad", ["", "a/b", "..", "x\x00"])
def test_bad_ids(table, bad: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError):
        ConsumerManager(table.storage, table.path).reset_consumer(bad, Consumer(1))


def test_next_snapshot_must_be_positive(table) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError):
        ConsumerManager(table.storage, table.path).reset_consumer("a", Consumer(0))


# --- consumer.expiration-time and clear_consumers (issue 32, point 6) ---------------------------------


def _age(table, consumer_id: str, hours: float) -> None:  # type: ignore[no-untyped-def]
    """Make a consumer file look last written ``hours`` ago (as a reader that stopped then)."""
    import os
    import time

    path = ConsumerManager(table.storage, table.path).consumer_path(consumer_id)
    then = time.time() - hours * 3600
    os.utime(path, (then, then))


def test_commits_expire_idle_consumers_and_the_snapshots_they_held(catalog: Catalog, data) -> None:  # type: ignore[no-untyped-def]
    options = {
        "consumer.expiration-time": "1 h",
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1",
    }
    table = catalog.create_table("db.t", data.schema, options=options)
    table.append(data.events(0, 5))
    manager = ConsumerManager(table.storage, table.path)
    manager.reset_consumer("stopped", Consumer(1))
    manager.reset_consumer("reading", Consumer(2))
    _age(table, "stopped", 2)
    _age(table, "reading", 0.5)
    table.append(data.events(5, 5))
    # the stopped reader is gone; the reading one holds snapshot 2 from expiring (and nothing before it)
    assert manager.consumers() == {"reading": 2}
    assert table.snapshot_manager.earliest_id() == 2
    _age(table, "reading", 3)
    table.append(data.events(10, 5))
    assert manager.consumers() == {}
    latest = table.snapshot_manager.latest_id()
    assert [s.id for s in table.snapshots()] == [latest]  # nothing holds old snapshots any more


def test_write_only_commits_expire_consumers_but_not_snapshots(catalog: Catalog, data) -> None:  # type: ignore[no-untyped-def]
    options = {
        "consumer.expiration-time": "1 h",
        "write-only": "true",
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1",
    }
    table = catalog.create_table("db.t", data.schema, options=options)
    table.append(data.events(0, 5))
    manager = ConsumerManager(table.storage, table.path)
    manager.reset_consumer("stopped", Consumer(1))
    _age(table, "stopped", 2)
    table.append(data.events(5, 5))
    assert manager.consumers() == {}  # as Java: consumer expiration does not depend on write-only
    assert [s.id for s in table.snapshots()] == [1, 2]


def test_without_an_expiration_time_consumers_stay(table) -> None:  # type: ignore[no-untyped-def]
    from paimon_core.maintenance import expire_consumers

    manager = ConsumerManager(table.storage, table.path)
    manager.reset_consumer("old", Consumer(1))
    _age(table, "old", 24 * 365)
    assert expire_consumers(table) == []
    assert manager.consumers() == {"old": 1}


@pytest.mark.parametrize(
    ("including", "excluding", "left"),
    [
        (None, None, []),
        ("", "  ", []),  # blank means "not given", as in Java
        ("job-.*", None, ["other", "xjob-1"]),  # whole ids must match
        (None, "job-2|other", ["job-2", "other"]),
        ("job-.*", "job-1", ["job-1", "other", "xjob-1"]),
        ("job", None, ["job-1", "job-2", "other", "xjob-1"]),
    ],
)
def test_clear_consumers_by_regular_expressions(table, including, excluding, left) -> None:  # type: ignore[no-untyped-def]
    from paimon_core.maintenance import clear_consumers

    manager = ConsumerManager(table.storage, table.path)
    ids = ["job-1", "job-2", "other", "xjob-1"]
    for consumer_id in ids:
        manager.reset_consumer(consumer_id, Consumer(1))
    cleared = clear_consumers(table, including, excluding)
    assert sorted(manager.consumers()) == left
    assert sorted(cleared) == sorted(set(ids) - set(left))


def test_clear_consumers_refuses_a_bad_pattern(table) -> None:  # type: ignore[no-untyped-def]
    from paimon_core.maintenance import clear_consumers

    ConsumerManager(table.storage, table.path).reset_consumer("a", Consumer(1))
    with pytest.raises(ConfigError, match="including_consumers is not a valid regular expression"):
        clear_consumers(table, "job-(")
    assert ConsumerManager(table.storage, table.path).consumers() == {"a": 1}


@given(
    ages_h=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True), st.integers(0, 500), max_size=6
    ),
    limit_h=st.integers(1, 400),
)
@settings(max_examples=25)
def test_expiration_deletes_exactly_the_consumers_idle_past_the_limit(
    tmp_path_factory: pytest.TempPathFactory, ages_h: dict[str, int], limit_h: int
) -> None:
    import os
    import time

    import pyarrow as pa

    from paimon_core.maintenance import expire_consumers

    catalog = Catalog.open(str(tmp_path_factory.mktemp("wh")), create=True)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64())])
    table = catalog.create_table("db.t", schema, options={"consumer.expiration-time": f"{limit_h} h"})
    table.append(pa.table({"id": [1]}, schema=schema))
    manager = ConsumerManager(table.storage, table.path)
    now = time.time()
    for consumer_id, age in ages_h.items():
        manager.reset_consumer(consumer_id, Consumer(1))
        then = now - age * 3600 - 1800  # half an hour off the hour: never on the limit
        os.utime(manager.consumer_path(consumer_id), (then, then))
    expired = expire_consumers(table, now_millis=int(now * 1000))
    idle = {c for c, age in ages_h.items() if age + 0.5 > limit_h}
    assert set(expired) == idle
    assert set(manager.consumers()) == set(ages_h) - idle
