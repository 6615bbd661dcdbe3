"""The wall clock of commits and table lifecycle work, replaceable in tests.

Snapshots take their commit time from it, and automatic tags, tag time-to-live and partition expiration
measure their periods with it; a test installs a fake one (:func:`use_clock`) instead of sleeping.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable, Iterator

__all__ = ["Clock", "local_now", "now_millis", "use_clock"]

Clock = Callable[[], int]
"""A clock: the current time in epoch milliseconds."""


def _system() -> int:
    return int(time.time() * 1000)


_clock: Clock = _system


def now_millis() -> int:
    """The current time in epoch milliseconds."""
    return _clock()


def local_now() -> dt.datetime:
    """The current local wall-clock time (naive), as Java's ``LocalDateTime.now()``."""
    return dt.datetime.fromtimestamp(_clock() / 1000)


@contextlib.contextmanager
def use_clock(clock: Clock) -> Iterator[None]:
    """Make ``clock`` the process's clock inside the block (tests), restoring the previous one after."""
    global _clock
    previous, _clock = _clock, clock
    try:
        yield
    finally:
        _clock = previous
