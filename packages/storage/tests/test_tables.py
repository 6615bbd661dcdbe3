"""Paimon tables on moto's S3, fake-gcs-server and Azurite: catalogs, concurrent writers, large files, locks."""

from __future__ import annotations

import io
import logging
import time
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core import Catalog
from paimon_core.errors import AtomicCommitUnsupportedError
from paimon_core.maintenance import remove_orphan_files
from paimon_core.storage import get_backend, unwrap
from paimon_storage import S3Backend
from paimon_storage.emulators import AZURITE_KEY, PostgresServer
from paimon_storage.workload import check_table, create_table, run_workload

from .conftest import Store

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())])


def test_catalog_round_trip(store: Store) -> None:
    warehouse = store.root()
    catalog = Catalog.open(warehouse, create=True, **store.options)
    catalog.create_database("db")
    assert catalog.list_databases() == ["db"]  # an empty database is visible (directory marker)
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["day"])
    assert catalog.list_tables("db") == ["t"]
    first = table.append(pa.table({"id": [1, 2], "name": ["a", "b"], "day": ["d1", "d2"]}, schema=SCHEMA))
    table.append(pa.table({"id": [3], "name": ["c"], "day": ["d1"]}, schema=SCHEMA))
    table.overwrite(
        pa.table({"id": [9], "name": ["z"], "day": ["d2"]}, schema=SCHEMA), partition={"day": "d2"}
    )
    reopened = Catalog.open(warehouse, **store.options).get_table("db.t")
    assert sorted(reopened.to_arrow().column("id").to_pylist()) == [1, 3, 9]
    assert sorted(reopened.to_arrow(snapshot_id=first).column("id").to_pylist()) == [1, 2]
    assert [s.id for s in reopened.snapshots()] == [1, 2, 3]
    catalog.drop_table("db.t")
    assert catalog.list_tables("db") == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gcs", "azure"])
def test_concurrent_writers_lose_and_duplicate_nothing(name: str, request: pytest.FixtureRequest) -> None:
    # S3's run is test_pypaimon_s3.py's, which also reads the table back with pypaimon.
    store: Store = request.getfixturevalue(f"{name}_store")
    warehouse = store.root()
    table = create_table(warehouse, store.options)
    run_workload(warehouse, store.options, appenders=4, appends=12, overwrites=5)
    reopened = Catalog.open(warehouse, **store.options).get_table(table.identifier)
    assert check_table(reopened, appenders=4, appends=12, overwrites=5) == []


def _spy_s3_calls(backend: Any) -> list[tuple[str, dict[str, Any]]]:
    """Record every S3 API call s3fs makes through this backend's filesystem."""
    calls: list[tuple[str, dict[str, Any]]] = []
    original = backend.fs._call_s3

    async def spy(method: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(
            (method, {k: v for k, v in kwargs.items() if k in ("Range", "PartNumber", "IfNoneMatch")})
        )
        return await original(method, *args, **kwargs)

    def sync_spy(method: str, *args: Any, **kwargs: Any) -> Any:  # used by s3fs's file objects
        calls.append(
            (method, {k: v for k, v in kwargs.items() if k in ("Range", "PartNumber", "IfNoneMatch")})
        )
        return sync_original(method, *args, **kwargs)

    sync_original = backend.fs.call_s3  # runs the class's coroutine, not the spy: no double counting
    backend.fs._call_s3 = spy
    backend.fs.call_s3 = sync_spy
    return calls


def test_s3_large_files_use_multipart_uploads_and_ranged_reads(s3_store: Store) -> None:
    options = {**s3_store.options, "s3.multipart.size": "5 mb", "s3.read.block-size": "1 mb"}
    root = s3_store.root()
    backend = unwrap(get_backend(root, options))
    assert isinstance(backend, S3Backend)
    calls = _spy_s3_calls(backend)
    n = 1_500_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "x": pa.array(range(n), pa.float64())})
    path = f"{root}/data.parquet"
    with backend.open_output(path) as out:
        pq.write_table(table, out, row_group_size=n // 10, compression="none")
        assert not backend.exists(path)
    size = backend.size(path)
    assert size > 20 << 20
    methods = [m for m, _ in calls]
    assert "create_multipart_upload" in methods and "complete_multipart_upload" in methods
    assert methods.count("upload_part") >= 4  # one part per 5 MiB, none held in memory beyond a part
    assert "put_object" not in methods

    calls.clear()
    with backend.open_input(path) as f:
        group = pq.ParquetFile(f).read_row_group(7, columns=["id"])
    assert group.column("id").to_pylist()[:3] == [7 * n // 10, 7 * n // 10 + 1, 7 * n // 10 + 2]
    ranges = [k["Range"] for m, k in calls if m == "get_object"]
    assert ranges, "reads must be ranged GETs"
    fetched = sum(int(r.split("-")[1]) - int(r.split("=")[1].split("-")[0]) + 1 for r in ranges)
    assert fetched < size // 3, f"fetched {fetched} of {size} bytes to read one column of one row group"


def test_s3_snapshot_commit_is_a_conditional_put(s3_store: Store) -> None:
    root = s3_store.root()
    backend = get_backend(root, s3_store.options)
    calls = _spy_s3_calls(backend)
    backend.write_if_absent(f"{root}/snapshot/snapshot-1", b"{}")
    assert ("put_object", {"IfNoneMatch": "*"}) in calls
    with pytest.raises(FileExistsError):
        backend.write_if_absent(f"{root}/snapshot/snapshot-1", b"{ }")


def test_large_files_round_trip_in_small_blocks(store: Store) -> None:
    block = {"s3": "s3.multipart.size", "gcs": "gcs.upload-chunk-size", "azure": "azure.upload-block-size"}
    options = {**store.options, block[store.name]: "5 mb"}
    root = store.root()
    backend = get_backend(root, options)
    data = io.BytesIO()
    for i in range(3):
        data.write(bytes([i]) * (6 << 20))
    path = f"{root}/big.bin"
    with backend.open_output(path) as out:
        for offset in range(0, len(data.getvalue()), 1 << 20):
            out.write(data.getvalue()[offset : offset + (1 << 20)])
    assert backend.size(path) == 18 << 20
    with backend.open_input(path) as f:
        f.seek((12 << 20) - 2)
        assert f.read(4) == b"\x01\x01\x02\x02"


def test_a_store_without_conditional_creates_needs_a_lock(s3_store: Store, postgres: PostgresServer) -> None:
    options = {**s3_store.options, "s3.create.conditional.enabled": "false"}
    warehouse = s3_store.root()
    table = create_table(warehouse, options)
    with pytest.raises(AtomicCommitUnsupportedError, match=r"lock\.enabled"):
        table.append(
            pa.table(
                {"writer": [0], "round": [0], "seq": [0], "p": ["w0"], "payload": ["x"]},
                schema=table.arrow_schema,
            )
        )
    assert table.latest_snapshot() is None
    lock = {"lock.enabled": "true", "lock.type": "jdbc", "lock.jdbc.uri": f"jdbc:{postgres.dsn}"}
    run_workload(warehouse, options, appenders=4, appends=6, overwrites=3, dynamic_options=lock)
    reopened = Catalog.open(warehouse, **options).get_table(table.identifier)
    assert check_table(reopened, appenders=4, appends=6, overwrites=3) == []


def test_secrets_stay_out_of_errors_and_debug_logs(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    options = dict(store.options)
    if store.name == "s3":
        value = options["s3.secret-key"] = "Wr0ng-Secret-Value+/="  # moto accepts any key pair
    elif store.name == "gcs":
        value = options["gcs.access-token"] = "ya29.Secret-Token-Value"  # the emulator ignores tokens
    else:
        value = AZURITE_KEY  # inside the connection string
    root = f"{store.scheme}://no-such-bucket-{store.name}/wh"
    with caplog.at_level(logging.DEBUG):
        backend = get_backend(root, options)
        with pytest.raises(FileNotFoundError) as caught:
            backend.read_bytes(f"{root}/snapshot/snapshot-1")
    assert value not in repr(backend)
    assert value not in str(caught.value)
    leaked = sorted({r.name for r in caplog.records if value in r.getMessage()})
    assert not leaked, f"secret logged by {leaked}"


def test_s3_settings_from_the_environment(s3_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_store.options["s3.endpoint"])
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    root = s3_store.root()
    backend = get_backend(root, {})  # no options at all: botocore reads the environment
    assert "credentials=<from environment>" in repr(backend)
    backend.write_if_absent(f"{root}/x", b"from the environment")
    assert get_backend(root, s3_store.options).read_bytes(f"{root}/x") == b"from the environment"


def test_external_data_paths_on_s3(s3_store: Store) -> None:
    """New files go under ``data-file.external-paths`` (other prefixes of the bucket), found there by reads,
    expiration and orphan removal."""
    root = s3_store.root()
    externals = [f"{root}/ext-a", f"{root}/ext-b"]
    catalog = Catalog.open(f"{root}/wh", create=True, **s3_store.options)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_keys=["day"],
        options={
            "data-file.external-paths": ",".join(externals),
            "data-file.external-paths.strategy": "round-robin",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "1",
        },
    )
    table.append(pa.table({"id": [1, 2], "name": ["a", "b"], "day": ["d1", "d2"]}, schema=SCHEMA))
    first = {e.file.external_path for e in table.live_entries()}
    table.overwrite(
        pa.table({"id": [3], "name": ["c"], "day": ["d1"]}, schema=SCHEMA), partition={"day": "d1"}
    )
    live = {e.file.external_path for e in table.live_entries()}
    assert None not in live and all(any(p.startswith(e + "/day=") for e in externals) for p in live if p)
    assert sorted(table.to_arrow().column("id").to_pylist()) == [2, 3]
    storage = table.storage
    assert all(storage.exists(p) for p in live if p)
    replaced = {p for p in first - live if p}
    assert replaced and not any(storage.exists(p) for p in replaced)  # expired with snapshot 1
    writer = table.new_write()
    writer.write(pa.table({"id": [9], "name": ["z"], "day": ["d2"]}, schema=SCHEMA))
    [orphan] = [f.external_path for m in writer.prepare_commit() for f in m.new_files]
    assert orphan is not None and storage.exists(orphan)
    result = remove_orphan_files(table, now_millis=int(time.time() * 1000) + 2 * 86_400_000)
    assert result.deleted == (orphan,)
    assert all(storage.exists(p) for p in live if p)
    assert sorted(table.to_arrow().column("id").to_pylist()) == [2, 3]
