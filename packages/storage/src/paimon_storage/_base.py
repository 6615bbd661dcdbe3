"""The shared fsspec adapter: one :class:`~paimon_core.storage.StorageBackend` over any object-store filesystem.

Subclasses only build the filesystem; this class maps paths, listings, streams and errors. Paths stay in the
caller's form (``s3a://bucket/k`` lists as ``s3a://bucket/k/...``). Object stores have no directories: a
directory exists while objects lie under it, and :meth:`FsspecBackend.mkdirs` leaves an empty ``key/``
marker object (as Hadoop's S3A does) so that an empty database of a catalog stays visible.

``write_if_absent`` is the store's own conditional create, one request: ``If-None-Match: *`` on S3,
``ifGenerationMatch=0`` on GCS, ``overwrite=False`` on Azure, all through fsspec's
``pipe_file(..., mode="create")``. A store that does not support it can be configured with conditional
creates disabled: the backend then drops :attr:`Capability.ATOMIC_CREATE` and core refuses to commit unless
a commit lock (``lock.enabled``) serialises the writers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any, BinaryIO, cast

from paimon_core.redaction import get_logger
from paimon_core.storage import Capability, FileInfo, join_path, path_name, uri_authority, uri_scheme

logger = get_logger(__name__)

OBJECT_STORE_CAPABILITIES = frozenset(
    {Capability.ATOMIC_CREATE, Capability.LIST, Capability.RANGED_READ, Capability.CROSS_PROCESS}
)

DEFAULT_READ_BLOCK_SIZE = 8 << 20
DEFAULT_WRITE_BLOCK_SIZE = 16 << 20


class ObjectOutputStream(io.RawIOBase):
    """A writable stream on an fsspec file opened ``"wb"``: the object appears, whole, on ``close()``.

    Large files go up as multipart (S3), resumable (GCS) or block (Azure) uploads, one block per
    ``write_block_size`` bytes, none of them visible until the upload is completed by ``close()``. Leaving a
    ``with`` block by an exception discards the upload (an existing object is left as it was).
    """

    def __init__(self, file: Any, path: str) -> None:
        super().__init__()
        self._file = file
        self._path = path

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        written = self._file.write(data)
        return len(memoryview(data)) if written is None else int(written)

    def tell(self) -> int:
        return int(self._file.tell())

    def flush(self) -> None:
        # Not forced: fsspec uploads full parts only, which stay invisible until the upload completes.
        if not self._file.closed:
            self._file.flush()

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._file.close()
        finally:
            super().close()

    def discard(self) -> None:
        """Abandon the upload without publishing anything."""
        if self.closed:
            return
        try:
            self._file.discard()
        finally:
            # fsspec files complete their upload when closed or garbage-collected; mark it closed instead.
            self._file.closed = True
            super().close()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()

    def __repr__(self) -> str:
        return f"ObjectOutputStream({self._path!r})"


def _mtime_ms(info: Mapping[str, Any]) -> int:
    for key in ("LastModified", "last_modified", "updated", "mtime", "timeCreated"):
        value = info.get(key)
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.timezone.utc)
            return int(value.timestamp() * 1000)
        if isinstance(value, str) and value:
            with contextlib.suppress(ValueError):
                parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
                if parsed.tzinfo is None:
                    parsed = parsed.replace(tzinfo=dt.timezone.utc)
                return int(parsed.timestamp() * 1000)
        if isinstance(value, (int, float)) and value > 0:
            return int(value * 1000)
    return 0


class FsspecBackend:
    """A storage backend over an fsspec object-store filesystem (see the module docstring).

    Args:
        fs: the filesystem (built with listing caches off: other processes change the store).
        name: the backend name, for reprs and messages.
        description: safe, secret-free details shown by ``repr`` (endpoint, region...).
        read_block_size: bytes fetched per ranged read by streams from :meth:`open_input`.
        write_block_size: part size of multipart uploads by streams from :meth:`open_output`.
        conditional_create: whether the store supports create-only writes; without them
            ``write_if_absent`` checks then writes, which is only safe under a commit lock.
    """

    def __init__(
        self,
        fs: Any,
        *,
        name: str,
        description: str = "",
        read_block_size: int = DEFAULT_READ_BLOCK_SIZE,
        write_block_size: int = DEFAULT_WRITE_BLOCK_SIZE,
        conditional_create: bool = True,
    ) -> None:
        self.fs = fs
        self.name = name
        self._description = description
        self.read_block_size = read_block_size
        self.write_block_size = write_block_size
        self.conditional_create = conditional_create
        caps = set(OBJECT_STORE_CAPABILITIES)
        if not conditional_create:
            caps.discard(Capability.ATOMIC_CREATE)
        self._capabilities = frozenset(caps)

    @property
    def capabilities(self) -> frozenset[Capability]:
        return self._capabilities

    def __repr__(self) -> str:
        details = f", {self._description}" if self._description else ""
        return f"{type(self).__name__}({self.name!r}{details})"

    # --- paths ---------------------------------------------------------------------------------------

    def bucket_of(self, uri: str) -> str:
        """The bucket or container named by a URI's authority."""
        return uri_authority(uri)

    def key(self, path: str) -> str:
        """The filesystem path ``bucket/key`` of a URI (no trailing slash)."""
        scheme = uri_scheme(path)
        if "://" not in path or scheme == "file":
            raise ValueError(f"{self.name}: not an object-store URI: {path!r}")
        rest = path.split("://", 1)[1]
        _, _, key = rest.partition("/")
        key = "/".join(part for part in key.split("/") if part)
        bucket = self.bucket_of(path)
        if not bucket:
            raise ValueError(f"{self.name}: no bucket in {path!r}")
        return f"{bucket}/{key}" if key else bucket

    def _relative(self, base_key: str, entry_name: str) -> str | None:
        name = entry_name.rstrip("/")
        if name == base_key or not name.startswith(base_key + "/"):
            return None
        return name[len(base_key) + 1 :]

    def _entry(self, base_path: str, base_key: str, info: Mapping[str, Any]) -> FileInfo | None:
        relative = self._relative(base_key, str(info["name"]))
        if not relative:
            return None
        is_dir = info.get("type") == "directory"
        path = join_path(base_path, relative)
        return FileInfo(
            path=path,
            name=path_name(path),
            size=0 if is_dir else int(info.get("size") or 0),
            is_dir=is_dir,
            mtime_ms=0 if is_dir else _mtime_ms(info),
        )

    # --- reads ---------------------------------------------------------------------------------------

    def open_input(self, path: str) -> BinaryIO:
        """Open an object for ranged reads (``read_block_size`` bytes per request, read ahead).

        Raises:
            FileNotFoundError: the object does not exist.
        """
        key = self.key(path)
        f = self.fs.open(key, "rb", block_size=self.read_block_size, cache_type="readahead")
        if f.details.get("type") == "directory":  # gcsfs and adlfs open prefixes without complaint
            f.close()
            raise FileNotFoundError(f"no object at {path!r} (a directory)")
        return cast(BinaryIO, f)

    def read_bytes(self, path: str) -> bytes:
        try:
            data = self.fs.cat_file(self.key(path))
        except IsADirectoryError:
            raise FileNotFoundError(f"no object at {path!r} (a directory)") from None
        return bytes(data)

    def info(self, path: str) -> FileInfo:
        key = self.key(path)
        info = self.fs.info(key)
        is_dir = info.get("type") == "directory"
        return FileInfo(
            path=join_path(path),
            name=path_name(path),
            size=0 if is_dir else int(info.get("size") or 0),
            is_dir=is_dir,
            mtime_ms=0 if is_dir else _mtime_ms(info),
        )

    def exists(self, path: str) -> bool:
        return bool(self.fs.exists(self.key(path)))

    def size(self, path: str) -> int:
        info = self.info(path)
        if info.is_dir:
            raise IsADirectoryError(f"is a directory: {path!r}")
        return info.size

    # --- writes --------------------------------------------------------------------------------------

    def open_output(self, path: str) -> BinaryIO:
        f = self.fs.open(self.key(path), "wb", block_size=self.write_block_size)
        return cast(BinaryIO, ObjectOutputStream(f, path))

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        if overwrite:
            self.fs.pipe_file(self.key(path), bytes(data))
        else:
            self.write_if_absent(path, data)

    def write_if_absent(self, path: str, data: bytes) -> None:
        """Create the object in one conditional request (see the module docstring).

        Raises:
            FileExistsError: the object already existed.
        """
        key = self.key(path)
        data = bytes(data)
        if not self.conditional_create:
            # Only safe under a commit lock: core refuses to commit without one (no ATOMIC_CREATE).
            if self.fs.exists(key):
                raise FileExistsError(f"already exists: {path!r}")
            self.fs.pipe_file(key, data)
            return
        try:
            self.fs.pipe_file(key, data, mode="create")
        except FileExistsError:
            # A request that timed out and was retried by the SDK may have created the object itself: the
            # precondition then fails against our own bytes. Snapshots embed their commit user and time,
            # so identical bytes mean this write, not another writer's.
            if self._holds(key, data):
                logger.debug("conditional create of %s: already ours after a retry", path)
                return
            raise FileExistsError(f"already exists: {path!r}") from None
        logger.debug("created %s", path)

    def _holds(self, key: str, data: bytes) -> bool:
        try:
            return bool(self.fs.cat_file(key) == data)
        except (FileNotFoundError, IsADirectoryError):
            return False

    # --- listing -------------------------------------------------------------------------------------

    def list_dir(self, path: str) -> list[FileInfo]:
        key = self.key(path)
        try:
            listed = self.fs.ls(key, detail=True)
        except FileNotFoundError:
            return []
        entries = {}
        for info in listed:
            relative = self._relative(key, str(info["name"]))
            entry = self._entry(path, key, info) if relative and "/" not in relative else None
            if entry is not None:
                entries[entry.name] = entry
        return [entries[name] for name in sorted(entries)]

    def list_prefix(self, path: str) -> Iterator[FileInfo]:
        key = self.key(path)
        try:
            found = self.fs.find(key, detail=True, withdirs=False)
        except FileNotFoundError:
            return
        for name in sorted(found):
            info = found[name]
            if str(info["name"]).endswith("/") or info.get("type") == "directory":
                continue  # a directory marker
            entry = self._entry(path, key, info)
            if entry is not None:
                yield entry

    # --- deletes and directories ---------------------------------------------------------------------

    def delete(self, path: str) -> None:
        key = self.key(path)
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(key)
        self.fs.invalidate_cache(key)

    def delete_dir(self, path: str) -> None:
        key = self.key(path)
        try:
            found = self.fs.find(key, withdirs=False)
        except FileNotFoundError:
            found = []
        keys = [k for k in found if k.rstrip("/").startswith(key + "/")]
        if keys:
            self.fs.rm(keys)
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(key + "/")  # our own directory marker, if any
        self.fs.invalidate_cache(key)

    def mkdirs(self, path: str) -> None:
        """Leave a directory marker (an empty ``key/`` object) unless objects already lie under ``path``.

        Raises:
            FileExistsError: an object (not a directory) exists at the path.
        """
        key = self.key(path)
        if "/" not in key:
            return  # the bucket itself
        try:
            info = self.fs.info(key)
        except FileNotFoundError:
            info = None
        if info is not None:
            if info.get("type") != "directory":
                raise FileExistsError(f"an object exists at {path!r}")
            return
        self._write_marker(key)

    def _write_marker(self, key: str) -> None:
        """Write the directory marker of ``key`` (the bucket-relative path, no trailing slash)."""
        self.fs.pipe_file(key + "/", b"")
