"""The manifest cache (``cache-enabled``): later plans decode only manifests they have not seen."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from paimon_core import Catalog
from paimon_core.manifest import read_manifest_file
from paimon_core.manifest._cache import manifest_cache
from paimon_core.table import _entries


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    real = read_manifest_file

    def counting(storage: Any, path: str) -> Any:
        names.append(path)
        return real(storage, path)

    monkeypatch.setattr(_entries, "read_manifest_file", counting)
    manifest_cache.clear()
    return names


@pytest.mark.parametrize("enabled", ["true", "false"])
def test_a_second_plan_decodes_only_new_manifests(catalog: Catalog, decoded: list[str], enabled: str) -> None:
    table = catalog.create_table("db.t", pa.schema([("x", pa.int64())]), options={"cache-enabled": enabled})
    for i in range(3):
        table.append(pa.table({"x": [i]}))
    manifest_cache.clear()  # what the writers' own reads cached
    before = len(decoded)
    assert table.to_arrow().num_rows == 3
    first = len(decoded) - before
    table.append(pa.table({"x": [3]}))
    before = len(decoded)
    assert table.to_arrow().num_rows == 4
    again = len(decoded) - before
    if enabled == "true":
        assert again <= 1 < first  # at most the new delta manifest (unless the commit merged manifests)
    else:
        assert again >= first
