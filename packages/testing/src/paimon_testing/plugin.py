"""An opt-in pytest plugin: Hypothesis profiles for Paimon test suites.

Not registered automatically. Enable it with ``pytest -p paimon_testing.plugin``, or with
``pytest_plugins = ["paimon_testing.plugin"]`` in the root ``conftest.py``.

Profiles:

- ``paimon-fast`` (the default): few examples and no deadline, for CI and local runs.
- ``paimon-thorough``: thousands of examples, for nightly jobs.

Choose with ``--paimon-profile NAME`` or the ``PAIMON_HYPOTHESIS_PROFILE`` environment variable (the option wins).
Hypothesis' own ``--hypothesis-profile``, when given, wins over both.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

PROFILE_ENV = "PAIMON_HYPOTHESIS_PROFILE"
FAST = "paimon-fast"
THOROUGH = "paimon-thorough"
PROFILES = (FAST, THOROUGH)

# Storage round trips and commits do real IO: timing varies too much for deadlines and the too_slow check.
settings.register_profile(
    FAST,
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    THOROUGH,
    max_examples=2000,
    stateful_step_count=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("paimon", "Paimon test utilities")
    group.addoption(
        "--paimon-profile",
        choices=PROFILES,
        default=None,
        help=f"Hypothesis profile for Paimon tests (default: ${PROFILE_ENV} or {FAST}).",
    )


def selected_profile(config: pytest.Config) -> str:
    """The profile named by ``--paimon-profile``, else by ``PAIMON_HYPOTHESIS_PROFILE``, else ``paimon-fast``."""
    name = config.getoption("paimon_profile") or os.environ.get(PROFILE_ENV) or FAST
    if name not in PROFILES:
        raise pytest.UsageError(f"{PROFILE_ENV}={name!r}: expected one of {', '.join(PROFILES)}")
    return str(name)


def pytest_configure(config: pytest.Config) -> None:
    name = selected_profile(config)
    if config.getoption("hypothesis_profile", default=None):
        return  # an explicit --hypothesis-profile is loaded by Hypothesis' own plugin
    settings.load_profile(name)


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("hypothesis_profile", default=None):
        return "paimon: --hypothesis-profile given, Paimon profiles not loaded"
    return f"paimon: hypothesis profile {selected_profile(config)}"
