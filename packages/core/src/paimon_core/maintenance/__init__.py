"""Table maintenance, as Paimon's procedures: tags, rollback, snapshot expiration, orphan file removal,
consumers."""

from paimon_core.maintenance._consumers import clear_consumers, expire_consumers
from paimon_core.maintenance._expire import expire_snapshots, might_expire
from paimon_core.maintenance._orphans import OrphanCleanResult, remove_orphan_files
from paimon_core.maintenance._tags import create_tag, delete_tag, rollback_to

__all__ = [
    "OrphanCleanResult",
    "clear_consumers",
    "create_tag",
    "delete_tag",
    "expire_consumers",
    "expire_snapshots",
    "might_expire",
    "remove_orphan_files",
    "rollback_to",
]
