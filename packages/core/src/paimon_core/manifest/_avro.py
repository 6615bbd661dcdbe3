"""Avro schemas of manifests and manifest lists, record conversion, and the codec setup (docs/format.md#avro-metadata-files).

The schemas follow Java's ``AvroSchemaConverter`` output for the Paimon row types: top record
``org.apache.paimon.avro.generated.record``, nested records ``record_<field>``, nullable types as
``["null", T]`` with null FIRST (Java decodes union index 0 as null) and ``"default": null``.
Readers here resolve fields by name and tolerate fields missing from older writers.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import fastavro

from paimon_core.errors import ConfigError, CorruptMetadataError, MissingDependencyError
from paimon_core.manifest._entry import (
    DataFileMeta,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)

__all__ = [
    "MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_FILE_META_SCHEMA",
    "avro_codec",
    "check_entry_version",
    "decode_entries",
    "decode_file_metas",
    "encode_ocf",
    "entry_to_record",
    "file_meta_to_record",
    "record_to_entry",
]

NAMESPACE_RECORD = "org.apache.paimon.avro.generated.record"
_ENTRY_VERSION = 2
_FILE_META_VERSION = 2
_UTC_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def nullable(avro_type: Any) -> list[Any]:
    return ["null", avro_type]


def opt(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": nullable(avro_type), "default": None}


def _stats_schema(name: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            opt("_NULL_COUNTS", {"type": "array", "items": nullable("long")}),
        ],
    }


_STRING_ARRAY = {"type": "array", "items": "string"}

_DATA_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record__FILE",
    "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats_schema("record__FILE__KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats_schema("record__FILE__VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": _STRING_ARRAY},
        opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
        opt("_DELETE_ROW_COUNT", "long"),
        opt("_EMBEDDED_FILE_INDEX", "bytes"),
        opt("_FILE_SOURCE", "int"),
        opt("_VALUE_STATS_COLS", _STRING_ARRAY),
        opt("_EXTERNAL_PATH", "string"),
        opt("_FIRST_ROW_ID", "long"),
        opt("_WRITE_COLS", _STRING_ARRAY),
        opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
    ],
}

#: Avro schema of a manifest file (one record per :class:`ManifestEntry`).
MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": NAMESPACE_RECORD,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": _DATA_FILE_META_SCHEMA},
    ],
}

#: Avro schema of a manifest list (one record per :class:`ManifestFileMeta`).
MANIFEST_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": NAMESPACE_RECORD,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_schema("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        opt("_MIN_BUCKET", "int"),
        opt("_MAX_BUCKET", "int"),
        opt("_MIN_LEVEL", "int"),
        opt("_MAX_LEVEL", "int"),
        opt("_MIN_ROW_ID", "long"),
        opt("_MAX_ROW_ID", "long"),
        # Written by pypaimon 2.1 (and presumably newer Java); Java readers skip unknown fields.
        opt("_TOTAL_BUCKETS", "int"),
        opt("_EXTRA_FILES", _STRING_ARRAY),
    ],
}

PARSED_ENTRY_SCHEMA = fastavro.parse_schema(MANIFEST_ENTRY_SCHEMA)
PARSED_FILE_META_SCHEMA = fastavro.parse_schema(MANIFEST_FILE_META_SCHEMA)

# Avro writes blocks of about this many uncompressed bytes (Java Avro's default sync interval).
SYNC_INTERVAL = 64_000


# --- codecs -----------------------------------------------------------------------------------------------

_CODEC_ALIASES = {
    "zstd": "zstandard",
    "zstandard": "zstandard",
    "snappy": "snappy",
    "deflate": "deflate",
    "null": "null",
    "none": "null",
    "uncompressed": "null",
    "bzip2": "bzip2",
    "xz": "xz",
}


def avro_codec(compression: str) -> str:
    """The fastavro codec name for a ``manifest.compression`` value (``zstd`` → ``zstandard``)."""
    codec = _CODEC_ALIASES.get(compression.strip().lower())
    if codec is None:
        raise ConfigError(
            f"unsupported manifest compression {compression!r}; expected one of {', '.join(_CODEC_ALIASES)}",
            "manifest.compression",
        )
    _ensure_codec(codec)
    return codec


_codec_checked = False


def _ensure_codec(codec: str) -> None:
    """Fail with an install hint when fastavro cannot use ``zstandard`` (its ``zstandard`` extra is missing).

    fastavro decodes Java's blocks (zstd-jni frames without a content size) itself: older releases through
    ``zstandard``'s streaming decompressor, newer ones through ``backports.zstd`` / ``compression.zstd``.
    """
    global _codec_checked
    if codec != "zstandard" or _codec_checked:
        return
    try:
        fastavro.writer(io.BytesIO(), {"type": "int"}, [1], codec=codec)
    except ValueError as exc:
        raise MissingDependencyError(
            f"fastavro cannot use the zstandard codec of Paimon manifests ({exc}); "
            "install it with: pip install 'fastavro[zstandard]'"
        ) from exc
    _codec_checked = True


def encode_ocf(
    schema: Any, records: Iterable[dict[str, Any]], codec: str, compression_level: int | None = None
) -> bytes:
    """Serialize records into an in-memory Avro object container file (``codec``: a Paimon or fastavro name)."""
    codec = avro_codec(codec)
    buffer = io.BytesIO()
    fastavro.writer(
        buffer,
        schema,
        records,
        codec=codec,
        sync_interval=SYNC_INTERVAL,
        codec_compression_level=compression_level,
    )
    return buffer.getvalue()


def read_ocf(data: bytes, what: str, path: str | None) -> Iterator[dict[str, Any]]:
    try:
        reader = fastavro.reader(io.BytesIO(data))
    except Exception as exc:
        raise CorruptMetadataError(f"{what} {path or ''} is not a readable Avro file: {exc}", path) from None
    _ensure_codec(reader.codec)
    try:
        for record in reader:
            if not isinstance(record, dict):
                raise CorruptMetadataError(f"{what} {path or ''} holds non-record values", path)
            yield record
    except CorruptMetadataError:
        raise
    except Exception as exc:
        raise CorruptMetadataError(f"{what} {path or ''} is not a readable Avro file: {exc}", path) from None


# --- records ----------------------------------------------------------------------------------------------


def _stats_to_record(stats: SimpleStats) -> dict[str, Any]:
    return {
        "_MIN_VALUES": stats.min_values,
        "_MAX_VALUES": stats.max_values,
        "_NULL_COUNTS": None if stats.null_counts is None else list(stats.null_counts),
    }


def _opt_list(values: tuple[Any, ...] | None) -> list[Any] | None:
    return None if values is None else list(values)


def entry_to_record(entry: ManifestEntry) -> dict[str, Any]:
    f = entry.file
    return {
        "_VERSION": _ENTRY_VERSION,
        "_KIND": int(entry.kind),
        "_PARTITION": entry.partition,
        "_BUCKET": entry.bucket,
        "_TOTAL_BUCKETS": entry.total_buckets,
        "_FILE": {
            "_FILE_NAME": f.file_name,
            "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count,
            "_MIN_KEY": f.min_key,
            "_MAX_KEY": f.max_key,
            "_KEY_STATS": _stats_to_record(f.key_stats),
            "_VALUE_STATS": _stats_to_record(f.value_stats),
            "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
            "_SCHEMA_ID": f.schema_id,
            "_LEVEL": f.level,
            "_EXTRA_FILES": list(f.extra_files),
            # An int: fastavro would convert a naive datetime through the local zone (docs/format.md#avro-metadata-files).
            "_CREATION_TIME": f.creation_time,
            "_DELETE_ROW_COUNT": f.delete_row_count,
            "_EMBEDDED_FILE_INDEX": f.embedded_index,
            "_FILE_SOURCE": f.file_source,
            "_VALUE_STATS_COLS": _opt_list(f.value_stats_cols),
            "_EXTERNAL_PATH": f.external_path,
            "_FIRST_ROW_ID": f.first_row_id,
            "_WRITE_COLS": _opt_list(f.write_cols),
            "_WRITE_COLS_SEQUENCES": _opt_list(f.write_cols_sequences),
        },
    }


def file_meta_to_record(meta: ManifestFileMeta) -> dict[str, Any]:
    return {
        "_VERSION": _FILE_META_VERSION,
        "_FILE_NAME": meta.file_name,
        "_FILE_SIZE": meta.file_size,
        "_NUM_ADDED_FILES": meta.num_added_files,
        "_NUM_DELETED_FILES": meta.num_deleted_files,
        "_PARTITION_STATS": _stats_to_record(meta.partition_stats),
        "_SCHEMA_ID": meta.schema_id,
        "_MIN_BUCKET": meta.min_bucket,
        "_MAX_BUCKET": meta.max_bucket,
        "_MIN_LEVEL": meta.min_level,
        "_MAX_LEVEL": meta.max_level,
        "_MIN_ROW_ID": meta.min_row_id,
        "_MAX_ROW_ID": meta.max_row_id,
        "_TOTAL_BUCKETS": meta.total_buckets,
        "_EXTRA_FILES": _opt_list(meta.extra_files),
    }


def _stats_from_record(record: Any) -> SimpleStats:
    null_counts = record.get("_NULL_COUNTS")
    return SimpleStats(
        record["_MIN_VALUES"], record["_MAX_VALUES"], None if null_counts is None else tuple(null_counts)
    )


def _millis(value: Any) -> int | None:
    """``_CREATION_TIME`` as stored ms: fastavro decodes timestamp-millis to an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        return (moment - _UTC_EPOCH) // timedelta(milliseconds=1)
    return int(value)  # a writer without the logical type


def _opt_tuple(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _record_to_entry(record: dict[str, Any]) -> ManifestEntry:
    f = record["_FILE"]
    file = DataFileMeta(
        file_name=f["_FILE_NAME"],
        file_size=f["_FILE_SIZE"],
        row_count=f["_ROW_COUNT"],
        min_key=f["_MIN_KEY"],
        max_key=f["_MAX_KEY"],
        key_stats=_stats_from_record(f["_KEY_STATS"]),
        value_stats=_stats_from_record(f["_VALUE_STATS"]),
        min_sequence_number=f["_MIN_SEQUENCE_NUMBER"],
        max_sequence_number=f["_MAX_SEQUENCE_NUMBER"],
        schema_id=f["_SCHEMA_ID"],
        level=f["_LEVEL"],
        extra_files=tuple(f.get("_EXTRA_FILES") or ()),
        creation_time=_millis(f.get("_CREATION_TIME")),
        delete_row_count=f.get("_DELETE_ROW_COUNT"),
        embedded_index=f.get("_EMBEDDED_FILE_INDEX"),
        file_source=f.get("_FILE_SOURCE"),
        value_stats_cols=_opt_tuple(f.get("_VALUE_STATS_COLS")),
        external_path=f.get("_EXTERNAL_PATH"),
        first_row_id=f.get("_FIRST_ROW_ID"),
        write_cols=_opt_tuple(f.get("_WRITE_COLS")),
        write_cols_sequences=_opt_tuple(f.get("_WRITE_COLS_SEQUENCES")),
    )
    return ManifestEntry(
        kind=FileKind(record["_KIND"]),
        partition=record["_PARTITION"],
        bucket=record["_BUCKET"],
        total_buckets=record["_TOTAL_BUCKETS"],
        file=file,
    )


def check_version(record: dict[str, Any], expected: int, what: str, path: str | None) -> None:
    version = record.get("_VERSION")
    if version != expected:
        raise CorruptMetadataError(f"{what} {path or ''} has unsupported _VERSION {version!r}", path)


def check_entry_version(record: dict[str, Any], path: str | None = None) -> None:
    check_version(record, _ENTRY_VERSION, "manifest file", path)


def record_to_entry(record: dict[str, Any], path: str | None = None) -> ManifestEntry:
    """An entry from its decoded Avro record (``_VERSION`` checked by the caller)."""
    try:
        return _record_to_entry(record)
    except (KeyError, ValueError, TypeError) as exc:
        raise CorruptMetadataError(
            f"manifest file {path or ''} has a malformed entry: {exc!r}", path
        ) from None


def decode_entries(data: bytes, path: str | None = None) -> list[ManifestEntry]:
    """Decode a manifest file's bytes. Fields that older writers lack come back as None/defaults."""
    entries = []
    for record in read_ocf(data, "manifest file", path):
        check_entry_version(record, path)
        entries.append(record_to_entry(record, path))
    return entries


def decode_file_metas(data: bytes, path: str | None = None) -> list[ManifestFileMeta]:
    """Decode a manifest list's bytes."""
    metas = []
    for record in read_ocf(data, "manifest list", path):
        check_version(record, _FILE_META_VERSION, "manifest list", path)
        try:
            metas.append(
                ManifestFileMeta(
                    file_name=record["_FILE_NAME"],
                    file_size=record["_FILE_SIZE"],
                    num_added_files=record["_NUM_ADDED_FILES"],
                    num_deleted_files=record["_NUM_DELETED_FILES"],
                    partition_stats=_stats_from_record(record["_PARTITION_STATS"]),
                    schema_id=record["_SCHEMA_ID"],
                    min_bucket=record.get("_MIN_BUCKET"),
                    max_bucket=record.get("_MAX_BUCKET"),
                    min_level=record.get("_MIN_LEVEL"),
                    max_level=record.get("_MAX_LEVEL"),
                    min_row_id=record.get("_MIN_ROW_ID"),
                    max_row_id=record.get("_MAX_ROW_ID"),
                    total_buckets=record.get("_TOTAL_BUCKETS"),
                    extra_files=_opt_tuple(record.get("_EXTRA_FILES")),
                )
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise CorruptMetadataError(
                f"manifest list {path or ''} has a malformed record: {exc!r}", path
            ) from None
    return metas
