"""The table store: what every operation on a table needs, and nothing that builds an operation.

A :class:`TableStore` is a table's location (path, storage, identifier), its schema and options (stored
plus dynamic), its schema and snapshot managers, manifest context, shape (partition keys, buckets...),
paths, live-file index and the :class:`TableHooks` whoever opened it handed in. Scans, reads, writes,
commits, streams, compaction and maintenance take a store; :class:`~paimon_core.table.Table`, the facade,
is a store that also composes them (docs/architecture.md, "The table store").

Hooks are what the layers above ``table/`` plug into a table: snapshot expiration after a commit (as
Java's committer runs it), the inline compaction of writers, and ``precommit-compact``. ``table/`` never
imports compaction or maintenance; the catalog and :func:`paimon_core.open_table` pass the standard hooks
(``paimon_core._standard_hooks``) to every table they open, and copies and pickles keep them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from paimon_core import options as opts
from paimon_core.binary_row import deserialize_row
from paimon_core.branch import branch_path, normalize_branch
from paimon_core.consumer import ConsumerManager
from paimon_core.errors import ConfigError, UnsupportedTableFeatureError
from paimon_core.manifest import (
    DataFileMeta,
    IndexManifestEntry,
    ManifestContext,
    ManifestEntry,
    read_index_manifest,
)
from paimon_core.options import Options
from paimon_core.partition import partition_path
from paimon_core.redaction import get_logger, redact
from paimon_core.schema import SchemaManager, TableSchema
from paimon_core.snapshot import Snapshot, SnapshotManager
from paimon_core.storage import StorageBackend, join_path, parent_path, uri_scheme
from paimon_core.table._compacted_changelog import real_changelog_path
from paimon_core.table._entries import LiveFileIndex, live_entries
from paimon_core.table._external import ExternalPaths, external_roots
from paimon_core.table._features import check_supported_features
from paimon_core.table._messages import CommitMessage
from paimon_core.tag import TagManager
from paimon_core.types import DataType, to_arrow_schema

__all__ = [
    "BucketCompaction",
    "CommitCompactor",
    "TableHooks",
    "TableStore",
    "default_hooks",
    "set_default_hooks",
]

logger = get_logger(__name__)

_Store = TypeVar("_Store", bound="TableStore")


class CommitCompactor(Protocol):
    """Compaction a table handle runs after each of its commits (unaware-bucket tables)."""

    def after_commit(self) -> list[int]: ...


class BucketCompaction(Protocol):
    """Compaction a writer runs per bucket before it commits (bucketed tables)."""

    def restore(self, restored: dict[tuple[bytes, int], list[DataFileMeta]]) -> None: ...

    def compact(
        self, partition: bytes, bucket: int, new_files: Sequence[DataFileMeta]
    ) -> tuple[tuple[DataFileMeta, ...], tuple[DataFileMeta, ...]]: ...


@dataclass(frozen=True)
class TableHooks:
    """The work a table delegates upwards; each is optional. Picklable when its callables are module-level
    functions or classes (the standard ones are): pickled tables keep their hooks.

    Attributes:
        after_commit: runs after a commit created snapshots, also for ``write-only`` tables (automatic tags,
            tag, partition, consumer and snapshot expiration, which decides what ``write-only`` skips);
            failures are logged.
        commit_compactor: builds the compactor a handle runs after its commits (unaware-bucket tables;
            :class:`~paimon_core.table.CommitPipeline` runs it).
        bucket_compaction: builds the per-bucket compaction of a writer (bucketed tables).
        precommit: rewrites the messages of all the writers of one commit before they are committed
            (``precommit-compact``); the commit pipeline calls it, writers never do.
        compact: the dedicated compaction job :meth:`Table.compact <paimon_core.table.Table.compact>` runs
            (:func:`paimon_core.compact.compact_table`), with the keyword arguments it was given.
    """

    after_commit: Callable[[TableStore, Sequence[int]], None] | None = None
    commit_compactor: Callable[[TableStore], CommitCompactor] | None = None
    bucket_compaction: Callable[[TableStore], BucketCompaction] | None = None
    precommit: Callable[[TableStore, list[CommitMessage]], list[CommitMessage]] | None = None
    compact: Callable[..., Any] | None = None


_default = TableHooks()

POSTPONE_BUCKET = -2
"""The bucket of a postpone-bucket table's (``bucket = -2``) new files, in ``bucket-postpone/``: invisible to
reads until a compaction moves them into real buckets (Java Paimon 1.1+)."""


def default_hooks() -> TableHooks:
    """The hooks of a table built without any: none, unless :func:`set_default_hooks` chose some.

    Whoever opens a table hands it its hooks: the catalog, :func:`paimon_core.open_table` and
    ``Table.open(hooks=...)`` pass the standard ones; ``copy``, ``with_storage`` and pickling keep them. A
    bare ``Table(path, storage, schema)`` commits without expiration or compaction around its commits.
    """
    return _default


def set_default_hooks(hooks: TableHooks) -> TableHooks:
    """Install ``hooks`` as the default; returns the previous ones."""
    global _default
    previous, _default = _default, hooks
    return previous


class TableStore:
    """One table — an append table or a primary-key table — bound to one schema version: the context every
    operation on it receives.

    ``dynamic_options`` override the stored options for this handle only (Paimon's dynamic options).
    ``hooks``: the work around a commit (expiration, compaction) that whoever opens the table hands in;
    None takes :func:`default_hooks` (none).

    Raises:
        ConfigError: a dynamic option is unknown or malformed, or would reshape the table.
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
        self.hooks = hooks if hooks is not None else default_hooks()
        self.storage = storage
        self.schema = schema
        self.identifier = identifier or self.path
        dynamic = Options.of(dynamic_options)
        dynamic.validate()
        stored = Options.of(schema.options)
        self.options = stored.with_overrides(dynamic)
        if dynamic:
            _check_dynamic_options(stored, self.options)
        check_table_features(self.identifier, self.path, schema, self.options)
        # a handle's branch is chosen when it is opened (a stored 'branch' option would point a table's
        # schema at another branch's snapshots)
        self.branch = normalize_branch(dynamic.get_option(opts.BRANCH))
        # snapshots, schemas, tags and consumers are the branch's; data files and manifests the table's
        self.branch_path = branch_path(self.path, self.branch)
        self.schema_manager = SchemaManager(storage, self.branch_path)
        self.snapshot_manager = SnapshotManager(storage, self.branch_path)
        self.tag_manager = TagManager(storage, self.branch_path)
        self.consumer_manager = ConsumerManager(storage, self.branch_path)
        self._partition_cache: dict[bytes, dict[str, Any]] = {}
        self._bucket_dirs: dict[tuple[bytes, int], str] = {}
        self._live_files: LiveFileIndex | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable for process pools and engines: the handle is rebuilt from its location, options and hooks.
        arguments = (
            self.path,
            self.storage,
            self.schema,
            self.identifier,
            self._dynamic_options(),
            self.hooks,
        )
        return (type(self), arguments)

    def _dynamic_options(self) -> dict[str, str]:
        return {k: v for k, v in self.options.items() if self.schema.options.get(k) != v}

    def with_storage(self: _Store, storage: StorageBackend) -> _Store:
        """This table (its options, dynamic options and hooks) over another storage: a wrapper of the
        table's own, such as one that injects faults or counts calls."""
        return type(self)(
            self.path, storage, self.schema, self.identifier, self._dynamic_options(), self.hooks
        )

    def copy(self: _Store, dynamic_options: Mapping[str, Any]) -> _Store:
        """This table with extra dynamic options (and the same hooks)."""
        merged = self._dynamic_options()
        merged.update({str(k): str(v) for k, v in dynamic_options.items()})
        return type(self)(self.path, self.storage, self.schema, self.identifier, merged, self.hooks)

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

    @property
    def has_primary_key(self) -> bool:
        return bool(self.schema.primary_keys)

    # --- paths -------------------------------------------------------------------------------------------

    @cached_property
    def manifest_context(self) -> ManifestContext:
        return ManifestContext.for_table(self.storage, self.path, self.partition_types, self.options)

    def manifest_path(self, name: str) -> str:
        return self.manifest_context.path(name)

    def index_path(self, file_name: str) -> str:
        return join_path(self.path, "index", file_name)

    def partition_values(self, partition: bytes) -> dict[str, Any]:
        """Decode stored partition bytes into {key: value}."""
        values = self._partition_cache.get(partition)
        if values is None:
            decoded = deserialize_row(partition, self.partition_types) if self.partition_keys else []
            values = dict(zip(self.partition_keys, decoded, strict=True))
            self._partition_cache[partition] = values
        return values

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """The directory of a bucket's data files under the table (``data-file.path-directory``, the
        partition directories, ``bucket-N``); a file with an external path lives there instead."""
        key = (partition, bucket)
        directory = self._bucket_dirs.get(key)
        if directory is None:
            directory = join_path(self.path, self.relative_bucket_dir(partition, bucket))
            self._bucket_dirs[key] = directory
        return directory

    def relative_bucket_dir(self, partition: bytes, bucket: int) -> str:
        """:meth:`bucket_dir` relative to the table (and to each external path)."""
        values = self.partition_values(partition)
        relative = partition_path(
            self.partition_keys,
            [values[k] for k in self.partition_keys],
            self.partition_types,
            self.options.get_option(opts.PARTITION_DEFAULT_NAME),
            self.options.get_option(opts.PARTITION_LEGACY_NAME),
        )
        name = "bucket-postpone" if bucket == POSTPONE_BUCKET else f"bucket-{bucket}"
        directory = self.options.get_option(opts.DATA_FILE_PATH_DIRECTORY) or ""
        return join_path(directory, relative, name)

    def external_paths(self, partition: bytes, bucket: int) -> ExternalPaths | None:
        """Where the new data files of a bucket go when ``data-file.external-paths`` sends them out of the
        table (None: into :meth:`bucket_dir`); each writer takes its own, as each Java writer does."""
        return ExternalPaths.of(self.options, self.relative_bucket_dir(partition, bucket))

    def data_dir(self) -> str:
        """The directory above the partition directories (``data-file.path-directory`` under the table)."""
        return join_path(self.path, self.options.get_option(opts.DATA_FILE_PATH_DIRECTORY) or "")

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
                    paths.update(
                        dict.fromkeys(join_path(parent_path(path), extra) for extra in file.extra_files)
                    )
            paths.update(dict.fromkeys(self.index_path(f.file_name) for f in message.new_index_files))
        for path in paths:
            try:
                self.storage.delete(path)
            except OSError:
                logger.warning("could not delete uncommitted file %s", path, exc_info=True)

    # --- snapshots and their files -----------------------------------------------------------------------

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot still present, oldest first."""
        return list(self.snapshot_manager.snapshots())

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    @property
    def live_files(self) -> LiveFileIndex:
        """The live files of the latest snapshot committers saw through this handle (see :class:`LiveFileIndex`)."""
        if self._live_files is None:
            self._live_files = LiveFileIndex(self)
        return self._live_files

    def live_entries(self, snapshot_id: int | None = None) -> list[ManifestEntry]:
        """The live ADD entries of a snapshot (the latest when None)."""
        sm = self.snapshot_manager
        snapshot = sm.snapshot(snapshot_id) if snapshot_id is not None else sm.latest()
        return live_entries(self, snapshot)

    def index_entries(self, snapshot: Snapshot | None = None) -> list[IndexManifestEntry]:
        """The live index files of a snapshot (the latest when None): hash indexes, deletion vectors."""
        snapshot = snapshot or self.snapshot_manager.latest()
        if snapshot is None or not snapshot.index_manifest:
            return []
        return read_index_manifest(self.storage, self.manifest_path(snapshot.index_manifest))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identifier!r}, schema_id={self.schema.id}, path={self.path!r})"


def _check_dynamic_options(stored: Options, merged: Options) -> None:
    """Dynamic options must not reshape the table (``bucket``, the merge engine...) nor contradict its other
    options, as Java's ``copy`` checks; a table whose stored options already conflict still opens."""
    opts.check_option_changes(stored, merged, dynamic=True)
    try:
        opts.check_consistency(stored)
    except ConfigError:
        return  # written so by an older version: refusing here would lock the table
    opts.check_consistency(merged)


def check_table_features(identifier: str, path: str, schema: TableSchema, options: Options) -> None:
    """Refuse, when a table is created or opened, what this implementation cannot read or write right: a
    feature of Java Paimon it does not implement, external paths on another storage than the table's, or
    external path options that choose no path.

    Raises:
        UnsupportedTableFeatureError: naming the feature and its option.
        ConfigError: the external path options are wrong.
    """
    check_supported_features(identifier, schema, options)
    # External paths must be on the table's own storage: one backend reads and writes a table here.
    for root in external_roots(options):
        if uri_scheme(root) != uri_scheme(path):
            raise UnsupportedTableFeatureError(
                identifier,
                "an external data path on another storage than the table's",
                opts.DATA_FILE_EXTERNAL_PATHS.key,
                f"{redact(root)} is {uri_scheme(root)}, the table {uri_scheme(path)}",
            )
