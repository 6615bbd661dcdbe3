"""paimon-core: Apache Paimon tables from Python.

Quick tour::

    from paimon_core import Catalog
    catalog = Catalog.open("/tmp/warehouse", create=True)
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table("db.t", schema, partition_keys=["dt"])
    table.append(arrow_table)
    table.to_arrow(filter=[("dt", "=", "2024-01-01")])
"""

from paimon_core._open_table import open_table
from paimon_core._standard_hooks import STANDARD_HOOKS
from paimon_core._version import __version__
from paimon_core.catalog import Catalog
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import (
    CommitConflictError,
    CommitError,
    CommitFilesError,
    CommitHistoryExpiredError,
    CommitIdentifierError,
    CommitStateUnknownError,
    ConfigError,
    CorruptMetadataError,
    DataFileError,
    LockAcquisitionError,
    MergeError,
    PaimonError,
    ReadOnlyTableError,
    SchemaError,
    SnapshotExpiredError,
    TableNotFoundError,
    UnsupportedTableFeatureError,
    WarehouseNotFoundError,
)
from paimon_core.predicate import Predicate
from paimon_core.schema_change import Move, SchemaChange
from paimon_core.snapshot import Snapshot
from paimon_core.table import (
    CommitMessage,
    DataSplit,
    StreamPosition,
    StreamScan,
    SystemTable,
    Table,
    TableCommit,
    TableRead,
    TableScan,
    TableWrite,
)

__all__ = [
    "STANDARD_HOOKS",
    "Catalog",
    "CommitConflictError",
    "CommitError",
    "CommitFilesError",
    "CommitHistoryExpiredError",
    "CommitIdentifierError",
    "CommitMessage",
    "CommitStateUnknownError",
    "ConfigError",
    "Consumer",
    "ConsumerManager",
    "CorruptMetadataError",
    "DataFileError",
    "DataSplit",
    "LockAcquisitionError",
    "MergeError",
    "Move",
    "PaimonError",
    "Predicate",
    "ReadOnlyTableError",
    "SchemaChange",
    "SchemaError",
    "Snapshot",
    "SnapshotExpiredError",
    "StreamPosition",
    "StreamScan",
    "SystemTable",
    "Table",
    "TableCommit",
    "TableNotFoundError",
    "TableRead",
    "TableScan",
    "TableWrite",
    "UnsupportedTableFeatureError",
    "WarehouseNotFoundError",
    "__version__",
    "open_table",
]
