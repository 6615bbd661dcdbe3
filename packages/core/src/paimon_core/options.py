"""Table and catalog options, declared once with their Paimon keys and defaults.

Each :class:`Option` knows its key (Java Paimon's ``CoreOptions`` spelling), how to parse the string form,
its default and an optional check. Parsing, unknown-key checks and immutability checks derive from these
declarations; nothing else lists option keys.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from paimon_core.errors import ConfigError
from paimon_core.redaction import Redactor, redacted_option, redacted_options

T = TypeVar("T")

_SIZE_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}  # fmt: skip
_DURATION_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "": 1000, "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}  # fmt: skip
_QUANTITY = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def parse_memory_size(text: str) -> int:
    """Parse a Paimon MemorySize (``"256 mb"``, ``"8MB"``, ``"1024"``) into bytes."""
    match = _QUANTITY.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _SIZE_UNITS:
        raise ValueError(f"not a memory size: {text!r} (expected e.g. '128 mb')")
    return int(match.group(1)) * _SIZE_UNITS[unit]


def parse_duration_ms(text: str) -> int:
    """Parse a Paimon Duration (``"10 s"``, ``"1h"``, ``"500 ms"``; a bare number is milliseconds)."""
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (expected e.g. '10 s')")
    number, unit = int(match.group(1)), match.group(2).lower()
    if unit == "":
        return number  # Java's TimeUtils treats a bare number as milliseconds
    if unit not in _DURATION_UNITS_MS:
        raise ValueError(f"not a duration: {text!r} (expected e.g. '10 s')")
    return number * _DURATION_UNITS_MS[unit]


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"not a boolean: {text!r} (expected 'true' or 'false')")


def _to_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Option(Generic[T]):
    """One option: its Paimon key, parser, default and constraints.

    ``immutable``: fixed once the table is created (Java's ``@Immutable``: it shapes the data already
    written), neither altered nor given as a dynamic option. ``dynamic`` False: it may be altered (a
    rescale) but not overridden for one handle. ``change_refusal(old, new)``: why an alter or a dynamic option
    may not change the value so, or None.
    """

    key: str
    parse: Callable[[str], T]
    default: T
    doc: str
    check: Callable[[T], bool] | None = None
    check_doc: str = ""
    immutable: bool = False
    fallback_keys: tuple[str, ...] = ()
    dynamic: bool = True
    change_refusal: Callable[[T, T], str | None] | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.fallback_keys)

    def parse_value(self, raw: str) -> T:
        try:
            value = self.parse(raw)
        except (ValueError, TypeError) as exc:
            shown = redacted_option(self.key, raw)
            raise ConfigError(
                f"invalid value {shown!r} for option {self.key!r}: {Redactor.of({self.key: raw})(str(exc))}",
                self.key,
            ) from None
        if self.check is not None and value is not None and not self.check(value):
            raise ConfigError(
                f"invalid value {redacted_option(self.key, raw)!r} for option {self.key!r}: "
                f"{self.check_doc or 'out of range'}",
                self.key,
            )
        return value


def _str(text: str) -> str:
    return text


def _optional(parse: Callable[[str], T]) -> Callable[[str], T | None]:
    def parse_optional(text: str) -> T | None:
        return parse(text)

    return parse_optional


def per_level(text: str | None) -> dict[int, str]:
    """A per-level option's map (``'0:avro, 3:parquet'`` -> ``{0: 'avro', 3: 'parquet'}``), values lowercased.

    Raises:
        ValueError: a pair is not ``level:value`` with an integer level.
    """
    found: dict[int, str] = {}
    for pair in (text or "").split(","):
        if not pair.strip():
            continue
        level, sep, value = pair.partition(":")
        if not sep or not value.strip():
            raise ValueError(f"{pair.strip()!r} is not level:value")
        found[int(level.strip())] = value.strip().lower()
    return found


def _valid_per_level(text: str) -> bool:
    try:
        per_level(text)
    except ValueError:
        return False
    return True


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse_choice(text: str) -> str:
        if text.lower() not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return text.lower()

    return parse_choice


def _valid_weights(text: str) -> bool:
    parts = [p.strip() for p in text.split(",")]
    return all(p.isdigit() and int(p) > 0 for p in parts)


def _positive(value: int) -> bool:
    return value > 0


RESCALE_HINT = (
    "to change the number of buckets, rescale: ALTER TABLE SET ('bucket' = 'N'), then INSERT OVERWRITE "
    "each partition (Table.overwrite) with its own rows (docs/primary-key-tables.md, Rescale buckets)"
)


def _bucket_change_refusal(old: int, new: int) -> str | None:
    # Java's checkAlterTableOption: only a fixed number of buckets becomes another fixed number.
    if old <= 0:
        return f"a table with bucket = {old} keeps it (only a fixed number of buckets can change)"
    if new <= 0:
        return f"a fixed number of buckets cannot become bucket = {new}"
    return None


def _one_way_to_true(old: bool, new: bool) -> str | None:
    # Java >= 1.x: what was dropped while the option was true is gone, so it cannot be turned off again.
    return "it cannot go back from true to false" if old and not new else None


_REGISTRY: dict[str, Option[Any]] = {}


def _declare(option: Option[T]) -> Option[T]:
    for key in (option.key, *option.fallback_keys):
        if key in _REGISTRY:
            raise RuntimeError(f"option {key!r} declared twice")
        _REGISTRY[key] = option
    return option


MB = 1 << 20

# --- bucketing ---
BUCKET: Option[int] = _declare(
    Option(
        "bucket",
        int,
        -1,
        "Buckets per partition: N > 0 = fixed buckets; -1 = unaware-bucket append table, or dynamic buckets "
        "for a primary-key table; -2 = postpone mode (a primary-key table's writes wait in bucket-postpone/, "
        "invisible, until a compaction moves them into real buckets).",
        check=lambda v: v in (-1, -2) or v > 0,
        check_doc="must be -1, -2 or a positive number",
        dynamic=False,  # it places every key: a rescale changes it (an ALTER, then an INSERT OVERWRITE)
        change_refusal=_bucket_change_refusal,
    )
)
POSTPONE_DEFAULT_BUCKET_NUM: Option[int] = _declare(
    Option(
        "postpone.default-bucket-num",
        int,
        1,
        "Buckets of a partition of a postpone-bucket table (bucket = -2) when a compaction first moves its "
        "rows into real buckets (a partition that has real buckets keeps their number).",
        check=lambda v: v > 0,
        check_doc="must be a positive number",
    )
)
BUCKET_KEY: Option[str | None] = _declare(
    Option(
        "bucket-key",
        _optional(_str),
        None,
        "Comma-separated columns hashed to pick a row's bucket.",
        immutable=True,
    )
)
BUCKET_APPEND_ORDERED: Option[bool] = _declare(
    Option("bucket-append-ordered", parse_bool, True, "Keep the write order of rows within a bucket.")
)
BUCKET_FUNCTION_TYPE: Option[str] = _declare(
    Option(
        "bucket-function.type",
        _choice("default"),
        "default",
        "Bucket hash function (only 'default').",
        immutable=True,
    )
)

# --- files ---
DATA_FILE_FORMATS = ("parquet", "orc", "avro")
"""The data file formats (``file.format`` values and file suffixes) written and read here."""


def _valid_formats_per_level(text: str) -> bool:
    return _valid_per_level(text) and all(v in DATA_FILE_FORMATS for v in per_level(text).values())


FILE_FORMAT: Option[str] = _declare(
    Option("file.format", _choice(*DATA_FILE_FORMATS), "parquet", "Data file format: parquet, orc or avro.")
)
FILE_COMPRESSION: Option[str] = _declare(
    Option(
        "file.compression",
        _choice(
            "zstd",
            "snappy",
            "gzip",
            "lz4",
            "brotli",
            "zlib",
            "deflate",
            "bzip2",
            "xz",
            "none",
            "uncompressed",
        ),
        "zstd",
        "Data file compression codec (each format takes its own: Parquet zstd, snappy, gzip, lz4, brotli; "
        "ORC zstd, snappy, lz4, zlib; Avro zstd, snappy, deflate, bzip2, xz; all of them none).",
    )
)
FILE_FORMAT_PER_LEVEL: Option[str | None] = _declare(
    Option(
        "file.format.per.level",
        _optional(_str),
        None,
        "Data file format per LSM level of a primary-key table, e.g. '0:avro,3:parquet'; other levels take "
        "file.format. Files are read by their suffix whatever this says.",
        check=lambda v: v is None or _valid_formats_per_level(v),
        check_doc=f"must be 'level:format' pairs, comma-separated, formats among {', '.join(DATA_FILE_FORMATS)}",
    )
)
CHANGELOG_FILE_FORMAT: Option[str | None] = _declare(
    Option(
        "changelog-file.format",
        _optional(_choice(*DATA_FILE_FORMATS)),
        None,
        "Changelog file format (default: file.format, or the per-level format of the level the changelog "
        "is produced at).",
    )
)
FILE_COMPRESSION_PER_LEVEL: Option[str | None] = _declare(
    Option(
        "file.compression.per.level",
        _optional(_str),
        None,
        "Data file compression per LSM level, e.g. '0:lz4,1:zstd'; other levels take file.compression.",
        check=lambda v: v is None or _valid_per_level(v),
        check_doc="must be 'level:value' pairs, comma-separated",
    )
)
FILE_COMPRESSION_ZSTD_LEVEL: Option[int] = _declare(
    Option("file.compression.zstd-level", int, 1, "Zstandard level for data and manifest files.")
)
DATA_FILE_PREFIX: Option[str] = _declare(Option("data-file.prefix", _str, "data-", "Data file name prefix."))
CHANGELOG_FILE_PREFIX: Option[str] = _declare(
    Option("changelog-file.prefix", _str, "changelog-", "Changelog file name prefix.")
)
DATA_FILE_PATH_DIRECTORY: Option[str | None] = _declare(
    Option(
        "data-file.path-directory",
        _optional(_str),
        None,
        "A directory under the table (and under each external path) that holds the partition and bucket "
        "directories of data files.",
        immutable=True,
    )
)
DATA_FILE_EXTERNAL_PATHS: Option[str | None] = _declare(
    Option(
        "data-file.external-paths",
        _optional(_str),
        None,
        "Comma-separated URIs (each with a scheme) where new data files are written instead of the table "
        "directory, as chosen by data-file.external-paths.strategy; manifests record each file's full path.",
    )
)
EXTERNAL_PATH_STRATEGIES = ("none", "specific-fs", "round-robin", "entropy-inject", "weight-robin")
DATA_FILE_EXTERNAL_PATHS_STRATEGY: Option[str] = _declare(
    Option(
        "data-file.external-paths.strategy",
        _choice(*EXTERNAL_PATH_STRATEGIES),
        "none",
        "How a new data file picks one of data-file.external-paths: none (the table directory), "
        "specific-fs (the paths of the scheme data-file.external-paths.specific-fs, in turn), round-robin, "
        "entropy-inject (in turn, under hash directories of the file name) or weight-robin "
        "(data-file.external-paths.weights).",
    )
)
DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS: Option[str | None] = _declare(
    Option(
        "data-file.external-paths.specific-fs",
        _optional(_str),
        None,
        "The scheme (s3, oss...) of the external paths the specific-fs strategy uses.",
    )
)
DATA_FILE_EXTERNAL_PATHS_WEIGHTS: Option[str | None] = _declare(
    Option(
        "data-file.external-paths.weights",
        _optional(_str),
        None,
        "Positive integer weights, comma-separated, one per external path, for the weight-robin strategy.",
        check=lambda v: v is None or _valid_weights(v),
        check_doc="must be positive integers, comma-separated",
    )
)
FILE_SUFFIX_INCLUDE_COMPRESSION: Option[bool] = _declare(
    Option("file.suffix.include.compression", parse_bool, False, "Put the codec in data file names.")
)
TARGET_FILE_SIZE: Option[int | None] = _declare(
    Option(
        "target-file-size",
        _optional(parse_memory_size),
        None,
        "Roll data files at this encoded size (append tables: 256 mb).",
        check=lambda v: v is None or v > 0,
    )
)
STATS_MODE: Option[str] = _declare(
    Option(
        "metadata.stats-mode",
        _str,
        "truncate(16)",
        "Value stats: none, counts, truncate(N) or full.",
        check=lambda v: v in ("none", "counts", "full") or re.fullmatch(r"truncate\(\d+\)", v) is not None,
        check_doc="expected none, counts, full or truncate(N)",
    )
)
STATS_DENSE_STORE: Option[bool] = _declare(
    Option("metadata.stats-dense-store", parse_bool, True, "Drop columns without stats from value stats.")
)
FILE_INDEX_IN_MANIFEST_THRESHOLD: Option[int] = _declare(
    Option("file-index.in-manifest-threshold", parse_memory_size, 500, "Inline file indexes up to this size.")
)
FILE_INDEX_READ_ENABLED: Option[bool] = _declare(
    Option(
        "file-index.read.enabled",
        parse_bool,
        True,
        "Skip data files whose file indexes (bloom filter, bitmap) rule out the filter.",
    )
)

# --- write ---
WRITE_ONLY: Option[bool] = _declare(
    Option(
        "write-only",
        parse_bool,
        False,
        "No compaction or snapshot expiration in writers.",
        fallback_keys=("write.compaction-skip",),
    )
)
WRITE_BUFFER_SIZE: Option[int] = _declare(
    Option(
        "write-buffer-size",
        parse_memory_size,
        256 * MB,
        "Memory a table write holds: the rows it buffers for all its files and the input it is splitting.",
        check=_positive,
    )
)
WRITE_BUFFER_SPILLABLE: Option[bool] = _declare(
    Option(
        "write-buffer-spillable",
        parse_bool,
        True,
        "Spill a full write buffer to local disk rather than flushing it early: primary-key tables always, "
        "append tables with 'write-buffer-for-append' or more than 'write-max-writers-to-spill' writers.",
    )
)
WRITE_BUFFER_FOR_APPEND: Option[bool] = _declare(
    Option(
        "write-buffer-for-append",
        parse_bool,
        False,
        "Append tables: spill full write buffers to local disk (with 'write-buffer-spillable') from the "
        "first writer on, not only past 'write-max-writers-to-spill' writers.",
    )
)
WRITE_MAX_WRITERS_TO_SPILL: Option[int] = _declare(
    Option(
        "write-max-writers-to-spill",
        int,
        10,
        "Append tables: once a write has more (partition, bucket) writers than this, full write buffers "
        "spill to local disk (with 'write-buffer-spillable') instead of becoming small row groups.",
        check=lambda v: v >= 0,
        check_doc="must not be negative",
    )
)
PAGE_SIZE: Option[int] = _declare(Option("page-size", parse_memory_size, 64 << 10, "Memory page size."))

# --- Parquet format (Java passes ``parquet.*`` table options to parquet-java; same keys and defaults) ---
FILE_BLOCK_SIZE: Option[int | None] = _declare(
    Option(
        "file.block-size",
        _optional(parse_memory_size),
        None,
        "Row group size of data files; replaces 'parquet.block.size' when set.",
        check=lambda v: v is None or v > 0,
        check_doc="must be positive",
    )
)
PARQUET_BLOCK_SIZE: Option[int] = _declare(
    Option(
        "parquet.block.size",
        parse_memory_size,
        128 * MB,
        "Row group size: a writer cuts a row group when the rows it buffered reach this many bytes "
        "(in memory, before encoding; parquet-java counts encoded bytes, so its row groups hold more rows).",
        check=_positive,
    )
)
PARQUET_PAGE_SIZE: Option[int] = _declare(
    Option("parquet.page.size", parse_memory_size, 1 * MB, "Parquet data page size.", check=_positive)
)
PARQUET_PAGE_ROW_COUNT_LIMIT: Option[int] = _declare(
    Option(
        "parquet.page.row.count.limit",
        int,
        20_000,
        "Most rows in one Parquet data page (honoured with pyarrow 20 or later, which can limit them).",
        check=_positive,
    )
)
PARQUET_WRITER_VERSION: Option[str] = _declare(
    Option(
        "parquet.writer.version",
        _choice("v1", "v2", "parquet_1_0", "parquet_2_0"),
        "v1",
        "Parquet data page format: v1 (PARQUET_1_0) or v2 (PARQUET_2_0) data page headers.",
    )
)
PARQUET_COMPRESSION: Option[str | None] = _declare(
    Option(
        "parquet.compression",
        _optional(_choice("uncompressed", "snappy", "gzip", "brotli", "lz4", "lz4_raw", "zstd")),
        None,
        "Data file codec; replaces 'file.compression' when set (parquet-java's key).",
    )
)
PARQUET_ZSTD_LEVEL: Option[int | None] = _declare(
    Option(
        "parquet.compression.codec.zstd.level",
        _optional(int),
        None,
        "Zstandard level of data files (default 'file.compression.zstd-level').",
    )
)
PARQUET_DICTIONARY_PAGE_SIZE: Option[int] = _declare(
    Option(
        "parquet.dictionary.page.size",
        parse_memory_size,
        1 * MB,
        "Largest Parquet dictionary page; a column falls back to plain encoding beyond it.",
        check=_positive,
    )
)
PARQUET_ENABLE_DICTIONARY: Option[bool] = _declare(
    Option("parquet.enable.dictionary", parse_bool, True, "Dictionary-encode Parquet columns.")
)
# Data files always carry a page index (column and offset indexes), as parquet-java writes them.
PARQUET_COLUMN_INDEX_TRUNCATE_LENGTH: Option[int | None] = _declare(
    Option(
        "parquet.columnindex.truncate.length",
        _optional(int),
        None,
        "Not supported: parquet-java cuts the binary min/max values of its page index to this many bytes "
        "(64 by default); pyarrow writes them whole and cannot cut them.",
        check=lambda v: False,
        check_doc="pyarrow writes the page index's min/max values whole and cannot truncate them",
    )
)

# --- compaction ---
COMPACTION_MIN_FILE_NUM: Option[int] = _declare(
    Option("compaction.min.file-num", int, 5, "Minimum small files to compact together.", check=_positive)
)
COMPACTION_MAX_FILE_NUM: Option[int | None] = _declare(
    Option(
        "compaction.max.file-num",
        _optional(int),
        None,
        "Append tables (Paimon 0.9/1.0): compact this many small files even below the target size, and "
        "never more in one rewrite (default: no such limit, as in Paimon 1.1+).",
        check=lambda v: v is None or v > 0,
        check_doc="must be positive",
        fallback_keys=("compaction.early-max.file-num",),
    )
)
COMPACTION_SMALL_FILE_RATIO: Option[float] = _declare(
    Option(
        "compaction.small-file-ratio",
        float,
        0.7,
        "A file below target-file-size x ratio is small.",
        check=lambda v: 0 < v <= 1,
        check_doc="must be in (0, 1]",
    )
)
COMPACTION_FILE_NUM_LIMIT: Option[int] = _declare(
    Option("compaction.file-num-limit", int, 100_000, "Files considered per compaction run.", check=_positive)
)
COMPACTION_DELETE_RATIO_THRESHOLD: Option[float] = _declare(
    Option(
        "compaction.delete-ratio-threshold",
        float,
        0.2,
        "Deleted-row ratio (by deletion vector) that makes a file a candidate; no effect here: tables with "
        "deletion vectors are read-only.",
    )
)
COMPACTION_FORCE_REWRITE_ALL_FILES: Option[bool] = _declare(
    Option(
        "compaction.force-rewrite-all-files", parse_bool, False, "Rewrite every file in a full compaction."
    )
)
PRECOMMIT_COMPACT: Option[bool] = _declare(
    Option(
        "precommit-compact",
        parse_bool,
        False,
        "Merge the small files of all writers of a commit before it lands: the new data files of "
        "unaware-bucket append tables, the changelog files of primary-key tables (per partition, "
        "concatenated into files of target-file-size). Paimon 1.0 named it changelog.precommit-compact.",
        fallback_keys=("changelog.precommit-compact",),
    )
)
CHANGELOG_PRECOMMIT_COMPACT_THREAD_NUM: Option[int | None] = _declare(
    Option(
        "changelog.precommit-compact.thread-num",
        _optional(int),
        None,
        "Threads reading small changelog files for precommit-compact (default: the CPU count).",
        check=lambda v: v is None or v > 0,
        check_doc="must be positive",
    )
)
CHANGELOG_PRECOMMIT_COMPACT_BUFFER_SIZE: Option[int] = _declare(
    Option(
        "changelog.precommit-compact.buffer-size",
        parse_memory_size,
        128 * MB,
        "Bytes of changelog files precommit-compact holds in memory at once; larger files are left alone.",
        check=lambda v: 0 < v < 1 << 31,
        check_doc="must be positive and below 2 GiB",
    )
)

# --- manifests ---
MANIFEST_FORMAT: Option[str] = _declare(
    Option("manifest.format", _choice("avro"), "avro", "Manifest file format (always Avro).")
)
MANIFEST_COMPRESSION: Option[str] = _declare(
    Option(
        "manifest.compression",
        _choice("zstd", "snappy", "deflate", "null", "none"),
        "zstd",
        "Avro codec of manifest files.",
    )
)
MANIFEST_TARGET_FILE_SIZE: Option[int] = _declare(
    Option(
        "manifest.target-file-size",
        parse_memory_size,
        8 * MB,
        "Roll manifest files at this size.",
        check=_positive,
    )
)
CACHE_ENABLED: Option[bool] = _declare(
    Option("cache-enabled", parse_bool, True, "Keep decoded small manifests in memory for later plans.")
)
CACHE_MANIFEST_SMALL_FILE_MEMORY: Option[int] = _declare(
    Option(
        "cache.manifest.small-file-memory",
        parse_memory_size,
        128 * MB,
        "Memory for cached manifests (counted as their file size times eight).",
    )
)
CACHE_MANIFEST_SMALL_FILE_THRESHOLD: Option[int] = _declare(
    Option(
        "cache.manifest.small-file-threshold",
        parse_memory_size,
        1 * MB,
        "Only manifests up to this size are cached.",
    )
)
MANIFEST_MERGE_MIN_COUNT: Option[int] = _declare(
    Option(
        "manifest.merge-min-count",
        int,
        30,
        "Merge small manifests once there are this many.",
        check=_positive,
    )
)
MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE: Option[int] = _declare(
    Option(
        "manifest.full-compaction-threshold-size",
        parse_memory_size,
        16 * MB,
        "Rewrite manifests with deletes once they add up to this size.",
    )
)

# --- commit ---
COMMIT_MAX_RETRIES: Option[int] = _declare(
    Option(
        "commit.max-retries",
        int,
        10,
        "Attempts after the first before a commit gives up.",
        check=lambda v: v >= 0,
        check_doc="must be >= 0",
    )
)
COMMIT_TIMEOUT: Option[int | None] = _declare(
    Option("commit.timeout", _optional(parse_duration_ms), None, "Give up retrying after this long (ms).")
)
COMMIT_MIN_RETRY_WAIT: Option[int] = _declare(
    Option("commit.min-retry-wait", parse_duration_ms, 10, "First retry back-off (ms).")
)
COMMIT_MAX_RETRY_WAIT: Option[int] = _declare(
    Option("commit.max-retry-wait", parse_duration_ms, 10_000, "Longest retry back-off (ms).")
)
COMMIT_USER_PREFIX: Option[str | None] = _declare(
    Option("commit.user-prefix", _optional(_str), None, "Prefix of generated commit users.")
)
COMMIT_FORCE_COMPACT: Option[bool] = _declare(
    Option("commit.force-compact", parse_bool, False, "Compact before every commit.")
)
COMMIT_DISCARD_DUPLICATE_FILES: Option[bool] = _declare(
    Option("commit.discard-duplicate-files", parse_bool, False, "Drop appended files that are already live.")
)
COMMIT_FORCE_CREATE_SNAPSHOT: Option[bool] = _declare(
    Option("commit.force-create-snapshot", parse_bool, False, "Create a snapshot even for an empty commit.")
)
SNAPSHOT_IGNORE_EMPTY_COMMIT: Option[bool | None] = _declare(
    Option("snapshot.ignore-empty-commit", _optional(parse_bool), None, "Skip commits with no changes.")
)

# --- commit locks (Java's CatalogOptions and JDBC catalog keys); needed only by stores without atomic create ---
LOCK_ENABLED: Option[bool] = _declare(
    Option(
        "lock.enabled",
        parse_bool,
        False,
        "Publish snapshots under a commit lock; required to commit to a store that cannot create atomically.",
    )
)
LOCK_TYPE: Option[str | None] = _declare(
    Option(
        "lock.type",
        _optional(_str),
        None,
        "Commit lock plugin to use ('jdbc': PostgreSQL; a jdbc catalog's tables use its own lock, "
        "'jdbc-catalog').",
    )
)
LOCK_ACQUIRE_TIMEOUT: Option[int] = _declare(
    Option(
        "lock-acquire-timeout",
        parse_duration_ms,
        8 * 60_000,
        "Give up acquiring a commit lock after this long (ms); a lock held this long by a dead writer expires.",
        check=_positive,
    )
)
LOCK_CHECK_MAX_SLEEP: Option[int] = _declare(
    Option(
        "lock-check-max-sleep",
        parse_duration_ms,
        8_000,
        "Longest wait between attempts to acquire a commit lock (ms).",
        check=_positive,
    )
)
LOCK_KEY_MAX_LENGTH: Option[int] = _declare(
    Option(
        "lock-key-max-length", int, 255, "Longest lock key stored; longer keys are hashed.", check=_positive
    )
)
LOCK_JDBC_URI: Option[str | None] = _declare(
    Option(
        "lock.jdbc.uri",
        _optional(_str),
        None,
        "Database of the jdbc commit lock (jdbc:postgresql://host:port/db or a libpq URI); PG* environment "
        "variables otherwise.",
    )
)
JDBC_USER: Option[str | None] = _declare(
    Option("jdbc.user", _optional(_str), None, "User of the jdbc commit lock's database.")
)
JDBC_PASSWORD: Option[str | None] = _declare(
    Option(
        "jdbc.password",
        _optional(_str),
        None,
        "Password of the jdbc commit lock's database; prefer PGPASSWORD or ~/.pgpass (table options are stored).",
    )
)

CATALOG_KEY: Option[str] = _declare(
    Option(
        "catalog-key",
        _str,
        "jdbc",
        "Key of a jdbc catalog's rows in its database (several catalogs can share one database); the jdbc "
        "catalog's commit lock names its rows '<catalog-key>.<database>.<table>'.",
        check=lambda v: 0 < len(v) <= 255,
        check_doc="1 to 255 characters",
    )
)

# --- catalog options (Java's CatalogOptions): what Catalog.load and Catalog.open take besides storage and
# table options; not table options, so tables never store them ---
_CATALOG_REGISTRY: dict[str, Option[Any]] = {}


def _declare_catalog(option: Option[T]) -> Option[T]:
    if option.key in _CATALOG_REGISTRY or option.key in _REGISTRY:
        raise RuntimeError(f"option {option.key!r} declared twice")
    _CATALOG_REGISTRY[option.key] = option
    return option


WAREHOUSE: Option[str | None] = _declare_catalog(
    Option(
        "warehouse", _optional(_str), None, "The warehouse: databases are <warehouse>/<db>.db directories."
    )
)
METASTORE: Option[str] = _declare_catalog(
    Option(
        "metastore",
        _str,
        "filesystem",
        "Where the catalog keeps its databases and tables: 'filesystem' (directories of the warehouse) or "
        "'jdbc' (rows of a SQLite or PostgreSQL database, as Java Paimon's JdbcCatalog keeps them).",
    )
)
URI: Option[str | None] = _declare_catalog(
    Option(
        "uri",
        _optional(_str),
        None,
        "The jdbc catalog's database: jdbc:sqlite:<path> or jdbc:postgresql://host:port/db.",
    )
)
JDBC_PREFIX = "jdbc."
"""Catalog options under this prefix are properties of the jdbc catalog's connection (``jdbc.user``,
``jdbc.password``, ``jdbc.sslmode``...), as Java passes them to its driver."""


def known_catalog_option(key: str) -> Option[Any] | None:
    """A catalog-only option (``warehouse``, ``metastore``, ``uri``), or None."""
    return _CATALOG_REGISTRY.get(key)


def catalog_options() -> Iterator[Option[Any]]:
    """The catalog-only options."""
    yield from _CATALOG_REGISTRY.values()


# --- expiration ---
SNAPSHOT_NUM_RETAINED_MIN: Option[int] = _declare(
    Option("snapshot.num-retained.min", int, 10, "Snapshots always kept.", check=_positive)
)
SNAPSHOT_NUM_RETAINED_MAX: Option[int] = _declare(
    Option("snapshot.num-retained.max", int, 2**31 - 1, "Snapshots kept at most.", check=_positive)
)
SNAPSHOT_TIME_RETAINED: Option[int] = _declare(
    Option("snapshot.time-retained", parse_duration_ms, 3_600_000, "Keep snapshots younger than this (ms).")
)
SNAPSHOT_EXPIRE_LIMIT: Option[int] = _declare(
    Option("snapshot.expire.limit", int, 50, "Snapshots expired per run at most.", check=_positive)
)
SNAPSHOT_CLEAN_EMPTY_DIRECTORIES: Option[bool] = _declare(
    Option("snapshot.clean-empty-directories", parse_bool, False, "Remove empty directories on expiration.")
)

# --- partitions ---
PARTITION_DEFAULT_NAME: Option[str] = _declare(
    Option(
        "partition.default-name",
        _str,
        "__DEFAULT_PARTITION__",
        "Directory name of null or blank values.",
        immutable=True,
    )
)
PARTITION_LEGACY_NAME: Option[bool] = _declare(
    Option(
        "partition.legacy-name",
        parse_bool,
        True,
        "Name partitions by Java toString of the internal value.",
        immutable=True,
    )
)
DYNAMIC_PARTITION_OVERWRITE: Option[bool] = _declare(
    Option(
        "dynamic-partition-overwrite", parse_bool, True, "Overwrite only the partitions present in the data."
    )
)


# --- automatic tags and partition expiration (docs/how-to/maintenance.md) ---
def _time_zone(text: str) -> str:
    import zoneinfo  # the standard library's IANA database; a bad name is a ValueError here

    try:
        zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {text!r}") from exc
    return text


MARK_DONE_ACTIONS = ("success-file", "done-partition", "mark-event", "http-report", "custom")


def _mark_done_actions(text: str) -> str:
    actions = [a.strip().lower() for a in text.split(",") if a.strip()]
    unknown = [a for a in actions if a not in MARK_DONE_ACTIONS]
    if not actions or unknown:
        raise ValueError(f"expected a comma-separated list of {', '.join(MARK_DONE_ACTIONS)}")
    return ",".join(actions)


TAG_AUTOMATIC_CREATION: Option[str] = _declare(
    Option(
        "tag.automatic-creation",
        _choice("none", "process-time", "watermark", "batch"),
        "none",
        "Create tags automatically after commits: by the snapshots' commit time (process-time), their "
        "watermark, or one tag per batch write (batch).",
    )
)
TAG_CREATION_PERIOD: Option[str] = _declare(
    Option(
        "tag.creation-period",
        _choice("daily", "hourly", "two-hours"),
        "daily",
        "How often automatic tags are created.",
    )
)
TAG_CREATION_PERIOD_DURATION: Option[int | None] = _declare(
    Option(
        "tag.creation-period-duration",
        _optional(parse_duration_ms),
        None,
        "A custom period of automatic tags (ms), named yyyyMMddHHmm; overrides tag.creation-period.",
        check=lambda v: v is None or v > 0,
        check_doc="must be a positive duration",
    )
)
TAG_CREATION_DELAY: Option[int] = _declare(
    Option(
        "tag.creation-delay",
        parse_duration_ms,
        0,
        "How long after a period ends its tag is created (ms), for late data; shorter than the period.",
    )
)
TAG_PERIOD_FORMATTER: Option[str] = _declare(
    Option(
        "tag.period-formatter",
        _choice("with_dashes", "without_dashes", "without_dashes_and_spaces"),
        "with_dashes",
        "Names of daily and hourly automatic tags: yyyy-MM-dd HH, yyyyMMdd HH or yyyyMMddHH.",
    )
)
TAG_NUM_RETAINED_MAX: Option[int | None] = _declare(
    Option(
        "tag.num-retained-max",
        _optional(int),
        None,
        "Automatic tags kept at most (the oldest are deleted).",
        check=lambda v: v is None or v > 0,
        check_doc="must be positive",
    )
)
TAG_DEFAULT_TIME_RETAINED: Option[int | None] = _declare(
    Option(
        "tag.default-time-retained",
        _optional(parse_duration_ms),
        None,
        "Time-to-live of automatic tags (ms).",
    )
)
TAG_TIME_EXPIRE_ENABLED: Option[bool] = _declare(
    Option(
        "tag.time-expire-enabled",
        parse_bool,
        True,
        "Delete tags whose time-to-live ran out after commits.",
    )
)
TAG_AUTOMATIC_COMPLETION: Option[bool] = _declare(
    Option(
        "tag.automatic-completion",
        parse_bool,
        False,
        "Create the tags of periods without a snapshot too (one per commit).",
    )
)
TAG_BATCH_CUSTOMIZED_NAME: Option[str | None] = _declare(
    Option(
        "tag.batch.customized-name",
        _optional(_str),
        None,
        "The tag of 'tag.automatic-creation' = 'batch' (default: batch-write-yyyy-MM-dd).",
    )
)
SINK_PROCESS_TIME_ZONE: Option[str | None] = _declare(
    Option(
        "sink.process-time-zone",
        _optional(_time_zone),
        None,
        "Time zone of commit times for process-time tags (default: the machine's).",
    )
)
SINK_WATERMARK_TIME_ZONE: Option[str] = _declare(
    Option("sink.watermark-time-zone", _time_zone, "UTC", "Time zone of watermarks for watermark tags.")
)
PARTITION_EXPIRATION_STRATEGY: Option[str] = _declare(
    Option(
        "partition.expiration-strategy",
        _choice("values-time", "update-time"),
        "values-time",
        "What makes a partition old: the time its values name, or its newest file's creation time.",
    )
)
PARTITION_EXPIRATION_TIME: Option[int | None] = _declare(
    Option(
        "partition.expiration-time",
        _optional(parse_duration_ms),
        None,
        "Drop partitions older than this (ms) after commits; unset: never.",
    )
)
PARTITION_EXPIRATION_CHECK_INTERVAL: Option[int] = _declare(
    Option(
        "partition.expiration-check-interval",
        parse_duration_ms,
        3_600_000,
        "Least time between two partition expirations after commits of one process (ms).",
    )
)
PARTITION_EXPIRATION_MAX_NUM: Option[int] = _declare(
    Option("partition.expiration-max-num", int, 100, "Partitions expired per run at most.", check=_positive)
)
PARTITION_EXPIRATION_BATCH_SIZE: Option[int | None] = _declare(
    Option(
        "partition.expiration-batch-size",
        _optional(int),
        None,
        "Partitions dropped per commit of an expiration (default: all in one).",
        check=lambda v: v is None or v > 0,
        check_doc="must be positive",
    )
)
PARTITION_TIMESTAMP_FORMATTER: Option[str | None] = _declare(
    Option(
        "partition.timestamp-formatter",
        _optional(_str),
        None,
        "Java DateTimeFormatter pattern of partition times (default: yyyy-MM-dd[ HH:mm:ss]).",
    )
)
PARTITION_TIMESTAMP_PATTERN: Option[str | None] = _declare(
    Option(
        "partition.timestamp-pattern",
        _optional(_str),
        None,
        "How partition values make a time, e.g. '$dt $hour:00:00' (default: the first value).",
    )
)
END_INPUT_CHECK_PARTITION_EXPIRE: Option[bool] = _declare(
    Option(
        "end-input.check-partition-expire",
        parse_bool,
        False,
        "Expire partitions after every batch commit, whatever the check interval.",
    )
)
PARTITION_MARK_DONE_ACTION: Option[str] = _declare(
    Option(
        "partition.mark-done-action",
        _mark_done_actions,
        "success-file",
        "How mark_partition_done marks a partition: success-file (a _SUCCESS file in its directory); "
        "done-partition and mark-event need a metastore, http-report and custom are not supported here.",
    )
)

# --- reads ---
SCAN_MODE: Option[str] = _declare(
    Option(
        "scan.mode",
        _choice(
            "default",
            "latest-full",
            "full",
            "latest",
            "latest-delta",
            "compacted-full",
            "from-timestamp",
            "from-snapshot",
            "from-snapshot-full",
            "from-file-creation-time",
            "from-creation-timestamp",
            "incremental",
        ),
        "default",
        "Where a scan starts.",
    )
)
BRANCH: Option[str] = _declare(
    Option("branch", _str, "main", "The branch a handle reads and writes ('main': the table itself).")
)
SCAN_FALLBACK_BRANCH: Option[str | None] = _declare(
    Option(
        "scan.fallback-branch",
        _optional(_str),
        None,
        "A batch read takes the partitions missing from this branch from the fallback branch.",
    )
)
SCAN_SNAPSHOT_ID: Option[int | None] = _declare(
    Option("scan.snapshot-id", _optional(int), None, "Snapshot a scan starts at.")
)
SCAN_TAG_NAME: Option[str | None] = _declare(Option("scan.tag-name", _optional(_str), None, "Tag to read."))
SCAN_TIMESTAMP_MILLIS: Option[int | None] = _declare(
    Option("scan.timestamp-millis", _optional(int), None, "Read the snapshot current at this time.")
)
SCAN_TIMESTAMP: Option[str | None] = _declare(
    Option(
        "scan.timestamp",
        _optional(_str),
        None,
        "Read the snapshot current at this local date-time ('yyyy-MM-dd HH:mm:ss').",
    )
)
INCREMENTAL_BETWEEN: Option[str | None] = _declare(
    Option(
        "incremental-between",
        _optional(_str),
        None,
        "Read what the snapshots in (start, end] appended: 'start,end' as snapshot ids or tag names.",
    )
)
INCREMENTAL_BETWEEN_TIMESTAMP: Option[str | None] = _declare(
    Option(
        "incremental-between-timestamp",
        _optional(_str),
        None,
        "Read what was appended between two instants: 'start,end' in epoch millis or local date-times.",
    )
)
SCAN_BOUNDED_WATERMARK: Option[int | None] = _declare(
    Option(
        "scan.bounded.watermark",
        _optional(int),
        None,
        "A streaming read ends before the first snapshot whose watermark is larger than this.",
    )
)
SCAN_FILE_CREATION_TIME_MILLIS: Option[int | None] = _declare(
    Option(
        "scan.file-creation-time-millis", _optional(int), None, "Read only files created at or after this."
    )
)
SCAN_CREATION_TIME_MILLIS: Option[int | None] = _declare(
    Option(
        "scan.creation-time-millis",
        _optional(int),
        None,
        "scan.mode=from-creation-timestamp: read from the first snapshot committed at or after this instant; "
        "with none, the latest snapshot's files created since then.",
    )
)
SOURCE_SPLIT_TARGET_SIZE: Option[int] = _declare(
    Option("source.split.target-size", parse_memory_size, 128 * MB, "Bytes per split.", check=_positive)
)
SOURCE_SPLIT_OPEN_FILE_COST: Option[int] = _declare(
    Option(
        "source.split.open-file-cost", parse_memory_size, 4 * MB, "Bytes a file counts at least in a split."
    )
)
CONTINUOUS_DISCOVERY_INTERVAL: Option[int] = _declare(
    Option("continuous.discovery-interval", parse_duration_ms, 10_000, "Streaming poll interval (ms).")
)
STREAMING_READ_APPEND_OVERWRITE: Option[bool] = _declare(
    Option(
        "streaming-read-append-overwrite", parse_bool, False, "Streaming reads emit overwritten append data."
    )
)

# --- consumers and tags ---
CONSUMER_ID: Option[str | None] = _declare(
    Option("consumer-id", _optional(_str), None, "Record streaming read progress under this id.")
)
CONSUMER_EXPIRATION_TIME: Option[int | None] = _declare(
    Option(
        "consumer.expiration-time", _optional(parse_duration_ms), None, "Expire idle consumers after this."
    )
)
CONSUMER_MODE: Option[str] = _declare(
    Option(
        "consumer.mode", _choice("exactly-once", "at-least-once"), "exactly-once", "Consumer progress mode."
    )
)
CONSUMER_IGNORE_PROGRESS: Option[bool] = _declare(
    Option("consumer.ignore-progress", parse_bool, False, "Ignore recorded consumer progress.")
)

INCREMENTAL_BETWEEN_SCAN_MODE: Option[str] = _declare(
    Option(
        "incremental-between-scan-mode",
        _choice("auto", "delta", "changelog", "diff"),
        "auto",
        "What an incremental read of a primary-key table reads: changelog files (auto, when the table has a "
        "changelog producer), or the new data files, merged; diff: the end snapshot compared with the start.",
    )
)
INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT: Option[bool] = _declare(
    Option(
        "incremental-between-tag-to-snapshot",
        parse_bool,
        False,
        "An incremental read between two tags reads the snapshots between them (as between two snapshot "
        "ids) instead of comparing the tags' data.",
    )
)
STREAMING_READ_OVERWRITE: Option[bool] = _declare(
    Option(
        "streaming-read-overwrite",
        parse_bool,
        False,
        "Streaming reads of primary-key tables read the changes of OVERWRITE commits too.",
    )
)

# --- primary-key tables (docs/primary-key-tables.md) ---
MERGE_ENGINE: Option[str] = _declare(
    Option(
        "merge-engine",
        _choice("deduplicate", "partial-update", "aggregation", "first-row"),
        "deduplicate",
        "How rows with the same primary key are merged.",
        immutable=True,
    )
)
SEQUENCE_FIELD: Option[str | None] = _declare(
    Option(
        "sequence.field",
        _optional(_str),
        None,
        "Comma-separated columns that order the rows of one key (ties: arrival order).",
        immutable=True,
    )
)
SEQUENCE_FIELD_SORT_ORDER: Option[str] = _declare(
    Option(
        "sequence.field.sort-order",
        _choice("ascending", "descending"),
        "ascending",
        "Whether the largest (ascending) or smallest (descending) sequence field wins.",
    )
)
ROWKIND_FIELD: Option[str | None] = _declare(
    Option(
        "rowkind.field",
        _optional(_str),
        None,
        "A string column holding each row's kind: +I, -U, +U, -D.",
        immutable=True,
    )
)
IGNORE_DELETE: Option[bool] = _declare(
    Option(
        "ignore-delete",
        parse_bool,
        False,
        "Drop -U and -D records instead of applying them.",
        fallback_keys=(
            "first-row.ignore-delete",
            "deduplicate.ignore-delete",
            "partial-update.ignore-delete",
        ),
        change_refusal=_one_way_to_true,
    )
)
PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE: Option[bool] = _declare(
    Option(
        "partial-update.remove-record-on-delete",
        parse_bool,
        False,
        "A -D removes the whole row of a partial-update table.",
        immutable=True,
    )
)
PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP: Option[str | None] = _declare(
    Option(
        "partial-update.remove-record-on-sequence-group",
        _optional(_str),
        None,
        "Sequence fields whose group, when a -D wins it, removes the whole row.",
        immutable=True,
    )
)
AGGREGATION_REMOVE_RECORD_ON_DELETE: Option[bool] = _declare(
    Option(
        "aggregation.remove-record-on-delete",
        parse_bool,
        False,
        "A -D removes the whole row of an aggregation table.",
        immutable=True,
    )
)
FIELDS_DEFAULT_AGGREGATE_FUNCTION: Option[str | None] = _declare(
    Option(
        "fields.default-aggregate-function",
        _optional(_str),
        None,
        "Aggregate function of value columns without their own (aggregation: last_non_null_value).",
    )
)
CHANGELOG_PRODUCER_ROW_DEDUPLICATE: Option[bool] = _declare(
    Option(
        "changelog-producer.row-deduplicate",
        parse_bool,
        False,
        "Emit no -U/+U pair when a row did not change.",
    )
)
NUM_SORTED_RUN_COMPACTION_TRIGGER: Option[int] = _declare(
    Option(
        "num-sorted-run.compaction-trigger",
        int,
        5,
        "Sorted runs of a bucket that trigger a compaction.",
        check=_positive,
    )
)
NUM_SORTED_RUN_STOP_TRIGGER: Option[int | None] = _declare(
    Option(
        "num-sorted-run.stop-trigger",
        _optional(int),
        None,
        "Sorted runs at which writes wait for compaction (default: compaction trigger + 3).",
        check=lambda v: v is None or v > 0,
    )
)
NUM_LEVELS: Option[int | None] = _declare(
    Option(
        "num-levels",
        _optional(int),
        None,
        "Levels of the merge tree (default: compaction trigger + 1).",
        check=lambda v: v is None or v >= 2,
        check_doc="must be at least 2",
    )
)
COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT: Option[int] = _declare(
    Option(
        "compaction.max-size-amplification-percent",
        int,
        200,
        "Size of the newer runs, in percent of the oldest, that triggers a full compaction.",
        check=lambda v: v >= 0,
    )
)
COMPACTION_SIZE_RATIO: Option[int] = _declare(
    Option(
        "compaction.size-ratio",
        int,
        1,
        "Percent of flexibility when comparing sorted-run sizes for a compaction.",
        check=lambda v: v >= 0,
    )
)
COMPACTION_OPTIMIZATION_INTERVAL: Option[int | None] = _declare(
    Option(
        "compaction.optimization-interval",
        _optional(parse_duration_ms),
        None,
        "Run a full compaction at least this often, so read-optimized reads stay fresh.",
    )
)
COMPACTION_FORCE_UP_LEVEL_0: Option[bool] = _declare(
    Option(
        "compaction.force-up-level-0",
        parse_bool,
        False,
        "Every compaction also pushes all level-0 files up.",
    )
)
FULL_COMPACTION_DELTA_COMMITS: Option[int | None] = _declare(
    Option(
        "full-compaction.delta-commits",
        _optional(int),
        None,
        "Run a full compaction every this many commits of a writer.",
        check=lambda v: v is None or v > 0,
    )
)
LOCAL_SORT_MAX_NUM_FILE_HANDLES: Option[int] = _declare(
    Option(
        "local-sort.max-num-file-handles",
        int,
        128,
        "Spilled runs merged at once by the write buffer.",
        check=lambda v: v >= 2,
        check_doc="must be at least 2",
    )
)
WRITE_BUFFER_SPILL_MAX_DISK_SIZE: Option[int | None] = _declare(
    Option(
        "write-buffer-spill.max-disk-size",
        _optional(parse_memory_size),
        None,
        "Local disk a spilling write buffer may use (unlimited by default).",
    )
)
SORT_ENGINE: Option[str] = _declare(
    Option("sort-engine", _choice("loser-tree", "min-heap"), "loser-tree", "Merge-sort algorithm (Java's).")
)
SPILL_COMPRESSION: Option[str] = _declare(
    Option("spill-compression", _choice("zstd", "lz4", "none"), "zstd", "Compression of spilled runs.")
)
DYNAMIC_BUCKET_TARGET_ROW_NUM: Option[int] = _declare(
    Option(
        "dynamic-bucket.target-row-num",
        int,
        2_000_000,
        "Keys per bucket before a dynamic-bucket table opens a new bucket.",
        check=_positive,
    )
)
DYNAMIC_BUCKET_INITIAL_BUCKETS: Option[int | None] = _declare(
    Option(
        "dynamic-bucket.initial-buckets",
        _optional(int),
        None,
        "Buckets a dynamic-bucket writer opens in parallel at first.",
        check=lambda v: v is None or v > 0,
        immutable=True,
    )
)
DYNAMIC_BUCKET_MAX_BUCKETS: Option[int] = _declare(
    Option(
        "dynamic-bucket.max-buckets",
        int,
        -1,
        "Most buckets per partition of a dynamic-bucket table (-1: unlimited).",
        check=lambda v: v == -1 or v > 0,
        check_doc="must be -1 or a positive number",
    )
)

# --- table kind ---
PRIMARY_KEY_NULLABLE: Option[bool] = _declare(
    Option("primary-key.nullable", parse_bool, False, "Allow nullable primary key columns.", immutable=True)
)
DELETION_VECTORS_ENABLED: Option[bool] = _declare(
    Option(
        "deletion-vectors.enabled",
        parse_bool,
        False,
        "Deletion vectors on primary-key tables: lookup compaction marks the old rows of updated keys "
        "deleted instead of rewriting their files, and batch reads read every file above level 0 without "
        "a merge (level 0 becomes visible once compacted). Not with the first-row engine or the "
        "full-compaction changelog producer; append tables with them are read-only here.",
    )
)
DELETION_VECTORS_BITMAP64: Option[bool] = _declare(
    Option(
        "deletion-vectors.bitmap64",
        parse_bool,
        False,
        "Write 64-bit deletion vectors (Paimon >= 1.2 reads them; older versions read only 32-bit ones).",
    )
)
ROW_TRACKING_ENABLED: Option[bool] = _declare(
    Option(
        "row-tracking.enabled",
        parse_bool,
        False,
        "Row tracking (not supported for writing here).",
        check=lambda v: v is False,
        check_doc="row tracking is not supported by this implementation",
        immutable=True,
    )
)
CHANGELOG_PRODUCER: Option[str] = _declare(
    Option(
        "changelog-producer",
        _choice("none", "input", "lookup", "full-compaction"),
        "none",
        "Changelog producer of primary-key tables.",
    )
)
PATH: Option[str | None] = _declare(
    Option("path", _optional(_str), None, "Table location (set by catalogs).")
)

# Keys whose names embed a column or another variable part (Java "fields.<name>.<key>").
_PATTERN_KEYS = (
    re.compile(r"^fields\.[^.]+\.stats-mode$"),
    # file-index.<type>.columns and file-index.<type>.<column>.<key> (paimon_core.fileindex reads them)
    re.compile(r"^file-index\.[^.]+\.columns$"),
    re.compile(r"^file-index\.[^.]+\.[^.]+\.[^.]+$"),
    re.compile(
        r"^fields\.[^.]+\.(aggregate-function|ignore-retract|sequence-group|default-value|list-agg-delimiter|distinct)$"
    ),
)
# parquet-java's per-column keys ("<key>#<column path>"); their values are booleans.
_PARQUET_COLUMN_DICTIONARY = re.compile(r"^parquet\.enable\.dictionary#(.+)$")
_BOOLEAN_PATTERN_KEYS = (_PARQUET_COLUMN_DICTIONARY,)

APPEND_TARGET_FILE_SIZE = 256 * MB
PRIMARY_KEY_TARGET_FILE_SIZE = 128 * MB


def to_millis(value: dt.datetime | int | str) -> int:
    """Epoch milliseconds from a datetime (naive = local time), epoch millis, or 'yyyy-MM-dd HH:mm:ss'.

    Raises:
        ConfigError: not a point in time.
    """
    if isinstance(value, bool):
        raise ConfigError(f"not a point in time: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ConfigError(f"not a time: {text!r} (expected 'yyyy-MM-dd HH:mm:ss')") from None
    return int(value.timestamp() * 1000)


def close_matches(key: str, candidates: Iterable[str]) -> str:
    """ " (did you mean 'x'?)" for a misspelled key, or ""."""
    matches = difflib.get_close_matches(key, list(candidates), n=3, cutoff=0.75)
    if not matches:
        return ""
    return " (did you mean " + " or ".join(repr(m) for m in matches) + "?)"


def known_option(key: str) -> Option[Any] | None:
    return _REGISTRY.get(key)


def all_options() -> Iterator[Option[Any]]:
    seen: set[str] = set()
    for option in _REGISTRY.values():
        if option.key not in seen:
            seen.add(option.key)
            yield option


@dataclass(frozen=True)
class Options(Mapping[str, str]):
    """A table's or catalog's options: raw strings keyed by Paimon key, read through typed :class:`Option`."""

    raw: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, values: Mapping[str, Any] | None = None) -> Options:
        return cls({str(k): _to_str(v) for k, v in (values or {}).items()})

    def __repr__(self) -> str:
        # Shown in errors, logs and consoles: credentials never (the values themselves stay intact).
        return f"Options({redacted_options(self.raw)!r})"

    def get_option(self, option: Option[T]) -> T:
        for key in (option.key, *option.fallback_keys):
            if key in self.raw:
                return option.parse_value(self.raw[key])
        return option.default

    def __getitem__(self, key: str) -> str:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def with_overrides(self, overrides: Mapping[str, Any]) -> Options:
        merged = dict(self.raw)
        merged.update({str(k): _to_str(v) for k, v in overrides.items()})
        return Options(merged)

    def validate(self, *, allow_unknown: Iterable[str] = ()) -> None:
        """Check every key is known and every value parses; raise :class:`ConfigError` otherwise."""
        extra = set(allow_unknown)
        for key, raw in self.raw.items():
            option = _REGISTRY.get(key)
            if option is not None:
                option.parse_value(raw)
            elif any(p.match(key) for p in _BOOLEAN_PATTERN_KEYS):
                _parse_pattern_bool(key, raw)
            elif key not in extra and not any(p.match(key) for p in _PATTERN_KEYS):
                raise ConfigError(f"unknown option {key!r}{close_matches(key, [*_REGISTRY, *extra])}", key)

    def parquet_block_size(self) -> int:
        """The row group size: ``file.block-size`` when set, else ``parquet.block.size`` (as Java)."""
        size = self.get_option(FILE_BLOCK_SIZE)
        return size if size is not None else self.get_option(PARQUET_BLOCK_SIZE)

    def per_field(self, suffix: str) -> dict[str, str]:
        """``fields.<column>.<suffix>`` options (``stats-mode``, ``aggregate-function``...) by column."""
        found = {}
        for key, value in self.raw.items():
            if key.startswith("fields.") and key.endswith("." + suffix):
                found[key[len("fields.") : -len(suffix) - 1]] = value
        return found

    def parquet_column_dictionary(self) -> dict[str, bool]:
        """``parquet.enable.dictionary#<column>``: dictionary encoding chosen per column."""
        chosen = {}
        for key, raw in self.raw.items():
            match = _PARQUET_COLUMN_DICTIONARY.match(key)
            if match is not None:
                chosen[match.group(1)] = _parse_pattern_bool(key, raw)
        return chosen

    def target_file_size(self, has_primary_key: bool = False) -> int:
        size = self.get_option(TARGET_FILE_SIZE)
        if size is not None:
            return size
        return PRIMARY_KEY_TARGET_FILE_SIZE if has_primary_key else APPEND_TARGET_FILE_SIZE

    def sorted_run_stop_trigger(self) -> int:
        """``num-sorted-run.stop-trigger``, defaulting to the compaction trigger + 3 as Paimon does."""
        stop = self.get_option(NUM_SORTED_RUN_STOP_TRIGGER)
        return stop if stop is not None else self.get_option(NUM_SORTED_RUN_COMPACTION_TRIGGER) + 3

    def full_compaction_delta_commits(self) -> int | None:
        """A writer's commits from one full compaction to the next; None: none (``write-only`` never compacts).

        ``full-compaction.delta-commits``; unset with the ``full-compaction`` changelog producer, every commit:
        Paimon documents 1 as its default there (its Flink writer compacts fully at every commit), and a
        producer whose changelog comes only from full compactions would otherwise give none.
        """
        if self.get_option(WRITE_ONLY):
            return None
        every = self.get_option(FULL_COMPACTION_DELTA_COMMITS)
        if every is None and self.get_option(CHANGELOG_PRODUCER) == "full-compaction":
            return 1
        return every

    def merge_tree_levels(self) -> int:
        """``num-levels``, defaulting to the compaction trigger + 1 as Paimon does."""
        levels = self.get_option(NUM_LEVELS)
        return levels if levels is not None else self.get_option(NUM_SORTED_RUN_COMPACTION_TRIGGER) + 1


def _parse_pattern_bool(key: str, raw: str) -> bool:
    try:
        return parse_bool(raw)
    except ValueError as exc:
        raise ConfigError(f"invalid value {raw!r} for option {key!r}: {exc}", key) from None


def check_option_changes(old: Options, new: Options, *, dynamic: bool = False) -> None:
    """Refuse what ``new`` changes of ``old`` that may not change so (Java's ``checkAlterTableOption``): an
    immutable option, a change an option's ``change_refusal`` names, and with ``dynamic`` (``new`` is ``old``
    with a handle's dynamic options) an option only an ALTER changes (``bucket``: a rescale).

    Raises:
        ConfigError: naming the option, the change and what to do instead.
    """
    for option in all_options():
        raw_old = [old.raw.get(k) for k in option.keys]
        raw_new = [new.raw.get(k) for k in option.keys]
        if raw_old == raw_new:
            continue
        before, after = old.get_option(option), new.get_option(option)
        if before == after:
            continue
        key = next((k for k, a, b in zip(option.keys, raw_old, raw_new, strict=True) if a != b), option.key)
        change = f"from {_to_str(before)!r} to {_to_str(after)!r}"
        if option.immutable:
            where = " (not even as a dynamic option)" if dynamic else ""
            raise ConfigError(
                f"option {key!r} cannot change {change}{where}: it is fixed when the table is created, as it "
                "shapes the data already written",
                key,
            )
        hint = f"; {RESCALE_HINT}" if option is BUCKET else ""
        if dynamic and not option.dynamic:
            raise ConfigError(
                f"option {key!r} cannot change {change} as a dynamic option: the data already written is laid "
                f"out by the table's value{hint}",
                key,
            )
        reason = option.change_refusal(before, after) if option.change_refusal is not None else None
        if reason is not None:
            raise ConfigError(f"option {key!r} cannot change {change}: {reason}{hint}", key)


def check_consistency(options: Options) -> None:
    """Refuse options that contradict each other (Java's ``SchemaValidation``): checked when a table is
    created or altered and when a handle gets dynamic options.

    Raises:
        ConfigError: naming the options in conflict.
    """
    low, high = options.get_option(SNAPSHOT_NUM_RETAINED_MIN), options.get_option(SNAPSHOT_NUM_RETAINED_MAX)
    if low > high:
        raise ConfigError(
            f"{SNAPSHOT_NUM_RETAINED_MIN.key} ({low}) must not be larger than {SNAPSHOT_NUM_RETAINED_MAX.key} "
            f"({high}): expiration could never keep both",
            SNAPSHOT_NUM_RETAINED_MIN.key,
        )
    producer = options.get_option(CHANGELOG_PRODUCER)
    if options.get_option(STREAMING_READ_OVERWRITE) and producer in ("lookup", "full-compaction"):
        raise ConfigError(
            f"{STREAMING_READ_OVERWRITE.key} cannot be true with changelog-producer {producer}: a stream "
            "would read the changes of an overwrite twice",
            STREAMING_READ_OVERWRITE.key,
        )


def retention_summary(options: Options) -> str:
    """How a table keeps snapshots, for errors about expired ones."""
    return (
        f"snapshot.num-retained.min={options.get_option(SNAPSHOT_NUM_RETAINED_MIN)}, "
        f"snapshot.num-retained.max={options.get_option(SNAPSHOT_NUM_RETAINED_MAX)}, "
        f"snapshot.time-retained={options.get_option(SNAPSHOT_TIME_RETAINED)} ms"
    )
