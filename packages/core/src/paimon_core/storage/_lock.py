"""Commit locks: the plugin contract for stores that cannot create a snapshot file atomically.

A backend without :attr:`~paimon_core.storage.Capability.ATOMIC_CREATE` (say, an S3-compatible store that
ignores ``If-None-Match``) cannot publish ``snapshot-<n>`` safely on its own. With ``lock.enabled = true``
core then publishes under a :class:`CommitLock`, held per table across processes and machines, as Java
Paimon does with its catalog locks. Backends that do create atomically never need one.

Lock plugins implement the hook ``paimon_commit_locks`` and are found through the ``paimon.lock`` entry-point
group; ``lock.type`` picks one by name (``jdbc`` is PostgreSQL, in ``paimon-storage[postgres]``)::

    from paimon_core.storage import LockSpec, hookimpl

    @hookimpl
    def paimon_commit_locks() -> list[LockSpec]:
        return [LockSpec("zookeeper", make_lock, "pip install paimon-lock-zookeeper")]

A lock's ``run_with_lock(key, action)`` runs ``action`` while holding the lock named ``key`` (the table's
path). Failing to acquire within ``lock-acquire-timeout`` raises :class:`LockAcquireTimeoutError`, before
``action`` ran; a lock service that cannot be reached raises
:class:`~paimon_core.errors.LockUnavailableError` with its own error chained. Both are
:class:`~paimon_core.errors.LockAcquisitionError`: nothing was published (core also classifies any other
failure raised before ``action`` started as one).
"""

from __future__ import annotations

import importlib.metadata
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

import pluggy

from paimon_core import options as opts
from paimon_core.errors import ConfigError, LockAcquireTimeoutError, StorageError
from paimon_core.redaction import get_logger
from paimon_core.storage._registry import blocklist_from_env
from paimon_core.storage._spec import PROJECT_NAME, hookspec

logger = get_logger(__name__)

T = TypeVar("T")

LOCK_ENTRY_POINT_GROUP = "paimon.lock"
"""The entry-point group that commit-lock plugins are discovered from."""


@runtime_checkable
class CommitLock(Protocol):
    """A lock shared by every writer of a table, in any process on any machine."""

    def run_with_lock(self, key: str, action: Callable[[], T]) -> T:
        """Acquire the lock named ``key``, run ``action``, release the lock (also when ``action`` raises).

        Raises:
            LockAcquireTimeoutError: the lock was not acquired within the configured timeout.
            LockUnavailableError: the lock service could not be reached (its error chained).
            Exception: whatever ``action`` raises.
        """
        ...


LockFactory = Callable[[Mapping[str, str]], CommitLock]
"""``factory(options) -> CommitLock``: options are the table's (``lock.*``, ``lock-acquire-timeout``...).
Heavy drivers are imported here, not at plugin import; a missing one raises
:class:`paimon_core.errors.StorageBackendUnavailable` with the install hint."""


@dataclass(frozen=True)
class LockSpec:
    """A commit lock as a plugin declares it.

    Attributes:
        name: the ``lock.type`` value that selects it (``"jdbc"``).
        factory: ``factory(options) -> CommitLock``.
        install_hint: what to install when the factory's dependencies are missing.
        implicit: whether it is chosen when ``lock.type`` is not set and it is the only implicit lock
            installed (False for a lock that only its owner names, as a jdbc catalog names its own).
    """

    name: str
    factory: LockFactory
    install_hint: str = ""
    implicit: bool = True

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.lower():
            raise ValueError(f"a commit lock needs a lower-case name, got {self.name!r}")


class LockHookSpecs:
    """Hooks a commit-lock plugin implements with :data:`~paimon_core.storage.hookimpl`."""

    @hookspec
    def paimon_commit_locks(self) -> list[LockSpec]:  # type: ignore[empty-body]
        """Declare the commit locks this plugin provides (import nothing heavy here)."""


def create_lock_plugin_manager(
    *,
    plugins: Iterable[tuple[str, object]] = (),
    entry_points: bool = True,
    blocklist: Iterable[str] | None = None,
) -> pluggy.PluginManager:
    """A plugin manager with the lock hookspec, the given plugins and the ``paimon.lock`` entry points.

    Args:
        plugins: extra ``(name, plugin)`` pairs registered first.
        entry_points: load the ``paimon.lock`` entry points.
        blocklist: plugin names to skip; defaults to ``PAIMON_STORAGE_BLOCKLIST``.

    Raises:
        StorageError: an entry point failed to load.
    """
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(LockHookSpecs)
    for name in blocklist_from_env() if blocklist is None else blocklist:
        pm.set_blocked(name)
    for name, plugin in plugins:
        pm.register(plugin, name=name)
    if entry_points:
        for ep in importlib.metadata.entry_points(group=LOCK_ENTRY_POINT_GROUP):
            if pm.is_blocked(ep.name) or pm.has_plugin(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as error:
                raise StorageError(
                    f"cannot load commit-lock plugin {ep.name!r} ({ep.value}): {error}"
                ) from error
            if not pm.is_registered(plugin):
                pm.register(plugin, name=ep.name)
    pm.check_pending()
    return pm


class LockRegistry:
    """The commit locks declared by plugins, by ``lock.type``."""

    def __init__(self, plugin_manager: pluggy.PluginManager | None = None) -> None:
        self._pm = create_lock_plugin_manager() if plugin_manager is None else plugin_manager
        self._specs: dict[str, LockSpec] = {}
        for declared in self._pm.hook.paimon_commit_locks():
            for spec in declared:
                if not isinstance(spec, LockSpec):
                    raise TypeError(f"paimon_commit_locks must return LockSpec objects, got {spec!r}")
                known = self._specs.get(spec.name)
                if known is not None and known != spec:
                    raise StorageError(f"two commit locks are named {spec.name!r}: {known!r} and {spec!r}")
                self._specs[spec.name] = spec

    def names(self) -> list[str]:
        return sorted(self._specs)

    def spec_for(self, options: Mapping[str, str]) -> LockSpec:
        """The lock that ``lock.type`` names (or the only one installed, when it is not set).

        Raises:
            ConfigError: ``lock.type`` names no installed lock, or is needed to choose among several.
        """
        chosen = opts.Options.of(options).get_option(opts.LOCK_TYPE)
        known = ", ".join(self.names()) or "none (pip install 'paimon-storage[postgres]' for lock.type=jdbc)"
        if chosen is None:
            implicit = [spec for spec in self._specs.values() if spec.implicit]
            if len(implicit) == 1:
                return implicit[0]
            raise ConfigError(
                f"'lock.enabled' is set: choose a commit lock with 'lock.type' ({known})", "lock.type"
            )
        spec = self._specs.get(chosen.lower())
        if spec is None:
            raise ConfigError(
                f"no commit lock named {chosen!r} is installed; installed: {known}", "lock.type"
            )
        return spec

    def create(self, options: Mapping[str, str]) -> CommitLock:
        """Build the lock selected by ``options`` (see :meth:`spec_for`)."""
        spec = self.spec_for(options)
        lock = spec.factory(options)
        if not isinstance(lock, CommitLock):
            raise TypeError(f"commit lock {spec.name!r}: factory returned {lock!r}")
        return lock


_default_lock = threading.Lock()
_default: LockRegistry | None = None


def default_lock_registry() -> LockRegistry:
    """The process-wide lock registry, built on first use from the installed plugins."""
    global _default
    with _default_lock:
        if _default is None:
            _default = LockRegistry()
        return _default


def set_default_lock_registry(registry: LockRegistry | None) -> LockRegistry | None:
    """Replace the process-wide lock registry (``None``: rebuild on next use); returns the previous one."""
    global _default
    with _default_lock:
        previous, _default = _default, registry
        return previous


def open_commit_lock(options: Mapping[str, str]) -> CommitLock:
    """The commit lock configured by a table's options (``lock.type`` and the lock's own options).

    Raises:
        ConfigError: no lock is selected, or its options are wrong.
        StorageBackendUnavailable: the lock's driver is not installed.
    """
    return default_lock_registry().create(options)


_T = TypeVar("_T")


def poll_for_lock(
    try_once: Callable[[], _T | None], *, key: str, timeout_ms: int, max_sleep_ms: int, held: str
) -> _T:
    """Call ``try_once`` until it returns a token, sleeping with jittered exponential backoff (10 ms up to
    ``max_sleep_ms``), for at most ``timeout_ms`` (``lock-acquire-timeout``, ``lock-check-max-sleep``).

    Raises:
        LockAcquireTimeoutError: no token in time; ``held`` names the lock in the message.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    sleep_s = 0.01
    attempts = 0
    while True:
        attempts += 1
        token = try_once()
        if token is not None:
            logger.debug("%s acquired after %s attempts", held, attempts)
            return token
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LockAcquireTimeoutError(
                f"{held} still held after {timeout_ms} ms ({attempts} attempts; lock-acquire-timeout)", key
            )
        time.sleep(min(remaining, sleep_s * random.uniform(0.5, 1.0)))
        sleep_s = min(sleep_s * 2, max_sleep_ms / 1000)
