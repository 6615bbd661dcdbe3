"""What a new user sees on the paths a first hour takes (issue 33, items 5 and 6): the CLI takes a table
either way, says its version, ends on Ctrl-C with one line, tells a warehouse from a table and says why a
compaction did nothing; misspelled keyword arguments, remote paths without paimon-storage and a time travel
before the first snapshot are explained."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_core.cli
from paimon_core import Catalog
from paimon_core.cli import main
from paimon_core.errors import SnapshotNotFoundError, StorageBackendNotFound

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.string())])


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "p": ["a"] * len(ids)}, schema=SCHEMA)


@pytest.fixture()
def table(catalog: Catalog) -> object:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(1, 2))
    return table


# --- the CLI ------------------------------------------------------------------------------------------------


def test_every_table_command_takes_the_directory_or_the_warehouse_and_table(
    catalog: Catalog, table: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory, warehouse = f"{catalog.warehouse}/db.db/t", catalog.warehouse
    forms = (
        [directory],
        [warehouse, "--table", "db.t"],
        ["--warehouse", warehouse, "--database", "db", "--table", "t"],
    )
    for form in forms:
        assert main(["info", "--json", *form]) == 0
        assert json.loads(capsys.readouterr().out)["snapshot_count"] >= 1
        assert main(["read", *form]) == 0
        assert sorted(json.loads(line)["id"] for line in capsys.readouterr().out.splitlines())[:2] == [1, 2]
    data = tmp_path / "more.jsonl"
    data.write_text('{"id": 3, "p": "a"}\n')
    assert main(["write", warehouse, str(data), "--table", "db.t"]) == 0
    assert main(["write", "--warehouse", warehouse, "--table", "db.t", str(data)]) == 0
    assert main(["write", directory, str(data)]) == 0
    assert main(["create-tag", "--warehouse", warehouse, "--table", "db.t", "first", "--snapshot", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "snapshot 2",
        "snapshot 3",
        "snapshot 4",
        "tag 'first' -> snapshot 1",
    ]
    assert main(["read", warehouse, "--table", "db.t$tags"]) == 0
    assert [json.loads(line)["tag_name"] for line in capsys.readouterr().out.splitlines()] == ["first"]
    assert main(["read", "--tag", "first", warehouse, "--table", "db.t"]) == 0
    assert sorted(json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()) == [1, 2]
    assert catalog.get_table("db.t").to_arrow().num_rows == 5


def test_the_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("paimon-py (paimon-core ")


def test_ctrl_c_ends_with_one_line(
    catalog: Catalog, table: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(paimon_core.cli, "table_info", interrupted)
    assert main(["info", f"{catalog.warehouse}/db.db/t"]) == 130
    assert capsys.readouterr().err == "paimon-py: interrupted\n"


def test_a_warehouse_or_database_given_for_a_table_says_what_is_expected(
    catalog: Catalog, table: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["info", catalog.warehouse]) == 1
    err = capsys.readouterr().err
    assert "looks like a warehouse (databases db)" in err and "<warehouse>/<database>.db/<table>" in err
    assert main(["info", f"{catalog.warehouse}/db.db"]) == 1
    assert (
        f"a database directory; a table directory is <warehouse>/<database>.db/<table>, e.g. {catalog.warehouse}/db.db/t"
        in capsys.readouterr().err
    )


def test_a_compaction_with_nothing_to_do_says_when_it_would(
    catalog: Catalog, table: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compact", f"{catalog.warehouse}/db.db/t", "--threads", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "nothing to compact among 1 files" in out
    assert "compacted once it has 5 files smaller than the target size (compaction.min.file-num" in out


def test_table_compact_runs_the_compaction_job(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.small", SCHEMA, options={"compaction.min.file-num": "2", "write-only": "true"}
    )
    for i in range(3):
        table.append(_rows(i))
    summary = table.compact(parallelism=1)
    assert summary.tasks >= 1 and len(summary.snapshots) == 1
    assert len(catalog.get_table("db.small").live_entries()) == 1


# --- messages -----------------------------------------------------------------------------------------------


def test_a_misspelled_keyword_argument_names_the_parameter(catalog: Catalog, table: object) -> None:
    with pytest.raises(
        TypeError,
        match=r"create_table\(\) got an unexpected keyword argument 'primary_key'; did you mean 'primary_keys'\?",
    ):
        catalog.create_table("db.u", SCHEMA, primary_key=["id"])  # type: ignore[call-arg]
    opened = catalog.get_table("db.t")
    with pytest.raises(TypeError, match="'snapshot'; did you mean 'snapshot_id'"):
        opened.to_arrow(snapshot=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'colums'; did you mean 'columns'"):
        opened.to_pandas(colums=["id"])  # type: ignore[call-arg]
    assert opened.to_arrow(columns=["id"], snapshot_id=1).num_rows == 2


def test_a_remote_path_without_paimon_storage_names_the_package() -> None:
    from paimon_core.storage import StorageRegistry, create_plugin_manager, set_default_registry

    # The registry of an install without paimon-storage: the built-in file and memory backends only.
    bare = StorageRegistry(create_plugin_manager(entry_points=False))
    previous = set_default_registry(bare)
    try:
        with pytest.raises(StorageBackendNotFound, match=r"s3:// paths need the paimon-storage package"):
            Catalog.open("s3://bucket/warehouse")
    finally:
        set_default_registry(previous)
    assert "paimon-storage" not in str(StorageBackendNotFound("hdfs", ["file", "memory"]))


def test_a_time_travel_before_the_first_snapshot_is_told_as_a_time(catalog: Catalog, table: object) -> None:
    opened = catalog.get_table("db.t")
    first = opened.snapshot_manager.earliest()
    assert first is not None
    with pytest.raises(SnapshotNotFoundError) as error:
        opened.to_arrow(timestamp="2001-02-03 04:05:06")
    message = str(error.value)
    assert "is as old as 2001-02-03 04:05:06.000" in message
    committed = dt.datetime.fromtimestamp(first.time_millis / 1000).isoformat(
        sep=" ", timespec="milliseconds"
    )
    assert f"its earliest snapshot, 1, was committed at {committed}" in message
