"""Fixtures shared by the cross-package tests: a warehouse directory and our catalog over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from paimon_core import Catalog

DATABASE = "db"


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)


@pytest.fixture
def ours(warehouse: str) -> Catalog:
    catalog = Catalog.open(warehouse)
    catalog.create_database(DATABASE, exist_ok=True)
    return catalog
