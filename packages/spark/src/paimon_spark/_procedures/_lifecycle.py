"""The table lifecycle procedures as SQL table functions (see :mod:`._maintenance` for the form)::

    SELECT * FROM paimon_expire_partitions(table => 'db.t', expiration_time => '7 d', timestamp_formatter => 'yyyyMMdd')
    SELECT * FROM paimon_expire_tags(table => 'db.t', older_than => '2026-01-01 00:00:00')
    SELECT * FROM paimon_replace_tag(table => 'db.t', tag => 'v1', snapshot_id => 12, time_retained => '7 d')
    SELECT * FROM paimon_mark_partition_done(table => 'db.t', partitions => 'dt=20260101;dt=20260102')

Each also takes ``options``. ``paimon_expire_partitions`` returns a row ``result`` per dropped partition
(``dt=20260101``), ``paimon_expire_tags`` one per deleted tag; the others one row ``true``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from paimon_core.maintenance import expire_partitions, expire_tags, mark_partition_done, replace_tag
from paimon_spark._procedures._udtf import TableProcedure, non_blank

__all__ = ["LIFECYCLE_PROCEDURES"]


class ExpirePartitionsProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        expiration_time: str | None = None,
        timestamp_formatter: str | None = None,
        timestamp_pattern: str | None = None,
        expire_strategy: str | None = None,
        max_expires: int | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[str]]:
        expired = expire_partitions(
            self._open(table, options),
            expiration_time=non_blank(expiration_time),
            timestamp_formatter=non_blank(timestamp_formatter),
            timestamp_pattern=non_blank(timestamp_pattern),
            expire_strategy=non_blank(expire_strategy),
            max_expires=max_expires,
        )
        for spec in expired:
            yield (", ".join(f"{k}={v}" for k, v in spec.items()),)


class ExpireTagsProcedure(TableProcedure):
    def eval(
        self, table: str, older_than: str | None = None, options: str | None = None
    ) -> Iterator[tuple[str]]:
        for name in expire_tags(self._open(table, options), non_blank(older_than)):
            yield (name,)


class ReplaceTagProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        tag: str,
        snapshot_id: int | None = None,
        time_retained: str | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[bool]]:
        replace_tag(self._open(table, options), tag, snapshot_id, non_blank(time_retained))
        yield (True,)


class MarkPartitionDoneProcedure(TableProcedure):
    def eval(self, table: str, partitions: str, options: str | None = None) -> Iterator[tuple[bool]]:
        mark_partition_done(self._open(table, options), partitions)
        yield (True,)


LIFECYCLE_PROCEDURES: Mapping[str, tuple[type[TableProcedure], str]] = {
    "paimon_expire_partitions": (ExpirePartitionsProcedure, "result string"),
    "paimon_expire_tags": (ExpireTagsProcedure, "result string"),
    "paimon_replace_tag": (ReplaceTagProcedure, "result boolean"),
    "paimon_mark_partition_done": (MarkPartitionDoneProcedure, "result boolean"),
}
"""UDTF name -> (class, return schema); :func:`paimon_spark.register_procedures` registers each."""
