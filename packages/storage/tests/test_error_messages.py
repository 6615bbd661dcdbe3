"""Failures of real stores as a user sees them: typed Paimon errors naming the path and the cause, one line,
no credentials in the message or in the chained cause."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import uuid

import pytest

from paimon_core import Catalog
from paimon_core.errors import StorageError, StoragePermissionError
from paimon_storage.emulators import AZURITE_KEY

from .conftest import Store

pytestmark = pytest.mark.integration

WRONG_SECRET = "Wrong/Secret+Key0123456789abcdefABCDEF"


@pytest.fixture
def no_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No credentials but the options: no AWS_* variables, no profiles, no instance metadata."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


def _assert_safe(error: BaseException, secret: str) -> None:
    assert "\n" not in str(error)
    for text in (str(error), repr(error), str(error.__cause__), repr(error.__cause__)):
        assert secret not in text
    assert error.__context__ is None  # the raw SDK error is reachable only as the (redacted) cause


def test_s3_without_credentials(s3_store: Store, no_aws_environment: None) -> None:
    warehouse = s3_store.root()
    options = {k: v for k, v in s3_store.options.items() if "key" not in k}
    with pytest.raises(StorageError) as raised:
        Catalog.open(warehouse, **options)
    assert (
        str(raised.value)
        == f"s3: cannot look up {warehouse}: NoCredentialsError: Unable to locate credentials"
    )
    assert type(raised.value.__cause__).__name__ == "NoCredentialsError"


def test_s3_unreachable_endpoint_names_it_but_not_the_secret(
    s3_store: Store, no_aws_environment: None
) -> None:
    options = {**s3_store.options, "s3.endpoint": "http://127.0.0.1:9", "s3.secret-key": WRONG_SECRET}
    warehouse = f"s3://{s3_store.bucket}/wh"
    with pytest.raises(StorageError) as raised:
        Catalog.open(warehouse, **options)
    assert str(raised.value) == (
        f"s3: cannot look up {warehouse}: EndpointConnectionError: Could not connect to the endpoint URL: "
        f'"http://127.0.0.1:9/{s3_store.bucket}/wh"'
    )
    _assert_safe(raised.value, WRONG_SECRET)


def test_azure_wrong_account_key_is_a_permission_error(azure_store: Store) -> None:
    wrong_key = base64.b64encode(bytes(range(64))).decode()  # a well-formed key, not Azurite's
    options = {k: v.replace(AZURITE_KEY, wrong_key) for k, v in azure_store.options.items()}
    warehouse = azure_store.root()
    with pytest.raises(StoragePermissionError) as raised:
        Catalog.open(warehouse, **options)
    message = str(raised.value)
    assert message.startswith(f"azure: cannot look up {warehouse}: HttpResponseError: ")
    assert (
        "Server failed to authenticate the request" in message and "ErrorCode:AuthorizationFailure" in message
    )
    assert isinstance(raised.value, PermissionError)
    _assert_safe(raised.value, wrong_key)


def test_the_cli_prints_a_store_failure_as_one_line(s3_store: Store) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    options = {**s3_store.options, "s3.endpoint": "http://127.0.0.1:9", "s3.secret-key": WRONG_SECRET}
    warehouse = f"s3://{s3_store.bucket}/{uuid.uuid4().hex}"
    flags = [f"--option={k}={v}" for k, v in options.items()]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "paimon_core.cli",
            "compact",
            warehouse,
            "--database",
            "db",
            "--table",
            "t",
            *flags,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert run.returncode == 1
    assert run.stderr == (
        f"paimon-py: error: s3: cannot look up {warehouse}: EndpointConnectionError: Could not connect to the "
        f'endpoint URL: "http://127.0.0.1:9/{s3_store.bucket}/{warehouse.rsplit("/", 1)[1]}"\n'
    )
    assert WRONG_SECRET not in run.stdout + run.stderr
