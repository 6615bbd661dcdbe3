"""``purge_files`` as a SQL table function (see :mod:`._maintenance` for the form)::

    SELECT * FROM paimon_purge_files(table => 'db.t')

It deletes all data of the table (:func:`paimon_core.maintenance.purge_files`) and returns one row
``result``: ``Success``. It also takes ``options``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from paimon_core.maintenance import purge_files
from paimon_spark._procedures._udtf import TableProcedure

__all__ = ["PURGE_PROCEDURES"]


class PurgeFilesProcedure(TableProcedure):
    def eval(self, table: str, options: str | None = None) -> Iterator[tuple[str]]:
        purge_files(self._open(table, options))
        yield ("Success",)


PURGE_PROCEDURES: Mapping[str, tuple[type[TableProcedure], str]] = {
    "paimon_purge_files": (PurgeFilesProcedure, "result string"),
}
"""UDTF name -> (class, return schema); :func:`paimon_spark.register_procedures` registers each."""
