"""A Paimon table: its location, schema and options, and the entry points to read and write it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import pyarrow as pa

from paimon_core import options as opts
from paimon_core.binary_row import deserialize_row
from paimon_core.errors import (
    AtomicCommitUnsupportedError,
    CommitConflictError,
    CommitRetriesExhaustedError,
    ConfigError,
    LockAcquisitionError,
    SchemaError,
    TableNotFoundError,
)
from paimon_core.manifest import IndexManifestEntry, ManifestContext, ManifestEntry, read_index_manifest
from paimon_core.options import Options
from paimon_core.partition import partition_path
from paimon_core.predicate import FilterLike, parse_filter
from paimon_core.redaction import get_logger
from paimon_core.schema import SchemaManager, TableSchema
from paimon_core.snapshot import Snapshot, SnapshotManager
from paimon_core.storage import StorageBackend, get_backend, join_path
from paimon_core.table._compacted_changelog import real_changelog_path
from paimon_core.table._follow import TableStream
from paimon_core.table._hooks import CommitCompactor, TableHooks, default_hooks
from paimon_core.table._live import LiveFileIndex
from paimon_core.table._messages import CommitMessage
from paimon_core.table._read import TableRead
from paimon_core.table._readable import Instant, Readable, TimeTravel
from paimon_core.table._scan import DataSplit, TableScan, live_entries
from paimon_core.table._write import TableWrite
from paimon_core.table.commit import TableCommit
from paimon_core.table.mergetree import KeyValueTableRead, KeyValueTableWrite
from paimon_core.types import DataType, to_arrow_schema

logger = get_logger(__name__)

# Failures after which no snapshot can reference the written files: those files are deleted.
_COMMIT_NEVER_LANDED = (
    SchemaError,
    ConfigError,
    CommitConflictError,
    CommitRetriesExhaustedError,
    AtomicCommitUnsupportedError,
    LockAcquisitionError,
)


class Table(Readable):
    """A table — an append table or a primary-key table — bound to one schema version.

    Obtain one from :meth:`paimon_core.Catalog.get_table` or :func:`paimon_core.open_table`.
    ``dynamic_options`` override the stored options for this handle only (Paimon's dynamic options).
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
        self.path = path.rstrip("/")
        self.hooks = hooks or default_hooks()
        self.storage = storage
        self.schema = schema
        self.identifier = identifier or self.path
        dynamic = Options.of(dynamic_options)
        dynamic.validate()
        stored = Options.of(schema.options)
        self.options = stored.with_overrides(dynamic)
        if dynamic:
            _check_dynamic_options(stored, self.options)
        self.schema_manager = SchemaManager(storage, self.path)
        self.snapshot_manager = SnapshotManager(storage, self.path)
        self._partition_cache: dict[bytes, dict[str, Any]] = {}
        self._bucket_dirs: dict[tuple[bytes, int], str] = {}
        self._inline_compactor: CommitCompactor | None = None
        self._live_files: LiveFileIndex | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable for process pools and engines: the handle is rebuilt from its location and options.
        return (Table, (self.path, self.storage, self.schema, self.identifier, self._dynamic_options()))

    def _dynamic_options(self) -> dict[str, str]:
        return {k: v for k, v in self.options.items() if self.schema.options.get(k) != v}

    # --- shape -------------------------------------------------------------------------------------------

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(list(self.schema.fields))

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    @cached_property
    def partition_types(self) -> list[DataType]:
        by_name = {f.name: f.type for f in self.schema.fields}
        return [by_name[k] for k in self.schema.partition_keys]

    @property
    def bucket(self) -> int:
        return self.options.get_option(opts.BUCKET)

    @cached_property
    def bucket_keys(self) -> list[str]:
        return list(self.schema.bucket_keys())

    @cached_property
    def bucket_key_types(self) -> list[DataType]:
        by_name = {f.name: f.type for f in self.schema.fields}
        return [by_name[k] for k in self.bucket_keys]

    @cached_property
    def manifest_context(self) -> ManifestContext:
        return ManifestContext.for_table(self.storage, self.path, self.partition_types, self.options)

    def manifest_path(self, name: str) -> str:
        return self.manifest_context.path(name)

    def partition_values(self, partition: bytes) -> dict[str, Any]:
        """Decode stored partition bytes into {key: value}."""
        values = self._partition_cache.get(partition)
        if values is None:
            decoded = deserialize_row(partition, self.partition_types) if self.partition_keys else []
            values = dict(zip(self.partition_keys, decoded, strict=True))
            self._partition_cache[partition] = values
        return values

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        directory = self._bucket_dirs.get(key)
        if directory is None:
            values = self.partition_values(partition)
            relative = partition_path(
                self.partition_keys,
                [values[k] for k in self.partition_keys],
                self.partition_types,
                self.options.get_option(opts.PARTITION_DEFAULT_NAME),
                self.options.get_option(opts.PARTITION_LEGACY_NAME),
            )
            base = join_path(self.path, relative) if relative else self.path
            directory = join_path(base, f"bucket-{bucket}")
            self._bucket_dirs[key] = directory
        return directory

    def delete_new_files(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files that uncommitted messages add (new files and compaction outputs).

        Deletion failures are logged: an undeleted file is an orphan no snapshot references.
        """
        paths: dict[str, None] = {}  # slices of one compacted changelog file share their physical file
        for message in messages:
            directory = self.bucket_dir(message.partition, message.bucket)
            upgraded = {f.file_name for f in message.compact_before}  # moved up a level, not written
            for file in (
                *message.new_files,
                *message.compact_after,
                *message.changelog_files,
                *message.compact_changelog_files,
            ):
                if file.file_name not in upgraded:
                    path = file.external_path or join_path(directory, file.file_name)
                    paths[real_changelog_path(path)] = None
            paths.update(dict.fromkeys(self.index_path(f.file_name) for f in message.new_index_files))
        for path in paths:
            try:
                self.storage.delete(path)
            except OSError:
                logger.warning("could not delete uncommitted file %s", path, exc_info=True)

    def copy(self, dynamic_options: Mapping[str, Any]) -> Table:
        """This table with extra dynamic options."""
        merged = self._dynamic_options()
        merged.update({str(k): str(v) for k, v in dynamic_options.items()})
        return Table(self.path, self.storage, self.schema, self.identifier, merged)

    # --- snapshots ---------------------------------------------------------------------------------------

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot still present, oldest first."""
        return list(self.snapshot_manager.snapshots())

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def live_entries(self, snapshot_id: int | None = None) -> list[ManifestEntry]:
        sm = self.snapshot_manager
        snapshot = sm.snapshot(snapshot_id) if snapshot_id is not None else sm.latest()
        return live_entries(self, snapshot)

    def index_entries(self, snapshot: Snapshot | None = None) -> list[IndexManifestEntry]:
        """The live index files of a snapshot (the latest when None): hash indexes, deletion vectors."""
        snapshot = snapshot or self.snapshot_manager.latest()
        if snapshot is None or not snapshot.index_manifest:
            return []
        return read_index_manifest(self.storage, self.manifest_path(snapshot.index_manifest))

    def index_path(self, file_name: str) -> str:
        return join_path(self.path, "index", file_name)

    # --- writing -----------------------------------------------------------------------------------------

    @property
    def has_primary_key(self) -> bool:
        return bool(self.schema.primary_keys)

    def new_write(self, *, overwrite: bool = False) -> TableWrite:
        """A writer for engines: ``write(batch)`` then ``prepare_commit()`` → messages for :meth:`new_commit`.

        With ``precommit-compact = true``, pass the messages of all the writers of one commit through
        ``paimon_core.compact.precommit_compact`` before committing them (:meth:`append` does).

        On a primary-key table it is a :class:`~paimon_core.table.mergetree.KeyValueTableWrite` (upserts,
        ``delete(keys)``); ``overwrite=True`` writes into fresh merge trees, for an OVERWRITE commit.
        """
        if self.has_primary_key:
            return KeyValueTableWrite(self, overwrite=overwrite)
        return TableWrite(self)

    @property
    def live_files(self) -> LiveFileIndex:
        """The live files of the latest snapshot committers saw through this handle (see :class:`LiveFileIndex`)."""
        if self._live_files is None:
            self._live_files = LiveFileIndex(self)
        return self._live_files

    def new_commit(self, commit_user: str | None = None) -> TableCommit:
        return TableCommit(self, commit_user)

    def append(self, data: Any) -> int | None:
        """Append data in one commit. Returns the new snapshot id (None when there was nothing to write).

        Unless ``write-only``, compaction follows as Paimon's writers do: bucketed tables compact the
        written buckets, unaware-bucket tables run the compaction coordinator of this handle. Compaction
        commits separately (COMPACT), after the APPEND, and never makes the append fail.
        """
        created = self._write_and_commit(data, lambda commit, messages: commit.commit(messages))
        factory = self.hooks.commit_compactor
        if (
            created is not None
            and factory is not None
            and self.bucket == -1
            and not self.has_primary_key
            and not self.options.get_option(opts.WRITE_ONLY)
        ):
            if self._inline_compactor is None:
                self._inline_compactor = factory(self)
            self._inline_compactor.after_commit()
        return created

    def overwrite(self, data: Any, partition: Mapping[str, Any] | None = None) -> int | None:
        """Replace data in one OVERWRITE commit.

        With ``partition`` (``{"dt": "2024-01-01"}``), only that partition is replaced and the data must lie
        in it; ``partition={}`` replaces the whole table. With None, a partitioned table replaces only the
        partitions present in the data when ``dynamic-partition-overwrite`` is true (Paimon's default), and the
        whole table otherwise.
        """
        return self._write_and_commit(
            data, lambda commit, messages: commit.overwrite(messages, partition), overwrite=True
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
        created = self._write_and_commit(
            keys, lambda commit, messages: commit.commit(messages), deleting=True
        )
        return created

    def _write_and_commit(
        self, data: Any, do_commit: Any, *, overwrite: bool = False, deleting: bool = False
    ) -> int | None:
        writer = self.new_write(overwrite=overwrite)
        messages: list[CommitMessage] = []
        committing = False
        try:
            if deleting:
                assert isinstance(writer, KeyValueTableWrite)
                writer.delete(data)
            else:
                writer.write(data)
            messages = writer.prepare_commit()
            if self.hooks.precommit is not None:  # precommit-compact, over all of the commit's files
                messages = self.hooks.precommit(self, messages)
            committing = True
            created: list[int] = do_commit(self.new_commit(), messages)
        except _COMMIT_NEVER_LANDED:
            writer.abort(messages)
            raise
        except BaseException:
            # The commit may have landed (an unknown outcome, an interrupt mid-publish): the new files
            # may be referenced, so they stay; orphan cleanup removes them if they are not. Before the
            # commit started nothing can reference them.
            writer.abort([] if committing else messages)
            raise
        finally:
            writer.close()
        return created[-1] if created else None

    # --- reading -----------------------------------------------------------------------------------------

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
        return TableScan(self, snapshot_id, predicate, tag=tag, timestamp=timestamp)

    def new_read(self, columns: Sequence[str] | None = None, filter: FilterLike = None) -> TableRead:
        predicate, expression = parse_filter(filter, self.arrow_schema)
        return self._reader(columns, predicate if predicate is not None else expression)

    def _reader(self, columns: Sequence[str] | None, row_filter: Any) -> TableRead:
        # A Predicate rather than its expression: its terms also skip row groups by their statistics.
        if self.has_primary_key:
            return KeyValueTableRead(self, columns, row_filter)
        return TableRead(self, columns, row_filter)

    def _plan(
        self, columns: Sequence[str] | None, filter: FilterLike, travel: TimeTravel
    ) -> tuple[TableRead, list[DataSplit]]:
        predicate, expression = parse_filter(filter, self.arrow_schema)
        read = self._reader(columns, predicate if predicate is not None else expression)
        scan = TableScan(self, travel.snapshot_id, predicate, tag=travel.tag, timestamp=travel.timestamp)
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


def _check_dynamic_options(stored: Options, merged: Options) -> None:
    """Dynamic options must not reshape the table (``bucket``, the merge engine...) nor contradict its other
    options, as Java's ``copy`` checks; a table whose stored options already conflict still opens."""
    opts.check_option_changes(stored, merged, dynamic=True)
    try:
        opts.check_consistency(stored)
    except ConfigError:
        return  # written so by an older version: refusing here would lock the table
    opts.check_consistency(merged)


def open_table(uri: str, storage_options: Mapping[str, str] | None = None, **dynamic_options: Any) -> Table:
    """Open a table by its directory URI (``/warehouse/db.db/t``, ``s3://bucket/wh/db.db/t``)."""
    storage = get_backend(uri, storage_options)
    schema = SchemaManager(storage, uri.rstrip("/")).latest()
    if schema is None:
        raise TableNotFoundError(uri)
    return Table(uri, storage, schema, dynamic_options=dynamic_options)
