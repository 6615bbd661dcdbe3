"""Paimon's Spark procedures that ``CALL`` does not run here, each with the reason, so that calling one
says why instead of "no procedure" (:class:`~paimon_spark._sql._errors.ProcedureUnsupportedError`).

Some need what a filesystem or JDBC catalog does not have (a Hive metastore, a REST catalog's views and
functions) or a table feature this implementation refuses (row tracking, chain tables); the others apply
but are not implemented yet.
"""

from __future__ import annotations

__all__ = ["UNSUPPORTED_PROCEDURES"]

_HIVE = "it works on Hive tables and needs a Hive metastore, which the filesystem and JDBC catalogs are not"
_REST = "it needs a catalog that stores {} (Paimon's REST catalog); the filesystem and JDBC catalogs do not"
_ROW_TRACKING = "it needs row tracking (row-tracking.enabled), which this implementation does not support"
_NOT_YET = "it applies to these tables but is not implemented here yet"

UNSUPPORTED_PROCEDURES: dict[str, str] = {
    "migrate_table": _HIVE,
    "migrate_database": _HIVE,
    "repair": "it synchronizes a Hive metastore with the file system; the filesystem and JDBC catalogs "
    "keep no metastore to repair",
    "alter_view_dialect": _REST.format("views"),
    "create_function": _REST.format("functions"),
    "alter_function": _REST.format("functions"),
    "drop_function": _REST.format("functions"),
    "create_global_index": _ROW_TRACKING,
    "drop_global_index": _ROW_TRACKING,
    "reassign_row_id": _ROW_TRACKING,
    "compact_chain_table": "chain tables (chain-table.enabled) are not supported by this implementation",
    "rewrite_file_index": _NOT_YET,
    "rollback_to_watermark": _NOT_YET,
    "rename_branch": _NOT_YET,
    "merge_branch": _NOT_YET,
    "rescale": _NOT_YET,
    "remove_unexisting_files": _NOT_YET,
    "repair_earliest_snapshot": _NOT_YET,
    "materialize_deletion_vectors": _NOT_YET,
    "trigger_tag_automatic_creation": _NOT_YET,
    "copy": _NOT_YET,
}
"""Paimon's Spark procedure names (SparkProcedures) absent here, with the reason given when one is called."""
