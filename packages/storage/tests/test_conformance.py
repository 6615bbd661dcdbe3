"""The paimon-testing storage conformance suite against moto's S3, fake-gcs-server and Azurite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from paimon_core.storage import Capability, StorageBackend, get_backend
from paimon_testing.storage import StorageBackendTests

from .conftest import Store

pytestmark = pytest.mark.integration


class _RemoteSuite(StorageBackendTests):
    race_threads = 8
    race_processes = 4
    race_rounds = 5
    large_objects = 4
    store_name = ""

    @pytest.fixture
    def remote(self, request: pytest.FixtureRequest) -> Store:
        return request.getfixturevalue(f"{self.store_name}_store")  # type: ignore[no-any-return]

    @pytest.fixture
    def root(self, remote: Store) -> Iterator[str]:
        root = remote.root()
        yield root
        get_backend(root, remote.options).delete_dir(root)

    @pytest.fixture
    def backend_options(self, remote: Store) -> dict[str, str]:
        return dict(remote.options)

    def test_declares_object_store_capabilities(self, backend: StorageBackend) -> None:
        assert backend.capabilities == {
            Capability.ATOMIC_CREATE, Capability.LIST, Capability.RANGED_READ, Capability.CROSS_PROCESS
        }  # fmt: skip


class TestS3(_RemoteSuite):
    store_name = "s3"


class TestGcs(_RemoteSuite):
    store_name = "gcs"


class TestAzure(_RemoteSuite):
    store_name = "azure"
