"""The spilling write buffer of primary-key tables: same rows as without spilling, fewer files, bounded memory."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core.compact import compact_table
from paimon_core.table import Table

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), pa.field("score", pa.int64())]
)
ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.score.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
}
# a buffer of a few rows and at most 2 runs merged at once: most writes spill, and runs are merged down
TINY = {"write-buffer-size": "200 b", "local-sort.max-num-file-handles": "2", "write-only": "true"}


def _write(table: Table, batches: list[pa.Table]) -> None:
    write = table.new_write()
    for batch in batches:
        write.write(batch)
    table.new_commit().commit(write.prepare_commit())
    write.close()


def _rows(table: Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.to_arrow().to_pylist())


_batch = st.lists(
    st.tuples(
        st.integers(0, 30),
        st.one_of(st.none(), st.sampled_from(["a", "bb", "ccc"])),
        st.one_of(st.none(), st.integers(-9, 9)),
    ),
    min_size=1,
    max_size=8,
)


@pytest.mark.slow
@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(_batch, min_size=1, max_size=6), min_size=1, max_size=3))
def test_spilled_writes_read_like_unspilled_ones(
    tmp_path_factory: pytest.TempPathFactory, engine: str, commits: list[list[list[tuple[Any, ...]]]]
) -> None:
    catalog = Catalog.open(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    tables = {
        spill: catalog.create_table(
            f"db.t_{spill}",
            SCHEMA,
            primary_keys=["id"],
            options={"bucket": "1", **TINY, "write-buffer-spillable": spill, **ENGINES[engine]},
        )
        for spill in ("true", "false")
    }
    for batches in commits:
        data = [
            pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in b], SCHEMA)
            for b in batches
        ]
        for table in tables.values():
            _write(table, data)
    expected = _rows(tables["false"])
    assert _rows(tables["true"]) == expected
    # one sorted run of level-0 files per commit when spilling, one run per buffer flush otherwise
    assert len(tables["true"].live_entries()) <= len(commits)
    # with a buffer this small, compaction merges its runs a chunk at a time
    for table in tables.values():
        compact_table(table)
    compacted = _rows(tables["false"])
    assert _rows(tables["true"]) == compacted
    if engine != "first-row":  # first-row shows level 0 only once compacted
        assert compacted == expected


def test_spilling_flushes_once_past_the_disk_limit(catalog: Catalog) -> None:
    options = {"bucket": "1", **TINY, "write-buffer-spill.max-disk-size": "1 b"}
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options=options)
    batches = [pa.table({"id": [i], "name": ["x" * 300], "score": [i]}, schema=SCHEMA) for i in range(4)]
    _write(table, batches)
    assert len(table.live_entries()) > 1  # the first buffer spilled; later ones could not
    assert _rows(table) == [(i, "x" * 300, i) for i in range(4)]


_MEMORY_PROBE = textwrap.dedent(
    """
    import sys
    import numpy as np
    import pyarrow as pa
    from paimon_core import Catalog

    spillable, warehouse = sys.argv[1], sys.argv[2]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("payload", pa.string())])
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema, primary_keys=["id"],
        options={"bucket": "2", "write-buffer-size": "4 mb", "write-buffer-spillable": spillable,
                 "write-only": "true"},
    )
    rng = np.random.default_rng(0)
    write = table.new_write()
    for i in range(60):  # 60 batches of ~1 MB: 60 MB through a 4 MB buffer
        ids = rng.integers(0, 10_000_000, 10_000)
        write.write(pa.table({"id": ids, "payload": pa.array(["%0100d" % i] * len(ids))}, schema=schema))
    messages = write.prepare_commit()
    table.new_commit().commit(messages)
    print(pa.default_memory_pool().max_memory(), len(table.live_entries()))
    """
)


@pytest.mark.parametrize("spillable", ["true", "false"])
def test_writer_memory_stays_near_the_buffer_size(tmp_path: Path, spillable: str) -> None:
    # A fresh interpreter, so that the Arrow pool's peak is this write's alone.
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, spillable, str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    peak, files = int(out[0]), int(out[1])
    assert peak < 40 << 20, f"Arrow peak {peak >> 20} MB for a 4 MB buffer and 60 MB written"
    if spillable == "true":
        assert files == 2  # one level-0 file per bucket
    else:
        assert files > 10  # every full buffer became level-0 files


_SLICES_PROBE = textwrap.dedent(
    """
    import gc
    import sys
    import numpy as np
    import pyarrow as pa
    from paimon_core import Catalog

    bucket, warehouse = sys.argv[1], sys.argv[2]
    schema = pa.schema([pa.field("p", pa.int32(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        ("payload", pa.string())])
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema, partition_keys=["p"], primary_keys=["p", "id"],
        options={"bucket": bucket, "write-buffer-size": "4 mb", "write-only": "true"},
    )

    def batches():  # each batch of ~7 MB is one partition: every piece goes to its tree as a slice
        rng = np.random.default_rng(0)
        for p in range(10):
            n = 60_000 + int(rng.integers(0, 20_000))
            yield pa.record_batch({"p": pa.array(np.full(n, p, np.int32)), "id": rng.integers(0, 10**9, n),
                                   "payload": pa.array(["%0090d" % p] * n)}, schema=schema)

    write = table.new_write()
    write.write(batches())
    gc.collect()  # what garbage cycles hold until the collector runs is not the writer's
    print(pa.total_allocated_bytes())
    write.abort()
    """
)


@pytest.mark.parametrize("bucket", ["1", "-1"], ids=["fixed-bucket", "dynamic-bucket"])
def test_buffered_slices_do_not_keep_their_input_batches_alive(tmp_path: Path, bucket: str) -> None:
    # A fresh interpreter: the Arrow memory still allocated once the write returns is the writer's alone.
    out = subprocess.run(
        [sys.executable, "-c", _SLICES_PROBE, bucket, str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    held = int(out)
    # Trees that buffered a slice of a batch kept the whole ~7 MB batch: about 30 MB after 10 batches.
    assert held < 12 << 20, f"{held >> 20} MB held after the write for a 4 MB buffer"


_COMPACTION_PROBE = textwrap.dedent(
    """
    import sys
    import numpy as np
    import pyarrow as pa
    from paimon_core import Catalog
    from paimon_core.compact import compact_table

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("payload", pa.string())])
    catalog = Catalog.open(sys.argv[1])
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema, primary_keys=["id"],
        options={"bucket": "1", "write-buffer-size": "4 mb", "write-only": "true"},
    )
    rng = np.random.default_rng(0)
    for i in range(15):  # 15 overlapping level-0 runs of ~3 MB
        ids = rng.integers(0, 10_000_000, 30_000)
        table.append(pa.table({"id": ids, "payload": pa.array(["%0100d" % i] * len(ids))}, schema=schema))
    written = pa.default_memory_pool().max_memory()
    compact_table(table)
    print(written, pa.default_memory_pool().max_memory(), len(table.live_entries()))
    """
)


def test_compaction_merges_runs_a_chunk_at_a_time(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _COMPACTION_PROBE, str(tmp_path)], check=True, capture_output=True, text=True
    ).stdout.split()
    written, peak, files = int(out[0]), int(out[1]), int(out[2])
    assert files == 1
    # 45 MB of rows go through the full compaction; one chunk per run and a row group stay in memory
    assert peak < max(written, 0) + (24 << 20), (
        f"Arrow peak {peak >> 20} MB (writes alone {written >> 20} MB)"
    )
