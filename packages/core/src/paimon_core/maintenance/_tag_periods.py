"""The periods of automatic tags and their names, as Java Paimon's ``TagPeriodHandler`` makes them.

A tag names the period it closes: with ``tag.creation-period`` = ``daily`` the first snapshot of
2024-01-02 (after ``tag.creation-delay``) gets the tag ``2024-01-01``. Names by period and
``tag.period-formatter``:

=================  ==============  ==============  =========================
period             with_dashes     without_dashes  without_dashes_and_spaces
=================  ==============  ==============  =========================
daily              2024-01-01      20240101        20240101
hourly             2024-01-01 13   20240101 13     2024010113
two-hours          2024-01-01 12   (the same)      (the same)
period-duration    202401011330    (the same)      (the same)
=================  ==============  ==============  =========================
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from paimon_core import options as opts
from paimon_core.errors import ConfigError
from paimon_core.options import Options

__all__ = ["TagPeriod"]

_EPOCH = dt.datetime(1970, 1, 1)

# name format -> (regex of a whole name, strftime format); the fields are strict (Java's ResolverStyle.STRICT)
_FORMATS = {
    "day": (r"(\d{4})-(\d{2})-(\d{2})", "%Y-%m-%d"),
    "day_compact": (r"(\d{4})(\d{2})(\d{2})", "%Y%m%d"),
    "hour": (r"(\d{4})-(\d{2})-(\d{2}) (\d{2})", "%Y-%m-%d %H"),
    "hour_compact": (r"(\d{4})(\d{2})(\d{2}) (\d{2})", "%Y%m%d %H"),
    "hour_plain": (r"(\d{4})(\d{2})(\d{2})(\d{2})", "%Y%m%d%H"),
    "minute": (r"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})", "%Y%m%d%H%M"),
}


@dataclass(frozen=True)
class TagPeriod:
    """One period length and the name format of its tags."""

    period: dt.timedelta
    name_format: str
    daily: bool = False

    @classmethod
    def of(cls, options: Options) -> TagPeriod:
        """The period the options give (``tag.creation-period-duration`` first, as Java).

        Raises:
            ConfigError: ``tag.creation-delay`` is not shorter than the period.
        """
        custom = options.get_option(opts.TAG_CREATION_PERIOD_DURATION)
        formatter = options.get_option(opts.TAG_PERIOD_FORMATTER)
        if custom is not None:
            found = cls(dt.timedelta(milliseconds=custom), "minute")
        else:
            kind = options.get_option(opts.TAG_CREATION_PERIOD)
            if kind == "daily":
                found = cls(
                    dt.timedelta(days=1), "day" if formatter == "with_dashes" else "day_compact", True
                )
            elif kind == "hourly":
                name = {"with_dashes": "hour", "without_dashes": "hour_compact"}.get(formatter, "hour_plain")
                found = cls(dt.timedelta(hours=1), name)
            else:
                found = cls(dt.timedelta(hours=2), "hour")
        delay = dt.timedelta(milliseconds=options.get_option(opts.TAG_CREATION_DELAY))
        if delay >= found.period:
            raise ConfigError(
                f"tag.creation-delay ({delay}) must be shorter than the tag period ({found.period})",
                opts.TAG_CREATION_DELAY.key,
            )
        return found

    def name(self, time: dt.datetime) -> str:
        """The tag name of the period starting at ``time``."""
        return time.strftime(_FORMATS[self.name_format][1])

    def time_of(self, name: str) -> dt.datetime | None:
        """The start of the period a tag name names; None when ``name`` is not an automatic tag's."""
        if self.daily:
            name = name.split(" ")[0]  # Java reads a daily tag's date and ignores what follows a space
        match = re.fullmatch(_FORMATS[self.name_format][0], name)
        if match is None:
            return None
        fields = [int(g) for g in match.groups()]
        try:
            return dt.datetime(*fields)  # type: ignore[arg-type]
        except ValueError:  # 2024-02-30: not a date, so not a tag name
            return None

    def is_auto_tag(self, name: str) -> bool:
        return self.time_of(name) is not None

    def previous_tag(self, time: dt.datetime) -> dt.datetime:
        """The period before the one ``time`` falls in (periods are counted from 1970-01-01 00:00 of the
        wall clock, as Java does)."""
        step = self.period // dt.timedelta(milliseconds=1)
        millis = (time - _EPOCH) // dt.timedelta(milliseconds=1)
        return _EPOCH + dt.timedelta(milliseconds=(millis // step) * step) - self.period
