"""Pausing Python's cyclic garbage collector while table metadata is decoded or merged in bulk.

Planning a table of many files, or a commit that merges manifests, builds hundreds of thousands of
small objects that all stay alive until the step ends. Every collection their allocation triggers walks
all of them again (and a full collection walks everything the process holds: the live-file index of a
table of 100,000 files included), which cost a fifth of a full plan's time and made the commit that
merged manifests stall for a full collection more. Those steps create no reference cycles, so pausing
the collector while they run loses nothing; it runs again as soon as the last of them ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_lock = threading.Lock()
_holders = 0  # threads inside gc_paused(); the collector resumes when the last one leaves
_resume = False  # whether it was enabled when the first one entered


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the duration (threads may overlap; a disabled one stays so)."""
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _resume:
                gc.enable()
