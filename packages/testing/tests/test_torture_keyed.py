"""Primary-key writers racing a compactor and a maintainer that expires, tags, rolls back and removes orphans."""

from __future__ import annotations

from pathlib import Path

import pytest

from paimon_testing.torture_keyed import KeyedReport, run_keyed_torture


def _check(report: KeyedReport, writers: int, commits: int) -> None:
    print(report)
    assert report.problems() == []
    assert report.commits == writers * commits
    # The maintenance really raced the writers.
    assert report.rollbacks > 0 and report.tags > 0
    assert report.counts["maintainer"]["orphan_runs"] > 0
    assert report.counts["compactor"]["snapshots"] > 0


@pytest.mark.slow
@pytest.mark.parametrize(("engine", "sequence_field"), [("deduplicate", False), ("partial-update", True)])
def test_keyed_writers_racing_tags_rollbacks_and_orphan_removal(
    tmp_path: Path, engine: str, sequence_field: bool
) -> None:
    report = run_keyed_torture(
        str(tmp_path / "wh"),
        writers=3,
        commits=8,
        engine=engine,
        sequence_field=sequence_field,
        seed=5,
        timeout_s=300,
    )
    _check(report, 3, 8)


@pytest.mark.thorough
@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
@pytest.mark.parametrize("sequence_field", [False, True])
def test_keyed_torture_thorough(tmp_path: Path, engine: str, sequence_field: bool) -> None:
    report = run_keyed_torture(
        str(tmp_path / "wh"),
        writers=8,
        commits=30,
        engine=engine,
        sequence_field=sequence_field,
        rollbacks=6,
        seed=17,
    )
    _check(report, 8, 30)
