"""Time travel: the snapshot a batch read starts from when the caller names one (a snapshot id, a tag or an
instant) rather than leaving it to the table's ``scan.*`` options. Every reader and scan takes it as one value.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from paimon_core.errors import ConfigError
from paimon_core.options import to_millis

__all__ = ["NOW", "Instant", "TimeTravel"]

Instant = dt.datetime | int | str
"""An instant to time travel to: a datetime (naive = local time), epoch millis, or 'yyyy-MM-dd HH:mm:ss'."""


@dataclass(frozen=True)
class TimeTravel:
    """Where a read travels to: one snapshot, the snapshot of one tag, or the snapshot current at one instant.

    All three None (:data:`NOW`) reads what the table's ``scan.*`` options choose, the latest snapshot by
    default.

    Raises:
        ConfigError: more than one was given, or ``timestamp`` is not a point in time.
    """

    snapshot_id: int | None = None
    tag: str | None = None
    timestamp: Instant | None = None

    def __post_init__(self) -> None:
        if len(self.names(self.snapshot_id, self.tag, self.timestamp)) > 1:
            raise ConfigError("time travel takes one of snapshot_id, tag and timestamp, not several")
        if self.timestamp is not None:
            to_millis(self.timestamp)

    @staticmethod
    def names(snapshot_id: int | None, tag: str | None, timestamp: Instant | None) -> list[str]:
        """The names of the time-travel arguments given (not None), in signature order."""
        given = (("snapshot_id", snapshot_id), ("tag", tag), ("timestamp", timestamp))
        return [name for name, value in given if value is not None]

    def __bool__(self) -> bool:
        return bool(self.names(self.snapshot_id, self.tag, self.timestamp))


NOW = TimeTravel()
"""No time travel: what the table's ``scan.*`` options choose."""
