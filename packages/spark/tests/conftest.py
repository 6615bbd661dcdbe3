from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SPARK_TESTS = Path(__file__).parent


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local[2] session for the whole run (a session costs seconds to start)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        # A failure, not a skip: a run without Java must not pass with every Spark test skipped.
        pytest.fail("Spark needs Java 17: put java on PATH or set JAVA_HOME")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import paimon_spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("paimon-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    paimon_spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    """An existing, empty warehouse directory."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)
