"""The ``gcs`` backend: Google Cloud Storage through gcsfs (``gs://`` and ``gcs://``).

Settings come from catalog options, first key present wins (the Hadoop GCS connector's ``fs.gs.*`` names,
pypaimon's ``gcs.*`` names, and fsspec's):

| setting | names |
| --- | --- |
| endpoint | ``fs.gs.storage.root.url``, ``gcs.endpoint``, ``gcs.endpoint_url`` |
| project | ``fs.gs.project.id``, ``gcs.project-id``, ``gcs.project`` |
| service account | ``fs.gs.auth.service.account.json.keyfile``, ``gcs.service-account-keyfile`` |
| access token | ``gcs.access-token`` (an OAuth2 token; needs ``google-auth``, which gcsfs installs) |
| anonymous access | ``fs.gs.auth.type`` = ``UNAUTHENTICATED``, ``gcs.anonymous``, ``gcs.token`` = ``anon`` |
| multipart size | ``fs.gs.outputstream.upload.chunk.size``, ``gcs.upload-chunk-size`` (default 16 mb) |
| read block size | ``gcs.read.block-size`` (default 8 mb) |

Without options gcsfs reads the usual environment: ``GOOGLE_APPLICATION_CREDENTIALS``, the gcloud
defaults, the metadata server, and ``STORAGE_EMULATOR_HOST`` for an emulator (then access is anonymous
unless credentials are given). Credentials never appear in reprs, logs or error messages of this package.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, cast

from paimon_core.storage import BackendSpec, hookimpl
from paimon_storage._base import OBJECT_STORE_CAPABILITIES, FsspecBackend
from paimon_storage._options import OptionReader, install_hint, require

__all__ = ["SPEC", "GcsBackend", "gcs_settings", "paimon_storage_backends"]

PREFIXES = ("fs.gs.", "gcs.", "gs.")
_ENDPOINT = ("fs.gs.storage.root.url", "gcs.endpoint", "gcs.endpoint_url", "gs.endpoint")
_PROJECT = ("fs.gs.project.id", "gcs.project-id", "gcs.project", "gs.project")
_KEYFILE = ("fs.gs.auth.service.account.json.keyfile", "gcs.service-account-keyfile")
_ACCESS_TOKEN = ("gcs.access-token",)
_AUTH_TYPE = ("fs.gs.auth.type",)
_ANONYMOUS = ("gcs.anonymous", "gs.anonymous")
_TOKEN = ("gcs.token", "gs.token")
_CHUNK = ("fs.gs.outputstream.upload.chunk.size", "gcs.upload-chunk-size")
_READ_BLOCK = ("gcs.read.block-size", "fs.gs.read.block-size")
_CHUNK_UNIT = 256 << 10  # resumable upload chunks are multiples of 256 KiB
KEYS = frozenset(
    (
        *_ENDPOINT,
        *_PROJECT,
        *_KEYFILE,
        *_ACCESS_TOKEN,
        *_AUTH_TYPE,
        *_ANONYMOUS,
        *_TOKEN,
        *_CHUNK,
        *_READ_BLOCK,
    )
)
"""Every option key this backend reads."""


class GcsBackend(FsspecBackend):
    """GCS through gcsfs; ``write_if_absent`` is a simple upload with ``ifGenerationMatch=0``.

    Not ``open(path, "xb")``: gcsfs sends that as a resumable upload whose precondition fake-gcs-server (and
    so a test) cannot check; ``pipe_file(..., mode="create")`` is one request that the store refuses.
    """

    def _write_marker(self, key: str) -> None:
        # Through gcsfs's upload function itself: its filesystem methods drop the trailing "/" of a path.
        from fsspec.asyn import sync
        from gcsfs.core import simple_upload

        bucket, _, name = key.partition("/")
        sync(self.fs.loop, simple_upload, self.fs, bucket, name + "/", b"")
        self.fs.invalidate_cache(key)


def gcs_settings(options: Mapping[str, str]) -> dict[str, Any]:
    """The ``gcsfs.GCSFileSystem`` keyword arguments for catalog options (secrets included: never log them)."""
    read = OptionReader(options)
    kwargs: dict[str, Any] = {"use_listings_cache": False, "skip_instance_cache": True}
    endpoint = read.get(_ENDPOINT)
    if endpoint:
        kwargs["endpoint_url"] = endpoint.rstrip("/")
    project = read.get(_PROJECT)
    if project:
        kwargs["project"] = project
    keyfile, access_token, token = read.get(_KEYFILE), read.get(_ACCESS_TOKEN), read.get(_TOKEN)
    auth_type = (read.get(_AUTH_TYPE) or "").upper()
    if token:
        kwargs["token"] = token
    elif keyfile:
        kwargs["token"] = keyfile
    elif access_token:
        from google.oauth2 import credentials

        kwargs["token"] = cast(Any, credentials.Credentials)(access_token)  # google-auth is untyped
    elif auth_type == "UNAUTHENTICATED" or read.flag(_ANONYMOUS, False):
        kwargs["token"] = "anon"
    elif endpoint or os.environ.get("STORAGE_EMULATOR_HOST"):
        kwargs["token"] = "anon"  # an emulator, and no credentials given
    return kwargs


def _factory(uri: str, options: Mapping[str, str]) -> GcsBackend:
    (gcsfs,) = require("gcs", "gcs", "gcsfs")
    read = OptionReader(options)
    kwargs = gcs_settings(options)
    if "endpoint_url" in kwargs or os.environ.get("STORAGE_EMULATOR_HOST"):
        # gcsfs >= 2025.x defaults to a class that asks the gRPC control plane for each bucket's layout (zonal,
        # hierarchical), which an emulator does not serve: each lookup then hangs for a minute. Emulated
        # buckets are plain buckets, so use the plain JSON-API filesystem.
        from gcsfs.core import GCSFileSystem as fs_class
    else:
        fs_class = gcsfs.GCSFileSystem
    fs = fs_class(**kwargs)
    chunk = read.size(_CHUNK, 16 << 20)
    chunk = max(_CHUNK_UNIT, chunk - chunk % _CHUNK_UNIT)
    token = kwargs.get("token")
    auth = (
        "anonymous" if token == "anon" else ("<from options>" if token is not None else "<from environment>")
    )
    description = ", ".join(
        part
        for part in (
            f"endpoint={kwargs['endpoint_url']!r}" if "endpoint_url" in kwargs else "",
            f"project={kwargs['project']!r}" if "project" in kwargs else "",
            f"credentials={auth}",
        )
        if part
    )
    return GcsBackend(
        fs,
        name="gcs",
        description=description,
        read_block_size=read.size(_READ_BLOCK, 8 << 20),
        write_block_size=chunk,
    )


SPEC = BackendSpec(
    name="gcs",
    schemes=("gs", "gcs"),
    factory=_factory,
    capabilities=OBJECT_STORE_CAPABILITIES,
    install_hint=install_hint("gcs"),
    option_prefixes=PREFIXES,
    option_keys=KEYS,
)


@hookimpl
def paimon_storage_backends() -> list[BackendSpec]:
    """The ``gcs`` backend (entry point ``gcs`` in group ``paimon.storage``)."""
    return [SPEC]
