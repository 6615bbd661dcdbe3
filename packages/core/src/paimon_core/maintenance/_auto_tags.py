"""Automatic tags and tag expiration, as Java Paimon's ``TagAutoCreation``, ``TagBatchCreation`` and
``TagTimeExpire`` (docs/how-to/maintenance.md, "Automatic tags"); Paimon's ``expire_tags`` and ``replace_tag``.

Automatic tags are made after commits (:mod:`paimon_core.maintenance._lifecycle`). Each period is tagged
once even when writers commit concurrently: every writer walks the same snapshots in order from the
newest automatic tag, so all pick the same snapshot for a period, and the tag file is created atomically
(the first writer's stays).
"""

from __future__ import annotations

import datetime as dt
import threading
import zoneinfo
from typing import TYPE_CHECKING

from paimon_core import clock
from paimon_core import options as opts
from paimon_core.errors import ConfigError, SnapshotNotFoundError, TagAlreadyExistsError, TagNotFoundError
from paimon_core.maintenance._tag_periods import TagPeriod
from paimon_core.maintenance._tags import delete_tag, find_snapshot, parse_time_retained
from paimon_core.snapshot import Snapshot
from paimon_core.tag import Tag, TagManager

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["BATCH_TAG_PREFIX", "create_auto_tags", "create_batch_tag", "expire_tags", "replace_tag"]

BATCH_TAG_PREFIX = "batch-write-"
_WATERMARK_UNSET = -(2**63)  # Java's Long.MIN_VALUE: no watermark

# table path -> (the last snapshot walked without a tag, its commit time): the next walk starts after it
# when that snapshot is still the same one (a rollback reuses ids).
_walked: dict[str, tuple[int, int]] = {}
_walked_lock = threading.Lock()


def _tags(table: TableStore) -> TagManager:
    return table.tag_manager  # the branch's tags on a branch handle


def _retention(table: TableStore) -> dt.timedelta | None:
    millis = table.options.get_option(opts.TAG_DEFAULT_TIME_RETAINED)
    return None if millis is None else dt.timedelta(milliseconds=millis)


def _snapshot_time(table: TableStore, snapshot: Snapshot) -> dt.datetime | None:
    """The time a snapshot stands for (wall clock, naive): its commit time or its watermark."""
    if table.options.get_option(opts.TAG_AUTOMATIC_CREATION) == "watermark":
        watermark = snapshot.watermark
        if watermark is None or watermark == _WATERMARK_UNSET:
            return None
        zone = zoneinfo.ZoneInfo(table.options.get_option(opts.SINK_WATERMARK_TIME_ZONE))
        return dt.datetime.fromtimestamp(watermark / 1000, zone).replace(tzinfo=None)
    return _process_time(table, snapshot.time_millis)


def _process_time(table: TableStore, millis: int) -> dt.datetime:
    name = table.options.get_option(opts.SINK_PROCESS_TIME_ZONE)
    if name is None:
        return dt.datetime.fromtimestamp(millis / 1000)  # the machine's zone, as Java's default
    return dt.datetime.fromtimestamp(millis / 1000, zoneinfo.ZoneInfo(name)).replace(tzinfo=None)


def create_auto_tags(table: TableStore) -> list[str]:
    """Tag the periods the snapshots since the newest automatic tag close (``tag.automatic-creation`` =
    ``process-time`` or ``watermark``), then delete the oldest automatic tags beyond
    ``tag.num-retained-max``. Returns the tags created (by this call; a concurrent writer's are not).

    Raises:
        ConfigError: ``tag.creation-delay`` is not shorter than the period.
    """
    if table.options.get_option(opts.TAG_AUTOMATIC_CREATION) not in ("process-time", "watermark"):
        return []
    period = TagPeriod.of(table.options)
    delay = dt.timedelta(milliseconds=table.options.get_option(opts.TAG_CREATION_DELAY))
    completion = table.options.get_option(opts.TAG_AUTOMATIC_COMPLETION)
    tags = _tags(table)
    sm = table.snapshot_manager
    newest = _newest_auto_tag(tags, period)
    next_tag = None if newest is None else newest[1] + period.period
    next_id = newest[0].snapshot.id + 1 if newest is not None else (sm.earliest_id() or 1)
    next_id = _resume(table, next_id)
    created: list[str] = []
    while True:
        snapshot = sm.try_snapshot(next_id)
        if snapshot is None:
            earliest = sm.earliest_id()
            if earliest is not None and earliest > next_id:  # expired meanwhile
                next_id = earliest
                continue
            break
        time = _snapshot_time(table, snapshot)
        if time is not None and (next_tag is None or time - delay >= next_tag + period.period):
            this_tag = next_tag if completion and next_tag is not None else period.previous_tag(time)
            name = period.name(this_tag)
            try:
                tags.create(name, snapshot, _retention(table), automatic=True)
                created.append(name)
            except TagAlreadyExistsError:  # another writer tagged the period first
                pass
            next_tag = this_tag + period.period
            _retain_auto_tags(table, tags, period)
        _remember(table, snapshot)
        next_id += 1
    return created


def _newest_auto_tag(tags: TagManager, period: TagPeriod) -> tuple[Tag, dt.datetime] | None:
    """The automatic tag of the latest period, read alone (other tags' files are not read)."""
    timed = [(t, n) for n in tags.names() if (t := period.time_of(n)) is not None]
    for time, name in sorted(timed, reverse=True):
        try:
            return tags.tag(name), time
        except TagNotFoundError:  # deleted meanwhile: the next newest
            continue
    return None


def _resume(table: TableStore, next_id: int) -> int:
    with _walked_lock:
        walked = _walked.get(table.branch_path)
    if walked is None or walked[0] < next_id:
        return next_id
    snapshot = table.snapshot_manager.try_snapshot(walked[0])
    if snapshot is None or snapshot.time_millis != walked[1]:
        return next_id
    return walked[0] + 1


def _remember(table: TableStore, snapshot: Snapshot) -> None:
    with _walked_lock:
        _walked[table.branch_path] = (snapshot.id, snapshot.time_millis)


def _retain_auto_tags(table: TableStore, tags: TagManager, period: TagPeriod) -> None:
    """Delete the oldest automatic tags (by snapshot) beyond ``tag.num-retained-max``."""
    most = table.options.get_option(opts.TAG_NUM_RETAINED_MAX)
    if most is None:
        return
    auto = [t for t in tags.tags() if period.is_auto_tag(t.name)]
    for tag in auto[: max(0, len(auto) - most)]:
        delete_tag(table, tag.name)


def create_batch_tag(table: TableStore) -> str | None:
    """``tag.automatic-creation`` = ``batch``: after a batch write, tag the latest snapshot
    ``tag.batch.customized-name`` or ``batch-write-<yyyy-MM-dd>`` (its commit day), replacing a tag of that
    name, then delete the oldest tags beyond ``tag.num-retained-max``. Returns the tag's name."""
    if table.options.get_option(opts.TAG_AUTOMATIC_CREATION) != "batch":
        return None
    latest = table.snapshot_manager.latest()
    if latest is None:
        return None
    name = table.options.get_option(opts.TAG_BATCH_CUSTOMIZED_NAME)
    if name is None:
        name = BATCH_TAG_PREFIX + _process_time(table, latest.time_millis).strftime("%Y-%m-%d")
    tags = _tags(table)
    delete_tag(table, name)
    tags.create(name, latest, _retention(table), ignore_if_exists=True)
    most = table.options.get_option(opts.TAG_NUM_RETAINED_MAX)
    if most is not None:
        every = tags.tags()  # by snapshot, then name: the oldest first
        for tag in every[: max(0, len(every) - most)]:
            delete_tag(table, tag.name)
    return name


def expire_tags(table: TableStore, older_than: dt.datetime | str | None = None) -> list[str]:
    """Paimon's ``expire_tags``: delete the tags whose time-to-live ran out and, with ``older_than``, the
    tags created before it (a tag without a creation time counts from its file's modification time).
    Returns the names deleted.

    Args:
        table: the table.
        older_than: a local time, as a datetime or 'yyyy-MM-dd HH:mm:ss[.SSS]'.

    Raises:
        ConfigError: ``older_than`` is not a time.
    """
    cutoff = _local_time(older_than) if older_than is not None else None
    now = clock.local_now()
    tags = _tags(table)
    expired = []
    for tag in tags.tags():
        created = tag.create_time
        if created is None or tag.time_retained is None:
            if cutoff is None:
                continue
            created = _file_time(tags, tag.name)
            if created is None:
                continue
        reached = tag.time_retained is not None and now > created + tag.time_retained
        if (reached or (cutoff is not None and cutoff > created)) and delete_tag(table, tag.name):
            expired.append(tag.name)
    return expired


def _file_time(tags: TagManager, name: str) -> dt.datetime | None:
    try:
        info = tags.storage.info(tags.tag_path(name))
    except FileNotFoundError:
        return None
    return dt.datetime.fromtimestamp(info.mtime_ms / 1000)


def _local_time(value: dt.datetime | str) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value.astimezone().replace(tzinfo=None) if value.tzinfo is not None else value
    try:
        return dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ConfigError(
            f"older_than {value!r} is not a time (expected 'yyyy-MM-dd HH:mm:ss')", "older_than"
        ) from None


def replace_tag(
    table: TableStore,
    tag: str,
    snapshot_id: int | None = None,
    time_retained: dt.timedelta | str | None = None,
) -> Tag:
    """Paimon's ``replace_tag``: point an existing tag at ``snapshot_id`` (the latest snapshot by default),
    with ``time_retained`` as its new time-to-live (none when not given).

    Raises:
        TagNotFoundError: the tag does not exist.
        SnapshotNotFoundError: the snapshot does not exist (or the table has none).
    """
    tags = _tags(table)
    if not tags.exists(tag):
        raise TagNotFoundError(tag)
    sm = table.snapshot_manager
    snapshot = find_snapshot(table, snapshot_id) if snapshot_id is not None else sm.latest()
    if snapshot is None:
        raise SnapshotNotFoundError(None, f"{table.identifier} has no snapshot to tag")
    return tags.replace(tag, snapshot, parse_time_retained(time_retained))
