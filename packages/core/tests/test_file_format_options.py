"""Paimon's per-level file options: ``file.compression.per.level`` picks each level's codec,
``file.format.per.level`` each level's format (data files of every format are read by their suffix), and
an unknown format is refused naming it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core import Catalog
from paimon_core.errors import ConfigError
from paimon_core.options import per_level
from paimon_core.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _codecs_by_level(table: Table) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for entry in table.live_entries():
        path = f"{table.bucket_dir(entry.partition, entry.bucket)}/{entry.file.file_name}"
        codec = pq.ParquetFile(path).metadata.row_group(0).column(0).compression
        found.setdefault(entry.file.level, set()).add(codec)
    return found


def test_each_level_is_compressed_with_its_codec(catalog: Catalog) -> None:
    options = {
        "bucket": "1",
        "file.compression": "zstd",
        "file.compression.per.level": "0:snappy",
        "write-only": "true",
    }
    table = catalog.create_table("db.kv", SCHEMA, primary_keys=["id"], options=options)
    table.append(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table.append(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
    assert _codecs_by_level(table) == {0: {"SNAPPY"}}
    summary = table.copy({"compaction.min.file-num": "2"}).compact(parallelism=1)
    assert summary.written_files >= 1  # the two overlapping files merged into a new one below level 0
    codecs = _codecs_by_level(catalog.get_table("db.kv"))
    assert 0 not in codecs and set().union(*codecs.values()) == {"ZSTD"}
    assert catalog.get_table("db.kv").to_arrow().sort_by("id").column("v").to_pylist() == ["a", "B", "c"]


def _formats_by_level(table: Table) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for entry in table.live_entries():
        found.setdefault(entry.file.level, set()).add(entry.file.file_name.rsplit(".", 1)[-1])
    return found


def test_each_level_is_written_in_its_format_and_the_levels_read_back_together(catalog: Catalog) -> None:
    options = {"bucket": "1", "file.format": "orc", "file.format.per.level": "0:avro", "write-only": "true"}
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options=options)
    table.append(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table.append(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
    assert _formats_by_level(table) == {0: {"avro"}}
    table.copy({"compaction.min.file-num": "2"}).compact(parallelism=1)
    table.append(pa.table({"id": [3, 4], "v": ["C", "d"]}, schema=SCHEMA))
    formats = _formats_by_level(catalog.get_table("db.t"))
    assert formats[0] == {"avro"} and set().union(*(v for k, v in formats.items() if k > 0)) == {"orc"}
    rows = catalog.get_table("db.t").to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "C"}, {"id": 4, "v": "d"}]


def test_an_unknown_format_is_refused_naming_it(catalog: Catalog) -> None:
    with pytest.raises(ConfigError, match=r"'lance' for option 'file\.format'"):
        catalog.create_table("db.a", SCHEMA, options={"file.format": "lance"})
    with pytest.raises(ConfigError, match=r"'0:lance' for option 'file\.format\.per\.level'"):
        catalog.create_table(
            "db.b", SCHEMA, primary_keys=["id"], options={"file.format.per.level": "0:lance"}
        )
    with pytest.raises(ConfigError, match=r"'lance' for option 'changelog-file\.format'"):
        catalog.create_table("db.c", SCHEMA, primary_keys=["id"], options={"changelog-file.format": "lance"})


def test_per_level_maps_parse_as_paimon_writes_them() -> None:
    assert per_level("0:avro, 3:PARQUET") == {0: "avro", 3: "parquet"}
    assert per_level(None) == {}
    with pytest.raises(ValueError, match="not level:value"):
        per_level("avro")


def test_a_malformed_per_level_map_is_refused_at_create(catalog: Catalog) -> None:
    with pytest.raises(ConfigError, match=r"file\.compression\.per\.level"):
        catalog.create_table("db.bad", SCHEMA, options={"file.compression.per.level": "zstd"})
