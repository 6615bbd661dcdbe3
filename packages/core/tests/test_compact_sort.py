"""Sort compaction: order and zorder, measured by the files a filtered scan can skip."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import compact_table, sort_table, z_order_key
from paimon_core.errors import ConfigError, SchemaError
from paimon_core.snapshot import CommitKind
from paimon_core.stats import decode_stats

SCHEMA = pa.schema(
    [
        pa.field("p", pa.string()),
        pa.field("a", pa.int64()),
        pa.field("b", pa.int64()),
        pa.field("s", pa.string()),
    ]
)
OPTIONS = {"write-only": "true", "target-file-size": "32 kb", "source.split.open-file-cost": "1 b"}


def _random(seed: int, n: int, partition: str = "x") -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "p": [partition] * n,
            "a": rng.integers(0, 1000, n),
            "b": rng.integers(0, 1000, n),
            "s": [rng.bytes(8).hex() for _ in range(n)],
        },
        schema=SCHEMA,
    )


def _table(catalog: Catalog, name: str = "db.t") -> Any:
    table = catalog.create_table(name, SCHEMA, partition_keys=["p"], options=OPTIONS)
    for seed in range(16):
        table.append(_random(seed, 1500))
    return table


def _matched(table: Any, filter: Any) -> int:
    return len(table.scan(filter).files())


def _ranges(table: Any, column: str) -> list[tuple[Any, Any]]:
    fields = list(table.schema.fields)
    ranges = []
    for entry in table.live_entries():
        stats = decode_stats(entry.file.value_stats, entry.file.value_stats_cols, fields)
        lo, hi, _ = stats[column]
        ranges.append((lo, hi))
    return sorted(ranges)


def test_z_order_key_walks_the_z_curve() -> None:
    grid = pa.table(
        {"x": [x for x in range(4) for _ in range(4)], "y": [y for _ in range(4) for y in range(4)]}
    )
    order = np.argsort(z_order_key(grid, ["x", "y"]), kind="stable")
    points = [(grid["x"][int(i)].as_py(), grid["y"][int(i)].as_py()) for i in order]
    quadrants = [{(px // 2, py // 2) for px, py in points[q * 4 : q * 4 + 4]} for q in range(4)]
    assert all(len(q) == 1 for q in quadrants)  # each run of 4 stays in one 2x2 quadrant
    assert points[:4] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_z_order_key_handles_nulls_strings_and_one_value() -> None:
    data = pa.table({"s": ["b", None, "a", "b"], "c": [1, 1, 1, 1]})
    key = z_order_key(data, ["s", "c"])
    assert key.dtype == np.uint64
    ordered = sort_table(data, "zorder", ["s", "c"])
    assert ordered.column("s").to_pylist() == ["a", "b", "b", None]  # nulls last


def test_order_sort_gives_files_with_barely_overlapping_ranges(catalog: Catalog) -> None:
    table = _table(catalog)
    before = table.to_arrow().sort_by([("a", "ascending"), ("b", "ascending"), ("s", "ascending")])
    files_before = len(table.live_entries())
    assert _matched(table, [("a", ">=", 400), ("a", "<", 420)]) == files_before  # unsorted: no skipping
    compact_table(table, order_strategy="order", order_by=["a"], progress=False)
    assert table.snapshots()[-1].commit_kind == CommitKind.COMPACT
    after = table.to_arrow().sort_by([("a", "ascending"), ("b", "ascending"), ("s", "ascending")])
    assert after.equals(before)
    ranges = _ranges(table, "a")
    assert len(ranges) >= 4
    for (_, hi), (lo, _) in itertools.pairwise(ranges):
        assert hi <= lo  # neighbours share at most a boundary value
    assert _matched(table, [("a", ">=", 400), ("a", "<", 420)]) <= 2


def test_zorder_improves_skipping_for_a_two_column_filter(catalog: Catalog) -> None:
    table = _table(catalog)
    box = [("a", "<", 200), ("b", "<", 200)]
    only_b = [("b", ">=", 800)]
    total_before = len(table.live_entries())
    assert _matched(table, box) == total_before
    compact_table(table, order_strategy="zorder", order_by="a,b", progress=False)
    total = len(table.live_entries())
    assert total >= 8
    assert _matched(table, box) <= total // 3
    assert _matched(table, only_b) < total  # the second column prunes too
    # A plain order by the first column cannot prune on the second one.
    other = _table(catalog, "db.t2")
    compact_table(other, order_strategy="order", order_by=["a"], progress=False)
    assert _matched(other, only_b) == len(other.live_entries())
    assert _matched(table, box) / total <= _matched(other, box) / len(other.live_entries())


def test_sort_compaction_honours_the_partition_filter(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    for seed in range(6):
        table.append(_random(seed, 500, "x"))
        table.append(_random(seed + 100, 500, "y"))
    y_files = {
        e.file.file_name for e in table.live_entries() if table.partition_values(e.partition)["p"] == "y"
    }
    compact_table(table, partitions="p=x", order_strategy="order", order_by=["a", "b"], progress=False)
    live = {e.file.file_name for e in table.live_entries()}
    assert y_files <= live
    assert table.to_arrow().num_rows == 6000


def test_sort_compaction_rejects_bad_arguments(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=OPTIONS)
    with pytest.raises(ConfigError):
        compact_table(table, order_strategy="hilbert", order_by=["a"], progress=False)
    with pytest.raises(SchemaError):
        compact_table(table, order_strategy="order", order_by=["nope"], progress=False)
    with pytest.raises(SchemaError):
        compact_table(table, order_strategy="order", order_by=["p"], progress=False)
    with pytest.raises(ConfigError):
        compact_table(table, order_strategy="order", order_by=["a"], mode="streaming", progress=False)
    with pytest.raises(ConfigError):
        compact_table(table, order_by=["a"], progress=False)
