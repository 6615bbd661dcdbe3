"""Manifest merging when building a snapshot's base list (docs/manifests.md), at a cost bounded by the target size.

Without merging every commit would add manifests to the base list forever; merging them the way Java's
legacy merger does (read the run of small manifests, write it again) costs a decode and an encode of every
entry of a manifest that grows up to the target size, which in Python is seconds. Here entries move as their
Avro encoding (:mod:`._raw`): blocks of a manifest are copied as they are, single records are cut out after
reading kind, partition, bucket and file name. Only DELETEs, and ADDs that share partition, bucket and file
name with another entry, are decoded.

**Layout.** Besides the manifests commits write, a base list holds *range manifests*: ADD-only manifests that
each cover a range of values of the first partition field (Java's manifest sort field), no two ranges
overlapping, cut at about ``range_size`` (a 64th of ``manifest.target-file-size``: 128 KiB by default). A
plan of one partition reads the range that holds it (readers prune by ``_PARTITION_STATS``).

**Classification**, from the manifest list alone:

* *DH*: manifests with DELETE entries; *large DH* when at least the target size;
* *large*: ADD-only manifests of at least the target size (Java leaves them out of minor merges too);
* *frozen*: ADD-only manifests of at least twice the range size that hold one value of the first partition
  field (there is nothing to cut them by; every manifest of an unpartitioned table is such);
* *ranges*: among the other ADD-only manifests, the heaviest set whose ranges do not overlap;
* *fresh*: the rest (the manifests of recent commits), the DH below the target size, and ranges below half
  the range size.

**Merging** is due once the fresh manifests number ``manifest.merge-min-count`` or reach the target size
together (Java's minor trigger). Fresh entries cancel in order (an ADD and its DELETE). Below a range's worth of
them, they become one manifest (blocks copied as they are when none deletes anything) and the DELETEs left one
more; the ranges stay. From a range's worth on, they are spread: the remaining DELETEs drop their files from
the ranges that can hold them, the remaining ADDs join the range of their partition (the one before the gap
they fall in). A range that gets nothing keeps its file; one that does is written anew: its blocks as they
are, the new records after them; past twice the range size it is cut at partition boundaries. DELETEs of
files in large or frozen manifests wait in one manifest at the end. Large manifests and large DH are not
touched.

**Full compaction**, once the fresh manifests and all DH add up to ``manifest.full-compaction-threshold-size``
(Java's trigger): the same with every DH, and the remaining DELETEs drop their files from large and frozen
manifests too; no DELETE is left.

**Order.** ADD-only manifests first, then DH in their original order, then the waiting DELETEs: every DELETE
after its ADD, as readers need (they merge in list order). This relies on what Paimon guarantees: a deleted
file is never added again with the same identity. Files written by a failed merge are deleted.
"""

from __future__ import annotations

import bisect
import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from paimon_core._gc import gc_paused
from paimon_core.binary_row import codec_for
from paimon_core.manifest._avro import decode_entries
from paimon_core.manifest._entry import (
    DuplicateFileError,
    FileIdentifier,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
)
from paimon_core.manifest._files import (
    ManifestContext,
    ManifestNamer,
    MetaBuilder,
    read_metadata_file,
    readable_partition_stats,
)
from paimon_core.manifest._raw import ManifestBuilder, RawManifest, RawRecord, encode_record, parse_manifest
from paimon_core.redaction import get_logger

if TYPE_CHECKING:
    from paimon_core.types import DataType

logger = get_logger(__name__)

__all__ = ["merge_manifests"]

_Key = tuple[Any, ...]
_PreKey = tuple[bytes, int, str]
_READ_THREADS = 8
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _read_pool() -> ThreadPoolExecutor:
    """Threads that read the manifests a merge needs, shared by all merges (a commit that merges should not
    start threads first); nothing running on them waits for this pool."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_READ_THREADS, thread_name_prefix="paimon-manifest-merge")
        return _pool


def merge_manifests(
    ctx: ManifestContext,
    metas: Sequence[ManifestFileMeta],
    new_name: Callable[[str], str] | None = None,
) -> list[ManifestFileMeta]:
    """Merge the manifests of a full table state (base + delta of a snapshot) into a shorter list.

    Args:
        ctx: table context; ``target_file_size``, ``merge_min_count`` and ``full_compaction_threshold``
            steer the merge.
        metas: the manifests, in snapshot order.
        new_name: names new manifests (``new_name("manifest")``).

    Returns:
        ``metas`` itself (as a new list) when nothing is due; otherwise untouched input metas plus newly written
        manifests, in an order that keeps every DELETE after its ADD.

    Raises:
        DuplicateFileError: the manifests add one file twice (corrupt table).
        CorruptMetadataError: a manifest is missing or unreadable.
    """
    merge = _Merge(ctx, list(metas), new_name or ManifestNamer())
    try:
        with gc_paused():  # records on the move are many and short-lived; none forms a cycle
            return merge.run()
    except BaseException:
        merge.abort()
        raise


# --- sort keys -----------------------------------------------------------------------------------------------


class _Keys:
    """Sort keys of partitions: the first partition field's value, nulls first; one key without partitions."""

    def __init__(self, ctx: ManifestContext) -> None:
        self.types = list(ctx.partition_types)
        self._cache: dict[bytes, _Key] = {}

    def of(self, partition: bytes) -> _Key:
        key = self._cache.get(partition)
        if key is None:
            value = codec_for(self.types).deserialize(partition)[0] if self.types else None
            key = () if not self.types else ((0,) if value is None else (1, value))
            self._cache[partition] = key
        return key

    def interval(self, meta: ManifestFileMeta) -> tuple[_Key, _Key] | None:
        """The keys ``meta``'s partition stats span; None when they cannot be read."""
        if not self.types:
            return (), ()
        stats = meta.partition_stats
        return _interval(stats.min_values, stats.max_values, stats.null_counts, tuple(self.types))


@functools.lru_cache(maxsize=4096)
def _interval(
    min_values: bytes,
    max_values: bytes,
    null_counts: tuple[int | None, ...] | None,
    types: tuple[DataType, ...],
) -> tuple[_Key, _Key] | None:
    # Cached: every commit classifies the same manifests again.
    try:
        codec = codec_for(types)
        low, high = codec.deserialize(min_values)[0], codec.deserialize(max_values)[0]
    except Exception:  # another writer's layout
        return None
    nulls = null_counts[0] if null_counts else None
    if nulls is None or (low is None and nulls == 0):
        return None
    return ((0,) if nulls > 0 else (1, low)), ((1, high) if high is not None else (0,))


# --- records ------------------------------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class _Rec:
    """One record on the move, with what it costs and where it came from."""

    raw: RawRecord
    weight: float  # its share of its manifest's file size
    source: ManifestFileMeta
    origin: RawManifest | None
    entry: ManifestEntry | None = None
    applied: bool = False  # a DELETE that found its file

    @property
    def prekey(self) -> _PreKey:
        return self.raw.partition, self.raw.bucket, self.raw.file_name

    @property
    def is_add(self) -> bool:
        return self.raw.kind == FileKind.ADD

    def identity(self) -> FileIdentifier:
        if self.entry is None:
            assert self.origin is not None
            self.entry = self.origin.entry(self.raw)
        return self.entry.identifier()


@dataclass(eq=False)
class _Source:
    """An input manifest that is read: its blocks when they can be copied, its records on demand."""

    meta: ManifestFileMeta
    raw: RawManifest | None  # None: records of another layout, decoded and encoded anew
    decoded: list[ManifestEntry] | None = None
    _records: list[_Rec] | None = None

    @property
    def copyable(self) -> bool:
        return self.raw is not None

    def records(self) -> list[_Rec]:
        if self._records is None:
            count = self.meta.num_added_files + self.meta.num_deleted_files
            weight = _content(self.meta) / max(count, 1)
            if self.raw is not None:
                raw = self.raw
                self._records = [_Rec(r, weight, self.meta, raw) for b in raw.blocks for r in raw.records(b)]
            else:
                assert self.decoded is not None
                self._records = [_Rec(_raw_of(e), weight, self.meta, None, e) for e in self.decoded]
        return self._records


def _raw_of(entry: ManifestEntry) -> RawRecord:
    file = entry.file
    return RawRecord(int(entry.kind), entry.partition, entry.bucket, entry.total_buckets, file.file_name,
                     encode_record(entry))  # fmt: skip


@dataclass(eq=False)
class _Slot:
    """A range manifest being kept or written anew: the range it continues (none for a new one), the entries
    it gains and the DELETEs that may remove some of its files."""

    low: _Key
    high: _Key
    sources: list[ManifestFileMeta] = field(default_factory=list)
    added: list[_Rec] = field(default_factory=list)
    deletes: list[_Rec] = field(default_factory=list)


@dataclass
class _Plan:
    large: list[int] = field(default_factory=list)  # ADD-only, >= target size
    frozen: list[int] = field(default_factory=list)
    ranges: list[int] = field(default_factory=list)  # in key order
    fresh: list[int] = field(default_factory=list)
    large_dh: list[int] = field(default_factory=list)
    intervals: dict[int, tuple[_Key, _Key]] = field(default_factory=dict)


# --- the merge ----------------------------------------------------------------------------------------------


class _Merge:
    def __init__(
        self, ctx: ManifestContext, metas: list[ManifestFileMeta], namer: Callable[[str], str]
    ) -> None:
        self.ctx = ctx
        self.metas = metas
        self.namer = namer
        self.keys = _Keys(ctx)
        self.range_size = ctx.range_size
        self.written: list[ManifestFileMeta] = []
        self._sources: dict[str, _Source] = {}

    def abort(self) -> None:
        for meta in self.written:
            try:
                self.ctx.storage.delete(self.ctx.path(meta.file_name))
            except OSError:
                logger.warning(
                    "could not delete manifest %s after a failed merge", meta.file_name, exc_info=True
                )

    def run(self) -> list[ManifestFileMeta]:
        plan = self._classify()
        fresh_size = self._sizes(plan.fresh)
        full = fresh_size + self._sizes(plan.large_dh) >= self.ctx.full_compaction_threshold and bool(
            plan.fresh or plan.large_dh
        )
        # Small ranges count as manifests to merge, as Java counts every small manifest.
        small = [i for i in plan.ranges if _content(self.metas[i]) < self.range_size // 2]
        due = (
            len(plan.fresh) + len(small) >= self.ctx.merge_min_count
            or fresh_size >= self.ctx.target_file_size
        )
        if not (full or due):
            return list(self.metas)
        pool = sorted(plan.fresh + small + (plan.large_dh if full else []))
        merged = set(small)
        plan.ranges = [i for i in plan.ranges if i not in merged]
        distribute = full or sum(_content(self.metas[i]) for i in pool) >= self.range_size
        (logger.info if full else logger.debug)(
            "manifest %s of %d manifests: %d to merge (%d fresh), %d ranges, %d large, %d frozen, %d large with "
            "deletes", "full compaction" if full else "merge", len(self.metas), len(pool), len(plan.fresh),
            len(plan.ranges), len(plan.large), len(plan.frozen), len(plan.large_dh),
        )  # fmt: skip
        if distribute:
            return self._distribute(plan, pool, full)
        return self._accumulate(plan, pool)

    def _sizes(self, indexes: Iterable[int]) -> int:
        return sum(self.metas[i].file_size for i in indexes)

    # --- classification ---

    def _classify(self) -> _Plan:
        plan = _Plan()
        target, range_size = self.ctx.target_file_size, self.range_size
        candidates: list[int] = []
        for i, meta in enumerate(self.metas):
            if meta.num_deleted_files > 0:
                (plan.large_dh if meta.file_size >= target else plan.fresh).append(i)
                continue
            if meta.file_size >= target:
                plan.large.append(i)
                continue
            interval = self.keys.interval(meta)
            if interval is None or not readable_partition_stats(meta, self.ctx.partition_types):
                plan.fresh.append(i)
            elif interval[0] == interval[1] and _content(meta) >= 2 * range_size:
                plan.frozen.append(i)
            else:
                plan.intervals[i] = interval
                candidates.append(i)
        plan.ranges = self._heaviest_disjoint(candidates, plan.intervals)
        chosen = set(plan.ranges)
        plan.fresh = sorted(plan.fresh + [i for i in candidates if i not in chosen])
        return plan

    def _heaviest_disjoint(self, candidates: list[int], intervals: dict[int, tuple[_Key, _Key]]) -> list[int]:
        """Weighted interval scheduling: the candidates of most bytes whose intervals do not overlap."""
        by_high = sorted(candidates, key=lambda i: (intervals[i][1], intervals[i][0], i))
        highs = [intervals[i][1] for i in by_high]
        best = [0]  # best[j]: the most bytes over the first j intervals
        took: list[int] = []  # took[j]: -1 when interval j is left out, else where the choice before it ends
        for j, i in enumerate(by_high):
            before = bisect.bisect_left(highs, intervals[i][0], 0, j)  # intervals ending below this start
            take = best[before] + self.metas[i].file_size
            took.append(before if take > best[j] else -1)
            best.append(max(take, best[j]))
        chosen = []
        j = len(by_high)
        while j > 0:
            if took[j - 1] < 0:
                j -= 1
            else:
                chosen.append(by_high[j - 1])
                j = took[j - 1]
        return sorted(chosen, key=lambda i: intervals[i][0])

    # --- reading ---

    def _read(self, metas: Sequence[ManifestFileMeta]) -> None:
        wanted = [m for m in metas if m.file_name not in self._sources]

        def load(meta: ManifestFileMeta) -> _Source:
            path = self.ctx.path(meta.file_name)
            data = read_metadata_file(self.ctx.storage, path, "manifest file")
            raw = parse_manifest(data, path)
            if raw.ours and raw.scannable:
                return _Source(meta, raw)
            return _Source(meta, None, decode_entries(data, path))

        loaded = list(_read_pool().map(load, wanted)) if len(wanted) > 1 else [load(m) for m in wanted]
        for source in loaded:
            self._sources[source.meta.file_name] = source

    def _source(self, meta: ManifestFileMeta) -> _Source:
        self._read([meta])
        return self._sources[meta.file_name]

    # --- execution ---

    def _accumulate(self, plan: _Plan, pool: list[int]) -> list[ManifestFileMeta]:
        """Fewer than a range's worth to merge: one manifest of their ADDs (blocks copied as they are when
        nothing is deleted), one of the DELETEs left; ranges stay as they are."""
        self._read([self.metas[i] for i in pool])
        sources = [self._sources[self.metas[i].file_name] for i in pool]
        parts: list[tuple[_Source | None, _Rec | None]] = []
        deletes: list[_Rec] = []
        if any(s.meta.num_deleted_files for s in sources):
            survivors = _cancel([r for s in sources for r in s.records()])
            parts = [(None, r) for r in survivors if r.is_add]
            deletes = [r for r in survivors if not r.is_add]
        else:
            for source in sources:
                parts += [(source, None)] if self._copyable(source) else [(None, r) for r in source.records()]
        result = [self.metas[i] for i in plan.large + plan.frozen + plan.ranges]
        result += self._write(parts)
        result += [self.metas[i] for i in plan.large_dh]
        return result + (self._write([(None, d) for d in deletes]) if deletes else [])

    def _copyable(self, source: _Source) -> bool:
        return source.copyable and readable_partition_stats(source.meta, self.ctx.partition_types)

    def _distribute(self, plan: _Plan, pool: list[int], full: bool) -> list[ManifestFileMeta]:
        """Entries to merge cancel each other, then join the ranges of their partitions (see the module doc)."""
        self._read([self.metas[i] for i in pool])
        survivors = _cancel([r for i in pool for r in self._source(self.metas[i]).records()])
        deletes = [r for r in survivors if not r.is_add]
        slots = [_Slot(*plan.intervals[i], [self.metas[i]]) for i in plan.ranges]
        self._route_deletes(slots, deletes)
        self._route_adds(slots, [r for r in survivors if r.is_add])

        result: list[ManifestFileMeta] = []
        for i in plan.large + plan.frozen:  # untouched unless a full compaction finds deleted files in them
            meta = self.metas[i]
            result += self._drop_deleted(meta, deletes) if full else [meta]
        for slot in slots:
            result += self._write_slot(slot)
        if not full:
            result += [self.metas[i] for i in plan.large_dh]
        waiting = [d for d in deletes if not d.applied]
        if waiting and full:
            logger.warning("manifest full compaction found no file for %d DELETE entries (e.g. %s); dropped",
                           len(waiting), waiting[0].raw.file_name)  # fmt: skip
        elif waiting:
            result += self._write([(None, d) for d in waiting])
        return result

    def _route_deletes(self, slots: list[_Slot], deletes: list[_Rec]) -> None:
        lows = [s.low for s in slots]
        for delete in deletes:
            key = self.keys.of(delete.raw.partition)
            at = bisect.bisect_right(lows, key) - 1
            if at >= 0 and key <= slots[at].high:
                slots[at].deletes.append(delete)

    def _route_adds(self, slots: list[_Slot], adds: list[_Rec]) -> None:
        """Each ADD joins the range holding its key, or the one before the gap it falls in (the first one
        before all); without any range, the ADDs make new ones."""
        if not adds:
            return
        if not slots:
            keys = sorted(self.keys.of(r.raw.partition) for r in adds)
            slots.append(_Slot(keys[0], keys[-1]))
        lows = [s.low for s in slots]
        for record in adds:
            key = self.keys.of(record.raw.partition)
            slot = slots[max(bisect.bisect_right(lows, key) - 1, 0)]
            slot.added.append(record)
            slot.low, slot.high = min(slot.low, key), max(slot.high, key)

    # --- writing ---

    def _drop_deleted(self, meta: ManifestFileMeta, deletes: list[_Rec]) -> list[ManifestFileMeta]:
        """``meta``, or its records without the files ``deletes`` remove (full compaction)."""
        interval = self.keys.interval(meta)
        hits = [d for d in deletes if not d.applied and self._may_hold(meta, interval, d)]
        if not hits:
            return [meta]
        kept = self._apply(self._source(meta), hits)
        if kept is None:
            return [meta]
        return self._write([(None, r) for r in kept]) if kept else []

    def _may_hold(self, meta: ManifestFileMeta, interval: tuple[_Key, _Key] | None, delete: _Rec) -> bool:
        low, high, bucket = meta.min_bucket, meta.max_bucket, delete.raw.bucket
        if low is not None and high is not None and not low <= bucket <= high:
            return False
        if interval is None:
            return True
        return interval[0] <= self.keys.of(delete.raw.partition) <= interval[1]

    def _apply(self, source: _Source, deletes: list[_Rec]) -> list[_Rec] | None:
        """``source``'s records without those ``deletes`` remove; None when it holds none of them."""
        wanted: dict[_PreKey, list[_Rec]] = {}
        for delete in deletes:
            if not delete.applied:
                wanted.setdefault(delete.prekey, []).append(delete)
        if not wanted:
            return None
        kept: list[_Rec] = []
        hit = False
        for record in source.records():
            candidates = wanted.get(record.prekey)
            if candidates:
                identity = record.identity()
                match = next((d for d in candidates if not d.applied and d.identity() == identity), None)
                if match is not None:
                    match.applied = hit = True
                    continue
            kept.append(record)
        return kept if hit else None

    def _write_slot(self, slot: _Slot) -> list[ManifestFileMeta]:
        if len(slot.sources) == 1 and not slot.added:
            kept = self._apply(self._source(slot.sources[0]), slot.deletes) if slot.deletes else None
            if kept is None:
                return slot.sources
            return self._write([(None, r) for r in kept]) if kept else []
        parts: list[tuple[_Source | None, _Rec | None]] = []
        weight = 0.0
        self._read(slot.sources)
        for meta in slot.sources:
            source = self._sources[meta.file_name]
            kept = self._apply(source, slot.deletes) if slot.deletes else None
            if kept is None and self._copyable(source):
                parts.append((source, None))
                weight += _content(meta)
            else:
                moved = source.records() if kept is None else kept
                parts += [(None, r) for r in moved]
                weight += sum(r.weight for r in moved)
        added = sorted(slot.added, key=lambda r: self.keys.of(r.raw.partition))
        parts += [(None, r) for r in added]
        weight += sum(r.weight for r in added)
        if weight > 2 * self.range_size:
            records: list[_Rec] = []
            for whole, record in parts:
                records += whole.records() if whole is not None else [record] if record is not None else []
            return self._write_cut(records)
        return self._write(parts)

    def _write_cut(self, records: list[_Rec]) -> list[ManifestFileMeta]:
        """Records sorted by key, written as ranges of about the range size cut between keys."""
        records.sort(key=lambda r: self.keys.of(r.raw.partition))
        chunks: list[list[_Rec]] = []
        weight = 0.0
        previous: _Key | None = None
        for record in records:
            key = self.keys.of(record.raw.partition)
            if chunks and weight >= self.range_size and key != previous:
                chunks.append([])
                weight = 0.0
            if not chunks:
                chunks.append([])
            chunks[-1].append(record)
            weight += record.weight
            previous = key
        if len(chunks) > 1 and weight < self.range_size // 2:  # a small tail joins the range before it
            tail = chunks.pop()
            chunks[-1] += tail
        return [meta for chunk in chunks for meta in self._write([(None, r) for r in chunk])]

    def _write(self, parts: Sequence[tuple[_Source | None, _Rec | None]]) -> list[ManifestFileMeta]:
        """Write whole manifests and records, in order, into new manifests rolled at the target size."""
        out: list[ManifestFileMeta] = []
        builder: ManifestBuilder | None = None
        meta: MetaBuilder | None = None
        bounded: set[str] = set()
        size = 0.0  # estimated: records count at their share of the file they came from
        for index, (source, record) in enumerate(parts):
            if builder is None or meta is None:
                builder = ManifestBuilder(self.ctx.codec, self.ctx.level)
                meta = MetaBuilder(self.ctx.partition_types)
                bounded = set()
                size = _HEADER
            if source is not None:
                raw = source.raw
                assert raw is not None
                meta.add_meta(source.meta)
                size += _content(source.meta)
                followed = index + 1 < len(parts)
                for k, block in enumerate(raw.blocks):
                    small = len(block.framed) < _REOPEN_BELOW
                    builder.add_block(raw, block, reopen=followed and k == len(raw.blocks) - 1 and small)
            else:
                assert record is not None
                raw_record = record.raw
                builder.add_records([raw_record.data])
                size += record.weight
                meta.add_record(
                    raw_record.kind, raw_record.partition, raw_record.bucket, raw_record.total_buckets
                )
                if record.entry is not None and record.origin is None:
                    meta.add_entry_bounds(record.entry)
                elif record.source.file_name not in bounded:
                    meta.add_bounds(record.source)
                    bounded.add(record.source.file_name)
            if size >= self.ctx.target_file_size:
                out.append(self._flush(builder, meta))
                builder = meta = None
        if builder is not None and meta is not None and builder.count:
            out.append(self._flush(builder, meta))
        return out

    def _flush(self, builder: ManifestBuilder, meta: MetaBuilder) -> ManifestFileMeta:
        data = builder.getvalue()
        name = self.namer("manifest")
        self.ctx.storage.write_bytes(self.ctx.path(name), data, overwrite=False)
        written = meta.build(name, len(data))
        self.written.append(written)
        return written


# A copied block this small (compressed) is joined with the records that follow it instead.
_REOPEN_BELOW = 8 << 10
# What a manifest holds besides its records: the Avro header with the schema (sizes below count records only).
_HEADER = len(ManifestBuilder("null", None).getvalue())


def _content(meta: ManifestFileMeta) -> int:
    """The bytes of ``meta``'s records, about."""
    return max(meta.file_size - _HEADER, 1)


def _cancel(records: list[_Rec]) -> list[_Rec]:
    """Java's ``FileEntry.mergeEntries`` over records in order: an ADD and a later DELETE of the same file
    cancel, a DELETE without its ADD stays, an ADD of a file present raises. Records are decoded only when
    partition, bucket and file name meet another record's."""
    present: dict[_PreKey, list[_Rec]] = {}
    alive: dict[int, _Rec] = {}
    for record in records:
        same = present.setdefault(record.prekey, [])
        if record.is_add:
            if same:
                identity = record.identity()
                if any(other.identity() == identity for other in same):
                    raise DuplicateFileError(identity)
        else:
            identity = record.identity()
            match = next((other for other in same if other.identity() == identity), None)
            if match is not None:
                same.remove(match)
                del alive[id(match)]
                continue
        same.append(record)
        alive[id(record)] = record
    return list(alive.values())
