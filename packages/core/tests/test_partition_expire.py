"""Partition expiration (``partition.expiration-*``, ``expire_partitions``) and ``mark_partition_done``, on
a fake clock."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, clock
from paimon_core.errors import ConfigError
from paimon_core.maintenance import expire_partitions, mark_partition_done, partition_time
from paimon_core.snapshot import CommitKind
from paimon_core.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string()), pa.field("hh", pa.string())])


class FakeClock:
    def __init__(self, local: dt.datetime) -> None:
        self.local = local

    def __call__(self) -> int:
        return int(self.local.timestamp() * 1000)  # naive: the machine's zone, as the local clock reads


@pytest.fixture()
def fake() -> Iterator[FakeClock]:
    fake = FakeClock(dt.datetime(2024, 1, 10, 12, 0))
    with clock.use_clock(fake):
        yield fake


def _table(catalog: Catalog, name: str = "db.t", **options: Any) -> Table:
    return catalog.create_table(
        name, SCHEMA, partition_keys=["dt", "hh"], options={k: str(v) for k, v in options.items()}
    )


def _write(table: Table, rows: list[tuple[str, str]]) -> None:
    table.append(
        pa.table(
            {"id": list(range(len(rows))), "dt": [r[0] for r in rows], "hh": [r[1] for r in rows]},
            schema=SCHEMA,
        )
    )


def _partitions(table: Table) -> set[tuple[str, str]]:
    rows = table.to_arrow()
    return set(zip(rows.column("dt").to_pylist(), rows.column("hh").to_pylist(), strict=True))


DAYS = [("2024-01-01", "00"), ("2024-01-08", "10"), ("2024-01-09", "13"), ("2024-01-10", "00"), ("x", "00")]
COMPACT = [("20240101", "00"), ("20240108", "10"), ("20240109", "13"), ("20240110", "00")]

# partitions written, arguments -> the partitions dropped (the clock reads 2024-01-10 12:00)
CASES = [
    pytest.param(
        DAYS, {"expiration_time": "2 d"}, [("2024-01-01", "00"), ("2024-01-08", "10")], id="default"
    ),
    pytest.param(DAYS, {"expiration_time": "1 d"}, DAYS[:3], id="one-day"),
    pytest.param(DAYS, {"expiration_time": "1 d", "max_expires": 2}, DAYS[:2], id="max-expires"),
    pytest.param(
        COMPACT,
        {"expiration_time": "2 d", "timestamp_formatter": "yyyyMMdd"},
        [("20240101", "00"), ("20240108", "10")],
        id="formatter",
    ),
    pytest.param(
        DAYS,
        {"expiration_time": "1 d", "timestamp_pattern": "$dt $hh:00:00"},
        [("2024-01-01", "00"), ("2024-01-08", "10")],  # 2024-01-09 13:00 is within a day of 01-10 12:00
        id="pattern",
    ),
    pytest.param(
        COMPACT,
        {"expiration_time": "1 d", "timestamp_pattern": "$dt$hh", "timestamp_formatter": "yyyyMMddHH"},
        [("20240101", "00"), ("20240108", "10")],
        id="pattern-and-formatter",
    ),
]


@pytest.mark.parametrize(("written", "arguments", "dropped"), CASES)
def test_expire_partitions_drops_the_old_partitions(
    catalog: Catalog,
    fake: FakeClock,
    written: list[tuple[str, str]],
    arguments: dict[str, Any],
    dropped: list[Any],
) -> None:
    table = _table(catalog)
    _write(table, written)
    before = table.latest_snapshot()
    result = expire_partitions(table, **arguments)
    assert result == [{"dt": d, "hh": h} for d, h in dropped]
    assert _partitions(table) == set(written) - set(dropped)
    latest = table.latest_snapshot()
    assert latest is not None and before is not None
    assert latest.id == before.id + 1 and latest.commit_kind == CommitKind.OVERWRITE
    if "max_expires" not in arguments:
        assert expire_partitions(table, **arguments) == []  # never twice
        assert table.latest_snapshot() == latest  # and nothing committed


def test_update_time_strategy_uses_the_newest_file(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog)
    _write(table, [("a", "1"), ("b", "1")])
    fake.local += dt.timedelta(days=3)
    _write(table, [("b", "1")])  # b is written again three days later
    fake.local += dt.timedelta(days=1)
    assert expire_partitions(table, expiration_time="2 d", expire_strategy="update-time") == [
        {"dt": "a", "hh": "1"}
    ]
    assert _partitions(table) == {("b", "1")}


def test_values_time_never_expires_null_or_non_time_values(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog)
    table.append(pa.table({"id": [1, 2], "dt": [None, "zzz"], "hh": ["0", "0"]}, schema=SCHEMA))
    assert expire_partitions(table, expiration_time="1 d") == []


def test_expiration_after_commits_honours_the_check_interval(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(
        catalog,
        "db.interval",
        **{"partition.expiration-time": "2 d", "partition.expiration-check-interval": "1 h"},
    )
    _write(table, [("2024-01-01", "00")])  # the first commit of this process checks: dropped at once
    assert _partitions(table) == set()
    _write(table, [("2024-01-02", "00")])  # 30 minutes later: not checked again
    fake.local += dt.timedelta(minutes=30)
    _write(table, [("2024-01-03", "00")])
    assert _partitions(table) == {("2024-01-02", "00"), ("2024-01-03", "00")}
    fake.local += dt.timedelta(minutes=31)  # more than an hour since the check
    _write(table, [("2024-01-10", "00")])
    assert _partitions(table) == {("2024-01-10", "00")}
    kinds = [s.commit_kind for s in table.snapshots()]
    assert kinds.count(CommitKind.OVERWRITE) == 2


def test_write_only_writers_do_not_expire_partitions(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(
        catalog,
        "db.wo",
        **{
            "partition.expiration-time": "2 d",
            "partition.expiration-check-interval": "0 s",
            "write-only": "true",
        },
    )
    _write(table, [("2024-01-01", "00")])
    assert _partitions(table) == {("2024-01-01", "00")}


def test_concurrent_expirations_never_drop_a_partition_twice(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog, "db.race")
    days = [(f"2024-01-0{d}", "00") for d in range(1, 8)]
    for day in days:
        _write(table, [day])
    results: list[list[dict[str, str]]] = []
    lock = threading.Lock()

    def expire() -> None:
        found = expire_partitions(catalog.get_table("db.race"), expiration_time="1 d", max_expires=3)
        with lock:
            results.append(found)

    threads = [threading.Thread(target=expire) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dropped = [tuple(p.values()) for found in results for p in found]
    assert len(dropped) == len(set(dropped))  # no partition reported by two expirations
    assert set(dropped) == set(days) - _partitions(table)
    overwrites = [s for s in table.snapshots() if s.commit_kind == CommitKind.OVERWRITE]
    assert len(overwrites) == sum(1 for found in results if found)


def test_expire_partitions_needs_partition_keys_and_a_time(catalog: Catalog, fake: FakeClock) -> None:
    with pytest.raises(ConfigError, match=r"expiration_time"):
        expire_partitions(_table(catalog))
    flat = catalog.create_table("db.flat", pa.schema([pa.field("id", pa.int64())]))
    with pytest.raises(ConfigError, match="no partition keys"):
        expire_partitions(flat, expiration_time="1 d")
    with pytest.raises(ConfigError, match="pattern letter"):
        expire_partitions(_table(catalog, "db.q"), expiration_time="1 d", timestamp_formatter="yyyy-ww")


@pytest.mark.parametrize(
    ("values", "pattern", "formatter", "expected"),
    [
        ({"dt": "2024-01-02"}, None, None, dt.datetime(2024, 1, 2)),
        ({"dt": "2024-1-2 3:04:05.5"}, None, None, dt.datetime(2024, 1, 2, 3, 4, 5, 500000)),
        ({"dt": "20240102", "hh": "07"}, "$dt $hh", "yyyyMMdd HH", dt.datetime(2024, 1, 2, 7)),
        ({"d": "x", "dt": "2024-01-02"}, "$dt", None, dt.datetime(2024, 1, 2)),  # $dt is not $d + 't'
        ({"dt": "2024/01/02"}, None, "yyyy/MM/dd", dt.datetime(2024, 1, 2)),
    ],
)
def test_partition_time_reads_as_java(
    values: dict[str, str], pattern: str | None, formatter: str | None, expected: dt.datetime
) -> None:
    assert partition_time(values, pattern, formatter) == expected


def test_mark_partition_done_writes_java_success_files(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog)
    _write(table, [("2024-01-01", "00")])
    assert mark_partition_done(table, "dt=2024-01-01,hh=00;dt=2024-01-02,hh=01") == 2
    path = f"{table.path}/dt=2024-01-01/hh=00/_SUCCESS"
    first = json.loads(table.storage.read_bytes(path))
    assert first == {"creationTime": clock.now_millis(), "modificationTime": clock.now_millis()}
    fake.local += dt.timedelta(hours=1)
    mark_partition_done(table, [{"dt": "2024-01-01", "hh": "00"}])
    again = json.loads(table.storage.read_bytes(path))
    assert again == {"creationTime": first["creationTime"], "modificationTime": clock.now_millis()}
    assert table.storage.exists(f"{table.path}/dt=2024-01-02/hh=01/_SUCCESS")


@pytest.mark.parametrize(("action", "message"), [("done-partition", "metastore"), ("mark-event", "metastore"),
                                                  ("http-report", "not supported"), ("custom", "not supported")])  # fmt: skip
def test_mark_partition_done_refuses_actions_a_filesystem_catalog_cannot_do(
    catalog: Catalog, action: str, message: str
) -> None:
    table = _table(catalog, **{"partition.mark-done-action": f"success-file,{action}"})
    with pytest.raises(ConfigError, match=message) as info:
        mark_partition_done(table, "dt=a,hh=b")
    assert action in str(info.value)
    assert not table.storage.exists(f"{table.path}/dt=a/hh=b/_SUCCESS")


def test_a_batch_size_drops_the_partitions_in_several_commits(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog, "db.batches", **{"partition.expiration-batch-size": 2})
    _write(table, [(f"2024-01-0{d}", "00") for d in range(1, 6)])
    before = table.latest_snapshot()
    assert before is not None
    assert len(expire_partitions(table, expiration_time="1 d")) == 5
    kinds = [s.commit_kind for s in table.snapshots() if s.id > before.id]
    assert kinds == [CommitKind.OVERWRITE] * 3 and _partitions(table) == set()


def test_end_input_checks_after_every_batch_commit(catalog: Catalog, fake: FakeClock) -> None:
    options = {"partition.expiration-time": "2 d", "partition.expiration-check-interval": "1 d"}
    plain = _table(catalog, "db.plain", **options)
    forced = _table(catalog, "db.forced", **options, **{"end-input.check-partition-expire": "true"})
    for table in (plain, forced):
        _write(table, [("2024-01-09", "00")])  # the first commit of the process checks: not old yet
    fake.local += dt.timedelta(days=1)  # 2024-01-09 is now older than two days
    for table in (plain, forced):
        _write(table, [("2024-01-11", "00")])  # within the interval of the first check
    assert _partitions(plain) == {("2024-01-09", "00"), ("2024-01-11", "00")}
    assert _partitions(forced) == {("2024-01-11", "00")}
