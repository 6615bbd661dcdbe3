"""Primary-key tables through Structured Streaming (local[2]): aggregations in update and complete mode,
upsert streams in append mode, changelog streams with a ``rowkind`` column, consumers, and output modes an
append table refuses."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.table import Table
from paimon_spark import commit_user_for_query

from .conftest import finished, stream_once

pytestmark = pytest.mark.slow

WORDS = pa.schema([pa.field("word", pa.string())])
KV = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])


def catalog(warehouse: str) -> Catalog:
    opened = Catalog.open(warehouse)
    opened.create_database("db", exist_ok=True)
    return opened


def table(warehouse: str, name: str) -> Table:
    return Catalog.open(warehouse).get_table(name)


def drop_last_commit(checkpoint: str) -> None:
    """What a driver crash after the Paimon commit but before Spark recorded the batch leaves behind."""
    commits = Path(checkpoint) / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    os.remove(commits / str(last))
    crc = commits / f".{last}.crc"
    if crc.exists():
        os.remove(crc)


# --- aggregations: update and complete mode ------------------------------------------------------------------


def _word_counts(spark: Any, warehouse: str) -> Any:
    words = (
        spark.readStream.format("paimon")
        .option("warehouse", warehouse)
        .option("read.stream.maxFilesPerTrigger", "1")  # one appended snapshot per micro-batch
        .load("db.words")
    )
    return words.groupBy("word").count().withColumnRenamed("count", "n")


def _start(spark: Any, warehouse: str, checkpoint: str, mode: str, path: str, bucket: str) -> Any:
    counts = _word_counts(spark, warehouse)
    options = {"primary-key": "word", "bucket": bucket}
    if path == "helper":
        writer = paimon_spark.write_stream(
            counts, "db.counts", warehouse=warehouse, output_mode=mode, options=options
        )
    else:
        writer = (
            counts.writeStream.format("paimon")
            .option("warehouse", warehouse)
            .options(**options)
            .outputMode(mode)
        )
        writer = writer.option("path", "db.counts")
    return writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()


@pytest.mark.parametrize(
    ("mode", "path", "bucket"),
    [
        ("update", "helper", "2"),
        ("update", "helper", "-1"),
        ("complete", "format", "2"),
        ("complete", "helper", "-1"),
    ],
)
def test_word_count_across_micro_batches_restarts_and_replays(
    spark: Any, warehouse: str, tmp_path: Path, mode: str, path: str, bucket: str
) -> None:
    """The quick start's ``SELECT word, count(*) ... GROUP BY word`` into a primary-key table."""
    words = catalog(warehouse).create_table("db.words", WORDS)
    appended: Counter[str] = Counter()

    def append(*batch: str) -> None:
        words.append(pa.table({"word": list(batch)}, schema=WORDS))
        appended.update(batch)

    def counts() -> dict[str, int]:
        return {r["word"]: r["n"] for r in table(warehouse, "db.counts").to_arrow().to_pylist()}

    append("a", "b", "a")
    append("c", "a")
    append("b", "d", "e", "e")
    checkpoint = str(tmp_path / "checkpoint")
    query = _start(spark, warehouse, checkpoint, mode, path, bucket)
    finished(query)
    assert counts() == dict(appended)
    counted = table(warehouse, "db.counts")
    assert len([s for s in counted.snapshots() if s.commit_kind.value != "COMPACT"]) >= 3  # one per batch
    assert {s.commit_user for s in counted.snapshots()} == {commit_user_for_query(str(query.id))}
    # a restart from the checkpoint counts only what came since
    append("a", "f")
    append("f", "b")
    finished(_start(spark, warehouse, checkpoint, mode, path, bucket))
    assert counts() == dict(appended)
    # a driver that crashed after committing the last batch: Spark runs it again, nothing is committed twice
    before = len(table(warehouse, "db.counts").snapshots())
    drop_last_commit(checkpoint)
    finished(_start(spark, warehouse, checkpoint, mode, path, bucket))
    assert counts() == dict(appended)
    assert len(table(warehouse, "db.counts").snapshots()) == before


def test_spark_refuses_update_mode_for_the_data_source(spark: Any, warehouse: str, tmp_path: Path) -> None:
    """Why :func:`paimon_spark.write_stream` exists: Spark itself refuses update mode for a Python sink."""
    catalog(warehouse).create_table("db.words", WORDS).append(pa.table({"word": ["a"]}, schema=WORDS))
    query = _start(spark, warehouse, str(tmp_path / "c"), "update", "format", "2")
    with pytest.raises(Exception, match="does not support Update mode"):
        query.awaitTermination(300)


def test_aggregation_output_modes_into_an_append_table_are_refused(
    spark: Any, warehouse: str, tmp_path: Path
) -> None:
    opened = catalog(warehouse)
    opened.create_table("db.words", WORDS).append(pa.table({"word": ["a", "b"]}, schema=WORDS))
    counts_schema = pa.schema([pa.field("word", pa.string()), pa.field("n", pa.int64(), nullable=False)])
    log = opened.create_table("db.counts", counts_schema)
    for mode in ("update", "complete"):
        with pytest.raises(Exception, match=f"{mode} output mode into db.counts, an append table"):
            paimon_spark.write_stream(
                _word_counts(spark, warehouse), "db.counts", warehouse=warehouse, output_mode=mode
            )
    raw = (
        _word_counts(spark, warehouse)
        .writeStream.format("paimon")
        .option("warehouse", warehouse)
        .option("checkpointLocation", str(tmp_path / "c"))
        .outputMode("complete")
        .trigger(availableNow=True)
        .start("db.counts")
    )
    with pytest.raises(Exception, match=r"complete output mode into db\.counts, an append table"):
        raw.awaitTermination(300)
    log = table(warehouse, "db.counts")
    assert log.latest_snapshot() is None and not list(Path(log.path).rglob("*.parquet"))


# --- changelog streams -----------------------------------------------------------------------------------------


def _changes(spark: Any, warehouse: str, name: str, query: str, **options: str) -> list[tuple[Any, ...]]:
    stream = spark.readStream.format("paimon").option("warehouse", warehouse).options(**options).load(name)
    running = stream.writeStream.format("memory").queryName(query).trigger(availableNow=True).start()
    finished(running)
    return [tuple(r) for r in spark.sql(f"SELECT * FROM {query}").collect()]


def _per_key(rows: list[tuple[Any, ...]]) -> dict[int, list[tuple[str, str | None]]]:
    """Each key's changes in arrival order (a key lives in one bucket, read in order)."""
    result: dict[int, list[tuple[str, str | None]]] = {}
    for kind, k, v in rows:
        result.setdefault(k, []).append((kind, v))
    return result


def _packed(changes: Sequence[tuple[str, str | None]]) -> list[tuple[str, list[str | None]]]:
    """A key's changes as Java's binlog packs them: a -U and the change after it make one row."""
    rows: list[tuple[str, list[str | None]]] = []
    i = 0
    while i < len(changes):
        if changes[i][0] == "-U" and i + 1 < len(changes):
            rows.append((changes[i + 1][0], [changes[i][1], changes[i + 1][1]]))
            i += 2
        else:
            rows.append((changes[i][0], [changes[i][1]]))
            i += 1
    return rows


def _write(spark: Any, warehouse: str, rows: list[tuple[Any, ...]], ddl: str = "k long, v string") -> None:
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), ddl)
    df.write.format("paimon").option("warehouse", warehouse).mode("append").save("db.src")


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_lookup_changelog_stream_has_update_pairs_and_deletes(
    spark: Any, warehouse: str, bucket: str
) -> None:
    """Spark writes (several tasks per bucket; the driver's compaction produces the lookup changelog), and
    the stream of the changes shows each update as -U/+U, each delete as -D, under ``rowkind``."""
    catalog(warehouse).create_table(
        "db.src", KV, primary_keys=["k"], options={"bucket": bucket, "changelog-producer": "lookup"}
    )
    _write(spark, warehouse, [(1, "a"), (2, "b"), (3, "c")])
    _write(spark, warehouse, [(1, "a2")])
    _write(spark, warehouse, [(2, "b", "-D"), (3, "c2", "+U")], "k long, v string, rowkind string")
    expected = {
        1: [("+I", "a"), ("-U", "a"), ("+U", "a2")],
        2: [("+I", "b"), ("-D", "b")],
        3: [("+I", "c"), ("-U", "c"), ("+U", "c2")],
    }
    start = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}
    audit = _changes(spark, warehouse, "db.src$audit_log", f"audit_{bucket[-1]}", **start)
    assert _per_key(audit) == expected
    flagged = _changes(
        spark, warehouse, "db.src", f"flagged_{bucket[-1]}", **start, **{"read.changelog": "true"}
    )
    assert _per_key(flagged) == expected
    # $binlog: the same changes with array columns, each -U packed with the +U after it
    binlog = _changes(spark, warehouse, "db.src$binlog", f"binlog_{bucket[-1]}", **start)
    packed: dict[int, list[tuple[str, list[str | None]]]] = {}
    for kind, keys, values in binlog:
        assert set(keys) == {keys[0]} and len(keys) == len(values)
        packed.setdefault(keys[0], []).append((kind, values))
    assert packed == {k: _packed(changes) for k, changes in expected.items()}
    # streamed plainly, the table gives its upserts: no rowkind column, no retractions
    plain = _changes(spark, warehouse, "db.src", f"plain_{bucket[-1]}", **start)
    assert sorted(plain) == sorted(
        (k, v) for k, changes in expected.items() for kind, v in changes if kind[0] == "+"
    )


def test_a_consumer_resumes_a_changelog_stream(spark: Any, warehouse: str, tmp_path: Path) -> None:
    catalog(warehouse).create_table("db.src", KV, primary_keys=["k"], options={"changelog-producer": "input"})
    _write(spark, warehouse, [(1, "a"), (2, "b")])

    def run(checkpoint: str) -> None:
        stream_once(spark, warehouse, checkpoint, "db.src$audit_log", "db.copy", **{"consumer-id": "job"})

    catalog(warehouse).create_table(
        "db.copy", KV, primary_keys=["k"], options={"bucket": "1", "write-only": "true"}
    )
    run(str(tmp_path / "c1"))
    _write(spark, warehouse, [(1, "a2")])
    run(str(tmp_path / "c1"))
    run(str(tmp_path / "c1"))  # Spark commits the last batch's offsets at the restart: the consumer moves on
    _write(spark, warehouse, [(2, "b2"), (3, "c")])
    copy = table(warehouse, "db.copy")
    before = {f.file_name for f in (e.file for e in copy.live_entries())}
    run(str(tmp_path / "c2"))  # a new query with the same consumer: only the changes since
    copy = table(warehouse, "db.copy")
    new = [e for e in copy.live_entries() if e.file.file_name not in before]
    assert sum(e.file.row_count for e in new) == 2  # the input changelog of the last write: k2, k3
    assert {r["k"]: r["v"] for r in copy.to_arrow().to_pylist()} == {1: "a2", 2: "b2", 3: "c"}


@pytest.mark.parametrize("path", ["format", "helper"])
def test_a_changelog_stream_replicates_a_primary_key_table(
    spark: Any, warehouse: str, tmp_path: Path, path: str
) -> None:
    """Append mode with a rowkind column: updates and deletes of the source reach the copy, exactly once
    across a restart."""
    opened = catalog(warehouse)
    opened.create_table(
        "db.src", KV, primary_keys=["k"], options={"bucket": "2", "changelog-producer": "lookup"}
    )
    opened.create_table("db.copy", KV, primary_keys=["k"], options={"bucket": "3"})
    checkpoint = str(tmp_path / "checkpoint")

    def run() -> None:
        stream = (
            spark.readStream.format("paimon")
            .option("warehouse", warehouse)
            .option("read.changelog", "true")
            .load("db.src")
        )
        if path == "helper":
            writer = paimon_spark.write_stream(stream, "db.copy", warehouse=warehouse)
        else:
            writer = (
                stream.writeStream.format("paimon").option("warehouse", warehouse).option("path", "db.copy")
            )
        finished(writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start())

    def merged(name: str) -> dict[int, str]:
        return {r["k"]: r["v"] for r in table(warehouse, name).to_arrow().to_pylist()}

    _write(spark, warehouse, [(k, f"v{k}") for k in range(20)])
    run()
    assert merged("db.copy") == merged("db.src") == {k: f"v{k}" for k in range(20)}
    _write(spark, warehouse, [(k, "w") for k in range(0, 20, 3)])
    _write(spark, warehouse, [(k, None, "-D") for k in range(1, 20, 4)], "k long, v string, rowkind string")
    run()
    assert merged("db.copy") == merged("db.src")
    assert 1 not in merged("db.copy") and merged("db.copy")[3] == "w"
