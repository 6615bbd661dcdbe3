"""Reading and writing manifest files and manifest lists, with exact sizes (docs/format.md#avro-metadata-files).

Every file is serialized in memory and written once, so the size recorded in the parent (manifest list
``_FILE_SIZE``, snapshot ``*ManifestListSize``) is exactly the length of the bytes written.
"""

from __future__ import annotations

import functools
import io
import itertools
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastavro.write import Writer

from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest._avro import (
    PARSED_ENTRY_SCHEMA,
    PARSED_FILE_META_SCHEMA,
    SYNC_INTERVAL,
    avro_codec,
    decode_entries,
    decode_file_metas,
    encode_ocf,
    entry_to_record,
    file_meta_to_record,
)
from paimon_core.manifest._entry import (
    EMPTY_ROW_BYTES,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from paimon_core.redaction import get_logger

if TYPE_CHECKING:
    from paimon_core.storage import StorageBackend
    from paimon_core.types import DataType

logger = get_logger(__name__)

__all__ = [
    "ManifestContext",
    "ManifestNamer",
    "MetaBuilder",
    "RollingManifestWriter",
    "compute_partition_stats",
    "read_all_entries",
    "read_manifest_file",
    "read_manifest_list",
    "read_manifest_where",
    "readable_partition_stats",
    "write_manifest_file",
    "write_manifest_list",
    "write_manifests",
]

# Like Java's RollingFileWriter: look at the written size only every this many records.
ROLL_CHECK_RECORDS = 1000
DEFAULT_TARGET_FILE_SIZE = 8 << 20
# Merged manifests hold a narrow range of partitions: they are cut at target-size / RANGE_FRACTION.
RANGE_FRACTION = 64


class ManifestNamer:
    """Names new metadata files as ``<prefix>-<uuid>-<n>``: one UUID per instance (per committer), n counting up."""

    def __init__(self) -> None:
        self._uuid = str(uuid.uuid4())
        self._counter = itertools.count()

    def __call__(self, prefix: str) -> str:
        return f"{prefix}-{self._uuid}-{next(self._counter)}"


@dataclass(frozen=True)
class ManifestContext:
    """What manifest reading and writing need to know about a table.

    Attributes:
        storage: the table's storage backend.
        manifest_dir: ``<table>/manifest``.
        partition_types: the partition columns' types, in partition order (for ``_PARTITION_STATS``).
        codec: fastavro codec name (see :func:`avro_codec`); ``zstandard`` by default.
        compression_level: codec level (Java's default zstd level is 1); None = the codec's default.
        target_file_size: ``manifest.target-file-size``; manifests roll at this size.
        merge_min_count: ``manifest.merge-min-count``.
        full_compaction_threshold: ``manifest.full-compaction-threshold-size``.
    """

    storage: StorageBackend
    manifest_dir: str
    partition_types: tuple[DataType, ...] = ()
    codec: str = "zstandard"
    compression_level: int | None = 1
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE
    merge_min_count: int = 30
    full_compaction_threshold: int = 16 << 20

    def __post_init__(self) -> None:
        if not isinstance(self.partition_types, tuple):
            object.__setattr__(self, "partition_types", tuple(self.partition_types))
        # Accept Paimon names too ("zstd"); also sets up the zstandard codec if fastavro lacks it.
        object.__setattr__(self, "codec", avro_codec(self.codec))

    @classmethod
    def for_table(
        cls,
        storage: StorageBackend,
        table_path: str,
        partition_types: Sequence[DataType],
        options: Mapping[str, str] | None = None,
    ) -> ManifestContext:
        """Build from a table's location and options (``manifest.*`` and ``file.compression.zstd-level``)."""
        from paimon_core import options as opts
        from paimon_core.storage import join_path

        parsed = opts.Options.of(options or {})
        return cls(
            storage=storage,
            manifest_dir=join_path(table_path, "manifest"),
            partition_types=tuple(partition_types),
            codec=avro_codec(parsed.get_option(opts.MANIFEST_COMPRESSION)),
            compression_level=parsed.get_option(opts.FILE_COMPRESSION_ZSTD_LEVEL),
            target_file_size=parsed.get_option(opts.MANIFEST_TARGET_FILE_SIZE),
            merge_min_count=parsed.get_option(opts.MANIFEST_MERGE_MIN_COUNT),
            full_compaction_threshold=parsed.get_option(opts.MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE),
        )

    def path(self, file_name: str) -> str:
        from paimon_core.storage import join_path

        return join_path(self.manifest_dir, file_name)

    @property
    def level(self) -> int | None:
        return self.compression_level if self.codec == "zstandard" else None

    @property
    def range_size(self) -> int:
        """The size a merged manifest of a range of partitions is cut at (see :mod:`._merge`): a 64th of the
        target size, at least 256 bytes of entries."""
        return max(self.target_file_size // RANGE_FRACTION, 256)


# --- partition stats --------------------------------------------------------------------------------------


def compute_partition_stats(
    entries: Iterable[ManifestEntry], partition_types: Sequence[DataType]
) -> SimpleStats:
    """``_PARTITION_STATS`` over the entries: per partition field min, max and null count (one per entry)."""
    stats = _PartitionStats(partition_types)
    for entry in entries:
        stats.add(entry.partition)
    return stats.result()


class _PartitionStats:
    """Accumulates ``_PARTITION_STATS`` from partitions (stored bytes) and from other manifests' stats."""

    def __init__(self, partition_types: Sequence[DataType]) -> None:
        self.types = list(partition_types)
        self.counts: dict[bytes, int] = {}
        arity = len(self.types)
        self.mins: list[Any] = [None] * arity
        self.maxs: list[Any] = [None] * arity
        self.nulls = [0] * arity

    def add(self, partition: bytes, count: int = 1) -> None:
        self.counts[partition] = self.counts.get(partition, 0) + count

    def add_stats(self, stats: SimpleStats) -> bool:
        """Include a manifest's partition stats; False when they cannot be read (the result is then unknown)."""
        if not self.types:
            return True
        decoded = _decode_stats(stats.min_values, stats.max_values, stats.null_counts, tuple(self.types))
        if decoded is None:
            return False
        mins, maxs, nulls = decoded
        for i, (low, high) in enumerate(zip(mins, maxs, strict=True)):
            self._widen(i, low)
            self._widen(i, high)
            self.nulls[i] += nulls[i] or 0
        return True

    def _widen(self, i: int, value: Any) -> None:
        if value is None:
            return
        if self.mins[i] is None or value < self.mins[i]:
            self.mins[i] = value
        if self.maxs[i] is None or value > self.maxs[i]:
            self.maxs[i] = value

    def result(self) -> SimpleStats:
        if not self.types:
            return SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())
        from paimon_core.binary_row import deserialize_row, serialize_row

        for partition, count in self.counts.items():
            for i, value in enumerate(deserialize_row(partition, self.types)):
                if value is None:
                    self.nulls[i] += count
                else:
                    self._widen(i, value)
        self.counts = {}
        return SimpleStats(
            serialize_row(self.mins, self.types), serialize_row(self.maxs, self.types), tuple(self.nulls)
        )


def readable_partition_stats(meta: ManifestFileMeta, partition_types: Sequence[DataType]) -> bool:
    """Whether ``meta``'s partition stats can be combined with others (:meth:`MetaBuilder.add_meta`)."""
    if not partition_types:
        return True
    stats = meta.partition_stats
    return (
        _decode_stats(stats.min_values, stats.max_values, stats.null_counts, tuple(partition_types))
        is not None
    )


@functools.lru_cache(maxsize=4096)
def _decode_stats(
    min_values: bytes,
    max_values: bytes,
    null_counts: tuple[int | None, ...] | None,
    types: tuple[DataType, ...],
) -> tuple[list[Any], list[Any], tuple[int | None, ...]] | None:
    """Partition stats decoded (cached: merges combine the same manifests' stats commit after commit); None
    when they do not fit the partition types."""
    from paimon_core.binary_row import deserialize_row

    try:
        mins = deserialize_row(min_values, list(types))
        maxs = deserialize_row(max_values, list(types))
    except Exception:  # another writer's layout
        return None
    nulls = null_counts or ()
    if len(nulls) != len(types) or any(n is None for n in nulls):
        return None
    return mins, maxs, nulls


class MetaBuilder:
    """The manifest-list record of a manifest assembled from entries, from records cut out of other manifests
    and from whole manifests.

    Partition stats, counts and buckets are exact. Schema id, levels and row ids of records are known only
    for the manifest they came from (:meth:`add_bounds`): the result covers that manifest's range, which can
    only be wider than the records' own. Readers use these fields to skip manifests, so wider is safe.
    """

    def __init__(self, partition_types: Sequence[DataType]) -> None:
        self._partitions = _PartitionStats(partition_types)
        self._buckets_known = True
        self.added = 0
        self.deleted = 0
        self._schema_id = -1
        self._buckets: list[int] = []
        self._levels: list[int | None] = []
        self._row_ids: list[int | None] = []
        self._total_buckets: set[int | None] = set()

    def add_entry(self, entry: ManifestEntry) -> None:
        self.add_record(int(entry.kind), entry.partition, entry.bucket, entry.total_buckets)
        self.add_entry_bounds(entry)

    def add_entry_bounds(self, entry: ManifestEntry) -> None:
        """The schema id, level and row ids of an entry whose record was added with :meth:`add_record`."""
        f = entry.file
        self._schema_id = max(self._schema_id, f.schema_id)
        self._levels += [f.level, f.level]
        if f.first_row_id is None:
            self._row_ids.append(None)
        else:
            self._row_ids += [f.first_row_id, f.first_row_id + f.row_count - 1]

    def add_record(self, kind: int, partition: bytes, bucket: int, total_buckets: int) -> None:
        """One record's prefix; its ``_FILE`` bounds come with :meth:`add_bounds` of its manifest."""
        if kind == FileKind.ADD:
            self.added += 1
        else:
            self.deleted += 1
        self._partitions.add(partition)
        self._buckets.append(bucket)
        self._total_buckets.add(total_buckets)

    def add_bounds(self, meta: ManifestFileMeta) -> None:
        """The schema id, levels and row ids of ``meta`` cover records taken from it."""
        self._schema_id = max(self._schema_id, meta.schema_id)
        self._levels += [meta.min_level, meta.max_level]
        self._row_ids += [meta.min_row_id, meta.max_row_id]

    def add_meta(self, meta: ManifestFileMeta) -> None:
        """All of ``meta``'s entries, taken unchanged.

        Raises:
            ValueError: its partition stats cannot be read (see :func:`readable_partition_stats`).
        """
        if not self._partitions.add_stats(meta.partition_stats):
            raise ValueError(f"unreadable partition stats of manifest {meta.file_name}")
        self.added += meta.num_added_files
        self.deleted += meta.num_deleted_files
        self.add_bounds(meta)
        if meta.min_bucket is None or meta.max_bucket is None:
            self._buckets_known = False
        else:
            self._buckets += [meta.min_bucket, meta.max_bucket]
        self._total_buckets.add(meta.total_buckets)

    def build(self, file_name: str, file_size: int) -> ManifestFileMeta:
        levels = [v for v in self._levels if v is not None]
        known_levels = len(levels) == len(self._levels) and levels
        row_ids = [v for v in self._row_ids if v is not None]
        known_rows = len(row_ids) == len(self._row_ids) and row_ids
        buckets_known = self._buckets_known and self._buckets
        # Only a common, positive bucket count says something about every entry (pypaimon writes the same).
        total = next(iter(self._total_buckets)) if len(self._total_buckets) == 1 else None
        stats = self._partitions.result()
        return ManifestFileMeta(
            file_name=file_name,
            file_size=file_size,
            num_added_files=self.added,
            num_deleted_files=self.deleted,
            partition_stats=stats,
            schema_id=max(self._schema_id, 0),
            min_bucket=min(self._buckets) if buckets_known else None,
            max_bucket=max(self._buckets) if buckets_known else None,
            min_level=min(levels) if known_levels else None,
            max_level=max(levels) if known_levels else None,
            min_row_id=min(row_ids) if known_rows else None,
            max_row_id=max(row_ids) if known_rows else None,
            total_buckets=total if total is not None and total > 0 else None,
        )


def _build_meta(
    file_name: str, file_size: int, entries: Sequence[ManifestEntry], partition_types: Sequence[DataType]
) -> ManifestFileMeta:
    builder = MetaBuilder(partition_types)
    for entry in entries:
        builder.add_entry(entry)
    return builder.build(file_name, file_size)


# --- manifest files ---------------------------------------------------------------------------------------


def write_manifest_file(
    storage: StorageBackend,
    path: str,
    entries: Sequence[ManifestEntry],
    partition_types: Sequence[DataType] = (),
    codec: str = "zstandard",
    compression_level: int | None = 1,
) -> ManifestFileMeta:
    """Write one manifest file holding ``entries`` (in order) and describe it for a manifest list.

    Raises:
        ValueError: ``entries`` is empty (Java never writes an empty manifest).
        FileExistsError: ``path`` exists (names are unique; this is a bug or a name collision).
    """
    if not entries:
        raise ValueError("a manifest file needs at least one entry")
    records = (entry_to_record(e) for e in entries)
    size = write_avro_file(storage, path, PARSED_ENTRY_SCHEMA, records, codec, compression_level)
    from paimon_core.storage import path_name

    return _build_meta(path_name(path), size, entries, partition_types)


def write_avro_file(
    storage: StorageBackend,
    path: str,
    schema: Any,
    records: Iterable[dict[str, Any]],
    codec: str,
    compression_level: int | None,
) -> int:
    """Write records as a new Avro file of Paimon metadata (``compression_level`` counts for zstd only);
    returns its size in bytes."""
    level = compression_level if codec == "zstandard" else None
    data = encode_ocf(schema, records, codec, level)
    storage.write_bytes(path, data, overwrite=False)
    return len(data)


def read_metadata_file(storage: StorageBackend, path: str, what: str) -> bytes:
    try:
        return storage.read_bytes(path)
    except FileNotFoundError:
        raise CorruptMetadataError(
            f"{what} {path} is missing: the table's metadata refers to it, so the table is corrupt "
            "(was it deleted by hand, or by a cleanup that ignored a snapshot or tag?)",
            path,
        ) from None


def read_manifest_file(storage: StorageBackend, path: str) -> list[ManifestEntry]:
    """Read every entry of a manifest file, in order.

    Raises:
        CorruptMetadataError: the file is missing or unreadable.
    """
    return decode_entries(read_metadata_file(storage, path, "manifest file"), path)


def read_manifest_where(
    storage: StorageBackend, path: str, keep_partition: Callable[[bytes], bool]
) -> list[ManifestEntry]:
    """The entries of a manifest file whose partition (stored bytes) ``keep_partition`` accepts, in order.

    The partition is read before anything else of an entry: the rest of the others is skipped undecoded.

    Raises:
        CorruptMetadataError: the file is missing or unreadable.
    """
    from paimon_core.manifest._raw import decode_entries_where

    data = read_metadata_file(storage, path, "manifest file")
    entries = decode_entries_where(data, keep_partition, path)
    if entries is None:  # records of an unusual layout: decode them all
        entries = [e for e in decode_entries(data, path) if keep_partition(e.partition)]
    return entries


def read_all_entries(
    ctx: ManifestContext, metas: Sequence[ManifestFileMeta], max_workers: int = 8
) -> list[ManifestEntry]:
    """The entries of several manifests, concatenated in manifest order (read in parallel)."""
    paths = [ctx.path(m.file_name) for m in metas]
    if len(paths) <= 1 or max_workers <= 1:
        chunks = [read_manifest_file(ctx.storage, p) for p in paths]
    else:
        with ThreadPoolExecutor(max_workers=min(max_workers, len(paths))) as pool:
            chunks = list(pool.map(lambda p: read_manifest_file(ctx.storage, p), paths))
    return [entry for chunk in chunks for entry in chunk]


class RollingManifestWriter:
    """Writes entries into as many manifests as needed, rolling at ``ctx.target_file_size``.

    As in Java, the size is checked every :data:`ROLL_CHECK_RECORDS` records, so a manifest may exceed the
    target by up to that many records. Use as a context manager, or call :meth:`close` (success) or
    :meth:`abort` (deletes what was written).
    """

    def __init__(self, ctx: ManifestContext, new_name: Callable[[str], str] | None = None) -> None:
        self.ctx = ctx
        self.new_name = new_name or ManifestNamer()
        self.result: list[ManifestFileMeta] = []
        self._buffer: io.BytesIO | None = None
        self._writer: Writer | None = None
        self._pending: list[ManifestEntry] = []
        self._closed = False

    def write(self, entry: ManifestEntry) -> None:
        if self._closed:
            raise ValueError("the manifest writer is closed")
        if self._writer is None:
            self._buffer = io.BytesIO()
            self._writer = Writer(
                self._buffer,
                PARSED_ENTRY_SCHEMA,
                codec=self.ctx.codec,
                sync_interval=SYNC_INTERVAL,
                compression_level=self.ctx.level,
            )
        self._writer.write(entry_to_record(entry))
        self._pending.append(entry)
        if len(self._pending) % ROLL_CHECK_RECORDS == 0:
            self._writer.flush()
            assert self._buffer is not None
            if self._buffer.tell() >= self.ctx.target_file_size:
                self._roll()

    def write_all(self, entries: Iterable[ManifestEntry]) -> None:
        for entry in entries:
            self.write(entry)

    def _roll(self) -> None:
        if self._writer is None or not self._pending:
            return
        self._writer.flush()
        assert self._buffer is not None
        data = self._buffer.getvalue()
        name = self.new_name("manifest")
        self.ctx.storage.write_bytes(self.ctx.path(name), data, overwrite=False)
        self.result.append(_build_meta(name, len(data), self._pending, self.ctx.partition_types))
        self._writer = None
        self._buffer = None
        self._pending = []

    def close(self) -> list[ManifestFileMeta]:
        """Finish the current manifest and return all written manifests' metas."""
        if not self._closed:
            self._roll()
            self._closed = True
        return self.result

    def abort(self) -> None:
        """Delete the manifests written so far (best effort)."""
        self._closed = True
        self._writer = None
        for meta in self.result:
            try:
                self.ctx.storage.delete(self.ctx.path(meta.file_name))
            except OSError:
                logger.warning("could not delete manifest %s while aborting", meta.file_name, exc_info=True)
        self.result = []

    def __enter__(self) -> RollingManifestWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_manifests(
    ctx: ManifestContext, entries: Iterable[ManifestEntry], new_name: Callable[[str], str] | None = None
) -> list[ManifestFileMeta]:
    """Write entries into rolling manifests; nothing (an empty list) for no entries."""
    with RollingManifestWriter(ctx, new_name) as writer:
        writer.write_all(entries)
    return writer.result


# --- manifest lists ---------------------------------------------------------------------------------------


def write_manifest_list(
    storage: StorageBackend,
    path: str,
    metas: Sequence[ManifestFileMeta],
    codec: str = "zstandard",
    compression_level: int | None = 1,
) -> int:
    """Write a manifest list (possibly empty) as a single file; returns its exact size in bytes."""
    records = (file_meta_to_record(m) for m in metas)
    return write_avro_file(storage, path, PARSED_FILE_META_SCHEMA, records, codec, compression_level)


def read_manifest_list(storage: StorageBackend, path: str) -> list[ManifestFileMeta]:
    """Read a manifest list.

    Raises:
        CorruptMetadataError: the file is missing or unreadable.
    """
    return decode_file_metas(read_metadata_file(storage, path, "manifest list"), path)
