"""The one error hierarchy of the project.

Every error raised on purpose derives from :class:`PaimonError`. Errors that callers may expect as builtins
also derive from them (a bad option is a ``ValueError``, a missing table is a ``LookupError``).
"""

from __future__ import annotations

from collections.abc import Sequence


class PaimonError(Exception):
    """Root of all errors raised by the Paimon packages."""


class PaimonWarning(UserWarning):
    """Root of all warnings issued by the Paimon packages."""


# --- configuration and schema -------------------------------------------------------------------------------


class ConfigError(PaimonError, ValueError):
    """An option is unknown, malformed or not allowed here."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class SchemaError(PaimonError, ValueError):
    """A schema is invalid, or data does not fit the table's schema."""


class UnsupportedTypeError(SchemaError, TypeError):
    """A data type has no Paimon or Arrow equivalent."""


# --- catalog ----------------------------------------------------------------------------------------------


class CatalogError(PaimonError):
    """A catalog operation failed."""


class DatabaseNotFoundError(CatalogError, LookupError):
    def __init__(self, database: str) -> None:
        super().__init__(f"database {database!r} does not exist")
        self.database = database


class DatabaseAlreadyExistsError(CatalogError, FileExistsError):
    def __init__(self, database: str) -> None:
        super().__init__(f"database {database!r} already exists")
        self.database = database


class DatabaseNotEmptyError(CatalogError):
    def __init__(self, database: str) -> None:
        super().__init__(f"database {database!r} is not empty (drop it with cascade=True)")
        self.database = database


class TableNotFoundError(CatalogError, LookupError):
    def __init__(self, identifier: str) -> None:
        super().__init__(f"table {identifier!r} does not exist")
        self.identifier = identifier


class TableAlreadyExistsError(CatalogError, FileExistsError):
    def __init__(self, identifier: str) -> None:
        super().__init__(f"table {identifier!r} already exists")
        self.identifier = identifier


# --- table contents ---------------------------------------------------------------------------------------


class CorruptMetadataError(PaimonError):
    """A metadata file (snapshot, schema, manifest) cannot be parsed or is missing."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class SnapshotNotFoundError(PaimonError, LookupError):
    def __init__(self, snapshot_id: int | None, message: str | None = None) -> None:
        super().__init__(message or f"snapshot {snapshot_id} does not exist")
        self.snapshot_id = snapshot_id


class TagNotFoundError(PaimonError, LookupError):
    def __init__(self, name: str, message: str | None = None) -> None:
        super().__init__(message or f"tag {name!r} does not exist")
        self.name = name


class TagAlreadyExistsError(PaimonError, FileExistsError):
    def __init__(self, name: str) -> None:
        super().__init__(f"tag {name!r} already exists")
        self.name = name


# --- storage ----------------------------------------------------------------------------------------------


class StorageError(PaimonError, OSError):
    """The storage layer failed in a way that is not a plain missing or existing file."""


class StorageBackendNotFound(StorageError):
    """No backend is registered for a URI scheme."""

    def __init__(self, scheme: str, known: Sequence[str]) -> None:
        super().__init__(
            f"no storage backend for scheme {scheme!r}; registered schemes: {', '.join(sorted(known)) or 'none'}"
        )
        self.scheme = scheme


class StorageBackendUnavailable(StorageError):
    """A backend is registered but its dependencies are not installed."""

    def __init__(self, name: str, install_hint: str) -> None:
        super().__init__(f"storage backend {name!r} is not available: {install_hint}")
        self.name = name
        self.install_hint = install_hint


# --- commit -----------------------------------------------------------------------------------------------


class CommitError(PaimonError):
    """A commit did not land."""


class CommitConflictError(CommitError):
    """Another commit removed files this commit depends on (overwrite or compaction raced us).

    Attributes:
        winning_snapshot_id: the snapshot that made this commit impossible, when known.
        winning_commit_user: that snapshot's commit user.
        conflicting_files: names of the files in conflict.
    """

    def __init__(
        self,
        message: str,
        *,
        winning_snapshot_id: int | None = None,
        winning_commit_user: str | None = None,
        conflicting_files: Sequence[str] = (),
    ) -> None:
        details = []
        if winning_snapshot_id is not None:
            details.append(f"winning snapshot {winning_snapshot_id} by commit user {winning_commit_user!r}")
        if conflicting_files:
            shown = ", ".join(list(conflicting_files)[:10])
            more = len(conflicting_files) - 10
            details.append(f"files in conflict: {shown}" + (f" (+{more} more)" if more > 0 else ""))
        super().__init__(message + ("; " + "; ".join(details) if details else ""))
        self.winning_snapshot_id = winning_snapshot_id
        self.winning_commit_user = winning_commit_user
        self.conflicting_files = tuple(conflicting_files)


class CommitRetriesExhaustedError(CommitError):
    """Every attempt lost the race for the next snapshot id (``commit.max-retries`` / ``commit.timeout``)."""


class CommitStateUnknownError(CommitError):
    """The store may or may not hold the snapshot (e.g. a timeout after the request was sent).

    Never retried blindly: the committer looks for its (commit user, identifier) in newer snapshots.
    """


class AtomicCommitUnsupportedError(CommitError):
    """The storage backend cannot create a file atomically and exclusively, and no lock is configured."""
