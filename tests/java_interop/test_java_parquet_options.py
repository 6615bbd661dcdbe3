"""Java Apache Paimon 0.9 reads the files our Parquet options shape (marker ``java_interop``).

Tables written with small row groups (``parquet.block.size``), small data pages, v2 data page headers and
a column's dictionary turned off (``parquet.enable.dictionary#<column>``), each with a page index: Java's
batch read, whole and with filters pushed into its scan, gives the rows our read gives, whose filters skip
row groups.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core import Catalog
from paimon_core.storage import join_path

pytestmark = pytest.mark.java_interop

SCHEMA = pa.schema(
    [pa.field("id", pa.int32(), nullable=False), pa.field("name", pa.string()), pa.field("v", pa.float64())]
)
LAYOUTS = {
    "small row groups": {"parquet.block.size": "16 kb"},
    "small v2 pages": {
        "parquet.block.size": "16 kb",
        "parquet.page.size": "2 kb",
        "parquet.writer.version": "v2",
        "parquet.enable.dictionary#name": "false",
    },
}


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_java_reads_files_our_parquet_options_shape(
    ours: Catalog, java: Any, primary_key: bool, layout: str
) -> None:
    options = {**LAYOUTS[layout], **({"bucket": "1"} if primary_key else {})}
    ours.create_table("db.t", SCHEMA, primary_keys=["id"] if primary_key else (), options=options)
    ids = list(range(20_000))
    names = [None if i % 7 == 0 else f"n{i // 100:04d}" for i in ids]
    table = ours.get_table("db.t")
    table.append(pa.table({"id": ids, "name": names, "v": [i / 3 for i in ids]}, schema=SCHEMA))
    for entry in table.live_entries():
        path = join_path(table.bucket_dir(entry.partition, entry.bucket), entry.file.file_name)
        meta = pq.ParquetFile(path).metadata
        assert meta.num_row_groups > 10
        # Page indexes too: parquet-java's reader may filter pages by them when a filter is pushed.
        assert all(meta.row_group(g).column(0).has_column_index for g in range(meta.num_row_groups))

    def our_rows(where: tuple[str, str, Any] | None = None) -> list[tuple[Any, ...]]:
        read = table.to_arrow(filter=[where] if where else None)
        return sorted((tuple(row.values()) for row in read.to_pylist()), key=lambda row: row[0])

    assert java.read("t") == our_rows()
    for where in (("id", ">=", 12_345), ("name", "=", "n0042"), ("v", "<", 100.0)):
        assert java.read("t", where) == our_rows(where), where
