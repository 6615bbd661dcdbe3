"""Values as Java Paimon's system tables print them: local date-times, rows, maps, durations, key arrays.

The system tables (``_system.py``, ``_system_files.py``) render metadata as strings the way Java's
``org.apache.paimon.table.system`` tables do, so that the same query shows the same text on both.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["array_text", "duration_text", "java_str", "local_time", "map_text", "partition_text", "row_text"]


def local_time(millis: int | None) -> dt.datetime | None:
    """Epoch millis as the local date-time Java's TIMESTAMP(3) columns hold."""
    return None if millis is None else dt.datetime.fromtimestamp(millis / 1000)


def java_str(value: Any) -> str:
    """A value as Java's ``String.valueOf`` prints it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def row_text(values: Sequence[Any]) -> str:
    """A row as Java's row-to-string cast renders it: ``{a, b}``."""
    return "{" + ", ".join(java_str(v) for v in values) + "}"


def array_text(values: Sequence[Any]) -> str:
    """An array as Java's ``Arrays.toString``: ``[a, b]``."""
    return "[" + ", ".join(java_str(v) for v in values) + "]"


def map_text(values: dict[str, Any]) -> str:
    """A map as Java's ``Map.toString``: ``{a=1, b=2}``."""
    return "{" + ", ".join(f"{k}={java_str(v)}" for k, v in values.items()) + "}"


def duration_text(value: dt.timedelta | None) -> str | None:
    """Java's ``Duration.toString`` (``PT1H30M``)."""
    if value is None:
        return None
    seconds = value.total_seconds()
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    fraction = seconds - int(seconds)
    text = "PT" + (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if secs or fraction or text == "PT":
        text += f"{secs + fraction:g}S"
    return text


def partition_text(table: TableStore, partition: bytes) -> str:
    """A partition's values as Java's row cast prints them: ``{2024-01-01, 3}``."""
    return row_text(list(table.partition_values(partition).values()))
