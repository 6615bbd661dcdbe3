"""Following a table from Python: :class:`TableStream`, an iterator of Arrow record batches.

It walks the positions of a :class:`~paimon_core.table._stream.StreamScan` (where it starts, what each
snapshot contributes, and where a bound ends it are the scan's), reads each range as it becomes available,
and waits ``continuous.discovery-interval`` between polls. A consumer id records progress once everything
before a position has been handed out, so a stream resumed with the same id starts where the last one left
off (at least once: a range handed out but not finished by a crashed process is read again).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_core import options as opts
from paimon_core.predicate import FilterLike, parse_filter
from paimon_core.table._read import InsertKinds, TableRead
from paimon_core.table._stream import StreamPosition, StreamScan
from paimon_core.table.mergetree._reader import KeyValueTableRead

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["TableStream"]


class TableStream:
    """New data of a table as it is committed: iterate for :class:`pyarrow.RecordBatch` es.

    A primary-key table's batches start with a ``rowkind`` column (``+I``, ``-U``, ``+U``, ``-D``): the
    changes of its ``changelog-producer`` (see docs/reads.md, "Streaming reads").

    Args:
        table: the table; its ``scan.*`` options choose where the stream starts.
        columns, filter: as for :meth:`Table.to_arrow`.
        consumer_id: resume from, and record progress under, this consumer (the ``consumer-id`` option).
        follow: wait for new snapshots once caught up; False ends the stream there.
        until_snapshot: end the stream after this snapshot.
        poll_interval: seconds between polls (default ``continuous.discovery-interval``).
        row_kind: put the ``rowkind`` column first (default: for primary-key tables); without it a
            primary-key table's retractions are left out.
    """

    def __init__(
        self,
        table: TableStore,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        *,
        consumer_id: str | None = None,
        follow: bool = True,
        until_snapshot: int | None = None,
        poll_interval: float | None = None,
        row_kind: bool | None = None,
    ) -> None:
        predicate, expression = parse_filter(filter, table.arrow_schema)
        self.scan = StreamScan(table, predicate, consumer_id)
        with_kinds = table.has_primary_key if row_kind is None else row_kind
        row_filter = predicate if predicate is not None else expression  # a predicate also skips row groups
        self._read: TableRead = (
            KeyValueTableRead(table, columns, row_filter, row_kind=with_kinds, keep_delete=with_kinds)
            if table.has_primary_key
            else (InsertKinds if with_kinds else TableRead)(table, columns, row_filter)
        )
        self.schema: pa.Schema = self._read.output_schema
        self.position: StreamPosition = self.scan.starting_position()
        self.follow = follow
        self.until = StreamPosition(until_snapshot + 1) if until_snapshot is not None else None
        interval = table.options.get_option(opts.CONTINUOUS_DISCOVERY_INTERVAL) / 1000
        self.poll_interval = interval if poll_interval is None else poll_interval
        self._stopped = threading.Event()
        self._batches: Iterator[pa.RecordBatch] = iter(())
        self._recorded: StreamPosition | None = None

    def stop(self) -> None:
        """End the stream: iteration stops at the next batch (safe to call from another thread)."""
        self._stopped.set()

    def __iter__(self) -> TableStream:
        return self

    def __next__(self) -> pa.RecordBatch:
        while True:
            if self._stopped.is_set():
                raise StopIteration
            for batch in self._batches:
                if batch.num_rows:
                    return batch
            if self.position != self._recorded:  # everything before it was handed out
                self.scan.record_progress(self.position)
                self._recorded = self.position
            if self.until is not None and self.position >= self.until:
                raise StopIteration
            end = self.scan.advance(self.position)
            if self.until is not None:
                end = min(end, self.until)
            if end > self.position:
                self._batches = iter(self._read.to_batches(self.scan.plan(self.position, end)))
                self.position = end
                continue
            if self.scan.ended or not self.follow:
                raise StopIteration
            self._stopped.wait(self.poll_interval)

    def __enter__(self) -> TableStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
