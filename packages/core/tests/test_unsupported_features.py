"""Tables using a Java Paimon feature this implementation does not implement are refused when opened, with
an error naming the feature and its option, rather than read wrongly or failing later on a "missing" file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog, UnsupportedTableFeatureError, open_table
from paimon_core.cli import main
from paimon_core.errors import PaimonError

SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.binary())])


def _java_table(catalog: Catalog, options: dict[str, str] = {}, payload_type: Any = None) -> str:  # noqa: B006
    """A table as Java Paimon 1.x would leave it: written here, then its schema given Java's options/types."""
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": [1, 2], "payload": [b"a", b"b"]}, schema=SCHEMA))
    schema_file = Path(table.path) / "schema" / "schema-0"
    schema = json.loads(schema_file.read_text())
    schema["options"].update(options)
    if payload_type is not None:
        schema["fields"][1]["type"] = payload_type
    schema_file.write_text(json.dumps(schema))
    return table.path


CASES = [
    ({"file.format": "lance"}, None, "the 'lance' file format", "file.format"),
    ({"file.format.per.level": "0:csv"}, None, "the 'csv' file format", "file.format.per.level"),
    ({"changelog-file.format": "json"}, None, "the 'json' file format", "changelog-file.format"),
    ({"row-tracking.enabled": "true"}, None, "row tracking", "row-tracking.enabled"),
    ({"data-evolution.enabled": "true"}, None, "data evolution", "data-evolution.enabled"),
    ({}, "BLOB", "BLOB columns", None),
    ({"blob-field": "payload"}, None, "BLOB columns", "blob-field"),
    ({}, {"type": "ARRAY", "element": "VARIANT"}, "VARIANT columns", None),
    (
        {"index-file-in-data-file-dir": "true"},
        None,
        "index files in the data file directories",
        "index-file-in-data-file-dir",
    ),
    ({"chain-table.enabled": "true"}, None, "a chain table", "chain-table.enabled"),
    ({"type": "format-table"}, None, "table type 'format-table'", "type"),
    ({"bucket-function.type": "mod"}, None, "the 'mod' bucket function", "bucket-function.type"),
]


@pytest.mark.parametrize(("options", "payload_type", "feature", "key"), CASES, ids=[c[2] for c in CASES])
def test_opening_a_table_with_an_unimplemented_feature_names_it(
    catalog: Catalog, options: dict[str, str], payload_type: Any, feature: str, key: str | None
) -> None:
    path = _java_table(catalog, options, payload_type)
    with pytest.raises(UnsupportedTableFeatureError) as info:
        catalog.get_table("db.t")
    message = str(info.value)
    assert message.startswith(f"table db.t uses {feature}")
    assert "which paimon-core does not implement" in message
    assert info.value.feature == feature
    if key is not None:
        assert info.value.key == key and key in message
    if payload_type is not None:
        assert "column 'payload'" in message
    with pytest.raises(UnsupportedTableFeatureError, match="does not implement"):
        open_table(path)  # the other door


@pytest.mark.parametrize("file_format", ["orc", "avro", "PARQUET"])
def test_formats_it_reads_are_not_refused(catalog: Catalog, file_format: str) -> None:
    _java_table(catalog, {"file.format": file_format, "row-tracking.enabled": "false"})
    assert catalog.get_table("db.t").to_arrow().num_rows == 2


def test_the_cli_names_the_feature(catalog: Catalog, capsys: pytest.CaptureFixture[str]) -> None:
    path = _java_table(catalog, {"data-evolution.enabled": "true"})
    assert main(["info", path]) == 1
    err = capsys.readouterr().err
    assert "uses data evolution" in err and "data-evolution.enabled = true" in err


def test_the_error_is_a_paimon_error_and_not_implemented() -> None:
    error = UnsupportedTableFeatureError("db.t", "row tracking", "row-tracking.enabled")
    assert isinstance(error, PaimonError) and isinstance(error, NotImplementedError)


def test_a_file_of_some_columns_only_is_refused_at_planning(catalog: Catalog) -> None:
    """A manifest entry with ``_WRITE_COLS`` (data evolution) holds some columns of rows written before."""
    table = catalog.create_table("db.t", SCHEMA)
    writer = table.new_write()
    writer.write(pa.table({"id": [1], "payload": [b"a"]}, schema=SCHEMA))
    messages = [
        dataclasses.replace(m, new_files=tuple(f.copy(write_cols=("id",)) for f in m.new_files))
        for m in writer.prepare_commit()
    ]
    table.new_commit().commit(messages)
    with pytest.raises(
        UnsupportedTableFeatureError, match=r"uses data evolution \(data file .* only the columns id"
    ):
        table.to_arrow()
