"""Dynamic bucket (``bucket = -1``): which bucket a key goes to, and the hash index that remembers it.

See docs/primary-key-tables.md ("Dynamic bucket"). Each (partition, bucket) has a hash index file under
``index/``: the 32-bit key hashes of every key the bucket holds, big-endian, nothing else. A writer loads
a partition's files, sends known keys to their bucket, and fills new keys into the buckets that have room
(fewer than ``dynamic-bucket.target-row-num`` keys), in bucket order, opening the lowest free bucket id when
all are full, as Java's single assigner does. At commit, each bucket that gained keys gets a complete new
index file, which replaces the old one in the snapshot's index manifest.

One process assigns per partition: two writers assigning new keys of a partition at once could send a key
to two buckets, so the committer refuses an index file whose predecessor another commit replaced.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from paimon_core import options as opts
from paimon_core.bucket import hash_keys
from paimon_core.errors import CorruptMetadataError, MergeError
from paimon_core.manifest import HASH_INDEX, IndexFileMeta, IndexManifestEntry, ManifestNamer

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["DynamicBucketAssigner", "PartitionIndex", "read_hash_index"]

Hashes = npt.NDArray[np.int32]
_BIG_ENDIAN_INT32 = np.dtype(">i4")
_MAX_BUCKETS = 32767  # Java keeps bucket ids in a short


def read_hash_index(table: TableStore, meta: IndexFileMeta) -> Hashes:
    """The key hashes stored in one hash index file."""
    path = meta.external_path or table.index_path(meta.file_name)
    try:
        data = table.storage.read_bytes(path)
    except FileNotFoundError:
        raise CorruptMetadataError(f"hash index file {path} is missing", path) from None
    if len(data) % 4:
        raise CorruptMetadataError(f"hash index file {path} is not a sequence of 32-bit ints", path)
    return np.frombuffer(data, dtype=_BIG_ENDIAN_INT32).astype(np.int32)


class PartitionIndex:
    """The key hash → bucket map of one partition, and the buckets that still take new keys.

    Args:
        buckets: each bucket's key hashes (from its index file).
        target_rows: ``dynamic-bucket.target-row-num``.
        max_buckets: ``dynamic-bucket.max-buckets`` (-1: Java's limit of 32767).
    """

    def __init__(self, buckets: dict[int, Hashes], target_rows: int, max_buckets: int) -> None:
        self._target = target_rows
        self._max = _MAX_BUCKETS if max_buckets == -1 else min(max_buckets, _MAX_BUCKETS)
        self._limited = max_buckets != -1
        # Java loads buckets in id order; those found full leave this map.
        self._room = {b: len(h) for b, h in sorted(buckets.items())}
        self._existing = set(buckets)
        self.gained: set[int] = set()  # buckets that took new keys since the last index files
        self._known, self._owner = _sorted_map(
            np.concatenate([np.empty(0, np.int32), *buckets.values()]).astype(np.int32),
            np.concatenate(
                [np.empty(0, np.int32), *(np.full(len(h), b, np.int32) for b, h in buckets.items())]
            ),
        )

    def hashes_of(self, bucket: int) -> Hashes:
        """Every key hash the bucket holds (what its next index file stores)."""
        held: Hashes = self._known[self._owner == bucket]
        return held

    def assign(self, hashes: Hashes) -> npt.NDArray[np.int32]:
        """The bucket of each key hash; new hashes are recorded for their bucket's next index file."""
        result = np.empty(len(hashes), np.int32)
        found, position = _lookup(self._known, hashes)
        result[found] = self._owner[position[found]]
        missing = ~found
        if not missing.any():
            return result
        # New keys in order of first appearance, each once: the order Java meets them in.
        unique, first = np.unique(hashes[missing], return_index=True)
        arrival = unique[np.argsort(first, kind="stable")]
        buckets = self._place(len(arrival))
        self.gained.update(int(b) for b in np.unique(buckets))
        self._known, self._owner = _sorted_map(
            np.concatenate([self._known, arrival]), np.concatenate([self._owner, buckets])
        )
        found, position = _lookup(self._known, hashes)
        result[missing] = self._owner[position[missing]]
        return result

    def _place(self, count: int) -> npt.NDArray[np.int32]:
        """Buckets for ``count`` new keys, filled in order (Java's ``PartitionIndex.assign``, one key at a time)."""
        out = np.empty(count, np.int32)
        done = 0
        while done < count:
            for full in [b for b, n in self._room.items() if n >= self._target]:
                del self._room[full]
            bucket = next(iter(self._room), None)
            if bucket is None:
                bucket = self._new_bucket()
                if bucket is None:  # max-buckets reached: Java spreads the rest over existing buckets
                    out[done:] = random.choices(sorted(self._existing), k=count - done)
                    return out
            take = min(self._target - self._room[bucket], count - done)
            out[done : done + take] = bucket
            self._room[bucket] += take
            done += take
        return out

    def _new_bucket(self) -> int | None:
        for bucket in range(self._max):
            if bucket not in self._existing:
                self._existing.add(bucket)
                self._room[bucket] = 0
                return bucket
        if self._limited:
            return None
        raise MergeError(
            f"a dynamic-bucket partition reached {_MAX_BUCKETS} buckets; raise 'dynamic-bucket.target-row-num'"
        )


class DynamicBucketAssigner:
    """Assigns buckets to the rows of a dynamic-bucket table and writes the hash index at commit.

    Args:
        table: the table.
        fresh: start every partition empty (an overwrite replaces the partitions it writes).
    """

    def __init__(self, table: TableStore, *, fresh: bool = False) -> None:
        self.table = table
        self._fresh = fresh
        self._key_names = list(table.schema.trimmed_primary_keys())
        types = {f.name: f.type for f in table.schema.fields}
        self._key_types = [types[k] for k in self._key_names]
        self._target = table.options.get_option(opts.DYNAMIC_BUCKET_TARGET_ROW_NUM)
        self._max = table.options.get_option(opts.DYNAMIC_BUCKET_MAX_BUCKETS)
        self._partitions: dict[bytes, PartitionIndex] = {}
        self._files: dict[tuple[bytes, int], IndexFileMeta] = {}  # the live index file of each bucket
        self._live: dict[bytes, list[IndexManifestEntry]] | None = None
        self._namer = ManifestNamer()  # index-<uuid>-<n>: one UUID per writer, as Java names index files

    def assign(self, partition: bytes, rows: pa.RecordBatch) -> npt.NDArray[np.int32]:
        """The bucket of every row of ``rows`` (all of one partition)."""
        index = self._partitions.get(partition)
        if index is None:
            index = self._partitions[partition] = self._load(partition)
        return index.assign(hash_keys(rows, self._key_names, self._key_types))

    def _load(self, partition: bytes) -> PartitionIndex:
        buckets: dict[int, Hashes] = {}
        if not self._fresh:
            if self._live is None:
                self._live = {}
                for entry in self.table.index_entries():
                    if entry.file.index_type == HASH_INDEX:
                        self._live.setdefault(entry.partition, []).append(entry)
            for entry in self._live.get(partition, []):
                buckets[entry.bucket] = read_hash_index(self.table, entry.file)
                self._files[(partition, entry.bucket)] = entry.file
        return PartitionIndex(buckets, self._target, self._max)

    def index_changes(
        self, partition: bytes, bucket: int
    ) -> tuple[tuple[IndexFileMeta, ...], tuple[IndexFileMeta, ...]]:
        """(new, replaced) index files of a bucket that gained keys since the last call; empty otherwise."""
        index = self._partitions.get(partition)
        if index is None or bucket not in index.gained:
            return (), ()
        index.gained.discard(bucket)
        new = self._write(index.hashes_of(bucket))
        old = self._files.get((partition, bucket))
        self._files[(partition, bucket)] = new
        return (new,), (old,) if old is not None else ()

    def _write(self, hashes: Hashes) -> IndexFileMeta:
        name = self._namer("index")
        data = hashes.astype(_BIG_ENDIAN_INT32).tobytes()
        self.table.storage.write_bytes(self.table.index_path(name), data, overwrite=False)
        return IndexFileMeta(HASH_INDEX, name, len(data), len(hashes))


def _sorted_map(keys: Hashes, values: npt.NDArray[np.int32]) -> tuple[Hashes, npt.NDArray[np.int32]]:
    order = np.argsort(keys, kind="stable")
    return keys[order], values[order]


def _lookup(sorted_keys: Hashes, hashes: Hashes) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp]]:
    position = np.searchsorted(sorted_keys, hashes)
    inside = position < len(sorted_keys)
    found = np.zeros(len(hashes), bool)
    found[inside] = sorted_keys[position[inside]] == hashes[inside]
    return found, np.minimum(position, max(len(sorted_keys) - 1, 0))
