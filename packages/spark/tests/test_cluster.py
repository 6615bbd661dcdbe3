"""A Spark standalone cluster on 127.0.0.1 (a master and two workers, separate executor JVMs).

Started with pyspark's own ``bin/spark-class``; drivers run as separate processes (cluster_driver.py).
Marked ``integration``: run with ``-m integration`` (the ``spark_cluster`` nox session).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import Catalog

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DRIVER = Path(__file__).with_name("cluster_driver.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=_spark_home(),
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false",
    )
    return env


class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        spark_class = os.path.join(_spark_home(), "bin", "spark-class")
        self.logs = tmp / "logs"
        self.logs.mkdir()
        self._log_files: list[object] = []
        self.webui_port = _free_port()
        self.master = self._start(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
             "--webui-port", str(self.webui_port)], "master",
        )  # fmt: skip
        self._wait_port(self.port)
        self.workers = [
            self._start(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(_free_port()),
                    "--work-dir",
                    str(tmp / f"work{i}"),
                ],
                f"worker{i}",
            )
            for i in range(2)
        ]
        self._wait_workers(len(self.workers))

    def _start(self, command: list[str], name: str) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115  # closed in stop()
        self._log_files.append(log)
        return subprocess.Popen(command, env=_env(), stdout=log, stderr=subprocess.STDOUT)

    def _wait_workers(self, count: int, timeout: float = 300) -> None:
        """Until ``count`` workers have registered with the master (its web UI's JSON says so)."""
        deadline = time.time() + timeout
        alive = 0
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=10) as page:
                    alive = int(json.load(page).get("aliveworkers", 0))
            except (OSError, ValueError):
                alive = 0
            if alive >= count:
                return
            time.sleep(0.3)
        raise TimeoutError(f"{alive} of {count} workers registered with the master in {timeout} s")

    @staticmethod
    def _wait_port(port: int, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.3)
        raise TimeoutError(f"nothing listens on {port}")

    def executor_pids(self) -> list[int]:
        """Executor JVMs descending from this cluster's workers (read from /proc: ps truncates classpaths)."""
        workers = {w.pid for w in self.workers}
        parents: dict[int, int] = {}
        executors = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            if b"CoarseGrainedExecutorBackend" in cmdline:
                executors.append(int(entry.name))
        found = []
        for pid in executors:
            ancestor = parents.get(pid)
            while ancestor and ancestor not in workers:
                ancestor = parents.get(ancestor)
            if ancestor:
                found.append(pid)
        return found

    def driver(self, warehouse: str, *args: str) -> subprocess.Popen[str]:
        command = [sys.executable, str(DRIVER), self.master_url, warehouse, *args]
        return subprocess.Popen(
            command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def run(self, warehouse: str, *args: str, timeout: float = 600) -> str:
        """The driver's output; ``timeout`` is per command (they join with "then")."""
        process = self.driver(warehouse, *args)
        out, err = process.communicate(timeout=timeout * (1 + args.count("then")))
        assert process.returncode == 0, err[-5000:]
        return out

    def stop(self) -> None:
        for process in (*self.workers, self.master):
            process.terminate()
        for process in (*self.workers, self.master):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in self._log_files:
            log.close()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    started = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield started
    finally:
        started.stop()


def _read(cluster: Cluster, warehouse: str, *before: str) -> dict[str, int]:
    """The read's summary of ``db.t``; ``before``: commands the same driver runs first (ending in "then")."""
    result: dict[str, int] = json.loads(cluster.run(warehouse, *before, "read").strip().splitlines()[-1])
    return result


def test_batch_round_trip_on_the_cluster(cluster: Cluster, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    rows = 50_000
    result = _read(cluster, warehouse, "write", str(rows), "4", "0", "then")
    assert result == {
        "count": rows,
        "distinct": rows,
        "sum": rows * (rows - 1) // 2,
        "partitions": result["partitions"],
    }
    table = Catalog.open(warehouse).get_table("db.t")
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND"]
    assert table.to_arrow().num_rows == rows


def test_killed_executor_mid_write_loses_and_duplicates_nothing(cluster: Cluster, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    rows = 4000
    # 8 tasks x ~1.5 s each; then the same application (on the worker's replacement executor) reads the table
    process = cluster.driver(warehouse, "write", str(rows), "8", "3", "then", "read")
    deadline = time.time() + 120
    pids: list[int] = []
    while time.time() < deadline and len(pids) < 2:
        pids = cluster.executor_pids()
        time.sleep(0.5)
    assert pids, "no executors started"
    written = time.time() + 300  # tasks are running and writing files
    while not list(Path(warehouse).rglob("data-*.parquet")) and time.time() < written:
        time.sleep(0.2)
    assert list(Path(warehouse).rglob("data-*.parquet")), "no task wrote a file"
    os.kill(pids[0], signal.SIGKILL)
    out, err = process.communicate(timeout=1200)  # two commands, 600 s each
    assert process.returncode == 0, err[-5000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert result["count"] == rows and result["distinct"] == rows
    assert result["sum"] == rows * (rows - 1) // 2


def test_streaming_killed_driver_restarts_from_checkpoint_exactly_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The driver dies in the middle of the initial full read (2 files per trigger); the restart from the
    checkpoint finishes it and the later appends, each row exactly once."""
    warehouse = str(tmp_path / "wh")
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    # Write-only: inline compaction would merge the initial files into one, and the full read into one batch.
    source = catalog.create_table("db.src", schema, options={"write-only": "true"})
    appended = 0

    def append_some() -> None:
        nonlocal appended
        source.append(pa.table({"id": list(range(appended, appended + 100))}, schema=schema))
        appended += 100

    for _ in range(10):  # the initial full snapshot: 10 files, 5 micro-batches
        append_some()
    checkpoint = str(tmp_path / "checkpoint")
    process = cluster.driver(warehouse, "stream", checkpoint, "continuous")
    deadline = time.time() + 240
    written = None
    while time.time() < deadline and process.poll() is None:
        if catalog.table_exists("db.dst"):
            written = catalog.get_table("db.dst").latest_snapshot()
            if written is not None and written.id >= 2:
                break
        time.sleep(0.2)
    append_some()  # lands while the stream runs
    process.send_signal(signal.SIGKILL)  # the driver dies mid-stream
    _, err = process.communicate(timeout=60)
    assert written is not None and written.id >= 2, err[-5000:]
    written = catalog.get_table("db.dst").latest_snapshot()
    assert written is not None and written.total_record_count < appended
    for _ in range(3):
        append_some()
    cluster.run(warehouse, "stream", checkpoint, "once")
    ids = catalog.get_table("db.dst").to_arrow().column("id").to_pylist()
    assert sorted(ids) == list(range(appended))


def test_primary_key_tables_on_the_cluster(cluster: Cluster, tmp_path: Path) -> None:
    """Several executors write one bucket through the data source (the driver compacts it once) and one writer
    per bucket through paimon_spark.write; an update-mode word count restarts from its checkpoint."""
    warehouse = str(tmp_path / "wh")
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("db")
    sums = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    options = {
        "bucket": "2",
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "num-sorted-run.compaction-trigger": "2",
    }
    for name in ("db.sums", "db.sums_helper"):
        catalog.create_table(name, sums, primary_keys=["k"], options=options)
    words_schema = pa.schema([pa.field("word", pa.string())])
    words = catalog.create_table("db.words", words_schema)
    appended: dict[str, int] = {}

    def append(*batch: str) -> None:
        words.append(pa.table({"word": list(batch)}, schema=words_schema))
        for word in batch:
            appended[word] = appended.get(word, 0) + 1

    append("paimon", "spark", "paimon")
    append("lake", "paimon")
    checkpoint = str(tmp_path / "checkpoint")
    rounds = 3
    # one application for the batch sums and the word count's first run (a driver costs three JVMs)
    cluster.run(warehouse, "pk-batch", str(rounds), "then", "pk-stream", checkpoint)
    expected = {k: rounds * 4000 // 50 for k in range(50)}
    for name in ("db.sums", "db.sums_helper"):
        got = {r["k"]: r["v"] for r in catalog.get_table(name).to_arrow().to_pylist()}
        assert got == expected, name

    append("spark", "stream", "lake")
    cluster.run(warehouse, "pk-stream", checkpoint)
    counted = catalog.get_table("db.word_count")
    assert {r["word"]: r["n"] for r in counted.to_arrow().to_pylist()} == appended
    assert len({s.commit_user for s in counted.snapshots()}) == 1  # one query across the restart


MULTIPLE_WRITERS = Path(__file__).parents[3] / "examples" / "multiple_writers.py"


def test_multiple_writers_with_a_dedicated_compaction_job(cluster: Cluster, tmp_path: Path) -> None:
    """Paimon's Multiple Writers topology (examples/multiple_writers.py on the cluster): two streaming queries
    write different columns of one partial-update, write-only table while a streaming compaction job
    compacts it; rows come out whole, none lost, the writers only appended and nothing failed."""
    warehouse = str(tmp_path / "wh")
    process = subprocess.Popen(
        [sys.executable, str(MULTIPLE_WRITERS), "--master", cluster.master_url, warehouse],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = process.communicate(timeout=900)
    assert process.returncode == 0, err[-5000:]  # the example checks its queries' and jobs' errors itself
    assert "CommitConflict" not in err
    summary = json.loads(out.strip().splitlines()[-1])

    table = Catalog.open(warehouse).get_table("default.users")
    rows = table.to_arrow().to_pylist()
    users = 3000
    assert summary["rows"] == len(rows) == users
    assert sorted(r["id"] for r in rows) == list(range(users))
    for row in rows:  # each row has both writers' columns
        i = row["id"]
        assert (row["name"], row["clicks"], row["last_page"]) == (f"user-{i}", 3 * i, f"/page/{i % 10}")
        assert row["country"] is not None

    snapshots = table.snapshots()
    kinds: dict[str, set[str]] = {}
    for snapshot in snapshots:
        kinds.setdefault(snapshot.commit_user, set()).add(snapshot.commit_kind.value)
    writers = [user for user, made in kinds.items() if "APPEND" in made]
    assert len(writers) == 2 and all(kinds[user] == {"APPEND"} for user in writers)  # write-only: no COMPACT
    compactions = [s.id for s in snapshots if s.commit_kind.value == "COMPACT"]
    last_append = max(s.id for s in snapshots if s.commit_kind.value == "APPEND")
    assert compactions == summary["streaming_compactions"] + summary["final_compactions"]
    assert any(i < last_append for i in summary["streaming_compactions"])  # compacted while they wrote
    # the final full compaction leaves one file per bucket, at the top level
    assert summary["live_files"] == len(table.live_entries()) == 2
