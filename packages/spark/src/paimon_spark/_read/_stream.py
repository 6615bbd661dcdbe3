"""Streaming reads of the ``paimon`` data source.

Offsets are :class:`paimon_core.StreamPosition` dicts (snapshot id, full read or delta, files done). A
primary-key table's changes of one bucket go to one Spark partition, in commit order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from paimon_core.errors import ConfigError
from paimon_core.table import (
    AuditLogTable,
    DataView,
    GlobalSystemTable,
    StreamPosition,
    StreamScan,
    SystemTable,
)
from paimon_spark._options import SourceConfig
from paimon_spark._read._batch import (
    PaimonPartition,
    bucket_partitions,
    data_table,
    read_partition,
    split_partitions,
)

__all__ = ["PaimonStreamReader"]


def _position(offset: dict[str, Any]) -> StreamPosition:
    return StreamPosition.from_json(offset)


def _offset(position: StreamPosition) -> dict[str, Any]:
    return {"snapshot": position.snapshot_id, "full": position.full, "file": position.file_index}


class PaimonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reads: the starting snapshot (per ``scan.mode``), then what each new snapshot adds (an
    append table's new files, a primary-key table's changes as its ``changelog-producer`` makes them).

    A primary-key table streamed plainly gives its upserts (``+I``, ``+U``) and leaves retractions out, as
    ``Table.stream(row_kind=False)`` does; ``$audit_log`` or ``read.changelog = true`` put a ``rowkind``
    column first and keep every change.
    """

    def __init__(self, config: SourceConfig, schema: StructType) -> None:
        self.config = config
        self.schema = schema
        self._scan: StreamScan | None = None
        self._initial: StreamPosition | None = None
        self._target: StreamPosition | None = None
        self._last_end: StreamPosition | None = None
        self._recorded: StreamPosition | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors only need the config and schema; the scan holds caches and storage handles.
        return {"config": self.config, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"], state["schema"])  # type: ignore[misc]

    @property
    def scan(self) -> StreamScan:
        if self._scan is None:
            table = self.config.open_table()
            if isinstance(table, (SystemTable, GlobalSystemTable, DataView)) and not isinstance(
                table, AuditLogTable
            ):
                raise ConfigError(
                    f"{table.identifier} cannot be read as a stream (only $audit_log and $binlog can)"
                )
            self._scan = StreamScan(data_table(self.config, table))
        return self._scan

    def initialOffset(self) -> dict[str, Any]:
        return _offset(self._starting_position())

    def _starting_position(self) -> StreamPosition:
        """Resolved once: Spark asks ``initialOffset`` again when it runs the first micro-batch, and a start
        resolved anew (the latest snapshot by then) would be past the end it planned that batch to, which
        lost the whole starting read. (A restart before the first batch committed resolves it anew in a new
        reader: :meth:`StreamScan.restarted_start` reads that range from where it ends.)"""
        if self._initial is None:
            self._initial = self.scan.starting_position()
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.config.max_files_per_trigger is not None:
            return ReadMaxFiles(self.config.max_files_per_trigger)
        if self.config.max_rows_per_trigger is not None:
            return ReadMaxRows(self.config.max_rows_per_trigger)
        return ReadAllAvailable()

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        if start is not None:
            begin = _position(start)
            # Spark plans the next batch only after the previous one (ending at ``start``) is committed
            # to its checkpoint: record the consumer progress now rather than wait for ``commit``.
            self._record(begin)
        else:  # Spark before 4.2 calls latestOffset() without arguments
            begin = self._last_end or self._starting_position()
        limited = limit is not None and not isinstance(limit, ReadAllAvailable)
        end = self.scan.advance(
            begin,
            max_files=self.config.max_files_per_trigger if limited else None,
            max_rows=self.config.max_rows_per_trigger if limited else None,
        )
        if self._target is not None and end > self._target:
            end = max(begin, self._target)
        self._last_end = end
        return _offset(end)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.scan.latest_position()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        splits = self.scan.plan(_position(start), _position(end))
        if self.scan.primary_key:
            return bucket_partitions(splits)
        return split_partitions(splits, ())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PaimonPartition)
        yield from read_partition(self.config, self.schema, partition)

    def commit(self, end: dict[str, Any]) -> None:
        self._record(_position(end))

    def _record(self, position: StreamPosition) -> None:
        if self._recorded is None or position > self._recorded:
            self.scan.record_progress(position)
            self._recorded = position
