"""8 appenders and an expirer with ``snapshot.num-retained.max=3`` on moto's S3: no writer fails, nothing lost."""

from __future__ import annotations

import pytest

from paimon_testing.torture_maintenance import run_maintenance_torture

from .conftest import Store

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_appenders_racing_an_expirer_on_s3(s3_store: Store) -> None:
    appenders, commits = 6, 5
    report = run_maintenance_torture(
        s3_store.root(),
        appenders=appenders,
        commits=commits,
        overwriters=0,
        compactor=False,
        readers=1,
        storage_options=s3_store.options,
        seed=5,
    )
    print(report)
    assert report.problems() == []
    assert report.commits == appenders * commits
    assert report.rows == appenders * commits * 3  # every acknowledged row, once
    assert report.earliest > 1 and report.counts["expirer"]["snapshots"] > 0
