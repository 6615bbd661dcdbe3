"""The ``memory`` backend: a process-global dictionary that behaves like an object store.

For tests and examples. Objects live in one dictionary per process, keyed by normalized ``memory://`` paths,
behind one lock; ``write_if_absent`` checks and inserts under that lock, so it is atomic and exclusive among the
threads of a process (other processes do not see the store at all: no :attr:`Capability.CROSS_PROCESS`).
Like an object store it has no real directories: a directory exists while objects lie under it, or after
``mkdirs`` left a directory marker (as Hadoop's S3A does with an empty ``key/`` object), so that an empty
database of a catalog stays visible.
"""

from __future__ import annotations

import io
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO

from paimon_core.storage._paths import join_path, path_name, uri_scheme
from paimon_core.storage._spec import BackendSpec, Capability, FileInfo, hookimpl

_ROOT = "memory://"
_SLASHES = re.compile(r"/{2,}")


@dataclass(frozen=True)
class _Object:
    data: bytes
    mtime_ms: int


_lock = threading.Lock()
_store: dict[str, _Object] = {}
_markers: set[str] = set()  # directory markers left by mkdirs


def _key(path: str) -> str:
    """Normalize a memory path: ``memory:/a``, ``memory:///a//b/`` and ``memory://a/b`` are one key each way."""
    if uri_scheme(path) != "memory":
        raise ValueError(f"not a memory:// path: {path!r}")
    rest = path.split(":", 1)[1]
    return _ROOT + _SLASHES.sub("/", rest).strip("/")


def _dir_prefix(key: str) -> str:
    return key if key == _ROOT else key + "/"


def _put(key: str, data: bytes, overwrite: bool) -> None:
    obj = _Object(bytes(data), time.time_ns() // 1_000_000)
    with _lock:
        if not overwrite and key in _store:
            raise FileExistsError(f"already exists: {key!r}")
        _store[key] = obj


def _get(key: str) -> _Object:
    with _lock:
        obj = _store.get(key)
        if obj is None:
            is_dir = _has_children(key)
    if obj is None:
        raise (IsADirectoryError if is_dir else FileNotFoundError)(f"no object at {key!r}")
    return obj


def _has_children(key: str) -> bool:
    prefix = _dir_prefix(key)
    return (
        key in _markers
        or any(k.startswith(prefix) for k in _store)
        or any(m.startswith(prefix) for m in _markers)
    )


def clear_memory_store(prefix: str | None = None) -> None:
    """Forget every object of the ``memory`` backend, or those at or under ``prefix`` (a ``memory://`` path)."""
    with _lock:
        if prefix is None:
            _store.clear()
            _markers.clear()
            return
        key = _key(prefix)
        under = _dir_prefix(key)
        for k in [k for k in _store if k == key or k.startswith(under)]:
            del _store[k]
        _markers.difference_update({m for m in _markers if m == key or m.startswith(under)})


class _MemoryOutputStream(io.BytesIO):
    """Collects bytes and publishes them on ``close()``; an exception in a ``with`` block discards them."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self._key = key

    def close(self) -> None:
        if self.closed:
            return
        data = self.getvalue()
        super().close()
        _put(self._key, data, overwrite=True)

    def discard(self) -> None:
        """Close without publishing."""
        super().close()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


class MemoryBackend:
    """Objects in a process-global dictionary (see the module docstring). All instances share the store."""

    capabilities: frozenset[Capability] = frozenset(
        {Capability.ATOMIC_CREATE, Capability.LIST, Capability.RANGED_READ}
    )

    def __repr__(self) -> str:
        return "MemoryBackend()"

    def open_input(self, path: str) -> BinaryIO:
        return io.BytesIO(_get(_key(path)).data)

    def open_output(self, path: str) -> BinaryIO:
        return _MemoryOutputStream(_key(path))

    def read_bytes(self, path: str) -> bytes:
        return _get(_key(path)).data

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        _put(_key(path), data, overwrite)

    def write_if_absent(self, path: str, data: bytes) -> None:
        _put(_key(path), data, overwrite=False)

    def exists(self, path: str) -> bool:
        key = _key(path)
        with _lock:
            return key in _store or _has_children(key)

    def size(self, path: str) -> int:
        return len(_get(_key(path)).data)

    def info(self, path: str) -> FileInfo:
        key = _key(path)
        with _lock:
            obj = _store.get(key)
            is_dir = obj is None and _has_children(key)
        normalized = join_path(path)
        if obj is not None:
            return FileInfo(normalized, path_name(normalized), len(obj.data), False, obj.mtime_ms)
        if is_dir:
            return FileInfo(normalized, path_name(normalized), 0, True, 0)
        raise FileNotFoundError(f"no object at {key!r}")

    def list_dir(self, path: str) -> list[FileInfo]:
        prefix = _dir_prefix(_key(path))
        with _lock:
            below = [(k[len(prefix) :], obj) for k, obj in _store.items() if k.startswith(prefix)]
            marked = [m[len(prefix) :] for m in _markers if m.startswith(prefix)]
        entries: dict[tuple[str, bool], FileInfo] = {}
        for rest in marked:
            name = rest.partition("/")[0]
            entries[(name, True)] = FileInfo(join_path(path, name), name, 0, True, 0)
        for rest, obj in below:
            name, slash, _ = rest.partition("/")
            if slash:
                entries[(name, True)] = FileInfo(join_path(path, name), name, 0, True, 0)
            else:
                entries[(name, False)] = FileInfo(
                    join_path(path, name), name, len(obj.data), False, obj.mtime_ms
                )
        return [entries[k] for k in sorted(entries)]

    def list_prefix(self, path: str) -> Iterator[FileInfo]:
        prefix = _dir_prefix(_key(path))
        with _lock:
            below = sorted((k[len(prefix) :], obj) for k, obj in _store.items() if k.startswith(prefix))
        for rest, obj in below:
            full = join_path(path, rest)
            yield FileInfo(full, path_name(full), len(obj.data), False, obj.mtime_ms)

    def delete(self, path: str) -> None:
        key = _key(path)
        with _lock:
            _store.pop(key, None)

    def delete_dir(self, path: str) -> None:
        key = _key(path)
        prefix = _dir_prefix(key)
        with _lock:
            for k in [k for k in _store if k.startswith(prefix)]:
                del _store[k]
            _markers.difference_update({m for m in _markers if m == key or m.startswith(prefix)})

    def mkdirs(self, path: str) -> None:
        key = _key(path)
        if key != _ROOT:
            with _lock:
                _markers.add(key)


_BACKEND = MemoryBackend()


def _factory(uri: str, options: Mapping[str, str]) -> MemoryBackend:
    return _BACKEND


SPEC = BackendSpec(
    name="memory",
    schemes=("memory",),
    factory=_factory,
    capabilities=MemoryBackend.capabilities,
    install_hint="built into paimon-core",
    option_prefixes=(),
)


@hookimpl
def paimon_storage_backends() -> list[BackendSpec]:
    """The ``memory`` backend (registered directly by the registry, not through an entry point)."""
    return [SPEC]
