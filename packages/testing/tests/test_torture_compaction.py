"""Torture: 4 write-only appenders + 1 partition overwriter + 1 streaming dedicated compaction job."""

from __future__ import annotations

from pathlib import Path

import pytest

from paimon_testing.torture_compaction import run_compaction_torture


@pytest.mark.slow
def test_appenders_overwriter_and_streaming_compactor_lose_nothing(tmp_path: Path) -> None:
    appended = 4 * 25 * 3  # files: one per appender commit and partition
    report = run_compaction_torture(
        str(tmp_path / "wh"), appenders=4, commits=25, overwrite_commits=10, settle_files=appended // 10
    )
    assert report.failed_processes == []
    assert (report.lost, report.duplicated, report.unexpected) == (0, 0, 0)
    assert report.rows == 4 * 25 * 200 + 200
    assert report.compact_snapshots >= 1
    # Small files converge: 300 appended files end as a handful per partition.
    assert report.appended_files == appended
    assert report.live_files <= appended // 10
