"""Table maintenance, as Paimon's procedures: tags, branches, rollback, snapshot expiration, orphan file
removal, manifest compaction, purging a table, consumers, automatic tags and partition expiration."""

from paimon_core.maintenance._auto_tags import create_auto_tags, create_batch_tag, expire_tags, replace_tag
from paimon_core.maintenance._branches import create_branch, delete_branch, fast_forward, list_branches
from paimon_core.maintenance._compact_manifest import compact_manifest
from paimon_core.maintenance._consumers import clear_consumers, expire_consumers
from paimon_core.maintenance._expire import expire_snapshots, might_expire
from paimon_core.maintenance._lifecycle import maintain_after_commit
from paimon_core.maintenance._orphans import OrphanCleanResult, remove_orphan_files
from paimon_core.maintenance._partitions import expire_partitions, mark_partition_done, partition_time
from paimon_core.maintenance._purge import PurgeResult, purge_files
from paimon_core.maintenance._tags import (
    create_tag,
    create_tag_from_timestamp,
    delete_tag,
    rename_tag,
    rollback_to,
    rollback_to_timestamp,
)

__all__ = [
    "OrphanCleanResult",
    "PurgeResult",
    "clear_consumers",
    "compact_manifest",
    "create_auto_tags",
    "create_batch_tag",
    "create_branch",
    "create_tag",
    "create_tag_from_timestamp",
    "delete_branch",
    "delete_tag",
    "expire_consumers",
    "expire_partitions",
    "expire_snapshots",
    "expire_tags",
    "fast_forward",
    "list_branches",
    "maintain_after_commit",
    "mark_partition_done",
    "might_expire",
    "partition_time",
    "purge_files",
    "remove_orphan_files",
    "rename_tag",
    "replace_tag",
    "rollback_to",
    "rollback_to_timestamp",
]
