"""The installed distribution and the import package agree on the version."""

from __future__ import annotations

import importlib.metadata

import paimon_storage


def test_version_matches_installed_distribution() -> None:
    assert paimon_storage.__version__ == importlib.metadata.version("paimon-storage")
