"""The ``paimon-py`` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConsumerManager
from paimon_core.cli import main

SCHEMA = pa.schema([pa.field("k", pa.string()), pa.field("v", pa.int64())])


def _table(catalog: Catalog) -> str:
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["k"], options={"file.compression": "snappy"})
    table.append(pa.table({"k": ["a", "b"], "v": [1, 2]}, schema=SCHEMA))
    table.append(pa.table({"k": ["a"], "v": [3]}, schema=SCHEMA))
    return table.path


def test_info_text(catalog: Catalog, capsys: pytest.CaptureFixture[str]) -> None:
    path = _table(catalog)
    assert main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "file.compression = snappy" in out
    assert "Files     3 files" in out and "3 rows, 2 partitions" in out
    assert "APPEND" in out and "Partition keys  k" in out


def test_info_json(catalog: Catalog, capsys: pytest.CaptureFixture[str]) -> None:
    path = _table(catalog)
    assert main(["info", "--json", path]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in info["fields"]] == ["k", "v"]
    assert info["snapshot_count"] == 2 and [s["id"] for s in info["snapshots"]] == [1, 2]
    assert info["files"]["count"] == 3 and info["files"]["rows"] == 3
    sizes = [p.stat().st_size for p in Path(path).glob("k=*/bucket-0/*.parquet")]
    assert info["files"]["total_bytes"] == sum(sizes)


def test_info_on_missing_table_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(tmp_path / "nope")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_console_script_runs(catalog: Catalog) -> None:
    path = _table(catalog)
    result = subprocess.run(
        [sys.executable, "-m", "paimon_core.cli", "info", path], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "Snapshots 2" in result.stdout


def test_maintenance_commands(catalog: Catalog, capsys: pytest.CaptureFixture[str]) -> None:
    path = _table(catalog)
    table = catalog.get_table("db.t")
    table.append(pa.table({"k": ["b"], "v": [4]}, schema=SCHEMA))
    assert main(["create-tag", path, "first", "--snapshot", "1"]) == 0
    assert "tag 'first' -> snapshot 1" in capsys.readouterr().out
    assert main(["rollback", path, "--snapshot", "2"]) == 0
    assert [s.id for s in table.snapshots()] == [1, 2]
    assert main(["expire-snapshots", path, "--retain-max", "1", "--retain-min", "1",
                 "--older-than", "2999-01-01 00:00:00"]) == 0  # fmt: skip
    assert "expired 1 snapshot(s)" in capsys.readouterr().out.splitlines()[-1]
    assert sorted(r["v"] for r in table.to_arrow().to_pylist()) == [1, 2, 3]
    assert main(["remove-orphan-files", path, "--dry-run"]) == 0
    assert "would delete 0 orphan file(s)" in capsys.readouterr().out
    assert main(["reset-consumer", path, "reader", "--next-snapshot", "2"]) == 0
    assert main(["reset-consumer", path, "keeper", "--next-snapshot", "2"]) == 0
    capsys.readouterr()
    assert main(["clear-consumers", path, "--excluding", "keep.*"]) == 0
    assert capsys.readouterr().out == "cleared 1 consumer(s): reader\n"
    assert ConsumerManager(table.storage, table.path).consumers() == {"keeper": 2}
    assert main(["delete-tag", path, "first"]) == 0
    assert main(["rollback", path, "--tag", "missing"]) == 1
    assert "tag 'missing' does not exist" in capsys.readouterr().err


def test_a_misspelled_command_names_the_nearest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compat", "/somewhere"]) == 2
    assert capsys.readouterr().err == "paimon-py: error: unknown command 'compat'; did you mean 'compact'?\n"
    assert main(["zzz"]) == 2
    assert capsys.readouterr().err.startswith(
        "paimon-py: error: unknown command 'zzz' (commands: info, read, "
    )


def test_a_closed_pipe_ends_the_output_quietly(catalog: Catalog) -> None:
    table = catalog.create_table("db.many", SCHEMA)
    table.append(pa.table({"k": ["x"] * 50_000, "v": range(50_000)}, schema=SCHEMA))
    command = [sys.executable, "-m", "paimon_core.cli", "read", table.path]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # as `| head -1` does
        error = process.stderr.read().decode()
        code = process.wait()
    assert json.loads(first)["k"] == "x"
    assert error == "" and code == 141
