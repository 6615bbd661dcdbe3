"""The four distributions as a user gets them: built, installed by name from the wheels into a clean
virtualenv, and run from outside the repository.

The ``packages`` nox session builds the sdists and wheels into ``$PAIMON_DIST_DIR``, installs them with
every extra into a fresh virtualenv (nothing of ours from an index, nothing editable) and runs this module
with that virtualenv's interpreter (marker ``packaging``). Elsewhere the module is not collected by default,
and run by hand outside such a virtualenv its first test fails, saying so.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from .declared_imports import problems
from .readme_blocks import blocks, console_commands, section

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
# distribution -> (directory under packages/, import name)
DISTRIBUTIONS = {
    "paimon-core": ("core", "paimon_core"),
    "paimon-storage": ("storage", "paimon_storage"),
    "paimon-spark": ("spark", "paimon_spark"),
    "paimon-testing": ("testing", "paimon_testing"),
}
CONSOLE_SCRIPTS = {"paimon-core": {"paimon-py"}, "paimon-spark": {"paimon-spark"}}
README_SECTIONS = ("Install", "Example", "Documentation", "License")
URL_LABELS = {"Homepage", "Documentation", "Repository", "Issues", "Changelog"}
EXAMPLE_TIMEOUT = 900  # seconds; the Spark example starts a JVM on a shared 2-core machine

each_distribution = pytest.mark.parametrize("dist", list(DISTRIBUTIONS))


def test_the_packages_are_the_installed_wheels() -> None:
    for dist, (_, module_name) in DISTRIBUTIONS.items():
        module = importlib.import_module(module_name)
        location = Path(module.__file__ or "").resolve()
        assert Path(sys.prefix).resolve() in location.parents, (
            f"{module_name} is not installed here: {location}"
        )
        assert ROOT / "packages" not in location.parents, f"{module_name} comes from the checkout: {location}"
        assert md.distribution(dist).read_text("direct_url.json") is None, f"{dist} was installed by path"
        assert md.version(dist) == module.__version__


@each_distribution
def test_license_and_notice_are_in_the_wheel(dist: str) -> None:
    files = {str(f).split(".dist-info/", 1)[-1]: f for f in md.files(dist) or [] if ".dist-info/" in str(f)}
    for name in ("LICENSE", "NOTICE"):
        installed = files.get(f"licenses/{name}")
        assert installed is not None, f"{dist}'s wheel has no {name}"
        assert installed.read_text(encoding="utf-8") == (ROOT / name).read_text(encoding="utf-8")
    metadata = md.metadata(dist)
    assert metadata["License-Expression"] == "Apache-2.0"
    assert sorted(metadata.get_all("License-File") or []) == ["LICENSE", "NOTICE"]


@each_distribution
def test_the_sdist_holds_license_notice_readme_and_changelog(dist: str) -> None:
    directory, module_name = DISTRIBUTIONS[dist]
    dist_dir = Path(os.environ.get("PAIMON_DIST_DIR", ROOT / "dist"))
    stem = f"{canonicalize_name(dist).replace('-', '_')}-{md.version(dist)}"
    sdist = dist_dir / f"{stem}.tar.gz"
    assert sdist.is_file(), f"no {sdist.name} in {dist_dir} (set PAIMON_DIST_DIR)"
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    for name in ("LICENSE", "NOTICE", "README.md", "CHANGELOG.md", "pyproject.toml", "PKG-INFO"):
        assert f"{stem}/{name}" in names, f"{sdist.name} lacks {name}"
    assert f"{stem}/src/{module_name}/py.typed" in names
    assert (ROOT / "packages" / directory / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()


@each_distribution
def test_metadata_is_ready_for_a_package_index(dist: str) -> None:
    from trove_classifiers import classifiers as known

    metadata = md.metadata(dist)
    classifiers = metadata.get_all("Classifier") or []
    assert [c for c in classifiers if c not in known] == []
    assert {
        "Typing :: Typed",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.13",
    } <= set(classifiers)
    assert metadata["Requires-Python"] == ">=3.10"
    assert metadata["Keywords"] and metadata["Summary"]
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL") or [])
    assert set(urls) == URL_LABELS
    assert urls["Changelog"].endswith(f"/packages/{DISTRIBUTIONS[dist][0]}/CHANGELOG.md")
    scripts = {ep.name for ep in md.distribution(dist).entry_points if ep.group == "console_scripts"}
    assert scripts == CONSOLE_SCRIPTS.get(dist, set())  # never "paimon", which is pypaimon's


@each_distribution
def test_the_readme_stands_alone(dist: str) -> None:
    readme = _description(dist)
    for heading in README_SECTIONS:
        section(readme, heading)  # raises when missing
    assert md.metadata(dist)["Description-Content-Type"] == "text/markdown"
    documentation = dict(e.split(", ", 1) for e in md.metadata(dist).get_all("Project-URL") or [])
    assert documentation["Documentation"] in readme
    # A package index shows the README away from the repository: no relative links.
    assert "](../" not in readme and "](docs/" not in readme and "](packages/" not in readme


@each_distribution
def test_the_changelog_keeps_a_changelog(dist: str) -> None:
    changelog = (ROOT / "packages" / DISTRIBUTIONS[dist][0] / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog\n") and "keepachangelog.com" in changelog
    assert "## [Unreleased]" in changelog or f"## [{md.version(dist)}]" in changelog
    assert "### Added" in changelog


@each_distribution
def test_every_import_is_declared(dist: str) -> None:
    assert problems(dist) == []


def test_the_readme_tours_run_outside_the_repository(tmp_path: Path) -> None:
    """The README's API tour, then its Spark section (which works on the tour's table), as one script run
    with no virtualenv activated and no PYSPARK_PYTHON: paimon_spark.register picks the workers'
    interpreter. With the dependency versions a user resolves, PySpark warns of nothing (pandas 3 made it
    warn that it does not support it yet on every run: paimon-spark's metadata declares pandas < 3)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tours = section(readme, "API tour") + section(readme, "Spark")
    # The tour writes to /tmp/warehouse; a fresh directory keeps reruns independent.
    stderr = _run_example(tours.replace("/tmp/warehouse", str(tmp_path / "warehouse")), tmp_path)
    assert "does not yet fully support" not in stderr


@pytest.fixture
def s3_environment() -> Iterator[dict[str, str]]:
    """moto's S3 server with ``my-bucket``, reached through the AWS variables as the storage README says."""
    from paimon_storage.emulators import S3Emulator

    server = S3Emulator()
    try:
        server.start()
        server.create_bucket("my-bucket")
        yield {
            "AWS_ENDPOINT_URL": server.endpoint,
            "AWS_ACCESS_KEY_ID": server.access_key,
            "AWS_SECRET_ACCESS_KEY": server.secret_key,
            "AWS_REGION": server.region,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    finally:
        server.stop()


@each_distribution
def test_the_readme_example_runs(dist: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    env = request.getfixturevalue("s3_environment") if dist == "paimon-storage" else {}
    _run_example(section(_description(dist), "Example"), tmp_path, env)


def _description(dist: str) -> str:
    """The README as the wheel carries it: the body of its METADATA."""
    text = md.distribution(dist).read_text("METADATA") or ""
    return text.split("\n\n", 1)[1]


def _run_example(text: str, workdir: Path, env: dict[str, str] | None = None) -> str:
    """Save the section's file blocks, run its other python blocks as one script, then its console lines,
    all in ``workdir``, as a user who installed the packages runs them without activating anything: the
    script by this interpreter's path, the console lines with its scripts on ``PATH``. Returns the
    standard error of them all."""
    python = blocks(text, "python")
    for block in python:
        if block.file_name:
            (workdir / block.file_name).write_text(block.code, encoding="utf-8")
    script = "\n".join(b.code for b in python if b.file_name is None)
    commands = [c for b in blocks(text, "console") for c in console_commands(b)]
    assert script or commands, "the section has no code to run"
    stderr = ""
    if script:
        (workdir / "example.py").write_text(script, encoding="utf-8")
        stderr += _run([sys.executable, "example.py"], workdir, env, scripts=False)
    for command in commands:
        stderr += _run(["bash", "-c", command], workdir, env, scripts=True)
    return stderr


def _run(command: list[str], workdir: Path, extra_env: dict[str, str] | None, *, scripts: bool) -> str:
    # Nothing activated: no VIRTUAL_ENV, no PYSPARK_PYTHON, the virtualenv's bin/ only for console scripts.
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(extra_env or {})
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    env["PATH"] = os.pathsep.join([venv_bin, *path] if scripts else path)
    result = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=EXAMPLE_TIMEOUT, check=False
    )
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stderr
