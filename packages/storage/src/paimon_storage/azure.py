"""The ``azure`` backend: Azure Blob Storage and ADLS Gen2 through adlfs (``abfs://``, ``abfss://``, ``az://``).

URIs name the container as their authority: ``abfs://container/path``, or with Hadoop's account host,
``abfss://container@account.dfs.core.windows.net/path`` (the account is then taken from the host).
Settings come from catalog options, first key present wins (Hadoop ABFS's ``fs.azure.*`` names and
``azure.*`` names, with fsspec's spellings also accepted):

| setting | names |
| --- | --- |
| account name | ``azure.account-name``, ``fs.azure.account.name``, ``azure.account_name`` |
| account key | ``fs.azure.account.key.<account>.dfs.core.windows.net`` (or ``.blob.``), ``azure.account-key`` |
| connection str. | ``azure.connection-string``, ``azure.connection_string`` |
| SAS token | ``fs.azure.sas.fixed.token.<account>.dfs.core.windows.net``, ``azure.sas-token`` |
| service principal | ``azure.client-id``, ``azure.client-secret``, ``azure.tenant-id`` (``fs.azure.account.oauth2.client.id`` / ``.client.secret``; tenant from ``azure.tenant-id``) |
| account host | ``azure.account-host`` (a custom endpoint) |
| anonymous | ``azure.anonymous``, ``azure.anon`` |
| block size | ``azure.upload-block-size`` (default 16 mb), ``azure.read.block-size`` (default 8 mb) |

Anything not given comes from the environment, as adlfs reads it (``AZURE_STORAGE_CONNECTION_STRING``,
``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT_KEY``, ``AZURE_STORAGE_SAS_TOKEN``,
``AZURE_STORAGE_CLIENT_ID``..., then ``DefaultAzureCredential``). Credentials never appear in reprs, logs or
error messages of this package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paimon_core.storage import BackendSpec, hookimpl, uri_authority
from paimon_storage._base import OBJECT_STORE_CAPABILITIES, FsspecBackend
from paimon_storage._options import OptionReader, install_hint, require

__all__ = ["SPEC", "AzureBackend", "azure_settings", "paimon_storage_backends"]

PREFIXES = ("azure.", "fs.azure.", "az.")
_ACCOUNT = ("azure.account-name", "fs.azure.account.name", "azure.account_name")
_KEY = ("azure.account-key", "azure.account_key")
_CONNECTION = ("azure.connection-string", "azure.connection_string")
_SAS = ("azure.sas-token", "azure.sas_token")
_CLIENT_ID = ("azure.client-id", "fs.azure.account.oauth2.client.id", "azure.client_id")
_CLIENT_SECRET = ("azure.client-secret", "fs.azure.account.oauth2.client.secret", "azure.client_secret")
_TENANT = ("azure.tenant-id", "azure.tenant_id")
_HOST = ("azure.account-host", "azure.account_host")
_ANONYMOUS = ("azure.anonymous", "azure.anon")
_UPLOAD_BLOCK = ("azure.upload-block-size",)
_READ_BLOCK = ("azure.read.block-size",)
_HOST_SUFFIXES = (".dfs.core.windows.net", ".blob.core.windows.net")
KEYS = frozenset(
    (
        *_ACCOUNT,
        *_KEY,
        *_CONNECTION,
        *_SAS,
        *_CLIENT_ID,
        *_CLIENT_SECRET,
        *_TENANT,
        *_HOST,
        *_ANONYMOUS,
        *_UPLOAD_BLOCK,
        *_READ_BLOCK,
    )
)
"""Every option key this backend reads."""


def account_from_uri(uri: str) -> str | None:
    """The storage account named by ``container@account.dfs.core.windows.net``, if any."""
    _, at, host = uri_authority(uri).partition("@")
    return host.split(".", 1)[0] if at and host else None


class AzureBackend(FsspecBackend):
    """Azure through adlfs; ``write_if_absent`` is an upload with ``overwrite=False`` (``If-None-Match: *``)."""

    def bucket_of(self, uri: str) -> str:
        return uri_authority(uri).partition("@")[0]

    def _write_marker(self, key: str) -> None:
        # adlfs drops a trailing "/" from blob names; write the marker blob itself, with the metadata that
        # adlfs reads as "a directory" (as ADLS Gen2 tools do).
        from fsspec.asyn import sync

        container, _, name = key.partition("/")

        async def upload() -> None:
            async with self.fs.service_client.get_blob_client(container, name + "/") as blob:
                await blob.upload_blob(b"", overwrite=True, metadata={"is_directory": "true"})

        sync(self.fs.loop, upload)
        self.fs.invalidate_cache(key)


def azure_settings(uri: str, options: Mapping[str, str]) -> dict[str, Any]:
    """The ``adlfs.AzureBlobFileSystem`` keyword arguments (secrets included: never log them)."""
    read = OptionReader(options)
    kwargs: dict[str, Any] = {"use_listings_cache": False, "skip_instance_cache": True}
    account = read.get(_ACCOUNT) or account_from_uri(uri)
    if account:
        kwargs["account_name"] = account
        hadoop = [f"fs.azure.account.key.{account}{suffix}" for suffix in _HOST_SUFFIXES]
        sas = [f"fs.azure.sas.fixed.token.{account}{suffix}" for suffix in _HOST_SUFFIXES]
    else:
        hadoop, sas = [], []
    for name, keys in (
        ("account_key", (*hadoop, *_KEY)),
        ("connection_string", _CONNECTION),
        ("sas_token", (*sas, *_SAS)),
        ("client_id", _CLIENT_ID),
        ("client_secret", _CLIENT_SECRET),
        ("tenant_id", _TENANT),
        ("account_host", _HOST),
    ):
        value = read.get(keys)
        if value:
            kwargs[name] = value
    if read.flag(_ANONYMOUS, False):
        kwargs["anon"] = True
    return kwargs


def _factory(uri: str, options: Mapping[str, str]) -> AzureBackend:
    (adlfs,) = require("azure", "azure", "adlfs")
    read = OptionReader(options)
    kwargs = azure_settings(uri, options)
    fs = adlfs.AzureBlobFileSystem(**kwargs)
    if "connection_string" in kwargs:
        credentials = "connection string <from options>"
    elif any(k in kwargs for k in ("account_key", "sas_token", "client_secret")):
        credentials = "<from options>"
    else:
        credentials = "<from environment>"
    account = getattr(fs, "account_name", None) or kwargs.get("account_name")
    description = ", ".join(
        p for p in (f"account={account!r}" if account else "", f"credentials={credentials}") if p
    )
    return AzureBackend(
        fs,
        name="azure",
        description=description,
        read_block_size=read.size(_READ_BLOCK, 8 << 20),
        write_block_size=read.size(_UPLOAD_BLOCK, 16 << 20),
    )


SPEC = BackendSpec(
    name="azure",
    schemes=("abfs", "abfss", "az"),
    factory=_factory,
    capabilities=OBJECT_STORE_CAPABILITIES,
    install_hint=install_hint("azure"),
    option_prefixes=PREFIXES,
    option_keys=KEYS,
)


@hookimpl
def paimon_storage_backends() -> list[BackendSpec]:
    """The ``azure`` backend (entry point ``azure`` in group ``paimon.storage``)."""
    return [SPEC]
