"""Automatic tags after commits (``tag.automatic-creation``), tag retention, ``expire_tags`` and
``replace_tag``, on a fake clock: snapshots take their commit time from it."""

from __future__ import annotations

import datetime as dt
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, clock
from paimon_core.errors import ConfigError, TagNotFoundError
from paimon_core.maintenance import create_tag, expire_tags, replace_tag
from paimon_core.table import Table
from paimon_core.tag import TagManager

SCHEMA = pa.schema([pa.field("id", pa.int64())])
UTC = {"sink.process-time-zone": "UTC"}


class FakeClock:
    """Epoch millis that move only when a test moves them (thread-safe)."""

    def __init__(self, start: dt.datetime) -> None:
        self.millis = _ms(start)
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            return self.millis

    def set(self, when: dt.datetime) -> None:
        with self._lock:
            self.millis = _ms(when)


def _ms(when: dt.datetime) -> int:
    return int(when.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


@pytest.fixture()
def fake() -> Iterator[FakeClock]:
    fake = FakeClock(_utc("2024-01-01 10:00"))
    with clock.use_clock(fake):
        yield fake


def _table(catalog: Catalog, **options: Any) -> Table:
    return catalog.create_table("db.t", SCHEMA, options={**UTC, **{k: str(v) for k, v in options.items()}})


def _append(table: Table, fake: FakeClock, when: str, value: int = 0) -> None:
    fake.set(_utc(when))
    table.append(pa.table({"id": [value]}, schema=SCHEMA))


def _tags(table: Table) -> dict[str, int]:
    return {t.name: t.snapshot.id for t in TagManager(table.storage, table.path).tags()}


# commits (UTC) -> the automatic tags and the snapshot each is on, by options
CASES = [
    pytest.param(
        {},
        ["2024-01-01 10:00", "2024-01-01 23:00", "2024-01-02 00:00", "2024-01-02 12:00", "2024-01-03 01:00"],
        {"2023-12-31": 1, "2024-01-01": 3, "2024-01-02": 5},
        id="daily",
    ),
    pytest.param(
        {"tag.period-formatter": "without_dashes"},
        ["2024-01-01 10:00", "2024-01-02 00:30"],
        {"20231231": 1, "20240101": 2},
        id="daily-without-dashes",
    ),
    pytest.param(
        {"tag.creation-period": "hourly"},
        ["2024-01-01 10:00", "2024-01-01 10:30", "2024-01-01 11:05", "2024-01-01 13:10"],
        {"2024-01-01 09": 1, "2024-01-01 10": 3, "2024-01-01 12": 4},
        id="hourly",
    ),
    pytest.param(
        {"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes"},
        ["2024-01-01 10:00", "2024-01-01 11:00"],
        {"20240101 09": 1, "20240101 10": 2},
        id="hourly-without-dashes",
    ),
    pytest.param(
        {"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes_and_spaces"},
        ["2024-01-01 10:00", "2024-01-01 11:00"],
        {"2024010109": 1, "2024010110": 2},
        id="hourly-without-dashes-and-spaces",
    ),
    pytest.param(
        {"tag.creation-period": "two-hours"},
        ["2024-01-01 10:00", "2024-01-01 11:59", "2024-01-01 12:00"],
        {"2024-01-01 08": 1, "2024-01-01 10": 3},
        id="two-hours",
    ),
    pytest.param(
        {"tag.creation-period-duration": "30 min"},
        ["2024-01-01 10:00", "2024-01-01 10:29", "2024-01-01 10:31"],
        {"202401010930": 1, "202401011000": 3},
        id="period-duration",
    ),
    pytest.param(
        {"tag.creation-period": "hourly", "tag.creation-delay": "10 min"},
        ["2024-01-01 10:00", "2024-01-01 11:05", "2024-01-01 11:10"],
        {"2024-01-01 09": 1, "2024-01-01 10": 3},
        id="delay",
    ),
    pytest.param(
        {"tag.automatic-completion": "true"},
        ["2024-01-01 10:00", "2024-01-04 10:00", "2024-01-04 11:00", "2024-01-04 12:00"],
        {"2023-12-31": 1, "2024-01-01": 2, "2024-01-02": 3, "2024-01-03": 4},
        id="completion",
    ),
    pytest.param(
        {},
        ["2024-01-01 10:00", "2024-01-04 10:00"],
        {"2023-12-31": 1, "2024-01-03": 2},
        id="gap-without-completion",
    ),
    pytest.param(
        {"tag.num-retained-max": 2},
        ["2024-01-01 10:00", "2024-01-02 10:00", "2024-01-03 10:00", "2024-01-04 10:00"],
        {"2024-01-02": 3, "2024-01-03": 4},
        id="num-retained-max",
    ),
]


@pytest.mark.parametrize(("options", "commits", "expected"), CASES)
def test_process_time_tags_name_each_period_as_java(
    catalog: Catalog, fake: FakeClock, options: dict[str, str], commits: list[str], expected: dict[str, int]
) -> None:
    table = _table(catalog, **{"tag.automatic-creation": "process-time", **options})
    for i, when in enumerate(commits):
        _append(table, fake, when, i)
    assert _tags(table) == expected


def test_tags_hold_the_data_of_their_snapshot(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog, **{"tag.automatic-creation": "process-time"})
    for i, when in enumerate(["2024-01-01 10:00", "2024-01-01 11:00", "2024-01-02 01:00"]):
        _append(table, fake, when, i)
    assert sorted(table.to_arrow(tag="2024-01-01").column("id").to_pylist()) == [0, 1, 2]


def test_no_automatic_tags_without_the_option(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog)
    for when in ["2024-01-01 10:00", "2024-01-02 10:00"]:
        _append(table, fake, when)
    assert _tags(table) == {}


def test_watermark_tags_follow_the_snapshots_watermark(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog, **{"tag.automatic-creation": "watermark", "tag.creation-period": "hourly"})
    for i, (when, mark) in enumerate([(None, None), ("2024-05-01 10:30", 1), ("2024-05-01 11:00", 2)]):
        writer = table.new_write()
        writer.write(pa.table({"id": [i]}, schema=SCHEMA))
        watermark = None if when is None else _ms(_utc(when))
        table.pipeline.commit(writer.prepare_commit(), i, watermark=watermark)
        writer.close()
        del mark
    # the first snapshot has no watermark (no tag); the commit time (the fake clock) plays no part
    assert _tags(table) == {"2024-05-01 09": 2, "2024-05-01 10": 3}


def test_write_only_writers_make_no_tags_but_the_compaction_job_does(
    catalog: Catalog, fake: FakeClock
) -> None:
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        options={
            **UTC,
            "tag.automatic-creation": "process-time",
            "write-only": "true",
            "compaction.min.file-num": "2",
        },
    )
    for i, when in enumerate(["2024-01-01 10:00", "2024-01-01 11:00", "2024-01-02 10:00"]):
        _append(table, fake, when, i)
    assert _tags(table) == {}
    fake.set(_utc("2024-01-02 11:00"))
    table.compact()
    assert _tags(table) == {"2023-12-31": 1, "2024-01-01": 3}


def test_batch_mode_tags_each_batch_write_by_its_day(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog, **{"tag.automatic-creation": "batch", "tag.num-retained-max": 2})
    _append(table, fake, "2024-01-01 10:00", 0)
    _append(table, fake, "2024-01-01 11:00", 1)  # replaces the day's tag
    assert _tags(table) == {"batch-write-2024-01-01": 2}
    _append(table, fake, "2024-01-02 10:00", 2)
    _append(table, fake, "2024-01-03 10:00", 3)
    assert _tags(table) == {"batch-write-2024-01-02": 3, "batch-write-2024-01-03": 4}


def test_batch_mode_with_a_customized_name(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog, **{"tag.automatic-creation": "batch", "tag.batch.customized-name": "nightly"})
    _append(table, fake, "2024-01-01 10:00", 0)
    _append(table, fake, "2024-01-02 10:00", 1)
    assert _tags(table) == {"nightly": 2}


def test_auto_tags_expire_after_their_default_time_retained(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog, **{"tag.automatic-creation": "process-time", "tag.default-time-retained": "1 d"})
    _append(table, fake, "2024-01-01 10:00")
    tag = TagManager(table.storage, table.path).tag("2023-12-31")
    assert tag.time_retained == dt.timedelta(days=1)
    _append(table, fake, "2024-01-02 09:00")  # created at 10:00 local-now... not a day yet
    assert "2023-12-31" in _tags(table)
    fake.set(fake_local_plus(tag.create_time, dt.timedelta(days=1, minutes=1)))
    table.append(pa.table({"id": [9]}, schema=SCHEMA))
    assert "2023-12-31" not in _tags(table)


def fake_local_plus(local: dt.datetime | None, delta: dt.timedelta) -> dt.datetime:
    """The UTC wall time of the local time ``local + delta`` (the fake clock is set in UTC)."""
    assert local is not None
    return (local + delta).astimezone(dt.timezone.utc).replace(tzinfo=None)


def test_a_delay_as_long_as_the_period_is_refused(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(
        catalog,
        **{
            "tag.automatic-creation": "process-time",
            "tag.creation-period": "hourly",
            "tag.creation-delay": "1 h",
        },
    )
    from paimon_core.maintenance import create_auto_tags

    with pytest.raises(ConfigError, match=r"tag\.creation-delay"):
        create_auto_tags(table)


def test_concurrent_writers_tag_each_period_exactly_once(catalog: Catalog, fake: FakeClock) -> None:
    options = {"tag.automatic-creation": "process-time", "tag.creation-period": "hourly"}
    table = _table(
        catalog, **options, **{"snapshot.time-retained": "3650 d"}
    )  # the model sees every snapshot
    ticks = itertools.count()
    start = _ms(_utc("2024-01-01 00:00"))

    def advancing() -> int:
        return start + next(ticks) * 7 * 60_000  # every reading moves the clock 7 minutes

    def writer(n: int) -> None:
        handle = catalog.get_table("db.t")
        for i in range(6):
            handle.append(pa.table({"id": [n * 100 + i]}, schema=SCHEMA))

    with clock.use_clock(advancing):
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert _tags(table) == _model_hourly_tags(table)
    hours = [t for t in _tags(table)]
    assert len(hours) == len(set(hours)) and len(set(_tags(table).values())) == len(hours)


def _model_hourly_tags(table: Table) -> dict[str, int]:
    """Java's algorithm over the snapshots in id order: the tags one writer committing alone would make."""
    tags: dict[str, int] = {}
    next_tag: dt.datetime | None = None
    for snapshot in table.snapshots():
        time = dt.datetime.fromtimestamp(snapshot.time_millis / 1000, dt.timezone.utc).replace(tzinfo=None)
        if next_tag is None or time >= next_tag + dt.timedelta(hours=1):
            this = time.replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=1)
            tags[this.strftime("%Y-%m-%d %H")] = snapshot.id
            next_tag = this + dt.timedelta(hours=1)
    return tags


def test_expire_tags_deletes_tags_past_their_time_retained_or_older_than(
    catalog: Catalog, fake: FakeClock
) -> None:
    table = _table(catalog)
    _append(table, fake, "2024-01-01 10:00")
    create_tag(table, "short", time_retained="1 h")
    create_tag(table, "long", time_retained="7 d")
    create_tag(table, "forever")
    assert expire_tags(table) == []
    fake.set(_utc("2024-01-01 12:00"))
    assert expire_tags(table) == ["short"]
    # older_than: by creation time, and the file's modification time for a tag without one
    assert expire_tags(table, older_than="2024-01-01 09:00:00") == []
    assert sorted(expire_tags(table, older_than=dt.datetime.now() + dt.timedelta(days=30))) == [
        "forever",
        "long",
    ]
    assert _tags(table) == {}


def test_replace_tag_moves_an_existing_tag(catalog: Catalog, fake: FakeClock) -> None:
    table = _table(catalog)
    for i in range(3):
        _append(table, fake, f"2024-01-01 1{i}:00", i)
    create_tag(table, "v", snapshot_id=1, time_retained="1 d")
    replaced = replace_tag(table, "v", snapshot_id=2)
    assert replaced.snapshot.id == 2 and replaced.time_retained is None
    assert sorted(table.to_arrow(tag="v").column("id").to_pylist()) == [0, 1]
    assert replace_tag(table, "v", time_retained="2 h").snapshot.id == 3  # the latest by default
    assert TagManager(table.storage, table.path).tag("v").time_retained == dt.timedelta(hours=2)
    with pytest.raises(TagNotFoundError):
        replace_tag(table, "missing", snapshot_id=1)
