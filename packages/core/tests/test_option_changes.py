"""Options that shape a table's data, at every door: create, alter, dynamic options (``get_table``, ``copy``,
``open_table``); the rescale that changes ``bucket``; options that contradict each other."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog, open_table
from paimon_core import options as opts
from paimon_core.bucket import bucket_of_row
from paimon_core.errors import ConfigError
from paimon_core.schema_change import SchemaChange
from paimon_core.types import BigIntType

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("k", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
        pa.field("kind", pa.string()),
    ]
)

# A value other than the stored one for every option a table keeps for life, or that only a rescale
# changes. An option marked so without an entry here fails test_every_reshaping_option_has_a_case.
OTHER_VALUE = {
    "bucket": "7",
    "bucket-key": "k",
    "partition.default-name": "NULL",
    "partition.legacy-name": "false",
    "merge-engine": "first-row",
    "sequence.field": "v",
    "rowkind.field": "kind",
    "partial-update.remove-record-on-delete": "true",
    "partial-update.remove-record-on-sequence-group": "v",
    "aggregation.remove-record-on-delete": "true",
    "dynamic-bucket.initial-buckets": "3",
    "primary-key.nullable": "true",
    "data-file.path-directory": "data",
}
# Options whose parser takes one value only: they cannot be given another.
SINGLE_VALUED = {"bucket-function.type", "row-tracking.enabled"}
RESHAPING = sorted(o.key for o in opts.all_options() if o.immutable or not o.dynamic)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    catalog = Catalog.open(str(tmp_path / "warehouse"), create=True)
    catalog.create_database("db")
    return catalog


def _rows(keys: list[int], version: str = "a", dt: str = "d1") -> pa.Table:
    return pa.table(
        {"dt": [dt] * len(keys), "k": keys, "v": [f"{version}{k}" for k in keys], "kind": ["+I"] * len(keys)},
        schema=SCHEMA,
    )


def _kv(catalog: Catalog, **options: str) -> Any:
    return catalog.create_table(
        "db.kv",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "k"],
        options={"bucket": "2", **options},
    )


def test_every_reshaping_option_has_a_case() -> None:
    assert set(RESHAPING) - SINGLE_VALUED == set(OTHER_VALUE)
    assert not opts.BUCKET.dynamic and not opts.BUCKET.immutable  # a rescale changes it, an ALTER first


@pytest.mark.parametrize("key", sorted(OTHER_VALUE))
def test_a_dynamic_option_never_reshapes_the_table(catalog: Catalog, key: str) -> None:
    table = _kv(catalog)
    table.append(_rows([1, 2, 3]))
    value = OTHER_VALUE[key]
    doors: list[Callable[[], object]] = [
        lambda: catalog.get_table("db.kv", **{key: value}),
        lambda: table.copy({key: value}),
        lambda: open_table(table.path, None, **{key: value}),
        lambda: catalog.get_table("db.kv$files", **{key: value}),
    ]
    for door in doors:
        with pytest.raises(ConfigError, match=f"option '{key}' cannot change") as raised:
            door()
        assert raised.value.key == key
    # the stored value itself is no change
    stored = table.options.get(key)
    if stored is not None:
        assert catalog.get_table("db.kv", **{key: stored}).options[key] == stored
    assert sorted(catalog.get_table("db.kv").to_arrow()["k"].to_pylist()) == [1, 2, 3]


def test_a_dynamic_bucket_points_to_the_rescale(catalog: Catalog) -> None:
    _kv(catalog).append(_rows(list(range(6))))
    with pytest.raises(ConfigError, match="rescale: ALTER TABLE SET") as raised:
        catalog.get_table("db.kv", bucket="7").append(_rows(list(range(6))))
    assert "as a dynamic option" in str(raised.value)
    assert catalog.get_table("db.kv").to_arrow().num_rows == 6  # the corruption the refusal prevents


@pytest.mark.parametrize("key", sorted(set(OTHER_VALUE) - {"bucket"}))
def test_an_alter_never_reshapes_the_table(catalog: Catalog, key: str) -> None:
    _kv(catalog)
    with pytest.raises(ConfigError, match="fixed when the table is created"):
        catalog.alter_options("db.kv", {key: OTHER_VALUE[key]})


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [("-1", "4", "keeps it"), ("4", "-1", "cannot become bucket = -1")],
)
def test_only_a_fixed_bucket_number_changes(catalog: Catalog, old: str, new: str, reason: str) -> None:
    catalog.create_table("db.kv", SCHEMA, primary_keys=["dt", "k"], options={"bucket": old})
    with pytest.raises(ConfigError, match=reason):
        catalog.alter_options("db.kv", {"bucket": new})


def test_ignore_delete_turns_on_but_never_off(catalog: Catalog) -> None:
    _kv(catalog, **{"merge-engine": "first-row"})
    assert catalog.get_table("db.kv", **{"ignore-delete": "true"}).options.get_option(opts.IGNORE_DELETE)
    catalog.alter_options("db.kv", {"first-row.ignore-delete": "true"})
    for change in ({"first-row.ignore-delete": "false"}, {"ignore-delete": "false"}):
        with pytest.raises(ConfigError, match="cannot go back from true to false"):
            catalog.alter_options("db.kv", change)
        with pytest.raises(ConfigError, match="cannot go back from true to false"):
            catalog.get_table("db.kv", **change)


def _check_layout(table: Any, buckets: int) -> None:
    """Every live file of the table is in the bucket its keys hash to, for ``buckets`` buckets."""
    key_types = [BigIntType(nullable=False)]
    for entry in table.live_entries():
        assert entry.total_buckets == buckets
        path = f"{table.bucket_dir(entry.partition, entry.bucket)}/{entry.file.file_name}"
        for key in pq.ParquetFile(path).read(columns=["k"])["k"].to_pylist():  # no hive discovery of dt=
            assert bucket_of_row([key], key_types, buckets) == entry.bucket


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.integers(1, 5),
    after=st.integers(1, 9),
    history=st.lists(
        st.tuples(st.sampled_from(["d1", "d2"]), st.lists(st.integers(0, 40), min_size=1, max_size=12)),
        min_size=1,
        max_size=4,
    ),
    later=st.lists(st.integers(0, 40), min_size=1, max_size=12),
)
def test_a_rescale_moves_every_key_to_its_new_bucket(
    tmp_path_factory: pytest.TempPathFactory,
    before: int,
    after: int,
    history: list[tuple[str, list[int]]],
    later: list[int],
) -> None:
    catalog = Catalog.open(str(tmp_path_factory.mktemp("wh")), create=True)
    catalog.create_database("db")
    table = _kv(catalog, bucket=str(before))
    model: dict[tuple[str, int], str] = {}
    for number, (dt, keys) in enumerate(history):
        table.append(_rows(keys, f"v{number}-", dt))
        model.update({(dt, k): f"v{number}-{k}" for k in keys})
    catalog.alter_options("db.kv", {"bucket": str(after)})
    altered = catalog.get_table("db.kv")
    if after != before:
        # files of the old layout stay where they are: a plain write into their partition is refused
        with pytest.raises(ConfigError, match="rescale"):
            altered.append(_rows(later, "x", history[0][0]))
    # the rescale: each partition overwritten with its own rows
    for dt in sorted({dt for dt, _ in model}):
        altered.overwrite(altered.to_arrow(filter=[("dt", "=", dt)]), partition={"dt": dt})
    altered = catalog.get_table("db.kv")
    _check_layout(altered, after)
    altered.append(_rows(later, "w", history[0][0]))
    model.update({(history[0][0], k): f"w{k}" for k in later})
    got = {(r["dt"], r["k"]): r["v"] for r in altered.to_arrow().to_pylist()}
    assert altered.to_arrow().num_rows == len(model)
    assert got == model


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "4"}, "must not be larger"),
        ({"snapshot.num-retained.max": "3"}, "must not be larger"),  # min's default is 10
        ({"streaming-read-overwrite": "true", "changelog-producer": "lookup"}, "read the changes"),
        ({"streaming-read-overwrite": "true", "changelog-producer": "full-compaction"}, "read the changes"),
    ],
)
def test_contradicting_options_are_refused_at_every_door(
    catalog: Catalog, options: dict[str, str], match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        _kv(catalog, **options)
    assert not catalog.table_exists("db.kv")
    table = _kv(catalog)
    with pytest.raises(ConfigError, match=match):
        catalog.alter_options("db.kv", options)
    with pytest.raises(ConfigError, match=match):
        catalog.alter_table("db.kv", [SchemaChange.set_option(k, v) for k, v in options.items()])
    assert catalog.get_table("db.kv").schema.id == table.schema.id
    with pytest.raises(ConfigError, match=match):
        catalog.get_table("db.kv", **options)
    with pytest.raises(ConfigError, match=match):
        table.copy(options)


def test_a_table_stored_with_contradicting_options_still_opens(catalog: Catalog) -> None:
    # e.g. written by a version that did not check: dynamic options do not lock it
    table = _kv(catalog)
    stored = {**table.schema.options, "snapshot.num-retained.min": "5", "snapshot.num-retained.max": "4"}
    table.schema_manager.commit_change(lambda schema: dataclasses.replace(schema, options=stored))
    assert catalog.get_table("db.kv", **{"write-only": "true"}).options["snapshot.num-retained.max"] == "4"


@pytest.mark.parametrize(
    ("created", "altered", "match"),
    [
        (
            {"merge-engine": "first-row"},
            {"changelog-producer": "input"},
            "first-row merge engine only supports",
        ),
        ({"merge-engine": "first-row"}, {"deletion-vectors.enabled": "true"}, "takes no deletion vectors"),
        ({"deletion-vectors.enabled": "true"}, {"changelog-producer": "full-compaction"}, "deletion vectors"),
        ({"changelog-producer": "full-compaction"}, {"deletion-vectors.enabled": "true"}, "deletion vectors"),
    ],
)
def test_an_alter_meets_the_rules_of_a_new_table(
    catalog: Catalog, created: dict[str, str], altered: dict[str, str], match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        catalog.create_table("db.new", SCHEMA, primary_keys=["dt", "k"], options={**created, **altered})
    _kv(catalog, **created)
    with pytest.raises(ConfigError, match=match):
        catalog.alter_options("db.kv", altered)
    assert catalog.get_table("db.kv").schema.id == 0
