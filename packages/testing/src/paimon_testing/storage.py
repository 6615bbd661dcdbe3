"""The storage-backend conformance suite: one set of behaviour tests for every backend.

A backend author subclasses :class:`StorageBackendTests` in a test module, under a name pytest collects, and
overrides the ``root`` fixture (a fresh, unique base path per test) and, if ``get_backend(root, options)`` does
not build the backend under test, the ``backend`` fixture::

    from paimon_testing.storage import StorageBackendTests

    class TestMyStore(StorageBackendTests):
        @pytest.fixture
        def root(self, bucket):
            return f"my://{bucket}/{uuid.uuid4().hex}"

        @pytest.fixture
        def backend_options(self):
            return {"my.endpoint": "http://localhost:9000"}

The multi-process race runs the backend in child processes started with ``spawn``; they rebuild it with the
``backend_factory`` fixture, which must return a picklable zero-argument callable (by default
:class:`RegistryFactory`, i.e. ``get_backend(root, backend_options)`` through the installed entry points).

Tests that need a capability the backend does not declare are skipped, naming the capability. Above all the
suite checks :meth:`~paimon_core.storage.StorageBackend.write_if_absent`, the commit primitive: racing writers
(threads, and processes) give exactly one winner whose bytes are stored, and readers never see a partial object.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimon_core.storage import Capability, FileInfo, StorageBackend, get_backend, join_path, unwrap

__all__ = ["RegistryFactory", "StorageBackendTests", "payload"]

_WON = "won"
_LOST = "lost"


@dataclass(frozen=True)
class RegistryFactory:
    """A picklable recipe for a backend: ``get_backend(uri, options)`` in whatever process calls it."""

    uri: str
    options: Mapping[str, str] = field(default_factory=dict)

    def __call__(self) -> StorageBackend:
        return get_backend(self.uri, dict(self.options))


def payload(writer: int, round_: int, size: int) -> bytes:
    """Deterministic bytes, different for every (writer, round): tells the winner of a race by content."""
    header = f"writer={writer};round={round_};".encode()
    body = random.Random(f"{writer}/{round_}").randbytes(max(0, size - len(header)))
    return header + body


def _require(backend: StorageBackend, capability: Capability, why: str) -> None:
    if capability not in backend.capabilities:
        pytest.skip(f"{type(unwrap(backend)).__name__} does not declare Capability.{capability.name}: {why}")


def _attempt(backend: StorageBackend, path: str, data: bytes) -> str:
    """One racer's ``write_if_absent``: ``"won"``, ``"lost"``, or the unexpected error's description."""
    try:
        backend.write_if_absent(path, data)
    except FileExistsError:
        return _LOST
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return _WON


def _race_threads(
    backend: StorageBackend, path: str, round_: int, n: int, size: int, timeout: float
) -> list[str]:
    """Start ``n`` threads at once on ``write_if_absent(path, ...)``; their outcomes, by writer."""
    barrier = threading.Barrier(n)
    outcomes = [""] * n

    def racer(writer: int) -> None:
        barrier.wait(timeout)
        outcomes[writer] = _attempt(backend, path, payload(writer, round_, size))

    threads = [threading.Thread(target=racer, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(t.is_alive() for t in threads), f"{path}: a racing thread hung"
    return outcomes


def _race_worker(
    factory: Callable[[], StorageBackend],
    paths: Sequence[str],
    writer: int,
    size: int,
    barrier: Any,
    results: Any,
    timeout: float,
) -> None:
    """Child-process body of the multi-process race: one attempt per path, in lock step with the others."""
    try:
        backend = factory()
        outcomes = []
        for round_, path in enumerate(paths):
            barrier.wait(timeout)
            outcomes.append(_attempt(backend, path, payload(writer, round_, size)))
        results.put((writer, outcomes))
    except BaseException:
        results.put((writer, traceback.format_exc()))


def _check_race(backend: StorageBackend, path: str, round_: int, size: int, outcomes: Sequence[str]) -> None:
    unexpected = [o for o in outcomes if o not in (_WON, _LOST)]
    assert not unexpected, (
        f"{path}: write_if_absent raised something other than FileExistsError: {unexpected}"
    )
    winners = [writer for writer, outcome in enumerate(outcomes) if outcome == _WON]
    assert len(winners) == 1, f"{path}: {len(winners)} writers won the race: {winners}"
    assert backend.read_bytes(path) == payload(winners[0], round_, size), (
        f"{path}: content is not the winner's"
    )


# Names that tables produce: escaped partition values, dots, unicode. No leading dot (hidden and temporary
# files, "." and ".."), no trailing dot or space (Windows), case-insensitively unique (macOS).
_NAME = st.text(
    alphabet=st.sampled_from("abcXYZ0189-_=%+~.,@ é日"),
    min_size=1,
    max_size=24,
).filter(lambda n: not n.startswith(".") and not n.endswith((".", " ")))


class StorageBackendTests:
    """Behaviour every :class:`~paimon_core.storage.StorageBackend` must have. Subclass it; see the module doc.

    Class attributes tune the concurrency tests (lower them for slow remote stores).
    """

    race_threads: ClassVar[int] = 16
    race_processes: ClassVar[int] = 6
    race_rounds: ClassVar[int] = 10
    race_object_size: ClassVar[int] = 4096
    large_object_size: ClassVar[int] = 4 << 20
    large_objects: ClassVar[int] = 6
    timeout: ClassVar[float] = 120.0

    # --- fixtures to override ---------------------------------------------------------------------------

    @pytest.fixture
    def root(self) -> str:
        """A fresh, unique base path for one test (it need not exist yet)."""
        raise NotImplementedError("override the `root` fixture: a fresh unique base path per test")

    @pytest.fixture
    def backend_options(self) -> dict[str, str]:
        """Options passed to ``get_backend`` here and in child processes."""
        return {}

    @pytest.fixture
    def backend(self, root: str, backend_options: dict[str, str]) -> StorageBackend:
        """The backend under test; by default the one registered for ``root``'s scheme."""
        return get_backend(root, backend_options)

    @pytest.fixture
    def backend_factory(self, root: str, backend_options: dict[str, str]) -> Callable[[], StorageBackend]:
        """A picklable zero-argument callable building the backend under test in another process."""
        return RegistryFactory(root, dict(backend_options))

    # --- the protocol -----------------------------------------------------------------------------------

    def test_is_a_storage_backend(self, backend: StorageBackend) -> None:
        assert isinstance(backend, StorageBackend)
        assert isinstance(backend.capabilities, frozenset)
        assert all(isinstance(c, Capability) for c in backend.capabilities)

    # --- whole-object reads and writes ------------------------------------------------------------------

    def test_write_bytes_then_read_bytes(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "a", "b", "object")
        data = bytes(range(256)) * 5
        backend.write_bytes(path, data)
        assert backend.read_bytes(path) == data
        assert backend.exists(path)
        assert backend.size(path) == len(data)

    def test_empty_object(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "empty")
        backend.write_if_absent(path, b"")
        assert backend.read_bytes(path) == b""
        assert backend.size(path) == 0
        assert backend.exists(path)

    def test_write_bytes_refuses_existing_without_overwrite(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "object")
        backend.write_bytes(path, b"first")
        with pytest.raises(FileExistsError):
            backend.write_bytes(path, b"second")
        assert backend.read_bytes(path) == b"first"
        backend.write_bytes(path, b"third, and longer", overwrite=True)
        assert backend.read_bytes(path) == b"third, and longer"
        backend.write_bytes(path, b"4", overwrite=True)
        assert backend.read_bytes(path) == b"4"

    def test_write_if_absent_creates_once(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "snapshot", "snapshot-1")
        backend.write_if_absent(path, b"winner")
        with pytest.raises(FileExistsError):
            backend.write_if_absent(path, b"loser")
        assert backend.read_bytes(path) == b"winner"
        assert [info.name for info in backend.list_dir(join_path(root, "snapshot"))] == ["snapshot-1"]

    def test_missing_object(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "missing")
        assert not backend.exists(path)
        with pytest.raises(FileNotFoundError):
            backend.read_bytes(path)
        with pytest.raises(FileNotFoundError):
            backend.size(path)
        with pytest.raises(FileNotFoundError):
            backend.info(path)
        with pytest.raises(FileNotFoundError):
            backend.open_input(path).close()

    def test_info(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "dir", "object")
        before_ms = time.time() * 1000
        backend.write_bytes(path, b"12345")
        info = backend.info(path)
        assert (info.path, info.name, info.size, info.is_dir) == (path, "object", 5, False)
        day_ms = 86_400_000  # generous: remote stores keep their own clocks
        assert before_ms - day_ms < info.mtime_ms < before_ms + day_ms
        directory = backend.info(join_path(root, "dir"))
        assert directory.is_dir
        assert directory.name == "dir"
        assert backend.exists(join_path(root, "dir"))

    # --- streams ----------------------------------------------------------------------------------------

    def test_open_input_seeks_and_reads_ranges(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "ranged")
        data = payload(0, 0, 100_000)
        backend.write_bytes(path, data)
        with backend.open_input(path) as f:
            assert f.readable()
            assert f.seekable()
            f.seek(1000)
            assert f.read(10) == data[1000:1010]
            assert f.tell() == 1010
            f.seek(5, os.SEEK_CUR)
            assert f.read(5) == data[1015:1020]
            assert f.seek(-100, os.SEEK_END) == len(data) - 100
            assert f.read() == data[-100:]
            assert f.read(10) == b""
            f.seek(0)
            assert f.read() == data

    def test_open_output_publishes_on_close(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "data", "file.bin")
        chunks = [payload(i, 0, 50_000) for i in range(4)]
        with backend.open_output(path) as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            assert not backend.exists(path), "the object must not be visible before close()"
        assert backend.read_bytes(path) == b"".join(chunks)
        with backend.open_output(path) as out:  # open_output replaces
            out.write(b"replaced")
        assert backend.read_bytes(path) == b"replaced"

    def test_open_output_discards_on_exception(self, backend: StorageBackend, root: str) -> None:
        fresh, existing = join_path(root, "fresh"), join_path(root, "existing")
        backend.write_bytes(existing, b"old")
        for path in (fresh, existing):
            with pytest.raises(ZeroDivisionError), backend.open_output(path) as out:
                out.write(b"partial")
                raise ZeroDivisionError
        assert not backend.exists(fresh)
        assert backend.read_bytes(existing) == b"old"

    def test_parquet_round_trip(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "bucket-0", "data-0.parquet")
        n = 10_000
        table = pa.table(
            {
                "id": pa.array(range(n), pa.int64()),
                "name": pa.array([f"name-{i}" for i in range(n)], pa.string()),
                "score": pa.array([i / 7 for i in range(n)], pa.float64()),
            }
        )
        with backend.open_output(path) as out:
            pq.write_table(table, out, row_group_size=1000)
        with backend.open_input(path) as f:
            assert pq.read_table(f).equals(table)
        with backend.open_input(path) as f:
            parquet = pq.ParquetFile(f)
            assert parquet.metadata.num_row_groups == 10
            group = parquet.read_row_group(7, columns=["name"])
            assert group.column("name").to_pylist() == [f"name-{i}" for i in range(7000, 8000)]

    # --- listing ----------------------------------------------------------------------------------------

    def _tree(self, backend: StorageBackend, root: str) -> str:
        directory = join_path(root, "d")
        backend.write_bytes(join_path(directory, "b"), b"bb")
        backend.write_bytes(join_path(directory, "a"), b"a")
        backend.write_bytes(join_path(directory, "sub", "c"), b"ccc")
        backend.write_bytes(join_path(directory, "sub", "deeper", "e"), b"eeee")
        backend.write_bytes(join_path(root, "d2", "x"), b"sibling with a common name prefix")
        backend.write_bytes(join_path(root, "dfile"), b"another")
        return directory

    def test_list_dir(self, backend: StorageBackend, root: str) -> None:
        _require(backend, Capability.LIST, "listing is not supported")
        directory = self._tree(backend, root)
        entries = backend.list_dir(directory)
        assert [(e.name, e.is_dir) for e in entries] == [("a", False), ("b", False), ("sub", True)]
        assert [e.path for e in entries] == [join_path(directory, e.name) for e in entries]
        assert {e.name: e.size for e in entries if not e.is_dir} == {"a": 1, "b": 2}
        assert all(isinstance(e, FileInfo) for e in entries)
        assert backend.list_dir(join_path(directory, "sub", "deeper")) == [
            backend.info(join_path(directory, "sub", "deeper", "e"))
        ]

    def test_list_dir_missing_is_empty(self, backend: StorageBackend, root: str) -> None:
        _require(backend, Capability.LIST, "listing is not supported")
        assert backend.list_dir(join_path(root, "nowhere")) == []

    def test_list_prefix(self, backend: StorageBackend, root: str) -> None:
        _require(backend, Capability.LIST, "listing is not supported")
        directory = self._tree(backend, root)
        found = sorted(backend.list_prefix(directory), key=lambda e: e.path)
        expected = sorted(join_path(directory, p) for p in ("a", "b", "sub/c", "sub/deeper/e"))
        assert [e.path for e in found] == expected
        assert not any(e.is_dir for e in found)
        assert {e.name: e.size for e in found} == {"a": 1, "b": 2, "c": 3, "e": 4}
        assert list(backend.list_prefix(join_path(root, "nowhere"))) == []

    @pytest.mark.parametrize("style", ["plain", "trailing slash"])
    def test_listed_paths_keep_the_callers_form(self, backend: StorageBackend, root: str, style: str) -> None:
        _require(backend, Capability.LIST, "listing is not supported")
        directory = self._tree(backend, root)
        asked = directory + "/" if style == "trailing slash" else directory
        assert [e.path for e in backend.list_dir(asked)][:1] == [join_path(directory, "a")]
        assert join_path(directory, "a") in {e.path for e in backend.list_prefix(asked)}

    def test_names_round_trip(self, backend: StorageBackend, root: str) -> None:
        _require(backend, Capability.LIST, "listing is not supported")

        # Built per call so that it inherits the Hypothesis profile loaded by then.
        @given(
            names=st.lists(_NAME, min_size=1, max_size=4, unique_by=str.lower), data=st.binary(max_size=64)
        )
        def check(names: list[str], data: bytes) -> None:
            base = join_path(root, "names", uuid.uuid4().hex)
            for name in names:
                backend.write_bytes(join_path(base, name), data + name.encode())
            assert sorted(e.name for e in backend.list_dir(base)) == sorted(names)
            for name in names:
                assert backend.read_bytes(join_path(base, name)) == data + name.encode()
            backend.delete_dir(base)

        check()

    # --- deleting and directories -----------------------------------------------------------------------

    def test_delete(self, backend: StorageBackend, root: str) -> None:
        path = join_path(root, "gone")
        backend.write_bytes(path, b"x")
        backend.delete(path)
        assert not backend.exists(path)
        with pytest.raises(FileNotFoundError):
            backend.read_bytes(path)
        backend.delete(path)  # deleting a missing object is fine
        backend.write_if_absent(path, b"again")  # and the name is free again
        assert backend.read_bytes(path) == b"again"

    def test_delete_dir(self, backend: StorageBackend, root: str) -> None:
        directory = self._tree(backend, root)
        backend.delete_dir(directory)
        assert not backend.exists(join_path(directory, "a"))
        assert not backend.exists(join_path(directory, "sub", "deeper", "e"))
        assert not backend.exists(directory)
        assert backend.read_bytes(join_path(root, "d2", "x")) == b"sibling with a common name prefix"
        assert backend.read_bytes(join_path(root, "dfile")) == b"another"
        backend.delete_dir(directory)  # deleting a missing directory is fine

    def test_mkdirs(self, backend: StorageBackend, root: str) -> None:
        directory = join_path(root, "x", "y")
        backend.mkdirs(directory)
        backend.mkdirs(directory)  # existing directories are fine
        backend.write_if_absent(join_path(directory, "z"), b"z")
        assert backend.read_bytes(join_path(directory, "z")) == b"z"

    def test_real_directories(self, backend: StorageBackend, root: str) -> None:
        _require(backend, Capability.DIRECTORIES, "an object store has no empty directories")
        directory = join_path(root, "empty", "dir")
        backend.mkdirs(directory)
        assert backend.exists(directory)
        assert backend.info(directory).is_dir
        assert [(e.name, e.is_dir) for e in backend.list_dir(join_path(root, "empty"))] == [("dir", True)]
        assert backend.list_dir(directory) == []
        with pytest.raises(IsADirectoryError):
            backend.read_bytes(directory)
        with pytest.raises(IsADirectoryError):
            backend.size(directory)
        with pytest.raises(IsADirectoryError):
            backend.delete(directory)
        file_path = join_path(root, "file")
        backend.write_bytes(file_path, b"f")
        with pytest.raises(NotADirectoryError):
            backend.list_dir(file_path)
        with pytest.raises(NotADirectoryError):
            backend.delete_dir(file_path)
        with pytest.raises(FileExistsError):
            backend.mkdirs(file_path)
        with pytest.raises(NotADirectoryError):  # never FileExistsError: that would mean "lost the race"
            backend.write_if_absent(join_path(file_path, "child"), b"c")

    # --- the commit primitive under concurrency ---------------------------------------------------------

    def test_write_if_absent_thread_race(self, backend: StorageBackend, root: str) -> None:
        _require(backend, Capability.ATOMIC_CREATE, "write_if_absent is not atomic and exclusive")
        n, size = self.race_threads, self.race_object_size
        for round_ in range(self.race_rounds):
            path = join_path(root, "snapshot", f"snapshot-{round_}")
            outcomes = _race_threads(backend, path, round_, n, size, self.timeout)
            _check_race(backend, path, round_, size, outcomes)

    def test_write_if_absent_process_race(
        self, backend: StorageBackend, root: str, backend_factory: Callable[[], StorageBackend]
    ) -> None:
        _require(backend, Capability.ATOMIC_CREATE, "write_if_absent is not atomic and exclusive")
        _require(
            backend,
            Capability.CROSS_PROCESS,
            "objects live in one process, so other processes cannot race on them",
        )
        n, size = self.race_processes, self.race_object_size
        paths = [join_path(root, "snapshot", f"snapshot-{r}") for r in range(self.race_rounds)]
        ctx = multiprocessing.get_context("spawn")
        barrier, results = ctx.Barrier(n), ctx.Queue()
        processes = [
            ctx.Process(
                target=_race_worker,
                args=(backend_factory, paths, i, size, barrier, results, self.timeout),
                daemon=True,
            )
            for i in range(n)
        ]
        try:
            for process in processes:
                process.start()
            reports: dict[int, Any] = {}
            deadline = time.monotonic() + self.timeout
            while len(reports) < n:
                try:
                    writer, report = results.get(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    pytest.fail(f"only {len(reports)} of {n} racing processes reported in {self.timeout} s")
                reports[writer] = report
            for process in processes:
                process.join(self.timeout)
        finally:
            for process in processes:
                if process.is_alive():
                    process.terminate()
                    process.join()
            results.close()
            results.join_thread()
        failed = {w: r for w, r in reports.items() if isinstance(r, str)}
        assert not failed, f"racing processes failed:\n{failed}"
        for round_, path in enumerate(paths):
            _check_race(backend, path, round_, size, [reports[w][round_] for w in range(n)])

    def test_readers_never_see_partial_objects(self, backend: StorageBackend, root: str) -> None:
        _require(backend, Capability.ATOMIC_CREATE, "write_if_absent is not atomic and exclusive")
        size, count = self.large_object_size, self.large_objects
        paths = [join_path(root, "big", f"snapshot-{i}") for i in range(count)]
        wanted = [payload(0, i, size) for i in range(count)]
        stop = threading.Event()
        partial: list[tuple[str, int]] = []
        whole = [0]

        def reader() -> None:
            while not stop.is_set():
                for path, data in zip(paths, wanted, strict=True):
                    try:
                        got = backend.read_bytes(path)
                    except FileNotFoundError:
                        continue
                    if got == data:
                        whole[0] += 1
                    else:
                        partial.append((path, len(got)))

        def writer(i: int) -> None:
            for path, data in zip(paths[i::2], wanted[i::2], strict=True):
                backend.write_if_absent(path, data)

        readers = [threading.Thread(target=reader, daemon=True) for _ in range(4)]
        writers = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(2)]
        for thread in (*readers, *writers):
            thread.start()
        for thread in writers:
            thread.join(self.timeout)
        stop.set()
        for thread in readers:
            thread.join(self.timeout)
        assert not partial, f"readers saw partial objects (path, length): {partial[:5]}"
        for path, data in zip(paths, wanted, strict=True):
            assert backend.read_bytes(path) == data
