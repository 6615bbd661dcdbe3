"""Optional libraries: imported when a call needs them, with an install hint when they are missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from paimon_core.errors import MissingDependencyError

__all__ = ["import_optional"]


def import_optional(module: str, purpose: str, extra: str) -> ModuleType:
    """Import ``module`` for ``purpose``.

    Raises:
        MissingDependencyError: it is not installed; the message names ``paimon-core[<extra>]``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{purpose} needs {module}, which is not installed: pip install 'paimon-core[{extra}]'"
        ) from exc
