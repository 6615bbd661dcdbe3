"""Fail unless every direct requirement of a distribution is installed at the lower bound it declares.

    python lowest_versions.py 'paimon-core[pandas,polars,duckdb]'

The ``lowest`` nox session runs it after uv's ``--resolution lowest-direct`` install, so the tests that
follow are known to run against the oldest versions the metadata allows (a requirement without a lower
bound is reported too: its range has no tested end).
"""

from __future__ import annotations

import importlib.metadata as md
import sys

from packaging.requirements import Requirement
from packaging.version import Version


def lower_bound(requirement: Requirement) -> Version | None:
    bounds = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==", "~=")]
    return max(bounds, default=None)


def mismatches(wanted: Requirement) -> list[str]:
    """Each direct requirement of ``wanted`` (with its extras) not installed at its lower bound."""
    found = []
    for text in md.requires(wanted.name) or []:
        requirement = Requirement(text)
        extras = ("", *wanted.extras)
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({"extra": e}) for e in extras
        ):
            continue
        bound = lower_bound(requirement)
        installed = Version(md.version(requirement.name))
        if bound is None:
            found.append(f"{requirement}: no lower bound (installed {installed})")
        elif installed != bound:
            found.append(f"{requirement}: installed {installed}, not the lower bound {bound}")
        else:
            print(f"{requirement.name} {installed}")
    return found


def main(argv: list[str]) -> int:
    problems = [p for arg in argv for p in mismatches(Requirement(arg))]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
