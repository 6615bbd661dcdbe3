"""Tables with file indexes shared with pypaimon 2.1.0, which carries indexes in its manifests but neither
writes nor uses them: it reads our indexed files (embedded or in ``.index`` files) whole, and the files it
adds to an indexed table (without indexes) are never skipped by a filter here, until a compaction rewrites
them with indexes."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import compact_table

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
OPTIONS = {"bucket": "-1", "write-only": "true", "file-index.bitmap.columns": "id,name"}


def _rows(start: int, step: int, count: int) -> pa.Table:
    ids = list(range(start, start + step * count, step))
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids]}, schema=SCHEMA)


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda row: row["id"])


@pytest.mark.parametrize("threshold", ["8 kb", "1 b"], ids=["embedded", "index-files"])
def test_indexed_tables_shared_with_pypaimon(ours: Catalog, pypaimon: Any, threshold: str) -> None:
    table = ours.create_table(
        "db.t", SCHEMA, options={**OPTIONS, "file-index.in-manifest-threshold": threshold}
    )
    table.append(_rows(0, 2, 20))  # even ids 0..38
    even = {e.file.file_name for e in table.live_entries()}
    table.append(_rows(1, 2, 20))  # odd ids 1..39
    (odd,) = {e.file.file_name for e in table.live_entries()} - even
    assert all(e.file.embedded_index or e.file.extra_files for e in table.live_entries())
    assert _sorted(pypaimon.read("db.t")) == _sorted(pa.concat_tables([_rows(0, 2, 20), _rows(1, 2, 20)]))
    pypaimon.append("db.t", _rows(100, 3, 10))  # no index: 100, 103, ..., 127
    table = ours.get_table("db.t")
    assert sum(1 for e in table.live_entries() if not e.file.embedded_index and not e.file.extra_files) == 1

    def planned_files(filter: Any) -> set[str]:
        return {f.file_name for split in table.scan(filter).plan() for f in split.files}

    unindexed = {e.file.file_name for e in table.live_entries() if not e.file.embedded_index}
    unindexed -= {e.file.file_name for e in table.live_entries() if e.file.extra_files}
    # the odd ids' file, and pypaimon's (no index; its statistics do not rule 13 out either)
    assert planned_files([("id", "=", 13)]) == {odd} | unindexed
    assert planned_files([("id", "=", 113)]) == unindexed  # pypaimon's, holding no 113: no index to tell
    assert table.to_arrow(filter=[("id", "=", 103)]).column("name").to_pylist() == ["n103"]
    compact_table(table.copy({"compaction.min.file-num": "2"}), progress=False)
    table = ours.get_table("db.t")
    assert all(e.file.embedded_index or e.file.extra_files for e in table.live_entries())
    assert planned_files([("id", "=", 113)]) == set()
    expected = pa.concat_tables([_rows(0, 2, 20), _rows(1, 2, 20), _rows(100, 3, 10)])
    assert _sorted(pypaimon.read("db.t")) == _sorted(expected) == _sorted(table.to_arrow())
