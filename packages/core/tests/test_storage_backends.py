"""What the built-in backends do beyond the shared contract (that is checked by paimon-testing's suite)."""

from __future__ import annotations

import errno
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from paimon_core.storage import Capability, LocalBackend, MemoryBackend, clear_memory_store, join_path

# --- local ------------------------------------------------------------------------------------------------


@pytest.fixture
def local() -> LocalBackend:
    return LocalBackend()


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob(".*.tmp"))


def test_local_publishes_with_a_hard_link_and_cleans_up(local: LocalBackend, tmp_path: Path) -> None:
    target = tmp_path / "snapshot" / "snapshot-1"
    local.write_if_absent(str(target), b"{}")
    assert target.read_bytes() == b"{}"
    assert os.stat(target).st_nlink == 1  # the temporary link is gone
    with pytest.raises(FileExistsError) as raised:
        local.write_if_absent(str(target), b"other")
    assert raised.value.errno == errno.EEXIST
    assert raised.value.filename == str(target)  # names the target, not the temporary file
    assert _leftovers(tmp_path) == []
    assert target.read_bytes() == b"{}"


@pytest.mark.skipif(os.name == "nt", reason="POSIX publishes with os.link")
def test_local_link_failure_is_not_file_exists(
    local: LocalBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(src: str, dst: str) -> None:
        raise PermissionError(errno.EPERM, "links not allowed", dst)

    monkeypatch.setattr(os, "link", refuse)
    with pytest.raises(PermissionError):
        local.write_if_absent(str(tmp_path / "x"), b"x")
    assert list(tmp_path.iterdir()) == []


def test_local_file_in_the_way_is_not_file_exists(local: LocalBackend, tmp_path: Path) -> None:
    (tmp_path / "snapshot").write_bytes(b"a file where a directory should be")
    with pytest.raises(NotADirectoryError):
        local.write_if_absent(str(tmp_path / "snapshot" / "snapshot-1"), b"x")
    with pytest.raises(NotADirectoryError):
        local.open_output(str(tmp_path / "snapshot" / "data.parquet"))


def test_local_open_output_writes_a_hidden_temporary_file(local: LocalBackend, tmp_path: Path) -> None:
    target = tmp_path / "bucket-0" / "data-1.parquet"
    with local.open_output(str(target)) as out:
        out.write(b"parquet bytes")
        out.flush()
        (temporary,) = _leftovers(tmp_path)
        assert temporary.startswith(".data-1.parquet.") and temporary.endswith(".tmp")
        assert not target.exists()
    assert target.read_bytes() == b"parquet bytes"
    assert _leftovers(tmp_path) == []


def test_local_open_output_discard_leaves_nothing(local: LocalBackend, tmp_path: Path) -> None:
    target = tmp_path / "data.parquet"
    with pytest.raises(RuntimeError), local.open_output(str(target)) as out:
        out.write(b"x" * (3 << 20))  # more than the buffer: some bytes reached the temporary file
        raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []


def test_local_overwrite_is_a_replace(local: LocalBackend, tmp_path: Path) -> None:
    target = tmp_path / "LATEST"
    local.write_bytes(str(target), b"1")
    inode = os.stat(target).st_ino
    local.write_bytes(str(target), b"2", overwrite=True)
    assert target.read_bytes() == b"2"
    assert os.stat(target).st_ino != inode  # a new file renamed over the old, not rewritten in place
    assert _leftovers(tmp_path) == []


def test_local_keeps_percent_escapes_literal(local: LocalBackend, tmp_path: Path) -> None:
    partition = join_path("file://" + tmp_path.as_posix(), "dt=2024%3A01", "bucket-0")
    local.write_bytes(join_path(partition, "f"), b"x")
    assert (tmp_path / "dt=2024%3A01" / "bucket-0" / "f").read_bytes() == b"x"
    assert [e.path for e in local.list_dir(partition)] == [join_path(partition, "f")]


def test_local_understands_hadoop_file_uris(local: LocalBackend, tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"hadoop")
    assert local.read_bytes("file:" + (tmp_path / "a").as_posix()) == b"hadoop"
    [entry] = local.list_dir("file:" + tmp_path.as_posix())
    assert entry.path == "file:" + (tmp_path / "a").as_posix()


def test_local_capabilities(local: LocalBackend) -> None:
    assert Capability.ATOMIC_CREATE in local.capabilities
    assert Capability.CROSS_PROCESS in local.capabilities
    assert Capability.DIRECTORIES in local.capabilities


# --- memory -----------------------------------------------------------------------------------------------


@pytest.fixture
def memory_root() -> Iterator[str]:
    root = f"memory://test-{uuid.uuid4().hex}"
    yield root
    clear_memory_store(root)


def test_memory_path_forms_share_one_key(memory_root: str) -> None:
    memory = MemoryBackend()
    name = memory_root.removeprefix("memory://")
    memory.write_bytes(f"memory://{name}/a//b/", b"x")
    for form in (
        f"memory://{name}/a/b",
        f"memory:///{name}/a/b",
        f"memory:/{name}/a/b",
        f"MEMORY://{name}/a/b",
    ):
        assert memory.read_bytes(form) == b"x", form
        with pytest.raises(FileExistsError):
            memory.write_if_absent(form, b"y")


def test_memory_store_is_shared_by_instances_and_copies_data(memory_root: str) -> None:
    data = bytearray(b"abc")
    MemoryBackend().write_bytes(join_path(memory_root, "k"), bytes(data))
    data[0] = ord("z")
    assert MemoryBackend().read_bytes(join_path(memory_root, "k")) == b"abc"


def test_memory_directories_are_markers_or_prefixes(memory_root: str) -> None:
    memory = MemoryBackend()
    memory.mkdirs(join_path(memory_root, "empty"))  # a marker, as S3A leaves: empty databases stay visible
    assert memory.exists(join_path(memory_root, "empty"))
    assert [(i.name, i.is_dir) for i in memory.list_dir(memory_root)] == [("empty", True)]
    memory.delete_dir(join_path(memory_root, "empty"))
    assert not memory.exists(join_path(memory_root, "empty"))
    memory.write_bytes(join_path(memory_root, "d", "x"), b"x")
    memory.delete(join_path(memory_root, "d"))  # not an object: nothing to delete
    assert memory.exists(join_path(memory_root, "d", "x"))
    with pytest.raises(IsADirectoryError):
        memory.read_bytes(join_path(memory_root, "d"))
    assert Capability.CROSS_PROCESS not in memory.capabilities


def test_memory_rejects_other_schemes() -> None:
    with pytest.raises(ValueError):
        MemoryBackend().read_bytes("/tmp/x")


def test_clear_memory_store(memory_root: str) -> None:
    memory = MemoryBackend()
    other = f"memory://other-{uuid.uuid4().hex}"
    memory.write_bytes(join_path(memory_root, "t", "a"), b"1")
    memory.write_bytes(join_path(memory_root + "2", "a"), b"2")  # shares a name prefix, not a directory
    memory.write_bytes(join_path(other, "a"), b"3")
    try:
        clear_memory_store(memory_root)
        assert not memory.exists(join_path(memory_root, "t", "a"))
        assert memory.read_bytes(join_path(memory_root + "2", "a")) == b"2"
        assert memory.read_bytes(join_path(other, "a")) == b"3"
    finally:
        clear_memory_store(memory_root + "2")
        clear_memory_store(other)


def test_memory_write_if_absent_is_exclusive_under_contention(memory_root: str) -> None:
    memory = MemoryBackend()
    winners: list[int] = []
    barrier = threading.Barrier(32)

    def race(i: int) -> None:
        barrier.wait()
        try:
            memory.write_if_absent(join_path(memory_root, "snapshot-1"), str(i).encode())
            winners.append(i)
        except FileExistsError:
            pass

    threads = [threading.Thread(target=race, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1
    assert memory.read_bytes(join_path(memory_root, "snapshot-1")) == str(winners[0]).encode()


def test_memory_output_stream_publishes_on_close(memory_root: str) -> None:
    memory = MemoryBackend()
    out = memory.open_output(join_path(memory_root, "f"))
    out.write(b"data")
    assert not memory.exists(join_path(memory_root, "f"))
    out.close()
    assert memory.read_bytes(join_path(memory_root, "f")) == b"data"


def test_local_fsync_modes_are_validated_and_chosen_by_option(tmp_path: Path) -> None:
    from paimon_core.storage import get_backend, unwrap
    from paimon_core.storage._local import FSYNC_OPTION

    with pytest.raises(ValueError):
        LocalBackend("sometimes")
    backend = unwrap(get_backend(str(tmp_path), {FSYNC_OPTION: "all"}))
    assert isinstance(backend, LocalBackend) and backend.fsync == "all"
    assert get_backend(str(tmp_path)).fsync == "commit"  # type: ignore[attr-defined]
    for mode in ("all", "commit", "none"):  # every mode still creates exclusively and whole
        local = LocalBackend(mode)
        target = str(tmp_path / mode / "snapshot-1")
        local.write_if_absent(target, b"x")
        with pytest.raises(FileExistsError):
            local.write_if_absent(target, b"y")
        assert local.read_bytes(target) == b"x"
