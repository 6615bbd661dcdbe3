"""Reading backend settings from catalog options, in Paimon's, Hadoop's and fsspec's spellings."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from types import ModuleType

from paimon_core.errors import ConfigError, StorageBackendUnavailable
from paimon_core.options import parse_bool, parse_memory_size


def install_hint(extra: str) -> str:
    """The exact command that installs an extra of this distribution."""
    return f"pip install 'paimon-storage[{extra}]'"


def require(backend: str, extra: str, *modules: str) -> list[ModuleType]:
    """Import a backend's SDK modules, or raise :class:`StorageBackendUnavailable` naming the extra to install."""
    loaded = []
    for module in modules:
        try:
            loaded.append(importlib.import_module(module))
        except ImportError as error:
            raise StorageBackendUnavailable(
                backend, f"{install_hint(extra)} (cannot import {module}: {error})"
            ) from error
    return loaded


def variants(prefixes: Iterable[str], names: Iterable[str]) -> tuple[str, ...]:
    """Every ``prefix + name`` combination, prefixes first: the keys one setting may be given under."""
    names = tuple(names)
    return tuple(prefix + name for prefix in prefixes for name in names)


class OptionReader:
    """Looks settings up under several keys; the first key present wins."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = options

    def get(self, keys: Iterable[str]) -> str | None:
        for key in keys:
            value = self.options.get(key)
            if value is not None and str(value).strip() != "":
                return str(value).strip()
        return None

    def _key_of(self, keys: Iterable[str]) -> str:
        return next(k for k in keys if self.options.get(k) not in (None, ""))

    def flag(self, keys: tuple[str, ...], default: bool) -> bool:
        value = self.get(keys)
        if value is None:
            return default
        try:
            return parse_bool(value)
        except ValueError as error:
            key = self._key_of(keys)
            raise ConfigError(f"invalid value for option {key!r}: {error}", key) from None

    def size(self, keys: tuple[str, ...], default: int) -> int:
        value = self.get(keys)
        if value is None:
            return default
        try:
            size = parse_memory_size(value)
        except ValueError as error:
            key = self._key_of(keys)
            raise ConfigError(f"invalid value for option {key!r}: {error}", key) from None
        if size <= 0:
            key = self._key_of(keys)
            raise ConfigError(f"option {key!r} must be positive", key)
        return size
