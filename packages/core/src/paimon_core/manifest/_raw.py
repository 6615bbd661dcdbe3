"""Manifest files as Avro blocks and encoded records, for work that must not decode every entry.

An Avro object container file is a header (codec, writer schema, a 16-byte sync marker) followed by
blocks, each ``record count, byte length, compressed records, sync marker``; a block's decompressed bytes
are its records' encodings laid end to end. So:

* a block of a manifest whose writer schema is ours can be copied into another of our manifests as it is
  (same codec: not even decompressed), and two blocks are joined by concatenating their decompressed bytes;
* one record's encoding can be cut out of a block once its end is known. Every Paimon manifest record starts
  with ``_VERSION, _KIND, _PARTITION, _BUCKET, _TOTAL_BUCKETS`` (ints and bytes), then the ``_FILE`` record,
  whose first field is ``_FILE_NAME``. Reading that prefix and skipping the rest (fastavro's compiled
  ``skip_record``) tells kind, partition, bucket and file name and where the record ends, without building the
  entry.

The manifest merge moves entries this way (:mod:`._merge`), and planning uses the prefix to drop entries of
other partitions before their ``_FILE`` is decoded (:func:`decode_entries_where`).

The compiled readers are fastavro internals (pypaimon reads manifests with them too). Without them, every
path here still works by decoding and re-encoding whole records.
"""

from __future__ import annotations

import importlib
import io
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import fastavro
from fastavro.write import Writer

from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest._avro import (
    MANIFEST_ENTRY_SCHEMA,
    PARSED_ENTRY_SCHEMA,
    SYNC_INTERVAL,
    avro_codec,
    check_entry_version,
    entry_to_record,
    record_to_entry,
)
from paimon_core.manifest._entry import ManifestEntry

__all__ = [
    "MAGIC",
    "ManifestBuilder",
    "RawBlock",
    "RawManifest",
    "RawRecord",
    "decode_entries_where",
    "encode_record",
    "parse_manifest",
]

MAGIC = b"Obj\x01"
_SYNC_SIZE = 16

try:  # fastavro's compiled primitives; optional (see the module docstring)
    _fastavro_read: Any = importlib.import_module("fastavro._read")
    _read_long: Callable[[Any], int] | None = _fastavro_read.read_long
    _read_bytes: Callable[[Any], bytes] = _fastavro_read.read_bytes
    _skip_record: Callable[[Any, Any, Any], None] = _fastavro_read.skip_record
    _read_record: Callable[[Any, Any, Any], Any] = _fastavro_read.read_record
    _BLOCK_READERS: dict[str, Callable[[Any], io.BytesIO]] = _fastavro_read.BLOCK_READERS
except (ImportError, AttributeError):  # pragma: no cover - every fastavro wheel we support has them
    _read_long = None
    _BLOCK_READERS = {}

_PREFIX = (
    ("_VERSION", "int"),
    ("_KIND", "int"),
    ("_PARTITION", "bytes"),
    ("_BUCKET", "int"),
    ("_TOTAL_BUCKETS", "int"),
)


def _zigzag(value: int) -> bytes:
    encoded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while encoded > 0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise EOFError("truncated Avro varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


# --- reading ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RawBlock:
    """One block as stored: ``count`` records, ``framed`` = the byte length varint and the compressed bytes."""

    count: int
    framed: bytes


class RawRecord(NamedTuple):
    """One manifest record's encoding (in our writer schema), with what its prefix says."""

    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file_name: str
    data: bytes


class _Layout:
    """What reading records of one writer schema needs: the parsed ``_FILE`` schema and named types."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.named: dict[str, Any] = {}
        parsed = fastavro.parse_schema(schema, named_schemas=self.named)
        fields = parsed.get("fields", []) if isinstance(parsed, dict) else []
        prefix = tuple((f.get("name"), f.get("type")) for f in fields[:5])
        file_type = fields[5]["type"] if len(fields) == 6 else None
        # Records can be cut apart only when the prefix is the one every Paimon version writes.
        self.scannable = (
            _read_long is not None
            and prefix == _PREFIX
            and fields[5]["name"] == "_FILE"
            and isinstance(file_type, dict)
            and file_type.get("type") == "record"
            and file_type["fields"][0]["name"] == "_FILE_NAME"
        )
        self.file_schema = file_type
        self.file_rest: Any = None
        if self.scannable:
            assert isinstance(file_type, dict)
            rest = {"type": "record", "name": "paimon_scan_rest", "fields": file_type["fields"][1:]}
            self.file_rest = fastavro.parse_schema(rest, named_schemas={})


_layout_lock = threading.Lock()
_layouts: dict[str, tuple[_Layout, bool]] = {}
_OUR_SCHEMA = fastavro.schema.to_parsing_canonical_form(MANIFEST_ENTRY_SCHEMA)


def _layout(schema_json: str) -> tuple[_Layout, bool]:
    """The layout of a writer schema, and whether it is ours (its records can go into our files)."""
    with _layout_lock:
        hit = _layouts.get(schema_json)
    if hit is None:
        schema = json.loads(schema_json)
        ours = fastavro.schema.to_parsing_canonical_form(schema) == _OUR_SCHEMA
        hit = (_Layout(schema), ours)
        with _layout_lock:
            _layouts[schema_json] = hit
    return hit


@dataclass(frozen=True)
class RawManifest:
    """A manifest file split into its blocks.

    Attributes:
        codec: the fastavro name of the file's codec.
        ours: the writer schema is :data:`MANIFEST_ENTRY_SCHEMA`, so blocks and records can be copied into
            manifests written here.
        blocks: the blocks, in file order.
        path: where it was read from (for errors).
    """

    codec: str
    ours: bool
    blocks: tuple[RawBlock, ...]
    layout: _Layout
    path: str | None = None

    @property
    def count(self) -> int:
        return sum(b.count for b in self.blocks)

    @property
    def scannable(self) -> bool:
        return self.layout.scannable

    def decompress(self, block: RawBlock) -> bytes:
        """The block's records, encoded one after the other."""
        reader = _BLOCK_READERS.get(self.codec)
        if reader is None:
            raise CorruptMetadataError(
                f"manifest {self.path or ''} uses unknown codec {self.codec!r}", self.path
            )
        try:
            return reader(io.BytesIO(block.framed)).getvalue()
        except Exception as exc:
            raise CorruptMetadataError(
                f"manifest {self.path or ''} has a corrupt block: {exc}", self.path
            ) from None

    def records(self, block: RawBlock) -> Iterator[RawRecord]:
        """The block's records cut apart (only for :attr:`scannable` files)."""
        data = self.decompress(block)
        stream = io.BytesIO(data)
        assert _read_long is not None and self.layout.scannable
        rest, named = self.layout.file_rest, self.layout.named
        try:
            for _ in range(block.count):
                start = stream.tell()
                _read_long(stream)
                kind = _read_long(stream)
                partition = _read_bytes(stream)
                bucket = _read_long(stream)
                total_buckets = _read_long(stream)
                name = _read_bytes(stream).decode("utf-8")
                _skip_record(stream, rest, named)
                yield RawRecord(kind, partition, bucket, total_buckets, name, data[start : stream.tell()])
        except (EOFError, ValueError, UnicodeDecodeError) as exc:
            raise CorruptMetadataError(
                f"manifest {self.path or ''} has a malformed record: {exc}", self.path
            ) from None
        if stream.tell() != len(data):
            raise CorruptMetadataError(
                f"manifest {self.path or ''} has a block with trailing bytes", self.path
            )

    def entry(self, record: RawRecord) -> ManifestEntry:
        """Decode one record (of this file) into an entry."""
        stream = io.BytesIO(record.data)
        assert _read_long is not None
        values = [_read_long(stream) if t == "int" else _read_bytes(stream) for _, t in _PREFIX]
        file = _read_record(stream, self.layout.file_schema, self.layout.named)
        return _to_entry(values, file, self.path)


def _to_entry(prefix: Sequence[Any], file: Any, path: str | None) -> ManifestEntry:
    record = {name: value for (name, _), value in zip(_PREFIX, prefix, strict=True)}
    record["_FILE"] = file
    check_entry_version(record, path)
    return record_to_entry(record, path)


def parse_manifest(data: bytes, path: str | None = None) -> RawManifest:
    """Split a manifest file into its blocks (nothing is decompressed).

    Raises:
        CorruptMetadataError: not an Avro object container file.
    """
    view = memoryview(data)
    try:
        if bytes(view[:4]) != MAGIC:
            raise ValueError("no Avro magic")
        pos = 4
        meta: dict[str, bytes] = {}
        while True:
            count, pos = _varint(view, pos)
            if count == 0:
                break
            if count < 0:
                count = -count
                _, pos = _varint(view, pos)
            for _ in range(count):
                length, pos = _varint(view, pos)
                key = bytes(view[pos : pos + length]).decode("utf-8")
                pos += length
                length, pos = _varint(view, pos)
                meta[key] = bytes(view[pos : pos + length])
                pos += length
        sync = bytes(view[pos : pos + _SYNC_SIZE])
        pos += _SYNC_SIZE
        blocks = []
        while pos < len(view):
            count, pos = _varint(view, pos)
            start = pos
            length, pos = _varint(view, pos)
            end = pos + length
            if end + _SYNC_SIZE > len(view) or bytes(view[end : end + _SYNC_SIZE]) != sync:
                raise ValueError("a block does not end with the file's sync marker")
            blocks.append(RawBlock(count, bytes(view[start:end])))
            pos = end + _SYNC_SIZE
        codec = avro_codec(meta.get("avro.codec", b"null").decode("utf-8"))
        layout, ours = _layout(meta["avro.schema"].decode("utf-8"))
    except CorruptMetadataError:
        raise
    except Exception as exc:
        raise CorruptMetadataError(
            f"manifest file {path or ''} is not a readable Avro file: {exc}", path
        ) from None
    return RawManifest(codec, ours, tuple(blocks), layout, path)


def decode_entries_where(
    data: bytes, keep: Callable[[bytes], bool], path: str | None = None
) -> list[ManifestEntry] | None:
    """The entries of a manifest whose partition (stored bytes) ``keep`` accepts, in file order; the others'
    ``_FILE`` is skipped undecoded. None when the file's records cannot be cut apart (decode it whole)."""
    raw = parse_manifest(data, path)
    if not raw.scannable:
        return None
    assert _read_long is not None
    file_schema, named = raw.layout.file_schema, raw.layout.named
    entries: list[ManifestEntry] = []
    for block in raw.blocks:
        stream = io.BytesIO(raw.decompress(block))
        try:
            for _ in range(block.count):
                version, kind, partition = _read_long(stream), _read_long(stream), _read_bytes(stream)
                prefix = (version, kind, partition, _read_long(stream), _read_long(stream))
                if keep(partition):
                    entries.append(_to_entry(prefix, _read_record(stream, file_schema, named), path))
                else:
                    _skip_record(stream, file_schema, named)
        except (EOFError, ValueError, UnicodeDecodeError) as exc:
            raise CorruptMetadataError(f"manifest {path or ''} has a malformed record: {exc}", path) from None
    return entries


# --- writing ----------------------------------------------------------------------------------------------


def encode_record(entry: ManifestEntry) -> bytes:
    """One entry encoded in our writer schema (what a block of our manifests holds per record)."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, PARSED_ENTRY_SCHEMA, entry_to_record(entry))
    return out.getvalue()


class _Records:
    """Decompressed records handed to ``Writer.write_block`` (it reads ``bytes_`` and ``num_records``)."""

    def __init__(self, data: bytes, count: int) -> None:
        self.bytes_ = io.BytesIO(data)
        self.num_records = count


class ManifestBuilder:
    """Assembles one manifest file in memory, in our writer schema and the context's codec, from blocks of
    other manifests (copied as they are when the codec matches), encoded records and entries.

    Records given separately are packed into blocks of about :data:`SYNC_INTERVAL` bytes, as fastavro's
    writer packs entries; a small block copied last is reopened and filled up, so a manifest that grows by a
    few records per merge does not end up as thousands of tiny blocks.
    """

    def __init__(self, codec: str, level: int | None) -> None:
        self.codec = codec
        self._buffer = io.BytesIO()
        self._writer = Writer(self._buffer, PARSED_ENTRY_SCHEMA, codec=codec, sync_interval=SYNC_INTERVAL,
                              compression_level=level)  # fmt: skip
        # The header (written at once) ends with the file's sync marker, which every block ends with too.
        header = self._buffer.getvalue()
        self._sync = header[-_SYNC_SIZE:] if header.startswith(MAGIC) and len(header) > _SYNC_SIZE else None
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._pending_count = 0
        self.count = 0

    def add_block(self, raw: RawManifest, block: RawBlock, *, reopen: bool = False) -> None:
        """Append a block of ``raw`` (whose writer schema must be ours); ``reopen``: join its records with the
        records added next instead of copying it as it is."""
        assert raw.ours
        self.count += block.count
        if reopen or raw.codec != self.codec or self._sync is None:
            self._add_encoded(raw.decompress(block), block.count)
            return
        self._flush_records()
        self._writer.flush()
        self._buffer.write(_zigzag(block.count))
        self._buffer.write(block.framed)
        self._buffer.write(self._sync)

    def add_records(self, records: Sequence[bytes]) -> None:
        """Append encoded records (each as :func:`encode_record` or :meth:`RawManifest.records` gives it)."""
        self.count += len(records)
        for record in records:
            self._add_encoded(record, 1)

    def add_entries(self, entries: Sequence[ManifestEntry]) -> None:
        self.add_records([encode_record(e) for e in entries])

    def _add_encoded(self, data: bytes, count: int) -> None:
        if self._pending_size + len(data) > SYNC_INTERVAL and self._pending:
            self._flush_records()
        self._pending.append(data)
        self._pending_size += len(data)
        self._pending_count += count

    def _flush_records(self) -> None:
        if not self._pending:
            return
        self._writer.write_block(_Records(b"".join(self._pending), self._pending_count))
        self._pending, self._pending_size, self._pending_count = [], 0, 0

    def getvalue(self) -> bytes:
        self._flush_records()
        self._writer.flush()
        return self._buffer.getvalue()
