"""The public surface of paimon_core.storage."""

from __future__ import annotations

import importlib

import paimon_core.storage as storage


def test_all_names_exist() -> None:
    module = importlib.import_module("paimon_core.storage")
    missing = [name for name in storage.__all__ if not hasattr(module, name)]
    assert missing == []
    assert len(set(storage.__all__)) == len(storage.__all__)


def test_hookspecs() -> None:
    pm = storage.create_plugin_manager(entry_points=False, builtins=False, blocklist=())
    assert pm.project_name == storage.PROJECT_NAME == "paimon"
    assert hasattr(pm.hook, "paimon_storage_backends")
    assert hasattr(pm.hook, "paimon_storage_wrap")


def test_builtin_backends_satisfy_the_protocol() -> None:
    assert isinstance(storage.LocalBackend(), storage.StorageBackend)
    assert isinstance(storage.MemoryBackend(), storage.StorageBackend)
