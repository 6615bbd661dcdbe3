"""Tables written in ORC and Avro (``file.format``, ``file.format.per.level``, ``changelog-file.format``):
what we write reads back as written, and the same writes into a Parquet table are the oracle for merged
reads and value statistics (whose min/max Parquet takes from its footer, ORC and Avro from the data)."""

from __future__ import annotations

import datetime as dt
import io
import tempfile
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.errors import ConfigError, SchemaError
from paimon_core.formats import RECORD_NAME
from paimon_core.stats import decode_stats
from paimon_core.table import KeyValueTableWrite, Table
from paimon_testing.strategies import TableSpec, arrow_tables, table_specs

FORMATS = ["orc", "avro"]
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda row: row["id"])


def _stats_by_file_group(table: Table) -> dict[tuple[bytes, int, int], dict[str, Any]]:
    """Decoded value stats of each file, keyed by (partition, bucket, first sequence number)."""
    fields = table.schema.fields
    return {
        (e.partition, e.bucket, e.file.min_sequence_number): decode_stats(
            e.file.value_stats, e.file.value_stats_cols, fields
        )
        for e in table.live_entries()
    }


def _suffixes(table: Table) -> set[str]:
    return {e.file.file_name.rsplit(".", 1)[-1] for e in table.live_entries()}


_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking tables of several files takes minutes
)


def _ns(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.timestamp("ns", tz=t.tz)
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_ns(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_ns(t.key_type)), t.item_field.with_type(_ns(t.item_type)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_ns(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _fits_nanoseconds(rows: pa.Table) -> bool:
    """Whether every timestamp of ``rows`` fits Arrow's nanoseconds (all that its ORC reader reads back)."""
    try:
        rows.cast(pa.schema([f.with_type(_ns(f.type)) for f in rows.schema]))
    except pa.ArrowInvalid:
        return False
    return True


@_SETTINGS
@given(spec=table_specs(max_columns=5), data=st.data())
def test_append_tables_in_each_format_read_back_and_have_parquet_s_statistics(
    spec: TableSpec, data: st.DataObject
) -> None:
    rows = data.draw(arrow_tables(spec.schema, partition_keys=spec.partition_keys, max_rows=30))
    with tempfile.TemporaryDirectory() as root:
        catalog = Catalog.open(root, create=True)
        catalog.create_database("db")
        tables = {}
        formats = ["parquet", *FORMATS]
        for fmt in list(formats):
            table = catalog.create_table(
                f"db.{fmt}",
                spec.schema,
                partition_keys=list(spec.partition_keys),
                options={"file.format": fmt},
            )
            if fmt == "orc" and not _fits_nanoseconds(rows):
                with pytest.raises(SchemaError, match="ORC data files written here cannot hold"):
                    table.append(rows)
                assert table.latest_snapshot() is None
                formats.remove("orc")
                continue
            table.append(rows)
            tables[fmt] = catalog.get_table(f"db.{fmt}")
        expected = _rows(rows)
        oracle = _stats_by_file_group(tables["parquet"])
        for fmt in formats[1:]:
            assert _rows(tables[fmt].to_arrow()) == expected, fmt
            if rows.num_rows:
                assert _suffixes(tables[fmt]) == {fmt}
            assert _stats_by_file_group(tables[fmt]) == oracle, fmt


@_SETTINGS
@given(spec=table_specs(max_columns=4, max_partition_keys=0), data=st.data())
def test_primary_key_tables_in_each_format_merge_and_compact_as_parquet_ones(
    spec: TableSpec, data: st.DataObject
) -> None:
    first = data.draw(arrow_tables(spec.schema, max_rows=20))
    second = data.draw(arrow_tables(spec.schema, max_rows=20, first_id=first.num_rows // 2))
    with tempfile.TemporaryDirectory() as root:
        catalog = Catalog.open(root, create=True)
        catalog.create_database("db")
        reads = {}
        formats = ["parquet", *FORMATS]
        if not (_fits_nanoseconds(first) and _fits_nanoseconds(second)):
            formats.remove("orc")  # refused, as the append table test shows
        for fmt in formats:
            options = {"file.format": fmt, "bucket": "1", "write-only": "true"}
            table = catalog.create_table(f"db.{fmt}", spec.schema, primary_keys=["id"], options=options)
            table.append(first)
            table.append(second)
            merged = _rows(catalog.get_table(f"db.{fmt}").to_arrow())
            table.copy({"compaction.min.file-num": "2"}).compact(parallelism=1)
            compacted = catalog.get_table(f"db.{fmt}")
            assert _rows(compacted.to_arrow()) == merged
            if first.num_rows or second.num_rows:
                assert _suffixes(compacted) == {fmt}
            reads[fmt] = merged
        model = {row["id"]: row for row in [*first.to_pylist(), *second.to_pylist()]}
        assert reads["parquet"] == sorted(model.values(), key=lambda row: row["id"])
        for fmt in formats[1:]:
            assert reads[fmt] == reads["parquet"], fmt


def test_changelog_files_take_changelog_file_format(tmp_path: Path) -> None:
    catalog = Catalog.open(str(tmp_path), create=True)
    catalog.create_database("db")
    options = {"bucket": "1", "changelog-producer": "input", "changelog-file.format": "avro"}
    table = catalog.create_table("db.c", SCHEMA, primary_keys=["id"], options=options)
    writer = table.new_write()
    assert isinstance(writer, KeyValueTableWrite)
    writer.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    writer.delete(pa.table({"id": [1]}, schema=pa.schema([SCHEMA.field("id")])))
    table.new_commit().commit(writer.prepare_commit())
    writer.close()
    changelog = [p.name for p in Path(table.path).rglob("changelog-*")]
    data = [p.name for p in Path(table.path).rglob("data-*")]
    assert changelog and all(n.endswith(".avro") for n in changelog)
    assert data and all(n.endswith(".parquet") for n in data)
    reading = table.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    changes = [(r["rowkind"], r["id"]) for b in reading.stream(follow=False) for r in b.to_pylist()]
    assert sorted(changes) == [("+I", 1), ("+I", 2), ("-D", 1)]


def _only_file(table: Table) -> bytes:
    [entry] = table.live_entries()
    return Path(table.bucket_dir(entry.partition, entry.bucket), entry.file.file_name).read_bytes()


@pytest.mark.parametrize(
    ("fmt", "options", "codec"),
    [
        ("orc", {}, "ZSTD"),
        ("orc", {"file.compression": "snappy"}, "SNAPPY"),
        ("orc", {"file.compression": "none"}, "UNCOMPRESSED"),
        ("avro", {}, "zstandard"),
        ("avro", {"file.compression": "deflate"}, "deflate"),
        ("avro", {"file.compression": "snappy"}, "snappy"),  # with paimon-core[snappy] (cramjam)
        ("avro", {"file.compression.per.level": "0:none"}, "null"),
    ],
)
def test_files_are_compressed_as_file_compression_says(
    catalog: Catalog, fmt: str, options: dict[str, str], codec: str
) -> None:
    table = catalog.create_table("db.t", SCHEMA, options={"file.format": fmt, **options})
    table.append(pa.table({"id": [1, 2], "v": ["a", None]}, schema=SCHEMA))
    data = _only_file(table)
    if fmt == "orc":
        assert orc.ORCFile(pa.BufferReader(data)).compression == codec
    else:
        assert fastavro.reader(io.BytesIO(data)).codec == codec
    assert table.to_arrow().column("id").to_pylist() == [1, 2]


@pytest.mark.parametrize(("fmt", "codec"), [("avro", "gzip"), ("avro", "lz4"), ("orc", "brotli")])
def test_a_codec_the_format_has_not_is_refused_before_any_file(
    catalog: Catalog, fmt: str, codec: str
) -> None:
    table = catalog.create_table("db.t", SCHEMA, options={"file.format": fmt, "file.compression": codec})
    with pytest.raises(ConfigError, match=rf"file\.compression = {codec} cannot compress {fmt.upper()}|"
                       rf"file\.compression = {codec} cannot compress {fmt.capitalize()}"):  # fmt: skip
        table.append(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert table.latest_snapshot() is None
    assert not list(Path(table.path).rglob("data-*"))


def test_an_avro_level_refuses_nanosecond_timestamps_naming_the_column(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("at", pa.timestamp("ns"))])
    table = catalog.create_table(
        "db.t", schema, primary_keys=["id"], options={"bucket": "1", "file.format.per.level": "0:avro"}
    )
    with pytest.raises(SchemaError, match=r"column at .*Avro"):
        table.append(pa.table({"id": [1], "at": [0]}, schema=schema))
    assert not list(Path(table.path).rglob("data-*"))
    orc_table = catalog.create_table("db.o", schema, options={"file.format": "orc"})
    orc_table.append(pa.table({"id": [1], "at": [5]}, schema=schema))
    assert orc_table.to_arrow().column("at").to_pylist() == pa.array([5], pa.timestamp("ns")).to_pylist()


def test_avro_files_carry_java_s_schema_conventions(catalog: Catalog) -> None:
    """The facts of Java's ``AvroSchemaConverter``: the row record in a union after null, nullable fields
    null first with a null default, and the key-value layout's system fields of a primary-key table."""
    table = catalog.create_table(
        "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "file.format": "avro"}
    )
    table.append(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    schema = fastavro.reader(io.BytesIO(_only_file(table))).writer_schema
    assert isinstance(schema, list) and schema[0] == "null"
    record = schema[1]
    assert record["type"] == "record" and record["name"] == RECORD_NAME
    fields = {f["name"]: f for f in record["fields"]}
    assert list(fields) == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "v"]
    assert fields["_SEQUENCE_NUMBER"]["type"] == "long" and fields["_VALUE_KIND"]["type"] == "int"
    assert fields["v"]["type"] == ["null", "string"] and fields["v"]["default"] is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_temporal_precisions_round_trip(catalog: Catalog, fmt: str) -> None:
    """TIMESTAMP(0) (Avro keeps it in milliseconds) and, in ORC, TIME(6), stored as Java does: an INT of
    milliseconds."""
    fields = [pa.field("id", pa.int64(), nullable=False), pa.field("ts0", pa.timestamp("s"))]
    fields += [pa.field("ts0s", pa.list_(pa.timestamp("s")))]
    if fmt == "orc":
        fields += [pa.field("t6", pa.time64("us"))]
    schema = pa.schema(fields)
    at = dt.datetime(2001, 2, 3, 4, 5, 6)
    values: dict[str, list[Any]] = {"id": [1, 2], "ts0": [at, None], "ts0s": [[at, None], None]}
    if fmt == "orc":
        values["t6"] = [dt.time(23, 59, 59, 999_000), None]
    table = catalog.create_table("db.t", schema, options={"file.format": fmt})
    table.append(pa.table(values, schema=schema))
    read = table.to_arrow().sort_by("id")
    assert read.to_pylist() == pa.table(values, schema=schema).to_pylist()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_bucketed_append_table_compacts_into_its_format(catalog: Catalog, fmt: str) -> None:
    options = {"file.format": fmt, "bucket": "2", "bucket-key": "id", "write-only": "true"}
    table = catalog.create_table("db.t", SCHEMA, options=options)
    written = []
    for start in range(0, 40, 10):
        rows = pa.table(
            {"id": list(range(start, start + 10)), "v": [f"r{i}" for i in range(10)]}, schema=SCHEMA
        )
        table.append(rows)
        written += rows.to_pylist()
    before = {e.file.file_name for e in table.live_entries()}
    table.copy({"compaction.min.file-num": "2"}).compact(parallelism=1)
    after = catalog.get_table("db.t")
    names = {e.file.file_name for e in after.live_entries()}
    assert names and not names & before and _suffixes(after) == {fmt}
    assert _rows(after.to_arrow()) == sorted(written, key=lambda row: row["id"])
