"""Compaction of append tables: inline in writers, the dedicated job, the coordinator, sort compaction.

Python API::

    from paimon_core.compact import compact_table, compact_database
    compact_table(table)                                   # batch: compact once
    compact_table(table, partitions="dt=2024-01-01")       # ',' = AND, ';' = OR
    compact_table(table, order_strategy="zorder", order_by=["a", "b"])
    compact_table(table, mode="streaming", stop=event)     # until event.set()
    compact_database(catalog, including_tables="db\\\\.events_.*", mode="combined")

Engines that gather the messages of many writers into one commit pass them through
:func:`precommit_compact` first (a no-op unless ``precommit-compact = true``), then commit what it returns.

Engines plug in their own task runner: plan with :class:`CompactJob` (or :class:`TableCoordinator`), run the
picklable tasks anywhere (:func:`run_task`), commit the returned messages with :meth:`CompactJob.commit`.
"""

from paimon_core.compact._bucketed import (
    FULL_COMPACT_MIN_FILE,
    BucketCompactManager,
    InlineBucketCompaction,
    pick_full_compaction,
)
from paimon_core.compact._changelog import ChangelogCompactSizes, precommit_compact_changelog
from paimon_core.compact._coordinator import (
    COMPACT_AGE,
    REMOVE_AGE,
    CompactCoordinator,
    CoordinatorOptions,
    TableCoordinator,
    pack,
)
from paimon_core.compact._database import DATABASE_MODES, compact_database, select_tables
from paimon_core.compact._inline import (
    InlineCompactor,
    inline_compaction_enabled,
    precommit_compact,
    precommit_enabled,
)
from paimon_core.compact._job import MODES, CompactJob, CompactSummary, Progress, compact_table
from paimon_core.compact._partitions import PartitionFilter, parse_partition_specs
from paimon_core.compact._postpone import PostponeCompactTask, plan_postpone, postpone_removals
from paimon_core.compact._runner import CompactionTask, LocalRunner, TaskRunner, delete_outputs, run_task
from paimon_core.compact._sort import ORDER_STRATEGIES, SortCompactTask, sort_table, z_order_key
from paimon_core.compact._task import CompactTask, rewrite_files

__all__ = [
    "COMPACT_AGE",
    "DATABASE_MODES",
    "FULL_COMPACT_MIN_FILE",
    "MODES",
    "ORDER_STRATEGIES",
    "REMOVE_AGE",
    "BucketCompactManager",
    "ChangelogCompactSizes",
    "CompactCoordinator",
    "CompactJob",
    "CompactSummary",
    "CompactTask",
    "CompactionTask",
    "CoordinatorOptions",
    "InlineBucketCompaction",
    "InlineCompactor",
    "LocalRunner",
    "PartitionFilter",
    "PostponeCompactTask",
    "Progress",
    "SortCompactTask",
    "TableCoordinator",
    "TaskRunner",
    "compact_database",
    "compact_table",
    "delete_outputs",
    "inline_compaction_enabled",
    "pack",
    "parse_partition_specs",
    "pick_full_compaction",
    "plan_postpone",
    "postpone_removals",
    "precommit_compact",
    "precommit_compact_changelog",
    "precommit_enabled",
    "rewrite_files",
    "run_task",
    "select_tables",
    "sort_table",
    "z_order_key",
]
