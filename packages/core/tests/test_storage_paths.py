"""Path strings: schemes, joins, parents, names and local paths."""

from __future__ import annotations

import os

import pytest

from paimon_core.storage import (
    join_path,
    local_path,
    parent_path,
    path_name,
    shown_path,
    uri_authority,
    uri_scheme,
)


@pytest.mark.parametrize(
    ("uri", "scheme"),
    [
        ("/tmp/wh", "file"),
        ("relative/dir", "file"),
        ("", "file"),
        ("file:///tmp/wh", "file"),
        ("file:/tmp/wh", "file"),
        ("C:\\warehouse\\db", "file"),  # a drive letter is not a scheme
        ("d:/warehouse", "file"),
        ("S3://Bucket/key", "s3"),
        ("s3a://bucket/key", "s3a"),
        ("memory://t", "memory"),
        ("abfss://container@account.dfs.core.windows.net/wh", "abfss"),
        ("dt=2024:01/x", "file"),  # '=' cannot appear in a scheme
    ],
)
def test_uri_scheme(uri: str, scheme: str) -> None:
    assert uri_scheme(uri) == scheme


@pytest.mark.parametrize(
    ("uri", "authority"),
    [
        ("s3://bucket/key", "bucket"),
        ("s3://bucket", "bucket"),
        ("abfs://c@acct.dfs.core.windows.net/x", "c@acct.dfs.core.windows.net"),
        ("file:///tmp", ""),
        ("/tmp", ""),
        ("memory://name/t", "name"),
    ],
)
def test_uri_authority(uri: str, authority: str) -> None:
    assert uri_authority(uri) == authority


@pytest.mark.parametrize(
    ("base", "parts", "joined"),
    [
        ("/tmp/wh", ("db.db", "t"), "/tmp/wh/db.db/t"),
        ("/tmp/wh/", ("/db.db/", "/t"), "/tmp/wh/db.db/t"),
        ("/", ("a",), "/a"),
        ("relative", ("a", "b"), "relative/a/b"),
        ("", ("a",), "a"),
        ("file:///tmp", ("a",), "file:///tmp/a"),
        ("file:///", ("a",), "file:///a"),
        ("file:/tmp", ("a",), "file:/tmp/a"),
        ("s3://bucket", ("key",), "s3://bucket/key"),
        ("s3://bucket/", ("wh", "t/snapshot/snapshot-1"), "s3://bucket/wh/t/snapshot/snapshot-1"),
        ("s3://bucket/wh//db", ("x//y",), "s3://bucket/wh/db/x/y"),
        ("memory://name", ("t", "", "/"), "memory://name/t"),
        ("/tmp/wh", ("dt=2024%3A01",), "/tmp/wh/dt=2024%3A01"),  # never decoded
        ("C:\\wh", ("db.db",), "C:/wh/db.db"),
        ("s3://bucket/wh/", (), "s3://bucket/wh"),
    ],
)
def test_join_path(base: str, parts: tuple[str, ...], joined: str) -> None:
    assert join_path(base, *parts) == joined


@pytest.mark.parametrize(
    ("path", "parent"),
    [
        ("/tmp/wh/t", "/tmp/wh"),
        ("/tmp", "/"),
        ("/", "/"),
        ("file:///tmp/a", "file:///tmp"),
        ("file:///a", "file:///"),
        ("s3://bucket/wh/t/", "s3://bucket/wh"),
        ("s3://bucket/wh", "s3://bucket"),
        ("s3://bucket", "s3://bucket"),
        ("memory://n/t/snapshot/snapshot-1", "memory://n/t/snapshot"),
        ("relative/a", "relative"),
    ],
)
def test_parent_path(path: str, parent: str) -> None:
    assert parent_path(path) == parent


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/tmp/wh/t", "t"),
        ("s3://bucket/t/snapshot/LATEST", "LATEST"),
        ("s3://bucket/t/", "t"),
        ("s3://bucket", ""),
        ("/", ""),
        ("file:///tmp/a.parquet", "a.parquet"),
        ("name", "name"),
    ],
)
def test_path_name(path: str, name: str) -> None:
    assert path_name(path) == name


@pytest.mark.skipif(os.name == "nt", reason="POSIX paths")
@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("/tmp/x", "/tmp/x"),
        ("file:///tmp/x", "/tmp/x"),
        ("file://localhost/tmp/x", "/tmp/x"),
        ("file:/tmp/x", "/tmp/x"),  # Hadoop's form
        ("file:///tmp/a%20b", "/tmp/a%20b"),  # taken literally, like Java Paimon's Path
    ],
)
def test_local_path(uri: str, path: str) -> None:
    assert local_path(uri) == path


@pytest.mark.parametrize("uri", ["s3://bucket/x", "file://otherhost/tmp/x"])
def test_local_path_rejects_non_local(uri: str) -> None:
    with pytest.raises(ValueError):
        local_path(uri)


def test_shown_path_keeps_both_ends_of_a_very_long_path() -> None:
    short = "s3://bucket/wh/db.db/t/dt=1/bucket-0/data.parquet"
    assert shown_path(short) == short
    long = "s3://bucket/wh/db.db/t/p=" + "x" * 1000 + "/bucket-0/data-1.parquet"
    shown = shown_path(long)
    assert shown == long[:150] + "..." + long[-100:]
    assert shown.endswith("/bucket-0/data-1.parquet") and len(shown) == 253
