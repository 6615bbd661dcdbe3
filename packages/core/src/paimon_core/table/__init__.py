"""Tables: writing, committing, scanning and reading.

:class:`TableStore` is a table's context, which every operation takes; :class:`Table` is the facade over it
that composes the operations; :class:`CommitPipeline` is the one way from written messages to snapshots.
"""

from paimon_core.table._binlog import BinlogTable, data_view
from paimon_core.table._compacted_changelog import (
    CompactedChangelogNames,
    changelog_slice,
    is_compacted_changelog,
    real_changelog_path,
)
from paimon_core.table._convert import conform_batch
from paimon_core.table._data_split import DataSplit
from paimon_core.table._entries import (
    LiveFileIndex,
    explain_missing,
    live_entries,
    manifest_metas,
    read_entries,
)
from paimon_core.table._follow import TableStream
from paimon_core.table._global import GLOBAL_SYSTEM_TABLES, SYSTEM_DATABASE, GlobalSystemTable
from paimon_core.table._messages import CommitMessage
from paimon_core.table._pipeline import CommitPipeline
from paimon_core.table._read import TableRead
from paimon_core.table._scan import TableScan
from paimon_core.table._store import (
    POSTPONE_BUCKET,
    TableHooks,
    TableStore,
    check_table_features,
    default_hooks,
    set_default_hooks,
)
from paimon_core.table._stream import (
    BatchScanStart,
    StreamPosition,
    StreamScan,
    plan_batch,
    resolve_batch_scan,
)
from paimon_core.table._system import DATA_VIEWS, SYSTEM_TABLES, SystemTable, split_system_name
from paimon_core.table._table import Table, open_table
from paimon_core.table._time_travel import TimeTravel
from paimon_core.table._views import AuditLogTable, DataView, ReadOptimizedTable
from paimon_core.table._write import DataFileWriter, DictionaryChoice, TableWrite
from paimon_core.table.commit import TableCommit
from paimon_core.table.mergetree import (
    KeyValueTableRead,
    KeyValueTableWrite,
    MergeTreeCompactTask,
    check_append_table,
    check_primary_key_table,
    needs_full_compaction,
)

__all__ = [
    "DATA_VIEWS",
    "GLOBAL_SYSTEM_TABLES",
    "POSTPONE_BUCKET",
    "SYSTEM_DATABASE",
    "SYSTEM_TABLES",
    "AuditLogTable",
    "BatchScanStart",
    "BinlogTable",
    "CommitMessage",
    "CommitPipeline",
    "CompactedChangelogNames",
    "DataFileWriter",
    "DataSplit",
    "DataView",
    "DictionaryChoice",
    "GlobalSystemTable",
    "KeyValueTableRead",
    "KeyValueTableWrite",
    "LiveFileIndex",
    "MergeTreeCompactTask",
    "ReadOptimizedTable",
    "StreamPosition",
    "StreamScan",
    "SystemTable",
    "Table",
    "TableCommit",
    "TableHooks",
    "TableRead",
    "TableScan",
    "TableStore",
    "TableStream",
    "TableWrite",
    "TimeTravel",
    "changelog_slice",
    "check_append_table",
    "check_primary_key_table",
    "check_table_features",
    "conform_batch",
    "data_view",
    "default_hooks",
    "explain_missing",
    "is_compacted_changelog",
    "live_entries",
    "manifest_metas",
    "needs_full_compaction",
    "open_table",
    "plan_batch",
    "read_entries",
    "real_changelog_path",
    "resolve_batch_scan",
    "set_default_hooks",
    "split_system_name",
]
