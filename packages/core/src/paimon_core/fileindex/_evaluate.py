"""Whether a data file's indexes allow a filter to match any of its rows (Java's ``FileIndexPredicate``).

A filter is an OR of ANDs of leaves. A leaf on a column with indexes is ruled out when one of them rules
it out: a bloom filter for ``=`` and ``in`` (no literal's hash present), a bitmap for ``=``, ``in``,
``is null`` and ``is not null`` (no row holds such a value). Anything else, an index type or version not
known here, a literal that does not fit the column or a float zero or NaN (whose bits differ from values
equal to it) keeps the file: an index only ever removes files that certainly hold no match.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paimon_core.fileindex._bitmap import BitmapKeys, read_bitmap_keys
from paimon_core.fileindex._bloom import BloomFilter, long_hashes, xxhash64
from paimon_core.fileindex._format import decode_file_index
from paimon_core.fileindex._keys import KeyType, key_type
from paimon_core.predicate import Leaf, Predicate
from paimon_core.types import DataType

__all__ = ["FileIndexes", "bloom_hash"]

BLOOM_FILTER = "bloom-filter"
BITMAP = "bitmap"
# Java sizes a filter with round(bits / items * ln 2) functions: 16 at an fpp of 1e-5; 64 is beyond any use.
_MAX_HASH_FUNCTIONS = 64


def bloom_hash(kind: KeyType, key: Any) -> int:
    """The 64-bit hash a bloom filter index takes for ``key`` (see :mod:`._bloom`)."""
    if kind.kind == "bytes":
        return xxhash64(key)
    return int(long_hashes(np.array([key], dtype=np.int64))[0])


@dataclass
class FileIndexes:
    """The indexes of one data file, decoded lazily.

    Args:
        indexes: column name (in the file's schema) -> index type -> bytes (None: empty index).
        columns: the filter's column -> (its name in the file, its type), for columns whose type the file
            shares with the table (others are not looked up).
    """

    indexes: Mapping[str, Mapping[str, bytes | None]]
    columns: Mapping[str, tuple[str, DataType]]
    _decoded: dict[tuple[str, str], Any] = field(default_factory=dict)

    @classmethod
    def of(cls, data: bytes, columns: Mapping[str, tuple[str, DataType]]) -> FileIndexes | None:
        decoded = decode_file_index(data)
        return None if decoded is None else cls(decoded, columns)

    def may_match(self, predicate: Predicate) -> bool:
        return any(all(self._leaf_may_match(leaf) for leaf in clause) for clause in predicate.clauses)

    def _leaf_may_match(self, leaf: Leaf) -> bool:
        target = self.columns.get(leaf.column)
        if target is None:
            return True
        name, data_type = target
        kind = key_type(data_type)
        if kind is None:
            return True
        for index_type, data in self.indexes.get(name, {}).items():
            if data is None:
                if leaf.op in ("=", "==", "in", "is not null"):
                    return False  # Java's empty index: the column holds no value at all
                continue
            if index_type == BLOOM_FILTER and not self._bloom_may_match(name, kind, data, leaf):
                return False
            if index_type == BITMAP and not self._bitmap_may_match(name, kind, data, leaf):
                return False
        return True

    def _literals(self, kind: KeyType, leaf: Leaf) -> list[Any] | None:
        """The keys of an ``=``/``in`` leaf's literals; None when some literal has no certain key."""
        values = [leaf.value] if leaf.op in ("=", "==") else [v for v in leaf.value if v is not None]
        keys = [kind.literal(v) for v in values]
        return None if any(k is None for k in keys) else keys

    def _bloom_may_match(self, name: str, kind: KeyType, data: bytes, leaf: Leaf) -> bool:
        if leaf.op not in ("=", "==", "in") or kind.kind == "bool":
            return True
        keys = self._literals(kind, leaf)
        if keys is None:
            return True
        cached = self._decoded.get((name, BLOOM_FILTER))
        if cached is None:
            if len(data) <= 4:
                return True
            cached = self._decoded[(name, BLOOM_FILTER)] = BloomFilter.from_bytes(data)
        if not 0 < cached.functions <= _MAX_HASH_FUNCTIONS:
            return True  # not a filter any writer sizes (damaged bytes): keep the file
        return any(cached.may_contain(bloom_hash(kind, key)) for key in keys)

    def _bitmap_may_match(self, name: str, kind: KeyType, data: bytes, leaf: Leaf) -> bool:
        if kind.kind == "bytes" and not kind.text:
            return True
        if (name, BITMAP) not in self._decoded:
            self._decoded[(name, BITMAP)] = read_bitmap_keys(kind, data)
        found: BitmapKeys | None = self._decoded[(name, BITMAP)]
        if found is None:
            return True
        if leaf.op == "is null":
            return found.has_null
        if leaf.op == "is not null":
            return bool(found.values)
        if leaf.op not in ("=", "==", "in"):
            return True
        keys = self._literals(kind, leaf)
        return keys is None or any(k in found.values for k in keys)
