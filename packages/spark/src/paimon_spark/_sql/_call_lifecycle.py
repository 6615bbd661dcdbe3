"""``CALL sys.expire_partitions``, ``sys.expire_tags``, ``sys.replace_tag`` and ``sys.mark_partition_done``:
Paimon's table lifecycle procedures with their Spark argument names and result columns.

``expire_partitions`` returns one row per dropped partition (``dt=20240101, hh=00``, Java's rendering) or
``No expired partitions.``; ``expire_tags`` one row per deleted tag or ``No expired tags.``; the other two
``true``.
"""

from __future__ import annotations

from typing import Any

from paimon_core.maintenance import expire_partitions, expire_tags, mark_partition_done, replace_tag
from paimon_spark._sql._call_spec import Call, Param, Procedure

__all__ = ["LIFECYCLE_PROCEDURES"]


def _expire_partitions(call: Call) -> list[tuple[Any, ...]]:
    expired = expire_partitions(
        call.table(),
        expiration_time=call.text("expiration_time"),
        timestamp_formatter=call.text("timestamp_formatter"),
        timestamp_pattern=call.text("timestamp_pattern"),
        expire_strategy=call.text("expire_strategy"),
        max_expires=call.get("max_expires"),
    )
    rows = [(", ".join(f"{k}={v}" for k, v in spec.items()),) for spec in expired]
    return rows or [("No expired partitions.",)]


def _expire_tags(call: Call) -> list[tuple[Any, ...]]:
    return [(name,) for name in expire_tags(call.table(), call.text("older_than"))] or [("No expired tags.",)]


def _replace_tag(call: Call) -> list[tuple[Any, ...]]:
    replace_tag(call.table(), call.args["tag"], call.get("snapshot"), call.text("time_retained"))
    return [(True,)]


def _mark_partition_done(call: Call) -> list[tuple[Any, ...]]:
    mark_partition_done(call.table(), call.args["partitions"])
    return [(True,)]


_TABLE = Param("table", required=True)
_OPTIONS = Param("options", aliases=("table_options",))

LIFECYCLE_PROCEDURES = (
    Procedure(
        "expire_partitions",
        (
            _TABLE,
            Param("expiration_time"),
            Param("timestamp_formatter"),
            Param("timestamp_pattern"),
            Param("expire_strategy"),
            Param("max_expires", int),
            _OPTIONS,
        ),
        "expired_partitions string",
        _expire_partitions,
    ),
    Procedure("expire_tags", (_TABLE, Param("older_than")), "expired_tags string", _expire_tags),
    Procedure(
        "replace_tag",
        (
            _TABLE,
            Param("tag", required=True),
            Param("snapshot", int, aliases=("snapshot_id",)),
            Param("time_retained"),
        ),
        "result boolean",
        _replace_tag,
    ),
    Procedure(
        "mark_partition_done",
        (_TABLE, Param("partitions", required=True)),
        "result boolean",
        _mark_partition_done,
    ),
)
"""The procedures, added to :data:`paimon_spark._sql._call.PROCEDURES`."""
