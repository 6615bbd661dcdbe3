"""Snapshot JSON (docs/format.md#snapshots) and the snapshot manager: hints, listing fallbacks, atomic publish."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimon_core.errors import CorruptMetadataError, SnapshotNotFoundError
from paimon_core.snapshot import (
    BATCH_COMMIT_IDENTIFIER,
    CommitKind,
    Snapshot,
    SnapshotManager,
    to_pretty_json,
)
from paimon_core.storage import StorageBackend, clear_memory_store, get_backend


@pytest.fixture
def table_path() -> Iterator[str]:
    path = f"memory://snapshots-{uuid.uuid4().hex}/db.db/t"
    yield path
    clear_memory_store(path)


@pytest.fixture
def storage(table_path: str) -> StorageBackend:
    return get_backend(table_path, {})


def make_snapshot(snapshot_id: int, time_millis: int = 1_700_000_000_000, **changes: Any) -> Snapshot:
    values: dict[str, Any] = dict(
        id=snapshot_id,
        schema_id=0,
        base_manifest_list=f"manifest-list-x-{2 * snapshot_id}",
        delta_manifest_list=f"manifest-list-x-{2 * snapshot_id + 1}",
        commit_user="user-1",
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_kind=CommitKind.APPEND,
        time_millis=time_millis,
    )
    values.update(changes)
    return Snapshot(**values)


# --- JSON ---------------------------------------------------------------------------------------------------


def test_pretty_json_has_jacksons_layout() -> None:
    # Jackson's DefaultPrettyPrinter: "key" : value, two-space indent, inline arrays, objects in arrays
    # opening on the same line, "{ }" and "[ ]" for empty containers.
    text = to_pretty_json({"a": 1, "b": [{"x": "é"}, {"y": None}], "c": [], "d": {}, "e": [1, 2], "f": True})
    assert text == (
        "{\n"
        '  "a" : 1,\n'
        '  "b" : [ {\n'
        '    "x" : "é"\n'
        "  }, {\n"
        '    "y" : null\n'
        "  } ],\n"
        '  "c" : [ ],\n'
        '  "d" : { },\n'
        '  "e" : [ 1, 2 ],\n'
        '  "f" : true\n'
        "}"
    )


def test_to_json_writes_keys_in_java_order_and_skips_nulls() -> None:
    snapshot = make_snapshot(
        7,
        uuid="u-1",
        base_manifest_list_size=100,
        delta_manifest_list_size=200,
        total_record_count=10,
        delta_record_count=3,
        properties={},
    )
    text = snapshot.to_json()
    data = json.loads(text)
    assert list(data) == [
        "version",
        "uuid",
        "id",
        "schemaId",
        "baseManifestList",
        "baseManifestListSize",
        "deltaManifestList",
        "deltaManifestListSize",
        "commitUser",
        "commitIdentifier",
        "commitKind",
        "timeMillis",
        "totalRecordCount",
        "deltaRecordCount",
    ]
    assert data["version"] == 3
    assert data["commitIdentifier"] == 9223372036854775807
    assert data["commitKind"] == "APPEND"
    assert '"id" : 7,' in text  # Jackson spacing


def test_json_round_trip_with_every_field() -> None:
    snapshot = make_snapshot(
        3,
        commit_kind=CommitKind.COMPACT,
        total_record_count=9,
        delta_record_count=-2,
        base_manifest_list_size=1,
        delta_manifest_list_size=2,
        changelog_manifest_list="manifest-list-c",
        changelog_manifest_list_size=3,
        index_manifest="index-manifest-1",
        writer_version="python-x",
        changelog_record_count=4,
        watermark=-9223372036854775808,
        statistics="stat-1",
        properties={"k": "v"},
        next_row_id=12,
        operation="WRITE",
    )
    assert Snapshot.from_json(snapshot.to_json()) == snapshot


def test_from_json_reads_pypaimon_snapshot_and_ignores_unknown_keys() -> None:
    # The spec's pypaimon 2.1 example (compact JSON), plus keys of other Paimon versions.
    text = (
        '{"version":3,"id":2,"schemaId":0,"baseManifestList":"manifest-list-944c-0",'
        '"deltaManifestList":"manifest-list-944c-1","totalRecordCount":6,"deltaRecordCount":3,'
        '"commitUser":"9a63","commitIdentifier":9223372036854775807,"commitKind":"APPEND",'
        '"timeMillis":1795264847352,"baseManifestListSize":1356,"deltaManifestListSize":1356,'
        '"uuid":"9beb","writerVersion":"python-2.1.0-3a5f","logOffsets":{},"totalFileSize":5,'
        '"changelogManifestList":null}'
    )
    snapshot = Snapshot.from_json(text)
    assert snapshot.id == 2
    assert snapshot.base_manifest_list == "manifest-list-944c-0"
    assert snapshot.base_manifest_list_size == 1356
    assert snapshot.total_record_count == 6
    assert snapshot.commit_identifier == BATCH_COMMIT_IDENTIFIER
    assert snapshot.commit_kind is CommitKind.APPEND
    assert snapshot.uuid == "9beb"
    assert snapshot.writer_version == "python-2.1.0-3a5f"
    assert snapshot.changelog_manifest_list is None


def test_old_snapshot_without_record_counts_reads_them_as_zero() -> None:
    text = (
        '{"id":1,"schemaId":0,"baseManifestList":"a","deltaManifestList":"b","commitUser":"u",'
        '"commitIdentifier":1,"commitKind":"OVERWRITE","timeMillis":5}'
    )
    snapshot = Snapshot.from_json(text)
    assert (snapshot.total_record_count, snapshot.delta_record_count) == (0, 0)
    assert snapshot.version == 1
    assert snapshot.uuid is None


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("id"),
        lambda d: d.pop("schemaId"),
        lambda d: d.pop("baseManifestList"),
        lambda d: d.pop("deltaManifestList"),
        lambda d: d.pop("commitUser"),
        lambda d: d.pop("commitIdentifier"),
        lambda d: d.pop("commitKind"),
        lambda d: d.pop("timeMillis"),
        lambda d: d.update(id="1"),
        lambda d: d.update(commitKind="MERGE"),
        lambda d: d.update(properties=[1]),
    ],
)
def test_from_json_rejects_missing_or_mistyped_required_keys(mutate: Any) -> None:
    data = json.loads(make_snapshot(1).to_json())
    mutate(data)
    with pytest.raises(CorruptMetadataError) as info:
        Snapshot.from_json(json.dumps(data), "snap/snapshot-1")
    assert info.value.path == "snap/snapshot-1"
    assert "snap/snapshot-1" in str(info.value)


@pytest.mark.parametrize("text", ["", "{", "[1]", b"\xff\xfe"])
def test_from_json_rejects_bad_json(text: str | bytes) -> None:
    with pytest.raises(CorruptMetadataError):
        Snapshot.from_json(text, "p")


# --- the manager --------------------------------------------------------------------------------------------


def test_empty_table_has_no_snapshots(storage: StorageBackend, table_path: str) -> None:
    sm = SnapshotManager(storage, table_path)
    assert sm.latest_id() is None
    assert sm.earliest_id() is None
    assert sm.latest() is None
    assert sm.earliest() is None
    assert list(sm.snapshots()) == []
    assert sm.snapshot_at_or_before_time(10**15) is None
    with pytest.raises(SnapshotNotFoundError):
        sm.snapshot(1)


def test_publish_writes_the_file_and_the_latest_hint_only_moves_forward(
    storage: StorageBackend, table_path: str
) -> None:
    sm = SnapshotManager(storage, table_path)
    first = make_snapshot(1)
    assert sm.try_publish(first)
    # The committer advances LATEST once it knows the snapshot continues the history, never backwards.
    assert not storage.exists(f"{table_path}/snapshot/LATEST")
    sm.advance_latest_hint(1)
    assert storage.read_bytes(f"{table_path}/snapshot/LATEST") == b"1"
    sm.write_latest_hint(5)
    sm.advance_latest_hint(3)
    assert storage.read_bytes(f"{table_path}/snapshot/LATEST") == b"5"
    sm.write_latest_hint(1)
    assert Snapshot.from_json(storage.read_bytes(f"{table_path}/snapshot/snapshot-1")) == first
    assert sm.snapshot(1) == first
    assert sm.latest() == first
    # The id is taken: a second publish does nothing and says so.
    assert not sm.try_publish(make_snapshot(1, commit_user="other"))
    assert sm.snapshot(1).commit_user == "user-1"


def test_latest_and_earliest_survive_stale_and_missing_hints(
    storage: StorageBackend, table_path: str
) -> None:
    sm = SnapshotManager(storage, table_path)
    for i in range(1, 6):
        assert sm.try_publish(make_snapshot(i))
    hint = f"{table_path}/snapshot/LATEST"
    storage.write_bytes(hint, b"2", overwrite=True)  # stale: snapshot-3 exists
    assert sm.latest_id() == 5
    storage.write_bytes(hint, b"garbage", overwrite=True)
    assert sm.latest_id() == 5
    storage.delete(hint)
    assert sm.latest_id() == 5
    # Expiration removed 1 and 2 and wrote EARLIEST=3.
    storage.delete(sm.snapshot_path(1))
    storage.delete(sm.snapshot_path(2))
    assert sm.earliest_id() == 3
    sm.write_earliest_hint(3)
    assert storage.read_bytes(f"{table_path}/snapshot/EARLIEST") == b"3"
    assert sm.earliest_id() == 3
    # A later expiration removed 3 but has not updated EARLIEST yet.
    storage.delete(sm.snapshot_path(3))
    assert sm.earliest_id() == 4
    assert [s.id for s in sm.snapshots()] == [4, 5]
    assert sm.earliest() is not None and sm.earliest().id == 4  # type: ignore[union-attr]


def test_latest_hint_pointing_past_the_end_falls_back_to_the_listing(
    storage: StorageBackend, table_path: str
) -> None:
    # A rollback deleted snapshot 3 after LATEST said 3: reading the latest snapshot still works.
    sm = SnapshotManager(storage, table_path)
    for i in range(1, 4):
        sm.try_publish(make_snapshot(i))
    storage.delete(sm.snapshot_path(3))
    latest = sm.latest()
    assert latest is not None and latest.id == 2


_HINT_TEXT = st.one_of(
    st.none(),  # no hint file
    st.integers(min_value=-2, max_value=14).map(str),
    st.sampled_from(["", "garbage", " 7\n", "1e3", "0x5", "9" * 30, "\u0663"]),
    st.binary(max_size=6).map(lambda b: b.decode("latin-1")),
)


@given(earliest=st.integers(1, 5), count=st.integers(1, 5), latest_hint=_HINT_TEXT, earliest_hint=_HINT_TEXT)
def test_any_hint_content_gives_the_right_latest_and_a_usable_earliest(
    earliest: int, count: int, latest_hint: str | None, earliest_hint: str | None
) -> None:
    """Snapshots ``earliest..latest`` exist; whatever LATEST and EARLIEST hold (missing, garbage, an id
    below, inside or above that range), the latest is the newest file, the earliest is a retained snapshot,
    and the EARLIEST hint a committer checks its base against is never above every snapshot."""
    path = f"memory://hints-{uuid.uuid4().hex}/db.db/t"
    storage = get_backend(path, {})
    try:
        sm = SnapshotManager(storage, path)
        latest = earliest + count - 1
        for i in range(earliest, latest + 1):
            assert sm.try_publish(make_snapshot(i))
        for name, text in (("LATEST", latest_hint), ("EARLIEST", earliest_hint)):
            if text is not None:
                storage.write_bytes(sm.hint_path(name), text.encode("utf-8"), overwrite=True)
        assert sm.latest_id() == latest
        snapshot = sm.latest()
        assert snapshot is not None and snapshot.id == latest
        assert sm.earliest_id() in range(earliest, latest + 1)
        hint = sm.earliest_hint()
        assert hint is None or hint <= latest
        assert [s.id for s in sm.snapshots()] == list(range(earliest, latest + 1))
    finally:
        clear_memory_store(path)


def test_snapshot_errors(storage: StorageBackend, table_path: str) -> None:
    sm = SnapshotManager(storage, table_path)
    storage.write_bytes(sm.snapshot_path(1), b"{not json")
    with pytest.raises(CorruptMetadataError) as info:
        sm.snapshot(1)
    assert info.value.path == sm.snapshot_path(1)
    storage.write_bytes(sm.snapshot_path(2), make_snapshot(9).to_json().encode())
    with pytest.raises(CorruptMetadataError, match="holds snapshot id 9"):
        sm.snapshot(2)
    with pytest.raises(SnapshotNotFoundError) as missing:
        sm.snapshot(3)
    assert missing.value.snapshot_id == 3


def test_listing_ignores_foreign_files(storage: StorageBackend, table_path: str) -> None:
    sm = SnapshotManager(storage, table_path)
    sm.try_publish(make_snapshot(1))
    sm.try_publish(make_snapshot(2))
    storage.write_bytes(f"{table_path}/snapshot/.snapshot-3.abc.tmp", b"x")
    storage.write_bytes(f"{table_path}/snapshot/snapshot-x", b"x")
    storage.write_bytes(f"{table_path}/snapshot/EARLIEST", b"1")
    assert sm.list_ids() == [1, 2]


def test_snapshot_at_or_before_time(storage: StorageBackend, table_path: str) -> None:
    sm = SnapshotManager(storage, table_path)
    times = {1: 100, 2: 200, 3: 200, 4: 300, 5: 450, 6: 500, 7: 900}
    for snapshot_id, millis in times.items():
        sm.try_publish(make_snapshot(snapshot_id, time_millis=millis))

    def at(ms: int) -> int | None:
        found = sm.snapshot_at_or_before_time(ms)
        return None if found is None else found.id

    assert at(99) is None
    assert at(100) == 1
    assert at(199) == 1
    assert at(200) == 3  # the newest of equal times
    assert at(449) == 4
    assert at(10_000) == 7
    storage.delete(sm.snapshot_path(1))
    assert at(150) is None


class _FailingHints:
    """Storage whose hint writes fail; everything else is delegated."""

    def __init__(self, inner: StorageBackend) -> None:
        self.inner = inner
        self.hint_attempts = 0

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        if path.endswith("LATEST") or path.endswith("EARLIEST"):
            self.hint_attempts += 1
            raise TimeoutError("hint write timed out")
        self.inner.write_bytes(path, data, overwrite)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_hint_failures_do_not_fail_the_publish(storage: StorageBackend, table_path: str) -> None:
    failing = _FailingHints(storage)
    sm = SnapshotManager(failing, table_path)
    assert sm.try_publish(make_snapshot(1))
    sm.advance_latest_hint(1)
    assert failing.hint_attempts == 3
    assert sm.latest_id() == 1
    sm.write_earliest_hint(1)  # also swallowed


class _AmbiguousCreate:
    def __init__(self, inner: StorageBackend) -> None:
        self.inner = inner

    def write_if_absent(self, path: str, data: bytes) -> None:
        self.inner.write_if_absent(path, data)
        raise TimeoutError("response lost")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_publish_propagates_unknown_outcomes(storage: StorageBackend, table_path: str) -> None:
    sm = SnapshotManager(_AmbiguousCreate(storage), table_path)
    with pytest.raises(TimeoutError):
        sm.try_publish(make_snapshot(1))
    # The committer, not the manager, finds out that it landed.
    assert SnapshotManager(storage, table_path).snapshot(1).commit_user == "user-1"


def test_racing_publishers_on_a_local_file_system_exactly_one_wins(tmp_path: Path) -> None:
    table_path = str(tmp_path / "t")
    storage = get_backend(table_path, {})
    results: list[tuple[str, bool]] = []
    barrier = threading.Barrier(8)

    def publish(user: str) -> None:
        sm = SnapshotManager(storage, table_path)
        barrier.wait()
        results.append((user, sm.try_publish(make_snapshot(1, commit_user=user))))

    threads = [threading.Thread(target=publish, args=(f"user-{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [user for user, won in results if won]
    assert len(winners) == 1
    assert SnapshotManager(storage, table_path).snapshot(1).commit_user == winners[0]
