"""A Paimon table: the facade over its store that composes the operations to read and write it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core._optional import import_optional
from paimon_core.errors import ConfigError, TableNotFoundError
from paimon_core.predicate import FilterLike, parse_filter
from paimon_core.schema import SchemaManager, TableSchema
from paimon_core.storage import StorageBackend, get_backend
from paimon_core.table._commit import TableCommit
from paimon_core.table._data_split import DataSplit
from paimon_core.table._follow import TableStream
from paimon_core.table._pipeline import CommitPipeline, new_write
from paimon_core.table._planner import TimeTravel
from paimon_core.table._read import TableRead
from paimon_core.table._scan import TableScan, reader_for
from paimon_core.table._store import TableHooks, TableStore
from paimon_core.table._write import TableWrite
from paimon_core.table.mergetree._writer import KeyValueTableWrite

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import polars as pl

__all__ = ["Table", "TimeTravel", "open_table"]


class Table(TableStore):
    """A table — an append table or a primary-key table — bound to one schema version.

    Obtain one from :meth:`paimon_core.Catalog.get_table` or :func:`paimon_core.open_table`.
    ``dynamic_options`` override the stored options for this handle only (Paimon's dynamic options);
    ``hooks`` are the work around its commits (expiration, compaction) whoever opens it hands in.

    The table's context (location, schema, options, managers, paths, live files) is its
    :class:`~paimon_core.table.TableStore`; this class adds the operations built on it.
    """

    def __init__(
        self,
        path: str,
        storage: StorageBackend,
        schema: TableSchema,
        identifier: str | None = None,
        dynamic_options: Mapping[str, Any] | None = None,
        hooks: TableHooks | None = None,
    ) -> None:
        super().__init__(path, storage, schema, identifier, dynamic_options, hooks)
        self._pipeline: CommitPipeline | None = None

    @classmethod
    def open(
        cls,
        uri: str,
        storage_options: Mapping[str, str] | None = None,
        *,
        dynamic_options: Mapping[str, Any] | None = None,
        hooks: TableHooks | None = None,
    ) -> Table:
        """Open the table at a directory URI (``/warehouse/db.db/t``, ``s3://bucket/wh/db.db/t``), its
        commits surrounded by ``hooks`` (None: the default ones).

        Raises:
            TableNotFoundError: no table (no schema) is there.
        """
        storage = get_backend(uri, storage_options)
        schema = SchemaManager(storage, uri.rstrip("/")).latest()
        if schema is None:
            raise TableNotFoundError(uri)
        return cls(uri, storage, schema, dynamic_options=dynamic_options, hooks=hooks)

    # --- writing -----------------------------------------------------------------------------------------

    def new_write(self, *, overwrite: bool = False) -> TableWrite:
        """A writer for engines: ``write(batch)`` then ``prepare_commit()`` → messages for :attr:`pipeline`
        (or :meth:`new_commit`).

        :meth:`CommitPipeline.commit` runs ``precommit-compact`` over the messages of all the writers of one
        commit, commits them and compacts after the commit, as :meth:`append` does; a bare
        :meth:`new_commit` only commits.

        On a primary-key table it is a :class:`~paimon_core.table.mergetree.KeyValueTableWrite` (upserts,
        ``delete(keys)``); ``overwrite=True`` writes into fresh merge trees, for an OVERWRITE commit.
        """
        return new_write(self, overwrite=overwrite)

    def new_commit(self, commit_user: str | None = None) -> TableCommit:
        return TableCommit(self, commit_user)

    @property
    def pipeline(self) -> CommitPipeline:
        """This handle's commit pipeline (precommit → commit → after-commit compaction), each commit with a
        fresh commit user; an engine committing with its own user builds
        ``CommitPipeline(table, table.new_commit(user))``."""
        if self._pipeline is None:
            self._pipeline = CommitPipeline(self)
        return self._pipeline

    def append(self, data: Any) -> int | None:
        """Append data in one commit. Returns the new snapshot id (None when there was nothing to write).

        Unless ``write-only``, compaction follows as Paimon's writers do: bucketed tables compact the
        written buckets, unaware-bucket tables run the compaction coordinator of this handle. Compaction
        commits separately (COMPACT), after the APPEND, and never makes the append fail.
        """
        return self.pipeline.write_and_commit(
            lambda writer: writer.write(data), lambda commit, messages: commit.commit(messages)
        )

    def overwrite(self, data: Any, partition: Mapping[str, Any] | None = None) -> int | None:
        """Replace data in one OVERWRITE commit.

        With ``partition`` (``{"dt": "2024-01-01"}``), only that partition is replaced and the data must lie
        in it; ``partition={}`` replaces the whole table. With None, a partitioned table replaces only the
        partitions present in the data when ``dynamic-partition-overwrite`` is true (Paimon's default), and the
        whole table otherwise.
        """
        return self.pipeline.write_and_commit(
            lambda writer: writer.write(data),
            lambda commit, messages: commit.overwrite(messages, partition),
            overwrite=True,
        )

    def delete(self, keys: Any) -> int | None:
        """Delete rows of a primary-key table by key, in one commit (Paimon's ``-D`` records).

        ``keys`` holds at least the primary-key columns (partition columns included), as an Arrow table
        or anything :meth:`append` takes. Returns the new snapshot id (None when there was nothing to write).

        Raises:
            ConfigError: the table has no primary key.
            SchemaError: a key column is missing or null.
        """
        if not self.has_primary_key:
            raise ConfigError(f"{self.identifier} has no primary key: delete(keys) needs a primary-key table")

        def delete(writer: TableWrite) -> None:
            assert isinstance(writer, KeyValueTableWrite)
            writer.delete(keys)

        return self.pipeline.write_and_commit(delete, lambda commit, messages: commit.commit(messages))

    # --- reading -----------------------------------------------------------------------------------------

    def scan(
        self,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: TimeTravel = None,
    ) -> TableScan:
        """Plan a batch read: the snapshot the ``scan.*`` options (or the time travel given here) choose,
        and its pruned files and splits. See :class:`TableScan`."""
        predicate, _ = parse_filter(filter)
        return TableScan(self, snapshot_id, predicate, tag=tag, timestamp=timestamp)

    def new_read(self, columns: Sequence[str] | None = None, filter: FilterLike = None) -> TableRead:
        predicate, expression = parse_filter(filter, self.arrow_schema)
        return self._reader(columns, predicate if predicate is not None else expression)

    def _reader(self, columns: Sequence[str] | None, row_filter: Any) -> TableRead:
        # A Predicate rather than its expression: its terms also skip row groups by their statistics.
        return reader_for(self, columns, row_filter)

    def _plan(
        self,
        columns: Sequence[str] | None,
        filter: FilterLike,
        snapshot_id: int | None,
        tag: str | None,
        timestamp: TimeTravel,
    ) -> tuple[TableRead, list[DataSplit]]:
        predicate, expression = parse_filter(filter, self.arrow_schema)
        read = self._reader(columns, predicate if predicate is not None else expression)
        return read, TableScan(self, snapshot_id, predicate, tag=tag, timestamp=timestamp).plan()

    def to_arrow(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: TimeTravel = None,
    ) -> pa.Table:
        """Read the table into memory: the snapshot the table's ``scan.*`` options choose (the latest by
        default), or the one time travel names.

        Args:
            columns: columns to return; all when None.
            filter: DNF tuples like pyarrow's (``[("dt", "=", "2024-01-01")]``), a
                :class:`paimon_core.predicate.Predicate`, or a ``pyarrow.compute.Expression``.
            snapshot_id: time travel to this snapshot.
            tag: time travel to this tag.
            timestamp: time travel to the snapshot current at this instant (a datetime, epoch millis or
                ``'yyyy-MM-dd HH:mm:ss'``).
        """
        read, splits = self._plan(columns, filter, snapshot_id, tag, timestamp)
        return read.to_arrow(splits)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: TimeTravel = None,
    ) -> pa.RecordBatchReader:
        """A streaming reader with bounded memory; arguments as for :meth:`to_arrow`."""
        read, splits = self._plan(columns, filter, snapshot_id, tag, timestamp)
        return read.to_reader(splits)

    def to_pandas(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: TimeTravel = None,
    ) -> pd.DataFrame:
        """As :meth:`to_arrow`, as a pandas DataFrame.

        Raises:
            MissingDependencyError: pandas is not installed (``pip install 'paimon-core[pandas]'``).
        """
        import_optional("pandas", "to_pandas()", "pandas")
        frame: pd.DataFrame = self.to_arrow(
            columns, filter, snapshot_id, tag=tag, timestamp=timestamp
        ).to_pandas()
        return frame

    def to_polars(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: TimeTravel = None,
    ) -> pl.DataFrame:
        """As :meth:`to_arrow`, as a polars DataFrame (no copy of the Arrow buffers).

        Raises:
            MissingDependencyError: polars is not installed (``pip install 'paimon-core[polars]'``).
        """
        polars = import_optional("polars", "to_polars()", "polars")
        frame: pl.DataFrame = polars.DataFrame(
            self.to_arrow(columns, filter, snapshot_id, tag=tag, timestamp=timestamp)
        )
        return frame

    def to_duckdb(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: TimeTravel = None,
        connection: duckdb.DuckDBPyConnection | None = None,
    ) -> duckdb.DuckDBPyRelation:
        """As :meth:`to_arrow`, as a duckdb relation (of ``connection``, else duckdb's default one).

        Raises:
            MissingDependencyError: duckdb is not installed (``pip install 'paimon-core[duckdb]'``).
        """
        module = import_optional("duckdb", "to_duckdb()", "duckdb")
        data = self.to_arrow(columns, filter, snapshot_id, tag=tag, timestamp=timestamp)
        relation: duckdb.DuckDBPyRelation = (connection or module).from_arrow(data)
        return relation

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The rows the table's ``scan.*`` options choose (the latest snapshot by default) as an Arrow C
        stream (the PyCapsule interface): ``polars.from_arrow(table)``, ``duckdb.sql("... FROM table")``
        and ``pyarrow.table(table)`` read it without conversions, a batch at a time."""
        capsule: object = self.to_batches().__arrow_c_stream__(requested_schema)
        return capsule

    def stream(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        *,
        consumer_id: str | None = None,
        follow: bool = True,
        until_snapshot: int | None = None,
        poll_interval: float | None = None,
    ) -> TableStream:
        """Follow the table: Arrow record batches of what is committed, from where ``scan.mode`` (or the
        consumer's progress) says, waiting for new snapshots.

        A primary-key table's batches start with a ``rowkind`` column (``+I``, ``-U``, ``+U``, ``-D``).
        See :class:`~paimon_core.table.TableStream`::

            for batch in table.stream(consumer_id="my-job"):
                handle(batch)

        Args:
            columns: as for :meth:`to_arrow`.
            filter: as for :meth:`to_arrow`.
            consumer_id: resume from (and record progress under) this consumer id.
            follow: wait for new snapshots once caught up (False: end there).
            until_snapshot: end after reading this snapshot.
            poll_interval: seconds between polls (default ``continuous.discovery-interval``).
        """
        return TableStream(
            self,
            columns,
            filter,
            consumer_id=consumer_id,
            follow=follow,
            until_snapshot=until_snapshot,
            poll_interval=poll_interval,
        )

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return iter(self.to_batches())


def open_table(uri: str, storage_options: Mapping[str, str] | None = None, **dynamic_options: Any) -> Table:
    """Open a table by its directory URI (``/warehouse/db.db/t``, ``s3://bucket/wh/db.db/t``) with the
    default hooks; :func:`paimon_core.open_table` hands it the standard ones, :meth:`Table.open` any.

    Raises:
        TableNotFoundError: no table (no schema) is there.
    """
    return Table.open(uri, storage_options, dynamic_options=dynamic_options)
