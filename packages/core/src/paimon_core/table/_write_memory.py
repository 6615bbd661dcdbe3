"""How an append table write shares ``write-buffer-size``, and its rows spilled to local disk.

See docs/writing.md#memory. When the rows a table write buffers outgrow ``write-buffer-size``, the
largest (partition, bucket) buffer goes to a local Arrow IPC file (``write-buffer-spillable``) instead of
becoming a small row group; its rows come back, in arrival order, when they make a full row group or when
the write is committed. Spill files live in one temporary directory per table write, removed when the
write commits, aborts or is closed (and when it is garbage-collected).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

__all__ = ["MemoryPlan", "SpillDirectory", "SpilledBatches"]

_MAX_PIECE = 32 << 20


@dataclass(frozen=True)
class MemoryPlan:
    """``write-buffer-size`` divided between the input being split and the rows buffered for row groups.

    An input batch is split into pieces of at most ``piece_bytes``; splitting one holds the piece and its
    rows regrouped (two pieces), so the writers' buffers together get the rest, ``buffered_bytes``. A row
    group is encoded from memory, so it holds at most ``buffered_bytes`` (and ``parquet.block.size``).
    """

    limit: int
    block_size: int

    @property
    def piece_bytes(self) -> int:
        return max(min(self.limit // 8, _MAX_PIECE), 1)

    @property
    def buffered_bytes(self) -> int:
        return self.limit - 2 * self.piece_bytes

    @property
    def row_group_bytes(self) -> int:
        return max(min(self.block_size, self.buffered_bytes), 1)


class SpillDirectory:
    """A temporary local directory, created on first use."""

    def __init__(self, prefix: str = "paimon-write-spill-") -> None:
        self._prefix = prefix
        self._path: str | None = None
        self._finalizer: weakref.finalize[..., SpillDirectory] | None = None
        self._counter = 0
        self.disk_bytes = 0  # the size of every live spill file, for ``write-buffer-spill.max-disk-size``

    def new_file(self) -> str:
        if self._path is None:
            self._path = tempfile.mkdtemp(prefix=self._prefix)
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._path, True)
        self._counter += 1
        return os.path.join(self._path, f"spill-{self._counter}.arrow")

    def close(self) -> None:
        """Delete the directory and everything in it."""
        if self._finalizer is not None:
            self._finalizer()
        self._path, self._finalizer, self.disk_bytes = None, None, 0


@dataclass(frozen=True)
class _Run:
    path: str
    disk_bytes: int


class SpilledBatches:
    """The batches one writer spilled, in arrival order.

    Args:
        directory: where the files go.
        compression: ``spill-compression`` (``zstd``, ``lz4`` or ``none``).
    """

    def __init__(self, directory: SpillDirectory, compression: str) -> None:
        self.directory = directory
        self._options = pa.ipc.IpcWriteOptions(compression=None if compression == "none" else compression)
        self._runs: list[_Run] = []

    def __bool__(self) -> bool:
        return bool(self._runs)

    def spill(self, batches: list[pa.RecordBatch]) -> None:
        """Write ``batches`` (of one schema) to a new local file."""
        path = self.directory.new_file()
        schema = batches[0].schema
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema, options=self._options) as out:
            for batch in batches:
                out.write_batch(batch)
        run = _Run(path, os.path.getsize(path))
        self._runs.append(run)
        self.directory.disk_bytes += run.disk_bytes

    def drain(self) -> Iterator[pa.RecordBatch]:
        """Every spilled batch in order; each file is deleted once read (all of them if the caller stops)."""
        runs, self._runs = self._runs, []
        try:
            for run in runs:
                with pa.memory_map(run.path) as source:
                    reader = pa.ipc.open_file(source)
                    for i in range(reader.num_record_batches):
                        yield reader.get_batch(i)
                self._remove(run)
        finally:
            for run in runs:
                self._remove(run)

    def discard(self) -> None:
        """Delete every spilled file."""
        runs, self._runs = self._runs, []
        for run in runs:
            self._remove(run)

    def _remove(self, run: _Run) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(run.path)
            self.directory.disk_bytes -= run.disk_bytes
