"""Servers for the integration tests: started once per session on 127.0.0.1, by the tests themselves.

A server that cannot start fails the tests that need it, with the reason (never a silent skip). Each test
gets a fresh, unique prefix in one shared bucket per store.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from paimon_storage.emulators import (
    AzuriteEmulator,
    GcsEmulator,
    PostgresServer,
    S3Emulator,
    ServerUnavailable,
)

BUCKET = "paimon-test"


def pytest_configure(config: pytest.Config) -> None:
    # aiohttp (under gcsfs and adlfs) warns that a request body of more than 1 MiB given as bytes "might lock
    # the event loop": a performance hint about fsspec's private IO loop, raised in its thread. The root
    # config turns warnings into errors; this one is not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore:Sending a large body directly:ResourceWarning")


@dataclass
class Store:
    """One running emulator, as the tests see it."""

    name: str
    scheme: str
    bucket: str
    options: dict[str, str] = field(default_factory=dict)

    def root(self) -> str:
        return f"{self.scheme}://{self.bucket}/{uuid.uuid4().hex}"


def _start(server: S3Emulator | GcsEmulator | AzuriteEmulator | PostgresServer) -> None:
    try:
        server.start()
    except ServerUnavailable as error:
        server.stop()
        pytest.fail(f"cannot start {server.name}: {error}", pytrace=False)


def _store_fixture(
    cls: type[S3Emulator] | type[GcsEmulator] | type[AzuriteEmulator], name: str, scheme: str
) -> Callable[[], Iterator[Store]]:
    @pytest.fixture(scope="session")
    def fixture() -> Iterator[Store]:
        server = cls()
        _start(server)
        try:
            server.create_bucket(BUCKET)
            yield Store(name, scheme, BUCKET, server.options())
        finally:
            server.stop()

    return fixture


s3_store = _store_fixture(S3Emulator, "s3", "s3")
gcs_store = _store_fixture(GcsEmulator, "gcs", "gs")
azure_store = _store_fixture(AzuriteEmulator, "azure", "abfs")


@pytest.fixture(params=["s3", "gcs", "azure"])
def store(request: pytest.FixtureRequest) -> Store:
    """Each emulated store in turn."""
    return request.getfixturevalue(f"{request.param}_store")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    _start(server)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True, scope="session")
def _no_cloud_metadata() -> None:
    # botocore probes the EC2 metadata service for credentials when none are given: not here.
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
