"""A merge tree's write buffer spilled to local disk (``write-buffer-spillable``).

See docs/primary-key-tables.md ("Writing"). When the writers' buffers outgrow ``write-buffer-size``, a
bucket's buffer is ordered, merged and written to a local temporary file as one sorted run (Arrow IPC,
``spill-compression``) instead of becoming a level-0 data file. At flush the spilled runs and what is left
in memory are merged into one sorted run of level-0 files, a chunk at a time, so memory stays near the
buffer size however much was spilled. More than ``local-sort.max-num-file-handles`` runs are first merged
into one; past ``write-buffer-spill.max-disk-size`` the writer flushes instead of spilling.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from paimon_core.table.mergetree._kway import merge_sorted_runs
from paimon_core.table.mergetree._layout import KeyValueLayout
from paimon_core.table.mergetree._merge import MergeEngine
from paimon_core.table.mergetree._reader import merge_records

__all__ = ["SpilledRuns"]

_MIN_CHUNK_ROWS = 1024


@dataclass(frozen=True)
class _Run:
    path: str
    size: int


class SpilledRuns:
    """The spilled sorted runs of one bucket.

    Args:
        layout, engine, descending: how records of the table are ordered and merged.
        memory_budget: ``write-buffer-size``; bounds the chunks read back while merging.
        compression: ``spill-compression`` (``zstd``, ``lz4`` or ``none``).
        max_handles: ``local-sort.max-num-file-handles``.
    """

    def __init__(
        self,
        layout: KeyValueLayout,
        engine: MergeEngine,
        descending: bool,
        memory_budget: int,
        compression: str,
        max_handles: int,
    ) -> None:
        self.layout = layout
        self.engine = engine
        self.descending = descending
        self.budget = memory_budget
        self.max_handles = max(max_handles, 2)
        self.options = pa.ipc.IpcWriteOptions(compression=None if compression == "none" else compression)
        self.runs: list[_Run] = []
        self._dir: str | None = None
        self._counter = 0

    @property
    def disk_bytes(self) -> int:
        return sum(r.size for r in self.runs)

    def spill(self, records: pa.Table) -> None:
        """Order and merge buffered records and keep them on disk as one sorted run."""
        self.runs.append(self._write(iter([self._merge(records)])))
        while len(self.runs) > self.max_handles:
            head, self.runs = self.runs[: self.max_handles], self.runs[self.max_handles :]
            self.runs.insert(0, self._write(self._merge_runs(head, None)))
            self._remove(head)

    def drain(self, memory: pa.Table | None) -> Iterator[pa.Table]:
        """Every spilled run and the buffered ``memory`` records, merged, in key order, chunk by chunk.

        The spilled files are deleted once the merge is done.
        """
        runs, self.runs = self.runs, []
        try:
            yield from self._merge_runs(runs, memory)
        finally:
            self._remove(runs)

    def close(self) -> None:
        """Delete every spilled file."""
        self._remove(self.runs)
        self.runs = []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # --- internals ---------------------------------------------------------------------------------------

    def _merge(self, records: pa.Table) -> pa.Table:
        return merge_records(records, self.layout, self.engine, self.descending)

    def _write(self, chunks: Iterator[pa.Table]) -> _Run:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="paimon-spill-")
            weakref.finalize(self, shutil.rmtree, self._dir, True)
        path = os.path.join(self._dir, f"run-{self._counter}.arrow")
        self._counter += 1
        schema = self.layout.records_schema
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema, options=self.options) as writer:
            for chunk in chunks:
                rows = self._rows_per_batch(chunk)
                for batch in chunk.to_batches(max_chunksize=rows):
                    writer.write_batch(batch)
        return _Run(path, os.path.getsize(path))

    def _rows_per_batch(self, chunk: pa.Table) -> int:
        """Batches small enough that one per run of a merge fits the memory budget."""
        row_bytes = max(chunk.nbytes / max(chunk.num_rows, 1), 1.0)
        return max(int(self.budget / (2 * self.max_handles) / row_bytes), _MIN_CHUNK_ROWS)

    def _merge_runs(self, runs: list[_Run], memory: pa.Table | None) -> Iterator[pa.Table]:
        """The runs (and the buffered ``memory`` records) merged a batch per run at a time."""
        sources: list[Iterable[pa.Table]] = [_tables(r.path) for r in runs]
        if memory is not None and memory.num_rows:
            merged = self._merge(memory)
            rows = self._rows_per_batch(merged)
            sources.append(pa.Table.from_batches([b]) for b in merged.to_batches(max_chunksize=rows))
        layout = self.layout
        yield from merge_sorted_runs(
            sources, layout.key_names, layout.sequence_fields, self.descending, self.engine
        )

    def _remove(self, runs: list[_Run]) -> None:
        for run in runs:
            with contextlib.suppress(OSError):
                os.remove(run.path)


def _tables(path: str) -> Iterator[pa.Table]:
    with pa.memory_map(path) as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield pa.Table.from_batches([reader.get_batch(i)])
