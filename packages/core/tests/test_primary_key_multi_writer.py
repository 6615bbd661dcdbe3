"""Paimon's "Multiple Writers" topology: several processes write one partial-update table with
``write-only``, each filling its own columns, while a dedicated compaction job runs beside them.

Each writer's columns form a sequence group ordered by the writer's own version column, as Paimon's
partial-update page advises for several streams: the system sequence numbers of independent writers
overlap, so only a user sequence orders one writer's versions once compaction merged rows of all writers.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.compact import compact_table

COLUMNS = ("a", "b", "c")
SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False)]
    + [pa.field(name, pa.int64()) for column in COLUMNS for name in (column, f"{column}_version")]
)
KEYS = 200
ROUNDS = 6


# Run as separate interpreters (the test module itself is not importable by a spawned child).
_WRITER = """
import sys
import pyarrow as pa
from paimon_core import Catalog

warehouse, column, offset, keys, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
table = Catalog.open(warehouse).get_table("db.wide")
schema = table.arrow_schema
for round_ in range(rounds):
    ids = list(range(round_ % 3, keys, 3)) + list(range(keys))[offset::7]
    data = {name: [None] * len(ids) for name in schema.names[1:]}
    data[column] = [i * 10 + offset + round_ for i in ids]
    data[column + "_version"] = [round_] * len(ids)
    table.append(pa.table({"id": ids, **data}, schema=schema))
"""
# The dedicated compaction job, batch (run again and again) or continuous (streaming), until told to stop.
_COMPACTOR = """
import os, sys, threading, time
from paimon_core import Catalog
from paimon_core.compact import compact_table

table = Catalog.open(sys.argv[1]).get_table("db.wide")
if sys.argv[3] == "batch":
    while not os.path.exists(sys.argv[2]):
        compact_table(table)
else:
    stop = threading.Event()

    def watch():
        while not os.path.exists(sys.argv[2]):
            time.sleep(0.05)
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    compact_table(table, mode="streaming", stop=stop, poll_interval=0.1)
"""


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_partial_update_writers_and_a_compaction_job_in_processes(tmp_path: Any, mode: str) -> None:
    warehouse = str(tmp_path / "wh")
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("db")
    options = {"bucket": "2", "merge-engine": "partial-update", "write-only": "true"}
    options.update({f"fields.{c}_version.sequence-group": c for c in COLUMNS})
    table = catalog.create_table("db.wide", SCHEMA, primary_keys=["id"], options=options)
    stop = tmp_path / "stop"
    compactor = subprocess.Popen([sys.executable, "-c", _COMPACTOR, warehouse, str(stop), mode])
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, warehouse, column, str(offset), str(KEYS), str(ROUNDS)]
        )
        for offset, column in enumerate(COLUMNS, start=1)
    ]
    codes = [w.wait(timeout=300) for w in writers]
    stop.touch()
    codes.append(compactor.wait(timeout=300))
    assert codes == [0, 0, 0, 0]
    concurrent = [s for s in table.snapshots() if s.commit_kind.name == "COMPACT"]
    compact_table(table)

    rows = {r["id"]: r for r in table.to_arrow().to_pylist()}
    assert sorted(rows) == list(range(KEYS))
    for offset, column in enumerate(COLUMNS, start=1):
        for key in range(KEYS):
            # the last round that wrote this key decides its value in this writer's column
            written = [
                r
                for r in range(ROUNDS)
                if key in set(range(r % 3, KEYS, 3)) | set(list(range(KEYS))[offset::7])
            ]
            assert rows[key][column] == key * 10 + offset + written[-1], (key, column)
    kinds = {s.commit_kind.name for s in table.snapshots()}
    assert kinds == {"APPEND", "COMPACT"}
    print(f"{len(concurrent)} compactions while the writers ran")
    assert all(e.file.level == table.options.merge_tree_levels() - 1 for e in table.live_entries())
