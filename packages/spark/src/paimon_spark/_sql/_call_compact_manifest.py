"""``CALL sys.compact_manifest``: Paimon's Spark procedure, with its argument names and result column.

It merges the latest snapshot's data manifests into one COMPACT snapshot
(:func:`paimon_core.maintenance.compact_manifest`); ``dry_run => true`` commits nothing. Java's
``manifest_sort_*`` arguments steer a manifest sort this project does not have: giving one is an error.
"""

from __future__ import annotations

from typing import Any

from paimon_core.maintenance import compact_manifest
from paimon_spark._sql._call_spec import Call, Param, Procedure

__all__ = ["COMPACT_MANIFEST"]

_SORT_PARAMS = ("manifest_sort_enabled", "manifest_sort_partition_field", "manifest_sort_max_rewrite_size")


def _compact_manifest(call: Call) -> list[tuple[Any, ...]]:
    given = [n for n in _SORT_PARAMS if call.get(n) not in (None, "")]
    if given:
        raise call.ctx.error(
            f"sys.compact_manifest: {', '.join(given)}: manifest sorting (manifest.sort-*) is not supported "
            "here; the manifests are merged in partition order"
        )
    compact_manifest(call.table(), dry_run=bool(call.get("dry_run")))
    return [(True,)]


COMPACT_MANIFEST = Procedure(
    "compact_manifest",
    (
        Param("table", required=True),
        Param("options", aliases=("table_options",)),
        Param("dry_run", bool),
        Param("manifest_sort_enabled", bool),
        Param("manifest_sort_partition_field"),
        Param("manifest_sort_max_rewrite_size"),
    ),
    "result boolean",
    _compact_manifest,
)
"""The procedure, added to :data:`paimon_spark._sql._call.PROCEDURES`."""
