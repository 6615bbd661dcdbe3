"""The ``s3`` backend: Amazon S3 and S3-compatible stores through s3fs (``s3://`` and ``s3a://``).

Settings come from catalog options, first key present wins; every name is accepted under the prefixes
``s3.``, ``s3a.``, ``fs.s3.`` and ``fs.s3a.`` (Paimon's and Hadoop S3A's spellings):

| setting | names |
| --- | --- |
| endpoint | ``endpoint`` (``s3.endpoint_url``, fsspec's name, also works) |
| access key | ``access-key``, ``access.key`` (``fs.s3.accessKeyId``, ``s3.key``) |
| secret key | ``secret-key``, ``secret.key`` (``fs.s3.accessKeySecret``, ``s3.secret``) |
| session token | ``session-token``, ``session.token``, ``security-token`` (``s3.token``) |
| region | ``region``, ``endpoint.region`` (``s3.region_name``) |
| path-style addressing | ``path.style.access``, ``path-style-access`` |
| anonymous access | ``anonymous`` (``s3.anon``) |
| conditional creates | ``create.conditional.enabled`` (default true; false for stores without ``If-None-Match``: commits then need ``lock.enabled``) |
| multipart part size | ``multipart.size`` (default 16 mb) |
| read block size | ``read.block-size`` (default 8 mb) |

Anything not given comes from the usual AWS environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, profiles, instance roles) through botocore.
Credentials never appear in reprs, logs or error messages of this package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paimon_core.storage import BackendSpec, hookimpl
from paimon_storage._base import OBJECT_STORE_CAPABILITIES, FsspecBackend
from paimon_storage._options import OptionReader, install_hint, require, variants

__all__ = ["SPEC", "S3Backend", "paimon_storage_backends", "s3_settings"]

PREFIXES = ("s3.", "s3a.", "fs.s3.", "fs.s3a.")
_ENDPOINT = (*variants(PREFIXES, ("endpoint",)), "s3.endpoint_url")
_ACCESS_KEY = (*variants(PREFIXES, ("access-key", "access.key")), "fs.s3.accessKeyId", "s3.key")
_SECRET_KEY = (*variants(PREFIXES, ("secret-key", "secret.key")), "fs.s3.accessKeySecret", "s3.secret")
_TOKEN = (
    *variants(PREFIXES, ("session-token", "session.token", "security-token", "security.token")),
    "fs.s3.securityToken",
    "s3.token",
)
_REGION = (*variants(PREFIXES, ("region", "endpoint.region")), "s3.region_name")
_PATH_STYLE = variants(PREFIXES, ("path.style.access", "path-style-access"))
_ANONYMOUS = (*variants(PREFIXES, ("anonymous",)), "s3.anon")
_CONDITIONAL = variants(PREFIXES, ("create.conditional.enabled",))
_MULTIPART = variants(PREFIXES, ("multipart.size",))
_READ_BLOCK = variants(PREFIXES, ("read.block-size",))
KEYS = frozenset(
    (
        *_ENDPOINT,
        *_ACCESS_KEY,
        *_SECRET_KEY,
        *_TOKEN,
        *_REGION,
        *_PATH_STYLE,
        *_ANONYMOUS,
        *_CONDITIONAL,
        *_MULTIPART,
        *_READ_BLOCK,
    )
)
"""Every option key this backend reads."""


class S3Backend(FsspecBackend):
    """S3 through s3fs; ``write_if_absent`` is a PUT (or multipart completion) with ``If-None-Match: *``."""

    def _write_marker(self, key: str) -> None:
        # Through the API itself: s3fs before 2026 drops the trailing "/" of a key it is given.
        bucket, _, name = key.partition("/")
        self.fs.call_s3("put_object", Bucket=bucket, Key=name + "/", Body=b"")
        self.fs.invalidate_cache(key)


def s3_settings(options: Mapping[str, str]) -> dict[str, Any]:
    """The ``s3fs.S3FileSystem`` keyword arguments for catalog options (secrets included: never log them)."""
    read = OptionReader(options)
    kwargs: dict[str, Any] = {
        # Other writers change the store: never answer from a cached listing.
        "use_listings_cache": False,
        "skip_instance_cache": True,
    }
    client: dict[str, Any] = {}
    config: dict[str, Any] = {}
    endpoint = read.get(_ENDPOINT)
    if endpoint:
        if "://" not in endpoint:
            endpoint = "https://" + endpoint
        kwargs["endpoint_url"] = endpoint
    access_key, secret_key = read.get(_ACCESS_KEY), read.get(_SECRET_KEY)
    if access_key:
        kwargs["key"] = access_key
    if secret_key:
        kwargs["secret"] = secret_key
    token = read.get(_TOKEN)
    if token:
        kwargs["token"] = token
    region = read.get(_REGION)
    if region:
        client["region_name"] = region
    if read.flag(_PATH_STYLE, False):
        config["s3"] = {"addressing_style": "path"}
    if read.flag(_ANONYMOUS, False):
        kwargs["anon"] = True
    if client:
        kwargs["client_kwargs"] = client
    if config:
        kwargs["config_kwargs"] = config
    return kwargs


def _factory(uri: str, options: Mapping[str, str]) -> S3Backend:
    (s3fs,) = require("s3", "s3", "s3fs")
    read = OptionReader(options)
    kwargs = s3_settings(options)
    fs = s3fs.S3FileSystem(**kwargs)
    region = kwargs.get("client_kwargs", {}).get("region_name")
    description = ", ".join(
        part
        for part in (
            f"endpoint={kwargs['endpoint_url']!r}" if "endpoint_url" in kwargs else "",
            f"region={region!r}" if region else "",
            "credentials=<from options>" if "key" in kwargs else "credentials=<from environment>",
        )
        if part
    )
    return S3Backend(
        fs,
        name="s3",
        description=description,
        read_block_size=read.size(_READ_BLOCK, 8 << 20),
        write_block_size=max(5 << 20, read.size(_MULTIPART, 16 << 20)),  # S3's minimum part size is 5 MiB
        conditional_create=read.flag(_CONDITIONAL, True),
    )


SPEC = BackendSpec(
    name="s3",
    schemes=("s3", "s3a"),
    factory=_factory,
    capabilities=OBJECT_STORE_CAPABILITIES,
    install_hint=install_hint("s3"),
    option_prefixes=PREFIXES,
    option_keys=KEYS,
)


@hookimpl
def paimon_storage_backends() -> list[BackendSpec]:
    """The ``s3`` backend (entry point ``s3`` in group ``paimon.storage``)."""
    return [SPEC]
