"""Write the third-party requirements of our wheels, one per line, for the given requirements of ours.

    python wheel_requirements.py DIST_DIR 'paimon-core[pandas]' 'paimon-storage[all]' --output reqs.txt

The ``packages`` nox session installs these from the package index first, then our distributions by name
with ``--no-index --find-links DIST_DIR``: so no name of ours can ever resolve to an index. Markers are
evaluated for the running interpreter, extras of our own distributions followed.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def wheel_metadata(dist_dir: Path) -> dict[str, list[Requirement]]:
    """Requires-Dist of every wheel in ``dist_dir``, by canonical distribution name."""
    found: dict[str, list[Requirement]] = {}
    for wheel in sorted(dist_dir.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
        requires = [Requirement(r) for r in metadata.get_all("Requires-Dist") or []]
        found[canonicalize_name(metadata["Name"])] = requires
    return found


def third_party(ours: dict[str, list[Requirement]], wanted: list[Requirement]) -> list[str]:
    """The requirements outside ``ours`` that installing ``wanted`` needs."""
    result: list[str] = []
    seen: set[tuple[str, str]] = set()
    queue = [(canonicalize_name(r.name), extra) for r in wanted for extra in ("", *r.extras)]
    while queue:
        name, extra = queue.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        if name not in ours:
            raise SystemExit(f"no wheel of {name} in the dist directory")
        for requirement in ours[name]:
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
                continue
            required = canonicalize_name(requirement.name)
            if required in ours:
                queue += [(required, e) for e in ("", *requirement.extras)]
            else:
                requirement.marker = None
                if str(requirement) not in result:
                    result.append(str(requirement))
    return result


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist_dir", type=Path)
    parser.add_argument("wanted", nargs="+", help="requirements of ours, e.g. 'paimon-core[pandas]'")
    parser.add_argument("--output", type=Path, required=True, help="the requirements file to write")
    args = parser.parse_args(argv)
    found = third_party(wheel_metadata(args.dist_dir), [Requirement(w) for w in args.wanted])
    args.output.write_text("".join(f"{line}\n" for line in found), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
