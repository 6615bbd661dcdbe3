"""Storage failures as Paimon errors, with the path and the cause and without credentials.

Backends raise builtins and their SDKs' own exceptions (botocore, google-auth, azure-core...).
:func:`~paimon_core.storage.get_backend` hands every backend out behind :class:`ErrorTranslatingBackend`,
which turns any exception but a :class:`~paimon_core.errors.PaimonError` into a
:class:`~paimon_core.errors.StorageError` naming the backend, the call and the path. The builtins core relies
on keep their type through a subclass (a missing file is a :class:`StorageFileNotFoundError`, still a
``FileNotFoundError``), so ``except FileNotFoundError`` and the commit protocol's "``FileExistsError`` means
nothing was written" hold as before.

Neither the message nor the chained cause shows credentials (by :mod:`paimon_core.redaction`'s rule:
values of options whose keys name a secret, the SDKs' credential environment variables, signatures in URLs
or connection strings, passwords in URIs). A cause whose text held one is replaced by a
:class:`~paimon_core.redaction.RedactedCause` carrying its type, its redacted text and its traceback.

Streams from ``open_input`` / ``open_output`` are the backend's own; readers translate what they raise while
reading (``DataFileError``...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, TypeVar

from paimon_core.errors import (
    PaimonError,
    StorageConnectionError,
    StorageError,
    StorageFileExistsError,
    StorageFileNotFoundError,
    StorageIsADirectoryError,
    StorageNotADirectoryError,
    StoragePermissionError,
    StorageTimeoutError,
)
from paimon_core.redaction import RedactedCause, Redactor
from paimon_core.storage._paths import shown_path
from paimon_core.storage._spec import Capability, FileInfo, StorageBackend

__all__ = ["ErrorTranslatingBackend", "RedactedCause", "Redactor", "storage_error", "translated", "unwrap"]

T = TypeVar("T")

# The builtins core and callers catch, and the Paimon error of each (the first match wins: order matters).
_TRANSLATIONS: tuple[tuple[type[OSError], type[StorageError]], ...] = (
    (FileNotFoundError, StorageFileNotFoundError),
    (FileExistsError, StorageFileExistsError),
    (PermissionError, StoragePermissionError),
    (IsADirectoryError, StorageIsADirectoryError),
    (NotADirectoryError, StorageNotADirectoryError),
    (TimeoutError, StorageTimeoutError),
    (ConnectionError, StorageConnectionError),
)


def storage_error(cause: Exception, what: str, path: str, redact: Redactor) -> StorageError:
    """The Paimon error for ``cause``, raised by ``what`` (``"s3: cannot read"``) on ``path``; the cause,
    redacted when its text held credentials, is chained. The message is one line and names a very long path
    (a partition value too long for a file name) by its ends."""
    described = _describe(cause, path)
    error = _kind(cause)(f"{what} {shown_path(path)}: {redact(described)}", path)
    error.__cause__ = redact.cause(cause)
    return error


def translated(name: str, verb: str, path: str, redact: Redactor, call: Callable[..., T], *args: Any) -> T:
    """``call(*args)``; a failure other than a Paimon error raises :func:`storage_error`'s error for
    ``"<name>: cannot <verb>" <path>``."""
    try:
        return call(*args)
    except PaimonError:
        raise
    except Exception as exc:
        failure = exc
    # Raised outside the handler: the untranslated failure must not stay reachable as __context__.
    raise storage_error(failure, f"{name}: cannot {verb}", path, redact)


def _describe(cause: Exception, path: str) -> str:
    text = " ".join(line.strip() for line in str(cause).splitlines() if line.strip())
    if isinstance(cause, OSError) and type(cause).__module__ == "builtins":
        if cause.strerror:
            # "[Errno 20] Not a directory: '<the path again>'" says no more than its reason.
            named = cause.filename is not None and not path.endswith(str(cause.filename))
            return f"{cause.strerror}: {cause.filename!r}" if named else cause.strerror
        return text or type(cause).__name__  # the Paimon error's class names the kind already
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__


def _kind(cause: Exception) -> type[StorageError]:
    kind = next((error for builtin, error in _TRANSLATIONS if isinstance(cause, builtin)), StorageError)
    # SDK errors carrying an HTTP status (azure-core's status_code, google's code): 401 and 403 are refusals.
    status = getattr(cause, "status_code", None) or getattr(cause, "code", None)
    if kind is StorageError and status in (401, 403):
        return StoragePermissionError
    return kind


class ErrorTranslatingBackend:
    """A backend whose failures are :class:`~paimon_core.errors.StorageError` (see the module docstring).

    Other attributes (``fs``, ``fsync``...) are the wrapped backend's.

    Args:
        backend: the backend (possibly wrapped by plugins already).
        name: the backend's name, first in messages (``s3``, ``file``).
        options: the options it was built with; their credentials never show.
    """

    def __init__(self, backend: StorageBackend, name: str, options: Mapping[str, str]) -> None:
        self.backend = backend
        self.name = name
        self._redact = Redactor.of(options)

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") or attribute in ("backend", "name", "_redact"):
            raise AttributeError(attribute)
        return getattr(self.backend, attribute)

    def __repr__(self) -> str:
        return repr(self.backend)

    def _call(self, verb: str, path: str, call: Callable[..., T], *args: Any) -> T:
        return translated(self.name, verb, path, self._redact, call, path, *args)

    @property
    def capabilities(self) -> frozenset[Capability]:
        return self.backend.capabilities

    def open_input(self, path: str) -> BinaryIO:
        return self._call("open for reading", path, self.backend.open_input)

    def open_output(self, path: str) -> BinaryIO:
        return self._call("open for writing", path, self.backend.open_output)

    def read_bytes(self, path: str) -> bytes:
        return self._call("read", path, self.backend.read_bytes)

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        self._call("write", path, self.backend.write_bytes, data, overwrite)

    def write_if_absent(self, path: str, data: bytes) -> None:
        self._call("create", path, self.backend.write_if_absent, data)

    def exists(self, path: str) -> bool:
        return self._call("check", path, self.backend.exists)

    def size(self, path: str) -> int:
        return self._call("get the size of", path, self.backend.size)

    def info(self, path: str) -> FileInfo:
        return self._call("look up", path, self.backend.info)

    def list_dir(self, path: str) -> list[FileInfo]:
        return self._call("list", path, self.backend.list_dir)

    def list_prefix(self, path: str) -> Iterator[FileInfo]:
        listing = self._call("list", path, self.backend.list_prefix)
        while True:  # listings are lazy: their failures come while iterating
            try:
                entry = next(listing)
            except StopIteration:
                return
            except PaimonError:
                raise
            except Exception as exc:
                failure = exc
            else:
                yield entry
                continue
            raise storage_error(failure, f"{self.name}: cannot list", path, self._redact)

    def delete(self, path: str) -> None:
        self._call("delete", path, self.backend.delete)

    def delete_dir(self, path: str) -> None:
        self._call("delete the directory", path, self.backend.delete_dir)

    def mkdirs(self, path: str) -> None:
        self._call("create the directory", path, self.backend.mkdirs)


def unwrap(storage: StorageBackend) -> StorageBackend:
    """The backend behind an :class:`ErrorTranslatingBackend` (for fast paths that need its type)."""
    return storage.backend if isinstance(storage, ErrorTranslatingBackend) else storage
