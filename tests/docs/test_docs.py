"""Every code block of the documentation runs, so the docs cannot rot.

The pages are ``README.md`` and ``docs/**/*.md``. A page's blocks run in order, in one namespace (like a
notebook) and in a fresh temporary directory that is the working directory, so relative paths such as
``Catalog.open("warehouse")`` stay inside it. ``python`` blocks are executed; ``console`` blocks run each
``$ `` line with bash (a line ending in ``\\`` continues), ``bash`` and ``sh`` blocks run as scripts; the
installed console scripts (``paimon``, ``paimon-spark``) come first on ``PATH``. Other blocks (``text``,
``toml``...) are output or configuration and are not run.

An HTML comment on the line above a block says what it needs (invisible on the site and on GitHub):

- ``<!-- docs-test: spark -->``: a SparkSession (``local[2]``). Run by the ``tests(spark)`` nox session
  (marker ``docs_spark``), together with the page's other blocks.
- ``<!-- docs-test: s3 -->``, ``gcs``, ``azure``: an object store, reached through the environment as the
  SDKs read it (``AWS_ENDPOINT_URL``..., ``STORAGE_EMULATOR_HOST``, ``AZURE_STORAGE_CONNECTION_STRING``),
  here pointed at the emulators of ``paimon_storage.emulators`` with the bucket ``my-bucket`` created. Run by
  the ``storage_integration`` nox session (markers ``integration`` and ``docs_cloud``).
- ``<!-- docs-test: skip, <what it needs that CI has not> -->``: not run; the reason is required.

Blocks without a comment need only paimon-core (with its pandas, polars and duckdb extras) and run in the
``docs`` nox session, which also builds the site.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_LANGUAGES = {"python", "console", "bash", "sh"}
STORES = ("s3", "gcs", "azure")
BUCKET = "my-bucket"

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,})(?P<info>[^`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<what>[a-z0-9]+)(?:\s*,\s*(?P<reason>.*?))?\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the block's first code line
    language: str
    code: str
    needs: str | None  # None, "spark", a store, or "skip"
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)
    return [ROOT / "README.md", *docs]


def parse_blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` with the marker above each; a malformed marker is an error."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = opening["info"].strip().split(" ")[0].lower()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = [
            line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[i + 1 : end]
        ]
        needs, reason = _marker(page, lines, i)
        blocks.append(Block(page, i + 2, language, "\n".join(body) + "\n", needs, reason))
        i = end + 1
    return blocks


def _marker(page: Path, lines: list[str], fence_index: int) -> tuple[str | None, str]:
    above = fence_index - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    if above < 0 or "docs-test" not in lines[above]:
        return None, ""
    match = _MARKER.match(lines[above])
    what = match["what"] if match else ""
    if what not in ("spark", "skip", *STORES) or (what == "skip") != bool(match and match["reason"]):
        raise AssertionError(
            f"{page.relative_to(ROOT)}:{above + 1}: malformed marker {lines[above].strip()!r}; expected "
            "'<!-- docs-test: spark|s3|gcs|azure -->' or '<!-- docs-test: skip, <reason> -->'"
        )
    assert match is not None
    return what, (match["reason"] or "")


def runnable(page: Path) -> list[Block]:
    return [b for b in parse_blocks(page) if b.language in RUN_LANGUAGES and b.needs != "skip"]


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def _pages_needing(needs: str | None) -> list[Path]:
    return [p for p in pages() if any(b.needs == needs for b in runnable(p))]


def _console_commands(code: str) -> Iterator[str]:
    """The commands of a console block: ``$ `` lines, with their ``\\`` continuations."""
    command: list[str] = []
    for line in code.splitlines():
        if command:
            command.append(line)
        elif line.startswith("$ "):
            command.append(line[2:])
        if command and not command[-1].rstrip().endswith("\\"):
            yield "\n".join(command)
            command = []
    if command:
        yield "\n".join(command)


def _shell(script: str, where: str) -> None:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{where}: `{script}` exited with {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        )


def run_blocks(blocks: list[Block], workdir: Path) -> dict[str, Any]:
    """Run ``blocks`` in order in ``workdir``; the namespace the python blocks shared."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    previous = Path.cwd()
    os.chdir(workdir)
    try:
        for block in blocks:
            if block.language == "python":
                # Padding keeps traceback line numbers equal to the page's.
                source = "\n" * (block.line - 1) + block.code
                exec(compile(source, str(block.page), "exec"), namespace)
            elif block.language == "console":
                for command in _console_commands(block.code):
                    _shell(command, block.where)
            else:
                _shell(block.code, block.where)
    finally:
        os.chdir(previous)
    return namespace


def test_every_block_is_run_or_says_why_not() -> None:
    """A block in a language this test does not run must not look like code that should run."""
    shell_like = {"shell", "zsh", "pycon", "py", "python3"}
    for page in pages():
        for block in parse_blocks(page):
            assert block.language not in shell_like, f"{block.where}: use ```python, ```console or ```bash"
            assert block.language or not block.code.strip(), f"{block.where}: a block needs a language"


@pytest.mark.parametrize("page", _pages_needing(None), ids=_ids(_pages_needing(None)))
def test_page(page: Path, tmp_path: Path) -> None:
    run_blocks([b for b in runnable(page) if b.needs is None], tmp_path)


@pytest.fixture(scope="module")
def spark_environment() -> Iterator[None]:
    """What the pages' ``SparkSession.builder...getOrCreate()`` needs; the session they start is stopped last."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("Spark needs Java 17: put java on PATH or set JAVA_HOME")
    # Executors must run this interpreter (with pyarrow), not the system's.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # The sessions the pages build get timeouts a loaded 2-core machine meets (Python workers' and Python
    # sockets' connect and authentication, RPCs; as packages/spark/tests/conftest.py), without the pages
    # spelling them out: spark-submit takes them from here.
    previous = os.environ.get("PYSPARK_SUBMIT_ARGS")
    os.environ["PYSPARK_SUBMIT_ARGS"] = (
        "--conf spark.python.authenticate.socketTimeout=300s --conf spark.network.timeout=600s pyspark-shell"
    )
    yield
    if previous is None:
        os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
    else:
        os.environ["PYSPARK_SUBMIT_ARGS"] = previous
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()


@pytest.mark.docs_spark
@pytest.mark.parametrize("page", _pages_needing("spark"), ids=_ids(_pages_needing("spark")))
def test_page_on_spark(page: Path, tmp_path: Path, spark_environment: None) -> None:
    try:
        run_blocks([b for b in runnable(page) if b.needs in (None, "spark")], tmp_path)
    finally:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        for query in session.streams.active if session is not None else ():
            query.stop()


@pytest.fixture
def store_environment(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An emulator for the store named by the parameter, with ``my-bucket`` and the SDK's environment set."""
    from paimon_storage import emulators

    name: str = request.param
    server: Any = {
        "s3": emulators.S3Emulator,
        "gcs": emulators.GcsEmulator,
        "azure": emulators.AzuriteEmulator,
    }[name]()
    try:
        server.start()
    except emulators.ServerUnavailable as error:
        server.stop()
        pytest.fail(f"cannot start {server.name}: {error}", pytrace=False)
    try:
        server.create_bucket(BUCKET)
        if name == "s3":
            monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.access_key)
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret_key)
            monkeypatch.setenv("AWS_REGION", server.region)
        elif name == "gcs":
            monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.endpoint)
        else:
            monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", server.connection_string)
        yield name
    finally:
        server.stop()


def _cloud_cases() -> list[Any]:
    return [
        pytest.param(page, store, id=f"{page.relative_to(ROOT)}-{store}")
        for store in STORES
        for page in _pages_needing(store)
    ]


@pytest.mark.integration
@pytest.mark.docs_cloud
@pytest.mark.parametrize(("page", "store_environment"), _cloud_cases(), indirect=["store_environment"])
def test_page_on_object_store(page: Path, store_environment: str, tmp_path: Path) -> None:
    run_blocks([b for b in runnable(page) if b.needs in (None, store_environment)], tmp_path)
