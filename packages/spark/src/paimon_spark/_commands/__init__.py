"""Row-level commands on Spark: ``merge_into``, ``update`` and ``delete_from``, each a small module over one
row-level engine (:mod:`._rowlevel`)."""

from __future__ import annotations

from paimon_spark._commands._delete import delete_from
from paimon_spark._commands._merge import merge_into
from paimon_spark._commands._rowlevel import MergeCardinalityError, MergeSummary
from paimon_spark._commands._update import update

__all__ = ["MergeCardinalityError", "MergeSummary", "delete_from", "merge_into", "update"]
