"""The opt-in pytest plugin, run in child pytest processes so that its profile does not leak into this one."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

# The inner test reports the Hypothesis settings it runs under; the outer test checks them.
_PROBE = """
from hypothesis import settings

def test_probe():
    current = settings.default
    print(f"PROBE max_examples={current.max_examples} deadline={current.deadline}")
"""


def _probe(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_probe=_PROBE)
    return pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", *args)


def test_default_profile_is_fast(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAIMON_HYPOTHESIS_PROFILE", raising=False)
    result = _probe(pytester, "-p", "paimon_testing.plugin")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["paimon: hypothesis profile paimon-fast", "*PROBE max_examples=25 deadline=None*"]
    )


def test_without_the_plugin_nothing_changes(pytester: pytest.Pytester) -> None:
    result = _probe(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PROBE max_examples=*"])
    result.stdout.no_fnmatch_line("*PROBE max_examples=25 deadline=None*")
    result.stdout.no_fnmatch_line("paimon: *")


def test_environment_variable_selects_thorough(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAIMON_HYPOTHESIS_PROFILE", "paimon-thorough")
    result = _probe(pytester, "-p", "paimon_testing.plugin")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PROBE max_examples=2000 deadline=None*"])


def test_option_wins_over_environment(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAIMON_HYPOTHESIS_PROFILE", "paimon-thorough")
    result = _probe(pytester, "-p", "paimon_testing.plugin", "--paimon-profile", "paimon-fast")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PROBE max_examples=25 deadline=None*"])


def test_unknown_profile_is_a_usage_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAIMON_HYPOTHESIS_PROFILE", "paimon-sloppy")
    result = _probe(pytester, "-p", "paimon_testing.plugin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*PAIMON_HYPOTHESIS_PROFILE='paimon-sloppy': expected one of*"])


def test_hypothesis_profile_option_wins(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "from hypothesis import settings\nsettings.register_profile('mine', max_examples=7, deadline=None)\n"
    )
    result = _probe(pytester, "-p", "paimon_testing.plugin", "--hypothesis-profile", "mine")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PROBE max_examples=7 deadline=None*"])
