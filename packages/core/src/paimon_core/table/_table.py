"""A Paimon table: the facade over its store that composes the operations to read and write it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from paimon_core import options as opts
from paimon_core._keywords import suggest_keywords
from paimon_core.branch import MAIN_BRANCH, branch_path, normalize_branch
from paimon_core.errors import ConfigError, TableNotFoundError
from paimon_core.predicate import FilterLike, parse_filter
from paimon_core.schema import SchemaManager
from paimon_core.storage import StorageBackend, get_backend, join_path
from paimon_core.table._data_split import DataSplit
from paimon_core.table._follow import TableStream
from paimon_core.table._pipeline import CommitPipeline, new_write
from paimon_core.table._read import TableRead
from paimon_core.table._readable import Instant, Readable, TimeTravel
from paimon_core.table._scan import TableScan, reader_for
from paimon_core.table._store import TableHooks, TableStore
from paimon_core.table._write import TableWrite
from paimon_core.table.commit import TableCommit
from paimon_core.table.mergetree._writer import KeyValueTableWrite

__all__ = ["Table", "open_table"]


class Table(TableStore, Readable):
    """A table — an append table or a primary-key table — bound to one schema version.

    Obtain one from :meth:`paimon_core.Catalog.get_table` or :func:`paimon_core.open_table`.
    ``dynamic_options`` override the stored options for this handle only (Paimon's dynamic options);
    ``hooks`` are the work around its commits (expiration, compaction) whoever opens it hands in.

    The table's context (location, schema, options, managers, paths, live files) is its
    :class:`~paimon_core.table.TableStore`; this class adds the operations built on it.
    """

    _pipeline: CommitPipeline | None = None  # built on first use (see pipeline)

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
        branch = normalize_branch(str((dynamic_options or {}).get(opts.BRANCH.key, MAIN_BRANCH)))
        schema = SchemaManager(storage, branch_path(uri, branch)).latest()
        if schema is None:
            raise TableNotFoundError(uri, hint=_not_a_table(storage, uri.rstrip("/")))
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

    # --- compaction --------------------------------------------------------------------------------------

    def compact(self, **arguments: Any) -> Any:
        """Run the dedicated compaction job on this table, as :func:`paimon_core.compact.compact_table` (its
        keyword arguments: ``partitions``, ``mode``, ``order_strategy``, ``order_by``, ``parallelism``...).

        Returns:
            The job's :class:`~paimon_core.compact.CompactSummary`.

        Raises:
            ConfigError: the table was opened without hooks (a bare ``Table(...)``): call ``compact_table``.
        """
        job = self.hooks.compact
        if job is None:
            raise ConfigError(
                f"{self.identifier} was opened without the standard hooks (a bare Table): run "
                "paimon_core.compact.compact_table(table) instead"
            )
        return job(self, **arguments)

    # --- reading -----------------------------------------------------------------------------------------

    @suggest_keywords
    def scan(
        self,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: Instant | None = None,
    ) -> TableScan:
        """Plan a batch read: the snapshot the ``scan.*`` options (or the time travel given here) choose,
        and its pruned files and splits. See :class:`TableScan`."""
        predicate, _ = parse_filter(filter)
        return TableScan(self, predicate, travel=TimeTravel(snapshot_id, tag, timestamp))

    @suggest_keywords
    def new_read(self, columns: Sequence[str] | None = None, filter: FilterLike = None) -> TableRead:
        predicate, expression = parse_filter(filter, self.arrow_schema)
        return self._reader(columns, predicate if predicate is not None else expression)

    def _reader(self, columns: Sequence[str] | None, row_filter: Any) -> TableRead:
        # A Predicate rather than its expression: its terms also skip row groups by their statistics.
        return reader_for(self, columns, row_filter)

    def _plan(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> tuple[TableRead, list[DataSplit]]:
        predicate, expression = parse_filter(filter, self.arrow_schema)
        read = self._reader(columns, predicate if predicate is not None else expression)
        scan = TableScan(self, predicate, travel=travel)
        return read, scan.plan()

    # The readers (to_arrow, to_batches, to_pandas, to_polars, to_duckdb, the Arrow C stream, iteration)
    # are Readable's, over these two.

    def _read_table(self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel) -> pa.Table:
        read, splits = self._plan(columns, filter, travel)
        return read.to_arrow(splits)

    def _read_batches(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> pa.RecordBatchReader:
        read, splits = self._plan(columns, filter, travel)
        return read.to_reader(splits)

    @suggest_keywords
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

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, schema_id={self.schema.id}, path={self.path!r})"


def open_table(uri: str, storage_options: Mapping[str, str] | None = None, **dynamic_options: Any) -> Table:
    """Open a table by its directory URI (``/warehouse/db.db/t``, ``s3://bucket/wh/db.db/t``) with the
    default hooks; :func:`paimon_core.open_table` hands it the standard ones, :meth:`Table.open` any.

    Raises:
        TableNotFoundError: no table (no schema) is there.
    """
    return Table.open(uri, storage_options, dynamic_options=dynamic_options)


def _not_a_table(storage: StorageBackend, path: str) -> str:
    """What a path that holds no table holds instead, when it is a warehouse or a database directory."""
    try:
        entries = [e for e in storage.list_dir(path) if e.is_dir]
    except OSError:
        return ""
    form = "a table directory is <warehouse>/<database>.db/<table>"
    if path.endswith(".db"):
        tables = [e.name for e in entries if SchemaManager(storage, e.path).latest_id() is not None]
        if tables:
            return f": it is a database directory; {form}, e.g. {join_path(path, tables[0])}"
    databases = [e for e in entries if e.name.endswith(".db")]
    if databases:
        return (
            f": it looks like a warehouse (databases {', '.join(e.name[:-3] for e in databases[:5])}); {form}"
        )
    return ""
