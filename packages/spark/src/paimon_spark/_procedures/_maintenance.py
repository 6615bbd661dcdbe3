"""Maintenance procedures for Spark SQL users: tags, rollback, expiration, orphan files, consumers.

Paimon's Spark procedures are ``CALL sys.<name>(...)``; without a JVM procedure catalog the closest form is a
Python UDTF with the same argument names (see :mod:`._compact_procedures` for why)::

    SELECT * FROM paimon_create_tag(table => 'db.t', tag => 'v1', snapshot_id => 12, time_retained => '7 d')
    SELECT * FROM paimon_create_tag_from_timestamp(table => 'db.t', tag => 'v1', timestamp => 1767225600000)
    SELECT * FROM paimon_rename_tag(table => 'db.t', tag => 'v1', target_tag => 'v2')
    SELECT * FROM paimon_delete_tag(table => 'db.t', tag => 'v1,v2')
    SELECT * FROM paimon_rollback_to(table => 'db.t', snapshot_id => 10)       -- or tag => 'v1'
    SELECT * FROM paimon_rollback_to_timestamp(table => 'db.t', timestamp => 1767225600000)
    SELECT * FROM paimon_expire_snapshots(table => 'db.t', retain_max => 5, older_than => '2026-01-01 00:00:00')
    SELECT * FROM paimon_remove_orphan_files(table => 'db.t', older_than => '2026-01-01 00:00:00', dry_run => true)
    SELECT * FROM paimon_reset_consumer(table => 'db.t', consumer_id => 'job1', next_snapshot_id => 7)
    SELECT * FROM paimon_clear_consumers(table => 'db.t', including_consumers => 'job.*', excluding_consumers => 'job1')

Every procedure also takes ``options`` (``'warehouse=/wh,k=v'``: the warehouse, catalog options and dynamic
table options, as for ``paimon_compact``). Each returns one row ``result``: true for the tag, rollback and
consumer procedures, the number of snapshots expired, or the number of orphan files deleted (or found, in a
dry run); ``paimon_create_tag_from_timestamp`` returns the id of the snapshot it tagged, and
``paimon_rollback_to_timestamp`` the id it rolled back to (timestamps in epoch milliseconds, as Paimon's).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from paimon_core.maintenance import (
    clear_consumers,
    create_tag,
    create_tag_from_timestamp,
    delete_tag,
    expire_snapshots,
    remove_orphan_files,
    rename_tag,
    rollback_to,
    rollback_to_timestamp,
)
from paimon_spark._procedures._udtf import TableProcedure, non_blank

__all__ = ["MAINTENANCE_PROCEDURES"]


class CreateTagProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        tag: str,
        snapshot_id: int | None = None,
        time_retained: str | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[bool]]:
        create_tag(self._open(table, options), tag, snapshot_id, non_blank(time_retained))
        yield (True,)


class CreateTagFromTimestampProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        tag: str,
        timestamp: int,
        time_retained: str | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[int]]:
        created = create_tag_from_timestamp(
            self._open(table, options), tag, timestamp, non_blank(time_retained)
        )
        yield (created.snapshot.id,)


class RenameTagProcedure(TableProcedure):
    def eval(
        self, table: str, tag: str, target_tag: str, options: str | None = None
    ) -> Iterator[tuple[bool]]:
        rename_tag(self._open(table, options), tag, target_tag)
        yield (True,)


class RollbackToTimestampProcedure(TableProcedure):
    def eval(self, table: str, timestamp: int, options: str | None = None) -> Iterator[tuple[int]]:
        yield (rollback_to_timestamp(self._open(table, options), timestamp).id,)


class DeleteTagProcedure(TableProcedure):
    def eval(self, table: str, tag: str, options: str | None = None) -> Iterator[tuple[bool]]:
        delete_tag(self._open(table, options), tag)
        yield (True,)


class RollbackProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        snapshot_id: int | None = None,
        tag: str | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[bool]]:
        rollback_to(self._open(table, options), snapshot_id=snapshot_id, tag=non_blank(tag))
        yield (True,)


class ExpireSnapshotsProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than: str | None = None,
        max_deletes: int | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[int]]:
        expired = expire_snapshots(
            self._open(table, options),
            retain_max=retain_max,
            retain_min=retain_min,
            older_than=non_blank(older_than),
            max_deletes=max_deletes,
        )
        yield (expired,)


class RemoveOrphanFilesProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        older_than: str | None = None,
        dry_run: bool | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[int]]:
        result = remove_orphan_files(
            self._open(table, options), older_than=non_blank(older_than), dry_run=bool(dry_run)
        )
        yield (len(result.deleted),)


class ResetConsumerProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        consumer_id: str,
        next_snapshot_id: int | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[bool]]:
        handle = self._open(table, options)
        handle.consumer_manager.reset_to(consumer_id, next_snapshot_id)
        yield (True,)


class ClearConsumersProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        including_consumers: str | None = None,
        excluding_consumers: str | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[bool]]:
        clear_consumers(self._open(table, options), including_consumers, excluding_consumers)
        yield (True,)


MAINTENANCE_PROCEDURES: Mapping[str, tuple[type[TableProcedure], str]] = {
    "paimon_create_tag": (CreateTagProcedure, "result boolean"),
    "paimon_create_tag_from_timestamp": (CreateTagFromTimestampProcedure, "result bigint"),
    "paimon_rename_tag": (RenameTagProcedure, "result boolean"),
    "paimon_delete_tag": (DeleteTagProcedure, "result boolean"),
    "paimon_rollback_to": (RollbackProcedure, "result boolean"),
    "paimon_rollback_to_timestamp": (RollbackToTimestampProcedure, "result bigint"),
    "paimon_expire_snapshots": (ExpireSnapshotsProcedure, "result bigint"),
    "paimon_remove_orphan_files": (RemoveOrphanFilesProcedure, "result bigint"),
    "paimon_reset_consumer": (ResetConsumerProcedure, "result boolean"),
    "paimon_clear_consumers": (ClearConsumersProcedure, "result boolean"),
}
"""UDTF name -> (class, return schema); :func:`paimon_spark.register_procedures` registers each."""
