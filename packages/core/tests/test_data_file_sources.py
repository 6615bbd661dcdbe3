"""What Arrow is handed to read a data file: a local path, or memory Arrow owns — never a Python file object.

Over a Python file object Arrow's pool threads release Python buffers, and one that does so while the
interpreter finalizes aborts the process after its work is done ("terminate called without an active
exception", seen from ``paimon-py read`` on S3). The abort depends on thread timing, so these tests check the
cause: what reaches ``pyarrow.parquet.ParquetFile`` on every kind of store and file.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core import Catalog
from paimon_core.storage import clear_memory_store

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture()
def sources(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every source a data file is opened from, while the real ``ParquetFile`` reads it."""
    seen: list[Any] = []
    real = pq.ParquetFile

    def recording(source: Any, *args: Any, **kwargs: Any) -> pq.ParquetFile:
        seen.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", recording)
    return seen


@pytest.fixture()
def memory_warehouse() -> Iterator[str]:
    root = f"memory://sources-{uuid.uuid4().hex}"
    yield root
    clear_memory_store(root)


def _rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "v": [f"v{i}" for i in range(n)]}, schema=SCHEMA)


@pytest.mark.parametrize("kind", ["append", "primary-key"])
def test_a_store_arrow_cannot_read_hands_it_memory(
    memory_warehouse: str, sources: list[Any], kind: str
) -> None:
    catalog = Catalog.open(memory_warehouse, create=True)
    catalog.create_database("db")
    keys = ["id"] if kind == "primary-key" else []
    table = catalog.create_table("db.t", SCHEMA, primary_keys=keys, options={"bucket": "2"} if keys else {})
    table.append(_rows(100))
    table.append(_rows(50, start=75))

    got = table.to_arrow().sort_by("id")
    batches = list(table.to_batches())

    expected = 150 if kind == "append" else 125
    assert got.num_rows == expected and sum(b.num_rows for b in batches) == expected
    assert sources, "no data file was opened"
    assert all(isinstance(s, pa.BufferReader) for s in sources), {type(s).__name__ for s in sources}


def test_local_files_are_read_by_arrow_from_their_path(tmp_path: Path, sources: list[Any]) -> None:
    catalog = Catalog.open(str(tmp_path / "warehouse"), create=True)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(10))

    assert table.to_arrow().num_rows == 10
    assert sources and all(isinstance(s, str) for s in sources), {type(s).__name__ for s in sources}


NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("point", pa.struct([("x", pa.int32()), ("tags", pa.list_(pa.string()))])),
        ("attributes", pa.map_(pa.string(), pa.float64())),
        ("name", pa.string()),
    ]
)


def test_a_sparse_copy_reads_every_projection_of_nested_columns(
    memory_warehouse: str, tmp_path: Path
) -> None:
    rows = pa.table(
        {
            "id": list(range(3000)),
            "point": [{"x": i, "tags": [f"t{i}"] * (i % 3)} if i % 7 else None for i in range(3000)],
            "attributes": [[("a", i / 2), ("b", -i)] if i % 5 else [] for i in range(3000)],
            "name": [f"n{i}" for i in range(3000)],
        },
        schema=NESTED,
    )
    tables = []
    for root in (memory_warehouse, str(tmp_path / "warehouse")):
        catalog = Catalog.open(root, create=True)
        catalog.create_database("db")
        table = catalog.create_table("db.t", NESTED, options={"parquet.block.size": "16 kb"})
        table.append(rows)
        tables.append(table)
    remote, local = tables
    for columns in (
        ["point", "id"],
        ["attributes", "id"],
        ["id", "name"],
        ["point", "name", "id"],
        NESTED.names,
    ):
        expected = local.to_arrow(columns=columns).sort_by("id")
        assert remote.to_arrow(columns=columns).sort_by("id").equals(expected), columns
    assert remote.to_arrow(columns=["point"]).num_rows == 3000  # the nested column alone
    selective = remote.to_arrow(filter=[("id", ">=", 2990)], columns=["point", "id"]).sort_by("id")
    assert selective.equals(rows.select(["point", "id"]).slice(2990))


# --- the format by the file's suffix ---------------------------------------------------------------------------


def test_an_orc_data_file_reads_alike_from_a_path_bytes_or_a_remote_file(tmp_path: Path) -> None:
    import io

    import pyarrow.orc as orc

    from paimon_core.formats import OrcDataFile, open_data_file

    data = pa.table({"id": list(range(5000)), "v": [f"v{i}" for i in range(5000)]}, schema=SCHEMA)
    path = tmp_path / "data-1-0.orc"
    orc.write_table(data, str(path), stripe_size=16 * 1024)
    raw = path.read_bytes()
    for source in (str(path), raw, io.BytesIO(raw)):
        opened = open_data_file(path.name, source)
        assert isinstance(opened, OrcDataFile) and not opened.prunable
        assert opened.read(["id", "v"]).to_pydict() == data.to_pydict()
        batches = list(opened.iter_batches(batch_size=700, columns=["v"]))
        assert max(b.num_rows for b in batches) <= 700
        assert pa.Table.from_batches(batches).column("v").equals(data.column("v"))
        opened.close()
    assert orc.ORCFile(str(path)).nstripes > 1  # the batches above crossed stripes


def test_a_data_file_in_a_format_not_read_here_is_refused_naming_it() -> None:
    import io

    from paimon_core.errors import DataFileError
    from paimon_core.formats import open_data_file

    remote = io.BytesIO(b"LANC")
    with pytest.raises(
        DataFileError, match=r"data-1-0\.lance is in the 'lance' format, which paimon-core does not read"
    ):
        open_data_file("data-1-0.lance", remote)
    assert remote.closed


def test_an_avro_data_file_reads_its_columns_and_refuses_bytes_that_are_not_avro(tmp_path: Path) -> None:
    import io

    import fastavro

    from paimon_core.formats import AvroDataFile, open_data_file

    schema = {"type": "record", "name": "record", "fields": [
        {"name": "id", "type": "long"}, {"name": "v", "type": ["null", "string"]}]}  # fmt: skip
    records = [{"id": i, "v": None if i % 3 == 0 else f"v{i}"} for i in range(1000)]
    buffer = io.BytesIO()
    fastavro.writer(buffer, schema, records, sync_interval=2000)
    raw = buffer.getvalue()
    path = tmp_path / "data-1-0.avro"
    path.write_bytes(raw)
    for source in (str(path), raw, io.BytesIO(raw)):
        opened = open_data_file(path.name, source)
        assert isinstance(opened, AvroDataFile)
        assert opened.read(["v", "id"]).to_pylist() == [{"v": r["v"], "id": r["id"]} for r in records]
        assert [b.num_rows for b in opened.iter_batches(batch_size=400, columns=["id"])] == [400, 400, 200]
    with pytest.raises(OSError, match="not an Avro object container file"):
        open_data_file("data-2-0.avro", b"PAR1 not avro")
