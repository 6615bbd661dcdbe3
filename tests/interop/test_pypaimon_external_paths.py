"""External data paths shared with pypaimon 2.1.0 (marker ``interop``): a table whose files pypaimon wrote
under ``data-file.external-paths`` reads equal here and survives our maintenance; a table we write so reads
equal in pypaimon. Both record each file's full path in the manifest's ``_EXTERNAL_PATH``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.maintenance import expire_snapshots, remove_orphan_files

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string()), pa.field("name", pa.string())]
)
LATER_MS = 2 * 86_400_000


def _rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {"id": ids, "dt": [f"d{i % 2}" for i in ids], "name": [f"n{i}" for i in ids]}, schema=SCHEMA
    )


def _sorted(rows: pa.Table) -> list[dict[str, Any]]:
    return sorted(rows.select(SCHEMA.names).to_pylist(), key=lambda r: r["id"])


def _roots(tmp_path: Path) -> list[str]:
    return [f"file://{tmp_path}/ext-a", f"file://{tmp_path}/ext-b"]


def _options(roots: list[str], strategy: str = "round-robin") -> dict[str, str]:
    return {"data-file.external-paths": ",".join(roots), "data-file.external-paths.strategy": strategy}


def _under_roots(entries: list[Any], roots: list[str]) -> None:
    assert entries
    for entry in entries:
        path = entry.file.external_path
        assert path is not None and path.endswith("/" + entry.file.file_name), path
        local = path.split(":", 1)[1].lstrip("/")
        assert any(local.startswith(r.split(":", 1)[1].lstrip("/")) for r in roots), path
        assert Path("/" + local).is_file()


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_we_read_and_maintain_what_pypaimon_writes_under_external_paths(
    ours: Catalog, pypaimon: Any, tmp_path: Path, primary_key: bool
) -> None:
    roots = _roots(tmp_path)
    options = _options(roots)
    if primary_key:
        options["bucket"] = "2"
    keys = ["dt", "id"] if primary_key else []
    pypaimon.create_table("db.t", SCHEMA, partition_keys=["dt"], options=options, primary_keys=keys)
    pypaimon.append("db.t", _rows(0, 20))
    pypaimon.append("db.t", _rows(10, 20))
    table = ours.get_table("db.t")
    _under_roots(table.live_entries(), roots)
    assert _sorted(table.to_arrow()) == _sorted(pypaimon.read("db.t"))
    # our writes and maintenance on pypaimon's table: pypaimon reads the result equal
    table.append(_rows(100, 5))
    if primary_key:
        compact_table(table)
    expire_snapshots(table, retain_min=1, retain_max=1)
    live = table.live_entries()
    _under_roots(live, roots)
    assert remove_orphan_files(table, now_millis=int(time.time() * 1000) + LATER_MS).deleted == ()
    expected = _sorted(table.to_arrow())
    assert len(expected) == (35 if primary_key else 45)
    assert _sorted(pypaimon.read("db.t")) == expected


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject", "specific-fs"])
def test_pypaimon_reads_what_we_write_under_external_paths(
    ours: Catalog, pypaimon: Any, tmp_path: Path, strategy: str
) -> None:
    roots = _roots(tmp_path)
    options = _options(roots, strategy)
    if strategy == "specific-fs":
        options["data-file.external-paths.specific-fs"] = "file"
    options["data-file.path-directory"] = "data"
    table = ours.create_table("db.t", SCHEMA, partition_keys=["dt"], options=options)
    table.append(_rows(0, 30))
    table.append(_rows(30, 10))
    entries = table.live_entries()
    _under_roots(entries, roots)
    assert all("/data/dt=" in (e.file.external_path or "") for e in entries)
    assert _sorted(pypaimon.read("db.t")) == _sorted(table.to_arrow()) == _sorted(_rows(0, 40))


def test_pypaimon_reads_our_primary_key_table_under_external_paths(
    ours: Catalog, pypaimon: Any, tmp_path: Path
) -> None:
    roots = _roots(tmp_path)
    table = ours.create_table(
        "db.t",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", **_options(roots)},
    )
    table.append(_rows(0, 20))
    table.append(_rows(10, 20))
    compact_table(table)
    _under_roots(table.live_entries(), roots)
    assert _sorted(pypaimon.read("db.t")) == _sorted(table.to_arrow()) == _sorted(_rows(0, 30))
