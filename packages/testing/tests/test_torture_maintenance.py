"""16 appenders + an overwriter + a compactor + an expirer (``snapshot.num-retained.max=3``) + readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from paimon_testing.torture_maintenance import MaintenanceReport, run_maintenance_torture


def _check(report: MaintenanceReport, appenders: int, commits: int) -> None:
    print(report)
    assert report.problems() == []
    assert report.commits == (appenders + 1) * commits
    # Every appended row once, plus the last overwrite: an undecided commit landed too, since nothing here
    # deletes the files of a commit that never landed.
    assert report.rows == appenders * commits * 3 + 3
    # The maintenance really raced the writers: snapshots expired under them, compactions landed, reads ran.
    assert report.earliest > 1 and report.counts["expirer"]["snapshots"] > 0
    assert report.counts["compactor"]["snapshots"] > 0
    assert report.counts["reader"]["reads"] > 0
    assert report.unknown_outcomes + report.retried_failures > 0  # the injected faults fired


@pytest.mark.slow
def test_writers_racing_expiration_compaction_and_readers_lose_nothing(tmp_path: Path) -> None:
    # About 15 s on 2 idle cores; a writer stuck for minutes is a failure, reported as such.
    report = run_maintenance_torture(str(tmp_path / "wh"), appenders=16, commits=8, seed=11, timeout_s=300)
    _check(report, 16, 8)


@pytest.mark.thorough
def test_writers_racing_maintenance_thorough(tmp_path: Path) -> None:
    report = run_maintenance_torture(str(tmp_path / "wh"), appenders=16, commits=50, readers=3, seed=29)
    _check(report, 16, 50)
