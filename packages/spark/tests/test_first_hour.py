"""What a newcomer meets first (issue 33): the README's Spark snippet run as a new user runs it, Spark's own
table calls on Paimon names, and an uncaught Paimon error from a Spark job as the user sees it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_spark import SqlError
from paimon_spark._sql import state_of

ROOT = Path(__file__).resolve().parents[3]
CATALOG_CONF = "spark.sql.catalog.paimon.warehouse"
TIMEOUT = 900  # seconds: a JVM on a loaded 2-core machine
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _readme_python(section: str) -> list[str]:
    """The python blocks of one ``## `` section of the README."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)\n```", body, flags=re.DOTALL)


def _as_a_newcomer(tmp_path: Path) -> dict[str, str]:
    """An environment with no virtualenv activated and no PYSPARK_PYTHON, whose ``python3`` (what PySpark
    starts workers with by default) is a Python without the packages: this interpreter's base, no site."""
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    python3 = stand_in / "python3"
    base = getattr(sys, "_base_executable", sys.executable)  # the interpreter the virtualenv was made from
    python3.write_text(f'#!/bin/sh\nexec "{base}" -S "$@"\n', encoding="utf-8")
    python3.chmod(0o755)
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    dropped = ("VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PATH"] = os.pathsep.join([str(stand_in), *path])
    return env


def _run(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "snippet.py").write_text(script, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "snippet.py"],
        cwd=tmp_path,
        env=_as_a_newcomer(tmp_path),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_the_readme_spark_snippet_runs_with_no_venv_activated(tmp_path: Path) -> None:
    # The tour makes shop.orders; the Spark section's first block reads, appends, streams and compacts it.
    script = "\n".join([*_readme_python("API tour"), _readme_python("Spark")[0]])
    script += (
        "\nimport sys\nfrom pyspark.sql.functions import udf\n"
        "print('WORKER', spark.range(1).select(udf(lambda: sys.executable)()).first()[0])\n"
    )
    result = _run(script, tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"WORKER {sys.executable}" in result.stdout.splitlines()
    assert "ModuleNotFoundError" not in result.stderr


def test_an_uncaught_paimon_error_from_a_spark_job_reads_message_first(tmp_path: Path) -> None:
    catalog = Catalog.open(str(tmp_path / "wh"), create=True)
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA)
    result = _run(
        "import os, paimon_spark\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[1]').getOrCreate()\n"
        "spark.sparkContext.setLogLevel('ERROR')\n"
        "paimon_spark.register(spark)\n"
        "spark.read.format('paimon').option('warehouse', os.path.abspath('wh')).load('db.tt').collect()\n",
        tmp_path,
    )
    assert result.returncode == 1
    message = "table 'db.tt' does not exist; did you mean 'db.t'?"
    assert result.stderr.count(message) == 1  # once: not again inside Spark's text
    report = result.stderr[result.stderr.index("paimon_core.errors.TableNotFoundError") :].splitlines()
    assert report[0] == f"paimon_core.errors.TableNotFoundError: {message}"  # message first
    assert "Traceback" not in result.stderr  # no worker traceback, no second traceback of the driver
    assert any("snippet.py" in line for line in report)  # the caller's line, to find the call


@pytest.fixture
def paimon_catalog(any_spark: Any, warehouse: str) -> Iterator[Any]:
    """The shared classic session, then the Connect one, with a ``paimon`` catalog holding ``db.t`` (two
    rows); reset afterwards."""
    spark = any_spark
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    catalog.create_table("db.t", SCHEMA).append(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    spark.conf.set(CATALOG_CONF, warehouse)
    yield spark
    spark.conf.unset(CATALOG_CONF)
    state = state_of(spark)
    state.catalog, state.database = None, "default"


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.collect())


def test_spark_table_calls_read_and_insert_into_paimon_tables(paimon_catalog: Any) -> None:
    spark = paimon_catalog
    assert _rows(spark.table("paimon.db.t")) == [(1, "a"), (2, "b")]
    assert _rows(spark.read.table("paimon.db.`t$snapshots`").select("snapshot_id")) == [(1,)]
    more = spark.createDataFrame([(3, "c")], "id BIGINT, v STRING")
    more.write.insertInto("paimon.db.t")
    assert _rows(spark.table("paimon.db.t")) == [(1, "a"), (2, "b"), (3, "c")]
    more.write.mode("overwrite").insertInto("paimon.db.t")
    assert _rows(spark.read.table("paimon.db.t")) == [(3, "c")]
    more.write.insertInto("paimon.db.t", overwrite=False)
    assert _rows(spark.table("paimon.db.t")) == [(3, "c"), (3, "c")]
    # Spark's own names are still Spark's.
    spark.range(2).createOrReplaceTempView("plain")
    assert _rows(spark.table("plain")) == [(0,), (1,)]


@pytest.mark.parametrize("call", ["saveAsTable", "writeTo"])
def test_spark_table_calls_paimon_cannot_serve_name_the_paimon_way(paimon_catalog: Any, call: str) -> None:
    frame = paimon_catalog.createDataFrame([(3, "c")], "id BIGINT, v STRING")
    with pytest.raises(SqlError) as raised:
        if call == "saveAsTable":
            frame.write.mode("append").saveAsTable("paimon.db.t")
        else:
            frame.writeTo("paimon.db.t").append()
    message = str(raised.value)
    assert message.startswith(f"{call}('paimon.db.t') on the Paimon table paimon.db.t is not served")
    assert "df.write.insertInto('paimon.db.t')" in message and "INSERT INTO paimon.db.t" in message
