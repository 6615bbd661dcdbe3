"""The storage conformance suite against core's backends, and proof that it catches broken ones."""

from __future__ import annotations

import importlib
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from paimon_core.storage import MemoryBackend, clear_memory_store
from paimon_testing.storage import StorageBackendTests


class TestLocalPaths(StorageBackendTests):
    @pytest.fixture
    def root(self, tmp_path: Path) -> str:
        return str(tmp_path / "root")


class TestLocalFileUris(StorageBackendTests):
    @pytest.fixture
    def root(self, tmp_path: Path) -> str:
        return "file://" + (tmp_path / "root").as_posix()


class TestMemory(StorageBackendTests):
    @pytest.fixture
    def root(self) -> Iterator[str]:
        root = f"memory://conformance-{uuid.uuid4().hex}/table"
        yield root
        clear_memory_store(root)


# --- the suite must fail for backends that break the contract ----------------------------------------------


class _CheckThenWrite(MemoryBackend):
    """Emulates write_if_absent with exists() then a write: the mistake the suite exists to catch."""

    def write_if_absent(self, path: str, data: bytes) -> None:
        if self.exists(path):
            raise FileExistsError(path)
        time.sleep(0.001)  # widen the window a real network round trip would open
        self.write_bytes(path, data, overwrite=True)


class _ChunkedWrite(MemoryBackend):
    """Makes an object visible while it is still being written, like a plain open(path, 'wb')."""

    def write_if_absent(self, path: str, data: bytes) -> None:
        if self.exists(path):
            raise FileExistsError(path)
        step = max(1, len(data) // 8)
        for end in range(step, len(data) + step, step):
            self.write_bytes(path, data[:end], overwrite=True)
            time.sleep(0.002)


@pytest.fixture
def memory_root() -> Iterator[str]:
    root = f"memory://broken-{uuid.uuid4().hex}"
    yield root
    clear_memory_store(root)


def test_suite_catches_a_non_exclusive_create(memory_root: str) -> None:
    suite = TestMemory()
    with pytest.raises(AssertionError, match="writers won the race"):
        suite.test_write_if_absent_thread_race(_CheckThenWrite(), memory_root)


def test_suite_catches_partially_visible_objects(memory_root: str) -> None:
    suite = TestMemory()
    with pytest.raises(AssertionError, match="partial objects"):
        suite.test_readers_never_see_partial_objects(_ChunkedWrite(), memory_root)


def test_suite_accepts_the_real_memory_backend(memory_root: str) -> None:
    suite = TestMemory()
    suite.test_write_if_absent_thread_race(MemoryBackend(), memory_root)
    suite.test_readers_never_see_partial_objects(MemoryBackend(), memory_root + "/again")
    assert threading.active_count() >= 1


_BROKEN_LOCAL = """
import time

from paimon_core.storage import LocalBackend


class CheckThenWriteLocal(LocalBackend):
    def write_if_absent(self, path, data):
        if self.exists(path):
            raise FileExistsError(path)
        time.sleep(0.01)
        self.write_bytes(path, data, overwrite=True)


def make():
    return CheckThenWriteLocal()
"""


def test_suite_catches_a_non_exclusive_create_across_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The children (spawned) must import the broken backend by module name: give them one on sys.path.
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "paimon_broken_local.py").write_text(textwrap.dedent(_BROKEN_LOCAL))
    monkeypatch.syspath_prepend(str(tmp_path / "modules"))
    module = importlib.import_module("paimon_broken_local")
    try:
        suite = TestLocalPaths()
        with pytest.raises(AssertionError, match="writers won the race"):
            suite.test_write_if_absent_process_race(module.make(), str(tmp_path / "root"), module.make)
    finally:
        sys.modules.pop("paimon_broken_local", None)
