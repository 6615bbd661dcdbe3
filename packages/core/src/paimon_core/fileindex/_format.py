"""The container of a data file's indexes (Java Paimon's ``FileIndexFormat``, version 1).

All numbers big-endian::

    magic      int64  1493475289347502
    version    int32  1
    head size  int32  bytes from the start of the file to the first index body
    columns    int32
    per column:  name (Java modified UTF-8, 2-byte length), index count int32,
                 per index: type (modified UTF-8), start int32 (from the file's start; -1 = empty), length int32
    redundant  int32  0 (bytes of future header fields)
    bodies     the indexes' bytes, one after another

The same bytes go into the manifest (``_EMBEDDED_FILE_INDEX``) or into ``<data file>.index``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

__all__ = ["FILE_INDEX_MAGIC", "decode_file_index", "encode_file_index"]

FILE_INDEX_MAGIC = 1493475289347502
FILE_INDEX_VERSION = 1
_EMPTY = -1


def _modified_utf8(text: str) -> bytes:
    """Java's ``DataOutput.writeUTF``: UTF-16 code units, NUL as two bytes, with a 2-byte length."""
    out = bytearray()
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        unit = (units[i] << 8) | units[i + 1]
        if 0 < unit < 0x80:
            out.append(unit)
        elif unit < 0x800:
            out += bytes((0xC0 | (unit >> 6), 0x80 | (unit & 0x3F)))
        else:
            out += bytes((0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)))
    if len(out) > 0xFFFF:
        raise ValueError(f"name too long for a file index header: {text[:40]!r}...")
    return struct.pack(">H", len(out)) + bytes(out)


def _read_modified_utf8(data: bytes, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">H", data, pos)
    raw = data[pos + 2 : pos + 2 + length]
    if len(raw) != length:
        raise ValueError("truncated name")
    units: list[int] = []
    i = 0
    while i < length:
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b >> 5 == 0b110:
            units.append(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        else:
            units.append(((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
    text = b"".join(struct.pack(">H", u) for u in units).decode("utf-16-be", errors="surrogatepass")
    return text, pos + 2 + length


def encode_file_index(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """The container holding ``indexes`` (column name -> index type -> bytes, None for an empty index)."""
    names = b"".join(
        _modified_utf8(column) + b"".join(_modified_utf8(kind) for kind in by_type)
        for column, by_type in indexes.items()
    )
    entries = sum(len(by_type) for by_type in indexes.values())
    head = 8 + 4 + 4 + 4 + entries * 8 + len(indexes) * 4 + 4 + len(names)
    header = bytearray(struct.pack(">qiii", FILE_INDEX_MAGIC, FILE_INDEX_VERSION, head, len(indexes)))
    body = bytearray()
    for column, by_type in indexes.items():
        header += _modified_utf8(column) + struct.pack(">i", len(by_type))
        for kind, data in by_type.items():
            if data is None:
                header += _modified_utf8(kind) + struct.pack(">ii", _EMPTY, 0)
            else:
                header += _modified_utf8(kind) + struct.pack(">ii", head + len(body), len(data))
                body += data
    header += struct.pack(">i", 0)
    assert len(header) == head
    return bytes(header + body)


def decode_file_index(data: bytes) -> dict[str, dict[str, bytes | None]] | None:
    """Column name -> index type -> bytes (None: an empty index) of a container; None when the bytes are
    no container this version knows (another magic or version, or truncated): such an index prunes nothing.
    """
    try:
        magic, version, head = struct.unpack_from(">qii", data)
        if magic != FILE_INDEX_MAGIC or version != FILE_INDEX_VERSION:
            return None
        (columns,) = struct.unpack_from(">i", data, 16)
        pos = 20
        found: dict[str, dict[str, bytes | None]] = {}
        for _ in range(columns):
            column, pos = _read_modified_utf8(data, pos)
            (count,) = struct.unpack_from(">i", data, pos)
            pos += 4
            by_type = found.setdefault(column, {})
            for _ in range(count):
                kind, pos = _read_modified_utf8(data, pos)
                start, length = struct.unpack_from(">ii", data, pos)
                pos += 8
                if start == _EMPTY:
                    by_type[kind] = None
                elif start < head or start + length > len(data) or length < 0:
                    return None
                else:
                    by_type[kind] = bytes(data[start : start + length])
        return found
    except (struct.error, ValueError, IndexError):
        return None
