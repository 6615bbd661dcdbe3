"""A process-wide cache of decoded small manifests (Paimon's ``cache-enabled`` manifest cache).

Manifest files never change once written (every name is new), so a decoded file stays valid for as long
as it exists; planning a read of a table whose history left many small manifests then decodes only the
ones it has not seen. Entries are immutable, so callers share them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from paimon_core.manifest._entry import ManifestEntry

__all__ = ["ManifestCache", "manifest_cache"]

_DECODED_PER_FILE_BYTE = 8  # decoded entries weigh about this much more than their Avro file


class ManifestCache:
    """Least-recently-used decoded manifests, weighed by file size."""

    def __init__(self) -> None:
        self._entries: OrderedDict[str, tuple[int, list[ManifestEntry]]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(
        self,
        key: str,
        file_size: int,
        budget: int,
        load: Callable[[], list[ManifestEntry]],
        exists: Callable[[], bool],
    ) -> list[ManifestEntry]:
        """The cached entries of ``key``, or ``load()``'s (kept if the budget allows).

        A hit whose file no longer ``exists()`` is dropped and loaded again, so a manifest deleted since is
        reported as missing, as without the cache.
        """
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
        if hit is not None:
            if exists():
                return hit[1]
            self._forget(key)
        entries = load()
        weight = max(file_size, 1) * _DECODED_PER_FILE_BYTE
        if weight > budget:
            return entries
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (weight, entries)
                self._weight += weight
            while self._weight > budget and self._entries:
                _, (dropped, _) = self._entries.popitem(last=False)
                self._weight -= dropped
        return entries

    def lookup(self, key: str, exists: Callable[[], bool]) -> list[ManifestEntry] | None:
        """The cached entries of ``key``, if any (and its file still ``exists()``); nothing is loaded."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
        if hit is None:
            return None
        if exists():
            return hit[1]
        self._forget(key)
        return None

    def holds(self, key: str) -> bool:
        """Whether ``key`` is cached (its file is not checked; the order of use is not touched)."""
        with self._lock:
            return key in self._entries

    def _forget(self, key: str) -> None:
        with self._lock:
            dropped = self._entries.pop(key, None)
            if dropped is not None:
                self._weight -= dropped[0]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._weight = 0


manifest_cache = ManifestCache()
