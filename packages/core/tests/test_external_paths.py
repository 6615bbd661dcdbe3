"""External data paths (docs/format.md#external-data-paths): ``data-file.external-paths`` with each strategy,
``data-file.path-directory``, and every component that finds files through ``_EXTERNAL_PATH``: reads,
compaction, expiration, rollback and orphan removal, on the local and the in-memory backend."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import Catalog, ConfigError, Table, UnsupportedTableFeatureError
from paimon_core.compact import compact_table
from paimon_core.maintenance import expire_snapshots, remove_orphan_files, rollback_to
from paimon_core.storage import join_path, uri_scheme
from paimon_core.table._external import _entropy_dirs

SCHEMA = pa.schema([("id", pa.int64(), False), ("s", pa.string())])
DAY_MS = 86_400_000


def _rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": ids, "s": [f"value-{i}" * 3 for i in ids]}, schema=SCHEMA)


class Place:
    """A warehouse and two external roots on one backend."""

    def __init__(self, backend: str, tmp_path: Path) -> None:
        if backend == "local":
            self.warehouse = str(tmp_path / "warehouse")
            self.roots = [f"file://{tmp_path}/ext-a", f"file://{tmp_path}/ext-b"]
        else:
            base = f"memory://external-{uuid.uuid4().hex}"
            self.warehouse = f"{base}/warehouse"
            self.roots = [f"{base}/ext-a", f"{base}/ext-b"]
        self.catalog = Catalog.open(self.warehouse, create=True)
        self.catalog.create_database("db")

    def table(self, options: dict[str, str] | None = None, primary_key: bool = False) -> Table:
        given = {"data-file.external-paths": ",".join(self.roots), **(options or {})}
        return self.catalog.create_table(
            "db.t",
            SCHEMA,
            primary_keys=["id"] if primary_key else (),
            options={"bucket": "1", **given} if primary_key else given,
        )

    def files_under(self, table: Table, root: str) -> set[str]:
        return {i.path for i in table.storage.list_prefix(root) if not i.is_dir}


@pytest.fixture(params=["local", "memory"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    yield Place(request.param, tmp_path)


def _ids(table: Table, snapshot_id: int | None = None) -> list[int]:
    return sorted(table.to_arrow(snapshot_id=snapshot_id).column("id").to_pylist())


def _live_paths(table: Table) -> set[str]:
    return {e.file.external_path or "" for e in table.live_entries()}


@pytest.mark.parametrize("strategy", ["round-robin", "specific-fs", "entropy-inject", "weight-robin"])
def test_each_strategy_writes_under_the_external_roots_and_reads_back(place: Place, strategy: str) -> None:
    options = {
        "data-file.external-paths.strategy": strategy,
        "target-file-size": "1 kb",  # many files from one writer: each picks its root anew
        "file.block-size": "1 kb",
    }
    roots = place.roots
    if strategy == "specific-fs":
        # a root of another scheme is listed but not chosen
        scheme = uri_scheme(roots[0])
        other = "s3://elsewhere/ext" if scheme != "s3" else "memory://elsewhere/ext"
        place.roots = [roots[0], other]
        options["data-file.external-paths.specific-fs"] = scheme
    if strategy == "weight-robin":
        options["data-file.external-paths.weights"] = "1,1"
    table = place.table(options)
    table.append(_rows(0, 3000))
    table.append(_rows(3000, 500))
    assert _ids(table) == list(range(3500))
    entries = table.live_entries()
    assert len(entries) > 4
    used = set()
    for entry in entries:
        path = entry.file.external_path
        assert path is not None and path.endswith("/" + entry.file.file_name)
        root = next(r for r in place.roots if path.startswith(r + "/"))
        used.add(root)
        middle = path[len(root) + 1 : -len(entry.file.file_name) - 1]
        if strategy == "entropy-inject":
            assert middle == f"bucket-0/{_entropy_dirs(entry.file.file_name)}"
        else:
            assert middle == "bucket-0"
        assert table.storage.exists(path)
    expected_roots = {roots[0]} if strategy == "specific-fs" else set(roots)
    if strategy == "weight-robin":
        assert used <= expected_roots  # random by weight: both are likely, not certain
    else:
        assert used == expected_roots  # in turn: consecutive files of one writer alternate
    # the table directory holds no data file
    assert not [p for p in place.files_under(table, table.path) if p.endswith(".parquet")]


def test_no_strategy_writes_into_the_table(place: Place) -> None:
    table = place.table()  # data-file.external-paths without a strategy: Java's default "none"
    table.append(_rows(0, 10))
    assert _live_paths(table) == {""}
    assert _ids(table) == list(range(10))


def test_path_directory_under_the_table_and_under_the_external_root(place: Place) -> None:
    table = place.catalog.create_table(
        "db.plain", SCHEMA, options={"data-file.path-directory": "data", "bucket": "2", "bucket-key": "id"}
    )
    table.append(_rows(0, 50))
    for entry in table.live_entries():
        assert entry.file.external_path is None
        assert table.storage.exists(
            join_path(table.path, "data", f"bucket-{entry.bucket}", entry.file.file_name)
        )
    assert _ids(table) == list(range(50))
    external = place.table(
        {"data-file.path-directory": "data", "data-file.external-paths.strategy": "round-robin"}
    )
    external.append(_rows(0, 50))
    for entry in external.live_entries():
        path = entry.file.external_path or ""
        assert any(path == join_path(r, "data", "bucket-0", entry.file.file_name) for r in place.roots)
    assert _ids(external) == list(range(50))


def test_primary_key_compaction_writes_external_files_and_expiration_deletes_the_old_ones(
    place: Place,
) -> None:
    table = place.table(
        {
            "data-file.external-paths.strategy": "round-robin",
            "write-only": "true",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "1",
        },
        primary_key=True,
    )
    for start in (0, 5, 10):
        table.append(_rows(start, 10))  # overlapping keys: the read merges them
    before = _live_paths(table)
    compact_table(table)
    after = _live_paths(table)
    assert after and not (after & before) and "" not in after
    assert _ids(table) == list(range(20))
    assert all(table.storage.exists(p) for p in before)  # the older snapshots still need them
    expire_snapshots(table)
    assert not any(table.storage.exists(p) for p in before)
    assert all(table.storage.exists(p) for p in after)
    assert _ids(table) == list(range(20))


def test_append_compaction_rewrites_into_the_external_roots(place: Place) -> None:
    table = place.table({"data-file.external-paths.strategy": "round-robin", "write-only": "true"})
    for start in range(0, 50, 10):
        table.append(_rows(start, 10))
    before = _live_paths(table)
    compact_table(table.copy({"compaction.min.file-num": "2"}))
    after = _live_paths(table)
    assert len(before) == 5 and len(after) < len(before) and not (after & before)
    assert all(any(p.startswith(r + "/bucket-0/") for r in place.roots) for p in after)
    assert _ids(table) == list(range(50))


def test_orphan_removal_keeps_live_external_files_and_deletes_orphans_there(place: Place) -> None:
    table = place.table({"data-file.external-paths.strategy": "round-robin"})
    table.append(_rows(0, 10))
    table.append(_rows(10, 10))
    writer = table.new_write()
    writer.write(_rows(100, 5))
    uncommitted = {f.external_path for m in writer.prepare_commit() for f in m.new_files}
    assert len(uncommitted) == 1 and None not in uncommitted
    live = _live_paths(table)
    listed = {_spelled_as_listed(table, p) for p in uncommitted if p}
    far = int(time.time() * 1000) + 2 * DAY_MS
    result = remove_orphan_files(table, now_millis=far)
    assert set(result.deleted) == listed
    assert not any(table.storage.exists(p) for p in uncommitted if p)
    assert all(table.storage.exists(p) for p in live)
    assert _ids(table) == list(range(20))


def _spelled_as_listed(table: Table, path: str) -> str:
    parent, _, name = path.rpartition("/")
    return next(i.path for i in table.storage.list_dir(parent) if i.name == name)


def test_rollback_then_orphan_removal_deletes_the_rolled_back_external_files(place: Place) -> None:
    table = place.table({"data-file.external-paths.strategy": "round-robin"})
    table.append(_rows(0, 10))
    first = _live_paths(table)
    table.append(_rows(10, 10))
    rolled_back = _live_paths(table) - first
    rollback_to(table, 1)
    assert _ids(table) == list(range(10))
    remove_orphan_files(table, now_millis=int(time.time() * 1000) + 2 * DAY_MS)
    assert not any(table.storage.exists(p) for p in rolled_back)
    assert all(table.storage.exists(p) for p in first)


def test_java_spelling_of_a_local_external_path_is_live_for_orphan_removal(tmp_path: Path) -> None:
    """Java records ``file:///x`` as ``file:/x``: orphan removal must match it to the listed file."""
    place = Place("local", tmp_path)
    table = place.table({"data-file.external-paths.strategy": "round-robin"})
    writer = table.new_write()
    writer.write(_rows(0, 10))
    messages = [
        dataclasses.replace(
            m,
            new_files=tuple(
                f.copy(external_path=(f.external_path or "").replace("file:///", "file:/"))
                for f in m.new_files
            ),
        )
        for m in writer.prepare_commit()
    ]
    table.new_commit().commit(messages)
    [path] = _live_paths(table)
    assert path.startswith("file:/") and not path.startswith("file://")
    assert remove_orphan_files(table, now_millis=int(time.time() * 1000) + 2 * DAY_MS).deleted == ()
    assert _ids(table) == list(range(10))


def test_external_path_options_are_checked(place: Place) -> None:
    with pytest.raises(ConfigError, match="has no scheme"):
        place.catalog.create_table(
            "db.a",
            SCHEMA,
            options={
                "data-file.external-paths": "/no/scheme",
                "data-file.external-paths.strategy": "round-robin",
            },
        ).append(_rows(0, 1))
    with pytest.raises(ConfigError, match="specific-fs"):
        place.table({"data-file.external-paths.strategy": "specific-fs"}).append(_rows(0, 1))
    with pytest.raises(ConfigError, match=r"data-file\.external-paths\.strategy"):
        place.catalog.create_table("db.b", SCHEMA, options={"data-file.external-paths.strategy": "sideways"})


def test_an_external_path_on_another_storage_is_refused_by_name(place: Place) -> None:
    other = "s3://bucket/ext" if place.warehouse.startswith("memory:") else "memory://ext"
    with pytest.raises(UnsupportedTableFeatureError, match="another storage than the table") as info:
        place.catalog.create_table(
            "db.c",
            SCHEMA,
            options={"data-file.external-paths": other, "data-file.external-paths.strategy": "round-robin"},
        )
    assert info.value.key == "data-file.external-paths"


def test_altering_to_an_external_path_on_another_storage_is_refused_before_it_is_written(
    place: Place,
) -> None:
    table = place.catalog.create_table("db.d", SCHEMA)
    other = "s3://bucket/ext" if place.warehouse.startswith("memory:") else "memory://ext"
    with pytest.raises(UnsupportedTableFeatureError, match="another storage"):
        place.catalog.alter_options(
            "db.d", {"data-file.external-paths": other, "data-file.external-paths.strategy": "round-robin"}
        )
    assert place.catalog.get_table("db.d").schema.id == table.schema.id  # still opens, unchanged
    altered = place.catalog.alter_options(
        "db.d",
        {"data-file.external-paths": place.roots[0], "data-file.external-paths.strategy": "round-robin"},
    )
    altered.append(_rows(0, 5))
    assert all(p.startswith(place.roots[0] + "/") for p in _live_paths(altered))


def test_index_files_live_beside_their_external_data_files(place: Place) -> None:
    """A data file's ``.index`` extra file is written, read for pruning and deleted beside the data file's
    external path, as Java places extra files."""
    table = place.table(
        {
            "data-file.external-paths.strategy": "round-robin",
            "file-index.bloom-filter.columns": "s",
            "file-index.in-manifest-threshold": "1 b",
        }
    )
    for start in (0, 100, 200):
        table.append(_rows(start, 50))
    external = set().union(*(place.files_under(table, root) for root in place.roots))
    indexes = {p for p in external if p.endswith(".index")}
    assert len(indexes) == 3 and {p.removesuffix(".index") for p in indexes} <= external
    wanted = f"value-{105}" * 3
    assert len(table.scan(filter=[("s", "=", wanted)]).plan()) == 1  # two files pruned by their .index
    assert table.to_arrow(filter=[("s", "=", wanted)]).column("id").to_pylist() == [105]
    table.overwrite(_rows(1000, 5))
    expire_snapshots(table.copy({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}))
    left = set().union(*(place.files_under(table, root) for root in place.roots))
    assert not (left & external)  # the expired data files and their indexes are gone
