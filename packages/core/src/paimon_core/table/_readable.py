"""Reader conversions written once, for every readable thing: a table, its data views, its system tables.

A readable produces Arrow record batches from ``(columns, filter, time travel)`` (:meth:`Readable._read_batches`,
and :meth:`Readable._read_table` where a whole table is cheaper than a stream); :class:`Readable` builds the
public readers on that once — ``to_arrow``, ``to_batches``, ``to_pandas``, ``to_polars``, ``to_duckdb``, the
Arrow C stream and iteration — with one signature and one set of docstrings, as pyiceberg's ``BaseScan``
writes its conversions once over ``to_arrow``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, ClassVar

import pyarrow as pa

from paimon_core._keywords import suggest_keywords
from paimon_core._optional import import_optional
from paimon_core.predicate import FilterLike
from paimon_core.table._time_travel import NOW, Instant, TimeTravel

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import polars as pl

__all__ = ["Instant", "Readable", "TimeTravel"]


class Readable(ABC):
    """Something to read: the conversions every table, data view and system table offers.

    A subclass writes :meth:`_read_batches` (and :meth:`_read_table` when a whole table is cheaper than a
    stream); the readers below are built on them. One that cannot time travel sets ``_time_travels`` False:
    its readers then refuse the time-travel arguments as Python refuses an unknown keyword (``TypeError``).
    """

    _time_travels: ClassVar[bool] = True

    @abstractmethod
    def _read_batches(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> pa.RecordBatchReader:
        """The rows asked for, as a stream with bounded memory."""

    def _read_table(self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel) -> pa.Table:
        """The rows asked for, in memory."""
        return self._read_batches(columns, filter, travel).read_all()

    def _travel(
        self, reader: str, snapshot_id: int | None, tag: str | None, timestamp: Instant | None
    ) -> TimeTravel:
        """The time travel of one call to ``reader``."""
        if self._time_travels:
            return TimeTravel(snapshot_id, tag, timestamp)
        given = TimeTravel.names(snapshot_id, tag, timestamp)
        if given:
            # as Python refused it when these readers had no time-travel parameters
            raise TypeError(
                f"{type(self).__name__}.{reader}() got an unexpected keyword argument {given[0]!r}"
            )
        return NOW

    # --- the readers ---------------------------------------------------------------------------------------

    @suggest_keywords
    def to_arrow(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: Instant | None = None,
    ) -> pa.Table:
        """Read into memory: the rows of the snapshot the table's ``scan.*`` options choose (the latest by
        default), or of the one time travel names.

        Args:
            columns: columns to return; all when None.
            filter: DNF tuples like pyarrow's (``[("dt", "=", "2024-01-01")]``), a
                :class:`paimon_core.predicate.Predicate`, or a ``pyarrow.compute.Expression``.
            snapshot_id: time travel to this snapshot.
            tag: time travel to this tag.
            timestamp: time travel to the snapshot current at this instant (a datetime, epoch millis or
                ``'yyyy-MM-dd HH:mm:ss'``).

        Raises:
            ConfigError: more than one of ``snapshot_id``, ``tag`` and ``timestamp``.
            TypeError: time travel on a system table of metadata (``$snapshots``, ``$files``, ...), which
                describes what the data table's scan options choose.
        """
        travel = self._travel("to_arrow", snapshot_id, tag, timestamp)
        return self._read_table(columns, filter, travel)

    @suggest_keywords
    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: Instant | None = None,
    ) -> pa.RecordBatchReader:
        """A streaming reader with bounded memory; arguments as for :meth:`to_arrow`."""
        travel = self._travel("to_batches", snapshot_id, tag, timestamp)
        return self._read_batches(columns, filter, travel)

    @suggest_keywords
    def to_pandas(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: Instant | None = None,
    ) -> pd.DataFrame:
        """As :meth:`to_arrow`, as a pandas DataFrame.

        Raises:
            MissingDependencyError: pandas is not installed (``pip install 'paimon-core[pandas]'``).
        """
        import_optional("pandas", "to_pandas()", "pandas")
        travel = self._travel("to_pandas", snapshot_id, tag, timestamp)
        frame: pd.DataFrame = self._read_table(columns, filter, travel).to_pandas()
        return frame

    @suggest_keywords
    def to_polars(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: Instant | None = None,
    ) -> pl.DataFrame:
        """As :meth:`to_arrow`, as a polars DataFrame (no copy of the Arrow buffers).

        Raises:
            MissingDependencyError: polars is not installed (``pip install 'paimon-core[polars]'``).
        """
        polars = import_optional("polars", "to_polars()", "polars")
        travel = self._travel("to_polars", snapshot_id, tag, timestamp)
        frame: pl.DataFrame = polars.DataFrame(self._read_table(columns, filter, travel))
        return frame

    @suggest_keywords
    def to_duckdb(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: Instant | None = None,
        connection: duckdb.DuckDBPyConnection | None = None,
    ) -> duckdb.DuckDBPyRelation:
        """As :meth:`to_arrow`, as a duckdb relation (of ``connection``, else duckdb's default one).

        Raises:
            MissingDependencyError: duckdb is not installed (``pip install 'paimon-core[duckdb]'``).
        """
        module = import_optional("duckdb", "to_duckdb()", "duckdb")
        travel = self._travel("to_duckdb", snapshot_id, tag, timestamp)
        data = self._read_table(columns, filter, travel)
        relation: duckdb.DuckDBPyRelation = (connection or module).from_arrow(data)
        return relation

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The rows the table's ``scan.*`` options choose (the latest snapshot by default) as an Arrow C
        stream (the PyCapsule interface): ``polars.from_arrow(table)``, ``duckdb.sql("... FROM table")``
        and ``pyarrow.table(table)`` read it without conversions, a batch at a time."""
        capsule: object = self._read_batches(None, None, NOW).__arrow_c_stream__(requested_schema)
        return capsule

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        """The record batches of :meth:`to_batches`."""
        return iter(self._read_batches(None, None, NOW))
