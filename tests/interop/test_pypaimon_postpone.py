"""A postpone-bucket table (``bucket = -2``) written by pypaimon 2.1.0, opened here (marker ``interop``).

Java Paimon (1.1+) writes a postpone table's new files into ``bucket-postpone/`` and keeps them invisible
to reads until a compaction moves them into real buckets. paimon-core reads such a table as that says (its
postponed rows are not read), keeps its files through maintenance, and refuses to write or compact it,
naming the feature, instead of failing on a file "missing from storage" under ``bucket--2/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.errors import ConfigError
from paimon_core.maintenance import expire_snapshots, remove_orphan_files
from paimon_core.storage import join_path

pytestmark = pytest.mark.interop

FAR_FUTURE_MS = 32503680000000  # 3000-01-01
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


def test_a_postpone_bucket_table_reads_without_its_postponed_rows_and_refuses_writes(
    ours: Catalog, pypaimon: Any, warehouse: str
) -> None:
    pypaimon.create_table("db.pp", SCHEMA, primary_keys=["id"], options={"bucket": "-2"})
    pypaimon.append("db.pp", pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=SCHEMA))
    pypaimon.append("db.pp", pa.table({"id": [2, 4], "name": ["B", "d"]}, schema=SCHEMA))
    table = ours.get_table("db.pp")
    entries = table.live_entries()
    assert entries and {e.bucket for e in entries} == {-2}
    for entry in entries:
        path = join_path(table.bucket_dir(entry.partition, entry.bucket), entry.file.file_name)
        assert "/bucket-postpone/" in path and Path(path).is_file()
    assert table.to_arrow().num_rows == 0  # nothing was compacted into a real bucket yet
    assert pypaimon.read("db.pp").num_rows == table.to_arrow().num_rows
    with pytest.raises(ConfigError, match=r"postpone-bucket table \(bucket = -2\)"):
        table.append(pa.table({"id": [5], "name": ["e"]}, schema=SCHEMA))
    with pytest.raises(ConfigError, match="cannot compact"):
        table.compact()
    far_future = "2999-01-01 00:00:00"  # every file counts as old enough: only references keep one
    assert remove_orphan_files(table, older_than=far_future, now_millis=FAR_FUTURE_MS).deleted == ()
    expire_snapshots(table, retain_max=1, retain_min=1)
    assert all(Path(join_path(table.bucket_dir(e.partition, e.bucket), e.file.file_name)).is_file()
               for e in ours.get_table("db.pp").live_entries())  # fmt: skip
