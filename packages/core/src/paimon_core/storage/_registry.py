"""Finding backends: the pluggy plugin manager, the scheme registry and the backend cache.

The plugin manager is built lazily, on the first :func:`get_backend`, never at import. Built-in ``memory`` is
registered directly; ``file`` comes through core's ``paimon.storage`` entry point, or directly when entry points
are not installed (a source checkout on ``sys.path``). Tests build their own :class:`StorageRegistry`.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from types import ModuleType

import pluggy

from paimon_core.errors import ConfigError, StorageBackendNotFound, StorageError
from paimon_core.options import close_matches
from paimon_core.redaction import get_logger
from paimon_core.storage import _local, _memory
from paimon_core.storage._errors import ErrorTranslatingBackend, Redactor, translated
from paimon_core.storage._paths import uri_authority, uri_scheme
from paimon_core.storage._spec import (
    ENTRY_POINT_GROUP,
    PROJECT_NAME,
    BackendSpec,
    StorageBackend,
    StorageHookSpecs,
)

logger = get_logger(__name__)

BLOCKLIST_ENV = "PAIMON_STORAGE_BLOCKLIST"
"""Environment variable: comma-separated plugin names (entry-point names, or ``memory``) not to load."""

_BUILTINS: tuple[tuple[str, ModuleType], ...] = (("memory", _memory),)
_FALLBACKS: tuple[tuple[str, ModuleType], ...] = (("file", _local),)

_CacheKey = tuple[str, str, str, tuple[tuple[str, str], ...]]


def blocklist_from_env(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The plugin names listed in ``PAIMON_STORAGE_BLOCKLIST``."""
    text = (os.environ if environ is None else environ).get(BLOCKLIST_ENV, "")
    return frozenset(name.strip() for name in text.split(",") if name.strip())


def create_plugin_manager(
    *,
    plugins: Iterable[tuple[str, object]] = (),
    entry_points: bool = True,
    builtins: bool = True,
    blocklist: Iterable[str] | None = None,
) -> pluggy.PluginManager:
    """Build a plugin manager with the storage hookspecs and the plugins to use.

    Args:
        plugins: extra ``(name, plugin)`` pairs registered first (a plugin is a module or an object with
            :data:`hookimpl` functions).
        entry_points: load the ``paimon.storage`` entry points.
        builtins: register the built-in backends (``memory``, and ``file`` if no entry point provided it).
        blocklist: plugin names to skip; defaults to :data:`BLOCKLIST_ENV`.

    Raises:
        StorageError: an entry point failed to load (the message says how to block it).
    """
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(StorageHookSpecs)
    for name in blocklist_from_env() if blocklist is None else blocklist:
        pm.set_blocked(name)
    for name, plugin in plugins:
        pm.register(plugin, name=name)
    if builtins:
        for name, module in _BUILTINS:
            _register_once(pm, name, module)
    if entry_points:
        _load_entry_points(pm)
    if builtins:
        for name, module in _FALLBACKS:
            _register_once(pm, name, module)
    pm.check_pending()
    return pm


def _register_once(pm: pluggy.PluginManager, name: str, plugin: object) -> None:
    if pm.is_blocked(name) or pm.has_plugin(name) or pm.is_registered(plugin):
        return
    pm.register(plugin, name=name)


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if pm.is_blocked(ep.name):
            logger.debug("storage plugin %s is blocked by %s", ep.name, BLOCKLIST_ENV)
            continue
        if pm.has_plugin(ep.name):  # the same distribution seen twice on sys.path
            continue
        try:
            plugin = ep.load()
        except Exception as error:
            raise StorageError(
                f"cannot load storage plugin {ep.name!r} ({ep.value}): {error}; "
                f"set {BLOCKLIST_ENV}={ep.name} to skip it"
            ) from error
        _register_once(pm, ep.name, plugin)


class StorageRegistry:
    """Backend specs by scheme, and the backends built from them (cached).

    Args:
        plugin_manager: where the specs and wrappers come from; defaults to :func:`create_plugin_manager()`.

    Raises:
        StorageError: two different specs have one name.
        TypeError: a plugin returned something other than :class:`BackendSpec` objects.
    """

    def __init__(self, plugin_manager: pluggy.PluginManager | None = None) -> None:
        self._pm = create_plugin_manager() if plugin_manager is None else plugin_manager
        self._lock = threading.Lock()
        self._cache: dict[_CacheKey, StorageBackend] = {}
        self._specs: dict[str, BackendSpec] = {}
        self._by_scheme: dict[str, list[BackendSpec]] = {}
        for declared in self._pm.hook.paimon_storage_backends():
            for spec in declared:
                self._add(spec)

    def _add(self, spec: object) -> None:
        if not isinstance(spec, BackendSpec):
            raise TypeError(f"paimon_storage_backends must return BackendSpec objects, got {spec!r}")
        known = self._specs.get(spec.name)
        if known == spec:
            return
        if known is not None:
            raise StorageError(f"two storage backends are named {spec.name!r}: {known!r} and {spec!r}")
        self._specs[spec.name] = spec
        for scheme in spec.schemes:
            self._by_scheme.setdefault(scheme, []).append(spec)

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        return self._pm

    def specs(self) -> list[BackendSpec]:
        """Every registered spec, by name."""
        return [self._specs[name] for name in sorted(self._specs)]

    def schemes(self) -> list[str]:
        """Every scheme some backend claims."""
        return sorted(self._by_scheme)

    def storage_option_keys(self) -> tuple[tuple[str, ...], frozenset[str]]:
        """(prefixes, declared keys) of every backend's options, ``storage.`` included in the prefixes."""
        prefixes: list[str] = ["storage."]
        keys: set[str] = set()
        for spec in self.specs():
            prefixes += spec.option_prefixes or ()
            keys |= spec.option_keys or set()
        return tuple(prefixes), frozenset(keys)

    def spec_for(self, uri: str, options: Mapping[str, str] | None = None) -> BackendSpec:
        """The spec that serves ``uri``'s scheme.

        Raises:
            StorageBackendNotFound: no backend claims the scheme.
            ConfigError: several claim it and ``storage.<scheme>.backend`` does not pick one of them.
        """
        scheme = uri_scheme(uri)
        claims = self._by_scheme.get(scheme)
        if not claims:
            raise StorageBackendNotFound(scheme, list(self._by_scheme))
        key = f"storage.{scheme}.backend"
        chosen = (options or {}).get(key)
        names = ", ".join(repr(spec.name) for spec in claims)
        if chosen is not None:
            for spec in claims:
                if spec.name == chosen:
                    return spec
            raise ConfigError(
                f"option {key}={chosen!r} names none of the backends for {scheme!r}: {names}", key
            )
        if len(claims) > 1:
            raise ConfigError(f"storage backends {names} all claim scheme {scheme!r}; set option {key}", key)
        return claims[0]

    def get_backend(self, uri: str, options: Mapping[str, str] | None = None) -> StorageBackend:
        """The backend for ``uri`` (built by its spec's factory, then wrapped by plugins; cached). Its failures
        are :class:`~paimon_core.errors.StorageError` naming the call and the path, without credentials
        (:class:`~paimon_core.storage.ErrorTranslatingBackend`).

        Backends are cached per spec, scheme, authority (``bucket`` in ``s3://bucket/k``) and the values of the
        options the spec reads (see :attr:`BackendSpec.option_prefixes`) and of options under ``storage.``.

        Raises:
            StorageBackendNotFound: no backend claims the scheme.
            StorageBackendUnavailable: the backend's dependencies are not installed.
            ConfigError: the scheme is claimed twice and not disambiguated, or the factory rejects an option.
        """
        options = {} if options is None else options
        spec = self.spec_for(uri, options)
        check_option_keys(spec, options)
        key = (spec.name, uri_scheme(uri), uri_authority(uri), _relevant_options(spec, options))
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        backend = ErrorTranslatingBackend(
            self._wrap(self._build(spec, uri, options), spec, options), spec.name, options
        )
        if logger.isEnabledFor(logging.DEBUG):
            redact = Redactor.of(options)
            logger.debug("storage backend %s for %s: %s", spec.name, redact(uri), redact(repr(backend)))
        with self._lock:
            return self._cache.setdefault(key, backend)

    @staticmethod
    def _build(spec: BackendSpec, uri: str, options: Mapping[str, str]) -> StorageBackend:
        redact = Redactor.of(options)
        return translated(spec.name, "set up storage for", uri, redact, spec.factory, uri, options)

    def _wrap(self, backend: StorageBackend, spec: BackendSpec, options: Mapping[str, str]) -> StorageBackend:
        # The hook is chained by hand: pluggy would give every implementation the same unwrapped backend.
        for impl in reversed(self._pm.hook.paimon_storage_wrap.get_hookimpls()):
            if impl.hookwrapper or impl.wrapper:
                raise TypeError(f"plugin {impl.plugin_name!r}: paimon_storage_wrap cannot be a hook wrapper")
            args = {"backend": backend, "spec": spec, "options": options}
            wrapped = impl.function(*(args[name] for name in impl.argnames))
            if wrapped is None:
                continue
            if not isinstance(wrapped, StorageBackend):
                raise TypeError(f"plugin {impl.plugin_name!r}: paimon_storage_wrap returned {wrapped!r}")
            backend = wrapped
        return backend

    def clear_cache(self) -> None:
        """Forget the cached backends (the next :meth:`get_backend` builds new ones)."""
        with self._lock:
            self._cache.clear()


def check_option_keys(spec: BackendSpec, options: Mapping[str, str]) -> None:
    """Refuse keys under the backend's prefixes that it does not declare.

    Raises:
        ConfigError: an unknown key, with the close matches among the declared ones.
    """
    if spec.option_keys is None or not spec.option_prefixes:
        return
    for key in options:
        if key.startswith(spec.option_prefixes) and key not in spec.option_keys:
            raise ConfigError(
                f"unknown {spec.name} storage option {key!r}{close_matches(key, spec.option_keys)}", key
            )


def _relevant_options(spec: BackendSpec, options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    prefixes = spec.option_prefixes
    return tuple(
        sorted(
            (key, value)
            for key, value in options.items()
            if key.startswith("storage.") or prefixes is None or key.startswith(prefixes)
        )
    )


_default_lock = threading.Lock()
_default: StorageRegistry | None = None


def default_registry() -> StorageRegistry:
    """The process-wide registry, built on first use from the installed plugins."""
    global _default
    with _default_lock:
        if _default is None:
            _default = StorageRegistry()
        return _default


def set_default_registry(registry: StorageRegistry | None) -> StorageRegistry | None:
    """Replace the process-wide registry (``None``: rebuild on next use); returns the previous one.

    For tests, and for applications that register plugins by hand.
    """
    global _default
    with _default_lock:
        previous, _default = _default, registry
        return previous


def get_backend(uri: str, options: Mapping[str, str] | None = None) -> StorageBackend:
    """The storage backend for ``uri`` from the process-wide registry (see :meth:`StorageRegistry.get_backend`).

    Raises:
        StorageBackendNotFound: no backend claims the scheme.
        StorageBackendUnavailable: the backend's dependencies are not installed.
        ConfigError: two backends claim the scheme and ``storage.<scheme>.backend`` does not pick one.
    """
    return default_registry().get_backend(uri, options)
