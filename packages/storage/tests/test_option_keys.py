"""Storage options are checked against the keys each backend declares, before any client is built."""

from __future__ import annotations

import re

import pytest

from paimon_core import Catalog
from paimon_core.errors import ConfigError
from paimon_core.storage import get_backend


@pytest.mark.parametrize(
    ("uri", "key", "suggestion"),
    [
        ("s3://bucket/wh", "s3.endpiont", "s3.endpoint"),
        ("s3://bucket/wh", "s3.acess-key", "s3.access-key"),
        ("gs://bucket/wh", "gcs.endpont", "gcs.endpoint"),
        ("abfs://c@account.dfs.core.windows.net/wh", "azure.account-nme", "azure.account-name"),
    ],
)
def test_a_misspelled_storage_option_is_refused(uri: str, key: str, suggestion: str) -> None:
    options = {key: "http://127.0.0.1:1", "s3.access-key": "secret-never-sent"}
    with pytest.raises(ConfigError, match=re.escape(f"did you mean '{suggestion}'")):
        get_backend(uri, options)
    with pytest.raises(ConfigError, match="unknown"):
        Catalog.open(uri, **options)


def test_declared_keys_are_accepted_for_any_backend() -> None:
    from paimon_storage import s3

    assert {"s3.endpoint", "fs.s3a.endpoint", "s3.path.style.access", "s3.region"} <= s3.KEYS
