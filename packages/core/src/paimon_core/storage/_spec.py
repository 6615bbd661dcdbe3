"""The storage plugin contract: the backend protocol, its value types, and the pluggy hook specifications.

Backends raise builtins (``FileNotFoundError``, ``FileExistsError``, ``PermissionError``, ``TimeoutError``,
other ``OSError``); callers in core translate them. Paths are always full path strings as the table code
builds them: ``/tmp/wh/db.db/t/snapshot/snapshot-1``, ``file:///tmp/...``, ``memory://name/...``,
``s3://bucket/key``. Paths are taken literally: ``%`` is not an escape (partition directories such as
``dt=2024%3A01`` contain it).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO, Protocol, runtime_checkable

import pluggy

PROJECT_NAME = "paimon"
"""The pluggy project name shared by every Paimon hook."""

ENTRY_POINT_GROUP = "paimon.storage"
"""The entry-point group that storage plugins are discovered from."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class Capability(enum.Enum):
    """What a backend guarantees beyond the basic methods of :class:`StorageBackend`."""

    ATOMIC_CREATE = "atomic-create"
    """``write_if_absent`` is atomic (all or nothing) and exclusive, even across processes and hosts.

    Without it core refuses to commit (there is no safe way to publish a snapshot)."""

    LIST = "list"
    """``list_dir`` and ``list_prefix`` are supported (needed by expiration and orphan cleanup)."""

    RANGED_READ = "ranged-read"
    """Streams from ``open_input`` seek cheaply: reading a Parquet footer does not fetch the whole object."""

    CROSS_PROCESS = "cross-process"
    """Objects are visible to other processes (e.g. Spark executors); the ``memory`` backend lacks it."""

    DIRECTORIES = "directories"
    """Directories are real: ``mkdirs`` creates an empty directory that ``exists`` and ``list_dir`` report.

    Object stores lack it: there a directory exists only while some object lies under it."""


@dataclass(frozen=True)
class FileInfo:
    """One entry of a listing, or the answer of :meth:`StorageBackend.info`.

    Attributes:
        path: the full path, in the same form (scheme, ``file://`` or plain) as the path that was asked about.
        name: the last path component.
        size: size in bytes; 0 for directories.
        is_dir: whether the entry is a directory (or, on object stores, a common prefix).
        mtime_ms: last modification time in milliseconds since the epoch; 0 when the store does not know it
            (e.g. object-store prefixes).
    """

    path: str
    name: str
    size: int
    is_dir: bool
    mtime_ms: int


@runtime_checkable
class StorageBackend(Protocol):
    """A storage backend, addressed by full path strings.

    Writes create missing parent directories as needed. Listings may show a writer's in-progress temporary
    files (local names start with ``.`` and end with ``.tmp``).
    """

    @property
    def capabilities(self) -> frozenset[Capability]:
        """The guarantees this backend gives (see :class:`Capability`)."""
        ...

    def open_input(self, path: str) -> BinaryIO:
        """Open an object for reading.

        The stream is readable and seekable (``seek`` with whence 0, 1 and 2, ``tell``), so that
        ``pyarrow.parquet`` can read footers and column chunks with ranged reads. The caller closes it.

        Raises:
            FileNotFoundError: the object does not exist.
            IsADirectoryError: the path is a directory (where the store has directories).
            PermissionError: access is denied.
        """
        ...

    def open_output(self, path: str) -> BinaryIO:
        """Open a writable stream for a (possibly large) data file, replacing any existing object.

        The object becomes visible, whole, only when ``close()`` returns; a reader never sees a partial
        object. Leaving a ``with`` block by an exception discards what was written (an existing object stays).

        Raises:
            PermissionError: access is denied.
            OSError: the stream cannot be created; errors while writing or closing propagate from the stream.
        """
        ...

    def read_bytes(self, path: str) -> bytes:
        """Read a whole object.

        Raises:
            FileNotFoundError: the object does not exist.
            IsADirectoryError: the path is a directory (where the store has directories).
            PermissionError: access is denied.
        """
        ...

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        """Write a whole object.

        Not a commit primitive: without ``overwrite`` the existence check may race with other writers (use
        :meth:`write_if_absent` to publish). Readers should see the old or the new object, never a mix.

        Raises:
            FileExistsError: the object exists and ``overwrite`` is false.
            PermissionError: access is denied.
        """
        ...

    def write_if_absent(self, path: str, data: bytes) -> None:
        """Create an object atomically and exclusively: THE commit primitive (a snapshot is published by it).

        All or nothing: readers see either no object or all of ``data``. Exclusive: when several writers
        race, in any number of processes or hosts, exactly one succeeds. Never implemented as ``exists``
        followed by a write or a rename that replaces. Backends that cannot guarantee this do not declare
        :attr:`Capability.ATOMIC_CREATE`, and core will not commit through them.

        Raises:
            FileExistsError: the object already existed; this write did nothing. This is the ONLY exception
                that means "nothing was written".
            Exception: anything else (``TimeoutError``, ``ConnectionError``, other ``OSError``...) means the
                outcome is unknown: the object may or may not have been created by this call.
        """
        ...

    def exists(self, path: str) -> bool:
        """Whether an object, or a directory (an object-store prefix with objects under it), exists.

        Raises:
            PermissionError: access is denied.
        """
        ...

    def size(self, path: str) -> int:
        """The size of an object in bytes.

        Raises:
            FileNotFoundError: the object does not exist.
            IsADirectoryError: the path is a directory.
        """
        ...

    def info(self, path: str) -> FileInfo:
        """Metadata of an object or directory.

        Raises:
            FileNotFoundError: nothing exists at the path.
        """
        ...

    def list_dir(self, path: str) -> list[FileInfo]:
        """List one level under a directory, sorted by name: objects and subdirectories (``is_dir``).

        A missing directory lists as empty (object stores cannot tell a missing directory from an empty one).

        Raises:
            NotADirectoryError: the path is an object, not a directory (where the store has directories).
            PermissionError: access is denied.
        """
        ...

    def list_prefix(self, path: str) -> Iterator[FileInfo]:
        """Iterate over every object under a directory, recursively, in no particular order.

        Directories themselves are not listed.

        ``path`` is a directory: ``.../dir`` covers ``.../dir/x`` but not ``.../dir2/x``. A missing directory
        yields nothing.

        Raises:
            PermissionError: access is denied.
        """
        ...

    def delete(self, path: str) -> None:
        """Delete one object. Deleting a missing object is not an error (deletes are retried and raced).

        Raises:
            IsADirectoryError: the path is a directory (use :meth:`delete_dir`), where the store has directories.
            PermissionError: access is denied.
        """
        ...

    def delete_dir(self, path: str) -> None:
        """Delete a directory and everything under it. A missing directory is not an error.

        Raises:
            NotADirectoryError: the path is an object, not a directory (where the store has directories).
            PermissionError: access is denied.
        """
        ...

    def mkdirs(self, path: str) -> None:
        """Create a directory and its parents; existing ones are fine. A no-op on object stores.

        Raises:
            FileExistsError: an object (not a directory) exists at the path.
            NotADirectoryError: an object exists at one of its parents.
            PermissionError: access is denied.
        """
        ...


BackendFactory = Callable[[str, Mapping[str, str]], StorageBackend]
"""``factory(uri, options)``: builds a backend able to serve ``uri`` and every path with its scheme and
authority. Heavy SDKs are imported here, not at plugin import, and a missing one raises
:class:`paimon_core.errors.StorageBackendUnavailable` with the install hint."""


@dataclass(frozen=True)
class BackendSpec:
    """A storage backend as a plugin declares it.

    Attributes:
        name: unique backend name (``"file"``, ``"memory"``, ``"s3"``); ``storage.<scheme>.backend`` picks by it.
        schemes: lower-case URI schemes served, e.g. ``("s3", "s3a")``.
        factory: ``factory(uri, options) -> StorageBackend``.
        capabilities: what the backends it builds guarantee.
        install_hint: what to install when the factory's dependencies are missing.
        option_prefixes: option key prefixes the factory reads (e.g. ``("s3.", "fs.s3a.")``); backends are
            cached per the values of those options. ``None`` means any option may matter. Options under
            ``storage.`` always count (wrappers read those).
        option_keys: every key under ``option_prefixes`` the factory understands; any other key under those
            prefixes is refused with a :class:`~paimon_core.errors.ConfigError` (a misspelled endpoint must
            never send credentials to a default one). ``None`` means the backend does not declare its keys.
    """

    name: str
    schemes: tuple[str, ...]
    factory: BackendFactory
    capabilities: frozenset[Capability] = frozenset()
    install_hint: str = ""
    option_prefixes: tuple[str, ...] | None = None
    option_keys: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a storage backend needs a name")
        if not self.schemes or any(s != s.lower() or not s for s in self.schemes):
            raise ValueError(f"storage backend {self.name!r}: schemes must be non-empty and lower case")


class StorageHookSpecs:
    """Hooks a storage plugin implements with :data:`hookimpl` (module-level functions are fine)."""

    @hookspec
    def paimon_storage_backends(self) -> list[BackendSpec]:  # type: ignore[empty-body]
        """Declare the backends this plugin provides.

        Called once when the registry is built. Import nothing heavy here: SDKs belong in ``factory``.

        Returns:
            The backend specs; an empty list is fine.
        """

    @hookspec
    def paimon_storage_wrap(
        self, backend: StorageBackend, spec: BackendSpec, options: Mapping[str, str]
    ) -> StorageBackend | None:
        """Wrap a freshly built backend (metrics, caching, fault injection), or return ``None`` to leave it.

        Wrappers chain: each implementation receives the result of the previous one, in pluggy call order
        (last registered first, ``tryfirst`` before, ``trylast`` after). Read settings from options under
        ``storage.`` so that backends are cached per their values.

        Args:
            backend: the backend built so far.
            spec: the spec whose factory built it.
            options: the options passed to ``get_backend``.
        """
