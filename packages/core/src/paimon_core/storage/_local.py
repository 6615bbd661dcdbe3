"""The ``file`` backend: the local filesystem (or any mounted one with POSIX hard links).

Every write goes to a temporary file in the target's directory, named ``.<name>.<uuid>.tmp``, which is fsynced
and then published: ``os.link`` for an exclusive create (the link fails with ``EEXIST`` if the target exists,
and the target appears whole), ``os.replace`` for an overwrite. On Windows, where hard links are not always
available, ``os.rename`` also refuses an existing target. Exists-then-rename is never used.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import stat
import uuid
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import BinaryIO

from paimon_core.redaction import get_logger
from paimon_core.storage._paths import join_path, local_path, path_name
from paimon_core.storage._spec import BackendSpec, Capability, FileInfo, hookimpl

logger = get_logger(__name__)

_BUFFER_SIZE = 1 << 20


def _temp_name(target: str) -> str:
    directory, name = os.path.split(target)
    return os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")


def _make_parent(target: str) -> None:
    """Create the parent directories of ``target``; a file in the way is a ``NotADirectoryError``.

    ``os.makedirs`` reports a file in the way as ``FileExistsError``, which must not escape: from
    ``write_if_absent`` it would mean "the target already existed".
    """
    directory = os.path.dirname(target)
    if not directory:
        return
    try:
        os.makedirs(directory, exist_ok=True)
    except FileExistsError as error:
        raise NotADirectoryError(f"a file is in the way of directory {directory!r}") from error


def _fsync_dir(directory: str) -> None:
    """Make a new directory entry durable; best effort (not every platform or filesystem allows it)."""
    if os.name == "nt":
        return
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


FSYNC_OPTION = "storage.file.fsync"
FSYNC_MODES = ("commit", "all", "none")


def _write_temp(target: str, data: bytes, sync: bool) -> str:
    _make_parent(target)
    tmp = _temp_name(target)
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


class _LocalOutputStream(io.BufferedWriter):
    """A buffered writer on a temporary file that replaces the target on ``close()``.

    Leaving a ``with`` block by an exception discards the temporary file instead.
    """

    def __init__(self, target: str, sync: bool) -> None:
        _make_parent(target)
        self._target = target
        self._sync = sync
        self._tmp = _temp_name(target)
        super().__init__(io.FileIO(self._tmp, "xb"), buffer_size=_BUFFER_SIZE)

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.flush()
            if self._sync:
                os.fsync(self.fileno())
        except BaseException:
            self.discard()
            raise
        super().close()
        try:
            os.replace(self._tmp, self._target)
        except BaseException:
            _unlink_quietly(self._tmp)
            raise
        if self._sync:
            _fsync_dir(os.path.dirname(self._target))

    def discard(self) -> None:
        """Close without publishing: the target is left as it was."""
        if self.closed:
            return
        try:
            self.raw.close()  # not super().close(): that would flush data nobody wants
        finally:
            _unlink_quietly(self._tmp)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


class LocalBackend:
    """The local filesystem, for plain paths and ``file:`` URIs (see :class:`StorageBackend` for the contract).

    Listings return paths in the form they were asked about (plain or ``file://``).

    Durability (option ``storage.file.fsync``): ``commit`` (default) fsyncs the content of what
    ``write_if_absent`` publishes (snapshots: the commit point) before its name appears, so a power loss
    can lose the last commits but never leaves an empty or partial snapshot; ``all`` also fsyncs every data
    and metadata file and every new directory entry, so a committed snapshot survives power loss with
    everything it references; ``none`` never fsyncs. A killed process never leaves a partial file visible.
    """

    def __init__(self, fsync: str = "commit") -> None:
        if fsync not in FSYNC_MODES:
            raise ValueError(f"{FSYNC_OPTION} must be one of {', '.join(FSYNC_MODES)}, not {fsync!r}")
        self.fsync = fsync
        self._sync_all = fsync == "all"
        self._sync_commit = fsync != "none"

    capabilities: frozenset[Capability] = frozenset(
        {
            Capability.ATOMIC_CREATE,
            Capability.LIST,
            Capability.RANGED_READ,
            Capability.CROSS_PROCESS,
            Capability.DIRECTORIES,
        }
    )

    def __repr__(self) -> str:
        return f"LocalBackend(fsync={self.fsync!r})"

    def open_input(self, path: str) -> BinaryIO:
        return open(local_path(path), "rb")  # the caller closes it

    def open_output(self, path: str) -> BinaryIO:
        return _LocalOutputStream(local_path(path), self._sync_all)

    def read_bytes(self, path: str) -> bytes:
        with open(local_path(path), "rb") as f:
            return f.read()

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        if not overwrite:
            self._create(path, data, self._sync_all)
            return
        target = local_path(path)
        tmp = _write_temp(target, data, self._sync_all)
        try:
            os.replace(tmp, target)
        except BaseException:
            _unlink_quietly(tmp)
            raise
        if self._sync_all:
            _fsync_dir(os.path.dirname(target))

    def write_if_absent(self, path: str, data: bytes) -> None:
        self._create(path, data, self._sync_commit)

    def _create(self, path: str, data: bytes, sync: bool) -> None:
        target = local_path(path)
        tmp = _write_temp(target, data, sync)
        try:
            if os.name == "nt":
                os.rename(tmp, target)  # refuses an existing target on Windows
            else:
                os.link(tmp, target)  # EEXIST -> FileExistsError; the target appears whole
        except FileExistsError:
            raise FileExistsError(errno.EEXIST, "already exists", path) from None
        finally:
            _unlink_quietly(tmp)
        if self._sync_all:
            _fsync_dir(os.path.dirname(target))
        logger.debug("created %s", path)

    def exists(self, path: str) -> bool:
        return os.path.exists(local_path(path))

    def size(self, path: str) -> int:
        st = os.stat(local_path(path))
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"is a directory: {path!r}")
        return st.st_size

    def info(self, path: str) -> FileInfo:
        return _info(join_path(path), os.stat(local_path(path)))

    def list_dir(self, path: str) -> list[FileInfo]:
        directory = local_path(path)
        try:
            scan = os.scandir(directory)
        except FileNotFoundError:
            return []
        entries = []
        with scan:
            for entry in scan:
                try:
                    st = entry.stat()
                except FileNotFoundError:  # deleted while listing
                    continue
                entries.append(_info(join_path(path, entry.name), st))
        return sorted(entries, key=lambda e: e.name)

    def list_prefix(self, path: str) -> Iterator[FileInfo]:
        top = local_path(path)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            relative = os.path.relpath(dirpath, top).replace(os.sep, "/")
            base = path if relative == "." else join_path(path, relative)
            for name in sorted(filenames):
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except FileNotFoundError:
                    continue
                yield _info(join_path(base, name), st)

    def delete(self, path: str) -> None:
        target = local_path(path)
        try:
            os.unlink(target)
        except FileNotFoundError:
            pass
        except OSError:
            if os.path.isdir(target):  # EISDIR on Linux, EPERM on macOS
                raise IsADirectoryError(f"is a directory (use delete_dir): {path!r}") from None
            raise

    def delete_dir(self, path: str) -> None:
        target = local_path(path)
        if os.path.isfile(target):
            raise NotADirectoryError(f"not a directory: {path!r}")
        for _ in range(3):
            try:
                shutil.rmtree(target)
                return
            except FileNotFoundError:
                if not os.path.lexists(target):
                    return
                # something inside vanished while we walked (a concurrent delete): walk again
        shutil.rmtree(target)

    def mkdirs(self, path: str) -> None:
        os.makedirs(local_path(path), exist_ok=True)


def _info(path: str, st: os.stat_result) -> FileInfo:
    is_dir = stat.S_ISDIR(st.st_mode)
    return FileInfo(
        path=path,
        name=path_name(path),
        size=0 if is_dir else st.st_size,
        is_dir=is_dir,
        mtime_ms=st.st_mtime_ns // 1_000_000,
    )


def _factory(uri: str, options: Mapping[str, str]) -> LocalBackend:
    return LocalBackend(options.get(FSYNC_OPTION, "commit"))


SPEC = BackendSpec(
    name="file",
    schemes=("file",),
    factory=_factory,
    capabilities=LocalBackend.capabilities,
    install_hint="built into paimon-core",
    option_prefixes=(),
)


@hookimpl
def paimon_storage_backends() -> list[BackendSpec]:
    """The ``file`` backend (registered through core's ``paimon.storage`` entry point)."""
    return [SPEC]
