"""``compact_manifest`` as a SQL table function (see :mod:`._maintenance` for the form)::

    SELECT * FROM paimon_compact_manifest(table => 'db.t')
    SELECT * FROM paimon_compact_manifest(table => 'db.t', dry_run => true)

It merges the latest snapshot's data manifests into one COMPACT snapshot
(:func:`paimon_core.maintenance.compact_manifest`) and returns one row ``result``: true. It also takes
``options``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from paimon_core.maintenance import compact_manifest
from paimon_spark._procedures._udtf import TableProcedure

__all__ = ["MANIFEST_PROCEDURES"]


class CompactManifestProcedure(TableProcedure):
    def eval(
        self, table: str, dry_run: bool | None = None, options: str | None = None
    ) -> Iterator[tuple[bool]]:
        compact_manifest(self._open(table, options), dry_run=bool(dry_run))
        yield (True,)


MANIFEST_PROCEDURES: Mapping[str, tuple[type[TableProcedure], str]] = {
    "paimon_compact_manifest": (CompactManifestProcedure, "result boolean"),
}
"""UDTF name -> (class, return schema); :func:`paimon_spark.register_procedures` registers each."""
