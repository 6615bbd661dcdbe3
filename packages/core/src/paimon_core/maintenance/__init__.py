"""Table maintenance, as Paimon's procedures: tags, branches, rollback, snapshot expiration, orphan file
removal, consumers."""

from paimon_core.maintenance._branches import create_branch, delete_branch, fast_forward, list_branches
from paimon_core.maintenance._consumers import clear_consumers, expire_consumers
from paimon_core.maintenance._expire import expire_snapshots, might_expire
from paimon_core.maintenance._orphans import OrphanCleanResult, remove_orphan_files
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
    "clear_consumers",
    "create_branch",
    "create_tag",
    "create_tag_from_timestamp",
    "delete_branch",
    "delete_tag",
    "expire_consumers",
    "expire_snapshots",
    "fast_forward",
    "list_branches",
    "might_expire",
    "remove_orphan_files",
    "rename_tag",
    "rollback_to",
    "rollback_to_timestamp",
]
