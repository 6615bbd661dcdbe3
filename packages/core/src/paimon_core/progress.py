"""Progress of long operations (compaction, snapshot expiration, orphan removal, the CLI's writes).

A bar on one line of stderr, rewritten in place, shown only to a person: when stderr is a terminal, the
terminal is not ``dumb`` and no ``CI`` variable is set (CI runners may give jobs a pseudo-terminal). Pipes,
files, logs and CI stay quiet. Library calls are quiet unless asked (``progress=True``); the command lines
ask for the default (``None``: decided as above). No dependency: a line of text does the job.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress", "ProgressCounter", "human_size", "resolve_progress", "shows_progress"]

_REDRAW_SECONDS = 0.1  # a deletion of 100,000 files must not spend its time redrawing


def human_size(size: float) -> str:
    """``1.5 MiB``: a size for people."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def shows_progress(stream: TextIO) -> bool:
    """Whether a bar on ``stream`` would reach a person (see the module docstring)."""
    interactive = hasattr(stream, "isatty") and stream.isatty()
    return interactive and os.environ.get("TERM") != "dumb" and not os.environ.get("CI")


class Progress:
    """Plain-text progress: one line rewritten in place. Silent when not enabled.

    Args:
        enabled: None = when :func:`shows_progress` says a person sees ``stream``.
        stream: where to write (stderr by default).
    """

    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = shows_progress(self.stream) if enabled is None else enabled
        self._lock = threading.Lock()
        self._width = 0

    def update(
        self,
        label: str,
        done: int,
        total: int,
        done_bytes: int | None = None,
        total_bytes: int | None = None,
        unit: str = "tasks",
    ) -> None:
        """Draw ``label [####----] done/total unit [bytes]``; the line ends once ``done`` reaches ``total``."""
        if not self.enabled:
            return
        width = 24
        filled = width * min(done, total) // total if total else width
        line = f"{label} [{'#' * filled}{'-' * (width - filled)}] {done}/{total} {unit}"
        if done_bytes is not None and total_bytes is not None:
            line += f" {human_size(done_bytes)}/{human_size(total_bytes)}"
        with self._lock:
            self.stream.write("\r" + line.ljust(self._width))
            self._width = len(line)
            if done >= total:
                self.stream.write("\n")
                self._width = 0
            self.stream.flush()

    def message(self, text: str) -> None:
        """A line of its own (a summary, a warning), when enabled."""
        if self.enabled:
            with self._lock:
                self.stream.write(text + "\n")
                self.stream.flush()

    def counter(self, label: str, total: int, unit: str, total_bytes: int | None = None) -> ProgressCounter:
        """A counter of ``total`` steps that threads advance; draws at most every 0.1 s, and at the end."""
        return ProgressCounter(self, label, total, unit, total_bytes)


class ProgressCounter:
    """Steps done so far of one operation, drawn by its :class:`Progress` (thread-safe)."""

    def __init__(
        self, progress: Progress, label: str, total: int, unit: str, total_bytes: int | None
    ) -> None:
        self.progress = progress
        self.label = label
        self.total = total
        self.unit = unit
        self.total_bytes = total_bytes
        self.done = 0
        self.done_bytes = 0
        self._lock = threading.Lock()
        self._drawn = 0.0
        if total:
            self._draw()

    def advance(self, steps: int = 1, nbytes: int = 0) -> None:
        with self._lock:
            self.done += steps
            self.done_bytes += nbytes
            now = time.monotonic()
            if self.done < self.total and now - self._drawn < _REDRAW_SECONDS:
                return
            self._drawn = now
        self._draw()

    def _draw(self) -> None:
        done_bytes = self.done_bytes if self.total_bytes is not None else None
        self.progress.update(self.label, self.done, self.total, done_bytes, self.total_bytes, self.unit)


def resolve_progress(progress: bool | Progress | None) -> Progress:
    """The display for a ``progress`` argument: a :class:`Progress` as it is; True, False or None (decide as
    :func:`shows_progress` does) for one on stderr."""
    return progress if isinstance(progress, Progress) else Progress(progress)
