from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SPARK_TESTS = Path(__file__).parent
# Timeouts a 2-core machine under a load of 8 or more meets (Spark's defaults assume a quiet one): how long a
# Python worker, and a socket Spark serves to Python (collect, toArrow, broadcast), may take to connect and
# authenticate (15 s by default: "[CANNOT_OPEN_SOCKET] ... timed out"), RPCs and heartbeats (120 s), and
# how long the Connect server keeps an execution whose client is slow to reattach (5 min). Spark 4.3 waits a
# fixed 10 s for a non-daemon Python worker (a streaming source, a foreachBatch over Connect) to connect back;
# no option changes that: the nox sessions install with bytecode compiled so that such a worker starts fast.
# (The value type is what SparkSession.Builder.config(map=...) takes.)
LOADED_MACHINE_CONF: dict[str, bool | float | int | str | None] = {
    "spark.python.authenticate.socketTimeout": "300s",
    "spark.network.timeout": "600s",
    "spark.connect.execute.manager.detachedTimeout": "600s",
}
# Set by pyspark when a Spark Connect session is made: from then on pyspark.sql.functions build Connect
# columns, in the whole process. The tests run classic and Connect sessions in one process, so it is set
# only while a test uses the Connect session.
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


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
        # For the Spark Connect server the connect_spark fixture starts in this JVM: any free port.
        .config("spark.connect.grpc.binding.address", "127.0.0.1")
        .config("spark.connect.grpc.binding.port", "0")
        .config(map=LOADED_MACHINE_CONF)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    paimon_spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_url(spark: Any) -> Iterator[str]:
    """The URL of a Spark Connect server started in the JVM of the ``spark`` fixture.

    The server is Spark's own (the service ``start-connect-server.sh`` runs), started once per run in
    well under a second; a server process of its own would cost another JVM start and its memory. Its
    clients talk to it over gRPC like any remote client: they have no ``SparkContext``, and everything they
    run on executors is pickled and sent as a remote client's would be.
    """
    jvm = spark._jvm
    service = jvm.org.apache.spark.sql.connect.service.SparkConnectService
    service.start(spark._jsc.sc())
    port = getattr(getattr(jvm.org.apache.spark.sql.connect.service, "SparkConnectService$"), "MODULE$")
    yield f"sc://127.0.0.1:{port.localPort()}"
    service.stop(jvm.scala.Option.empty(), jvm.scala.Option.empty())


@pytest.fixture(scope="session")
def connect_spark(connect_url: str) -> Iterator[object]:
    """A Spark Connect client session of the ``connect_url`` server, with ``paimon`` registered."""
    from pyspark.sql import SparkSession

    import paimon_spark

    remote = SparkSession.builder.remote(connect_url).create()
    try:
        paimon_spark.register(remote)
    finally:
        os.environ.pop(CONNECT_MODE, None)
    yield remote
    os.environ[CONNECT_MODE] = "1"
    try:
        remote.stop()
    finally:
        os.environ.pop(CONNECT_MODE, None)


@pytest.fixture(params=["classic", "connect"])
def any_spark(request: pytest.FixtureRequest, spark: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The classic session, then the Spark Connect one: a test taking it runs once with each."""
    if request.param == "classic":
        return spark
    remote = request.getfixturevalue("connect_spark")
    monkeypatch.setenv(CONNECT_MODE, "1")
    return remote


def finished(query: Any) -> Any:
    """``query`` after it ended (an availableNow trigger), the test failing with its exception if it had one."""
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    return query


def stream_once(
    spark: Any,
    warehouse: str,
    checkpoint: str,
    source: str = "db.src",
    target: str = "db.dst",
    **options: str,
) -> Any:
    """One availableNow run of a stream from the Paimon table ``source`` (read with ``options``) into
    ``target``, to its end; the query."""
    stream = spark.readStream.format("paimon").option("warehouse", warehouse).options(**options).load(source)
    writer = stream.writeStream.format("paimon").option("warehouse", warehouse)
    return finished(writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start(target))


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    """An existing, empty warehouse directory."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)
