"""From Spark data source options and session conf to a Paimon table handle.

Options of ``spark.read.format("paimon")`` (keys are case-insensitive, as Spark passes them lower-cased):

* ``path`` (the ``load()``/``save()`` argument) or ``table``: ``db.t`` (needs ``warehouse``) or a table
  directory (``/wh/db.db/t``, ``s3://bucket/wh/db.db/t``);
* ``warehouse``: the warehouse URI; ``catalog``: the catalog name used to match session conf (``paimon``);
* ``partition-keys`` / ``primary-key``: comma-separated, used when a write creates the table (a primary
  key makes it a primary-key table);
* ``read.changelog``: read a table with a ``rowkind`` column first, as its ``$audit_log`` reads (Paimon's
  Spark option); a primary-key table's stream then carries every change, retractions included;
* ``partitionoverwritemode``: ``static`` (the whole table) or ``dynamic`` (only partitions present in the
  data) for ``mode("overwrite")``; by default the session's ``spark.sql.sources.partitionOverwriteMode``
  (captured by ``register``), else ``static``. (Under ``dynamic`` Spark itself refuses SQL ``INSERT
  OVERWRITE`` into a Python data source: give SQL views this option instead);
* ``read.stream.maxfilespertrigger`` / ``read.stream.maxrowspertrigger``: per micro-batch limits;
* ``mergeSchema`` / ``write.merge-schema``: a write adds the DataFrame's new columns to the table and widens
  column types that the DataFrame widened, before it writes;
* ``versionAsOf`` / ``timestampAsOf`` (Spark's time travel options): a snapshot id or tag name, and a
  date-time in the session time zone (captured by ``register``)
  or Unix seconds; each the same as one of Paimon's ``scan.snapshot-id`` / ``scan.tag-name`` /
  ``scan.timestamp-millis``, and only one of these may be given;
* ``overwrite.partition`` (a write in ``overwrite`` mode): ``k=v,k2=v2``, the static partition spec whose
  partitions the write replaces, as ``INSERT OVERWRITE ... PARTITION (...)``; a write with no rows empties them;
* every Paimon option (``scan.snapshot-id``, ``consumer-id``, ``bucket``...) is a dynamic option of the
  table; keys under a storage backend's prefixes (``s3.endpoint``...) are storage options, which the backend
  checks against the keys it declares; any other key is refused with a
  :class:`~paimon_core.errors.ConfigError` naming the close matches (``scan.snapshot-idd``).

Session conf ``spark.paimon.<key>`` / ``paimon.<key>`` sets a dynamic option for every table, and
``paimon.<catalog>.<db>.<table>.<key>`` (each of the three may be ``*``) for matching tables; more specific
entries win, and data source options win over conf.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from paimon_core import Catalog, open_table
from paimon_core import options as opts
from paimon_core.catalog import check_option_key, split_identifier
from paimon_core.errors import ConfigError
from paimon_core.redaction import redacted_repr
from paimon_core.table import Table, split_system_name

__all__ = [
    "OVERWRITE_PARTITION",
    "ROW_KIND_COLUMN",
    "SOURCE_NAME",
    "TIMESTAMP_AS_OF",
    "VERSION_AS_OF",
    "SourceConfig",
    "conf_dynamic_options",
    "is_paimon_option",
    "parse_options",
]

SOURCE_NAME = "paimon"
"""The name the data source registers under: ``spark.read.format("paimon")``."""
ROW_KIND_COLUMN = "rowkind"
"""The row kind column of changelog reads (``$audit_log``, ``read.changelog``) and of writes."""

DEFAULT_CATALOG = "paimon"
_CONF_PREFIXES = ("spark.paimon.", "paimon.")
MAX_FILES_PER_TRIGGER = "read.stream.maxfilespertrigger"
MAX_ROWS_PER_TRIGGER = "read.stream.maxrowspertrigger"
SPARK_OVERWRITE_MODE_CONF = "spark.sql.sources.partitionOverwriteMode"
MERGE_SCHEMA_KEYS = ("mergeschema", "write.merge-schema")  # Spark's spelling, and Paimon's
READ_CHANGELOG = "read.changelog"
VERSION_AS_OF = "versionAsOf"  # Spark's time travel options
TIMESTAMP_AS_OF = "timestampAsOf"
OVERWRITE_PARTITION = "overwrite.partition"
SESSION_TIME_ZONE_CONF = "spark.sql.session.timeZone"
# The options that choose the snapshot of a batch read; one at most.
_TRAVEL_KEYS = (
    VERSION_AS_OF.lower(),
    TIMESTAMP_AS_OF.lower(),
    opts.SCAN_SNAPSHOT_ID.key,
    opts.SCAN_TAG_NAME.key,
    opts.SCAN_TIMESTAMP_MILLIS.key,
    opts.SCAN_TIMESTAMP.key,
)
# Options Spark itself reads and also hands to the data source.
_SPARK_KEYS = ("checkpointlocation", "queryname", "__partition_columns")
_OWN_KEYS = frozenset(
    {
        "path",
        "table",
        "warehouse",
        "catalog",
        "partition-keys",
        "primary-key",
        "partitionoverwritemode",
        READ_CHANGELOG,
        MAX_FILES_PER_TRIGGER,
        MAX_ROWS_PER_TRIGGER,
        VERSION_AS_OF.lower(),
        TIMESTAMP_AS_OF.lower(),
        OVERWRITE_PARTITION,
        *MERGE_SCHEMA_KEYS,
        *_SPARK_KEYS,
    }
)


def is_paimon_option(key: str) -> bool:
    return opts.known_option(key) is not None or key.startswith("fields.")


def parse_options(options: str | Mapping[str, Any] | None) -> dict[str, str]:
    """Paimon's procedure ``options``: ``'k1=v1,k2=v2'`` (or a mapping) into a dict."""
    if options is None:
        return {}
    if isinstance(options, Mapping):
        return {str(k): str(v) for k, v in options.items()}
    result: dict[str, str] = {}
    for pair in options.split(","):
        if not pair.strip():
            continue
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"invalid option {pair!r}: expected key=value")
        result[key.strip()] = value.strip()
    return result


def conf_dynamic_options(conf: Mapping[str, str], catalog: str, database: str, table: str) -> dict[str, str]:
    """Dynamic options for one table from session conf (see the module docstring)."""
    ranked: list[tuple[int, str, str]] = []
    wanted = (catalog, database, table)
    for conf_key, value in conf.items():
        prefix = next((p for p in _CONF_PREFIXES if conf_key.startswith(p)), None)
        if prefix is None:
            continue
        rest = conf_key[len(prefix) :]
        parts = rest.split(".", 3)
        if len(parts) == 4 and is_paimon_option(parts[3]) and not is_paimon_option(rest):
            if all(p == "*" or p == w for p, w in zip(parts[:3], wanted, strict=True)):
                ranked.append((1 + sum(p != "*" for p in parts[:3]), parts[3], value))
        elif is_paimon_option(rest):
            ranked.append((0, rest, value))
    ranked.sort(key=lambda item: item[0])
    return {key: value for _, key, value in ranked}


def _positive_int(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"option {key!r} must be a positive integer, got {raw!r}", key) from None
    if value <= 0:
        raise ConfigError(f"option {key!r} must be a positive integer, got {raw!r}", key)
    return value


def _names(text: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in text.split(",") if k.strip())


@dataclass(frozen=True)
class SourceConfig:
    """Everything a reader or writer needs to open its table; picklable, so executors rebuild the handle."""

    location: str
    warehouse: str | None
    catalog: str = DEFAULT_CATALOG
    table_options: dict[str, str] = field(default_factory=dict)
    storage_options: dict[str, str] = field(default_factory=dict)
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    dynamic_overwrite: bool = False
    max_files_per_trigger: int | None = None
    max_rows_per_trigger: int | None = None
    merge_schema: bool = False
    read_changelog: bool = False
    overwrite_partition: dict[str, str] | None = None

    def __repr__(self) -> str:
        return redacted_repr(self, ("table_options", "storage_options"))

    @classmethod
    def parse(cls, options: Mapping[str, str], session_conf: Mapping[str, str] | None = None) -> SourceConfig:
        """Parse data source options (and the session conf captured at registration).

        Raises:
            ConfigError: no table given, an identifier without a warehouse, or a bad option value.
        """
        lowered = {str(k).lower(): str(v) for k, v in options.items()}
        location = lowered.get("table") or lowered.get("path")
        if not location:
            raise ConfigError(
                "name the table: .load('db.table') / option('table', ...) or a table path (a table of Spark's "
                "session catalog made by CREATE TABLE ... USING paimon reaches the data source without its "
                "options: create Paimon tables with paimon_spark.sql, or spark.sql after paimon_spark.register)"
            )
        warehouse = lowered.get("warehouse")
        is_path = "/" in location or "://" in location or "\\" in location
        if not is_path and not warehouse:
            raise ConfigError(
                f"table {location!r} is an identifier: set option('warehouse', ...)", "warehouse"
            )
        catalog = lowered.get("catalog", DEFAULT_CATALOG)
        database, table = cls._names(location, is_path)
        table_options = conf_dynamic_options(session_conf or {}, catalog, database, table)
        storage_options: dict[str, str] = {}
        for key, value in lowered.items():
            if key in _OWN_KEYS:
                continue
            if is_paimon_option(key):
                table_options[key] = value
                continue
            check_option_key(key, tuple(_OWN_KEYS))  # storage backends check the keys under their prefixes
            storage_options[key] = value
        session_mode = (session_conf or {}).get(SPARK_OVERWRITE_MODE_CONF, "static")
        mode = lowered.get("partitionoverwritemode", session_mode).strip().lower()
        if mode not in ("static", "dynamic"):
            raise ConfigError(f"partitionOverwriteMode must be static or dynamic, got {mode!r}", "mode")
        keys = _names(lowered.get("partition-keys", ""))
        travel = _travel_options(lowered, session_conf or {})
        config = cls(
            location=location,
            warehouse=warehouse,
            catalog=catalog,
            table_options=table_options,
            storage_options=storage_options,
            partition_keys=keys,
            primary_keys=_names(lowered.get("primary-key", "")),
            dynamic_overwrite=mode == "dynamic",
            max_files_per_trigger=_positive_int(lowered, MAX_FILES_PER_TRIGGER),
            max_rows_per_trigger=_positive_int(lowered, MAX_ROWS_PER_TRIGGER),
            merge_schema=any(opts.parse_bool(lowered[k]) for k in MERGE_SCHEMA_KEYS if k in lowered),
            read_changelog=opts.parse_bool(lowered.get(READ_CHANGELOG, "false")),
            overwrite_partition=_partition_spec(lowered.get(OVERWRITE_PARTITION)),
        )
        version = lowered.get(VERSION_AS_OF.lower())
        if version is not None:
            travel = config.resolve_version(version)
        if travel:  # the option's choice replaces one the session conf made
            kept = {k: v for k, v in config.table_options.items() if k not in _TRAVEL_KEYS}
            config = dataclasses.replace(config, table_options={**kept, **travel})
        return config

    def resolve_version(self, version: str) -> dict[str, str]:
        """``versionAsOf`` as Paimon's scan option: a snapshot id, or the name of a tag.

        Raises:
            ConfigError: neither a tag nor a snapshot id.
        """
        if version.strip().isdigit():  # tag names are never numbers here (core refuses them)
            return {opts.SCAN_SNAPSHOT_ID.key: version.strip()}
        base = self.location if self.is_path else split_system_name(self.location)[0]
        table = self._open(base, {})
        if table.tag_manager.exists(version):
            return {opts.SCAN_TAG_NAME.key: version}
        raise ConfigError(
            f"versionAsOf {version!r}: {table.identifier} has no tag of that name, and it is no snapshot id",
            VERSION_AS_OF,
        )

    @staticmethod
    def _names(location: str, is_path: bool) -> tuple[str, str]:
        if not is_path:
            return split_identifier(location)
        parts = location.rstrip("/").replace("\\", "/").split("/")
        table = parts[-1]
        database = parts[-2][:-3] if len(parts) > 1 and parts[-2].endswith(".db") else ""
        return database, table

    @property
    def is_path(self) -> bool:
        return "/" in self.location or "://" in self.location or "\\" in self.location

    def catalog_handle(self, create: bool = False) -> Catalog:
        """The catalog of the warehouse; ``create``: create a missing warehouse (a write that creates its table).

        Raises:
            WarehouseNotFoundError: the warehouse does not exist and ``create`` is false.
        """
        assert self.warehouse is not None
        # The catalog's own keys that are table options too (a jdbc catalog's key and commit lock).
        catalog_keys = {
            k: v
            for k, v in self.table_options.items()
            if k == opts.CATALOG_KEY.key or k.startswith(("lock.", opts.JDBC_PREFIX))
        }
        return Catalog.open(self.warehouse, create=create, **catalog_keys, **self.storage_options)

    def open_table(self) -> Table:
        """The table with its dynamic options applied.

        Raises:
            TableNotFoundError: no such table.
        """
        return self._open(self.location, self.table_options)

    def _open(self, location: str, table_options: Mapping[str, str]) -> Table:
        if self.is_path:
            return open_table(location, self.storage_options, **table_options)
        return self.catalog_handle().get_table(location, **table_options)


def _partition_spec(text: str | None) -> dict[str, str] | None:
    """``overwrite.partition``: ``k=v,k2=v2`` into a spec (``""``: the whole table)."""
    if text is None:
        return None
    spec = {}
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if not pair.strip():
            continue
        if not sep or not key.strip():
            raise ConfigError(
                f"{OVERWRITE_PARTITION} {text!r}: expected k=v pairs separated by ','", OVERWRITE_PARTITION
            )
        spec[key.strip()] = value.strip()
    return spec


def _travel_options(options: Mapping[str, str], session_conf: Mapping[str, str]) -> dict[str, str]:
    """``timestampAsOf`` as ``scan.timestamp-millis``, after checking that one snapshot choice at most is given
    (``versionAsOf`` needs the table: :meth:`SourceConfig.resolve_version`)."""
    given = [k for k in _TRAVEL_KEYS if k in options]
    if len(given) > 1:
        raise ConfigError(f"choose one of the options {', '.join(given)}: each selects the snapshot to read")
    text = options.get(TIMESTAMP_AS_OF.lower())
    if text is None:
        return {}
    return {
        opts.SCAN_TIMESTAMP_MILLIS.key: str(_epoch_millis(text, session_conf.get(SESSION_TIME_ZONE_CONF)))
    }


def _epoch_millis(text: str, time_zone: str | None) -> int:
    """A ``timestampAsOf`` value: Unix seconds, or a date-time (``2024-01-01 12:00:00[.123]``, a date) read in
    ``time_zone`` (the session's; the local one when unknown) unless it names its own offset."""
    value = text.strip()
    if value.lstrip("-").isdigit():
        return int(value) * 1000
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(
            f"timestampAsOf {text!r}: expected 'yyyy-MM-dd[ HH:mm:ss[.SSS]]' or Unix seconds", TIMESTAMP_AS_OF
        ) from None
    if moment.tzinfo is None:
        zone: dt.tzinfo | None = None
        try:
            zone = zoneinfo.ZoneInfo(time_zone) if time_zone else None
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            zone = dt.timezone(_offset(time_zone)) if time_zone else None
        moment = moment.replace(tzinfo=zone) if zone is not None else moment.astimezone()
    return int(moment.timestamp() * 1000)


def _offset(zone: str) -> dt.timedelta:
    """Spark's offset zone ids (``+08:00``, ``UTC+8``, ``GMT-05:30``) as an offset.

    Raises:
        ConfigError: not a zone Spark would accept.
    """
    text = zone.upper().removeprefix("UTC").removeprefix("GMT") or "+00:00"
    sign = -1 if text.startswith("-") else 1
    hours, _, minutes = text.lstrip("+-").partition(":")
    if not hours.isdigit() or (minutes and not minutes.isdigit()):
        raise ConfigError(f"unknown session time zone {zone!r}", SESSION_TIME_ZONE_CONF)
    return sign * dt.timedelta(hours=int(hours), minutes=int(minutes or 0))
