"""Consumer files: format, overwrite, retries on half-written files, reset rules."""

from __future__ import annotations

import json
import threading

import pytest

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
