"""End-to-end behaviour of append tables on a local warehouse."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimon_core import Catalog, SchemaError, TableNotFoundError, open_table
from paimon_core.errors import DatabaseNotFoundError, TableAlreadyExistsError
from paimon_core.snapshot import CommitKind


def test_append_and_read_back_unpartitioned(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema)
    first = table.append(data.events(0, 100))
    second = table.append(data.events(100, 50))
    assert (first, second) == (1, 2)
    result = table.to_arrow()
    assert result.schema.equals(data.schema)
    assert data.sorted_rows(result) == data.sorted_rows(data.events(0, 150))
    latest = table.latest_snapshot()
    assert latest is not None and latest.total_record_count == 150 and latest.delta_record_count == 50
    assert latest.commit_kind == CommitKind.APPEND


def test_layout_on_disk_is_paimon(data: Any, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", data.schema, partition_keys=["dt"])
    table.append(data.events(0, 10, days=2))
    root = Path(warehouse) / "db.db" / "t"
    assert (root / "schema" / "schema-0").is_file()
    assert (root / "snapshot" / "snapshot-1").is_file()
    assert (root / "snapshot" / "LATEST").read_text() == "1"
    # Java names DATE partitions by their day number (legacy partition names)
    day = (dt.date(2024, 1, 1) - dt.date(1970, 1, 1)).days
    files = sorted(p.name for p in (root / f"dt={day}" / "bucket-0").iterdir())
    assert files and all(f.startswith("data-") and f.endswith(".parquet") for f in files)
    snapshot = json.loads((root / "snapshot" / "snapshot-1").read_text())
    assert snapshot["commitKind"] == "APPEND" and snapshot["version"] == 3
    assert snapshot["commitIdentifier"] == 2**63 - 1


def test_partitioned_reads_prune_and_filter(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema, partition_keys=["dt"])
    table.append(data.events(0, 90, days=3))
    wanted = dt.date(2024, 1, 2)
    scan = table.scan(filter=[("dt", "=", wanted)])
    splits = scan.plan()
    assert len({s.partition for s in splits}) == 1
    result = table.to_arrow(filter=[("dt", "=", wanted)])
    assert data.sorted_rows(result) == [
        r for r in data.sorted_rows(data.events(0, 90, 3)) if r["dt"] == wanted
    ]


def test_stats_skip_files_and_row_filter_is_exact(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema)
    for start in range(0, 400, 100):
        table.append(data.events(start, 100))
    assert len(table.scan().plan()[0].files) + sum(len(s.files) for s in table.scan().plan()[1:]) == 4
    pruned = table.scan(filter=[("id", ">=", 250), ("id", "<", 260)]).files()
    assert len(pruned) == 1
    result = table.to_arrow(filter=[("id", ">=", 250), ("id", "<", 260)])
    assert sorted(result.column("id").to_pylist()) == list(range(250, 260))
    either = table.to_arrow(filter=[[("id", "=", 5)], [("id", "=", 305)]])
    assert sorted(either.column("id").to_pylist()) == [5, 305]
    expr = table.to_arrow(filter=pc.field("category") == "c1")
    assert set(expr.column("category").to_pylist()) == {"c1"} and expr.num_rows == 80


def test_projection_and_column_order(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema, partition_keys=["dt"])
    table.append(data.events(0, 20))
    result = table.to_arrow(columns=["value", "id"], filter=[("category", "=", "c2")])
    assert result.column_names == ["value", "id"]
    assert sorted(result.column("id").to_pylist()) == [i for i in range(20) if i % 5 == 2]


def test_time_travel_by_snapshot_id(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema)
    table.append(data.events(0, 10))
    table.append(data.events(10, 10))
    table.overwrite(data.events(100, 5))
    assert table.to_arrow(snapshot_id=1).num_rows == 10
    assert table.to_arrow(snapshot_id=2).num_rows == 20
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(100, 105))
    assert [s.commit_kind for s in table.snapshots()] == [
        CommitKind.APPEND,
        CommitKind.APPEND,
        CommitKind.OVERWRITE,
    ]


def test_dynamic_and_static_partition_overwrite(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema, partition_keys=["dt"])
    table.append(data.events(0, 30, days=3))  # ids spread over 3 days
    day0 = dt.date(2024, 1, 1)
    replacement = data.events(1000, 3, days=1)  # only day 0
    table.overwrite(replacement)  # dynamic: only day 0 is replaced
    rows = data.sorted_rows(table.to_arrow())
    assert [r["id"] for r in rows if r["dt"] == day0] == [1000, 1001, 1002]
    assert len([r for r in rows if r["dt"] != day0]) == 20
    table.overwrite(data.events(2000, 0), partition={"dt": dt.date(2024, 1, 2)})  # static: delete day 1
    assert {r["dt"] for r in table.to_arrow().to_pylist()} == {day0, dt.date(2024, 1, 3)}
    with pytest.raises(SchemaError):
        table.overwrite(data.events(0, 3, days=3), partition={"dt": day0})
    table.overwrite(data.events(5000, 2, days=1), partition={})  # whole table
    assert sorted(table.to_arrow().column("id").to_pylist()) == [5000, 5001]


def test_fixed_buckets_keep_keys_together(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema, options={"bucket": "4", "bucket-key": "category"})
    table.append(data.events(0, 200))
    table.append(data.events(200, 200))
    buckets_of_category: dict[str, set[int]] = {}
    for split in table.scan().plan():
        read = table.new_read(columns=["category"]).to_arrow([split])
        for category in set(read.column("category").to_pylist()):
            buckets_of_category.setdefault(category, set()).add(split.bucket)
    assert all(len(b) == 1 for b in buckets_of_category.values())
    assert data.sorted_rows(table.to_arrow()) == data.sorted_rows(data.events(0, 400))
    # bucketed writers continue after the bucket's highest sequence number
    entries = table.live_entries()
    per_bucket: dict[int, list[tuple[int, int]]] = {}
    for e in entries:
        per_bucket.setdefault(e.bucket, []).append((e.file.min_sequence_number, e.file.max_sequence_number))
    for ranges in per_bucket.values():
        ranges.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))


def test_rolling_files_at_target_size(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema, options={"target-file-size": "64 kb"})
    table.append(data.events(0, 150_000))
    files = [e.file for e in table.live_entries()]
    assert len(files) > 3
    assert all(f.file_size < 64 * 1024 * 1.5 for f in files)
    assert sum(f.row_count for f in files) == 150_000
    assert table.to_arrow().num_rows == 150_000


def test_file_stats_match_parquet_content(data: Any, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", data.schema)
    table.append(data.events(10, 90))
    (entry,) = table.live_entries()
    path = Path(warehouse) / "db.db" / "t" / "bucket-0" / entry.file.file_name
    assert entry.file.file_size == os.path.getsize(path)
    assert entry.file.row_count == pq.ParquetFile(path).metadata.num_rows == 90


@pytest.mark.parametrize("dictionary", ["true", "false"])
def test_parquet_dictionary_only_where_it_pays(
    data: Any, catalog: Catalog, warehouse: str, dictionary: str
) -> None:
    options = {"parquet.enable.dictionary": dictionary, "write-only": "true"}
    table = catalog.create_table("db.t", data.schema, options=options)
    table.append(data.events(0, 20_000))
    (entry,) = table.live_entries()
    metadata = pq.ParquetFile(Path(warehouse) / "db.db" / "t" / "bucket-0" / entry.file.file_name).metadata
    group = metadata.row_group(0)
    encodings = {group.column(i).path_in_schema: group.column(i).encodings for i in range(group.num_columns)}
    dictionary_encoded = {name for name, found in encodings.items() if "RLE_DICTIONARY" in found}
    # near-unique columns (id, value) are written plain; low-cardinality ones (dt, category) use a dictionary
    assert dictionary_encoded == ({"dt", "category"} if dictionary == "true" else set())
    assert group.num_rows == 20_000
    assert table.to_arrow().num_rows == 20_000


def test_pandas_and_batch_reader(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema)
    frame = data.events(0, 40).to_pandas()
    table.append(frame)
    out = table.to_pandas()
    assert isinstance(out, pd.DataFrame) and len(out) == 40
    reader = table.to_batches(columns=["id"])
    assert isinstance(reader, pa.RecordBatchReader)
    assert sorted(reader.read_all().column("id").to_pylist()) == list(range(40))


def test_schema_evolution_add_column(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema)
    table.append(data.events(0, 5))
    table = catalog.add_column("db.t", "note", pa.string())
    assert table.schema.id == 1 and table.schema.fields[-1].id == 4
    table.append(data.events(5, 5).append_column("note", pa.array(["x"] * 5)))
    result = data.sorted_rows(table.to_arrow())
    assert [r["note"] for r in result] == [None] * 5 + ["x"] * 5
    assert table.to_arrow(filter=[("note", "is null")]).num_rows == 5
    assert sorted(table.to_arrow(filter=[("note", "=", "x")]).column("id").to_pylist()) == list(range(5, 10))


def test_catalog_databases_and_tables(data: Any, catalog: Catalog, warehouse: str) -> None:
    catalog.create_database("other")
    assert catalog.list_databases() == ["db", "other"]
    catalog.create_table("db.a", data.schema)
    catalog.create_table("db.b", data.schema)
    assert catalog.list_tables("db") == ["a", "b"]
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.a", data.schema)
    assert catalog.create_table("db.a", data.schema, exist_ok=True).identifier == "db.a"
    catalog.drop_table("db.b")
    assert catalog.list_tables("db") == ["a"]
    with pytest.raises(TableNotFoundError):
        catalog.get_table("db.b")
    with pytest.raises(DatabaseNotFoundError):
        catalog.create_table("nope.t", data.schema)
    assert open_table(str(Path(warehouse) / "db.db" / "a")).schema.id == 0


def test_empty_table_reads_empty(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema)
    result = table.to_arrow()
    assert result.num_rows == 0 and result.schema.equals(data.schema)
    assert table.append(data.events(0, 0)) is None
    assert table.snapshots() == []


def test_engine_write_commit_api(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table("db.t", data.schema, partition_keys=["dt"])
    writer = table.new_write()
    writer.write(data.events(0, 10))
    writer.write(data.events(10, 10).to_batches()[0])
    messages = writer.prepare_commit()
    assert {m.bucket for m in messages} == {0} and len(messages) == 3
    commit = table.new_commit("job-1")
    assert commit.commit(messages, commit_identifier=1) == [1]
    # the same identifier again (a replay after a crash) lands nothing, even from a fresh committer
    assert table.new_commit("job-1").commit(messages, commit_identifier=1) == []
    assert table.to_arrow().num_rows == 20
    assert table.latest_snapshot().commit_user == "job-1"  # type: ignore[union-attr]


def test_filter_literals_take_the_column_type(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("amount", pa.decimal128(10, 2))])
    table = catalog.create_table("db.t", schema)
    amounts = [Decimal("899.99"), Decimal("900.00"), Decimal("900.01"), None]
    table.append(pa.table({"id": [1, 2, 3, 4], "amount": amounts}, schema=schema))
    assert table.to_arrow(filter=[("amount", ">", 900)]).column("id").to_pylist() == [3]
    assert table.to_arrow(filter=[("amount", "in", [900, Decimal("899.99")])]).column("id").to_pylist() == [
        1,
        2,
    ]
    with pytest.raises(SchemaError):
        table.to_arrow(filter=[("id", "=", "one")])
    with pytest.raises(SchemaError):
        table.to_arrow(filter=[("nope", "=", 1)])


def test_batch_reader_opens_files_lazily(
    data: Any, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paimon_core.table import TableRead

    table = catalog.create_table("db.t", data.schema, options={"write-only": "true"})  # keep 5 files
    for start in range(0, 50, 10):
        table.append(data.events(start, 10))
    opened: list[str] = []
    real_open = TableRead._open

    def counting_open(self: TableRead, split: Any, path: str) -> Any:
        opened.append(path)
        return real_open(self, split, path)

    monkeypatch.setattr(TableRead, "_open", counting_open)
    reader = table.to_batches()
    first = reader.read_next_batch()
    assert first.num_rows == 10 and len(opened) == 1  # one file open at a time: bounded memory
    assert sum(b.num_rows for b in reader) == 40 and len(opened) == 5


def test_writer_memory_stays_under_write_buffer_size(data: Any, catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", data.schema, partition_keys=["dt"], options={"write-buffer-size": "256 kb"}
    )
    writer = table.new_write()
    limit = 256 * 1024
    for start in range(0, 60_000, 5_000):
        writer.write(data.events(start, 5_000, days=7))
        assert sum(w.buffered_bytes for w in writer._writers.values()) <= limit
    messages = writer.prepare_commit()
    table.new_commit().commit(messages)
    assert table.to_arrow().num_rows == 60_000


def test_catalog_options_that_are_table_options_reach_tables(data: Any, warehouse: str) -> None:
    catalog = Catalog.open(warehouse, **{"commit.max-retries": "3", "s3.endpoint": "http://ignored"})
    catalog.create_database("db")
    created = catalog.create_table("db.t", data.schema)
    assert created.options.get("commit.max-retries") == "3"
    assert "s3.endpoint" not in created.options  # storage settings stay with the storage backend
    assert "commit.max-retries" not in created.schema.options  # dynamic, not stored in the schema
    assert catalog.get_table("db.t", **{"commit.max-retries": "5"}).options.get("commit.max-retries") == "5"


def test_missing_names_get_the_nearest_one(tmp_path: Path) -> None:
    catalog = Catalog.open(str(tmp_path))
    catalog.create_database("sales")
    catalog.create_table("sales.orders", pa.schema([("id", pa.int64())]))
    with pytest.raises(TableNotFoundError) as table_error:
        catalog.get_table("sales.ordres")
    assert str(table_error.value) == "table 'sales.ordres' does not exist; did you mean 'sales.orders'?"
    with pytest.raises(TableNotFoundError) as database_error:
        catalog.get_table("slaes.orders")
    assert str(database_error.value) == (
        "table 'slaes.orders' does not exist: no database 'slaes'; did you mean 'sales'?"
    )
    with pytest.raises(DatabaseNotFoundError, match="did you mean 'sales'"):
        catalog.list_tables("sale")
    with pytest.raises(TableNotFoundError) as far:
        catalog.drop_table("sales.zzz")
    assert str(far.value) == "table 'sales.zzz' does not exist"
