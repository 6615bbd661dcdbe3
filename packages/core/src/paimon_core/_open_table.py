"""Opening a table outside any catalog, by its URI, with the standard hooks.

Above ``table/`` (which never imports compaction or maintenance) so that it may hand the table the
standard hooks, as the catalog does (see :mod:`paimon_core.table._store`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paimon_core._standard_hooks import STANDARD_HOOKS
from paimon_core.table import Table

__all__ = ["open_table"]


def open_table(uri: str, storage_options: Mapping[str, str] | None = None, **dynamic_options: Any) -> Table:
    """Open a table by its directory URI (``/warehouse/db.db/t``, ``s3://bucket/wh/db.db/t``).

    Its commits expire snapshots and compact as a catalog's tables do (the standard hooks).

    Raises:
        TableNotFoundError: no table (no schema) is there.
    """
    return Table.open(uri, storage_options, dynamic_options=dynamic_options, hooks=STANDARD_HOOKS)
