"""One planner: every scan option, given as a table option, a dynamic option or an explicit argument, reads
the same snapshot and rows through every Python entry point."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConfigError, cli
from paimon_core.maintenance import create_tag
from paimon_core.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.string())])


@pytest.fixture()
def history(catalog: Catalog) -> dict[str, Any]:
    """Four snapshots: append 1, append 2, overwrite with 3, append 4; tags 'two' and 'four' on 2 and 4."""
    table = catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})
    times = []
    for step, ids in enumerate([[1], [2], [3], [4]]):
        data = pa.table({"id": ids, "p": ["x"] * len(ids)}, schema=SCHEMA)
        table.overwrite(data) if step == 2 else table.append(data)
        times.append(table.latest_snapshot().time_millis)  # type: ignore[union-attr]
        time.sleep(0.01)
    create_tag(table, "two", 2)
    create_tag(table, "four", 4)
    return {"catalog": catalog, "times": times}


def _local(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


# (options, expected ids): each resolved by the one planner.
CASES: list[tuple[str, Callable[[list[int]], dict[str, str]], list[int]]] = [
    ("latest", lambda t: {}, [3, 4]),
    ("scan.snapshot-id", lambda t: {"scan.snapshot-id": "2"}, [1, 2]),
    ("scan.tag-name", lambda t: {"scan.tag-name": "two"}, [1, 2]),
    ("scan.timestamp-millis", lambda t: {"scan.timestamp-millis": str(t[1])}, [1, 2]),
    ("scan.timestamp", lambda t: {"scan.timestamp": _local(t[0])}, [1]),
    ("scan.mode=from-snapshot", lambda t: {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}, [1]),
    ("scan.mode=latest-full", lambda t: {"scan.mode": "latest-full"}, [3, 4]),
    ("incremental-between ids", lambda t: {"incremental-between": "1,2"}, [2]),
    ("incremental-between overwrite", lambda t: {"incremental-between": "2,4"}, [4]),  # the overwrite skipped
    # two tags are compared: the files of the end that the start lacks (the overwrite's included)
    ("incremental-between tags", lambda t: {"incremental-between": "two,four"}, [3, 4]),
    ("incremental-between-timestamp", lambda t: {"incremental-between-timestamp": f"{t[0]},{t[1]}"}, [2]),
    ("scan.file-creation-time-millis", lambda t: {"scan.file-creation-time-millis": str(t[2] + 1)}, [4]),
]


def _ids(data: pa.Table) -> list[int]:
    return sorted(data.column("id").to_pylist())


def _read_every_way(table: Table) -> list[list[int]]:
    via_scan = table.new_read().to_arrow(table.scan().plan())
    return [_ids(table.to_arrow()), _ids(table.to_batches().read_all()), _ids(via_scan)]


def _cli_ids(table: Table, options: dict[str, str], capsys: pytest.CaptureFixture[str]) -> list[int]:
    capsys.readouterr()
    args = ["read", table.path, "--columns", "id", *(f"--option={k}={v}" for k, v in options.items())]
    assert cli.main(args) == 0
    return sorted(json.loads(line)["id"] for line in capsys.readouterr().out.splitlines())


@pytest.mark.parametrize(("name", "options", "expected"), CASES, ids=[c[0] for c in CASES])
def test_every_scan_option_reads_the_same_rows_everywhere(
    history: dict[str, Any],
    name: str,
    options: Callable[[list[int]], dict[str, str]],
    expected: list[int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    catalog: Catalog = history["catalog"]
    given = options(history["times"])
    as_dynamic = catalog.get_table("db.t", **given)
    assert _read_every_way(as_dynamic) == [expected] * 3
    assert _cli_ids(as_dynamic, given, capsys) == expected  # the CLI: paimon read --option k=v
    catalog.alter_options("db.t", given) if given else None  # as table options
    assert _read_every_way(catalog.get_table("db.t")) == [expected] * 3


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [({"snapshot_id": 2}, [1, 2]), ({"tag": "two"}, [1, 2]), ({"timestamp": 0}, None)],
)
def test_explicit_time_travel_is_the_same_plan_and_wins_over_options(
    history: dict[str, Any], kwargs: dict[str, Any], expected: list[int] | None
) -> None:
    times = history["times"]
    if expected is None:  # a timestamp: the snapshot current at the second commit
        kwargs, expected = {"timestamp": times[1]}, [1, 2]
    table = history["catalog"].get_table("db.t", **{"scan.snapshot-id": "1"})
    assert _ids(table.to_arrow(**kwargs)) == expected
    assert _ids(table.to_batches(**kwargs).read_all()) == expected
    assert _ids(table.new_read().to_arrow(table.scan(**kwargs).plan())) == expected
    assert _ids(table.to_arrow()) == [1]  # without them, the option decides


def test_time_travel_by_datetime_and_text(history: dict[str, Any]) -> None:
    table = history["catalog"].get_table("db.t")
    second = history["times"][1]
    assert _ids(table.to_arrow(timestamp=dt.datetime.fromtimestamp(second / 1000))) == [1, 2]
    assert _ids(table.to_arrow(timestamp=_local(second))) == [1, 2]


def test_conflicting_or_malformed_time_travel_is_refused(history: dict[str, Any]) -> None:
    table = history["catalog"].get_table("db.t")
    with pytest.raises(ConfigError, match="one of"):
        table.to_arrow(snapshot_id=1, tag="two")
    with pytest.raises(ConfigError, match="not a time"):
        table.to_arrow(timestamp="yesterday")
    with pytest.raises(ConfigError, match="start,end"):
        history["catalog"].get_table("db.t", **{"incremental-between": "3"}).to_arrow()
    with pytest.raises(ConfigError, match="after the end"):
        history["catalog"].get_table("db.t", **{"incremental-between": "3,1"}).to_arrow()


def test_a_misspelled_option_names_the_close_match(history: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=re.escape("did you mean 'scan.snapshot-id'")):
        history["catalog"].get_table("db.t", **{"scan.snapshot-idd": "1"})


def test_the_cli_reads_time_travel_and_system_tables(
    history: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    path = history["catalog"].get_table("db.t").path
    capsys.readouterr()
    assert cli.main(["read", path, "--tag", "two", "--columns", "id"]) == 0
    assert sorted(json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()) == [1, 2]
    assert (
        cli.main(["read", f"{path}$snapshots", "--columns", "snapshot_id,commit_kind", "--format", "csv"])
        == 0
    )
    assert capsys.readouterr().out.splitlines()[1:] == [
        '1,"APPEND"',
        '2,"APPEND"',
        '3,"OVERWRITE"',
        '4,"APPEND"',
    ]
    assert cli.main(["read", path, "--option", "scan.snapshot-idd=1"]) == 1
    assert "did you mean 'scan.snapshot-id'" in capsys.readouterr().err


def test_a_bounded_watermark_ends_the_stream(catalog: Catalog) -> None:
    from paimon_core.table import StreamScan

    table = catalog.create_table("db.w", SCHEMA, options={"write-only": "true"})
    for ident, watermark in [(1, 10), (2, None), (3, 30), (4, 40)]:
        writer = table.new_write()
        writer.write(pa.table({"id": [ident], "p": ["x"]}, schema=SCHEMA))
        table.new_commit().commit(writer.prepare_commit(), watermark=watermark)
    assert [s.watermark for s in table.snapshots()] == [10, 10, 30, 40]  # snapshots keep the largest
    bounded = catalog.get_table("db.w", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                                           "scan.bounded.watermark": "20"})  # fmt: skip
    scan = StreamScan(bounded)
    start = scan.starting_position()
    end = scan.advance(start)
    assert scan.ended and end.snapshot_id == 3  # snapshot 3 passes the bound: the stream ends before it
    assert _ids(bounded.new_read().to_arrow(scan.plan(start, end))) == [1, 2]
    assert scan.advance(end) == end  # nothing more, ever


def test_a_batch_read_says_it_ignores_streaming_only_options(
    history: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    table = history["catalog"].get_table("db.t", **{"consumer-id": "job", "scan.bounded.watermark": "5"})
    with caplog.at_level("WARNING", logger="paimon_core.table._planner"):
        assert _ids(table.to_arrow()) == [3, 4]
    assert "ignores the streaming-only options ['consumer-id', 'scan.bounded.watermark']" in caplog.text


def test_catalog_options_refuse_near_misses(tmp_path: Any) -> None:
    with pytest.raises(ConfigError, match=re.escape("did you mean 'commit.max-retries'")):
        Catalog.open(str(tmp_path / "wh"), **{"commit.max-retires": "3"})
    assert Catalog.open(str(tmp_path / "wh"), **{"commit.max-retries": "3"}, create=True).table_defaults == {
        "commit.max-retries": "3"
    }

    with pytest.raises(ConfigError, match="unknown option 'nonsense'"):
        Catalog.open(str(tmp_path / "wh"), nonsense="1")


# (options, expected start): where a new stream starts, resolved by the same planner.
STREAM_CASES: list[tuple[str, Callable[[list[int]], dict[str, str]], tuple[int, bool]]] = [
    ("latest-full", lambda t: {}, (4, True)),
    ("latest", lambda t: {"scan.mode": "latest"}, (5, False)),
    ("from-snapshot", lambda t: {"scan.snapshot-id": "2"}, (2, False)),
    ("from-snapshot tag", lambda t: {"scan.tag-name": "two"}, (2, False)),
    ("from-snapshot-full", lambda t: {"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"}, (2, True)),
    ("from-timestamp", lambda t: {"scan.timestamp-millis": str(t[1])}, (2, False)),
    ("consumer progress", lambda t: {"consumer-id": "job"}, (3, False)),
    ("consumer ignored", lambda t: {"consumer-id": "job", "consumer.ignore-progress": "true"}, (4, True)),
    ("unknown consumer", lambda t: {"consumer-id": "new", "scan.snapshot-id": "1"}, (1, False)),
]


@pytest.mark.parametrize(("name", "options", "expected"), STREAM_CASES, ids=[c[0] for c in STREAM_CASES])
def test_every_stream_start_is_planned_in_one_place(
    history: dict[str, Any],
    name: str,
    options: Callable[[list[int]], dict[str, str]],
    expected: tuple[int, bool],
) -> None:
    from paimon_core.consumer import Consumer, ConsumerManager
    from paimon_core.table import StreamScan
    from paimon_core.table._planner import resolve_stream_start

    table = history["catalog"].get_table("db.t", **options(history["times"]))
    ConsumerManager(table.storage, table.path).reset_consumer("job", Consumer(3))
    start = resolve_stream_start(table)
    assert (start.snapshot_id, start.full) == expected
    position = StreamScan(table).starting_position()  # the stream asks the planner
    assert (position.snapshot_id, position.full) == expected


def test_a_batch_only_mode_is_refused_for_a_stream(history: dict[str, Any]) -> None:
    from paimon_core.table._planner import resolve_stream_start

    table = history["catalog"].get_table("db.t", **{"incremental-between": "1,2"})
    with pytest.raises(ConfigError, match="not supported for streaming reads"):
        resolve_stream_start(table)
