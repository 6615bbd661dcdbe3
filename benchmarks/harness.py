"""What the benchmark scripts share: timing, the machine a run had, and the result files.

Each script keeps its own measurements and its own tables; these helpers are the parts every one of them
had a copy of. The scripts run as ``python benchmarks/<script>.py``, so this module is imported as
``harness`` (the script's directory is first on ``sys.path``).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

T = TypeVar("T")

# --- timing --------------------------------------------------------------------------------------------------


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """``with stopwatch() as t: ...``; afterwards ``t[0]`` holds the block's wall seconds (perf_counter)."""
    out: list[float] = []
    start = time.perf_counter()
    yield out
    out.append(time.perf_counter() - start)


def timed(run: Callable[[], T]) -> tuple[float, float, T]:
    """Wall and CPU seconds (of this process) of ``run()``, and its value."""
    cpu, wall = time.process_time(), time.perf_counter()
    value = run()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def best_of(repeat: int, run: Callable[[Path], float], workdir: Path) -> float:
    """The least of ``repeat`` runs of ``run``, each in a fresh directory under ``workdir`` (removed after).

    ``run`` returns the seconds it measured, so that its setup stays out of the figure.
    """
    times = []
    for i in range(repeat):
        directory = workdir / f"rep{i}"
        directory.mkdir()
        try:
            times.append(run(directory))
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    return min(times)


def median(values: Iterable[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, linearly interpolated between the two nearest ranks."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def p99(values: Sequence[float]) -> float:
    return percentile(values, 0.99)


# --- environment ---------------------------------------------------------------------------------------------


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages: other work on the machine skews every figure."""
    return os.getloadavg()


def versions(*distributions: str) -> dict[str, str]:
    """``{distribution: installed version}``, e.g. ``versions("pyarrow", "pypaimon")``."""
    return {name: importlib.metadata.version(name) for name in distributions}


def environment() -> dict[str, str]:
    """Date, Python, pyarrow, CPU count and platform of this run, as the results files record them."""
    return {
        "date": dt.date.today().isoformat(),
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "cpus": str(os.cpu_count()),
        "platform": platform.platform(terse=True),
    }


# --- results -------------------------------------------------------------------------------------------------


def write_results(output_dir: Path, stem: str, markdown: str, payload: Any) -> tuple[Path, Path]:
    """``<stem>.md`` and ``<stem>.json`` (indented, newline-terminated) in ``output_dir``; their paths."""
    output_dir.mkdir(parents=True, exist_ok=True)
    md, js = output_dir / f"{stem}.md", output_dir / f"{stem}.json"
    md.write_text(markdown, encoding="utf-8")
    js.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return md, js
