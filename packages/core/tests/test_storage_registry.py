"""Plugin discovery, scheme resolution, wrapping and caching of storage backends."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pluggy
import pytest

from paimon_core.errors import ConfigError, StorageBackendNotFound, StorageBackendUnavailable, StorageError
from paimon_core.storage import (
    BLOCKLIST_ENV,
    BackendSpec,
    Capability,
    LocalBackend,
    MemoryBackend,
    StorageBackend,
    StorageRegistry,
    _local,
    _memory,
    blocklist_from_env,
    create_plugin_manager,
    default_registry,
    get_backend,
    hookimpl,
    set_default_registry,
    unwrap,
)


class _Tagged(MemoryBackend):
    """A memory backend that remembers how it was built."""

    def __init__(self, uri: str = "", options: Mapping[str, str] | None = None, tag: str = "") -> None:
        self.uri = uri
        self.options = dict(options or {})
        self.tag = tag


def _spec(name: str, *schemes: str, prefixes: tuple[str, ...] | None = (), tag: str = "") -> BackendSpec:
    def factory(uri: str, options: Mapping[str, str]) -> StorageBackend:
        return _Tagged(uri, options, tag or name)

    return BackendSpec(name, schemes, factory, frozenset({Capability.LIST}), "pip install it", prefixes)


class _Declares:
    def __init__(self, *specs: BackendSpec) -> None:
        self.specs = list(specs)

    @hookimpl
    def paimon_storage_backends(self) -> list[BackendSpec]:
        return self.specs


def _registry(*plugins: object, builtins: bool = True) -> StorageRegistry:
    named = [(f"test-{i}", p) for i, p in enumerate(plugins)]
    return StorageRegistry(
        create_plugin_manager(plugins=named, entry_points=False, builtins=builtins, blocklist=())
    )


# --- the built-ins and the default registry ----------------------------------------------------------------


def test_default_registry_serves_file_and_memory(tmp_path: Path) -> None:
    assert {"file", "memory"} <= set(default_registry().schemes())
    assert isinstance(unwrap(get_backend(str(tmp_path))), LocalBackend)
    assert isinstance(unwrap(get_backend("file://" + tmp_path.as_posix())), LocalBackend)
    assert isinstance(unwrap(get_backend("C:\\warehouse")), LocalBackend)
    assert isinstance(unwrap(get_backend("memory://x/y")), MemoryBackend)
    assert get_backend(str(tmp_path)) is get_backend(str(tmp_path / "other"))  # cached


def test_unknown_scheme() -> None:
    with pytest.raises(StorageBackendNotFound) as raised:
        _registry().get_backend("nope://bucket/key")
    assert raised.value.scheme == "nope"
    assert "file, memory" in str(raised.value)


@pytest.mark.skipif(
    not importlib.metadata.entry_points(group="paimon.storage", name="file"),
    reason="paimon-core is not installed (no entry points), e.g. run from a bare source checkout",
)
def test_file_comes_from_the_entry_point_once() -> None:
    pm = create_plugin_manager(blocklist=())
    names = [name for name, plugin in pm.list_name_plugin() if plugin is _local]
    assert names == ["file"]  # core's entry point (installed editable), not also the fallback
    assert pm.get_plugin("memory") is _memory


def test_file_fallback_without_entry_points() -> None:
    pm = create_plugin_manager(entry_points=False, blocklist=())
    assert pm.get_plugin("file") is _local
    assert [s.name for s in StorageRegistry(pm).specs()] == ["file", "memory"]


def test_no_builtins() -> None:
    pm = create_plugin_manager(entry_points=False, builtins=False, blocklist=())
    assert StorageRegistry(pm).schemes() == []


def test_set_default_registry() -> None:
    mine = _registry(_Declares(_spec("custom", "custom")))
    previous = set_default_registry(mine)
    try:
        backend = unwrap(get_backend("custom://a/b"))
        assert isinstance(backend, _Tagged)
        assert backend.tag == "custom"
    finally:
        set_default_registry(previous)
    assert default_registry() is not mine


# --- blocklist and entry points ----------------------------------------------------------------------------


def test_blocklist_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BLOCKLIST_ENV, " s3, ,file ")
    assert blocklist_from_env() == {"s3", "file"}
    monkeypatch.delenv(BLOCKLIST_ENV)
    assert blocklist_from_env() == frozenset()


_FAKE_PLUGIN = """
from paimon_core.storage import BackendSpec, Capability, MemoryBackend, hookimpl

class FakeBackend(MemoryBackend):
    pass

def _factory(uri, options):
    return FakeBackend()

@hookimpl
def paimon_storage_backends():
    return [BackendSpec("fake", ("fake", "fk"), _factory, frozenset({Capability.LIST}), "pip install fake")]
"""


@pytest.fixture
def fake_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An installed distribution with two ``paimon.storage`` entry points: a working and a broken plugin."""
    site = tmp_path / "site"
    dist_info = site / "fake_paimon_storage-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-paimon-storage\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        "[paimon.storage]\nfake = fake_paimon_storage\nbroken = fake_paimon_storage_broken\n"
    )
    (site / "fake_paimon_storage.py").write_text(textwrap.dedent(_FAKE_PLUGIN))
    (site / "fake_paimon_storage_broken.py").write_text("raise ImportError('needs an SDK at import')\n")
    monkeypatch.syspath_prepend(str(site))
    yield site
    for module in ("fake_paimon_storage", "fake_paimon_storage_broken"):
        sys.modules.pop(module, None)


def test_entry_point_plugins_load(fake_distribution: Path) -> None:
    registry = StorageRegistry(create_plugin_manager(blocklist=["broken"]))
    assert {"fake", "fk", "file", "memory"} <= set(registry.schemes())
    backend = unwrap(registry.get_backend("fk://bucket/key"))
    assert type(backend).__name__ == "FakeBackend"


def test_broken_entry_point_says_how_to_skip_it(fake_distribution: Path) -> None:
    with pytest.raises(StorageError, match=f"{BLOCKLIST_ENV}=broken") as raised:
        create_plugin_manager(blocklist=())
    assert isinstance(raised.value.__cause__, ImportError)


def test_blocklist_env_skips_plugins(fake_distribution: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # paimon-storage's plugins too, where it is installed beside paimon-core (the lowest nox session).
    monkeypatch.setenv(BLOCKLIST_ENV, "broken,fake,memory,s3,gcs,azure")
    registry = StorageRegistry(create_plugin_manager())
    assert registry.schemes() == ["file"]
    assert "fake_paimon_storage_broken" not in sys.modules  # blocked plugins are not even imported


# --- several backends for one scheme -----------------------------------------------------------------------


def test_two_claims_need_an_option() -> None:
    registry = _registry(_Declares(_spec("fast-local", "file")))
    with pytest.raises(ConfigError) as raised:
        registry.get_backend("/tmp/x")
    assert raised.value.key == "storage.file.backend"
    assert "'file', 'fast-local'" in str(raised.value) or "'fast-local', 'file'" in str(raised.value)
    chosen = unwrap(registry.get_backend("/tmp/x", {"storage.file.backend": "fast-local"}))
    assert isinstance(chosen, _Tagged) and chosen.tag == "fast-local"
    assert isinstance(unwrap(registry.get_backend("/tmp/x", {"storage.file.backend": "file"})), LocalBackend)


def test_option_must_name_a_claimant() -> None:
    registry = _registry()
    with pytest.raises(ConfigError, match=r"storage\.file\.backend='memory'"):
        registry.get_backend("/tmp/x", {"storage.file.backend": "memory"})


def test_duplicate_backend_names() -> None:
    with pytest.raises(StorageError, match="two storage backends are named 'memory'"):
        _registry(_Declares(_spec("memory", "mem2")))


def test_plugins_must_return_specs() -> None:
    class Wrong:
        @hookimpl
        def paimon_storage_backends(self) -> list[Any]:
            return ["s3"]

    with pytest.raises(TypeError, match="BackendSpec"):
        _registry(Wrong())


def test_spec_validation() -> None:
    with pytest.raises(ValueError):
        _spec("upper", "S3")
    with pytest.raises(ValueError):
        _spec("none")


# --- factories, wrappers and the cache ---------------------------------------------------------------------


def test_factory_receives_uri_and_options() -> None:
    registry = _registry(_Declares(_spec("s3", "s3", "s3a", prefixes=("s3.",))))
    backend = unwrap(registry.get_backend("s3a://bucket/wh/t", {"s3.endpoint": "http://x", "bucket": "4"}))
    assert isinstance(backend, _Tagged)
    assert backend.uri == "s3a://bucket/wh/t"
    assert backend.options == {"s3.endpoint": "http://x", "bucket": "4"}


def test_unavailable_backend() -> None:
    def factory(uri: str, options: Mapping[str, str]) -> StorageBackend:
        raise StorageBackendUnavailable("s3", "pip install 'paimon-storage[s3]'")

    registry = _registry(_Declares(BackendSpec("s3", ("s3",), factory)))
    with pytest.raises(StorageBackendUnavailable, match=r"paimon-storage\[s3\]"):
        registry.get_backend("s3://bucket/key")


def test_cache_key() -> None:
    registry = _registry(
        _Declares(_spec("s3", "s3", prefixes=("s3.",)), _spec("anyopt", "anyopt", prefixes=None))
    )
    base = registry.get_backend("s3://bucket/a", {"s3.endpoint": "e1", "bucket": "4"})
    assert (
        registry.get_backend("s3://bucket/b", {"s3.endpoint": "e1", "bucket": "8"}) is base
    )  # irrelevant key
    assert registry.get_backend("s3://bucket/b", {"s3.endpoint": "e2"}) is not base
    assert registry.get_backend("s3://other/a", {"s3.endpoint": "e1"}) is not base  # another authority
    assert registry.get_backend("s3://bucket/a", {"s3.endpoint": "e1", "storage.faults": "1"}) is not base
    first = registry.get_backend("anyopt://x/a", {"bucket": "4"})
    assert registry.get_backend("anyopt://x/a", {"bucket": "8"}) is not first  # the spec reads every option
    registry.clear_cache()
    assert registry.get_backend("s3://bucket/a", {"s3.endpoint": "e1"}) is not base


class _Wrapper(MemoryBackend):
    def __init__(self, inner: StorageBackend, label: str) -> None:
        self.inner = inner
        self.label = label


def _wrapping_plugin(label: str, tryfirst: bool = False) -> object:
    class Plugin:
        @hookimpl(tryfirst=tryfirst)
        def paimon_storage_wrap(self, backend: StorageBackend, options: Mapping[str, str]) -> StorageBackend:
            return _Wrapper(backend, label)

    return Plugin()


def test_wrappers_chain_in_pluggy_order() -> None:
    class Abstains:
        def __init__(self) -> None:
            self.seen: list[str] = []

        @hookimpl
        def paimon_storage_wrap(self, spec: BackendSpec) -> None:
            self.seen.append(spec.name)

    abstains = Abstains()
    registry = _registry(
        _wrapping_plugin("first", tryfirst=True), _wrapping_plugin("a"), abstains, _wrapping_plugin("b")
    )
    outer = unwrap(registry.get_backend("memory://w/x"))
    labels = []
    while isinstance(outer, _Wrapper):
        labels.append(outer.label)
        outer = outer.inner
    assert isinstance(outer, MemoryBackend)
    # pluggy calls tryfirst, then the last registered first: each wraps the previous result.
    assert labels == ["a", "b", "first"]
    assert abstains.seen == ["memory"]


def test_wrapper_must_return_a_backend() -> None:
    class Bad:
        @hookimpl
        def paimon_storage_wrap(self) -> object:
            return "not a backend"

    with pytest.raises(TypeError, match="returned 'not a backend'"):
        _registry(Bad()).get_backend("memory://w/x")


def test_hook_wrappers_are_refused() -> None:
    class HookWrapper:
        @hookimpl(wrapper=True)
        def paimon_storage_wrap(self) -> Any:
            return (yield)

    with pytest.raises(TypeError, match="cannot be a hook wrapper"):
        _registry(HookWrapper()).get_backend("memory://w/x")


def test_unknown_hooks_are_refused() -> None:
    class Typo:
        @hookimpl
        def paimon_storage_backend(self) -> list[BackendSpec]:
            return []

    with pytest.raises(pluggy.PluginValidationError):
        _registry(Typo())
