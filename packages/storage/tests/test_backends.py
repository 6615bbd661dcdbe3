"""Backends without servers: registration, options, secrets, missing extras, a third-party plugin."""

from __future__ import annotations

import importlib
import logging
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.errors import (
    AtomicCommitUnsupportedError,
    CommitStateUnknownError,
    ConfigError,
    LockAcquisitionError,
    LockUnavailableError,
    StorageBackendUnavailable,
)
from paimon_core.storage import (
    Capability,
    LockAcquireTimeoutError,
    LockRegistry,
    LockSpec,
    MemoryBackend,
    StorageRegistry,
    create_lock_plugin_manager,
    create_plugin_manager,
    hookimpl,
    set_default_lock_registry,
    unwrap,
)
from paimon_storage import AzureBackend, GcsBackend, S3Backend
from paimon_storage.azure import azure_settings
from paimon_storage.gcs import gcs_settings
from paimon_storage.s3 import s3_settings

T = TypeVar("T")
PLUGIN_DIR = Path(__file__).parent / "plugin_example"
SECRET = "Sup3r-Secret-Value/+="


@pytest.fixture
def registry() -> StorageRegistry:
    return StorageRegistry(create_plugin_manager(blocklist=()))


# --- registration ------------------------------------------------------------------------------------------


def test_schemes_come_from_entry_points(registry: StorageRegistry) -> None:
    by_scheme = {scheme: registry.spec_for(f"{scheme}://b/k").name for scheme in registry.schemes()}
    assert {k: v for k, v in by_scheme.items() if v in ("s3", "gcs", "azure")} == {
        "s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "abfs": "azure", "abfss": "azure", "az": "azure"
    }  # fmt: skip
    for name in ("s3", "gcs", "azure"):
        spec = next(s for s in registry.specs() if s.name == name)
        assert Capability.ATOMIC_CREATE in spec.capabilities
        assert spec.install_hint == f"pip install 'paimon-storage[{name}]'"


@pytest.mark.parametrize(
    ("uri", "options", "cls"),
    [
        ("s3://bucket/wh", {"s3.endpoint": "http://127.0.0.1:1"}, S3Backend),
        ("s3a://bucket/wh", {"fs.s3a.endpoint": "http://127.0.0.1:1"}, S3Backend),
        ("gs://bucket/wh", {"fs.gs.auth.type": "UNAUTHENTICATED"}, GcsBackend),
        ("abfs://container/wh", {"azure.account-name": "acct", "azure.anonymous": "true"}, AzureBackend),
    ],
)
def test_get_backend_builds_each_backend(
    registry: StorageRegistry, uri: str, options: dict[str, str], cls: type
) -> None:
    backend = registry.get_backend(uri, options)
    assert isinstance(unwrap(backend), cls)
    assert backend.capabilities == {
        Capability.ATOMIC_CREATE, Capability.LIST, Capability.RANGED_READ, Capability.CROSS_PROCESS
    }  # fmt: skip


def test_object_keys_keep_the_callers_uri_form(registry: StorageRegistry) -> None:
    s3 = unwrap(registry.get_backend("s3a://bucket/wh", {}))
    assert isinstance(s3, S3Backend)
    assert s3.key("s3a://bucket//wh/db.db/t/") == "bucket/wh/db.db/t"
    assert s3.key("s3://bucket") == "bucket"
    azure = unwrap(
        registry.get_backend("abfss://box@acct.dfs.core.windows.net/wh", {"azure.anonymous": "true"})
    )
    assert isinstance(azure, AzureBackend)
    assert azure.key("abfss://box@acct.dfs.core.windows.net/wh/x") == "box/wh/x"
    with pytest.raises(ValueError, match="not an object-store URI"):
        s3.key("/tmp/x")


# --- options -----------------------------------------------------------------------------------------------


def test_s3_options_in_paimon_hadoop_and_fsspec_spellings() -> None:
    paimon = s3_settings(
        {
            "s3.endpoint": "http://h:9000",
            "s3.access-key": "AK",
            "s3.secret-key": "SK",
            "s3.path.style.access": "true",
        }
    )
    hadoop = s3_settings(
        {"fs.s3a.endpoint": "http://h:9000", "fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK",
         "fs.s3a.path.style.access": "true"}
    )  # fmt: skip
    fsspec = s3_settings(
        {
            "s3.endpoint_url": "http://h:9000",
            "s3.key": "AK",
            "s3.secret": "SK",
            "s3.path-style-access": "true",
        }
    )
    assert paimon == hadoop == fsspec
    assert paimon["endpoint_url"] == "http://h:9000"
    assert (paimon["key"], paimon["secret"]) == ("AK", "SK")
    assert paimon["config_kwargs"] == {"s3": {"addressing_style": "path"}}
    assert paimon["use_listings_cache"] is False
    region = s3_settings({"s3.region": "eu-west-1", "fs.s3.securityToken": "T", "s3.endpoint": "minio:9000"})
    assert region["client_kwargs"] == {"region_name": "eu-west-1"}
    assert region["token"] == "T"
    assert region["endpoint_url"] == "https://minio:9000"
    assert "key" not in s3_settings({})  # then botocore reads the environment


def test_s3_without_conditional_creates_drops_atomic_create(registry: StorageRegistry) -> None:
    backend = registry.get_backend("s3://bucket/wh", {"s3.create.conditional.enabled": "false"})
    assert Capability.ATOMIC_CREATE not in backend.capabilities
    with pytest.raises(ConfigError, match=r"s3\.create\.conditional\.enabled"):
        registry.get_backend("s3://bucket/wh2", {"s3.create.conditional.enabled": "maybe"})


def test_gcs_options() -> None:
    emulator = gcs_settings({"fs.gs.storage.root.url": "http://127.0.0.1:4443/", "fs.gs.project.id": "p"})
    assert emulator["endpoint_url"] == "http://127.0.0.1:4443"
    assert emulator["project"] == "p"
    assert emulator["token"] == "anon"  # an endpoint without credentials: an emulator
    assert gcs_settings({"fs.gs.auth.service.account.json.keyfile": "/k.json"})["token"] == "/k.json"
    assert gcs_settings({"gcs.project-id": "q"})["project"] == "q"


def test_azure_options() -> None:
    hadoop = azure_settings(
        "abfss://box@acct.dfs.core.windows.net/wh", {"fs.azure.account.key.acct.dfs.core.windows.net": "K"}
    )
    assert (hadoop["account_name"], hadoop["account_key"]) == ("acct", "K")
    plain = azure_settings("abfs://box/wh", {"azure.account-name": "acct", "azure.account-key": "K"})
    assert (plain["account_name"], plain["account_key"]) == ("acct", "K")
    assert azure_settings("az://box/wh", {"azure.connection-string": "C"})["connection_string"] == "C"


# --- secrets -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "options"),
    [
        (
            "s3://bucket/wh",
            {"s3.access-key": "AKIDEXAMPLE", "s3.secret-key": SECRET, "s3.session-token": SECRET},
        ),
        ("gs://bucket/wh", {"gcs.access-token": SECRET, "fs.gs.project.id": "p"}),
        (
            "abfs://box/wh",
            {
                "azure.connection-string": f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={SECRET};"
            },
        ),
        ("abfs://box/wh", {"azure.account-name": "acct", "azure.account-key": SECRET}),
    ],
)
def test_secrets_stay_out_of_reprs_and_logs(
    registry: StorageRegistry, uri: str, options: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        backend = registry.get_backend(uri, options)
        inner = unwrap(backend)  # the fsspec backend behind the error translation, whose fs it passes on
        assert isinstance(inner, (S3Backend, GcsBackend, AzureBackend))
        text = f"{backend!r} {backend} {inner.fs!r}"
    assert "<from options>" in repr(backend)
    assert SECRET not in text
    assert SECRET not in caplog.text
    assert all(SECRET not in str(record.args) for record in caplog.records)


# --- missing extras ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "module", "extra"),
    [("s3://b/k", "s3fs", "s3"), ("gs://b/k", "gcsfs", "gcs"), ("abfs://c/k", "adlfs", "azure")],
)
def test_a_missing_extra_names_the_pip_command(
    registry: StorageRegistry, monkeypatch: pytest.MonkeyPatch, uri: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError, as if not installed
    with pytest.raises(StorageBackendUnavailable) as caught:
        registry.get_backend(uri, {})
    assert f"pip install 'paimon-storage[{extra}]'" in str(caught.value)
    assert caught.value.name == extra


def test_a_missing_lock_driver_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from paimon_core.storage import open_commit_lock

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StorageBackendUnavailable, match=r"pip install 'paimon-storage\[postgres\]'"):
        open_commit_lock({"lock.enabled": "true", "lock.type": "jdbc"})


def test_an_unknown_lock_type_is_a_config_error() -> None:
    from paimon_core.storage import open_commit_lock

    with pytest.raises(ConfigError, match=r"no commit lock named 'zookeeper'.*jdbc"):
        open_commit_lock({"lock.enabled": "true", "lock.type": "zookeeper"})


# --- a third-party backend by entry point alone -----------------------------------------------------------


@pytest.fixture
def example_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    importlib.invalidate_caches()
    yield
    sys.modules.pop("paimon_example_store", None)


def test_a_third_party_backend_plugs_in_by_entry_point(example_plugin: None, tmp_path: Path) -> None:
    registry = StorageRegistry()  # built from the entry points now on sys.path
    assert registry.spec_for("example://wh").name == "example"
    backend = registry.get_backend("example://wh", {"example.root": str(tmp_path)})
    backend.write_if_absent("example://wh/a/b", b"via the plugin")
    assert (tmp_path / "wh" / "a" / "b").read_bytes() == b"via the plugin"
    with pytest.raises(FileExistsError):
        backend.write_if_absent("example://wh/a/b", b"again")


def test_tables_work_on_a_third_party_backend(example_plugin: None, tmp_path: Path) -> None:
    from paimon_core.storage import set_default_registry

    previous = set_default_registry(StorageRegistry())
    try:
        catalog = Catalog.open("example://wh", create=True, **{"example.root": str(tmp_path)})
        catalog.create_database("db")
        table = catalog.create_table(
            "db.t", pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_keys=["p"]
        )
        table.append(pa.table({"id": [1, 2], "p": ["x", "y"]}))
        table.append(pa.table({"id": [3], "p": ["x"]}))
        assert sorted(catalog.get_table("db.t").to_arrow().column("id").to_pylist()) == [1, 2, 3]
        assert (tmp_path / "wh" / "db.db" / "t" / "snapshot" / "snapshot-2").is_file()
    finally:
        set_default_registry(previous)


def test_commits_are_refused_without_atomic_create_unless_locked() -> None:
    class NoAtomicCreate(MemoryBackend):
        capabilities = frozenset({Capability.LIST})

    catalog = Catalog("memory://refused/wh", NoAtomicCreate(), {})
    catalog.create_database("db")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    with pytest.raises(AtomicCommitUnsupportedError, match=r"lock\.enabled"):
        table.append(pa.table({"id": [1]}))
    assert table.latest_snapshot() is None
    locked = catalog.get_table("db.t", **{"lock.enabled": "true", "lock.type": "nope"})
    with pytest.raises(ConfigError, match="no commit lock named 'nope'"):
        locked.append(pa.table({"id": [1]}))


class _RecordingLock:
    """A lock plugin for tests: records what ran under it; can refuse to be acquired."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.refuse = options.get("lock-acquire-timeout") == "1 ms"
        self.held: list[str] = []

    def run_with_lock(self, key: str, action: Callable[[], T]) -> T:
        if self.refuse:
            raise LockAcquireTimeoutError(f"{key} is held elsewhere", key)
        self.held.append(key)
        return action()


class _LockPlugin:
    locks: ClassVar[list[_RecordingLock]] = []

    @hookimpl
    def paimon_commit_locks(self) -> list[LockSpec]:
        def make(options: Mapping[str, str]) -> _RecordingLock:
            lock = _RecordingLock(options)
            self.locks.append(lock)
            return lock

        return [LockSpec("recording", make)]


@pytest.fixture
def recording_lock() -> Iterator[type[_LockPlugin]]:
    _LockPlugin.locks = []
    previous = set_default_lock_registry(
        LockRegistry(create_lock_plugin_manager(plugins=[("recording", _LockPlugin())], entry_points=False))
    )
    yield _LockPlugin
    set_default_lock_registry(previous)


def test_a_store_without_atomic_create_publishes_under_the_lock(recording_lock: type[_LockPlugin]) -> None:
    class NoAtomicCreate(MemoryBackend):
        capabilities = frozenset({Capability.LIST})

    catalog = Catalog(f"memory://locked-{uuid.uuid4().hex}/wh", NoAtomicCreate(), {})
    catalog.create_database("db")
    catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    table = catalog.get_table(
        "db.t", **{"lock.enabled": "true"}
    )  # the only lock installed: no lock.type needed
    table.append(pa.table({"id": [1]}))
    table.append(pa.table({"id": [2]}))
    assert [s.id for s in table.snapshots()] == [1, 2]
    assert [key for lock in recording_lock.locks for key in lock.held] == [table.path, table.path]

    refused = catalog.get_table("db.t", **{"lock.enabled": "true", "lock-acquire-timeout": "1 ms"})
    with pytest.raises(
        LockAcquireTimeoutError, match="held elsewhere"
    ):  # not an unknown outcome: nothing ran
        refused.append(pa.table({"id": [3]}))
    assert [s.id for s in table.snapshots()] == [1, 2]


def test_stores_with_atomic_create_need_no_lock(recording_lock: type[_LockPlugin]) -> None:
    catalog = Catalog(f"memory://unlocked-{uuid.uuid4().hex}/wh", MemoryBackend(), {})
    catalog.create_database("db")
    catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    catalog.get_table("db.t", **{"lock.enabled": "true"}).append(pa.table({"id": [1]}))
    assert recording_lock.locks == []


# --- a commit lock that is never acquired publishes nothing and leaves nothing ------------------------------


class _FailingLock:
    """A lock plugin whose service fails before the lock is held, with the error ``fail`` raises."""

    def __init__(self, fail: Callable[[str], Exception]) -> None:
        self.fail = fail

    def run_with_lock(self, key: str, action: Callable[[], T]) -> T:
        raise self.fail(key)


@pytest.fixture
def failing_lock() -> Iterator[None]:
    class Plugin:
        @hookimpl
        def paimon_commit_locks(self) -> list[LockSpec]:
            failures: dict[str, Callable[[str], Exception]] = {
                "timeout": lambda key: LockAcquireTimeoutError(f"{key} is held elsewhere", key),
                "refused": lambda _key: ConnectionRefusedError(f"lock service at user:{SECRET}@host refused"),
                "broken": lambda _key: RuntimeError(f"lock service broke (password={SECRET})"),
            }

            def failing(name: str, fail: Callable[[str], Exception]) -> LockSpec:
                return LockSpec(name, lambda _options: _FailingLock(fail))

            return [failing(name, fail) for name, fail in failures.items()]

    registry = LockRegistry(create_lock_plugin_manager(plugins=[("failing", Plugin())], entry_points=True))
    previous = set_default_lock_registry(registry)
    yield
    set_default_lock_registry(previous)


def _closed_port() -> Iterator[int]:
    """A local TCP port bound but not listening while the caller uses it: connecting is refused."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def closed_port() -> Iterator[int]:
    yield from _closed_port()


def _files(storage: MemoryBackend, path: str) -> set[str]:
    return {info.path for info in storage.list_prefix(path)}


@pytest.mark.parametrize("lock_type", ["jdbc", "timeout", "refused", "broken"])
@pytest.mark.parametrize("shape", ["append", "primary-key", "overwrite"])
def test_a_lock_never_acquired_publishes_nothing_and_cleans_up(
    failing_lock: None, closed_port: int, lock_type: str, shape: str
) -> None:
    class NoAtomicCreate(MemoryBackend):
        capabilities = frozenset({Capability.LIST})

    storage = NoAtomicCreate()
    catalog = Catalog(f"memory://unreachable-{uuid.uuid4().hex}/wh", storage, {})
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    keys: dict[str, Any] = (
        {"primary_keys": ["id"], "options": {"bucket": "1"}} if shape == "primary-key" else {}
    )
    created = catalog.create_table("db.t", schema, **keys)
    before = _files(storage, created.path)
    table = catalog.get_table(
        "db.t",
        **{
            "lock.enabled": "true",
            "lock.type": lock_type,
            # A real PostgreSQL URI on a port where nothing listens; the password must not show.
            "lock.jdbc.uri": f"jdbc:postgresql://paimon:{SECRET}@127.0.0.1:{closed_port}/db",
            "jdbc.password": SECRET,
        },
    )
    data = pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema)
    with pytest.raises(LockAcquisitionError) as caught:
        if shape == "overwrite":
            table.overwrite(data)
        else:
            table.append(data)
    error = caught.value
    assert not isinstance(error, CommitStateUnknownError)
    assert error.key == table.path
    assert "nothing was published" in str(error) or lock_type == "timeout"
    if lock_type == "timeout":
        assert isinstance(error, TimeoutError)
    else:
        assert error.__cause__ is not None  # the lock service's own error, chained
    for shown in (str(error), repr(error.__cause__), str(error.__cause__)):
        assert SECRET not in shown
    assert table.latest_snapshot() is None
    assert _files(storage, table.path) == before  # no data file, manifest or manifest list left behind


def test_an_unreachable_jdbc_lock_names_the_database_and_chains_its_error(closed_port: int) -> None:
    from paimon_storage.jdbc_lock import JdbcCommitLock

    lock = JdbcCommitLock({"lock.jdbc.uri": f"jdbc:postgresql://paimon:{SECRET}@127.0.0.1:{closed_port}/db"})
    ran: list[str] = []
    with pytest.raises(
        LockUnavailableError,
        match=rf"cannot connect to postgresql://paimon:\*\*\*@127\.0\.0\.1:{closed_port}/db",
    ) as caught:
        lock.run_with_lock("db.t", lambda: ran.append("ran"))
    assert ran == []
    assert isinstance(caught.value, ConnectionError)
    assert type(caught.value.__cause__).__module__.startswith("psycopg")
    assert SECRET not in str(caught.value)
