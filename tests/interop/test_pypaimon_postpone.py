"""Postpone-bucket tables (``bucket = -2``) shared with pypaimon 2.1.0 (marker ``interop``).

Java Paimon (1.1+) and pypaimon write a postpone table's new files into ``bucket-postpone/`` and keep them
invisible to reads until a compaction moves them into real buckets. Here pypaimon's postponed writes are
compacted by paimon-core and read back by pypaimon, and paimon-core's postponed writes (in the same layout as
pypaimon's) are compacted here and read by pypaimon; maintenance keeps postponed files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core import options as opts
from paimon_core.maintenance import expire_snapshots, remove_orphan_files
from paimon_core.storage import join_path
from paimon_core.table import POSTPONE_BUCKET
from paimon_core.table.mergetree import postpone_write_table

pytestmark = pytest.mark.interop

FAR_FUTURE_MS = 32503680000000  # 3000-01-01
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
PARTITIONED = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
    ]
)


def _sorted(rows: pa.Table, keys: list[str]) -> list[dict[str, Any]]:
    ordered: list[dict[str, Any]] = rows.sort_by([(k, "ascending") for k in keys]).to_pylist()
    return ordered


def _postponed(table: Any) -> list[Any]:
    return [e for e in table.live_entries() if e.bucket == POSTPONE_BUCKET]


def test_pypaimon_postponed_rows_are_invisible_kept_by_maintenance_and_compacted_here(
    ours: Catalog, pypaimon: Any, warehouse: str
) -> None:
    pypaimon.create_table("db.pp", SCHEMA, primary_keys=["id"], options={"bucket": "-2"})
    pypaimon.append("db.pp", pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=SCHEMA))
    pypaimon.append("db.pp", pa.table({"id": [2, 4], "name": ["B", "d"]}, schema=SCHEMA))
    table = ours.get_table("db.pp")
    entries = table.live_entries()
    assert entries and {e.bucket for e in entries} == {POSTPONE_BUCKET}
    for entry in entries:
        path = join_path(table.bucket_dir(entry.partition, entry.bucket), entry.file.file_name)
        assert "/bucket-postpone/" in path and Path(path).is_file()
    assert table.to_arrow().num_rows == 0  # nothing was compacted into a real bucket yet
    assert pypaimon.read("db.pp").num_rows == 0
    far_future = "2999-01-01 00:00:00"  # every file counts as old enough: only references keep one
    assert remove_orphan_files(table, older_than=far_future, now_millis=FAR_FUTURE_MS).deleted == ()
    expire_snapshots(table, retain_max=1, retain_min=1)
    assert all(Path(join_path(table.bucket_dir(e.partition, e.bucket), e.file.file_name)).is_file()
               for e in ours.get_table("db.pp").live_entries())  # fmt: skip

    ours.get_table("db.pp").compact()
    expected = [
        {"id": 1, "name": "a"},
        {"id": 2, "name": "B"},
        {"id": 3, "name": "c"},
        {"id": 4, "name": "d"},
    ]
    assert _sorted(ours.get_table("db.pp").to_arrow(), ["id"]) == expected
    assert _sorted(pypaimon.read("db.pp"), ["id"]) == expected
    # pypaimon keeps writing postponed rows; the next compaction here merges them into the same buckets
    pypaimon.append("db.pp", pa.table({"id": [1, 5], "name": ["A", "e"]}, schema=SCHEMA))
    assert _sorted(pypaimon.read("db.pp"), ["id"]) == expected
    ours.get_table("db.pp").compact()
    expected = [{**r, "name": "A"} if r["id"] == 1 else r for r in expected] + [{"id": 5, "name": "e"}]
    assert _sorted(pypaimon.read("db.pp"), ["id"]) == expected
    assert not _postponed(ours.get_table("db.pp"))


def test_our_postponed_writes_look_like_pypaimons_and_compact_for_it(ours: Catalog, pypaimon: Any) -> None:
    pypaimon.create_table(
        "db.theirs", PARTITIONED, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "-2"}
    )
    rows = pa.table({"dt": ["x", "y", "x"], "id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=PARTITIONED)
    pypaimon.append("db.theirs", rows)
    mine = ours.create_table(
        "db.mine", PARTITIONED, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "-2"}
    )
    mine.append(rows)
    theirs = ours.get_table("db.theirs").live_entries()
    ours_entries = mine.live_entries()

    def shape(entries: list[Any]) -> set[tuple[int, int, int, int, int]]:
        return {
            (e.bucket, e.total_buckets, e.file.level, e.file.file_source, e.file.row_count) for e in entries
        }

    assert shape(ours_entries) == shape(theirs)
    for ours_entry, their_entry in zip(
        sorted(ours_entries, key=lambda e: e.partition),
        sorted(theirs, key=lambda e: e.partition),
        strict=True,
    ):
        # both name a writer's files <data-file.prefix>-u-<user>-s-<writer id>-w-<uuid>-<n> (Java's pattern)
        assert ours_entry.file.file_name.split("-u-")[0] == their_entry.file.file_name.split("-u-")[0]
        # pypaimon writes them in Avro, as Java; so do we where this build writes Avro (else in Parquet)
        their_format = their_entry.file.file_name.rsplit(".", 1)[1]
        assert their_format == "avro"
        writes_avro = postpone_write_table(mine).options.get_option(opts.FILE_FORMAT) == "avro"
        assert ours_entry.file.file_name.rsplit(".", 1)[1] == (their_format if writes_avro else "parquet")
        assert "-s-" in ours_entry.file.file_name and "-w-" in ours_entry.file.file_name
    assert pypaimon.read("db.mine").num_rows == 0  # pypaimon does not see our postponed rows either

    mine = ours.get_table("db.mine", **{"postpone.default-bucket-num": "2"})
    mine.append(pa.table({"dt": ["x", "y"], "id": [1, 4], "name": ["A", "d"]}, schema=PARTITIONED))
    mine.compact()
    expected = [
        {"dt": "x", "id": 1, "name": "A"},
        {"dt": "x", "id": 3, "name": "c"},
        {"dt": "y", "id": 2, "name": "b"},
        {"dt": "y", "id": 4, "name": "d"},
    ]
    assert _sorted(pypaimon.read("db.mine"), ["dt", "id"]) == expected
    assert _sorted(ours.get_table("db.mine").to_arrow(), ["dt", "id"]) == expected
    # pypaimon reads each row from the bucket Java's hash puts it in (2 buckets per partition)
    splits = pypaimon.read_splits("db.mine")
    assert {bucket for _, bucket, _ in splits} <= {0, 1}
    assert sum(rows.num_rows for _, _, rows in splits) == len(expected)
    # pypaimon writes more postponed rows into our compacted table; we compact them with its 2 buckets
    pypaimon.append("db.mine", pa.table({"dt": ["y"], "id": [2], "name": ["B"]}, schema=PARTITIONED))
    ours.get_table("db.mine").compact()
    expected[2]["name"] = "B"
    assert _sorted(pypaimon.read("db.mine"), ["dt", "id"]) == expected
    assert {e.total_buckets for e in ours.get_table("db.mine").live_entries()} == {2}
