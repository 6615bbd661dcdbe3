"""Partition expiration and mark-done, as Java Paimon's ``PartitionExpire``, ``PartitionTimeExtractor``,
its ``values-time`` and ``update-time`` strategies, and ``PartitionMarkDoneAction`` (docs/how-to/maintenance.md,
"Partition expiration").

An expired partition is dropped by an OVERWRITE snapshot that deletes its files (Java's
``dropPartitions``); the deletes are checked against the latest snapshot, so of two expirations racing for
a partition one drops it and the other finds it gone and plans again: no partition is expired twice.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paimon_core import clock
from paimon_core import options as opts
from paimon_core.errors import CommitConflictError, ConfigError
from paimon_core.manifest import ManifestEntry
from paimon_core.partition import escape_path_name, partition_value_string
from paimon_core.storage import join_path
from paimon_core.table.commit import TableCommit

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["expire_partitions", "mark_partition_done", "partition_time"]

_REPLANS = 5

# Java DateTimeFormatter pattern letters -> strptime directives (the ones partition times use)
_PATTERN_LETTERS = {
    "yyyy": "%Y",
    "uuuu": "%Y",
    "MM": "%m",
    "dd": "%d",
    "HH": "%H",
    "mm": "%M",
    "ss": "%S",
    "SSS": "%f",
}
_DEFAULT_TIME = re.compile(
    r"(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?"
)


def _strptime_format(pattern: str) -> str:
    """The strptime format of a Java ``DateTimeFormatter`` pattern (``yyyyMMdd``, ``yyyy-MM-dd HH:mm``...).

    Raises:
        ConfigError: the pattern uses letters other than yyyy/uuuu, MM, dd, HH, mm, ss, SSS.
    """
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "'":  # a quoted literal
            end = pattern.index("'", i + 1) if "'" in pattern[i + 1 :] else len(pattern)
            out.append(pattern[i + 1 : end].replace("%", "%%"))
            i = end + 1
            continue
        run = next((k for k in _PATTERN_LETTERS if pattern.startswith(k, i)), None)
        if run is not None:
            out.append(_PATTERN_LETTERS[run])
            i += len(run)
        elif pattern[i].isalpha():
            raise ConfigError(
                f"partition.timestamp-formatter {pattern!r}: pattern letter {pattern[i]!r} is not supported "
                "(yyyy, MM, dd, HH, mm, ss and SSS are)",
                opts.PARTITION_TIMESTAMP_FORMATTER.key,
            )
        else:
            out.append(pattern[i].replace("%", "%%"))
            i += 1
    return "".join(out)


def _substitute(pattern: str, values: Mapping[str, str]) -> str:
    """``$key`` replaced by the key's value; longer keys first, so ``$dt`` never matches in ``$dt1``."""
    keys = sorted(values, key=len, reverse=True)
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "$":
            key = next((k for k in keys if pattern.startswith(k, i + 1)), None)
            if key is not None:
                out.append(values[key])
                i += 1 + len(key)
                continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def partition_time(values: Mapping[str, str], pattern: str | None, formatter: str | None) -> dt.datetime:
    """The time partition values name, as Java's ``PartitionTimeExtractor``: the first value (or
    ``pattern`` with ``$key`` substituted), read with ``formatter`` or as ``yyyy-MM-dd[ HH:mm:ss[.S]]``.

    Raises:
        ValueError: the text is not such a time.
    """
    text = _substitute(pattern, values) if pattern is not None else next(iter(values.values()))
    if formatter is not None:
        return dt.datetime.strptime(text, _strptime_format(formatter))
    match = _DEFAULT_TIME.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not yyyy-MM-dd[ HH:mm:ss]")
    year, month, day, hour, minute, second = (int(g) if g is not None else 0 for g in match.groups()[:6])
    fraction = match.group(7)
    micros = int(fraction.ljust(9, "0")[:6]) if fraction else 0
    return dt.datetime(year, month, day, hour, minute, second, micros)


@dataclass(frozen=True)
class _Expiration:
    """How one run decides what is old."""

    expiration: dt.timedelta
    strategy: str
    pattern: str | None
    formatter: str | None
    max_expires: int
    batch_size: int | None


def _settings(table: TableStore, overrides: Mapping[str, Any]) -> _Expiration | None:
    options = table.options.with_overrides({k: v for k, v in overrides.items() if v is not None})
    millis = options.get_option(opts.PARTITION_EXPIRATION_TIME)
    if millis is None:
        return None
    formatter = options.get_option(opts.PARTITION_TIMESTAMP_FORMATTER)
    if formatter is not None:
        _strptime_format(formatter)  # refuse an unsupported pattern before anything is read
    return _Expiration(
        dt.timedelta(milliseconds=millis),
        options.get_option(opts.PARTITION_EXPIRATION_STRATEGY),
        options.get_option(opts.PARTITION_TIMESTAMP_PATTERN),
        formatter,
        options.get_option(opts.PARTITION_EXPIRATION_MAX_NUM),
        options.get_option(opts.PARTITION_EXPIRATION_BATCH_SIZE),
    )


def expire_partitions(
    table: TableStore,
    expiration_time: str | None = None,
    timestamp_formatter: str | None = None,
    timestamp_pattern: str | None = None,
    expire_strategy: str | None = None,
    max_expires: int | None = None,
) -> list[dict[str, str]]:
    """Paimon's ``expire_partitions``: drop the partitions older than ``expiration_time``.

    Each argument overrides its table option (``partition.expiration-time``,
    ``partition.timestamp-formatter``, ``partition.timestamp-pattern``, ``partition.expiration-strategy``,
    ``partition.expiration-max-num``). ``values-time`` reads a partition's time from its values;
    ``update-time`` takes the creation time of its newest file. Partitions whose values are no time (or
    null) are never expired by ``values-time``, as in Java.

    Returns:
        The partitions dropped by this call, as ``{key: value}`` in Java's rendering of the values, sorted
        as Java sorts them; at most ``max_expires``.

    Raises:
        ConfigError: the table has no partition keys, no expiration time is given or set, or an option is
            invalid.
    """
    overrides = {
        opts.PARTITION_EXPIRATION_TIME.key: expiration_time,
        opts.PARTITION_TIMESTAMP_FORMATTER.key: timestamp_formatter,
        opts.PARTITION_TIMESTAMP_PATTERN.key: timestamp_pattern,
        opts.PARTITION_EXPIRATION_STRATEGY.key: expire_strategy,
        opts.PARTITION_EXPIRATION_MAX_NUM.key: max_expires,
    }
    if not table.partition_keys:
        raise ConfigError(f"{table.identifier} has no partition keys: no partition can expire")
    settings = _settings(table, overrides)
    if settings is None:
        raise ConfigError(
            f"expire_partitions needs an expiration_time (or the table option "
            f"{opts.PARTITION_EXPIRATION_TIME.key})",
            opts.PARTITION_EXPIRATION_TIME.key,
        )
    return run_expiration(table, settings)


def run_expiration(table: TableStore, settings: _Expiration) -> list[dict[str, str]]:
    """Drop what ``settings`` finds expired now, planning again when a racing commit won."""
    committer = TableCommit(table)
    dropped: list[dict[str, str]] = []
    for attempt in range(_REPLANS):
        latest = table.snapshot_manager.latest()
        by_partition: dict[bytes, list[ManifestEntry]] = {}
        for entry in table.live_files.at(latest).values():
            by_partition.setdefault(entry.partition, []).append(entry)
        doomed = _select(table, settings, by_partition)[: settings.max_expires - len(dropped)]
        if not doomed:
            break
        size = settings.batch_size or len(doomed)
        try:
            for start in range(0, len(doomed), size):
                batch = doomed[start : start + size]
                committer.drop_partitions([e for _, p in batch for e in by_partition[p]])
                dropped += [spec for spec, _ in batch]
            break
        except CommitConflictError:
            if attempt == _REPLANS - 1:
                raise
    return dropped


def expiration_settings(table: TableStore) -> _Expiration | None:
    """The table's own expiration settings; None when its partitions do not expire."""
    if not table.partition_keys:
        return None
    return _settings(table, {})


def _java_values(table: TableStore, partition: bytes) -> dict[str, str | None]:
    """The partition's values as Java's ``toString`` of its internal values (dates as day numbers)."""
    values = table.partition_values(partition)
    return {
        k: None if values[k] is None else partition_value_string(values[k], t, "", True)
        for k, t in zip(table.partition_keys, table.partition_types, strict=True)
    }


def _select(
    table: TableStore, settings: _Expiration, by_partition: Mapping[bytes, list[ManifestEntry]]
) -> list[tuple[dict[str, str], bytes]]:
    """The expired partitions, sorted as Java sorts them (by the comma-joined values)."""
    cutoff = clock.local_now() - settings.expiration
    default_name = table.options.get_option(opts.PARTITION_DEFAULT_NAME)
    found = []
    for partition, files in by_partition.items():
        values = _java_values(table, partition)
        if settings.strategy == "update-time":
            newest = max((f.file.creation_time_epoch_millis() or 0) for f in files)
            expired = dt.datetime.fromtimestamp(newest / 1000) < cutoff
        elif any(v is None for v in values.values()):
            expired = False  # Java: a null value cannot name a time
        else:
            try:
                expired = cutoff > partition_time(values, settings.pattern, settings.formatter)  # type: ignore[arg-type]
            except ValueError:
                expired = False
        if expired:
            shown = {k: default_name if v is None else v for k, v in values.items()}
            found.append((shown, partition))
    return sorted(found, key=lambda item: ",".join(item[0].values()))


def mark_partition_done(table: TableStore, partitions: str | Sequence[Mapping[str, Any]]) -> int:
    """Paimon's ``mark_partition_done`` with ``partition.mark-done-action`` = ``success-file``: write (or
    touch) ``_SUCCESS`` in each partition's directory, Java's SuccessFile JSON (``creationTime`` kept,
    ``modificationTime`` now). Returns the number of partitions marked.

    Args:
        table: the table.
        partitions: ``'dt=20240101,hh=01;dt=20240102,hh=00'`` (Paimon's form) or a list of ``{key: value}``.

    Raises:
        ConfigError: a partition does not name every partition key, or an action other than
            ``success-file`` is configured (``done-partition`` and ``mark-event`` need a metastore;
            ``http-report`` and ``custom`` are not supported here).
    """
    actions = table.options.get_option(opts.PARTITION_MARK_DONE_ACTION).split(",")
    for action in actions:
        if action in ("done-partition", "mark-event"):
            raise ConfigError(
                f"partition.mark-done-action {action!r} needs a metastore (metastore.partitioned-table), "
                f"which a filesystem catalog does not have; use 'success-file'",
                opts.PARTITION_MARK_DONE_ACTION.key,
            )
        if action != "success-file":
            raise ConfigError(
                f"partition.mark-done-action {action!r} is not supported here; use 'success-file'",
                opts.PARTITION_MARK_DONE_ACTION.key,
            )
    specs = _parse_specs(partitions) if isinstance(partitions, str) else [dict(p) for p in partitions]
    now = clock.now_millis()
    for spec in specs:
        path = join_path(table.path, _spec_path(table, spec), "_SUCCESS")
        created = now
        with contextlib.suppress(FileNotFoundError, ValueError, KeyError, TypeError):
            created = int(json.loads(table.storage.read_bytes(path))["creationTime"])
        body = json.dumps({"creationTime": created, "modificationTime": now}, indent=2)
        table.storage.write_bytes(path, body.encode("utf-8"), overwrite=True)
    return len(specs)


def _parse_specs(text: str) -> list[dict[str, str]]:
    specs = []
    for part in text.split(";"):
        if not part.strip():
            continue
        spec = {}
        for pair in part.split(","):
            key, sep, value = pair.partition("=")
            if not sep:
                raise ConfigError(f"partition {part!r}: expected key=value pairs separated by ','")
            spec[key.strip()] = value.strip()
        specs.append(spec)
    return specs


def _spec_path(table: TableStore, spec: Mapping[str, Any]) -> str:
    keys = table.partition_keys
    if sorted(spec) != sorted(keys):
        raise ConfigError(f"partition {dict(spec)} must give exactly the partition keys {list(keys)}")
    # Java joins the escaped key=value of the values as given (PartitionPathUtils.generatePartitionPaths)
    return "/".join(f"{escape_path_name(k)}={escape_path_name(str(spec[k]))}" for k in keys)
