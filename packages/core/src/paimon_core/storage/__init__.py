"""Storage: the backend protocol, the plugin hooks, and the built-in ``file`` and ``memory`` backends.

Core reads and writes through :func:`get_backend`, which maps a path's scheme to a backend declared by a
plugin (hook ``paimon_storage_backends``, entry-point group ``paimon.storage``). A snapshot is published with
:meth:`StorageBackend.write_if_absent`, the one commit primitive.

A third-party backend::

    from paimon_core.storage import BackendSpec, Capability, hookimpl

    @hookimpl
    def paimon_storage_backends() -> list[BackendSpec]:
        return [BackendSpec("mystore", ("my",), make_backend, frozenset({Capability.ATOMIC_CREATE}), "pip install x")]

declared in its ``pyproject.toml`` as ``[project.entry-points."paimon.storage"] mystore = "my_package.plugin"``,
and tested by subclassing ``paimon_testing.storage.StorageBackendTests``.

A backend that cannot create atomically omits ``Capability.ATOMIC_CREATE``; commits to it then need a commit
lock (``lock.enabled``): see :class:`CommitLock` and the ``paimon.lock`` entry-point group.
"""

from __future__ import annotations

from paimon_core.errors import LockAcquireTimeoutError, LockAcquisitionError, LockUnavailableError
from paimon_core.redaction import RedactedCause, Redactor
from paimon_core.storage._errors import ErrorTranslatingBackend, unwrap
from paimon_core.storage._local import LocalBackend
from paimon_core.storage._lock import (
    LOCK_ENTRY_POINT_GROUP,
    CommitLock,
    LockFactory,
    LockHookSpecs,
    LockRegistry,
    LockSpec,
    create_lock_plugin_manager,
    default_lock_registry,
    open_commit_lock,
    poll_for_lock,
    set_default_lock_registry,
)
from paimon_core.storage._memory import MemoryBackend, clear_memory_store
from paimon_core.storage._paths import (
    join_path,
    local_path,
    parent_path,
    path_name,
    shown_path,
    uri_authority,
    uri_scheme,
)
from paimon_core.storage._registry import (
    BLOCKLIST_ENV,
    StorageRegistry,
    blocklist_from_env,
    create_plugin_manager,
    default_registry,
    get_backend,
    set_default_registry,
)
from paimon_core.storage._spec import (
    ENTRY_POINT_GROUP,
    PROJECT_NAME,
    BackendFactory,
    BackendSpec,
    Capability,
    FileInfo,
    StorageBackend,
    StorageHookSpecs,
    hookimpl,
    hookspec,
)

__all__ = [
    "BLOCKLIST_ENV",
    "ENTRY_POINT_GROUP",
    "LOCK_ENTRY_POINT_GROUP",
    "PROJECT_NAME",
    "BackendFactory",
    "BackendSpec",
    "Capability",
    "CommitLock",
    "ErrorTranslatingBackend",
    "FileInfo",
    "LocalBackend",
    "LockAcquireTimeoutError",
    "LockAcquisitionError",
    "LockFactory",
    "LockHookSpecs",
    "LockRegistry",
    "LockSpec",
    "LockUnavailableError",
    "MemoryBackend",
    "RedactedCause",
    "Redactor",
    "StorageBackend",
    "StorageHookSpecs",
    "StorageRegistry",
    "blocklist_from_env",
    "clear_memory_store",
    "create_lock_plugin_manager",
    "create_plugin_manager",
    "default_lock_registry",
    "default_registry",
    "get_backend",
    "hookimpl",
    "hookspec",
    "join_path",
    "local_path",
    "open_commit_lock",
    "parent_path",
    "path_name",
    "poll_for_lock",
    "set_default_lock_registry",
    "set_default_registry",
    "shown_path",
    "unwrap",
    "uri_authority",
    "uri_scheme",
]
