"""Progress bars: shown to a person at a terminal, never in pipes, files or CI."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from paimon_core import Catalog, Table
from paimon_core.cli import main
from paimon_core.maintenance import expire_snapshots, remove_orphan_files
from paimon_core.progress import Progress, shows_progress

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


@pytest.fixture
def terminal() -> Iterator[tuple[int, io.TextIOWrapper]]:
    """A real pseudo-terminal: (the side a person would read, a text stream writing to the terminal)."""
    reader, writer = os.openpty()
    stream = io.TextIOWrapper(os.fdopen(writer, "wb", buffering=0), encoding="utf-8", write_through=True)
    yield reader, stream
    stream.close()
    os.close(reader)


def _read_terminal(reader: int) -> str:
    chunks = []
    while True:
        os.set_blocking(reader, False)
        try:
            chunk = os.read(reader, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


@pytest.fixture
def interactive(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment of a person's shell (tests may run under CI)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def test_a_terminal_sees_progress_but_not_in_ci_or_a_dumb_terminal(
    terminal: tuple[int, io.TextIOWrapper], interactive: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, stream = terminal
    assert shows_progress(stream)
    assert not shows_progress(io.StringIO())  # a pipe or a file
    monkeypatch.setenv("TERM", "dumb")
    assert not shows_progress(stream)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("CI", "true")
    assert not shows_progress(stream)
    assert not Progress(stream=stream).enabled and Progress(True, stream=stream).enabled


def test_counter_draws_a_bar_and_ends_its_line(
    terminal: tuple[int, io.TextIOWrapper], interactive: None
) -> None:
    reader, stream = terminal
    counter = Progress(stream=stream).counter("work", 3, "files", total_bytes=3 << 20)
    for _ in range(3):
        counter.advance(1, 1 << 20)
    shown = _read_terminal(reader)
    assert shown.startswith("\rwork [------------------------] 0/3 files 0 B/3.0 MiB")
    assert shown.endswith("\rwork [########################] 3/3 files 3.0 MiB/3.0 MiB\r\n")  # the tty's CRLF


def _table_with_history(warehouse: str, commits: int) -> Table:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options={"write-only": "true"})
    for i in range(commits):
        table.overwrite(pa.table({"id": [i], "p": ["a"]}, schema=SCHEMA))
    return table


def test_expiration_and_orphan_removal_show_their_deletions(warehouse: str) -> None:
    table = _table_with_history(warehouse, 5)
    shown = io.StringIO()
    expired = expire_snapshots(table, retain_max=1, retain_min=1, progress=Progress(True, shown))
    assert expired == 4
    last = shown.getvalue().split("\r")[-1]
    assert last.startswith("expire-snapshots [########################] ") and last.endswith(" files\n")
    done, total = last.split("] ")[1].split(" ")[0].split("/")
    assert (
        done == total and int(total) >= 4 + 4
    )  # four snapshot files and four overwritten data files at least

    orphan = Path(warehouse, "db.db", "t", "p=a", "bucket-0", "data-orphan-0.parquet")
    orphan.write_bytes(b"x" * 2048)
    shown = io.StringIO()
    later = int(time.time() * 1000) + 60_000
    result = remove_orphan_files(
        table, older_than=later - 1, now_millis=later, progress=Progress(True, shown)
    )
    assert result.deleted == (str(orphan),)
    assert shown.getvalue().endswith(
        "\rremove-orphan-files [########################] 1/1 files 2.0 KiB/2.0 KiB\n"
    )
    quiet = io.StringIO()
    expire_snapshots(table, retain_max=1, retain_min=1, progress=Progress(None, quiet))
    assert quiet.getvalue() == ""  # not a terminal


def _files(tmp_path: Path) -> list[str]:
    first = tmp_path / "first.parquet"
    pq.write_table(pa.table({"id": [1, 2], "p": ["a", "b"]}), first)
    second = tmp_path / "second.csv"
    pa_csv.write_csv(pa.table({"id": [3], "p": ["a"]}), second)
    return [str(first), str(second)]


def test_the_cli_writes_files_quietly_into_a_pipe(
    warehouse: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    assert main(["write", table.path, *_files(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == "snapshot 1\n" and err == ""
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert main(["write", table.path, str(tmp_path / "nothing.txt")]) == 1
    assert capsys.readouterr().err == (
        f"paimon-py: error: cannot tell the format of '{tmp_path / 'nothing.txt'}' from its suffix: give --format\n"
    )


def test_the_cli_shows_a_write_at_a_terminal(warehouse: str, tmp_path: Path, interactive: None) -> None:
    catalog = Catalog.open(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    reader, writer = os.openpty()
    try:
        run = subprocess.run(
            [sys.executable, "-m", "paimon_core.cli", "write", table.path, *_files(tmp_path)],
            stderr=writer,
            stdout=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
        shown = _read_terminal(reader)
    finally:
        os.close(writer)
        os.close(reader)
    assert run.returncode == 0 and run.stdout == "snapshot 1\n"
    assert "\rwrite [------------------------] 0/2 files" in shown
    assert re.search(r"\rwrite \[#{24}\] 2/2 files [\d.]+ \w+/[\d.]+ \w+\r\n$", shown), shown
