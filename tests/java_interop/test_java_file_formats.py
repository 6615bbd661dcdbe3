"""ORC and Avro tables written by Java Apache Paimon 0.9 (ORC: Paimon's default file format before 0.9;
Avro: its advice for level 0 of write-heavy tables), read here (marker ``java_interop``): append and
primary-key tables, with filters, compared with Java's own reads; writing them is refused."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.errors import ConfigError

pytestmark = pytest.mark.java_interop

COLUMNS = [("id", "BIGINT NOT NULL"), ("name", "STRING"), ("score", "DOUBLE"), ("ok", "BOOLEAN")]


def _rows(start: int, count: int, version: int = 0) -> list[tuple[Any, ...]]:
    return [
        (i, None if i % 7 == 0 else f"n{i}-{version}", i / 4 + version, i % 2 == 0)
        for i in range(start, start + count)
    ]


def _ours(catalog: Catalog, name: str, **read: Any) -> list[tuple[Any, ...]]:
    rows = catalog.get_table(name).to_arrow(**read).to_pylist()
    return sorted((tuple(row.values()) for row in rows), key=lambda row: row[0])


FORMATS = pytest.mark.parametrize("fmt", ["orc", "avro"])


@FORMATS
def test_an_append_table_written_by_java_reads_as_java_reads_it(ours: Catalog, java: Any, fmt: str) -> None:
    java.create_table("logs", COLUMNS, options={"file.format": fmt, "bucket": "-1"})
    java.write("logs", _rows(0, 500))
    java.write("logs", _rows(500, 300))
    table = ours.get_table("db.logs")
    assert {e.file.file_name.rsplit(".", 1)[-1] for e in table.live_entries()} == {fmt}
    assert _ours(ours, "db.logs") == java.read("logs") == sorted(_rows(0, 800))
    where = ("score", ">=", 100.0)
    expected = java.read("logs", where)
    assert _ours(ours, "db.logs", filter=[where]) == expected and len(expected) == 400
    batches = list(table.to_batches(columns=["id"]))
    assert sum(b.num_rows for b in batches) == 800


@FORMATS
@pytest.mark.parametrize("bucket", ["2", "-1"], ids=["fixed-bucket", "dynamic-bucket"])
def test_a_primary_key_table_written_by_java_merges_as_java_merges_it(
    ours: Catalog, java: Any, bucket: str, fmt: str
) -> None:
    java.create_table(
        "kv",
        COLUMNS,
        primary_keys=["id"],
        options={"file.format": fmt, "bucket": bucket, "num-sorted-run.compaction-trigger": "10"},
    )
    java.write("kv", _rows(0, 400, 0))
    java.write("kv", _rows(200, 400, 1))
    java.write("kv", [_rows(10, 1)[0], _rows(450, 1)[0]], kinds="-D")
    expected = java.read("kv")
    assert len(expected) == 598
    assert _ours(ours, "db.kv") == expected
    assert _ours(ours, "db.kv", filter=[("id", ">=", 300)]) == [r for r in expected if r[0] >= 300]
    java.full_compact("kv")
    assert _ours(ours, "db.kv") == java.read("kv") == expected


def test_writing_into_an_orc_table_is_refused_naming_the_format(ours: Catalog, java: Any) -> None:
    import pyarrow as pa

    java.create_table("logs", COLUMNS, options={"file.format": "orc", "bucket": "-1"})
    table = ours.get_table("db.logs")
    with pytest.raises(ConfigError, match=r"file\.format = orc"):
        table.append(
            pa.table({"id": [1], "name": ["a"], "score": [1.0], "ok": [True]}, schema=table.arrow_schema)
        )
    assert java.read("logs") == []


def test_a_table_with_a_format_per_level_reads_every_level(ours: Catalog, java: Any) -> None:
    """``file.format.per.level = 0:avro``: Java writes level 0 in Avro, whatever it compacts into."""
    options = {"file.format.per.level": "0:avro", "bucket": "1", "num-sorted-run.compaction-trigger": "10"}
    java.create_table("mixed", COLUMNS, primary_keys=["id"], options=options)
    java.write("mixed", _rows(0, 300, 0))
    java.full_compact("mixed")
    java.write("mixed", _rows(100, 100, 1))
    table = ours.get_table("db.mixed")
    levels = {e.file.level: e.file.file_name.rsplit(".", 1)[-1] for e in table.live_entries()}
    assert levels[0] == "avro" and max(levels) > 0  # level 0 in Avro, the compacted run below it
    assert _ours(ours, "db.mixed") == java.read("mixed")
    with pytest.raises(ConfigError, match=r"file\.format\.per\.level"):
        table.append(
            pa.table({"id": [1], "name": ["a"], "score": [1.0], "ok": [True]}, schema=table.arrow_schema)
        )
