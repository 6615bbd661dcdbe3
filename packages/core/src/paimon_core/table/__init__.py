"""Tables: writing, committing, scanning and reading."""

from paimon_core.table._commit import TableCommit
from paimon_core.table._convert import conform_batch
from paimon_core.table._messages import CommitMessage
from paimon_core.table._read import TableRead
from paimon_core.table._scan import DataSplit, TableScan
from paimon_core.table._stream import (
    BatchScanStart,
    StreamPosition,
    StreamScan,
    plan_batch,
    resolve_batch_scan,
)
from paimon_core.table._system import SYSTEM_TABLES, SystemTable, split_system_name
from paimon_core.table._table import Table, open_table
from paimon_core.table._write import TableWrite

__all__ = [
    "SYSTEM_TABLES",
    "BatchScanStart",
    "CommitMessage",
    "DataSplit",
    "StreamPosition",
    "StreamScan",
    "SystemTable",
    "Table",
    "TableCommit",
    "TableRead",
    "TableScan",
    "TableWrite",
    "conform_batch",
    "open_table",
    "plan_batch",
    "resolve_batch_scan",
    "split_system_name",
]
