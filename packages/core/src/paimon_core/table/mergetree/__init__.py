"""The merge tree of primary-key tables (docs/primary-key-tables.md).

It writes and reads files; it never commits: writers hand :class:`~paimon_core.table.CommitMessage`s to
the table's committer like every other writer.
"""

from paimon_core.table.mergetree._dynamic_bucket import read_hash_index
from paimon_core.table.mergetree._layout import KeyValueLayout
from paimon_core.table.mergetree._merge import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from paimon_core.table.mergetree._postpone import postpone_write_table, writer_prefix
from paimon_core.table.mergetree._reader import KeyValueTableRead, row_kind_text
from paimon_core.table.mergetree._validate import check_append_table, check_primary_key_table
from paimon_core.table.mergetree._writer import (
    KeyValueTableWrite,
    MergeTreeCompactTask,
    MergeTreeWriter,
    needs_full_compaction,
)

__all__ = [
    "DELETE",
    "INSERT",
    "UPDATE_AFTER",
    "UPDATE_BEFORE",
    "KeyValueLayout",
    "KeyValueTableRead",
    "KeyValueTableWrite",
    "MergeTreeCompactTask",
    "MergeTreeWriter",
    "check_append_table",
    "check_primary_key_table",
    "needs_full_compaction",
    "postpone_write_table",
    "read_hash_index",
    "row_kind_text",
    "writer_prefix",
]
