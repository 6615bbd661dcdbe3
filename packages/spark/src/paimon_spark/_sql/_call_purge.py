"""``CALL sys.purge_files(table => 'db.t')``: Paimon's Spark procedure, with its argument and result column.

It deletes all data of the table (:func:`paimon_core.maintenance.purge_files`: branches, tags, consumers,
live files, changelog, old snapshots and unused files) and returns one row ``Success``, as Java's does.
"""

from __future__ import annotations

from typing import Any

from paimon_core.maintenance import purge_files
from paimon_spark._sql._call_spec import Call, Param, Procedure

__all__ = ["PURGE_FILES"]


def _purge_files(call: Call) -> list[tuple[Any, ...]]:
    purge_files(call.table())
    return [("Success",)]


PURGE_FILES = Procedure("purge_files", (Param("table", required=True),), "result string", _purge_files)
"""The procedure, added to :data:`paimon_spark._sql._call.PROCEDURES`."""
