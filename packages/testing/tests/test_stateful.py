"""The concurrent-commit state machine: a few hundred interleavings in CI, thousands with ``-m thorough``."""

from __future__ import annotations

import pytest
from hypothesis import settings

from paimon_testing.stateful import FAST, THOROUGH, ConcurrentCommits, LocalConcurrentCommits


def test_concurrent_commits_memory() -> None:
    ConcurrentCommits.TestCase.settings = FAST
    ConcurrentCommits.TestCase().runTest()


def test_concurrent_commits_local() -> None:
    LocalConcurrentCommits.TestCase.settings = settings(FAST, max_examples=FAST.max_examples // 6)
    LocalConcurrentCommits.TestCase().runTest()


@pytest.mark.thorough
def test_concurrent_commits_thorough() -> None:
    ConcurrentCommits.TestCase.settings = THOROUGH
    ConcurrentCommits.TestCase().runTest()
