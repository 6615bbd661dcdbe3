"""Building a data file's indexes as its rows are written, from the table's ``file-index.*`` options.

``file-index.<type>.columns = a,b`` asks for an index of ``<type>`` on columns ``a`` and ``b``;
``file-index.<type>.<column>.<key>`` sets one of its options (``bloom-filter``: ``items``, default
1000000, and ``fpp``, default 0.1; ``bitmap``: ``version``). The container is embedded in the manifest
when it is at most ``file-index.in-manifest-threshold`` bytes, else written beside the data file as
``<data file>.index`` and listed in the file's extra files (as Java Paimon's ``DataFileIndexWriter``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from paimon_core import options as opts
from paimon_core.errors import ConfigError
from paimon_core.fileindex._bitmap import BitmapBuilder
from paimon_core.fileindex._bloom import BloomFilter, long_hashes, xxhash64
from paimon_core.fileindex._evaluate import BITMAP, BLOOM_FILTER
from paimon_core.fileindex._format import encode_file_index
from paimon_core.fileindex._keys import KeyType, key_type
from paimon_core.types import DataField

__all__ = ["INDEX_FILE_SUFFIX", "FileIndexBuilder", "FileIndexSpec", "file_index_specs", "index_builder"]

INDEX_FILE_SUFFIX = ".index"
_PREFIX = "file-index."
_COLUMNS = ".columns"
_BLOOM_ITEMS = 1_000_000
_BLOOM_FPP = 0.1


@dataclass(frozen=True)
class FileIndexSpec:
    """One index to build: its type, column and options (``file-index.<type>.<column>.<key>``)."""

    index_type: str
    column: str
    options: Mapping[str, str]


def file_index_specs(options: Mapping[str, str]) -> list[FileIndexSpec]:
    """The indexes a table's options ask for, in the order the options name them.

    Raises:
        ConfigError: an empty column name, or an option for a column its index type does not list.
    """
    found: dict[tuple[str, str], dict[str, str]] = {}
    for key, value in options.items():
        if key.startswith(_PREFIX) and key.endswith(_COLUMNS):
            index_type = key[len(_PREFIX) : -len(_COLUMNS)]
            for name in value.split(","):
                if not name.strip():
                    raise ConfigError(f"option {key!r} = {value!r} names an empty column", key)
                found.setdefault((index_type, name.strip()), {})
    for key, value in options.items():
        if not key.startswith(_PREFIX) or key.endswith(_COLUMNS):
            continue
        parts = key[len(_PREFIX) :].split(".")
        if len(parts) != 3:
            continue  # file-index.read.enabled, file-index.in-manifest-threshold (as Java: ignored here)
        index_type, column, option = parts
        if (index_type, column) not in found:
            raise ConfigError(
                f"file index option {key!r}: column {column!r} is not listed in "
                f"'{_PREFIX}{index_type}{_COLUMNS}'",
                key,
            )
        found[(index_type, column)][option] = value
    return [FileIndexSpec(t, c, o) for (t, c), o in found.items()]


class _ColumnIndex:
    """One index of one column, fed Arrow columns."""

    def __init__(self, spec: FileIndexSpec, kind: KeyType) -> None:
        self.spec = spec
        self.kind = kind
        self.bloom: BloomFilter | None = None
        self.bitmap: BitmapBuilder | None = None
        if spec.index_type == BLOOM_FILTER:
            items = _parse(spec, "items", int, _BLOOM_ITEMS)
            fpp = _parse(spec, "fpp", float, _BLOOM_FPP)
            if items <= 0 or not 0 < fpp < 1:
                raise ConfigError(
                    f"file index {_describe(spec)}: items must be > 0 and 0 < fpp < 1", spec.column
                )
            self.bloom = BloomFilter.sized(items, fpp)
        else:
            self.bitmap = BitmapBuilder(kind)

    def update(self, column: pa.ChunkedArray | pa.Array) -> None:
        keys, valid = self.kind.keys(column)
        if self.bitmap is not None:
            self.bitmap.add(keys, valid)
            return
        assert self.bloom is not None
        if isinstance(keys, list):
            distinct = {k for k, ok in zip(keys, valid.tolist(), strict=True) if ok}
            hashes = np.array([xxhash64(k) for k in distinct], dtype=np.int64)
        else:
            hashes = long_hashes(np.unique(np.asarray(keys)[valid]))
        if len(hashes):
            self.bloom.add_hashes(hashes)

    def to_bytes(self) -> bytes:
        if self.bloom is not None:
            return self.bloom.to_bytes()
        assert self.bitmap is not None
        return self.bitmap.to_bytes()


def _parse(spec: FileIndexSpec, key: str, parse: type[Any], default: Any) -> Any:
    raw = spec.options.get(key)
    if raw is None:
        return default
    try:
        return parse(raw.strip())
    except ValueError:
        option = f"{_PREFIX}{spec.index_type}.{spec.column}.{key}"
        raise ConfigError(f"invalid value {raw!r} for option {option!r}", option) from None


def _describe(spec: FileIndexSpec) -> str:
    return f"'{spec.index_type}' on column {spec.column!r} ({_PREFIX}{spec.index_type}{_COLUMNS})"


class FileIndexBuilder:
    """The indexes of one data file being written.

    Args:
        specs: the indexes (:func:`file_index_specs`).
        fields: the columns of the rows written (a primary-key table's value columns).

    Raises:
        ConfigError: an index type not written here, a column the table lacks or of a type the index
            does not take (as Java refuses them).
    """

    def __init__(self, specs: Iterable[FileIndexSpec], fields: Iterable[DataField]) -> None:
        by_name = {f.name: f for f in fields}
        self._indexes: list[_ColumnIndex] = []
        for spec in specs:
            if spec.index_type not in (BLOOM_FILTER, BITMAP):
                raise ConfigError(
                    f"file index {_describe(spec)}: paimon-core writes only 'bloom-filter' and 'bitmap' file "
                    "indexes",
                    f"{_PREFIX}{spec.index_type}{_COLUMNS}",
                )
            field = by_name.get(spec.column)
            if field is None:
                raise ConfigError(f"file index {_describe(spec)}: the table has no such column", spec.column)
            kind = key_type(field.type)
            if kind is None or (spec.index_type == BITMAP and kind.kind == "bytes" and not kind.text):
                raise ConfigError(
                    f"file index {_describe(spec)}: type {field.type} is not supported", spec.column
                )
            if spec.index_type == BLOOM_FILTER and kind.kind == "bool":
                raise ConfigError(
                    f"file index {_describe(spec)}: type {field.type} is not supported", spec.column
                )
            version = spec.options.get("version", "1").strip()
            if spec.index_type == BITMAP and version != "1":
                key = f"{_PREFIX}{spec.index_type}.{spec.column}.version"
                raise ConfigError(
                    f"option {key!r} = {version!r}: paimon-core writes bitmap index version 1 only, which "
                    "every Java Paimon since 0.9 reads",
                    key,
                )
            self._indexes.append(_ColumnIndex(spec, kind))

    def __bool__(self) -> bool:
        return bool(self._indexes)

    def update(self, rows: pa.Table) -> None:
        """Index the next rows of the file (a table holding at least the indexed columns)."""
        for index in self._indexes:
            index.update(rows.column(index.spec.column))

    def to_bytes(self) -> bytes:
        """The container of every index (columns in the order first named)."""
        by_column: dict[str, dict[str, bytes | None]] = {}
        for index in self._indexes:
            by_column.setdefault(index.spec.column, {})[index.spec.index_type] = index.to_bytes()
        return encode_file_index(by_column)


def index_builder(options: opts.Options, fields: Iterable[DataField]) -> FileIndexBuilder | None:
    """The builder a table's options ask for, or None when they ask for no index."""
    specs = file_index_specs(options)
    return FileIndexBuilder(specs, fields) if specs else None
