"""Which snapshot a batch read sees: ``scan.*`` options and explicit time travel, resolved in one place.

Every batch read (``Table.to_arrow``/``to_batches``/``scan``, the Spark batch source, the CLI) asks
:func:`resolve_batch_scan` for a :class:`BatchScanStart`, then :class:`~paimon_core.table.TableScan` prunes
and splits its files; every streaming read (Python and Spark) asks :func:`resolve_stream_start` for a
:class:`StreamStart` (consumer progress first, then ``scan.mode``) and the same pruner serves its files.
Explicit arguments (``snapshot_id=``, ``tag=``, ``timestamp=``) are options too: :func:`scan_options` turns
them into ``scan.snapshot-id``, ``scan.tag-name`` or ``scan.timestamp-millis`` and drops the table's other
time-travel options, so an explicit argument always wins. See ``docs/reads.md``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paimon_core import options as opts
from paimon_core.errors import ConfigError, SnapshotNotFoundError
from paimon_core.manifest import ManifestEntry
from paimon_core.redaction import get_logger
from paimon_core.snapshot import CommitKind, Snapshot
from paimon_core.table._time_travel import TimeTravel

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

logger = get_logger(__name__)

__all__ = [
    "STREAM_MODES",
    "TIME_TRAVEL_KEYS",
    "BatchScanStart",
    "StreamStart",
    "compacted_snapshot",
    "created_since",
    "creation_filter",
    "first_snapshot_from",
    "required",
    "resolve_batch_scan",
    "resolve_mode",
    "resolve_stream_start",
    "scan_options",
    "start_snapshot",
    "timestamp_millis",
]

TIME_TRAVEL_KEYS = frozenset(
    {
        opts.SCAN_MODE.key,
        opts.SCAN_SNAPSHOT_ID.key,
        opts.SCAN_TAG_NAME.key,
        opts.SCAN_TIMESTAMP_MILLIS.key,
        opts.SCAN_TIMESTAMP.key,
        opts.INCREMENTAL_BETWEEN.key,
        opts.INCREMENTAL_BETWEEN_TIMESTAMP.key,
    }
)
"""The options that choose a read's snapshot; an explicit argument replaces all of them."""


def scan_options(options: opts.Options, travel: TimeTravel) -> opts.Options:
    """``options`` with the explicit time travel of a read applied: it replaces every option that chooses a
    read's snapshot."""
    given: dict[str, Any] = {}
    if travel.snapshot_id is not None:
        given[opts.SCAN_SNAPSHOT_ID.key] = travel.snapshot_id
    elif travel.tag is not None:
        given[opts.SCAN_TAG_NAME.key] = travel.tag
    elif travel.timestamp is not None:
        given[opts.SCAN_TIMESTAMP_MILLIS.key] = opts.to_millis(travel.timestamp)
    else:
        return options
    kept = {k: v for k, v in options.items() if k not in TIME_TRAVEL_KEYS}
    return opts.Options.of({**kept, **given})


def resolve_mode(options: opts.Options) -> str:
    """``scan.mode=default`` resolved from the other ``scan.*`` options, as Paimon does."""
    mode = options.get_option(opts.SCAN_MODE)
    if mode != "default":
        return "latest-full" if mode == "full" else mode
    if options.get_option(opts.SCAN_TIMESTAMP_MILLIS) is not None or options.get_option(opts.SCAN_TIMESTAMP):
        return "from-timestamp"
    if options.get_option(opts.SCAN_SNAPSHOT_ID) is not None or options.get_option(opts.SCAN_TAG_NAME):
        return "from-snapshot"
    if options.get_option(opts.INCREMENTAL_BETWEEN) or options.get_option(opts.INCREMENTAL_BETWEEN_TIMESTAMP):
        return "incremental"
    if options.get_option(opts.SCAN_FILE_CREATION_TIME_MILLIS) is not None:
        return "from-file-creation-time"
    return "latest-full"


def required(options: opts.Options, option: opts.Option[int | None], mode: str) -> int:
    value = options.get_option(option)
    if value is None:
        raise ConfigError(f"scan.mode={mode} needs '{option.key}'", option.key)
    return value


def timestamp_millis(options: opts.Options, mode: str) -> int:
    """``scan.timestamp-millis``, or ``scan.timestamp`` (a local date-time) converted."""
    millis = options.get_option(opts.SCAN_TIMESTAMP_MILLIS)
    if millis is not None:
        return millis
    text = options.get_option(opts.SCAN_TIMESTAMP)
    if text is None:
        raise ConfigError(f"scan.mode={mode} needs 'scan.timestamp-millis' or 'scan.timestamp'", "scan.mode")
    return opts.to_millis(text)


def start_snapshot(table: TableStore, options: opts.Options, mode: str) -> Snapshot:
    """The snapshot of ``scan.tag-name`` (kept by the tag even after it expired) or ``scan.snapshot-id``."""
    tag = options.get_option(opts.SCAN_TAG_NAME)
    if tag is not None:
        return table.tag_manager.tag(tag).snapshot
    return table.snapshot_manager.snapshot(required(options, opts.SCAN_SNAPSHOT_ID, mode))


def compacted_snapshot(table: TableStore, options: opts.Options) -> Snapshot | None:
    """``scan.mode=compacted-full``: the newest COMPACT snapshot, or the latest snapshot if none is left (None:
    the table is empty), as Java's ``pickOrLatest``.

    With the ``full-compaction`` changelog producer or ``full-compaction.delta-commits`` set, only a full
    compaction's snapshot counts: Java tells it by its commit identifier, a multiple of the delta commits
    (1 when unset) or ``Long.MAX_VALUE`` (a batch job's).
    """
    sm = table.snapshot_manager
    latest, earliest = sm.latest_id(), sm.earliest_id()
    if latest is None or earliest is None:
        return None
    every: int | None = None
    if (
        options.get_option(opts.CHANGELOG_PRODUCER) == "full-compaction"
        or opts.FULL_COMPACTION_DELTA_COMMITS.key in options
    ):
        every = options.get_option(opts.FULL_COMPACTION_DELTA_COMMITS) or 1
    for snapshot_id in range(latest, earliest - 1, -1):
        snapshot = sm.try_snapshot(snapshot_id)
        if snapshot is None or snapshot.commit_kind != CommitKind.COMPACT:
            continue
        identifier = snapshot.commit_identifier
        if every is None or identifier % every == 0 or identifier == _JAVA_LONG_MAX:
            return snapshot
    return sm.latest()


_JAVA_LONG_MAX = 2**63 - 1


def first_snapshot_from(table: TableStore, millis: int) -> int | None:
    """``scan.mode=from-creation-timestamp``: the snapshot after the newest one committed before ``millis``,
    which a read starts from as ``from-snapshot`` does; None when no snapshot is that old or none follows it
    yet, and the read falls back to the latest snapshot's files created since ``millis`` (Java's
    ``createCreationTimestampStartingScanner``).
    """
    before = table.snapshot_manager.snapshot_at_or_before_time(millis - 1)
    if before is None or not table.snapshot_manager.snapshot_exists(before.id + 1):
        return None
    return before.id + 1


def creation_filter(options: opts.Options, mode: str) -> int | None:
    value = options.get_option(opts.SCAN_FILE_CREATION_TIME_MILLIS)
    if mode == "from-file-creation-time" and value is None:
        raise ConfigError(f"scan.mode={mode} needs 'scan.file-creation-time-millis'", "scan.mode")
    return value


def created_since(entry: ManifestEntry, since_millis: int | None) -> bool:
    if since_millis is None:
        return True
    created = entry.file.creation_time_epoch_millis()
    return created is None or created >= since_millis


@dataclass(frozen=True)
class BatchScanStart:
    """What a batch read reads.

    Attributes:
        snapshot: the snapshot read (None: the table is empty); for an incremental read, the range's end.
        file_creation_time_millis: only files created at or after this instant.
        incremental_from: for an incremental read, the range's exclusive start: only the files the
            snapshots in ``(incremental_from, snapshot]`` appended are read.
        diff: the incremental read compares ``snapshot`` with ``diff_from`` (None: nothing before).
        diff_between_tags: the diff is between two tags, which Java 0.9 already compares (its way).
        delta_only: the incremental read takes the snapshots' new data files, never their changelog
            (``scan.mode=latest-delta``, Java's ``ScanMode.DELTA``).
    """

    snapshot: Snapshot | None
    file_creation_time_millis: int | None = None
    incremental_from: int | None = None
    diff: bool = False
    diff_from: Snapshot | None = None
    diff_between_tags: bool = False
    delta_only: bool = False


STREAMING_ONLY_KEYS = frozenset(
    {
        opts.SCAN_BOUNDED_WATERMARK.key,
        opts.CONSUMER_ID.key,
        opts.CONSUMER_IGNORE_PROGRESS.key,
        opts.CONSUMER_MODE.key,
        opts.CONTINUOUS_DISCOVERY_INTERVAL.key,
    }
)
"""Options only streaming reads use: a batch read given them (as dynamic options) says it ignores them."""


def resolve_batch_scan(table: TableStore, options: opts.Options | None = None) -> BatchScanStart:
    """Resolve ``scan.mode`` and its options (``options``, the table's by default) for a batch read.

    Raises:
        ConfigError: the mode cannot be used for batch reads, or a needed option is missing or malformed.
        SnapshotNotFoundError: the snapshot asked for does not exist, or none is as old as the timestamp.
        TagNotFoundError: the tag does not exist.
    """
    options = table.options if options is None else options
    ignored = sorted(
        k for k in options if k in STREAMING_ONLY_KEYS and table.schema.options.get(k) != options[k]
    )
    if ignored:
        logger.warning("a batch read of %s ignores the streaming-only options %s", table.identifier, ignored)
    mode = resolve_mode(options)
    sm = table.snapshot_manager
    creation = creation_filter(options, mode)
    if mode in ("latest-full", "latest", "from-file-creation-time"):
        return BatchScanStart(sm.latest(), creation)
    if mode in ("from-snapshot", "from-snapshot-full"):
        return BatchScanStart(start_snapshot(table, options, mode), creation)
    if mode == "compacted-full":
        return BatchScanStart(compacted_snapshot(table, options), creation)
    if mode == "latest-delta":
        latest = sm.latest()
        if latest is None:
            return BatchScanStart(None, creation)
        return BatchScanStart(latest, creation, latest.id - 1, delta_only=True)
    if mode == "from-creation-timestamp":
        millis = required(options, opts.SCAN_CREATION_TIME_MILLIS, mode)
        first_after = first_snapshot_from(table, millis)
        if first_after is not None:
            return BatchScanStart(sm.snapshot(first_after), creation)
        return BatchScanStart(sm.latest(), millis)
    if mode == "from-timestamp":
        millis = timestamp_millis(options, mode)
        snapshot = sm.snapshot_at_or_before_time(millis)
        if snapshot is None:
            raise SnapshotNotFoundError(None, _none_as_old(table, millis))
        return BatchScanStart(snapshot, creation)
    if mode == "incremental":
        return _incremental_start(table, options, creation)
    raise ConfigError(f"scan.mode={mode} is not supported for batch reads of append tables", "scan.mode")


def _none_as_old(table: TableStore, millis: int) -> str:
    """Why a time travel to ``millis`` finds nothing, in local time as users give it."""
    earliest = table.snapshot_manager.earliest()
    when = _local_time(millis)
    if earliest is None:
        return f"no snapshot of {table.identifier} is as old as {when}: the table has no snapshot"
    return (
        f"no snapshot of {table.identifier} is as old as {when}: its earliest snapshot, "
        f"{earliest.id}, was committed at {_local_time(earliest.time_millis)}"
    )


def _local_time(millis: int) -> str:
    """Epoch milliseconds as 'yyyy-MM-dd HH:mm:ss.SSS' local time, with the millis in brackets."""
    text = dt.datetime.fromtimestamp(millis / 1000).isoformat(sep=" ", timespec="milliseconds")
    return f"{text} ({millis} epoch ms)"


def _incremental_start(table: TableStore, options: opts.Options, creation: int | None) -> BatchScanStart:
    """``incremental-between[-timestamp]`` resolved as Java Paimon does (docs/reads.md, "Incremental reads").

    Snapshot ids and timestamps read the range's files merged (Java 0.9), or with
    ``incremental-between-scan-mode = diff`` compare the end with the start (Java 1.1+); two tags are
    compared (Java 0.9), or read as their snapshot ids with ``incremental-between-tag-to-snapshot``.
    """
    diff = options.get_option(opts.INCREMENTAL_BETWEEN_SCAN_MODE) == "diff"
    between = options.get_option(opts.INCREMENTAL_BETWEEN)
    between_times = options.get_option(opts.INCREMENTAL_BETWEEN_TIMESTAMP)
    if between is not None:
        key = opts.INCREMENTAL_BETWEEN.key
        first, last = _two(between, key)
        if not (first.isdigit() and last.isdigit()):
            if first.isdigit() or last.isdigit():
                raise ConfigError(f"{key}={between!r}: neither two tags nor two snapshot ids", key)
            return _between_tags(table, options, first, last, creation, diff)
        start, end = int(first), int(last)
        _check_order(start, end, between, key)
        sm = table.snapshot_manager
        return _range_start(
            table, start, sm.snapshot(end) if end > start else None, between, key, creation, diff
        )
    if between_times is None:
        raise ConfigError("scan.mode=incremental needs 'incremental-between' or "
                          "'incremental-between-timestamp'", "scan.mode")  # fmt: skip
    return _timestamp_start(table, between_times, creation, diff)


def _between_tags(
    table: TableStore, options: opts.Options, first: str, last: str, creation: int | None, diff: bool
) -> BatchScanStart:
    """Two tags: compared as Java 0.9 compares them, or read as their snapshot ids (Java 1.1+'s
    ``incremental-between-tag-to-snapshot``)."""
    key, between = opts.INCREMENTAL_BETWEEN.key, f"{first},{last}"
    tags = table.tag_manager
    start, end = tags.tag(first).snapshot, tags.tag(last).snapshot
    if options.get_option(opts.INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT):
        return _range_start(table, start.id, end, between, key, creation, diff, start)
    compared = _range_start(table, start.id, end, between, key, creation, True, start)
    return dataclasses.replace(compared, diff_between_tags=compared.diff)


def _timestamp_start(table: TableStore, between: str, creation: int | None, diff: bool) -> BatchScanStart:
    key = opts.INCREMENTAL_BETWEEN_TIMESTAMP.key
    start_ms, end_ms = (opts.to_millis(part) for part in _two(between, key))
    _check_order(start_ms, end_ms, between, key)
    sm = table.snapshot_manager
    earliest, latest = sm.earliest(), sm.latest()
    if earliest is None or latest is None or start_ms == end_ms:
        return BatchScanStart(None, creation)
    if start_ms > latest.time_millis or end_ms < earliest.time_millis:
        return BatchScanStart(None, creation)
    end = sm.snapshot_at_or_before_time(end_ms) or latest
    start = sm.snapshot_at_or_before_time(start_ms)
    if diff:
        if start is None and earliest.id == 1:
            return BatchScanStart(end, creation)  # Java 1.1+: everything up to the end, read whole
        start = start or earliest
        return _range_start(table, start.id, end, between, key, creation, True, start)
    # Java: a start before the earliest snapshot reads from the earliest on
    start_id = earliest.id - 1 if start is None or earliest.time_millis > start_ms else start.id
    return _range_start(table, start_id, end, between, key, creation, False)


def _range_start(
    table: TableStore,
    start: int,
    end: Snapshot | None,
    bounds: str,
    key: str,
    creation: int | None,
    diff: bool,
    start_snapshot: Snapshot | None = None,
) -> BatchScanStart:
    if end is None or end.id == start:
        return BatchScanStart(None, creation)
    _check_order(start, end.id, bounds, key)
    if not diff:
        return BatchScanStart(end, creation, start)
    if start_snapshot is None:
        start_snapshot = table.snapshot_manager.snapshot(start) if start > 0 else None
    return BatchScanStart(end, creation, start, diff=True, diff_from=start_snapshot)


def _check_order(start: int, end: int, bounds: str, key: str) -> None:
    if start > end:
        raise ConfigError(f"{key}={bounds!r}: the start is after the end", key)


def _two(text: str, key: str) -> tuple[str, str]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"{key}={text!r}: expected 'start,end'", key)
    return parts[0], parts[1]


STREAM_MODES = (
    "latest",
    "latest-full",
    "full",
    "compacted-full",
    "from-snapshot",
    "from-snapshot-full",
    "from-timestamp",
    "from-file-creation-time",
    "from-creation-timestamp",
)
"""The ``scan.mode`` values a streaming read accepts (``incremental`` is batch only)."""


@dataclass(frozen=True)
class StreamStart:
    """Where a new stream starts: before snapshot ``snapshot_id``, reading all its live files (``full``)
    or only its delta."""

    snapshot_id: int
    full: bool = False


def resolve_stream_start(table: TableStore, options: opts.Options | None = None) -> StreamStart:
    """Resolve where a new streaming read starts: the consumer's recorded progress when ``consumer-id``
    names one (unless ``consumer.ignore-progress``), else ``scan.mode`` and its options.

    Raises:
        ConfigError: the mode cannot be used for streaming reads, or a needed option is missing or malformed.
        SnapshotNotFoundError: the snapshot asked for does not exist.
        TagNotFoundError: the tag does not exist.
    """
    options = table.options if options is None else options
    mode = resolve_mode(options)
    if mode not in STREAM_MODES:
        raise ConfigError(f"scan.mode={mode} is not supported for streaming reads", "scan.mode")
    consumer_id = options.get_option(opts.CONSUMER_ID)
    if consumer_id and not options.get_option(opts.CONSUMER_IGNORE_PROGRESS):
        consumer = table.consumer_manager.consumer(consumer_id)
        if consumer is not None:
            return StreamStart(consumer.next_snapshot)
    sm = table.snapshot_manager
    latest, earliest = sm.latest_id(), sm.earliest_id()
    if mode in ("latest-full", "full", "from-file-creation-time"):
        # An empty table: its first snapshot's delta is all its data.
        return StreamStart(latest, full=True) if latest is not None else StreamStart(1)
    if mode == "latest":
        return StreamStart((latest or 0) + 1)
    if mode == "from-snapshot":
        tag = options.get_option(opts.SCAN_TAG_NAME)
        if tag is not None:
            wanted = table.tag_manager.tag(tag).snapshot.id
        else:
            wanted = required(options, opts.SCAN_SNAPSHOT_ID, mode)
        return StreamStart(max(wanted, earliest or wanted))
    if mode == "from-snapshot-full":
        return StreamStart(start_snapshot(table, options, mode).id, full=True)
    if mode == "compacted-full":
        compacted = compacted_snapshot(table, options)
        return StreamStart(compacted.id, full=True) if compacted is not None else StreamStart(1)
    if mode == "from-creation-timestamp":
        first_after = first_snapshot_from(table, required(options, opts.SCAN_CREATION_TIME_MILLIS, mode))
        if first_after is not None:
            return StreamStart(first_after)
        # as from-file-creation-time, the stream's creation filter being scan.creation-time-millis
        return StreamStart(latest, full=True) if latest is not None else StreamStart(1)
    # from-timestamp: deltas from (the last snapshot committed before the instant) + 1.
    millis = timestamp_millis(options, mode)
    before = sm.snapshot_at_or_before_time(millis - 1)
    if before is not None:
        return StreamStart(before.id + 1)
    return StreamStart(earliest or 1)
