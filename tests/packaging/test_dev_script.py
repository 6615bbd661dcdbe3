"""``./dev``, the repository's bootstrap: run from a copy whose tools are stand-ins that log their calls."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
_LOGGING_TOOL = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >>"{log}"
if [[ "$(basename "$0")" == pip && "$1" == index ]]; then echo "pyspark (4.3.0)"; fi
"""


def _copy_of_dev(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of ``dev`` whose .venv-dev holds stand-in nox, uv and pip that log their calls."""
    tree = tmp_path / "repo"
    tools = tree / ".venv-dev" / "bin"
    tools.mkdir(parents=True)
    shutil.copy(ROOT / "dev", tree / "dev")
    log = tmp_path / "calls.log"
    for name in ("nox", "uv", "pip"):
        tool = tools / name
        tool.write_text(_LOGGING_TOOL.format(log=log))
        tool.chmod(0o755)
    spec = next(line for line in (ROOT / "dev").read_text().splitlines() if line.startswith("TOOLS_SPEC="))
    (tree / ".venv-dev" / ".tools-spec").write_text(spec.split("=", 1)[1].strip("'") + "\n")
    return tree, log


def test_dev_asks_the_index_for_pyspark_at_most_every_twelve_hours(tmp_path: Path) -> None:
    tree, log = _copy_of_dev(tmp_path)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "pyspark-4.3.0-py2.py3-none-any.whl").write_bytes(b"")  # built already: nothing to build
    env = {**os.environ, "PAIMON_WHEELHOUSE": str(wheels)}
    for _ in range(3):
        subprocess.run(
            ["bash", str(tree / "dev"), "nox", "-l"], env=env, check=True, stdin=subprocess.DEVNULL
        )
    calls = log.read_text().splitlines()
    assert sum(c.startswith("pip index") for c in calls) == 1
    assert calls.count("nox -l") == 3
    assert (wheels / ".pyspark-latest").read_text().strip() == "4.3.0"
    stale = wheels / ".pyspark-latest"
    os.utime(stale, (0, 0))  # 1970: asked again
    subprocess.run(["bash", str(tree / "dev"), "nox", "-l"], env=env, check=True, stdin=subprocess.DEVNULL)
    assert sum(c.startswith("pip index") for c in log.read_text().splitlines()) == 2
