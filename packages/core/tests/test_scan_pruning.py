"""Planning that filters while decoding: entries of other partitions are never decoded, value statistics only
for the columns a filter names; batch scans, streaming scans and the compaction coordinator alike."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.compact import TableCoordinator
from paimon_core.manifest import ManifestEntry, _avro
from paimon_core.manifest._cache import manifest_cache
from paimon_core.predicate import Predicate, parse_filter
from paimon_core.stats import decode_stats
from paimon_core.table import StreamScan, TableScan, _entries, _scan

SCHEMA = pa.schema([("dt", pa.string()), ("hr", pa.int32()), ("id", pa.int64()), ("name", pa.string())])
DAYS = [f"2024-01-{d:02d}" for d in range(1, 7)]


def rows(step: int) -> pa.Table:
    """Commit ``step``: ten rows of each of two days (two files, in one delta manifest)."""
    ids = list(range(step * 20, step * 20 + 20))
    days = [DAYS[step % 6]] * 10 + [DAYS[(step + 1) % 6]] * 10
    return pa.table(
        {"dt": days, "hr": [step // 6 % 2] * 20, "id": ids, "name": [f"n{i}" for i in ids]}, schema=SCHEMA
    )


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """36 commits of two files each over 6 days x 2 hours (12 files a day); small manifests, so merges happen
    along the way."""
    catalog = Catalog.open(str(tmp_path_factory.mktemp("pruning") / "warehouse"), create=True)
    catalog.create_database("db")
    options = {"write-only": "true", "manifest.target-file-size": "64kb", "manifest.merge-min-count": "5"}
    created = catalog.create_table("db.t", SCHEMA, partition_keys=["dt", "hr"], options=options)
    for step in range(36):
        created.append(rows(step))
    return created


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ManifestEntry]]:
    """Every manifest entry decoded into an object while the test runs (the manifest cache starts empty)."""
    seen: list[ManifestEntry] = []
    real = _avro._record_to_entry

    def counting(record: dict[str, Any]) -> ManifestEntry:
        entry = real(record)
        seen.append(entry)
        return entry

    monkeypatch.setattr(_avro, "_record_to_entry", counting)
    manifest_cache.clear()
    yield seen
    manifest_cache.clear()


@pytest.fixture
def stats_decoded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, frozenset[str] | None]]:
    """(file name, columns asked for) of every value-statistics decode of the planner."""
    calls: list[tuple[str, frozenset[str] | None]] = []
    real = decode_stats

    def counting(stats: Any, cols: Any, fields: Any, write_cols: Any = None, columns: Any = None) -> Any:
        calls.append(("?", None if columns is None else frozenset(columns)))
        return real(stats, cols, fields, write_cols, columns)

    monkeypatch.setattr(_scan, "decode_stats", counting)
    return calls


def day_of(table: Any, entry: ManifestEntry) -> str:
    return str(table.partition_values(entry.partition)["dt"])


def test_a_partition_filter_decodes_only_that_partitions_entries(
    table: Any, decoded: list[ManifestEntry]
) -> None:
    files = TableScan(table, predicate=parse_filter([("dt", "=", DAYS[2])])[0]).files()
    assert len(files) == 12
    assert decoded and {day_of(table, e) for e in decoded} == {DAYS[2]}
    decoded.clear()
    assert len(TableScan(table).files()) == 72
    assert len(decoded) >= 72  # without a filter everything is decoded: the check above can fail


def test_value_statistics_only_for_matching_files_and_named_columns(
    table: Any, decoded: list[ManifestEntry], stats_decoded: list[Any]
) -> None:
    # A filter on partition columns only: no statistics at all.
    TableScan(table, predicate=parse_filter([("dt", "in", DAYS[:2])])[0]).files()
    assert stats_decoded == []
    # A filter naming a value column: statistics of matching partitions' files, of that column only.
    files = TableScan(table, predicate=parse_filter([("dt", "=", DAYS[1]), ("id", ">=", 0)])[0]).files()
    assert len(files) == 12
    assert len(stats_decoded) == 12 and {columns for _, columns in stats_decoded} == {frozenset({"id"})}


def test_stats_prune_with_named_columns_only(table: Any) -> None:
    # Commit 13 wrote ids 260..269 into DAYS[1] (13 % 6), 270..279 into DAYS[2].
    files = TableScan(table, predicate=parse_filter([("id", "=", 265)])[0]).files()
    assert [(day_of(table, e), e.file.row_count) for e in files] == [(DAYS[1], 10)]


FILTERS = st.one_of(
    st.builds(lambda d: [("dt", "=", d)], st.sampled_from(DAYS)),
    st.builds(lambda ds: [("dt", "in", ds)], st.lists(st.sampled_from(DAYS), min_size=1, max_size=3)),
    st.builds(lambda d, h: [("dt", ">=", d), ("hr", "=", h)], st.sampled_from(DAYS), st.integers(0, 2)),
    st.builds(lambda d, i: [[("dt", "<", d)], [("id", "<", i)]], st.sampled_from(DAYS), st.integers(0, 400)),
    st.builds(lambda i: [("id", ">", i), ("hr", "!=", 1)], st.integers(0, 400)),
    st.builds(lambda n: [("name", "=", n), ("dt", "is not null")], st.sampled_from(["n5", "n123", "zz"])),
)


@settings(max_examples=40)
@given(FILTERS)
def test_filtered_plans_equal_the_full_plan_filtered_afterwards(table: Any, terms: Any) -> None:
    predicate = parse_filter(terms)[0]
    assert isinstance(predicate, Predicate)
    manifest_cache.clear()
    filtered = {(e.partition, e.file.file_name) for e in TableScan(table, predicate=predicate).files()}
    pruner = _scan.Pruner(table, predicate)
    everything = TableScan(table).files()
    expected = {
        (e.partition, e.file.file_name)
        for e in everything
        if predicate.evaluate(table.partition_values(e.partition)) is not False and pruner.file_may_match(e)
    }
    assert filtered == expected


def test_streaming_scans_decode_only_matching_entries(table: Any, decoded: list[ManifestEntry]) -> None:
    scan = StreamScan(
        table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}), [("dt", "=", DAYS[4])]
    )
    start = scan.starting_position()
    end = type(start)(table.latest_snapshot().id + 1)
    entries = [e for _, e in scan.entries_between(start, end)]
    assert len(entries) == 12 and {day_of(table, e) for e in entries} == {DAYS[4]}
    assert {day_of(table, e) for e in decoded} == {DAYS[4]}


def test_the_compaction_coordinator_decodes_only_matching_entries(
    table: Any, decoded: list[ManifestEntry]
) -> None:
    predicate = parse_filter([("dt", "=", DAYS[5])])[0]
    coordinator = TableCoordinator(table, lambda values: values["dt"] == DAYS[5], predicate)
    assert coordinator.scan()
    assert sum(len(v) for v in coordinator.coordinator.pending().values()) == 12
    assert decoded and {day_of(table, e) for e in decoded} == {DAYS[5]}


def test_a_cached_manifest_serves_filtered_plans(table: Any, decoded: list[ManifestEntry]) -> None:
    assert len(TableScan(table).files()) == 72  # decodes and caches the small manifests
    decoded.clear()
    files = TableScan(table, predicate=parse_filter([("dt", "=", DAYS[0])])[0]).files()
    assert len(files) == 12 and decoded == []


def test_single_partition_layout_after_merges(table: Any) -> None:
    """The merged manifests of this table hold narrow ranges of days: a one-day plan reads few of them."""
    from paimon_core.manifest import read_manifest_list

    snapshot = table.latest_snapshot()
    metas = read_manifest_list(table.storage, table.manifest_path(snapshot.base_manifest_list))
    metas += read_manifest_list(table.storage, table.manifest_path(snapshot.delta_manifest_list))
    pruner = _entries._PartitionPruner(table, parse_filter([("dt", "=", DAYS[3])])[0])
    assert sum(pruner.manifest_may_match(m) for m in metas) < len(metas)


def test_time_partitions_are_decoded_lazily(tmp_path: Any) -> None:
    """Dates as partition values: a filter on them decodes matching entries only, here too."""
    catalog = Catalog.open(str(tmp_path / "w"), create=True)
    catalog.create_database("db")
    schema = pa.schema([("d", pa.date32()), ("x", pa.int64())])
    t = catalog.create_table("db.t", schema, partition_keys=["d"], options={"write-only": "true"})
    for i in range(6):
        t.append(pa.table({"d": [dt.date(2024, 1, 1 + i % 3)], "x": [i]}, schema=schema))
    manifest_cache.clear()
    assert len(t.scan([("d", "=", dt.date(2024, 1, 2))]).files()) == 2
