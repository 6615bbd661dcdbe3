"""8 processes x 50 commits on one local table, with an overwriter and injected faults: nothing lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from paimon_testing.faults import Fault
from paimon_testing.torture import run_torture


@pytest.mark.slow
def test_eight_processes_fifty_commits_with_faults(tmp_path: Path) -> None:
    report = run_torture(str(tmp_path / "warehouse"), processes=8, commits=50, overwriters=1, seed=3)
    print(report)
    assert report.problems() == []
    assert report.commits == 400
    assert report.snapshots == 400  # one snapshot per commit, ids dense (checked by verify)
    # The faults really happened, including the ambiguous ones the committers had to resolve.
    assert report.faults[Fault.TIMEOUT_AFTER.value] > 0
    assert report.faults[Fault.FAIL_BEFORE.value] > 0
    assert report.unknown_outcomes + report.retried_failures > 0
