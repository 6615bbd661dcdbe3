"""Compaction tasks: rewrite input files of one (partition, bucket) into target-size files.

A task is plain picklable data (the files to rewrite and where they live); :meth:`CompactTask.run` reads the
inputs in order and writes them with the table's rolling writer. Outputs are numbered from the first input's
minimum sequence number and carry ``_FILE_SOURCE = 1`` (COMPACT). The returned
:class:`~paimon_core.table.CommitMessage` holds ``compact_before`` = the inputs (exact copies of their
manifest entries' files) and ``compact_after`` = the outputs; a committer turns it into a COMPACT snapshot.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_core.manifest import DataFileMeta, FileSource
from paimon_core.redaction import get_logger
from paimon_core.table import CommitMessage, DataFileWriter, DataSplit, DictionaryChoice, TableRead

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["CompactTask", "read_files", "rewrite_files", "write_sorted"]

logger = get_logger(__name__)

# Compressed input bytes a task reads ahead of its writer (at least one file). The read threads are shared:
# a small window interleaves the reads of tasks running side by side, so that each task's writer has rows
# to encode, rather than one task's whole input being read before the next task's first file.
_PREFETCH_BYTES = 8 << 20
_READ_THREADS = 4
_read_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()  # guards the two below
_dictionary_choices: dict[tuple[str, int], DictionaryChoice] = {}
# Encode a row group once this much is buffered, so writing overlaps the reads of the next inputs.
_FLUSH_BYTES = 16 << 20


@dataclass(frozen=True)
class CompactTask:
    """Rewrite ``files`` (at least two) of one (partition, bucket) into files of ``target-file-size``.

    Attributes:
        partition: the stored partition bytes.
        bucket: the bucket (0 for unaware-bucket tables).
        total_buckets: the ``_TOTAL_BUCKETS`` of the inputs' entries (-1 for unaware-bucket tables).
        files: the inputs, in the order they are rewritten.
    """

    partition: bytes
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]

    @property
    def input_bytes(self) -> int:
        return sum(f.file_size for f in self.files)

    def run(self, table: TableStore) -> CommitMessage:
        after = rewrite_files(table, self.partition, self.bucket, self.files)
        return CommitMessage(
            self.partition,
            self.bucket,
            self.total_buckets,
            compact_before=self.files,
            compact_after=tuple(after),
        )


def _reader_threads() -> ThreadPoolExecutor:
    """Threads that read compaction inputs ahead, shared by all tasks of the process: a task of a few small
    files (a bucket's) should not pay for starting threads, and tasks running side by side share the CPUs
    anyway. Nothing running on them waits for this pool."""
    global _read_pool
    with _lock:
        if _read_pool is None:
            _read_pool = ThreadPoolExecutor(
                max_workers=_READ_THREADS, thread_name_prefix="paimon-compact-read"
            )
        return _read_pool


def read_files(
    table: TableStore, partition: bytes, bucket: int, files: Sequence[DataFileMeta]
) -> Iterator[pa.Table]:
    """The contents of ``files`` in order (current schema), read ahead on a few threads."""
    split = DataSplit(0, partition, bucket, table.bucket_dir(partition, bucket), tuple(files))
    read = TableRead(table)
    pool = _reader_threads()
    pending: deque[tuple[Future[pa.Table], int]] = deque()
    in_flight = 0
    upcoming = iter(files)
    exhausted = False
    try:
        while True:
            while not exhausted and (not pending or in_flight < _PREFETCH_BYTES):
                file = next(upcoming, None)
                if file is None:
                    exhausted = True
                    break
                pending.append((pool.submit(read.read_file, split, file), file.file_size))
                in_flight += file.file_size
            if not pending:
                return
            future, size = pending.popleft()
            in_flight -= size
            yield future.result()
    finally:
        for future, _ in pending:  # a task that failed (or stopped reading) leaves nothing queued behind
            future.cancel()


def _dictionary_choice(table: TableStore) -> DictionaryChoice:
    """The choice of dictionary-encoded columns that every compaction of the table's current schema in this
    process shares: judging it counts the distinct values of each column of a sample, which cost as much as
    encoding the output of a bucket of small files, once per task."""
    key = (table.path, table.schema.id)
    with _lock:
        choice = _dictionary_choices.get(key)
        if choice is None:
            choice = _dictionary_choices[key] = DictionaryChoice(table.options)
        return choice


def _new_writer(
    table: TableStore, partition: bytes, bucket: int, first_sequence: int, file_source: int
) -> DataFileWriter:
    return DataFileWriter(
        table=table,
        partition=partition,
        directory=table.bucket_dir(partition, bucket),
        bucket=bucket,
        next_seq=first_sequence,
        target_size=table.options.target_file_size(bool(table.schema.primary_keys)),
        file_source=file_source,
        dictionary=_dictionary_choice(table),
    )


def write_sorted(
    table: TableStore,
    partition: bytes,
    bucket: int,
    data: Iterator[pa.Table],
    first_sequence: int,
    file_source: int = FileSource.COMPACT,
) -> list[DataFileMeta]:
    """Write ``data`` with the rolling writer; on any failure the files written so far are deleted."""
    writer = _new_writer(table, partition, bucket, first_sequence, int(file_source))
    try:
        for chunk in data:
            for batch in chunk.to_batches():
                if batch.num_rows:
                    writer.add(batch)
            if writer.buffered_bytes >= _FLUSH_BYTES:
                writer.flush()
        return writer.close()
    except BaseException:
        for path in writer.abort():
            try:
                table.storage.delete(path)
            except OSError:
                logger.warning("could not delete %s after a failed compaction", path, exc_info=True)
        raise


def rewrite_files(
    table: TableStore,
    partition: bytes,
    bucket: int,
    files: Sequence[DataFileMeta],
    file_source: int = FileSource.COMPACT,
) -> list[DataFileMeta]:
    """Rewrite ``files`` in order into target-size files numbered from the first input's min sequence."""
    if not files:
        return []
    data = read_files(table, partition, bucket, files)
    return write_sorted(table, partition, bucket, data, files[0].min_sequence_number, file_source)
