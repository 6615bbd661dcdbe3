"""A third-party storage plugin, as an outside package would ship it: the ``example://`` scheme.

Registered only by the entry point in ``paimon_example_store-0.1.dist-info/entry_points.txt`` (a checked-in
fake installation, found once this directory is on ``sys.path``). It serves ``example://<name>/<path>`` from a
local directory given by the option ``example.root``, through core's local backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import BinaryIO

from paimon_core.storage import BackendSpec, Capability, FileInfo, LocalBackend, hookimpl, join_path


class ExampleBackend:
    """``example://<name>/<path>`` → ``<root>/<name>/<path>`` on the local filesystem."""

    def __init__(self, root: str) -> None:
        self._root = root.rstrip("/")
        self._local = LocalBackend()
        self.capabilities = LocalBackend.capabilities

    def _local_path(self, path: str) -> str:
        return join_path(self._root, path.split("://", 1)[1])

    def _back(self, asked: str, info: FileInfo) -> FileInfo:
        relative = info.path[len(self._local_path(asked)) :]
        path = join_path(asked, relative) if relative.strip("/") else asked
        return FileInfo(path, info.name, info.size, info.is_dir, info.mtime_ms)

    def open_input(self, path: str) -> BinaryIO:
        return self._local.open_input(self._local_path(path))

    def open_output(self, path: str) -> BinaryIO:
        return self._local.open_output(self._local_path(path))

    def read_bytes(self, path: str) -> bytes:
        return self._local.read_bytes(self._local_path(path))

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        self._local.write_bytes(self._local_path(path), data, overwrite)

    def write_if_absent(self, path: str, data: bytes) -> None:
        self._local.write_if_absent(self._local_path(path), data)

    def exists(self, path: str) -> bool:
        return self._local.exists(self._local_path(path))

    def size(self, path: str) -> int:
        return self._local.size(self._local_path(path))

    def info(self, path: str) -> FileInfo:
        return self._back(path, self._local.info(self._local_path(path)))

    def list_dir(self, path: str) -> list[FileInfo]:
        return [self._back(path, i) for i in self._local.list_dir(self._local_path(path))]

    def list_prefix(self, path: str) -> Iterator[FileInfo]:
        return (self._back(path, i) for i in self._local.list_prefix(self._local_path(path)))

    def delete(self, path: str) -> None:
        self._local.delete(self._local_path(path))

    def delete_dir(self, path: str) -> None:
        self._local.delete_dir(self._local_path(path))

    def mkdirs(self, path: str) -> None:
        self._local.mkdirs(self._local_path(path))


def _factory(uri: str, options: Mapping[str, str]) -> ExampleBackend:
    return ExampleBackend(options["example.root"])


@hookimpl
def paimon_storage_backends() -> list[BackendSpec]:
    return [
        BackendSpec(
            name="example",
            schemes=("example",),
            factory=_factory,
            capabilities=frozenset({Capability.ATOMIC_CREATE, Capability.LIST, Capability.CROSS_PROCESS}),
            install_hint="pip install paimon-example-store",
            option_prefixes=("example.",),
        )
    ]
